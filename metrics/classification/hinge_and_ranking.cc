// Hinge loss and the multilabel ranking metrics (TorchMetrics 1.5.2
// functional names and arguments):
//
//   binary_hinge_loss(squared=False, ignore_index=None)
//   multiclass_hinge_loss(num_classes, squared=False,
//                         multiclass_mode="crammer-singer"|"one-vs-all", ignore_index=None)
//   multilabel_coverage_error(num_labels, ignore_index=None)
//   multilabel_ranking_average_precision(num_labels, ignore_index=None)
//   multilabel_ranking_loss(num_labels, ignore_index=None)
// (each also accepts validate_args; validation is always on, deferred).
//
// Hinge (cls/hinge.py): binary inputs as binary_auroc reads them (float
// preds (N, ...), ignored elements dropped first, then sigmoid when any kept
// element lies outside [0, 1]); the loss of an element is max(0, 1 - p) for
// target 1 and max(0, 1 + p) for target 0, squared with `squared`, averaged
// over the kept elements (no kept element: NaN, TorchMetrics' 0 / 0).
// Multiclass: float preds (N, C, ...), ignored samples dropped, softmax over
// dim 1 when any kept score lies outside [0, 1]. crammer-singer: margin =
// p[target] - max of the other classes' p, a scalar result; one-vs-all: each
// class is the binary loss of its column, a [C] result. The result has the
// preds dtype (f16/bf16 preds are read as f32). States: an f64 sum ([] or
// [C]) and an i64 count.
//
// Ranking (cls/ranking.py): float preds and integer target (N, L, ...), rows
// are the (N, ...) positions with their L labels; sigmoid when any element
// (ignored ones included) lies outside [0, 1]. TorchMetrics then overwrites
// an ignored element's score and target with -4 * L; Tally reproduces what
// that does (QUIRKs, see tests/golden/SEMANTICS.md, "Hinge loss, multilabel
// ranking and operating points"):
//   * coverage: a row with an ignored element has coverage L (its minimum
//     "relevant" score is -4 L); a row without relevant labels has 0.
//     Otherwise the number of labels scored >= the lowest relevant score.
//   * ranking average precision: ignored elements rank below every kept one
//     and are never relevant, so they drop out, except that a row with
//     every kept label relevant but one ignored still scores 1. A row with
//     no relevant label or all L relevant scores 1. Ties take the maximal
//     rank (sklearn's rankdata "max").
//   * ranking loss: rows with 0 or L relevant labels add 0 but count in the
//     mean; an ignored element counts as an irrelevant label ranked last
//     (in the denominator nrel * (L - nrel), never misordered). Ties follow
//     TorchMetrics' argsort(argsort(preds)): an irrelevant label tied with a
//     relevant one is ranked above it when its index is larger (the stable
//     order that torch's CPU sort gives for rows of up to 16 labels; for
//     longer rows its order among ties is unspecified).
// Each row's value is computed in the update from L x L comparisons (L is
// static), so the states are an f64 sum and an i64 row count; results are
// float32 like TorchMetrics'. No rows: coverage and LRAP NaN (0 / 0), ranking
// loss 0 (TorchMetrics divides by 1 when no row qualifies).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/curves/common.h"
#include "metrics/registry.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

// OutDType is the result dtype of a hinge loss: the (read) preds dtype.
DType OutDType(Expr probs) { return probs.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }

// HingeMeasure is max(0, 1 - margin), squared with `squared`.
Expr HingeMeasure(Expr margin, bool squared) {
  Expr m = ops::Clamp(1.0 - margin, 0.0, std::nullopt);
  return squared ? m * m : m;
}

absl::StatusOr<bool> ReadCommon(SpecArgs& args, std::optional<int64_t>* ignore_index) {
  TALLY_ASSIGN_OR_RETURN(*ignore_index, args.GetOptionalInt("ignore_index"));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  return true;
}

absl::StatusOr<int64_t> ReadNum(SpecArgs& args, const char* name) {
  TALLY_ASSIGN_OR_RETURN(int64_t n, args.GetInt(name));
  if (n < 2) return args.InvalidArgument(absl::StrCat(name, " must be an integer >= 2, got ", n));
  return n;
}

absl::StatusOr<dsl::Metric> BuildBinaryHinge(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(bool squared, args.GetBool("squared", false));
  std::optional<int64_t> ignore_index;
  TALLY_RETURN_IF_ERROR(ReadCommon(args, &ignore_index).status());
  MetricBuilder b(args.metric_name(), sig, device);
  BinaryInputs in;
  if (!ReadBinaryInputs(ignore_index, /*cast_f32=*/true, b, in, NanScores::kPropagated)) return b.status();
  Expr p = F64(in.probs);
  Expr margin = ops::Where(in.target == int64_t{1}, p, -p);
  Expr measure = ops::Where(in.valid, HingeMeasure(margin, squared), 0.0);
  // sklearn's hinge_loss(sample_weight): the weighted mean of the losses.
  Expr w = FlatWeights(b, "target");
  if (!b.ok()) return b.status();
  State sum = b.AddState("measure_sum", DType::kFloat64, {}, Reducer::kSum);
  State total = b.AddState("total", w.valid() ? DType::kFloat64 : DType::kInt64, {}, Reducer::kSum);
  if (w.valid()) {
    b.Accumulate(sum, ops::Sum(measure * w));
    b.Accumulate(total, ops::Sum(ops::Where(in.valid, w, 0.0)));
  } else {
    b.Accumulate(sum, ops::Sum(measure));
    b.Accumulate(total, ops::Sum(ops::Cast(in.valid, DType::kInt64)));
  }
  b.Output(ops::Cast(b.Read(sum) / F64(b.Read(total)), OutDType(in.probs)));
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildMulticlassHinge(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(int64_t c, ReadNum(args, "num_classes"));
  TALLY_ASSIGN_OR_RETURN(bool squared, args.GetBool("squared", false));
  TALLY_ASSIGN_OR_RETURN(std::string mode,
                         args.GetEnum("multiclass_mode", {"crammer-singer", "one-vs-all"}, "crammer-singer"));
  std::optional<int64_t> ignore_index;
  TALLY_RETURN_IF_ERROR(ReadCommon(args, &ignore_index).status());
  MetricBuilder b(args.metric_name(), sig, device);
  ClassInputs in;
  if (!ReadClassInputs(ClassTask::kMulticlass, c, ignore_index, b, in, NanScores::kPropagated)) return b.status();
  Expr p = F64(in.probs);                                  // (N, C, ...)
  Expr valid = ops::Select(in.label, 1, 0) >= int64_t{0};  // (N, ...)
  std::vector<int64_t> all_but_class = {0};
  for (int64_t d = 2; d < p.rank(); ++d) all_but_class.push_back(d);
  Expr w = ReadWeight(b, p);  // one per row of (N, C, ...)
  if (!b.ok()) return b.status();
  // we weighs `x` (N, ...) or (N, C, ...) by its row.
  auto weighed = [&](Expr x) { return w.valid() ? x * PerElement(w, x) : x; };
  State total = b.AddState("total", w.valid() ? DType::kFloat64 : DType::kInt64, {}, Reducer::kSum);
  b.Accumulate(total, w.valid() ? ops::Sum(ops::Where(valid, PerElement(w, valid), 0.0))
                                : ops::Sum(ops::Cast(valid, DType::kInt64)));
  if (mode == "crammer-singer") {
    Expr is_target = in.label == int64_t{1};
    Expr own = ops::Sum(ops::Where(is_target, p, 0.0), {1});
    Expr other = ops::Max(ops::Where(is_target, -INFINITY, p), {1});
    Expr measure = ops::Where(valid, HingeMeasure(own - other, squared), 0.0);
    State sum = b.AddState("measure_sum", DType::kFloat64, {}, Reducer::kSum);
    b.Accumulate(sum, ops::Sum(weighed(measure)));
    b.Output(ops::Cast(b.Read(sum) / F64(b.Read(total)), OutDType(in.probs)));
  } else {
    Expr margin = ops::Where(in.label == int64_t{1}, p, -p);
    Expr measure = ops::Where(in.label >= int64_t{0}, HingeMeasure(margin, squared), 0.0);
    State sum = b.AddState("measure_sum", DType::kFloat64, {c}, Reducer::kSum);
    b.Accumulate(sum, ops::Sum(weighed(measure), all_but_class));
    b.Output(ops::Cast(b.Read(sum) / F64(b.Read(total)), OutDType(in.probs)));
  }
  return b.Finish();
}

enum class Ranking { kCoverage, kAveragePrecision, kLoss };

// SortedRankingRows is the ranking average precision or loss of (N, L)
// scores `p` summed over the rows, from one segment_sort of every row's
// labels by descending score (stable: ties keep label order) and segment
// scans, instead of L x L comparisons per row. Per label j, within its row:
//   ge(x)     = Σ x over the labels scored >= p_j    (the run up to j's tie group's end)
//   above(x)  = Σ x over the labels ranked above j: scored higher, or tied
//               with a larger index (TorchMetrics' argsort of the row)
// Returned as a [R] vector whose sum is the sum over rows (rows with no or
// only relevant labels contribute their fixed value, 1 for AP, 0 for loss).
Expr SortedRankingRows(Ranking kind, MetricBuilder& b, Expr p, Expr relevant, Expr nrel, int64_t l) {
  const double lf = static_cast<double>(l);
  Expr row = ops::Cumsum(ops::FullLike(p, 1.0, DType::kInt64), 0) - int64_t{1};  // (N, L): the row index
  std::vector<Expr> sorted =
      b.OpN(ops::OpId::kSegmentSort, {ops::Flatten(row), ops::Flatten(p), ops::Flatten(F64(relevant))}, {});
  if (sorted.size() != 3) return Expr();
  Expr ks = sorted[0], ss = sorted[1], rs = sorted[2];
  Expr ones = ops::FullLike(ss, 1.0, DType::kFloat64);
  auto scan = [&](std::vector<Expr> operands) {
    std::vector<Expr> r = b.OpN(ops::OpId::kSegmentScan, std::move(operands), {});
    return r.size() == 2 ? std::pair<Expr, Expr>{r[0], r[1]} : std::pair<Expr, Expr>{};
  };
  auto [row_all, row_all_total] = scan({ones, ks});
  auto [tie_all, tie_all_total] = scan({ones, ks, ss});
  auto [row_rel, nrel_e] = scan({rs, ks});
  auto [tie_rel, tie_rel_total] = scan({rs, ks, ss});
  (void)row_all_total;
  Expr special = nrel_e == 0.0 || nrel_e == lf;
  Expr special_rows = F64(ops::Sum(ops::Cast(nrel == int64_t{0} || nrel == lf, DType::kInt64)));
  if (kind == Ranking::kAveragePrecision) {
    Expr ge_all = row_all - tie_all + tie_all_total;
    Expr ge_rel = row_rel - tie_rel + tie_rel_total;
    Expr contrib = ops::Where(rs > 0.0 && !special, ops::SafeDiv(ge_rel, ge_all) / nrel_e, 0.0);
    return ops::Concat({contrib, ops::Unsqueeze(special_rows, 0)});  // special rows score 1 each
  }
  Expr above_all = row_all - tie_all * 2.0 + tie_all_total;
  Expr above_rel = row_rel - tie_rel * 2.0 + tie_rel_total;
  Expr contrib = ops::Where(rs > 0.0 && !special, ops::SafeDiv(above_all - above_rel, nrel_e * (lf - nrel_e)), 0.0);
  return contrib;
}

absl::StatusOr<dsl::Metric> BuildRanking(Ranking kind, SpecArgs& args, const dsl::Signature& sig,
                                         const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(int64_t l, ReadNum(args, "num_labels"));
  std::optional<int64_t> ignore_index;
  TALLY_RETURN_IF_ERROR(ReadCommon(args, &ignore_index).status());
  MetricBuilder b(args.metric_name(), sig, device);
  ClassInputs in;
  if (!ReadClassInputs(ClassTask::kMultilabel, l, ignore_index, b, in)) return b.status();
  const int64_t r = in.probs.rank();
  const double big = -4.0 * static_cast<double>(l);
  Expr dropped = in.label < int64_t{0};  // ignored (or counted as bad)
  Expr relevant = in.label == int64_t{1};
  // TorchMetrics' ignore_index overwrite: score -4 L, neither relevant nor 0.
  Expr p = ops::Where(dropped, big, in.probs);  // (N, L, ...)
  Expr rows = ops::Size(p, 0);
  for (int64_t d : in.extra) rows = rows * static_cast<double>(d);
  State sum = b.AddState("score_sum", DType::kFloat64, {}, Reducer::kSum);
  State total = b.AddState("rows", DType::kInt64, {}, Reducer::kSum);
  b.Accumulate(total, rows);
  Expr nrel = ops::Sum(ops::Cast(relevant, DType::kInt64), {1});  // (N, ...)
  const double lf = static_cast<double>(l);
  Expr per_row;
  if (kind == Ranking::kCoverage) {
    Expr lowest = ops::Min(ops::Where(in.label != int64_t{0}, p, INFINITY), {1}, /*keepdim=*/true);
    per_row = F64(ops::Sum(ops::Cast(p >= lowest, DType::kInt64), {1}));
  } else if (in.extra.empty()) {
    per_row = SortedRankingRows(kind, b, p, relevant, nrel, l);
    if (!b.ok()) return b.status();
  } else {
    // Pairwise [n, j, k, ...]: label j against label k (extra dims only;
    // (N, L) inputs take the sorted form above, O(L log L) a row).
    Expr pj = ops::Unsqueeze(p, 2), pk = ops::Unsqueeze(p, 1);
    Expr rel_k = ops::Unsqueeze(relevant, 1);
    if (kind == Ranking::kAveragePrecision) {
      Expr ge = pk >= pj;
      Expr rank_all = F64(ops::Sum(ops::Cast(ge, DType::kInt64), {2}));
      Expr rank_rel = F64(ops::Sum(ops::Cast(ge && rel_k, DType::kInt64), {2}));
      Expr ratio = ops::Where(relevant, ops::SafeDiv(rank_rel, rank_all), 0.0);
      Expr mean = ops::SafeDiv(ops::Sum(ratio, {1}), F64(nrel));
      per_row = ops::Where(nrel == int64_t{0} || nrel == static_cast<double>(l), 1.0, mean);
    } else {
      Expr kidx = ClassIndex(p, l, r);      // broadcasts along dim 2
      Expr jidx = ClassIndex(p, l, r + 1);  // along dim 1
      Expr above = pk > pj || (pk == pj && kidx > jidx);
      Expr rel_j = ops::Unsqueeze(relevant, 2);
      Expr wrong = F64(ops::Sum(ops::Cast(above && rel_j && !rel_k, DType::kInt64), {1, 2}));
      Expr nr = F64(nrel);
      Expr loss = ops::SafeDiv(wrong, nr * (lf - nr));
      per_row = ops::Where(nrel == int64_t{0} || nrel == static_cast<double>(l), 0.0, loss);
    }
  }
  b.Accumulate(sum, ops::Sum(per_row));
  Expr n = F64(b.Read(total));
  Expr value = kind == Ranking::kLoss ? ops::SafeDiv(b.Read(sum), n) : b.Read(sum) / n;
  b.Output(ops::Cast(value, DType::kFloat32));
  return b.Finish();
}

}  // namespace

void RegisterHingeAndRankingMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target"};
  const std::vector<std::string> weighted = {"preds", "target", kWeightInput};
  out.push_back({"binary_hinge_loss", "hinge", weighted, BuildBinaryHinge});
  out.push_back({"multiclass_hinge_loss", "hinge", weighted, BuildMulticlassHinge});
  out.push_back({"multilabel_coverage_error", "ranking", in, Bound(BuildRanking, Ranking::kCoverage)});
  out.push_back(
      {"multilabel_ranking_average_precision", "ranking", in, Bound(BuildRanking, Ranking::kAveragePrecision)});
  out.push_back({"multilabel_ranking_loss", "ranking", in, Bound(BuildRanking, Ranking::kLoss)});
}

}  // namespace tally::metrics
