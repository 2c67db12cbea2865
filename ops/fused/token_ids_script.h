// The TorchScript helper the token-sequence ops share (edit_distance,
// ngram_matches): their script sources are kCompactIdsScript followed by
// their own functions.
#ifndef TALLY_OPS_FUSED_TOKEN_IDS_SCRIPT_H_
#define TALLY_OPS_FUSED_TOKEN_IDS_SCRIPT_H_

namespace tally::ops::fused {

// _compact(x [N, L]) moves each row's non-negative ids first, in order, and
// fills the rest with -1. dtype=4 is int64 and 7 float64 (ScalarType codes:
// the C++ compiler resolves no torch.int64).
inline constexpr char kCompactIdsScript[] = R"TS(
def _compact(x: Tensor) -> Tensor:
    keep = x >= 0
    ids = x.to(4)
    width = ids.size(1)
    dest = torch.where(keep, torch.cumsum(keep.to(4), 1) - 1, torch.full_like(ids, width))
    out = torch.full([ids.size(0), width + 1], -1, dtype=4, device=ids.device)
    return out.scatter(1, dest, ids)[:, :width]
)TS";

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_TOKEN_IDS_SCRIPT_H_
