// ConfmatPart: the per-class statistics of a C x C confusion matrix
// cm[target][pred] that every classification metric except the matrix
// itself reads — the names that the ops confmat_part and mc_marginals take,
// and that the narrow-states pass keeps instead of the matrix.
#ifndef TALLY_OPS_CONFMAT_PARTS_H_
#define TALLY_OPS_CONFMAT_PARTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace tally::ops {

// ConfmatPart is one statistic per class c, a C-vector.
enum class ConfmatPart {
  kTp,      // cm[c][c]: the diagonal
  kTarget,  // Σ_j cm[c][j]: rows whose target is c (row sums)
  kPred,    // Σ_i cm[i][c]: rows predicted c (column sums)
  kAbsErr,  // Σ_j |c - j| cm[c][j]: for linearly weighted kappa
  kSqErr,   // Σ_j (c - j)^2 cm[c][j]: for quadratically weighted kappa
};

inline constexpr ConfmatPart kAllConfmatParts[] = {ConfmatPart::kTp, ConfmatPart::kTarget, ConfmatPart::kPred,
                                                   ConfmatPart::kAbsErr, ConfmatPart::kSqErr};

// ConfmatPartName is the attribute spelling: tp, target, pred, abs_err, sq_err.
inline absl::string_view ConfmatPartName(ConfmatPart p) {
  switch (p) {
    case ConfmatPart::kTp:
      return "tp";
    case ConfmatPart::kTarget:
      return "target";
    case ConfmatPart::kPred:
      return "pred";
    case ConfmatPart::kAbsErr:
      return "abs_err";
    case ConfmatPart::kSqErr:
      return "sq_err";
  }
  return "";
}

// ParseConfmatParts reads a comma-separated list of distinct part names.
inline absl::StatusOr<std::vector<ConfmatPart>> ParseConfmatParts(absl::string_view text) {
  std::vector<ConfmatPart> out;
  for (absl::string_view name : absl::StrSplit(text, ',')) {
    bool found = false;
    for (ConfmatPart p : kAllConfmatParts) {
      if (ConfmatPartName(p) != name) continue;
      for (ConfmatPart q : out) {
        if (q == p) return absl::InvalidArgumentError(absl::StrCat("confmat part '", name, "' listed twice"));
      }
      out.push_back(p);
      found = true;
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown confmat part '", name, "' (known: tp, target, pred, abs_err, sq_err)"));
    }
  }
  return out;
}

// JoinConfmatParts is the inverse of ParseConfmatParts.
inline std::string JoinConfmatParts(const std::vector<ConfmatPart>& parts) {
  return absl::StrJoin(parts, ",", [](std::string* out, ConfmatPart p) { absl::StrAppend(out, ConfmatPartName(p)); });
}

}  // namespace tally::ops

#endif  // TALLY_OPS_CONFMAT_PARTS_H_
