#include "metrics/classification/stats.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/weights.h"
#include "ops/attrs.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

std::string ShapeString(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// Inputs are preds and target with their full (host) shapes.
struct Inputs {
  Expr preds, target;
  std::vector<int64_t> pshape, tshape;
};

// ReadInputs declares preds and target and checks what every task needs:
// target has a batch dim and holds integer or bool labels.
bool ReadInputs(MetricBuilder& b, Inputs& in) {
  in.preds = b.Input("preds");
  in.target = b.Input("target");
  if (!b.ok()) return false;
  in.pshape = b.FindInput("preds")->shape;
  in.tshape = b.FindInput("target")->shape;
  if (in.tshape.empty()) {
    b.FailInput("target", "expected a tensor of shape (N, ...), got a scalar");
  } else if (ir::IsFloating(in.target.dtype())) {
    b.FailInput("target", absl::StrCat("expected integer or bool labels, got ", ir::DTypeName(in.target.dtype())));
  }
  return b.ok();
}

bool RequireSameShape(MetricBuilder& b, const Inputs& in) {
  if (in.pshape != in.tshape) {
    b.FailInput("preds", absl::StrCat("shape ", ShapeString(in.pshape), " does not match target's shape ",
                                      ShapeString(in.tshape)));
  }
  return b.ok();
}

// RowAny is true for every row (dim 0) where `x` is true anywhere; with
// keepdim it broadcasts back to x.
Expr RowAny(Expr x, bool keepdim) {
  if (x.rank() <= 1) return x;
  std::vector<int64_t> dims;
  for (int64_t d = 1; d < x.rank(); ++d) dims.push_back(d);
  return ops::Any(x, dims, keepdim);
}

Expr Flat(Expr x) { return x.rank() == 1 ? x : ops::Flatten(x); }

Expr OrElse(Expr a, Expr b) { return a.valid() ? (b.valid() ? (a || b) : a) : b; }

// BinaryLabels turns binary/multilabel preds into bool labels: float preds are
// sigmoided when any element (of `logit_mask`, if given) is outside [0, 1],
// then compared `> threshold` in the preds dtype; int/bool preds are labels,
// and `bad` marks int values other than 0 and 1.
Expr BinaryLabels(Expr preds, double threshold, Expr logit_mask, Expr* bad) {
  if (ir::IsFloating(preds.dtype())) {
    // NaN fails both comparisons, so it also counts as outside (as in TorchMetrics).
    Expr outside = !(preds >= 0.0 && preds <= 1.0);
    if (logit_mask.valid()) outside = outside && logit_mask;
    Expr probs = ops::Where(ops::Any(outside), ops::Sigmoid(preds), preds);
    return probs > threshold;
  }
  if (preds.dtype() == DType::kBool) return preds;
  *bad = !(preds == 0.0 || preds == 1.0);
  return preds == 1.0;
}

// BinaryForm is binary or multilabel input after labelling and validation.
struct BinaryForm {
  Expr label;    // bool, target's shape
  Expr target;   // target as given
  Expr ignored;  // bool, or invalid without ignore_index
  Expr bad;      // bool: an invalid value of target or preds
};

bool MakeBinaryForm(MetricBuilder& b, const Inputs& in, double threshold, std::optional<int64_t> ignore_index,
                    LogitCheck logit_check, BinaryForm& f) {
  f.target = in.target;
  if (ignore_index) f.ignored = in.target == static_cast<double>(*ignore_index);
  Expr bad_t = !(in.target == 0.0 || in.target == 1.0);
  if (f.ignored.valid()) bad_t = bad_t && !f.ignored;
  Expr logit_mask;
  if (logit_check == LogitCheck::kKeptElements && f.ignored.valid()) logit_mask = !f.ignored;
  Expr bad_p;
  f.label = BinaryLabels(in.preds, threshold, logit_mask, &bad_p);
  // Int preds are checked at ignored positions too (TorchMetrics validates
  // every element of label preds before it masks anything), but only a bad
  // kept element masks its row out, as in the fused kernel.
  b.Check("target", "{n} values outside {0, 1}", ops::Sum(bad_t));
  if (bad_p.valid()) b.Check("preds", "{n} label values outside {0, 1}", ops::Sum(bad_p));
  if (bad_p.valid() && f.ignored.valid()) bad_p = bad_p && !f.ignored;
  f.bad = OrElse(bad_t, bad_p);
  return b.ok();
}

// Kept is true for the elements that count: not ignored, and in a row
// without invalid values (an invalid int pred at an ignored position fails
// the check all the same).
Expr Kept(const BinaryForm& f) {
  Expr keep = !RowAny(f.bad, /*keepdim=*/true);
  return f.ignored.valid() ? keep && !f.ignored : keep;
}

// CountBins accumulates the histogram of `idx` (indices outside [0, bins)
// count nowhere) into a state `name` of `shape`: int64 counts, or with row
// weights `w` float64 sums of weights.
State CountBins(MetricBuilder& b, Expr idx, Expr w, int64_t bins, std::vector<int64_t> shape) {
  State cm = b.AddState("confmat", w.valid() ? DType::kFloat64 : DType::kInt64, shape, Reducer::kSum);
  Expr h = w.valid() ? ops::Histogram(Flat(idx), Flat(PerElement(w, idx)), bins) : ops::Histogram(Flat(idx), bins);
  b.Accumulate(cm, ops::Reshape(h, std::move(shape)));
  return cm;
}

bool MultilabelInputs(MetricBuilder& b, int64_t num_labels, Inputs& in) {
  if (!ReadInputs(b, in) || !RequireSameShape(b, in)) return false;
  if (in.pshape.size() < 2 || in.pshape[1] != num_labels) {
    b.FailInput("preds", absl::StrCat("expected shape (N, ", num_labels, ", ...) for num_labels=", num_labels, ", got ",
                                      ShapeString(in.pshape)));
  }
  return b.ok();
}

// MulticlassForm is multiclass input after validation.
struct MulticlassForm {
  Expr scores;   // float (N, C, ...) preds, or invalid for label preds
  Expr labels;   // i64 label preds, or invalid for score preds
  Expr target;   // i64
  Expr ignored;  // bool, or invalid without ignore_index
  Expr bad;      // bool, target's shape
};

bool MakeMulticlassForm(MetricBuilder& b, int64_t num_classes, std::optional<int64_t> ignore_index, int64_t top_k,
                        MulticlassForm& f) {
  Inputs in;
  if (!ReadInputs(b, in)) return false;
  const auto& ps = in.pshape;
  const auto& ts = in.tshape;
  bool scores = ps.size() == ts.size() + 1;
  if (scores) {
    if (!ir::IsFloating(in.preds.dtype())) {
      b.FailInput("preds", absl::StrCat("has one more dim than target, so it must hold float scores (N, C, ...), got ",
                                        ir::DTypeName(in.preds.dtype())));
    } else if (ps[1] != num_classes) {
      b.FailInput("preds", absl::StrCat("expected scores of shape (N, ", num_classes,
                                        ", ...) for num_classes=", num_classes, ", got ", ShapeString(ps)));
    } else if (!std::equal(ps.begin() + 2, ps.end(), ts.begin() + 1)) {
      b.FailInput("preds", absl::StrCat("scores of shape ", ShapeString(ps), " do not match target's shape ",
                                        ShapeString(ts), " (expected (N, C, ...) and (N, ...))"));
    }
  } else if (ps.size() == ts.size()) {
    if (ps != ts) {
      b.FailInput("preds",
                  absl::StrCat("labels of shape ", ShapeString(ps), " do not match target's shape ", ShapeString(ts)));
    } else if (top_k > 1) {
      b.FailInput("preds", absl::StrCat("top_k=", top_k, " needs float scores of shape (N, ", num_classes,
                                        ", ...), got labels of shape ", ShapeString(ps)));
    }
  } else {
    b.FailInput("preds", absl::StrCat("expected scores (N, ", num_classes, ", ...) or labels (N, ...) for target ",
                                      ShapeString(ts), ", got shape ", ShapeString(ps)));
  }
  if (!b.ok()) return false;
  std::string range = absl::StrCat("{n} values outside [0, ", num_classes, ")");
  f.target = ops::Cast(in.target, DType::kInt64);
  if (ignore_index) f.ignored = f.target == static_cast<double>(*ignore_index);
  Expr bad_t = f.target < 0.0 || f.target >= static_cast<double>(num_classes);
  if (f.ignored.valid()) bad_t = bad_t && !f.ignored;
  b.Check("target", range, ops::Sum(bad_t));
  f.bad = bad_t;
  if (scores) {
    f.scores = in.preds;
  } else {
    // TorchMetrics casts label preds with .long(), truncating float labels.
    f.labels = ops::Cast(in.preds, DType::kInt64);
    Expr bad_p = f.labels < 0.0 || f.labels >= static_cast<double>(num_classes);
    if (f.ignored.valid()) bad_p = bad_p && !f.ignored;
    b.Check("preds", range, ops::Sum(bad_p));
    f.bad = f.bad || bad_p;
  }
  return b.ok();
}

Expr Labels(const MulticlassForm& f) { return f.labels.valid() ? f.labels : ops::Argmax(f.scores, 1); }

// IsSimpleBinary is the form the composite bl_confmat (one fused kernel)
// covers: preds and target of one shape of `rank` (1: binary [N], 2:
// multilabel [N, L]), an integer or bool target, and an ignore_index the
// primitive path's constant holds exactly (within 2^53, and within int32 for
// int32 targets). Other forms use the primitive ops below.
bool IsSimpleBinary(MetricBuilder& b, size_t rank, std::optional<int64_t> ignore_index) {
  const dsl::InputSpec* p = b.FindInput("preds");
  const dsl::InputSpec* t = b.FindInput("target");
  if (p == nullptr || t == nullptr || t->shape.size() != rank || p->shape != t->shape) return false;
  if (ir::IsFloating(t->dtype)) return false;
  if (ignore_index) {
    constexpr int64_t kExact = int64_t{1} << 53;
    if (*ignore_index > kExact || *ignore_index < -kExact) return false;
    if (t->dtype == DType::kInt32 && (*ignore_index > INT32_MAX || *ignore_index < INT32_MIN)) return false;
  }
  return true;
}

// FusedBinaryConfmat is BinaryConfmat/MultilabelConfmat as one bl_confmat
// node, with the same checks (in the same order) and state.
State FusedBinaryConfmat(MetricBuilder& b, const Inputs& in, double threshold, std::optional<int64_t> ignore_index,
                         bool logits_over_kept, std::vector<int64_t> shape) {
  ops::BlConfmatAttrs attrs{threshold, logits_over_kept};
  if (ignore_index) attrs.ignore_index = *ignore_index;
  std::vector<Expr> outs = b.OpN(ops::OpId::kBlConfmat, {in.preds, in.target}, ops::ToAttrMap(attrs));
  if (outs.size() != 3) return State{};
  b.Check("target", "{n} values outside {0, 1}", outs[1]);
  if (ir::IsIntegral(in.preds.dtype())) {
    // The kernel skips ignored elements, but TorchMetrics validates every
    // element of label preds, ignored ones included.
    Expr bad_p = ignore_index ? ops::Sum(!(in.preds == 0.0 || in.preds == 1.0)) : outs[2];
    b.Check("preds", "{n} label values outside {0, 1}", bad_p);
  }
  State cm = b.AddState("confmat", DType::kInt64, std::move(shape), Reducer::kSum);
  b.Accumulate(cm, outs[0]);
  return cm;
}

}  // namespace

State BinaryConfmat(MetricBuilder& b, double threshold, std::optional<int64_t> ignore_index, LogitCheck logit_check) {
  Inputs in;
  if (!ReadInputs(b, in) || !RequireSameShape(b, in)) return State{};
  Expr w = RowWeights(b, "preds");
  if (!b.ok()) return State{};
  if (!w.valid() && IsSimpleBinary(b, 1, ignore_index)) {
    // Without ignore_index both logit checks look at every element: one
    // attribute value, so CSE still shares the statistics.
    bool over_kept = logit_check == LogitCheck::kKeptElements && ignore_index.has_value();
    return FusedBinaryConfmat(b, in, threshold, ignore_index, over_kept, {2, 2});
  }
  BinaryForm f;
  if (!MakeBinaryForm(b, in, threshold, ignore_index, logit_check, f)) return State{};
  Expr idx = ops::Cast(f.target, DType::kInt64) * 2.0 + ops::Cast(f.label, DType::kInt64);
  idx = ops::Where(Kept(f), idx, -1.0);
  return CountBins(b, idx, w, 4, {2, 2});
}

State BinaryGroupCounts(MetricBuilder& b, int64_t num_groups, double threshold, std::optional<int64_t> ignore_index,
                        bool with_target) {
  Inputs in;
  if (with_target) {
    if (!ReadInputs(b, in) || !RequireSameShape(b, in)) return State{};
  } else {
    in.preds = b.Input("preds");
    if (!b.ok()) return State{};
    in.pshape = in.tshape = b.FindInput("preds")->shape;
    if (in.pshape.empty()) {
      b.FailInput("preds", "expected a tensor of shape (N, ...), got a scalar");
      return State{};
    }
    in.target = ops::FullLike(in.preds, 0.0, DType::kInt64);
  }
  Expr groups = b.Input(kGroupsInput);
  if (!b.ok()) return State{};
  const std::vector<int64_t>& gshape = b.FindInput(kGroupsInput)->shape;
  if (!ir::IsIntegral(groups.dtype()) || groups.dtype() == DType::kBool) {
    b.FailInput(kGroupsInput, absl::StrCat("expected integer group ids, got ", ir::DTypeName(groups.dtype())));
  } else if (gshape.size() != 1 || gshape[0] != in.pshape[0]) {
    b.FailInput(kGroupsInput,
                absl::StrCat("expected one group id per row, shape [", in.pshape[0], "], got ", ShapeString(gshape)));
  }
  BinaryForm f;
  if (!b.ok() || !MakeBinaryForm(b, in, threshold, ignore_index, LogitCheck::kAllElements, f)) return State{};
  Expr bad_group = !(groups >= 0.0 && groups < static_cast<double>(num_groups));
  b.Check(kGroupsInput, absl::StrCat("{n} group ids outside [0, ", num_groups, ")"), ops::Sum(bad_group));
  // Each element's column: tp 0, fp 1, tn 2, fn 3 = 2 (1 - label) +
  // (target != label); ignored elements 4.
  Expr label = ops::Cast(f.label, DType::kInt64), target = ops::Cast(f.target, DType::kInt64);
  Expr column = (1.0 - label) * 2.0 + ops::Cast(target != label, DType::kInt64);
  if (f.ignored.valid()) column = ops::Where(f.ignored, 4.0, column);
  // The row's group and validity, broadcast over its elements.
  Expr group = ops::Cast(groups, DType::kInt64), ok = !bad_group;
  for (int64_t d = 1; d < f.target.rank(); ++d) {
    group = ops::Unsqueeze(group, d);
    ok = ops::Unsqueeze(ok, d);
  }
  Expr idx = group * 5.0 + column;
  idx = ops::Where(ok && !RowAny(f.bad, /*keepdim=*/true), idx, -1.0);
  Expr w = RowWeights(b, "preds");
  if (!b.ok()) return State{};
  return CountBins(b, idx, w, 5 * num_groups, {num_groups, 5});
}

// IsSimpleMulticlass is the (N, C) scores or (N,) integer labels form with
// integer (N,) targets: the form the composite mc_confmat (one fused kernel)
// covers. Other forms use the primitive ops below.
bool IsSimpleMulticlass(MetricBuilder& b, int64_t num_classes) {
  const dsl::InputSpec* p = b.FindInput("preds");
  const dsl::InputSpec* t = b.FindInput("target");
  if (p == nullptr || t == nullptr || t->shape.size() != 1 || !ir::IsIntegral(t->dtype)) return false;
  bool scores = ir::IsFloating(p->dtype) && p->shape.size() == 2 && p->shape[1] == num_classes;
  bool labels = ir::IsIntegral(p->dtype) && p->shape.size() == 1;
  return (scores || labels) && p->shape[0] == t->shape[0];
}

namespace {
// IgnoringNegativeTargets: an mc_confmat that drops rows whose target is -1.
ops::McConfmatAttrs IgnoringNegativeTargets(int64_t num_classes) {
  ops::McConfmatAttrs a{num_classes};
  a.ignore_index = -1;
  return a;
}
}  // namespace

State MulticlassConfmat(MetricBuilder& b, int64_t num_classes, std::optional<int64_t> ignore_index) {
  // Weighted: the same mc_confmat with the row weights as a third operand
  // (float64 sums; narrowed to marginals alike). The simple form hands the
  // kernel the raw weights, which it sanitizes as it counts.
  const bool simple = IsSimpleMulticlass(b, num_classes);
  Expr w = simple ? RawRowWeights(b, "preds") : RowWeights(b, "preds");
  if (!b.ok()) return State{};
  const DType counts = w.valid() ? DType::kFloat64 : DType::kInt64;
  if (simple) {
    Inputs in;
    if (!ReadInputs(b, in)) return State{};
    ops::McConfmatAttrs attrs{num_classes};
    if (ignore_index) attrs.ignore_index = *ignore_index;
    std::vector<Expr> operands = {in.preds, in.target};
    if (w.valid()) operands.push_back(w);
    std::vector<Expr> outs = b.OpN(ops::OpId::kMcConfmat, operands, ops::ToAttrMap(attrs));
    if (outs.size() != 3) return State{};
    std::string range = absl::StrCat("{n} values outside [0, ", num_classes, ")");
    b.Check("target", range, outs[1]);
    if (!ir::IsFloating(in.preds.dtype())) b.Check("preds", range, outs[2]);
    State cm = b.AddState("confmat", counts, {num_classes, num_classes}, Reducer::kSum);
    b.Accumulate(cm, outs[0]);
    return cm;
  }
  MulticlassForm f;
  if (!MakeMulticlassForm(b, num_classes, ignore_index, /*top_k=*/1, f)) return State{};
  Expr keep = !RowAny(f.bad, /*keepdim=*/true);
  if (f.ignored.valid()) keep = keep && !f.ignored;
  // The labels and targets of every position, flattened; a dropped position
  // gets target -1, which the kernel ignores. The checks above already
  // counted the bad values, so the node's own counts go unused. Being an
  // mc_confmat, the matrix can be narrowed like the simple form's.
  std::vector<Expr> operands = {Flat(Labels(f)), Flat(ops::Where(keep, f.target, -1.0))};
  if (w.valid()) operands.push_back(Flat(PerElement(w, f.target)));
  std::vector<Expr> outs = b.OpN(ops::OpId::kMcConfmat, operands, ops::ToAttrMap(IgnoringNegativeTargets(num_classes)));
  if (outs.size() != 3) return State{};
  State cm = b.AddState("confmat", counts, {num_classes, num_classes}, Reducer::kSum);
  b.Accumulate(cm, outs[0]);
  return cm;
}

MulticlassTopkCounts MulticlassTopk(MetricBuilder& b, int64_t num_classes, int64_t top_k,
                                    std::optional<int64_t> ignore_index) {
  MulticlassForm f;
  if (!MakeMulticlassForm(b, num_classes, ignore_index, top_k, f)) return {};
  Expr keep = !RowAny(f.bad, /*keepdim=*/true);
  if (f.ignored.valid()) keep = keep && !f.ignored;
  // Move the class dim last, keeping the order of the others: (N, ..., C).
  Expr scores = f.scores;
  for (int64_t d = 1; d + 1 < scores.rank(); ++d) scores = ops::Transpose(scores, d, d + 1);
  Expr pred = ops::TopkMask(scores, top_k);
  Expr truth = ops::OneHot(f.target, num_classes);  // out-of-range rows are all false (and not kept)
  Expr kept = ops::Unsqueeze(keep, -1);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d + 1 < pred.rank(); ++d) dims.push_back(d);
  MulticlassTopkCounts c;
  c.tp = b.AddState("tp", DType::kInt64, {num_classes}, Reducer::kSum);
  c.fp = b.AddState("fp", DType::kInt64, {num_classes}, Reducer::kSum);
  c.tn = b.AddState("tn", DType::kInt64, {num_classes}, Reducer::kSum);
  c.fn = b.AddState("fn", DType::kInt64, {num_classes}, Reducer::kSum);
  b.Accumulate(c.tp, ops::Sum(pred && truth && kept, dims));
  b.Accumulate(c.fp, ops::Sum(pred && !truth && kept, dims));
  b.Accumulate(c.tn, ops::Sum(!pred && !truth && kept, dims));
  b.Accumulate(c.fn, ops::Sum(!pred && truth && kept, dims));
  return c;
}

State MultilabelConfmat(MetricBuilder& b, int64_t num_labels, double threshold, std::optional<int64_t> ignore_index) {
  Inputs in;
  if (!MultilabelInputs(b, num_labels, in)) return State{};
  Expr w = RowWeights(b, "preds");
  if (!b.ok()) return State{};
  if (!w.valid() && IsSimpleBinary(b, 2, ignore_index)) {
    return FusedBinaryConfmat(b, in, threshold, ignore_index, /*logits_over_kept=*/false, {num_labels, 2, 2});
  }
  BinaryForm f;
  if (!MakeBinaryForm(b, in, threshold, ignore_index, LogitCheck::kAllElements, f)) return State{};
  // Label l's 2 x 2 matrix occupies bins [4l, 4l + 4).
  std::vector<int64_t> lshape(in.tshape.size() - 1, 1);
  lshape[0] = num_labels;
  Expr label_base = ops::Arange(f.target, num_labels);
  if (lshape.size() > 1) label_base = ops::Reshape(label_base, lshape);
  label_base = label_base * 4.0;
  Expr idx = ops::Cast(f.target, DType::kInt64) * 2.0 + ops::Cast(f.label, DType::kInt64) + label_base;
  idx = ops::Where(Kept(f), idx, -1.0);
  return CountBins(b, idx, w, 4 * num_labels, {num_labels, 2, 2});
}

namespace {
// WeightedMatches is ExactMatchCounts with row weights `w`: float64 sums of
// the weights of the matching and of the valid samples.
ExactMatchCounts WeightedMatches(MetricBuilder& b, Expr match, Expr valid, Expr w) {
  Expr we = PerElement(w, match);
  ExactMatchCounts c;
  c.correct = b.AddState("correct", DType::kFloat64, {}, Reducer::kSum);
  c.total = b.AddState("total", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(c.correct, ops::Sum(ops::Where(match && valid, we, 0.0)));
  b.Accumulate(c.total, ops::Sum(ops::Where(valid, we, 0.0)));
  return c;
}
}  // namespace

ExactMatchCounts MulticlassExactMatch(MetricBuilder& b, int64_t num_classes, std::optional<int64_t> ignore_index) {
  Expr w = RowWeights(b, "preds");
  MulticlassForm f;
  if (!b.ok() || !MakeMulticlassForm(b, num_classes, ignore_index, /*top_k=*/1, f)) return {};
  Expr same = Labels(f) == f.target;
  if (f.ignored.valid()) same = same || f.ignored;
  Expr match = RowAny(!same, /*keepdim=*/false);  // a mismatch anywhere in the sample
  Expr valid = !RowAny(f.bad, /*keepdim=*/false);
  if (w.valid()) return WeightedMatches(b, !match, valid, w);
  ExactMatchCounts c;
  c.correct = b.AddState("correct", DType::kInt64, {}, Reducer::kSum);
  c.total = b.AddState("total", DType::kInt64, {}, Reducer::kSum);
  b.Accumulate(c.correct, ops::Sum(!match && valid));
  b.Accumulate(c.total, ops::Sum(valid));
  return c;
}

ExactMatchCounts MultilabelExactMatch(MetricBuilder& b, int64_t num_labels, double threshold,
                                      std::optional<int64_t> ignore_index) {
  Inputs in;
  BinaryForm f;
  if (!MultilabelInputs(b, num_labels, in)) return {};
  Expr w = RowWeights(b, "preds");
  if (!b.ok() || !MakeBinaryForm(b, in, threshold, ignore_index, LogitCheck::kAllElements, f)) return {};
  Expr same = ops::Cast(f.label, DType::kInt64) == ops::Cast(f.target, DType::kInt64);
  if (f.ignored.valid()) same = same && !f.ignored;
  // A sample is one (n, position) pair over the L labels of dim 1.
  Expr match = ops::All(same, {1});
  Expr valid = !RowAny(f.bad, /*keepdim=*/true);
  valid = valid.rank() > 1 ? ops::Squeeze(valid, 1) : valid;
  if (w.valid()) return WeightedMatches(b, match, valid, w);
  ExactMatchCounts c;
  c.correct = b.AddState("correct", DType::kInt64, {}, Reducer::kSum);
  c.total = b.AddState("total", DType::kInt64, {}, Reducer::kSum);
  b.Accumulate(c.correct, ops::Sum(match && valid));
  b.Accumulate(c.total, ops::Sum(ops::Where(valid, ops::FullLike(match, 1, DType::kInt64), 0.0)));
  return c;
}

// --- multidim_average="samplewise" -----------------------------------------

namespace {

// DimsFrom lists the dims of `x` from `first` on: what one sample sums over.
std::vector<int64_t> DimsFrom(Expr x, int64_t first) {
  std::vector<int64_t> dims;
  for (int64_t d = first; d < x.rank(); ++d) dims.push_back(d);
  return dims;
}

// RequireSamplewiseRank fails unless `input` has at least `min_rank` dims:
// samplewise statistics need positions within each sample.
bool RequireSamplewiseRank(MetricBuilder& b, const std::string& input, const std::vector<int64_t>& shape,
                           size_t min_rank, const std::string& form) {
  if (shape.size() < min_rank) {
    b.FailInput(input, absl::StrCat("expected at least ", min_rank, " dims ", form,
                                    " when multidim_average=samplewise, got shape ", ShapeString(shape)));
  }
  return b.ok();
}

// SampleCounts sums, over `dims`, the four outcomes of bool predictions
// `pred` against the bool positives `pos` and negatives `neg` (elements that
// are neither count nowhere), and stacks them as [N, 4, ...].
Expr SampleCounts(Expr pred, Expr pos, Expr neg, const std::vector<int64_t>& dims) {
  Expr tp = ops::Sum(pred && pos, dims);
  Expr fp = ops::Sum(pred && neg, dims);
  Expr tn = ops::Sum(!pred && neg, dims);
  Expr fn = ops::Sum(!pred && pos, dims);
  Expr stacked = ops::Concat(
      {ops::Unsqueeze(tp, 0), ops::Unsqueeze(fp, 0), ops::Unsqueeze(tn, 0), ops::Unsqueeze(fn, 0)});  // [4, N, ...]
  return ops::Transpose(stacked, 0, 1);
}

// BinaryFormCounts are SampleCounts of a binary/multilabel form over `dims`.
Expr BinaryFormCounts(const BinaryForm& f, const std::vector<int64_t>& dims) {
  Expr kept = Kept(f);
  Expr t = ops::Cast(f.target, DType::kInt64);
  return SampleCounts(f.label, t == 1.0 && kept, t == 0.0 && kept, dims);
}

// SamplewiseMulticlassForm is MakeMulticlassForm plus the rank samplewise
// needs: labels (N, ...) or scores (N, C, ...) with at least one position dim.
bool SamplewiseMulticlassForm(MetricBuilder& b, int64_t num_classes, int64_t top_k, std::optional<int64_t> ignore_index,
                              MulticlassForm& f) {
  if (!MakeMulticlassForm(b, num_classes, ignore_index, top_k, f)) return false;
  const std::vector<int64_t>& ps = b.FindInput("preds")->shape;
  return f.scores.valid() ? RequireSamplewiseRank(b, "preds", ps, 3, absl::StrCat("(N, ", num_classes, ", ...)"))
                          : RequireSamplewiseRank(b, "preds", ps, 2, "(N, ...)");
}

}  // namespace

State BinarySamplewise(MetricBuilder& b, double threshold, std::optional<int64_t> ignore_index) {
  Inputs in;
  if (!ReadInputs(b, in) || !RequireSameShape(b, in) || !RequireSamplewiseRank(b, "preds", in.pshape, 2, "(N, ...)")) {
    return State{};
  }
  BinaryForm f;
  if (!MakeBinaryForm(b, in, threshold, ignore_index, LogitCheck::kAllElements, f)) return State{};
  State s = b.AddState("samplewise", DType::kInt64, {4}, Reducer::kCat);
  b.Accumulate(s, BinaryFormCounts(f, DimsFrom(f.label, 1)));
  return s;
}

State MultilabelSamplewise(MetricBuilder& b, int64_t num_labels, double threshold,
                           std::optional<int64_t> ignore_index) {
  Inputs in;
  if (!MultilabelInputs(b, num_labels, in) ||
      !RequireSamplewiseRank(b, "preds", in.pshape, 3, absl::StrCat("(N, ", num_labels, ", ...)"))) {
    return State{};
  }
  BinaryForm f;
  if (!MakeBinaryForm(b, in, threshold, ignore_index, LogitCheck::kAllElements, f)) return State{};
  State s = b.AddState("samplewise", DType::kInt64, {4, num_labels}, Reducer::kCat);
  b.Accumulate(s, BinaryFormCounts(f, DimsFrom(f.label, 2)));
  return s;
}

State MulticlassSamplewise(MetricBuilder& b, int64_t num_classes, int64_t top_k, std::optional<int64_t> ignore_index) {
  MulticlassForm f;
  if (!SamplewiseMulticlassForm(b, num_classes, top_k, ignore_index, f)) return State{};
  Expr keep = !RowAny(f.bad, /*keepdim=*/true);
  if (f.ignored.valid()) keep = keep && !f.ignored;
  Expr pred;  // (N, ..., C)
  if (top_k > 1) {
    Expr scores = f.scores;
    for (int64_t d = 1; d + 1 < scores.rank(); ++d) scores = ops::Transpose(scores, d, d + 1);
    pred = ops::TopkMask(scores, top_k);
  } else {
    pred = ops::OneHot(Labels(f), num_classes);  // out-of-range labels: all false (and not kept)
  }
  Expr truth = ops::OneHot(f.target, num_classes);
  Expr kept = ops::Unsqueeze(keep, -1);
  std::vector<int64_t> dims;
  for (int64_t d = 1; d + 1 < pred.rank(); ++d) dims.push_back(d);
  State s = b.AddState("samplewise", DType::kInt64, {4, num_classes}, Reducer::kCat);
  b.Accumulate(s, SampleCounts(pred, truth && kept, !truth && kept, dims));
  return s;
}

State MulticlassSamplewiseExactMatch(MetricBuilder& b, int64_t num_classes, std::optional<int64_t> ignore_index) {
  MulticlassForm f;
  if (!SamplewiseMulticlassForm(b, num_classes, /*top_k=*/1, ignore_index, f)) return State{};
  Expr same = Labels(f) == f.target;
  if (f.ignored.valid()) same = same || f.ignored;
  Expr match = !RowAny(!same, /*keepdim=*/false) && !RowAny(f.bad, /*keepdim=*/false);
  State s = b.AddState("samplewise_correct", DType::kInt64, {}, Reducer::kCat);
  b.Accumulate(s, ops::Cast(match, DType::kInt64));
  return s;
}

State MultilabelSamplewiseExactMatch(MetricBuilder& b, int64_t num_labels, double threshold,
                                     std::optional<int64_t> ignore_index, int64_t* positions) {
  Inputs in;
  BinaryForm f;
  if (!MultilabelInputs(b, num_labels, in) ||
      !RequireSamplewiseRank(b, "preds", in.pshape, 3, absl::StrCat("(N, ", num_labels, ", ...)")) ||
      !MakeBinaryForm(b, in, threshold, ignore_index, LogitCheck::kAllElements, f)) {
    return State{};
  }
  *positions = 1;
  for (size_t d = 2; d < in.pshape.size(); ++d) *positions *= in.pshape[d];
  Expr same = ops::Cast(f.label, DType::kInt64) == ops::Cast(f.target, DType::kInt64);
  if (f.ignored.valid()) same = same && !f.ignored;  // TorchMetrics sets an ignored target to -1
  Expr match = ops::All(same, {1});                  // (N, positions...)
  Expr count = ops::Sum(match, DimsFrom(match, 1));  // [N]
  Expr valid = !RowAny(f.bad, /*keepdim=*/false);
  State s = b.AddState("samplewise_correct", DType::kInt64, {}, Reducer::kCat);
  b.Accumulate(s, ops::Where(valid, count, 0.0));
  return s;
}

}  // namespace tally::metrics
