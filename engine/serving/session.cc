// Session orchestration. The parts live beside it (engine-internal):
// metric_set.h (a set: compile, route and check inputs), session_shards.h
// (the lock-free shards), window_ring.h (windows), micro_batch.h (the
// per-shard queue), session_checkpoint.h (the checkpoint payload) and
// prometheus.h (the exposition layout).
#include "engine/serving/session.h"

#include <ATen/ATen.h>

#include <chrono>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/persist/state_file.h"
#include "engine/runtime/result_text.h"
#include "engine/serving/internal/metric_set.h"
#include "engine/serving/internal/prometheus.h"
#include "engine/serving/internal/session_checkpoint.h"
#include "engine/serving/internal/session_shards.h"
#include "engine/serving/internal/window_ring.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally {

std::ostream& operator<<(std::ostream& os, const MetricValue& v) {
  return os << v.spec << " = " << ValueToText(v.value);
}
namespace {

namespace internal = serving::internal;

std::atomic<uint64_t> g_next_session_id{1};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(std::vector<BuiltMetricSet> sets, const dsl::Signature& sig,
                                                         SessionOptions options) {
  if (sets.empty()) return absl::InvalidArgumentError("session: no metric set");
  if (!internal::IsValidMetricName(options.prometheus_prefix)) {
    return absl::InvalidArgumentError(absl::StrCat("session: prometheus_prefix '", options.prometheus_prefix,
                                                   "' is not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"));
  }
  std::unique_ptr<Session> s(new Session());
  s->id_ = g_next_session_id.fetch_add(1);
  TALLY_ASSIGN_OR_RETURN(std::vector<Window> windows, internal::MakeWindows(options.windows));
  s->windows_ = std::make_unique<std::vector<Window>>(std::move(windows));
  if (!options.now_ns) {
    options.now_ns = [] {
      return static_cast<int64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
              .count());
    };
  }
  s->options_ = std::move(options);
  s->sig_ = sig;
  absl::flat_hash_set<std::string> names;
  for (BuiltMetricSet& spec : sets) {
    if (spec.name.empty() || !names.insert(spec.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("session: metric set '", spec.name, "': names must be unique and non-empty"));
    }
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<MetricSet> set,
                           internal::MakeMetricSet(std::move(spec), s->options_, s->windows_.get()));
    set->index = s->sets_.size();
    s->all_sets_.push_back(set.get());
    s->sets_.push_back(std::move(set));
  }
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
  return absl::NotFoundError(
      absl::StrCat("session: no metric set '", name, "' (sets: ", absl::StrJoin(known, ", "), ")"));
}

absl::Status Session::Update(const NamedTensors& inputs) { return UpdateSets(all_sets_, inputs); }

absl::Status Session::Update(absl::string_view set, const NamedTensors& inputs) {
  MetricSet* s = nullptr;
  for (const auto& c : sets_)
    if (c->name == set) s = c.get();
  if (s == nullptr) return FindSet(set).status();
  return UpdateSets({s}, inputs);
}

void Session::CountRejected() {
  std::vector<internal::Shard*>& mine = internal::ThreadShardsOf(id_, sets_);
  for (const auto& set : sets_) {
    internal::Shard* sh = mine[set->index];
    internal::ShardState* st = internal::Hold(*sh);
    ++st->rejected;
    internal::Publish(*sh, st);
  }
}

absl::Status Session::UpdateSets(const std::vector<MetricSet*>& sets, const NamedTensors& inputs) {
  std::vector<internal::Shard*>& mine = internal::ThreadShardsOf(id_, sets_);
  // Validate everything before any state changes.
  internal::RoutedInputs routed;
  absl::Status status =
      internal::RouteInputs(sets, inputs, options_.reject_invalid_values, /*name_sets=*/sets_.size() > 1, routed);
  const int64_t now = status.ok() && (!windows_->empty() || options_.micro_batching.max_rows > 0) ? NowNs() : 0;
  absl::Status applied;
  for (size_t i = 0; i < sets.size(); ++i) {
    MetricSet& s = *sets[i];
    internal::Shard* sh = mine[s.index];
    internal::ShardState* st = internal::Hold(*sh);
    if (!status.ok()) {
      ++st->rejected;
    } else {
      // Apply counts the update (accepted, or rejected when it fails).
      const NamedTensors& mine_in = routed.whole[i] ? inputs : routed.filtered[i];
      absl::Status a = internal::Apply(s, *st, mine_in, internal::RowsOf(mine_in), options_.micro_batching, now);
      if (!a.ok() && applied.ok()) applied = a;
    }
    internal::Publish(*sh, st);
  }
  return status.ok() ? applied : status;
}

absl::Status Session::Harvest(MetricSet& set) const { return internal::HarvestShards(set); }

absl::StatusOr<std::vector<MetricValue>> Session::Compute(absl::string_view name) const {
  TALLY_ASSIGN_OR_RETURN(MetricSet * set, FindSet(name));
  std::lock_guard<std::mutex> lock(read_mu_);
  TALLY_RETURN_IF_ERROR(Harvest(*set));
  auto out = internal::Collect(*set->total, *set);
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
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> view, set.NewProgram());
  TALLY_RETURN_IF_ERROR(internal::MergeWindow(set, w, options_.now_ns, *view));
  auto out = internal::Collect(*view, set);
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
    for (auto& ring : set->rings) TALLY_RETURN_IF_ERROR(internal::ResetRing(ring));
  }
  return absl::OkStatus();
}

std::string Session::ExportPrometheus() const {
  std::lock_guard<std::mutex> lock(read_mu_);
  internal::SessionExposition out(options_.prometheus_prefix, !windows_->empty());
  for (const auto& set : sets_) {
    absl::Status h = Harvest(*set);
    auto values = h.ok() ? internal::Collect(*set->total, *set) : absl::StatusOr<std::vector<MetricValue>>(h);
    if (values.ok()) {
      for (const MetricValue& v : *values) {
        if (!out.AddMetric(set->name, v.spec, v.value).ok()) ++set->counters.compute_errors;
      }
    } else {
      ++set->counters.compute_errors;
    }
    for (size_t w = 0; w < windows_->size(); ++w) {
      auto wv = WindowValues(*set, w);
      if (!wv.ok()) continue;
      for (const MetricValue& v : *wv) (void)out.AddWindowMetric(set->name, (*windows_)[w].spec.name, v.spec, v.value);
    }
    const SessionCounters& c = set->counters;
    out.AddCounters(set->name, c.updates, c.rows, c.rejected, c.compute_errors);
  }
  return out.Render();
}

absl::StatusOr<dsl::Signature> Session::CheckpointSignature(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(std::string file, persist::ReadFile(path));
  TALLY_ASSIGN_OR_RETURN(absl::string_view payload, persist::Unframe(file, path));
  persist::Reader r(payload);
  return persist::ReadSignature(r, path);
}

absl::Status Session::SaveCheckpoint(const std::string& path) const {
  std::string payload;
  persist::PutSignature(payload, sig_);
  {
    std::lock_guard<std::mutex> lock(read_mu_);
    persist::PutU64(payload, sets_.size());
    for (const auto& set : sets_) {
      TALLY_RETURN_IF_ERROR(Harvest(*set));
      TALLY_RETURN_IF_ERROR(internal::PutSet(payload, *set, *windows_));
    }
  }
  return persist::WriteFileAtomically(path, persist::Frame(payload));
}

absl::StatusOr<std::string> Session::SaveState(absl::string_view set_name) const {
  TALLY_ASSIGN_OR_RETURN(MetricSet * set, FindSet(set_name));
  persist::StateFile file;
  file.signature = sig_;
  file.specs = set->specs;
  file.layout_hash = persist::HexHash(persist::StateLayout(set->proto->module()));
  // One id per replica and set, whatever the time of the save: polling the
  // same replica twice gives files a merge refuses together.
  file.ids = {persist::ShardId(absl::StrCat("session ", id_, " set ", set->name))};
  {
    std::lock_guard<std::mutex> lock(read_mu_);
    TALLY_RETURN_IF_ERROR(Harvest(*set));
    TALLY_ASSIGN_OR_RETURN(file.states, set->total->SaveState());
  }
  return persist::EncodeStateFile(file);
}

absl::Status Session::LoadCheckpoint(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(std::string file, persist::ReadFile(path));
  TALLY_ASSIGN_OR_RETURN(absl::string_view payload, persist::Unframe(file, path));
  persist::Reader r(payload);
  TALLY_ASSIGN_OR_RETURN(std::vector<internal::LoadedSet> loaded,
                         internal::ReadPayload(r, path, sig_, sets_, *windows_));
  // Everything checked: commit. Shard deltas not yet harvested are dropped.
  std::lock_guard<std::mutex> lock(read_mu_);
  for (size_t i = 0; i < sets_.size(); ++i) {
    MetricSet& set = *sets_[i];
    internal::LoadedSet& in = loaded[i];
    (void)Harvest(set);
    set.total = std::move(in.total);
    set.counters = in.counters;
    set.update_seq.store(in.update_seq, std::memory_order_relaxed);
    for (size_t w = 0; w < set.rings.size(); ++w) {
      if (in.rings[w].empty()) {
        internal::DropRing(set.rings[w]);
      } else {
        set.rings[w] = std::move(in.rings[w]);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tally
