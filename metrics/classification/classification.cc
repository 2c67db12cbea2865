// Classification metrics: the binary_*, multiclass_* and multilabel_* forms of
// TorchMetrics 1.5's accuracy, precision, recall, f1_score, fbeta_score,
// specificity, negative_predictive_value (1.9), stat_scores, confusion_matrix, hamming_distance,
// jaccard_index, matthews_corrcoef, cohen_kappa and exact_match, with their
// functional argument names and defaults.
//
// The update of every metric is one of the shared statistics of
// classification_stats.h (a confusion matrix, top-k counts or exact-match
// counts), so metrics over the same inputs share their states; everything
// else — per-class scores, averaging, normalization, MCC and kappa — is
// computed from those counts in finalize, in float64.
//
// Where Tally deliberately differs from TorchMetrics 1.5:
//   * Scores are float64 (TorchMetrics: float32), so results are the exact
//     values for the counts; counts stay int64.
//   * Value checks (labels out of range) are deferred: Update masks the
//     offending rows out of the states and Compute fails with their count.
//     Binary/multilabel int preds are checked at ignored positions too (as
//     TorchMetrics does); multiclass label preds are not (TorchMetrics drops
//     ignored positions before it counts them).
//   * multidim_average="samplewise" keeps one row of counts per sample (cat
//     states), so its memory grows with the rows seen. A binary result is
//     always [N] (TorchMetrics squeezes a one-sample batch to a scalar).
//   * Float targets are rejected (TorchMetrics would truncate or compare them).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/classification/stats.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::Parts;
using dsl::State;
using ir::DType;
using ops::Expr;

enum class Kind {
  kAccuracy,
  kPrecision,
  kRecall,
  kF1,
  kFBeta,
  kSpecificity,
  kNegativePredictiveValue,
  kStatScores,
  kHamming,
  kConfusionMatrix,
  kJaccard,
  kMcc,
  kKappa,
  kExactMatch,
};

bool IsStatFamily(Kind k) {
  switch (k) {
    case Kind::kAccuracy:
    case Kind::kPrecision:
    case Kind::kRecall:
    case Kind::kF1:
    case Kind::kFBeta:
    case Kind::kSpecificity:
    case Kind::kNegativePredictiveValue:
    case Kind::kStatScores:
    case Kind::kHamming:
      return true;
    default:
      return false;
  }
}

// Args are the parsed functional arguments (TorchMetrics names and defaults).
struct Args {
  double threshold = 0.5;
  int64_t num = 0;  // num_classes or num_labels
  std::string average = "macro";
  int64_t top_k = 1;
  std::optional<int64_t> ignore_index;
  double zero_division = 0;
  double beta = 1;
  std::string normalize = "none";
  std::string weights = "none";
  bool samplewise = false;  // multidim_average="samplewise"
  int64_t num_groups = 0;   // binary stat family: per-group values of the `groups` input
  bool overall = false;     // with num_groups: (per group, over all rows)
};

absl::StatusOr<std::string> ReadNormalize(SpecArgs& args) {
  const ArgValue* v = args.Find("normalize", "one of true, pred, all, none", "none");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) return std::string("none");
  // `normalize=true` parses as the boolean; TorchMetrics' value is the string "true".
  if (auto* b = std::get_if<bool>(v); b != nullptr && *b) return std::string("true");
  if (auto* s = std::get_if<std::string>(v)) {
    if (*s == "true" || *s == "pred" || *s == "all" || *s == "none") return *s;
  }
  return args.InvalidArgument(
      absl::StrCat("normalize must be one of true, pred, all, none, got ", ArgValueToString(*v)));
}

absl::StatusOr<Args> ReadArgs(Task task, Kind kind, SpecArgs& args) {
  Args a;
  bool stat = IsStatFamily(kind);
  if (kind == Kind::kFBeta) {
    TALLY_ASSIGN_OR_RETURN(a.beta, args.GetDouble("beta"));
    if (!(a.beta > 0)) return args.InvalidArgument(absl::StrCat("beta must be > 0, got ", a.beta));
  }
  if (task == Task::kMulticlass) {
    TALLY_ASSIGN_OR_RETURN(a.num, args.GetInt("num_classes"));
    if (a.num < 2) return args.InvalidArgument(absl::StrCat("num_classes must be an integer >= 2, got ", a.num));
  }
  if (task == Task::kMultilabel) {
    TALLY_ASSIGN_OR_RETURN(a.num, args.GetInt("num_labels"));
    if (a.num < 2) return args.InvalidArgument(absl::StrCat("num_labels must be an integer >= 2, got ", a.num));
  }
  if (task != Task::kMulticlass) {
    // TorchMetrics requires a float: `threshold=1` raises there, `threshold=1.0` does not.
    if (const ArgValue* v = args.Find("threshold", "float", "0.5");
        v != nullptr && std::holds_alternative<int64_t>(*v)) {
      return args.InvalidArgument(absl::StrCat("threshold must be a float in [0, 1] (write ", std::get<int64_t>(*v),
                                               ".0), got the integer ", std::get<int64_t>(*v)));
    }
    TALLY_ASSIGN_OR_RETURN(a.threshold, args.GetDouble("threshold", 0.5));
    if (!(a.threshold >= 0 && a.threshold <= 1)) {
      return args.InvalidArgument(absl::StrCat("threshold must be in [0, 1], got ", a.threshold));
    }
  }
  if (task != Task::kBinary && (stat || kind == Kind::kJaccard)) {
    TALLY_ASSIGN_OR_RETURN(a.average, args.GetEnum("average", {"micro", "macro", "weighted", "none"}, "macro"));
  }
  if (task == Task::kMulticlass && stat) {
    TALLY_ASSIGN_OR_RETURN(a.top_k, args.GetInt("top_k", 1));
    if (a.top_k < 1 || a.top_k > a.num) {
      return args.InvalidArgument(absl::StrCat("top_k must be in [1, num_classes=", a.num, "], got ", a.top_k));
    }
  }
  if (stat || kind == Kind::kExactMatch) {
    TALLY_ASSIGN_OR_RETURN(std::string md, args.GetEnum("multidim_average", {"global", "samplewise"}, "global"));
    a.samplewise = md == "samplewise";
  }
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  if (task == Task::kBinary && stat) {
    // Slices (Tally's): one value per group of the `groups` input.
    TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> groups, args.GetOptionalInt("num_groups"));
    TALLY_ASSIGN_OR_RETURN(a.overall, args.GetBool("overall", false));
    if (groups && *groups < 1) return args.InvalidArgument(absl::StrCat("num_groups must be >= 1, got ", *groups));
    if (groups && a.samplewise) {
      return args.InvalidArgument("num_groups is not supported with multidim_average='samplewise'");
    }
    if (!groups && a.overall) return args.InvalidArgument("overall=true needs num_groups");
    a.num_groups = groups.value_or(0);
  }
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  if (kind == Kind::kPrecision || kind == Kind::kRecall || kind == Kind::kF1 || kind == Kind::kFBeta ||
      kind == Kind::kJaccard || kind == Kind::kNegativePredictiveValue) {
    TALLY_ASSIGN_OR_RETURN(a.zero_division, args.GetDouble("zero_division", 0.0));
    // Only the f-scores validate it in TorchMetrics.
    if ((kind == Kind::kF1 || kind == Kind::kFBeta) && a.zero_division != 0 && a.zero_division != 1) {
      return args.InvalidArgument(absl::StrCat("zero_division must be 0 or 1, got ", a.zero_division));
    }
  }
  if (kind == Kind::kConfusionMatrix) {
    TALLY_ASSIGN_OR_RETURN(a.normalize, ReadNormalize(args));
  }
  if (kind == Kind::kKappa) {
    TALLY_ASSIGN_OR_RETURN(a.weights, args.GetEnum("weights", {"linear", "quadratic", "none"}, "none"));
  }
  return a;
}

// Counts are tp, fp, tn, fn: scalars for binary, [K] per class or label.
struct Counts {
  Expr tp, fp, tn, fn;
};

Expr At2(Expr m, int64_t dim, int64_t i, int64_t j) { return ops::Select(ops::Select(m, dim, i), dim, j); }

// Marginals are the per-class statistics of a C x C confusion matrix that
// every metric but the matrix itself reads (confmat_part): the diagonal, the
// row (target) and column (prediction) sums. Reading the matrix only through
// them lets narrow-states keep three C-vectors instead of C^2 counts.
struct Marginals {
  Expr tp, target, pred;  // [C], the matrix's dtype
};

Marginals MarginalsOf(Expr cm) {
  return {ops::ConfmatPartOf(cm, "tp"), ops::ConfmatPartOf(cm, "target"), ops::ConfmatPartOf(cm, "pred")};
}

Counts FromMarginals(const Marginals& m) {
  Counts c;
  c.tp = m.tp;
  c.fp = m.pred - m.tp;
  c.fn = m.target - m.tp;
  c.tn = ops::Sum(m.target) - (c.fp + c.fn + c.tp);
  return c;
}

// FromConfmat reads the counts off a confusion matrix (any dtype).
Counts FromConfmat(Task task, Expr cm) {
  if (task == Task::kMulticlass) return FromMarginals(MarginalsOf(cm));
  Counts c;
  // [[tn, fp], [fn, tp]], per label for multilabel.
  int64_t dim = task == Task::kBinary ? 0 : 1;
  c.tn = At2(cm, dim, 0, 0);
  c.fp = At2(cm, dim, 0, 1);
  c.fn = At2(cm, dim, 1, 0);
  c.tp = At2(cm, dim, 1, 1);
  return c;
}

Counts Map(const Counts& c, Expr (*f)(Expr)) { return {f(c.tp), f(c.fp), f(c.tn), f(c.fn)}; }
Expr SumAll(Expr x) { return ops::Sum(x); }
Expr SumLast(Expr x) { return ops::Sum(x, {-1}); }

// Score is the per-class (or binary) score of a stat-family metric
// (TorchMetrics' _*_reduce formulas before averaging).
Expr Score(Kind kind, Task task, const Counts& c, const Args& a) {
  double zd = a.zero_division;
  switch (kind) {
    case Kind::kAccuracy:
    case Kind::kHamming: {
      Expr acc = task == Task::kMulticlass ? ops::SafeDiv(c.tp, c.tp + c.fn)
                                           : ops::SafeDiv(c.tp + c.tn, c.tp + c.tn + c.fp + c.fn);
      return kind == Kind::kAccuracy ? acc : 1.0 - acc;
    }
    case Kind::kPrecision:
      return ops::SafeDiv(c.tp, c.tp + c.fp, zd);
    case Kind::kRecall:
      return ops::SafeDiv(c.tp, c.tp + c.fn, zd);
    case Kind::kF1:
    case Kind::kFBeta: {
      double b2 = a.beta * a.beta;
      return ops::SafeDiv((1 + b2) * c.tp, (1 + b2) * c.tp + b2 * c.fn + c.fp, zd);
    }
    case Kind::kSpecificity:
      return ops::SafeDiv(c.tn, c.tn + c.fp);
    case Kind::kNegativePredictiveValue:  // TorchMetrics 1.9
      return ops::SafeDiv(c.tn, c.tn + c.fn, zd);
    default:
      return Expr();
  }
}

// Average follows TorchMetrics' _adjust_weights_safe_divide: weighted uses the
// support, macro weighs every class 1 except (multiclass only) classes absent
// from both target and preds — or from target alone when `topk_rule`.
Expr Average(Expr score, const std::string& average, const Counts& c, bool multilabel, bool topk_rule,
             bool samplewise = false) {
  if (average == "none") return score;
  Expr w;
  if (average == "weighted") {
    w = c.tp + c.fn;
  } else {
    w = ops::FullLike(score, 1.0, DType::kFloat64);
    if (!multilabel) {
      Expr absent = topk_rule ? c.tp + c.fn == 0.0 : c.tp + c.fp + c.fn == 0.0;
      w = ops::Where(absent, 0.0, w);
    }
  }
  // Samplewise scores are [M, K]: each sample averages its own K classes.
  if (samplewise) return ops::Sum(ops::SafeDiv(w * score, ops::Sum(w, {-1}, /*keepdim=*/true)), {-1});
  return ops::Sum(ops::SafeDiv(w * score, ops::Sum(w)));
}

// Stack makes [..., 5] from five equally shaped values.
Expr Stack(const std::vector<Expr>& cols) {
  Expr eye = ops::OneHot(ops::Arange(cols[0], 5), 5);
  Expr out;
  for (int64_t i = 0; i < 5; ++i) {
    Expr part = ops::Where(ops::Select(eye, 0, i), ops::Unsqueeze(cols[i], -1), 0.0);
    out = out.valid() ? out + part : part;
  }
  return out;
}

// StatScores stacks tp, fp, tn, fn and support as [..., 5] and averages
// over the classes: counts [K] give [5] ([K, 5] for none), samplewise counts
// [M, K] give [M, 5] ([M, K, 5]); binary counts are stacked as they are.
Expr StatScores(Task task, const Counts& c, const std::string& average, bool samplewise) {
  Expr res = Stack({c.tp, c.fp, c.tn, c.fn, c.tp + c.fn});
  if (task == Task::kBinary || average == "none") return res;
  const int64_t classes = samplewise ? 1 : 0;  // the dim that holds the classes
  if (average == "micro") return ops::Sum(res, {classes});
  Expr resf = F64(res);
  if (average == "macro") {
    return ops::Sum(resf, {classes}) / static_cast<double>(res.type().shape[classes].size);
  }
  // weighted: a plain division, NaN when there is no support (as in
  // TorchMetrics). Samplewise multiclass weighs each sample's classes by the
  // sample's support; multilabel divides by the support of every sample and
  // label together (TorchMetrics' _multilabel_stat_scores_compute).
  Expr w = F64(c.tp + c.fn);
  Expr total = samplewise && task == Task::kMulticlass ? ops::Sum(w, {-1}, /*keepdim=*/true) : ops::Sum(w);
  return ops::Sum(resf * ops::Unsqueeze(w / total, -1), {classes});
}

Expr NormalizeConfmat(Expr cm, const std::string& normalize) {
  if (normalize == "none") return cm + 0.0;
  Expr f = F64(cm);
  std::vector<int64_t> dims = normalize == "true"   ? std::vector<int64_t>{-1}
                              : normalize == "pred" ? std::vector<int64_t>{-2}
                                                    : std::vector<int64_t>{-2, -1};
  // 0/0 becomes 0, as TorchMetrics replaces NaNs.
  return ops::SafeDiv(f, ops::Sum(f, dims, /*keepdim=*/true));
}

Expr Jaccard(Task task, Expr cm, const Args& a) {
  double zd = a.zero_division;
  Counts c = Map(FromConfmat(task, cm), F64);
  if (task == Task::kBinary) return ops::SafeDiv(c.tp, c.tp + c.fp + c.fn, zd);
  int64_t n = a.num;
  // TorchMetrics treats ignore_index as a class index whenever it is in
  // [0, n), for multilabel too.
  bool ii_in = a.ignore_index && *a.ignore_index >= 0 && *a.ignore_index < n;
  Expr num = c.tp;
  Expr denom = c.tp + c.fp + c.fn;
  if (a.average == "micro") {
    Expr d = ops::Sum(denom);
    if (ii_in) d = d - ops::Select(denom, 0, *a.ignore_index);
    return ops::SafeDiv(ops::Sum(num), d, zd);
  }
  Expr j = ops::SafeDiv(num, denom, zd);
  if (a.average == "none") return j;
  Expr w;
  if (a.average == "weighted") {
    w = c.tp + c.fn;
  } else {
    w = ops::FullLike(j, 1.0, DType::kFloat64);
    if (ii_in) w = ops::Where(ops::Arange(j, n) == static_cast<double>(*a.ignore_index), 0.0, w);
    if (task == Task::kMulticlass) w = ops::Where(c.tp + c.fn + c.tp + c.fp == 0.0, 0.0, w);
  }
  // A plain division: NaN when every weight is 0.
  return ops::Sum((w * j) / ops::Sum(w));
}

// Mcc is TorchMetrics' _matthews_corrcoef_reduce over the marginals of the
// (for multilabel: summed) matrix `cm` (int64), in float64.
Expr Mcc(Task task, Expr cm) {
  if (task == Task::kMultilabel) cm = ops::Sum(cm, {0});
  int64_t n = cm.type().shape[0].size;
  Marginals m = MarginalsOf(cm);
  Expr tpv = F64(m.tp), rows = F64(m.target), cols = F64(m.pred);
  Expr s = ops::Sum(rows);
  Expr trace = ops::Sum(tpv);
  Expr cov_ytyp = trace * s - ops::Sum(rows * cols);
  Expr cov_ypyp = s * s - ops::Sum(cols * cols);
  Expr cov_ytyt = s * s - ops::Sum(rows * rows);
  Expr denom = cov_ypyp * cov_ytyt;
  Expr mcc = cov_ytyp / ops::Sqrt(denom);
  if (n != 2) return ops::Where(denom == 0.0, 0.0, mcc);
  // The 2 x 2 special cases of TorchMetrics' _matthews_corrcoef_reduce.
  Expr tp = ops::Select(tpv, 0, 1), tn = ops::Select(tpv, 0, 0);
  Expr fp = ops::Select(cols, 0, 1) - tp, fn = ops::Select(rows, 0, 1) - tp;
  Expr c1 = fn == 0.0 && tn == 0.0;
  Expr c2 = fp == 0.0 && tn == 0.0;
  Expr c3 = tp == 0.0 && fn == 0.0;
  Expr a = ops::Where(c1, tp, ops::Where(c2, tp, ops::Where(c3, tn, tn)));
  Expr b = ops::Where(c1, fp, ops::Where(c2, fn, ops::Where(c3, fp, fn)));
  const double eps = 1.1920928955078125e-07;  // float32 machine epsilon
  Expr eps_mcc =
      std::sqrt(eps) * (a - b) / ops::Sqrt((tp + fp + eps) * (tp + fn + eps) * (tn + fp + eps) * (tn + fn + eps));
  mcc = ops::Where(denom == 0.0, eps_mcc, mcc);
  Expr right = tp + tn, wrong = fp + fn;
  mcc = ops::Where(right == 0.0 && wrong != 0.0, -1.0, mcc);
  return ops::Where(right != 0.0 && wrong == 0.0, 1.0, mcc);
}

// Kappa is 1 - Σ w·cm / Σ w·expected (TorchMetrics' _cohen_kappa_reduce,
// expected = rows ⊗ cols / total) from O(C) statistics of the int64 matrix
// `cm`, so no C x C weight or expectation matrix is ever built:
//   none       Σ w·cm = total − trace;   Σ w·expected = total − Σ r·c / total
//   linear     Σ w·cm = Σ abs_err;       Σ_ij |i−j| r_i c_j = Σ_k R_k (s − K_k) + K_k (s − R_k),
//              R, K the prefix sums of r, c (a pair with i ≤ k < j, or j ≤ k < i,
//              is counted once for every k between them: no cancellation)
//   quadratic  Σ w·cm = Σ sq_err;        Σ_ij (i−j)² r_i c_j = s Σ r (i−μr)² + s Σ c (j−μc)² + s² (μr−μc)²
// Plain divisions: 0/0 is NaN, as in TorchMetrics.
Expr Kappa(Expr cm, const std::string& weights) {
  int64_t n = cm.type().shape[0].size;
  Marginals m = MarginalsOf(cm);
  Expr r = F64(m.target), c = F64(m.pred);
  Expr s = ops::Sum(r);
  Expr observed, expected;
  if (weights == "linear") {
    observed = F64(ops::Sum(ops::ConfmatPartOf(cm, "abs_err")));
    Expr rc = ops::Cumsum(r, 0), kc = ops::Cumsum(c, 0);
    expected = ops::Sum(rc * (s - kc) + kc * (s - rc)) / s;
  } else if (weights == "quadratic") {
    observed = F64(ops::Sum(ops::ConfmatPartOf(cm, "sq_err")));
    Expr idx = F64(ops::Arange(cm, n));
    Expr mr = ops::Sum(r * idx) / s, mc = ops::Sum(c * idx) / s;
    Expr dr = idx - mr, dc = idx - mc;
    expected = ops::Sum(r * dr * dr) + ops::Sum(c * dc * dc) + s * (mr - mc) * (mr - mc);
  } else {
    observed = s - F64(ops::Sum(m.tp));
    expected = s - ops::Sum(r * c) / s;
  }
  return 1.0 - observed / expected;
}

// StatFamily builds accuracy, precision, recall, f-scores, specificity,
// hamming distance and stat_scores.
void BuildStatFamily(Task task, Kind kind, const Args& a, MetricBuilder& b) {
  Counts counts;  // int64
  if (a.num_groups > 0) {
    // Binary, per group: [G] counts, so every formula below gives [G].
    State s = BinaryGroupCounts(b, a.num_groups, a.threshold, a.ignore_index, /*with_target=*/true);
    if (!b.ok()) return;
    Expr rows = b.Read(s);  // [G, 5]: tp, fp, tn, fn, ignored
    counts = {ops::Select(rows, 1, 0), ops::Select(rows, 1, 1), ops::Select(rows, 1, 2), ops::Select(rows, 1, 3)};
    if (a.overall) {
      // (per group, over every row): the same formula over the summed counts.
      Counts all = Map(counts, SumAll);
      b.Output(kind == Kind::kStatScores
                   ? Parts{StatScores(task, counts, a.average, false), StatScores(task, all, a.average, false)}
                   : Parts{Score(kind, task, Map(counts, F64), a), Score(kind, task, Map(all, F64), a)});
      return;
    }
  } else if (a.samplewise) {
    State s = task == Task::kBinary       ? BinarySamplewise(b, a.threshold, a.ignore_index)
              : task == Task::kMultilabel ? MultilabelSamplewise(b, a.num, a.threshold, a.ignore_index)
                                          : MulticlassSamplewise(b, a.num, a.top_k, a.ignore_index);
    if (!b.ok()) return;
    Expr rows = b.Read(s);  // [M, 4] or [M, 4, K]
    counts = {ops::Select(rows, 1, 0), ops::Select(rows, 1, 1), ops::Select(rows, 1, 2), ops::Select(rows, 1, 3)};
  } else if (task == Task::kMulticlass && a.top_k > 1) {
    MulticlassTopkCounts s = MulticlassTopk(b, a.num, a.top_k, a.ignore_index);
    if (!b.ok()) return;
    counts = {b.Read(s.tp), b.Read(s.fp), b.Read(s.tn), b.Read(s.fn)};
  } else {
    State cm = task == Task::kBinary       ? BinaryConfmat(b, a.threshold, a.ignore_index, LogitCheck::kAllElements)
               : task == Task::kMultilabel ? MultilabelConfmat(b, a.num, a.threshold, a.ignore_index)
                                           : MulticlassConfmat(b, a.num, a.ignore_index);
    if (!b.ok()) return;
    Expr matrix = b.Read(cm);
    if (task == Task::kMulticlass && a.average == "micro" && kind != Kind::kStatScores) {
      // Micro scores read only the totals of the marginals (so narrow-states
      // keeps scalars): Σ tn = C Σ target − (Σ fp + Σ fn + Σ tp), exactly the
      // sum of the per-class counts.
      Expr tp = ops::Sum(ops::ConfmatPartOf(matrix, "tp"));
      Expr fp = ops::Sum(ops::ConfmatPartOf(matrix, "pred")) - tp;
      Expr target = ops::Sum(ops::ConfmatPartOf(matrix, "target"));
      Expr fn = target - tp;
      Expr tn = target * static_cast<double>(a.num) - (fp + fn + tp);
      b.Output(Score(kind, task, Map(Counts{tp, fp, tn, fn}, F64), a));
      return;
    }
    counts = FromConfmat(task, matrix);
  }
  if (kind == Kind::kStatScores) {
    b.Output(StatScores(task, counts, a.average, a.samplewise));
    return;
  }
  Counts c = Map(counts, F64);
  if (task == Task::kBinary) {
    b.Output(Score(kind, task, c, a));
    return;
  }
  if (a.average == "micro") {
    b.Output(Score(kind, task, a.samplewise ? Map(c, SumLast) : Map(c, SumAll), a));
    return;
  }
  // Only accuracy, precision, recall and NPV pass top_k on to the macro weights.
  bool topk_rule = a.top_k > 1 && (kind == Kind::kAccuracy || kind == Kind::kPrecision || kind == Kind::kRecall ||
                                   kind == Kind::kNegativePredictiveValue);
  b.Output(Average(Score(kind, task, c, a), a.average, c, task == Task::kMultilabel, topk_rule, a.samplewise));
}

// Confmat is the confusion matrix the confusion-matrix family reads.
State Confmat(Task task, const Args& a, MetricBuilder& b) {
  switch (task) {
    case Task::kBinary:
      return BinaryConfmat(b, a.threshold, a.ignore_index, LogitCheck::kKeptElements);
    case Task::kMulticlass:
      return MulticlassConfmat(b, a.num, a.ignore_index);
    case Task::kMultilabel:
      return MultilabelConfmat(b, a.num, a.threshold, a.ignore_index);
  }
  return State{};
}

void BuildBody(Task task, Kind kind, const Args& a, MetricBuilder& b) {
  // Weighted counts exist for the global confusion matrices and exact
  // match; per-sample rows and top-k counts have no weighted form yet.
  if (HasWeight(b) && (a.samplewise || (task == Task::kMulticlass && a.top_k > 1))) {
    b.FailInput(kWeightInput, a.samplewise ? "weights are not supported with multidim_average='samplewise'"
                                           : "weights are not supported with top_k > 1");
    return;
  }
  if (IsStatFamily(kind)) {
    BuildStatFamily(task, kind, a, b);
    return;
  }
  if (kind == Kind::kExactMatch && a.samplewise) {
    int64_t positions = 1;
    State s = task == Task::kMulticlass
                  ? MulticlassSamplewiseExactMatch(b, a.num, a.ignore_index)
                  : MultilabelSamplewiseExactMatch(b, a.num, a.threshold, a.ignore_index, &positions);
    if (b.ok()) b.Output(F64(b.Read(s)) / static_cast<double>(positions));
    return;
  }
  if (kind == Kind::kExactMatch) {
    ExactMatchCounts c = task == Task::kMulticlass ? MulticlassExactMatch(b, a.num, a.ignore_index)
                                                   : MultilabelExactMatch(b, a.num, a.threshold, a.ignore_index);
    if (b.ok()) b.Output(ops::SafeDiv(F64(b.Read(c.correct)), F64(b.Read(c.total))));
    return;
  }
  State s = Confmat(task, a, b);
  if (!b.ok()) return;
  Expr cm = b.Read(s);
  switch (kind) {
    case Kind::kConfusionMatrix:
      b.Output(NormalizeConfmat(cm, a.normalize));
      break;
    case Kind::kJaccard:
      b.Output(Jaccard(task, cm, a));
      break;
    case Kind::kMcc:
      b.Output(Mcc(task, cm));
      break;
    case Kind::kKappa:
      b.Output(Kappa(cm, a.weights));
      break;
    default:
      break;
  }
}

absl::StatusOr<dsl::Metric> Build(Task task, Kind kind, SpecArgs& args, const dsl::Signature& sig,
                                  const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(task, kind, args));
  MetricBuilder b(args.metric_name(), sig, device);
  BuildBody(task, kind, a, b);
  return b.Finish();
}

void RegisterTask(Task task, const std::string& prefix, bool kappa, bool exact_match, std::vector<MetricInfo>& out) {
  auto add = [&](const char* name, BuildFn fn) {
    out.push_back({prefix + name, "classification", {"preds", "target", kWeightInput}, fn});
  };
  // The binary stat family also takes `groups` (with num_groups).
  auto add_stat = [&](const char* name, Kind kind) {
    add(name, Bound(Build, task, kind));
    if (task == Task::kBinary) out.back().inputs.push_back(kGroupsInput);
  };
  add_stat("accuracy", Kind::kAccuracy);
  add_stat("precision", Kind::kPrecision);
  add_stat("recall", Kind::kRecall);
  add_stat("f1_score", Kind::kF1);
  add_stat("fbeta_score", Kind::kFBeta);
  add_stat("specificity", Kind::kSpecificity);
  add_stat("negative_predictive_value", Kind::kNegativePredictiveValue);
  add_stat("stat_scores", Kind::kStatScores);
  add_stat("hamming_distance", Kind::kHamming);
  add("confusion_matrix", Bound(Build, task, Kind::kConfusionMatrix));
  add("jaccard_index", Bound(Build, task, Kind::kJaccard));
  add("matthews_corrcoef", Bound(Build, task, Kind::kMcc));
  if (kappa) add("cohen_kappa", Bound(Build, task, Kind::kKappa));
  if (exact_match) add("exact_match", Bound(Build, task, Kind::kExactMatch));
}

}  // namespace

void RegisterClassificationMetrics(std::vector<MetricInfo>& out) {
  RegisterTask(Task::kBinary, "binary_", /*kappa=*/true, /*exact_match=*/false, out);
  RegisterTask(Task::kMulticlass, "multiclass_", /*kappa=*/true, /*exact_match=*/true, out);
  RegisterTask(Task::kMultilabel, "multilabel_", /*kappa=*/false, /*exact_match=*/true, out);
}

}  // namespace tally::metrics
