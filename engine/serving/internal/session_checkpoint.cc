#include "engine/serving/internal/session_checkpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/ir/types.h"
#include "engine/serving/internal/metric_set.h"
#include "support/status_macros.h"

namespace tally::serving::internal {

absl::Status PutSet(std::string& out, const MetricSet& set, const std::vector<Window>& windows) {
  persist::PutString(out, set.name);
  persist::PutString(out, absl::StrJoin(set.specs, "\n"));
  persist::PutString(out, set.fingerprint_hash);
  const SessionCounters& c = set.counters;
  for (int64_t v : {c.updates, c.rows, c.rejected, c.compute_errors}) persist::PutU64(out, v);
  TALLY_ASSIGN_OR_RETURN(std::string state, set.total->SaveState());
  persist::PutString(out, state);
  persist::PutU64(out, static_cast<uint64_t>(set.update_seq.load(std::memory_order_relaxed)));
  int64_t saved_windows = 0;
  for (const Window& win : windows) saved_windows += win.spec.kind == WindowSpec::Kind::kUpdates;
  persist::PutU64(out, saved_windows);
  for (size_t w = 0; w < windows.size(); ++w) {
    const WindowSpec& spec = windows[w].spec;
    if (spec.kind != WindowSpec::Kind::kUpdates) continue;
    persist::PutString(out, spec.name);
    persist::PutU64(out, spec.size);
    persist::PutU64(out, spec.buckets);
    for (const Bucket& b : set.rings[w]) {
      const bool kept = b.dirty && b.epoch >= 0 && b.program;
      persist::PutU64(out, kept ? static_cast<uint64_t>(b.epoch) + 1 : 0);
      std::string bucket_state;
      if (kept) {
        TALLY_ASSIGN_OR_RETURN(bucket_state, b.program->SaveState());
      }
      persist::PutString(out, bucket_state);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<LoadedSet>> ReadPayload(persist::Reader& r, absl::string_view path,
                                                   const dsl::Signature& sig,
                                                   const std::vector<std::unique_ptr<MetricSet>>& sets,
                                                   const std::vector<Window>& windows) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, ": ", what));
  };
  TALLY_ASSIGN_OR_RETURN(dsl::Signature saved, ReadSignature(r, path));
  // Leading dims differ with the batch that compiled the session; the
  // fingerprint check below compares what was compiled.
  bool same = saved.size() == sig.size();
  for (size_t i = 0; same && i < saved.size(); ++i) {
    same =
        saved[i].name == sig[i].name && saved[i].dtype == sig[i].dtype && saved[i].shape.size() == sig[i].shape.size();
  }
  if (!same) return bad("saved for other inputs (names, dtypes or ranks differ)");
  uint64_t n = 0;
  if (!r.U64(n)) return bad("truncated");
  if (n != sets.size()) {
    return bad(absl::StrCat("holds ", n, " metric sets, this session has ", sets.size()));
  }
  std::vector<LoadedSet> loaded;
  for (const auto& set : sets) {
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
    LoadedSet& out = loaded.emplace_back();
    TALLY_ASSIGN_OR_RETURN(out.total, set->NewProgram());
    absl::Status st = out.total->LoadState(state);
    if (!st.ok()) return bad(st.message());
    out.counters = {static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), static_cast<int64_t>(v[2]),
                    static_cast<int64_t>(v[3])};
    uint64_t seq = 0, saved_windows = 0;
    if (!r.U64(seq) || !r.U64(saved_windows) || saved_windows > 4096) return bad("truncated");
    out.update_seq = static_cast<int64_t>(seq);
    out.rings.resize(windows.size());
    for (uint64_t k = 0; k < saved_windows; ++k) {
      std::string wname;
      uint64_t size = 0, buckets = 0;
      if (!r.String(wname) || !r.U64(size) || !r.U64(buckets) || buckets > 4096) return bad("truncated");
      // The same window in this session, or none (then it is read and dropped).
      size_t w = 0;
      while (w < windows.size() && windows[w].spec.name != wname) ++w;
      const bool same = w < windows.size() && windows[w].spec.kind == WindowSpec::Kind::kUpdates &&
                        static_cast<uint64_t>(windows[w].spec.size) == size &&
                        static_cast<uint64_t>(windows[w].spec.buckets) == buckets;
      Ring ring(buckets);
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
      if (same) out.rings[w] = std::move(ring);
    }
  }
  if (!r.done()) return bad("bytes after the last metric set");
  return loaded;
}

}  // namespace tally::serving::internal
