#include "engine/dist/sync.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "engine/exec/fold_state.h"
#include "engine/ir/aten_types.h"
#include "support/hash.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::dist {
namespace {

// Header: magic, fingerprint (2 words), state count, cat state count, then
// the first kInlineLengths cat row counts (more go in a second allgather).
constexpr int64_t kMagic = 0x54414c4c59530001;  // "TALLYS", version 1
constexpr int kHeaderWords = 16;
constexpr int kHeaderFixed = 5;
constexpr int kInlineLengths = kHeaderWords - kHeaderFixed;

std::pair<int64_t, int64_t> FingerprintWords(const Program& p) {
  std::string text = absl::StrReplaceAll(p.fingerprint(), {{absl::StrCat("@", p.options().device.name), "@*"}});
  // Two words from two seeds: the standard one and its halves swapped,
  // mixed with the length.
  uint64_t a = support::Fnv1a64(text);
  uint64_t b = support::Fnv1a64(text, 0x84222325cbf29ce4ULL ^ text.size());
  int64_t wa, wb;
  std::memcpy(&wa, &a, sizeof a);
  std::memcpy(&wb, &b, sizeof b);
  return {wa, wb};
}

std::string Hex(int64_t a, int64_t b) {
  return absl::StrFormat("%016x%016x", static_cast<uint64_t>(a), static_cast<uint64_t>(b));
}

int64_t AlignUp(int64_t n) { return (n + 7) / 8 * 8; }

// Comm issues collectives on the group, counts them, and turns a failure
// (an exception from c10d, or no answer within the timeout) into a status.
class Comm {
 public:
  Comm(c10d::ProcessGroup& pg, absl::Duration timeout, std::string who)
      : pg_(pg), timeout_(timeout), who_(std::move(who)) {}

  // Allgather fills out[r] (out is [world, ...]) with rank r's `in`.
  absl::Status Allgather(const at::Tensor& in, const at::Tensor& out, absl::string_view what) {
    return Run(what, [&] {
      std::vector<at::Tensor> inputs{in};
      std::vector<std::vector<at::Tensor>> outputs(1);
      for (int64_t r = 0; r < out.size(0); ++r) outputs[0].push_back(out[r]);
      return pg_.allgather(outputs, inputs);
    });
  }

  absl::Status AllreduceSum(const at::Tensor& t, absl::string_view what) {
    return Run(what, [&] {
      std::vector<at::Tensor> tensors{t};
      c10d::AllreduceOptions opts;
      opts.reduceOp = c10d::ReduceOp::SUM;
      return pg_.allreduce(tensors, opts);
    });
  }

  int collectives() const { return collectives_; }
  const std::string& who() const { return who_; }

 private:
  absl::Status Run(absl::string_view what, const std::function<c10::intrusive_ptr<c10d::Work>()>& issue) {
    ++collectives_;
    try {
      c10::intrusive_ptr<c10d::Work> work = issue();
      auto ms = std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout_));
      if (!work->wait(ms)) throw std::runtime_error("the collective did not complete");
      return absl::OkStatus();
    } catch (const std::exception& e) {
      std::string msg = support::FirstLine(e.what());
      std::string lower = absl::AsciiStrToLower(msg);
      bool timed_out = absl::StrContains(lower, "timed out") || absl::StrContains(lower, "timeout");
      std::string why = timed_out ? absl::StrCat("no answer from every rank within ", absl::FormatDuration(timeout_),
                                                 " (a rank died, hangs, or never called sync)")
                                  : "a rank died or left the group";
      std::string text = absl::StrCat(who_, ": ", what, " failed: ", why, ": ", msg);
      return timed_out ? absl::DeadlineExceededError(text) : absl::UnavailableError(text);
    }
  }

  c10d::ProcessGroup& pg_;
  absl::Duration timeout_;
  std::string who_;
  int collectives_ = 0;
};

// AsBytes views a state's elements as bytes (a copy only when not contiguous).
at::Tensor AsBytes(const at::Tensor& t) { return t.contiguous().reshape({-1}).view(at::kByte); }

// FromBytes reinterprets `bytes` (8-byte aligned in its storage) as `dtype`
// with `sizes`.
at::Tensor FromBytes(const at::Tensor& bytes, at::ScalarType dtype, at::IntArrayRef sizes) {
  return bytes.view(dtype).view(sizes);
}

// Segment is one state's slot in the gathered byte buffer.
struct Segment {
  int state;
  ir::Reducer reducer;
  int cat = -1;           // index among cat states (their row counts)
  int64_t row_bytes = 0;  // cat: bytes per row; others: bytes of the state
};

// SyncPlan says how each state travels. It depends only on the module, so
// every rank derives the same one.
struct SyncPlan {
  size_t num_states = 0;
  std::vector<int> sums;          // sum states, packed per dtype
  std::vector<Segment> segments;  // everything else travels as bytes
  int num_cats = 0;
};

// SumBucket is the sum states of one dtype: one flat buffer, one allreduce.
struct SumBucket {
  at::ScalarType dtype;
  std::vector<int> members;
};

// RowCounts are, per rank, the row count of every cat state.
using RowCounts = std::vector<std::vector<int64_t>>;

// SegmentLayout places every segment in each rank's byte buffer (8-byte
// aligned); `width` is the longest rank's buffer.
struct SegmentLayout {
  std::vector<std::vector<int64_t>> offsets;  // [rank][segment]
  int64_t width = 0;
};

// Syncing is one rank's side of a Sync.
struct Syncing {
  Program& program;
  const std::vector<at::Tensor>& local;
  c10::Device dev;
  int world;
  int rank;
  Comm& comm;
  SyncStats& stats;
};

// StatesDevice is the device of the program's states; meta holds no values.
absl::StatusOr<c10::Device> StatesDevice(const Program& program, const Comm& comm) {
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(program.options().device));
  if (dev.is_meta()) {
    return absl::FailedPreconditionError(
        absl::StrCat(comm.who(), ": ", program.metric_names(), ": states on meta hold no values to sync"));
  }
  return dev;
}

// PlanStates sorts the states into sums and byte segments.
absl::StatusOr<SyncPlan> PlanStates(const Syncing& s) {
  const auto& decls = s.program.module().states;
  SyncPlan plan;
  plan.num_states = decls.size();
  for (size_t i = 0; i < decls.size(); ++i) {
    const ir::StateDecl& d = decls[i];
    const at::Tensor& t = s.local[i];
    if (t.device() != s.dev) {
      return absl::FailedPreconditionError(
          absl::StrCat(s.comm.who(), ": state '", d.name, "' is on ", t.device().str(), ", not ", s.dev.str()));
    }
    if (d.reducer == ir::Reducer::kSum) {
      plan.sums.push_back(i);
      continue;
    }
    Segment seg{static_cast<int>(i), d.reducer};
    if (d.reducer == ir::Reducer::kCat) {
      for (size_t k = 1; k < d.type.shape.size(); ++k) {
        if (d.type.shape[k].is_symbolic()) {
          return absl::UnimplementedError(absl::StrCat(s.comm.who(), ": cat state '", d.name,
                                                       "' has a symbolic trailing dim (", d.type.ToString(), ")"));
        }
      }
      seg.cat = plan.num_cats++;
      seg.row_bytes = t.element_size();
      for (int64_t k = 1; k < t.dim(); ++k) seg.row_bytes *= t.size(k);
    } else {
      seg.row_bytes = t.numel() * t.element_size();
    }
    plan.segments.push_back(seg);
  }
  return plan;
}

// CheckHeaders checks the gathered headers (every rank sent one, and every
// rank compiled the same program) and reads the inline row counts.
absl::Status CheckHeaders(const Syncing& s, const SyncPlan& plan, const at::Tensor& headers, RowCounts& lengths) {
  at::Tensor h;
  TALLY_RETURN_IF_ERROR(support::CatchTorch([&] { h = headers.cpu(); }, s.comm.who()));
  const int64_t* w = h.data_ptr<int64_t>();
  auto row = [&](int r) { return w + static_cast<int64_t>(r) * kHeaderWords; };
  for (int r = 0; r < s.world; ++r) {
    if (row(r)[0] != kMagic) {
      return absl::FailedPreconditionError(
          absl::StrCat(s.comm.who(), ": rank ", r,
                       " did not send a Tally sync header (every rank must call Sync at the same point)"));
    }
  }
  const int num_cats = plan.num_cats;
  for (int r = 1; r < s.world; ++r) {
    const int64_t* a = row(0);
    const int64_t* b = row(r);
    if (a[1] != b[1] || a[2] != b[2] || a[3] != b[3] || a[4] != b[4]) {
      return absl::FailedPreconditionError(
          absl::StrCat(s.comm.who(), ": ranks 0 and ", r, " compiled different programs (sync fingerprints ",
                       Hex(a[1], a[2]), " and ", Hex(b[1], b[2]),
                       "); every rank must compile the same metrics with the same arguments and "
                       "input signature (this rank: ",
                       s.program.metric_names(), ")"));
    }
    for (int k = 0; k < num_cats && k < kInlineLengths; ++k) lengths[r][k] = b[kHeaderFixed + k];
  }
  for (int k = 0; k < num_cats && k < kInlineLengths; ++k) lengths[0][k] = row(0)[kHeaderFixed + k];
  return absl::OkStatus();
}

// GatherRowCounts gathers every rank's cat row counts when the header
// cannot hold them all.
absl::Status GatherRowCounts(Syncing& s, const std::vector<int64_t>& own_lengths, RowCounts& lengths) {
  const int num_cats = static_cast<int>(own_lengths.size());
  at::Tensor all;
  at::Tensor mine;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        mine = at::tensor(own_lengths, at::kLong).to(s.dev);
        all = at::empty({s.world, num_cats}, mine.options());
      },
      s.comm.who()));
  s.stats.bytes_sent += mine.nbytes();
  TALLY_RETURN_IF_ERROR(s.comm.Allgather(mine, all, "allgather of the cat states' row counts"));
  at::Tensor h;
  TALLY_RETURN_IF_ERROR(support::CatchTorch([&] { h = all.cpu(); }, s.comm.who()));
  const int64_t* w = h.data_ptr<int64_t>();
  for (int r = 0; r < s.world; ++r) {
    for (int k = 0; k < num_cats; ++k) lengths[r][k] = w[static_cast<int64_t>(r) * num_cats + k];
  }
  return absl::OkStatus();
}

// ExchangeHeaders is step 1: every rank's fingerprint and cat row counts.
absl::StatusOr<RowCounts> ExchangeHeaders(Syncing& s, const SyncPlan& plan) {
  const int num_cats = plan.num_cats;
  auto [fp_a, fp_b] = FingerprintWords(s.program);
  std::vector<int64_t> own_lengths(num_cats);
  for (const Segment& seg : plan.segments) {
    if (seg.cat >= 0) own_lengths[seg.cat] = s.local[seg.state].size(0);
  }
  at::Tensor header, headers;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&, fp_a = fp_a, fp_b = fp_b] {  // init-captures: clang 14 cannot capture a binding
        at::Tensor h = at::zeros({kHeaderWords}, at::kLong);
        int64_t* w = h.data_ptr<int64_t>();
        w[0] = kMagic;
        w[1] = fp_a;
        w[2] = fp_b;
        w[3] = static_cast<int64_t>(plan.num_states);
        w[4] = num_cats;
        for (int k = 0; k < num_cats && k < kInlineLengths; ++k) w[kHeaderFixed + k] = own_lengths[k];
        header = h.to(s.dev);
        headers = at::empty({s.world, kHeaderWords}, header.options());
      },
      s.comm.who()));
  s.stats.bytes_sent += header.nbytes();
  TALLY_RETURN_IF_ERROR(s.comm.Allgather(header, headers, "allgather of the state header"));
  RowCounts lengths(s.world, std::vector<int64_t>(num_cats));
  TALLY_RETURN_IF_ERROR(CheckHeaders(s, plan, headers, lengths));
  if (num_cats > kInlineLengths) TALLY_RETURN_IF_ERROR(GatherRowCounts(s, own_lengths, lengths));
  for (int r = 0; r < s.world; ++r) {
    for (int k = 0; k < num_cats; ++k) {
      if (lengths[r][k] < 0) {
        return absl::InternalError(absl::StrCat(s.comm.who(), ": rank ", r, " sent a negative row count"));
      }
    }
  }
  return lengths;
}

// BucketSums groups the sum states by dtype, in order of first appearance.
std::vector<SumBucket> BucketSums(const SyncPlan& plan, const std::vector<at::Tensor>& local) {
  std::vector<SumBucket> buckets;
  for (int i : plan.sums) {
    const at::ScalarType dtype = local[i].scalar_type();
    auto it = std::find_if(buckets.begin(), buckets.end(), [&](const SumBucket& b) { return b.dtype == dtype; });
    if (it == buckets.end()) it = buckets.insert(buckets.end(), SumBucket{dtype, {}});
    it->members.push_back(i);
  }
  return buckets;
}

// AllreduceSums is step 2 for one bucket: pack its states into one flat
// buffer, allreduce it and unpack the sums into `synced`.
absl::Status AllreduceSums(Syncing& s, const SumBucket& bucket, std::vector<at::Tensor>& synced) {
  const at::ScalarType dtype = bucket.dtype;
  at::Tensor flat;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        std::vector<at::Tensor> parts;
        for (int i : bucket.members) parts.push_back(s.local[i].reshape({-1}));
        // cat always copies: the allreduce below never writes a local state.
        flat = at::cat(parts);
        if (dtype == at::kBool) flat = flat.to(at::kByte);
      },
      s.comm.who()));
  s.stats.bytes_sent += flat.nbytes();
  TALLY_RETURN_IF_ERROR(
      s.comm.AllreduceSum(flat, absl::StrCat("allreduce of the ", c10::toString(dtype), " sum states")));
  return support::CatchTorch(
      [&] {
        if (dtype == at::kBool) flat = flat.ne(0);
        int64_t off = 0;
        for (int i : bucket.members) {
          int64_t n = s.local[i].numel();
          synced[i] = flat.narrow(0, off, n).view(s.local[i].sizes());
          off += n;
        }
      },
      s.comm.who());
}

int64_t SegmentBytes(const Segment& seg, const RowCounts& lengths, int r) {
  return seg.cat >= 0 ? lengths[r][seg.cat] * seg.row_bytes : seg.row_bytes;
}

// LayOutSegments places the segments in every rank's buffer.
SegmentLayout LayOutSegments(const SyncPlan& plan, const RowCounts& lengths, int world) {
  SegmentLayout layout;
  layout.offsets.assign(world, std::vector<int64_t>(plan.segments.size()));
  for (int r = 0; r < world; ++r) {
    int64_t off = 0;
    for (size_t k = 0; k < plan.segments.size(); ++k) {
      layout.offsets[r][k] = off;
      off += AlignUp(SegmentBytes(plan.segments[k], lengths, r));
    }
    layout.width = std::max(layout.width, off);
  }
  return layout;
}

// GatherSegments packs this rank's segments into its byte buffer and
// allgathers every rank's: [world, width] bytes.
absl::StatusOr<at::Tensor> GatherSegments(Syncing& s, const SyncPlan& plan, const RowCounts& lengths,
                                          const SegmentLayout& layout) {
  at::Tensor mine, gathered;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        mine = at::zeros({layout.width}, at::TensorOptions().dtype(at::kByte).device(s.dev));
        for (size_t k = 0; k < plan.segments.size(); ++k) {
          int64_t n = SegmentBytes(plan.segments[k], lengths, s.rank);
          if (n > 0) mine.narrow(0, layout.offsets[s.rank][k], n).copy_(AsBytes(s.local[plan.segments[k].state]));
        }
        gathered = at::empty({s.world, layout.width}, mine.options());
      },
      s.comm.who()));
  s.stats.bytes_sent += mine.nbytes();
  TALLY_RETURN_IF_ERROR(s.comm.Allgather(mine, gathered, "allgather of the cat, max/min and custom-merge states"));
  return gathered;
}

// UnpackAndFold reads every rank's segments from `gathered`: cat states
// concatenated and max/min folded (exec::FoldState, as in one process:
// Gloo's max drops a NaN that at::maximum propagates) into `synced`, in
// rank order; custom-merge states go to `per_rank` for their merge graphs.
absl::Status UnpackAndFold(const Syncing& s, const SyncPlan& plan, const RowCounts& lengths,
                           const SegmentLayout& layout, const at::Tensor& gathered, std::vector<at::Tensor>& synced,
                           std::vector<std::vector<at::Tensor>>& per_rank) {
  return support::CatchTorch(
      [&] {
        for (size_t k = 0; k < plan.segments.size(); ++k) {
          const Segment& seg = plan.segments[k];
          const at::Tensor& t = s.local[seg.state];
          std::vector<at::Tensor> parts;
          for (int r = 0; r < s.world; ++r) {
            std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
            if (seg.cat >= 0) sizes[0] = lengths[r][seg.cat];
            at::Tensor bytes = gathered[r].narrow(0, layout.offsets[r][k], SegmentBytes(seg, lengths, r));
            parts.push_back(FromBytes(bytes, t.scalar_type(), sizes));
          }
          switch (seg.reducer) {
            case ir::Reducer::kCat:
              synced[seg.state] = at::cat(parts, 0);
              break;
            case ir::Reducer::kMax:
            case ir::Reducer::kMin: {
              at::Tensor acc = parts[0];
              for (int r = 1; r < s.world; ++r) acc = exec::FoldState(seg.reducer, acc, parts[r]);
              synced[seg.state] = acc;
              break;
            }
            default:
              for (int r = 0; r < s.world; ++r) per_rank[r][seg.state] = parts[r];
              break;
          }
        }
      },
      s.comm.who());
}

// FoldCustomGroups merges the custom-merge groups: rank 0's states, then each
// next rank's merged in with the program's merge graphs.
absl::Status FoldCustomGroups(const Syncing& s, const SyncPlan& plan,
                              const std::vector<std::vector<at::Tensor>>& per_rank, std::vector<at::Tensor>& synced) {
  bool any_custom = false;
  for (const Segment& seg : plan.segments) any_custom |= seg.reducer == ir::Reducer::kCustom;
  if (!any_custom) return absl::OkStatus();
  std::vector<at::Tensor> acc = per_rank[0];
  for (int r = 1; r < s.world; ++r) {
    auto merged = s.program.FoldCustom(acc, per_rank[r]);
    if (!merged.ok()) {
      return absl::Status(merged.status().code(), absl::StrCat(s.comm.who(), ": ", merged.status().message()));
    }
    acc = *std::move(merged);
  }
  for (const Segment& seg : plan.segments) {
    if (seg.reducer == ir::Reducer::kCustom) synced[seg.state] = acc[seg.state];
  }
  return absl::OkStatus();
}

// SyncSegments is step 3: the cat, max/min and custom states in one byte
// buffer per rank, gathered, then concatenated or folded in rank order.
absl::Status SyncSegments(Syncing& s, const SyncPlan& plan, const RowCounts& lengths, std::vector<at::Tensor>& synced) {
  const SegmentLayout layout = LayOutSegments(plan, lengths, s.world);
  if (layout.width == 0) {
    // Nothing to send: every such state is empty on every rank.
    return support::CatchTorch(
        [&] {
          for (const Segment& seg : plan.segments) synced[seg.state] = s.local[seg.state].clone();
        },
        s.comm.who());
  }
  TALLY_ASSIGN_OR_RETURN(at::Tensor gathered, GatherSegments(s, plan, lengths, layout));
  std::vector<std::vector<at::Tensor>> per_rank(s.world, std::vector<at::Tensor>(plan.num_states));
  TALLY_RETURN_IF_ERROR(UnpackAndFold(s, plan, lengths, layout, gathered, synced, per_rank));
  return FoldCustomGroups(s, plan, per_rank, synced);
}

}  // namespace

std::string SyncFingerprint(const Program& program) {
  auto [a, b] = FingerprintWords(program);
  return Hex(a, b);
}

absl::StatusOr<SyncStats> Sync(Program& program, c10d::ProcessGroup& group, const SyncOptions& options) {
  const int world = group.getSize();
  const int rank = group.getRank();
  Comm comm(group, options.timeout, absl::StrCat("sync (rank ", rank, " of ", world, ")"));
  SyncStats stats;
  if (world == 1) {
    TALLY_RETURN_IF_ERROR(program.SetSynced(program.states()));
    return stats;
  }
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, StatesDevice(program, comm));
  Syncing s{program, program.states(), dev, world, rank, comm, stats};
  TALLY_ASSIGN_OR_RETURN(SyncPlan plan, PlanStates(s));
  // 1. Header: fingerprint and cat row counts, from every rank.
  TALLY_ASSIGN_OR_RETURN(RowCounts lengths, ExchangeHeaders(s, plan));
  std::vector<at::Tensor> synced(plan.num_states);
  // 2. Sum states: one flat buffer and one allreduce per dtype.
  for (const SumBucket& bucket : BucketSums(plan, s.local)) TALLY_RETURN_IF_ERROR(AllreduceSums(s, bucket, synced));
  // 3. Cat, max/min and custom states: one allgather of bytes.
  TALLY_RETURN_IF_ERROR(SyncSegments(s, plan, lengths, synced));
  stats.collectives = comm.collectives();
  TALLY_RETURN_IF_ERROR(program.SetSynced(std::move(synced)));
  return stats;
}

}  // namespace tally::dist
