#include "engine/dist/sync.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

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
#include "engine/ir/aten_types.h"
#include "engine/exec/fold_state.h"
#include "support/torch_status.h"
#include "support/status_macros.h"

namespace tally::dist {
namespace {

// Header: magic, fingerprint (2 words), state count, cat state count, then
// the first kInlineLengths cat row counts (more go in a second allgather).
constexpr int64_t kMagic = 0x54414c4c59530001;  // "TALLYS", version 1
constexpr int kHeaderWords = 16;
constexpr int kHeaderFixed = 5;
constexpr int kInlineLengths = kHeaderWords - kHeaderFixed;

uint64_t Fnv1a(absl::string_view s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::pair<int64_t, int64_t> FingerprintWords(const Program& p) {
  std::string text = absl::StrReplaceAll(p.fingerprint(), {{absl::StrCat("@", p.options().device.name), "@*"}});
  uint64_t a = Fnv1a(text, 0xcbf29ce484222325ULL);
  uint64_t b = Fnv1a(text, 0x84222325cbf29ce4ULL ^ text.size());
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
      std::string why =
          timed_out ? absl::StrCat("no answer from every rank within ", absl::FormatDuration(timeout_),
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

}  // namespace

std::string SyncFingerprint(const Program& program) {
  auto [a, b] = FingerprintWords(program);
  return Hex(a, b);
}

absl::StatusOr<SyncStats> Sync(Program& program, c10d::ProcessGroup& group, const SyncOptions& options) {
  const int world = group.getSize();
  const int rank = group.getRank();
  const auto& decls = program.module().states;
  const std::vector<at::Tensor>& local = program.states();
  Comm comm(group, options.timeout, absl::StrCat("sync (rank ", rank, " of ", world, ")"));
  SyncStats stats;
  if (world == 1) {
    TALLY_RETURN_IF_ERROR(program.SetSynced(local));
    return stats;
  }
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(program.options().device));
  if (dev.is_meta()) {
    return absl::FailedPreconditionError(
        absl::StrCat(comm.who(), ": ", program.metric_names(), ": states on meta hold no values to sync"));
  }

  // The plan depends only on the module, so every rank derives the same one.
  std::vector<int> sums;            // sum states, packed per dtype
  std::vector<Segment> segments;    // everything else travels as bytes
  int num_cats = 0;
  for (size_t i = 0; i < decls.size(); ++i) {
    const ir::StateDecl& d = decls[i];
    if (local[i].device() != dev) {
      return absl::FailedPreconditionError(absl::StrCat(comm.who(), ": state '", d.name, "' is on ",
                                                        local[i].device().str(), ", not ", dev.str()));
    }
    if (d.reducer == ir::Reducer::kSum) {
      sums.push_back(i);
      continue;
    }
    Segment s{static_cast<int>(i), d.reducer};
    if (d.reducer == ir::Reducer::kCat) {
      for (size_t k = 1; k < d.type.shape.size(); ++k) {
        if (d.type.shape[k].is_symbolic()) {
          return absl::UnimplementedError(absl::StrCat(comm.who(), ": cat state '", d.name,
                                                       "' has a symbolic trailing dim (", d.type.ToString(), ")"));
        }
      }
      s.cat = num_cats++;
      s.row_bytes = local[i].element_size();
      for (int64_t k = 1; k < local[i].dim(); ++k) s.row_bytes *= local[i].size(k);
    } else {
      s.row_bytes = local[i].numel() * local[i].element_size();
    }
    segments.push_back(s);
  }

  // 1. Header: fingerprint and cat row counts, from every rank.
  auto [fp_a, fp_b] = FingerprintWords(program);
  std::vector<int64_t> own_lengths(num_cats);
  for (const Segment& s : segments) {
    if (s.cat >= 0) own_lengths[s.cat] = local[s.state].size(0);
  }
  at::Tensor header, headers;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&, fp_a = fp_a, fp_b = fp_b] {  // init-captures: clang 14 cannot capture a binding
        at::Tensor h = at::zeros({kHeaderWords}, at::kLong);
        int64_t* w = h.data_ptr<int64_t>();
        w[0] = kMagic;
        w[1] = fp_a;
        w[2] = fp_b;
        w[3] = static_cast<int64_t>(decls.size());
        w[4] = num_cats;
        for (int k = 0; k < num_cats && k < kInlineLengths; ++k) w[kHeaderFixed + k] = own_lengths[k];
        header = h.to(dev);
        headers = at::empty({world, kHeaderWords}, header.options());
      },
      comm.who()));
  stats.bytes_sent += header.nbytes();
  TALLY_RETURN_IF_ERROR(comm.Allgather(header, headers, "allgather of the state header"));
  std::vector<std::vector<int64_t>> lengths(world, std::vector<int64_t>(num_cats));
  {
    at::Tensor h;
    TALLY_RETURN_IF_ERROR(support::CatchTorch([&] { h = headers.cpu(); }, comm.who()));
    const int64_t* w = h.data_ptr<int64_t>();
    auto row = [&](int r) { return w + static_cast<int64_t>(r) * kHeaderWords; };
    for (int r = 0; r < world; ++r) {
      if (row(r)[0] != kMagic) {
        return absl::FailedPreconditionError(absl::StrCat(
            comm.who(), ": rank ", r, " did not send a Tally sync header (every rank must call Sync at the same point)"));
      }
    }
    for (int r = 1; r < world; ++r) {
      const int64_t* a = row(0);
      const int64_t* b = row(r);
      if (a[1] != b[1] || a[2] != b[2] || a[3] != b[3] || a[4] != b[4]) {
        return absl::FailedPreconditionError(absl::StrCat(
            comm.who(), ": ranks 0 and ", r, " compiled different programs (sync fingerprints ", Hex(a[1], a[2]),
            " and ", Hex(b[1], b[2]), "); every rank must compile the same metrics with the same arguments and "
            "input signature (this rank: ", program.metric_names(), ")"));
      }
      for (int k = 0; k < num_cats && k < kInlineLengths; ++k) lengths[r][k] = b[kHeaderFixed + k];
    }
    for (int k = 0; k < num_cats && k < kInlineLengths; ++k) lengths[0][k] = row(0)[kHeaderFixed + k];
  }
  if (num_cats > kInlineLengths) {
    at::Tensor all;
    at::Tensor mine;
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          mine = at::tensor(own_lengths, at::kLong).to(dev);
          all = at::empty({world, num_cats}, mine.options());
        },
        comm.who()));
    stats.bytes_sent += mine.nbytes();
    TALLY_RETURN_IF_ERROR(comm.Allgather(mine, all, "allgather of the cat states' row counts"));
    at::Tensor h;
    TALLY_RETURN_IF_ERROR(support::CatchTorch([&] { h = all.cpu(); }, comm.who()));
    const int64_t* w = h.data_ptr<int64_t>();
    for (int r = 0; r < world; ++r) {
      for (int k = 0; k < num_cats; ++k) lengths[r][k] = w[static_cast<int64_t>(r) * num_cats + k];
    }
  }
  for (int r = 0; r < world; ++r) {
    for (int k = 0; k < num_cats; ++k) {
      if (lengths[r][k] < 0) {
        return absl::InternalError(absl::StrCat(comm.who(), ": rank ", r, " sent a negative row count"));
      }
    }
  }

  std::vector<at::Tensor> synced(decls.size());

  // 2. Sum states: one flat buffer and one allreduce per dtype.
  std::vector<at::ScalarType> dtypes;
  for (int i : sums) {
    if (std::find(dtypes.begin(), dtypes.end(), local[i].scalar_type()) == dtypes.end()) {
      dtypes.push_back(local[i].scalar_type());
    }
  }
  for (at::ScalarType dtype : dtypes) {
    std::vector<int> members;
    for (int i : sums) {
      if (local[i].scalar_type() == dtype) members.push_back(i);
    }
    at::Tensor flat;
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          std::vector<at::Tensor> parts;
          for (int i : members) parts.push_back(local[i].reshape({-1}));
          // cat always copies: the allreduce below never writes a local state.
          flat = at::cat(parts);
          if (dtype == at::kBool) flat = flat.to(at::kByte);
        },
        comm.who()));
    stats.bytes_sent += flat.nbytes();
    TALLY_RETURN_IF_ERROR(
        comm.AllreduceSum(flat, absl::StrCat("allreduce of the ", c10::toString(dtype), " sum states")));
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          if (dtype == at::kBool) flat = flat.ne(0);
          int64_t off = 0;
          for (int i : members) {
            int64_t n = local[i].numel();
            synced[i] = flat.narrow(0, off, n).view(local[i].sizes());
            off += n;
          }
        },
        comm.who()));
  }

  // 3. Cat, max/min and custom states: one byte buffer per rank, gathered,
  // then concatenated or folded in rank order. Max and min fold here with
  // exec::FoldState, as in one process (Gloo's max drops a NaN that
  // at::maximum propagates).
  auto segment_bytes = [&](const Segment& s, int r) {
    return s.cat >= 0 ? lengths[r][s.cat] * s.row_bytes : s.row_bytes;
  };
  std::vector<std::vector<int64_t>> offsets(world, std::vector<int64_t>(segments.size()));
  int64_t width = 0;
  for (int r = 0; r < world; ++r) {
    int64_t off = 0;
    for (size_t k = 0; k < segments.size(); ++k) {
      offsets[r][k] = off;
      off += AlignUp(segment_bytes(segments[k], r));
    }
    width = std::max(width, off);
  }
  if (width > 0) {
    at::Tensor mine, gathered;
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          mine = at::zeros({width}, at::TensorOptions().dtype(at::kByte).device(dev));
          for (size_t k = 0; k < segments.size(); ++k) {
            int64_t n = segment_bytes(segments[k], rank);
            if (n > 0) mine.narrow(0, offsets[rank][k], n).copy_(AsBytes(local[segments[k].state]));
          }
          gathered = at::empty({world, width}, mine.options());
        },
        comm.who()));
    stats.bytes_sent += mine.nbytes();
    TALLY_RETURN_IF_ERROR(comm.Allgather(mine, gathered, "allgather of the cat, max/min and custom-merge states"));
    std::vector<std::vector<at::Tensor>> per_rank(world, std::vector<at::Tensor>(decls.size()));
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          for (size_t k = 0; k < segments.size(); ++k) {
            const Segment& s = segments[k];
            const at::Tensor& t = local[s.state];
            std::vector<at::Tensor> parts;
            for (int r = 0; r < world; ++r) {
              std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
              if (s.cat >= 0) sizes[0] = lengths[r][s.cat];
              at::Tensor bytes = gathered[r].narrow(0, offsets[r][k], segment_bytes(s, r));
              parts.push_back(FromBytes(bytes, t.scalar_type(), sizes));
            }
            switch (s.reducer) {
              case ir::Reducer::kCat: synced[s.state] = at::cat(parts, 0); break;
              case ir::Reducer::kMax:
              case ir::Reducer::kMin: {
                at::Tensor acc = parts[0];
                for (int r = 1; r < world; ++r) acc = exec::FoldState(s.reducer, acc, parts[r]);
                synced[s.state] = acc;
                break;
              }
              default:
                for (int r = 0; r < world; ++r) per_rank[r][s.state] = parts[r];
                break;
            }
          }
        },
        comm.who()));
    // Custom-merge groups: rank 0's states, then each next rank's merged in.
    bool any_custom = false;
    for (const Segment& s : segments) any_custom |= s.reducer == ir::Reducer::kCustom;
    if (any_custom) {
      std::vector<at::Tensor> acc = per_rank[0];
      for (int r = 1; r < world; ++r) {
        auto merged = program.FoldCustom(acc, per_rank[r]);
        if (!merged.ok()) {
          return absl::Status(merged.status().code(), absl::StrCat(comm.who(), ": ", merged.status().message()));
        }
        acc = *std::move(merged);
      }
      for (const Segment& s : segments) {
        if (s.reducer == ir::Reducer::kCustom) synced[s.state] = acc[s.state];
      }
    }
  } else {
    // Nothing to send: every such state is empty on every rank.
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          for (const Segment& s : segments) synced[s.state] = local[s.state].clone();
        },
        comm.who()));
  }
  stats.collectives = comm.collectives();
  TALLY_RETURN_IF_ERROR(program.SetSynced(std::move(synced)));
  return stats;
}

}  // namespace tally::dist
