#include "engine/session.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/checkpoint_format.h"
#include "engine/compiler.h"
#include "support/torch_status.h"
#include "engine/ir/attribute.h"
#include "engine/ir/types.h"
#include "engine/prometheus.h"
#include "support/status_macros.h"

namespace tally {
namespace {

std::atomic<uint64_t> g_next_session_id{1};

// Bucket is one interval of a window ring: the programs of updates whose
// interval number is `epoch` (-1: none yet).
struct Bucket {
  int64_t epoch = -1;
  bool dirty = false;
  std::unique_ptr<Program> program;
};

// ShardState is what a shard's slot publishes: the programs one thread
// updates and its counters. Whoever holds it (the owner thread between its
// exchange and store, or a read after taking it) has it exclusively.
struct ShardState {
  std::unique_ptr<Program> all;
  bool all_dirty = false;
  std::vector<std::vector<Bucket>> rings;  // per window
  int64_t updates = 0, rows = 0, rejected = 0;
  // Micro-batching: validated updates not applied yet, copied into staging
  // buffers (so callers may reuse their tensors), when the first arrived,
  // and their intervals.
  std::vector<at::Tensor> staging;  // per input, rows [0, queued_rows) queued
  int64_t queued_updates = 0;
  int64_t queued_rows = 0;
  int64_t queued_since_ns = 0;
  absl::InlinedVector<int64_t, 2> queued_epochs;
};

// Shard is one (thread, metric set) pair.
struct Shard {
  std::atomic<ShardState*> slot{nullptr};
  std::unique_ptr<ShardState> spare;  // read side only (under read_mu_)
  Shard* next = nullptr;
  ~Shard() { delete slot.load(); }
};

// kBusy marks a slot whose state an update holds.
ShardState g_busy_marker;
ShardState* const kBusy = &g_busy_marker;

// ThreadShards: per thread, per session id, the shard of every set.
thread_local absl::flat_hash_map<uint64_t, std::vector<Shard*>> t_shards;

}  // namespace

struct Session::Window {
  WindowSpec spec;
  int64_t interval = 1;  // updates, or ns, per bucket
};

struct Session::MetricSet {
  std::string name;
  size_t index = 0;  // in Session::sets_
  std::vector<std::string> specs;
  std::vector<std::string> labels;
  std::vector<std::string> params;  // inputs the program takes
  bool batchable = false;  // every input has the same symbolic leading dim
  std::unique_ptr<Program> proto;
  std::string fingerprint_hash;
  std::atomic<Shard*> shards{nullptr};
  std::atomic<int64_t> update_seq{0};  // numbers updates for kUpdates windows
  // Read side (under read_mu_):
  std::unique_ptr<Program> total;
  std::vector<std::vector<Bucket>> rings;  // per window
  SessionCounters counters;
  std::vector<Window>* windows = nullptr;

  absl::StatusOr<std::unique_ptr<Program>> NewProgram() const {
    return Program::Create(proto->module().Clone(), proto->options());
  }
  // Scratch programs for reject_invalid_values (eager, whatever the
  // session's backend: see Program::CheckValues), shared by the set's
  // threads: as many exist as checks ever ran at once, each reset after use.
  mutable std::mutex probes_mu;
  mutable std::vector<std::unique_ptr<Program>> probes;  // idle, under probes_mu

  // CheckValues runs `inputs` (validated) through a scratch program and
  // reports a bad value as Compute would.
  absl::Status CheckValues(const NamedTensors& inputs) const {
    std::unique_ptr<Program> probe;
    {
      std::lock_guard<std::mutex> lock(probes_mu);
      if (!probes.empty()) {
        probe = std::move(probes.back());
        probes.pop_back();
      }
    }
    if (!probe) {
      ProgramOptions po = proto->options();
      po.backend = exec::Backend::kEager;
      TALLY_ASSIGN_OR_RETURN(probe, Program::Create(proto->module().Clone(), po));
    }
    absl::Status st = probe->Update(inputs);
    if (st.ok()) st = probe->CheckValues();
    // Back to the pool only when clean (a failed reset drops it).
    if (probe->Reset().ok()) {
      std::lock_guard<std::mutex> lock(probes_mu);
      probes.push_back(std::move(probe));
    }
    return st;
  }
  ~MetricSet() {
    for (Shard* s = shards.load(); s != nullptr;) {
      Shard* next = s->next;
      delete s;
      s = next;
    }
  }
};

namespace {

std::vector<Session::Window>& WindowsOf(const Session::MetricSet& s) { return *s.windows; }

int64_t RowsOf(const NamedTensors& inputs) {
  for (const auto& [name, t] : inputs)
    if (t.defined() && t.dim() > 0) return t.size(0);
  return 0;
}

absl::Status ResetBucket(const Session::MetricSet& set, Bucket& b) {
  if (!b.program) {
    TALLY_ASSIGN_OR_RETURN(b.program, set.NewProgram());
  } else if (b.dirty) {
    TALLY_RETURN_IF_ERROR(b.program->Reset());
  }
  b.dirty = false;
  return absl::OkStatus();
}

using Epochs = absl::InlinedVector<int64_t, 2>;

// EpochsOf numbers the interval of one update in every window.
Epochs EpochsOf(Session::MetricSet& set, int64_t now_ns) {
  Epochs out;
  int64_t seq = -1;
  for (const Session::Window& win : WindowsOf(set)) {
    if (win.spec.kind == WindowSpec::Kind::kUpdates) {
      if (seq < 0) seq = set.update_seq.fetch_add(1, std::memory_order_relaxed);
      out.push_back(seq / win.interval);
    } else {
      out.push_back(now_ns / win.interval);
    }
  }
  return out;
}

// ApplyNow folds validated inputs into one shard state: the all-time
// program and, per window, the bucket of the update's interval.
absl::Status ApplyNow(Session::MetricSet& set, ShardState& st, const NamedTensors& inputs, const Epochs& epochs) {
  if (!st.all) {
    TALLY_ASSIGN_OR_RETURN(st.all, set.NewProgram());
  }
  TALLY_RETURN_IF_ERROR(st.all->Update(inputs));
  st.all_dirty = true;
  auto& windows = WindowsOf(set);
  if (windows.empty()) return absl::OkStatus();
  if (st.rings.size() != windows.size()) st.rings.resize(windows.size());
  for (size_t w = 0; w < windows.size(); ++w) {
    const Session::Window& win = windows[w];
    const int64_t epoch = epochs[w];
    auto& ring = st.rings[w];    if (ring.size() != static_cast<size_t>(win.spec.buckets)) ring.resize(win.spec.buckets);
    Bucket& b = ring[epoch % win.spec.buckets];
    // A bucket of an older epoch with the same slot is outside the window.
    if (b.epoch != epoch || !b.program) {
      TALLY_RETURN_IF_ERROR(ResetBucket(set, b));
      b.epoch = epoch;
    }
    TALLY_RETURN_IF_ERROR(b.program->Update(inputs));
    b.dirty = true;
  }
  return absl::OkStatus();
}

// Flush applies the queued updates of a micro-batching shard as one update
// of the staged rows (in arrival order).
absl::Status Flush(Session::MetricSet& set, ShardState& st) {
  if (st.queued_updates == 0) return absl::OkStatus();
  NamedTensors batch;
  for (size_t j = 0; j < set.params.size(); ++j) {
    batch.emplace_back(set.params[j], st.staging[j].narrow(0, 0, st.queued_rows));
  }
  absl::Status status = ApplyNow(set, st, batch, st.queued_epochs);
  if (!status.ok()) {
    // Validated on arrival, so this is an internal failure (e.g. memory):
    // the queued updates are dropped and counted as rejected.
    st.updates -= st.queued_updates;
    st.rows -= st.queued_rows;
    st.rejected += st.queued_updates;
  }
  st.queued_updates = 0;
  st.queued_rows = 0;
  return status;
}

// Stage copies one update's rows after the staged ones (growing the
// staging buffers by doubling); false when they cannot join the staged rows
// (other trailing sizes), and then nothing is staged.
absl::StatusOr<bool> Stage(Session::MetricSet& set, ShardState& st, const NamedTensors& inputs, int64_t rows) {
  std::vector<const at::Tensor*> ordered(set.params.size(), nullptr);
  for (size_t j = 0; j < set.params.size(); ++j)
    for (const auto& in : inputs)
      if (in.first == set.params[j]) ordered[j] = &in.second;
  if (st.staging.size() != set.params.size()) st.staging.resize(set.params.size());
  for (size_t j = 0; j < ordered.size(); ++j) {
    if (ordered[j] == nullptr || ordered[j]->dim() == 0 || ordered[j]->size(0) != rows) return false;
    const at::Tensor& buf = st.staging[j];
    if (st.queued_updates > 0 && buf.sizes().slice(1) != ordered[j]->sizes().slice(1)) return false;
  }
  absl::Status status = support::CatchTorch(
      [&] {
        for (size_t j = 0; j < ordered.size(); ++j) {
          const at::Tensor& in = *ordered[j];
          at::Tensor& buf = st.staging[j];
          const bool fits = buf.defined() && buf.size(0) >= st.queued_rows + rows &&
                            buf.sizes().slice(1) == in.sizes().slice(1) && buf.scalar_type() == in.scalar_type() &&
                            buf.device() == in.device();
          if (!fits) {
            std::vector<int64_t> sizes(in.sizes().begin(), in.sizes().end());
            sizes[0] = std::max<int64_t>(2 * (st.queued_rows + rows), 64);
            at::Tensor grown = at::empty(sizes, in.options());
            if (st.queued_rows > 0) grown.narrow(0, 0, st.queued_rows).copy_(buf.narrow(0, 0, st.queued_rows));
            buf = grown;
          }
          if (rows == 0) continue;
          // A plain memcpy for contiguous CPU rows: narrow + copy_ would cost
          // more in dispatch than a small batch's bytes.
          if (buf.is_cpu() && in.is_cpu() && in.is_contiguous() && buf.is_contiguous()) {
            const size_t row_bytes = in.nbytes() / rows;
            std::memcpy(static_cast<char*>(buf.data_ptr()) + st.queued_rows * row_bytes, in.data_ptr(), in.nbytes());
          } else {
            buf.narrow(0, st.queued_rows, rows).copy_(in);
          }
        }
      },
      set.name);
  TALLY_RETURN_IF_ERROR(status);
  return true;
}

// Apply folds validated inputs into one shard state, directly or through
// its micro-batching queue, and counts the update.
absl::Status Apply(Session::MetricSet& set, ShardState& st, const NamedTensors& inputs, int64_t rows,
                   const MicroBatching& mb, int64_t now_ns) {
  Epochs epochs = EpochsOf(set, now_ns);
  auto direct = [&] {
    absl::Status status = ApplyNow(set, st, inputs, epochs);
    if (status.ok()) {
      ++st.updates;
      st.rows += rows;
    } else {
      ++st.rejected;
    }
    return status;
  };
  if (mb.max_rows <= 0 || !set.batchable) return direct();
  // The queue holds updates of one interval per window.
  if (st.queued_updates > 0 && epochs != st.queued_epochs) (void)Flush(set, st);
  if (st.queued_updates == 0) {
    st.queued_epochs = epochs;
    st.queued_since_ns = now_ns;
  }
  auto staged = Stage(set, st, inputs, rows);
  if (staged.ok() && !*staged) {
    (void)Flush(set, st);
    st.queued_epochs = epochs;
    st.queued_since_ns = now_ns;
    staged = Stage(set, st, inputs, rows);
  }
  if (!staged.ok() || !*staged) return direct();
  ++st.updates;
  st.rows += rows;
  ++st.queued_updates;
  st.queued_rows += rows;
  if (st.queued_rows >= mb.max_rows || st.queued_updates >= mb.max_updates ||
      now_ns - st.queued_since_ns >= mb.max_delay_us * 1000) {
    return Flush(set, st);
  }
  return absl::OkStatus();
}

// FoldInto merges `b` into the read side's ring.
absl::Status FoldBucket(const Session::MetricSet& set, std::vector<Bucket>& ring, Bucket& b) {
  if (!b.dirty || b.epoch < 0) return absl::OkStatus();
  Bucket& target = ring[b.epoch % ring.size()];
  if (target.epoch < b.epoch || !target.program) {
    TALLY_RETURN_IF_ERROR(ResetBucket(set, target));
    target.epoch = b.epoch;
  }
  if (target.epoch == b.epoch) {
    TALLY_RETURN_IF_ERROR(target.program->Merge(*b.program));
    target.dirty = true;
  }
  TALLY_RETURN_IF_ERROR(b.program->Reset());
  b.dirty = false;
  b.epoch = -1;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MetricValue>> Collect(const Program& p, const Session::MetricSet& set) {
  TALLY_ASSIGN_OR_RETURN(NamedTensors values, p.Compute());
  std::vector<MetricValue> out;
  for (size_t i = 0; i < set.labels.size(); ++i) {
    auto tree = CollectResult(values, set.labels[i]);
    if (!tree.ok()) return absl::InternalError(tree.status().message());
    out.push_back({set.specs[i], set.labels[i], *std::move(tree)});
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(std::vector<BuiltMetricSet> sets,
                                                         const dsl::Signature& sig,
                                                         SessionOptions options) {
  if (sets.empty()) return absl::InvalidArgumentError("session: no metric set");
  if (!prometheus::IsValidMetricName(options.prometheus_prefix)) {
    return absl::InvalidArgumentError(absl::StrCat("session: prometheus_prefix '", options.prometheus_prefix,
                                                   "' is not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
  }
  std::unique_ptr<Session> s(new Session());
  s->id_ = g_next_session_id.fetch_add(1);
  auto windows = std::make_unique<std::vector<Window>>();
  absl::flat_hash_set<std::string> names;
  for (const WindowSpec& w : options.windows) {
    const std::string what = absl::StrCat("session: window '", w.name, "'");
    if (w.name.empty() || !names.insert(w.name).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": names must be unique and non-empty"));
    }
    if (w.size <= 0 || w.buckets <= 0 || w.buckets > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": size must be positive and buckets in [1, 4096]"));
    }
    Window win{w, 1};
    if (w.kind == WindowSpec::Kind::kUpdates) {
      if (w.size % w.buckets != 0) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": buckets (", w.buckets, ") must divide size (", w.size, ")"));
      }
      win.interval = w.size / w.buckets;
    } else {
      win.interval = std::max<int64_t>(w.size * 1000000000 / w.buckets, 1);
    }
    windows->push_back(win);
  }
  if (!options.now_ns) {
    options.now_ns = [] {
      return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now().time_since_epoch())
                                      .count());
    };
  }
  s->options_ = std::move(options);
  s->sig_ = sig;
  names.clear();
  for (BuiltMetricSet& spec : sets) {
    if (spec.name.empty() || !names.insert(spec.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("session: metric set '", spec.name,
                                                     "': names must be unique and non-empty"));
    }
    if (spec.entries.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("session: metric set '", spec.name, "' has no metric"));
    }
    auto set = std::make_unique<MetricSet>();
    set->name = spec.name;
    if (spec.specs.size() != spec.entries.size()) {
      return absl::InvalidArgumentError(absl::StrCat("session: metric set '", spec.name, "' has ",
                                                     spec.specs.size(), " specs for ", spec.entries.size(),
                                                     " metrics"));
    }
    set->specs = std::move(spec.specs);
    const std::vector<CollectionEntry>& entries = spec.entries;
    for (const auto& e : entries) set->labels.push_back(e.label);
    CompileOptions co;
    co.device = s->options_.device;
    co.backend = s->options_.backend;
    co.max_state_bytes = s->options_.max_state_bytes;
    TALLY_ASSIGN_OR_RETURN(set->proto, Compile(entries, co));
    set->batchable = true;
    const auto& params = set->proto->module().update->params();
    for (const auto* p : params) {
      set->params.push_back(p->name());
      const ir::TensorType& t = p->type();
      set->batchable = set->batchable && t.rank() > 0 && t.shape[0].is_symbolic() &&
                       t.shape[0].symbol == params[0]->type().shape[0].symbol;
    }
    set->fingerprint_hash = checkpoint::HexHash(set->proto->fingerprint());
    TALLY_ASSIGN_OR_RETURN(set->total, set->NewProgram());
    set->windows = windows.get();
    set->rings.resize(windows->size());
    for (size_t w = 0; w < windows->size(); ++w) set->rings[w].resize((*windows)[w].spec.buckets);
    set->index = s->sets_.size();
    s->all_sets_.push_back(set.get());
    s->sets_.push_back(std::move(set));
  }
  s->windows_ = std::move(windows);
  return s;
}

Session::~Session() = default;

int64_t Session::NowNs() const { return options_.now_ns(); }

std::vector<std::string> Session::set_names() const {
  std::vector<std::string> out;
  for (const auto& s : sets_) out.push_back(s->name);
  return out;
}

absl::StatusOr<Session::MetricSet*> Session::FindSet(absl::string_view name) const {
  for (const auto& s : sets_)
    if (s->name == name) return s.get();
  std::vector<std::string> known = set_names();
  return absl::NotFoundError(absl::StrCat("session: no metric set '", name, "' (sets: ",
                                          absl::StrJoin(known, ", "), ")"));
}

absl::Status Session::Update(const NamedTensors& inputs) {
  return UpdateSets(all_sets_, inputs);
}

absl::Status Session::Update(absl::string_view set, const NamedTensors& inputs) {
  MetricSet* s = nullptr;
  for (const auto& c : sets_)
    if (c->name == set) s = c.get();
  if (s == nullptr) return FindSet(set).status();
  return UpdateSets({s}, inputs);
}

namespace {

// ThreadShardsOf returns this thread's shard of every set of the session
// `id`, creating and publishing them on first use.
std::vector<Shard*>& ThreadShardsOf(uint64_t id, const std::vector<std::unique_ptr<Session::MetricSet>>& sets) {
  std::vector<Shard*>& mine = t_shards[id];
  if (mine.empty()) {
    for (const auto& set : sets) {
      auto* sh = new Shard();
      sh->slot.store(new ShardState(), std::memory_order_relaxed);
      sh->spare = std::make_unique<ShardState>();
      sh->next = set->shards.load(std::memory_order_relaxed);
      while (!set->shards.compare_exchange_weak(sh->next, sh, std::memory_order_release,
                                                std::memory_order_relaxed)) {
      }
      mine.push_back(sh);
    }
  }
  return mine;
}

}  // namespace

void Session::CountRejected() {
  std::vector<Shard*>& mine = ThreadShardsOf(id_, sets_);
  for (const auto& set : sets_) {
    Shard* sh = mine[set->index];
    ShardState* st = sh->slot.exchange(kBusy, std::memory_order_acquire);
    ++st->rejected;
    sh->slot.store(st, std::memory_order_release);
  }
}

absl::Status Session::UpdateSets(const std::vector<MetricSet*>& sets, const NamedTensors& inputs) {
  std::vector<Shard*>& mine = ThreadShardsOf(id_, sets_);
  // Validate everything before any state changes.
  absl::Status status;
  absl::InlinedVector<NamedTensors, 4> filtered(sets.size());
  absl::InlinedVector<bool, 4> whole(sets.size(), true);
  for (const auto& [name, t] : inputs) {
    bool taken = false;
    for (const MetricSet* s : sets)
      taken |= std::find(s->params.begin(), s->params.end(), name) != s->params.end();
    if (!taken && status.ok()) {
      std::vector<std::string> sn, taken;
      for (const MetricSet* s : sets) {
        sn.push_back(s->name);
        for (const std::string& p : s->params)
          if (std::find(taken.begin(), taken.end(), p) == taken.end()) taken.push_back(p);
      }
      status = absl::InvalidArgumentError(absl::StrCat("session: unexpected input '", name,
                                                       "' (no metric of set ", absl::StrJoin(sn, ", "),
                                                       " takes it; they take ", absl::StrJoin(taken, ", "), ")"));
    }
  }
  for (size_t i = 0; i < sets.size() && status.ok(); ++i) {
    const MetricSet& s = *sets[i];
    auto takes = [&](const std::string& name) {
      return std::find(s.params.begin(), s.params.end(), name) != s.params.end();
    };
    for (const auto& in : inputs) whole[i] = whole[i] && takes(in.first);
    if (!whole[i]) {
      for (const auto& in : inputs)
        if (takes(in.first)) filtered[i].push_back(in);
    }
    status = s.proto->Validate(whole[i] ? inputs : filtered[i]);
    if (status.ok() && options_.reject_invalid_values) {
      status = s.CheckValues(whole[i] ? inputs : filtered[i]);
    }
    if (!status.ok() && sets_.size() > 1) {
      status = absl::Status(status.code(), absl::StrCat("metric set '", s.name, "': ", status.message()));
    }
  }
  const int64_t now = status.ok() && (!windows_->empty() || options_.micro_batching.max_rows > 0) ? NowNs() : 0;
  absl::Status applied;
  for (size_t i = 0; i < sets.size(); ++i) {
    MetricSet& s = *sets[i];
    Shard* sh = mine[s.index];
    ShardState* st = sh->slot.exchange(kBusy, std::memory_order_acquire);
    if (!status.ok()) {
      ++st->rejected;
    } else {
      // Apply counts the update (accepted, or rejected when it fails).
      const NamedTensors& mine_in = whole[i] ? inputs : filtered[i];
      absl::Status a = Apply(s, *st, mine_in, RowsOf(mine_in), options_.micro_batching, now);
      if (!a.ok() && applied.ok()) applied = a;
    }
    sh->slot.store(st, std::memory_order_release);
  }
  return status.ok() ? applied : status;
}

absl::Status Session::Harvest(MetricSet& set) const {
  absl::Status result;
  // acc is a taken shard's all-time program (now a spare's, so only reads
  // touch it) that the other shards' deltas fold into.
  Program* acc = nullptr;
  for (Shard* sh = set.shards.load(std::memory_order_acquire); sh != nullptr; sh = sh->next) {
    ShardState* spare = sh->spare.release();
    ShardState* cur = sh->slot.load(std::memory_order_acquire);
    for (;;) {
      if (cur == kBusy) {
        std::this_thread::yield();
        cur = sh->slot.load(std::memory_order_acquire);
        continue;
      }
      if (sh->slot.compare_exchange_weak(cur, spare, std::memory_order_acq_rel, std::memory_order_acquire)) break;
    }
    sh->spare.reset(cur);
    ShardState& st = *cur;
    absl::Status f = Flush(set, st);
    if (!f.ok() && result.ok()) result = f;
    set.counters.updates += st.updates;
    set.counters.rows += st.rows;
    set.counters.rejected += st.rejected;
    st.updates = st.rows = st.rejected = 0;
    if (st.all && st.all_dirty) {
      // The shards' deltas are folded together first and into the total
      // once: a cat state's accumulated rows are copied once per read, not
      // once per shard.
      if (acc == nullptr) {
        acc = st.all.get();
      } else {
        absl::Status m = acc->Merge(*st.all);
        if (m.ok()) m = st.all->Reset();
        if (!m.ok() && result.ok()) result = m;
      }
      st.all_dirty = false;
    }
    for (size_t w = 0; w < st.rings.size(); ++w) {
      for (Bucket& b : st.rings[w]) {
        absl::Status m = FoldBucket(set, set.rings[w], b);
        if (!m.ok() && result.ok()) result = m;
      }
    }
  }
  if (acc != nullptr) {
    absl::Status m = set.total->Merge(*acc);
    if (m.ok()) m = acc->Reset();
    if (!m.ok() && result.ok()) result = m;
  }
  return result;
}

absl::StatusOr<std::vector<MetricValue>> Session::Compute(absl::string_view name) const {
  TALLY_ASSIGN_OR_RETURN(MetricSet * set, FindSet(name));
  std::lock_guard<std::mutex> lock(read_mu_);
  TALLY_RETURN_IF_ERROR(Harvest(*set));
  auto out = Collect(*set->total, *set);
  if (!out.ok()) ++set->counters.compute_errors;
  return out;
}

absl::StatusOr<std::vector<MetricValue>> Session::ComputeWindow(absl::string_view name,
                                                                absl::string_view window) const {
  TALLY_ASSIGN_OR_RETURN(MetricSet * set, FindSet(name));
  size_t w = 0;
  while (w < windows_->size() && (*windows_)[w].spec.name != window) ++w;
  if (w == windows_->size()) {
    return absl::NotFoundError(absl::StrCat("session: no window '", window, "'"));
  }
  std::lock_guard<std::mutex> lock(read_mu_);
  TALLY_RETURN_IF_ERROR(Harvest(*set));
  return WindowValues(*set, w);
}

absl::StatusOr<std::vector<MetricValue>> Session::WindowValues(MetricSet& set, size_t w) const {
  const Window& win = (*windows_)[w];
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> view, set.NewProgram());
  // The current interval: the newest of the clock (or update counter) and
  // every bucket's.
  int64_t cur = -1;
  if (win.spec.kind == WindowSpec::Kind::kUpdates) {
    const int64_t seq = set.update_seq.load(std::memory_order_relaxed);
    if (seq > 0) cur = (seq - 1) / win.interval;
  } else {
    cur = NowNs() / win.interval;
  }
  for (const Bucket& b : set.rings[w]) cur = std::max(cur, b.epoch);
  for (const Bucket& b : set.rings[w]) {
    if (b.epoch < 0 || b.epoch <= cur - win.spec.buckets || !b.dirty) continue;
    TALLY_RETURN_IF_ERROR(view->Merge(*b.program));
  }
  auto out = Collect(*view, set);
  if (!out.ok()) ++set.counters.compute_errors;
  return out;
}

absl::StatusOr<std::vector<at::Tensor>> Session::Snapshot(absl::string_view name) const {
  TALLY_ASSIGN_OR_RETURN(MetricSet * set, FindSet(name));
  std::lock_guard<std::mutex> lock(read_mu_);
  TALLY_RETURN_IF_ERROR(Harvest(*set));
  std::vector<at::Tensor> out;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        for (const at::Tensor& t : set->total->states()) out.push_back(t.clone());
      },
      set->name));
  return out;
}

absl::StatusOr<SessionCounters> Session::Counters(absl::string_view name) const {
  TALLY_ASSIGN_OR_RETURN(MetricSet * set, FindSet(name));
  std::lock_guard<std::mutex> lock(read_mu_);
  TALLY_RETURN_IF_ERROR(Harvest(*set));
  return set->counters;
}

absl::Status Session::AddCounters(const Session& from) {
  for (const std::string& name : from.set_names()) {
    TALLY_ASSIGN_OR_RETURN(SessionCounters c, from.Counters(name));
    auto set = FindSet(name);
    if (!set.ok()) continue;  // a set this session does not have
    std::lock_guard<std::mutex> lock(read_mu_);
    SessionCounters& mine = (*set)->counters;
    mine.updates += c.updates;
    mine.rows += c.rows;
    mine.rejected += c.rejected;
    mine.compute_errors += c.compute_errors;
  }
  return absl::OkStatus();
}

absl::Status Session::Reset() {
  std::lock_guard<std::mutex> lock(read_mu_);
  for (auto& set : sets_) {
    TALLY_RETURN_IF_ERROR(Harvest(*set));
    TALLY_RETURN_IF_ERROR(set->total->Reset());
    for (auto& ring : set->rings)
      for (Bucket& b : ring) {
        if (b.program && b.dirty) TALLY_RETURN_IF_ERROR(b.program->Reset());
        b.dirty = false;
        b.epoch = -1;
      }
  }
  return absl::OkStatus();
}

std::string Session::ExportPrometheus() const {
  std::lock_guard<std::mutex> lock(read_mu_);
  prometheus::Exposition out(options_.prometheus_prefix);
  const std::string& p = options_.prometheus_prefix;
  out.Family(p + "_metric", "gauge", "Metric value over every update (one sample per output element).");
  if (!windows_->empty()) {
    out.Family(p + "_window_metric", "gauge", "Metric value over a window of recent updates.");
  }
  out.Family(p + "_updates_total", "counter", "Accepted updates.");
  out.Family(p + "_rows_total", "counter", "Rows of accepted updates.");
  out.Family(p + "_rejected_updates_total", "counter", "Rejected updates (bad input).");
  out.Family(p + "_compute_errors_total", "counter", "Computes that failed (e.g. a deferred value check).");
  for (const auto& set : sets_) {
    absl::Status h = Harvest(*set);
    auto values = h.ok() ? Collect(*set->total, *set) : absl::StatusOr<std::vector<MetricValue>>(h);
    if (values.ok()) {
      for (const MetricValue& v : *values) {
        if (!out.AddResult(p + "_metric", {{"set", set->name}, {"metric", v.spec}}, v.value).ok()) {
          ++set->counters.compute_errors;
        }
      }
    } else {
      ++set->counters.compute_errors;
    }
    for (size_t w = 0; w < windows_->size(); ++w) {
      auto wv = WindowValues(*set, w);
      if (!wv.ok()) continue;
      for (const MetricValue& v : *wv) {
        (void)out.AddResult(p + "_window_metric",
                            {{"set", set->name}, {"window", (*windows_)[w].spec.name}, {"metric", v.spec}}, v.value);
      }
    }
    const SessionCounters& c = set->counters;
    out.AddSample(p + "_updates_total", {{"set", set->name}}, static_cast<double>(c.updates));
    out.AddSample(p + "_rows_total", {{"set", set->name}}, static_cast<double>(c.rows));
    out.AddSample(p + "_rejected_updates_total", {{"set", set->name}}, static_cast<double>(c.rejected));
    out.AddSample(p + "_compute_errors_total", {{"set", set->name}}, static_cast<double>(c.compute_errors));
  }
  return out.Render();
}

namespace {

void PutSignature(std::string& out, const dsl::Signature& sig) {
  checkpoint::PutU64(out, sig.size());
  for (const dsl::InputSpec& in : sig) {
    checkpoint::PutString(out, in.name);
    checkpoint::PutString(out, ir::DTypeName(in.dtype));
    checkpoint::PutU64(out, in.shape.size());
    for (int64_t d : in.shape) checkpoint::PutU64(out, static_cast<uint64_t>(d));
  }
}

absl::StatusOr<dsl::Signature> ReadSignature(checkpoint::Reader& r, absl::string_view path) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": ", what));
  };
  uint64_t n = 0;
  if (!r.U64(n) || n > 16) return bad("truncated or corrupt signature");
  dsl::Signature sig(n);
  for (dsl::InputSpec& in : sig) {
    std::string dtype;
    uint64_t rank = 0;
    if (!r.String(in.name) || !r.String(dtype) || !r.U64(rank) || rank > 16) return bad("truncated or corrupt signature");
    auto d = ir::ParseDType(dtype);
    if (!d.ok()) return bad(d.status().message());
    in.dtype = *d;
    in.shape.resize(rank);
    for (int64_t& dim : in.shape) {
      uint64_t v = 0;
      if (!r.U64(v)) return bad("truncated signature");
      dim = static_cast<int64_t>(v);
    }
  }
  return sig;
}

}  // namespace

absl::StatusOr<dsl::Signature> Session::CheckpointSignature(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(std::string file, checkpoint::ReadFile(path));
  TALLY_ASSIGN_OR_RETURN(absl::string_view payload, checkpoint::Unframe(file, path));
  checkpoint::Reader r(payload);
  return ReadSignature(r, path);
}

absl::Status Session::SaveCheckpoint(const std::string& path) const {
  std::string payload;
  PutSignature(payload, sig_);
  {
    std::lock_guard<std::mutex> lock(read_mu_);
    checkpoint::PutU64(payload, sets_.size());
    for (const auto& set : sets_) {
      TALLY_RETURN_IF_ERROR(Harvest(*set));
      checkpoint::PutString(payload, set->name);
      checkpoint::PutString(payload, absl::StrJoin(set->specs, "\n"));
      checkpoint::PutString(payload, set->fingerprint_hash);
      const SessionCounters& c = set->counters;
      for (int64_t v : {c.updates, c.rows, c.rejected, c.compute_errors}) checkpoint::PutU64(payload, v);
      TALLY_ASSIGN_OR_RETURN(std::string state, set->total->SaveState());
      checkpoint::PutString(payload, state);
      // Update-count windows: the update counter and the read side's ring.
      // Time windows are not saved: their intervals come from a monotonic
      // clock that does not survive a restart.
      checkpoint::PutU64(payload, static_cast<uint64_t>(set->update_seq.load(std::memory_order_relaxed)));
      int64_t saved_windows = 0;
      for (const Window& win : *windows_) saved_windows += win.spec.kind == WindowSpec::Kind::kUpdates;
      checkpoint::PutU64(payload, saved_windows);
      for (size_t w = 0; w < windows_->size(); ++w) {
        const WindowSpec& spec = (*windows_)[w].spec;
        if (spec.kind != WindowSpec::Kind::kUpdates) continue;
        checkpoint::PutString(payload, spec.name);
        checkpoint::PutU64(payload, spec.size);
        checkpoint::PutU64(payload, spec.buckets);
        for (const Bucket& b : set->rings[w]) {
          const bool kept = b.dirty && b.epoch >= 0 && b.program;
          checkpoint::PutU64(payload, kept ? static_cast<uint64_t>(b.epoch) + 1 : 0);
          std::string bucket_state;
          if (kept) {
            TALLY_ASSIGN_OR_RETURN(bucket_state, b.program->SaveState());
          }
          checkpoint::PutString(payload, bucket_state);
        }
      }
    }
  }
  return checkpoint::WriteFileAtomically(path, checkpoint::Frame(payload));
}

absl::Status Session::LoadCheckpoint(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(std::string file, checkpoint::ReadFile(path));
  TALLY_ASSIGN_OR_RETURN(absl::string_view payload, checkpoint::Unframe(file, path));
  checkpoint::Reader r(payload);
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": ", what));
  };
  TALLY_ASSIGN_OR_RETURN(dsl::Signature saved, ReadSignature(r, path));
  // Leading dims differ with the batch that compiled the session; the
  // fingerprint check below compares what was compiled.
  bool same = saved.size() == sig_.size();
  for (size_t i = 0; same && i < saved.size(); ++i) {
    same = saved[i].name == sig_[i].name && saved[i].dtype == sig_[i].dtype &&
           saved[i].shape.size() == sig_[i].shape.size();
  }
  if (!same) return bad("saved for other inputs (names, dtypes or ranks differ)");
  uint64_t n = 0;
  if (!r.U64(n)) return bad("truncated");
  if (n != sets_.size()) {
    return bad(absl::StrCat("holds ", n, " metric sets, this session has ", sets_.size()));
  }
  std::vector<std::unique_ptr<Program>> loaded;
  std::vector<SessionCounters> counters;
  // Per set: the update counter, and per window the restored ring (empty:
  // the window restarts, e.g. a time window or one declared differently).
  std::vector<int64_t> update_seqs;
  std::vector<std::vector<std::vector<Bucket>>> rings;
  for (const auto& set : sets_) {
    std::string name, specs, hash, state;
    uint64_t v[4];
    if (!r.String(name) || !r.String(specs) || !r.String(hash)) return bad("truncated");
    for (uint64_t& x : v)
      if (!r.U64(x)) return bad("truncated");
    if (!r.String(state)) return bad("truncated");
    if (name != set->name) return bad(absl::StrCat("metric set '", name, "' where this session has '", set->name, "'"));
    if (specs != absl::StrJoin(set->specs, "\n")) {
      return bad(absl::StrCat("metric set '", name, "' was saved with other metrics (",
                              absl::StrJoin(absl::StrSplit(specs, '\n'), ", "), ")"));
    }
    if (hash != set->fingerprint_hash) {
      return bad(absl::StrCat("metric set '", name, "' was saved by a different compiled program"));
    }
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> p, set->NewProgram());
    absl::Status st = p->LoadState(state);
    if (!st.ok()) return bad(st.message());
    loaded.push_back(std::move(p));
    counters.push_back({static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                        static_cast<int64_t>(v[3])});
    uint64_t seq = 0, saved_windows = 0;
    if (!r.U64(seq) || !r.U64(saved_windows) || saved_windows > 4096) return bad("truncated");
    update_seqs.push_back(static_cast<int64_t>(seq));
    rings.emplace_back(windows_->size());
    for (uint64_t k = 0; k < saved_windows; ++k) {
      std::string wname;
      uint64_t size = 0, buckets = 0;
      if (!r.String(wname) || !r.U64(size) || !r.U64(buckets) || buckets > 4096) return bad("truncated");
      // The same window in this session, or none (then it is read and dropped).
      size_t w = 0;
      while (w < windows_->size() && (*windows_)[w].spec.name != wname) ++w;
      const bool same = w < windows_->size() && (*windows_)[w].spec.kind == WindowSpec::Kind::kUpdates &&
                        static_cast<uint64_t>((*windows_)[w].spec.size) == size &&
                        static_cast<uint64_t>((*windows_)[w].spec.buckets) == buckets;
      std::vector<Bucket> ring(buckets);
      for (Bucket& b : ring) {
        uint64_t epoch_plus_one = 0;
        std::string bucket_state;
        if (!r.U64(epoch_plus_one) || !r.String(bucket_state)) return bad("truncated");
        if (epoch_plus_one == 0 || !same) continue;
        b.epoch = static_cast<int64_t>(epoch_plus_one - 1);
        TALLY_ASSIGN_OR_RETURN(b.program, set->NewProgram());
        absl::Status bst = b.program->LoadState(bucket_state);
        if (!bst.ok()) return bad(absl::StrCat("window '", wname, "': ", bst.message()));
        b.dirty = true;
      }
      if (same) rings.back()[w] = std::move(ring);
    }
  }
  if (!r.done()) return bad("bytes after the last metric set");
  // Everything checked: commit. Shard deltas not yet harvested are dropped.
  std::lock_guard<std::mutex> lock(read_mu_);
  for (size_t i = 0; i < sets_.size(); ++i) {
    MetricSet& set = *sets_[i];
    (void)Harvest(set);
    set.total = std::move(loaded[i]);
    set.counters = counters[i];
    set.update_seq.store(update_seqs[i], std::memory_order_relaxed);
    for (size_t w = 0; w < set.rings.size(); ++w) {
      if (!rings[i][w].empty()) {
        set.rings[w] = std::move(rings[i][w]);
        continue;
      }
      for (Bucket& b : set.rings[w]) {
        if (b.program && b.dirty) (void)b.program->Reset();
        b.dirty = false;
        b.epoch = -1;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tally
