#include "metrics/curves/common.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "metrics/weights.h"
#include "ops/attrs.h"

namespace tally::metrics {

using ir::DType;
using ops::Expr;

std::string Exact16Mode(absl::string_view word) {
  if (word == "exact16") return "auto";
  if (word == "exact_fp16") return "fp16";
  if (word == "exact_bf16") return "bf16";
  return "";
}

absl::StatusOr<Thresholds> ReadThresholds(SpecArgs& args, bool allow_exact16) {
  Thresholds t;
  const ArgValue* v = args.Find("thresholds", "none, an int, a float list or exact16", "none");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) return t;
  if (auto* name = std::get_if<std::string>(v)) {
    if (const std::string mode = Exact16Mode(*name); !mode.empty()) {
      if (!allow_exact16) {
        return args.InvalidArgument(
            absl::StrCat("thresholds=", *name,
                         " is implemented for the auroc, average_precision, roc and "
                         "precision_recall_curve metrics; use thresholds=None for the exact form"));
      }
      t.exact16 = mode;
      return t;
    }
  }
  t.binned = true;
  if (auto* n = std::get_if<int64_t>(v)) {
    if (*n < 2) return args.InvalidArgument(absl::StrCat("thresholds must be an int >= 2, got ", *n));
    t.count = *n;
    return t;
  }
  if (auto* l = std::get_if<std::vector<double>>(v)) t.values = *l;
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) t.values.assign(l->begin(), l->end());
  if (t.values.empty()) {
    return args.InvalidArgument(absl::StrCat(
        "thresholds must be none, an int or a non-empty list of floats in [0, 1], got ", ArgValueToString(*v)));
  }
  for (double x : t.values) {
    if (!(x >= 0.0 && x <= 1.0)) {
      return args.InvalidArgument(absl::StrCat("thresholds must lie in [0, 1], got ", ArgValueToString(*v)));
    }
  }
  return t;
}

absl::Status RequireAscending(SpecArgs& args, const Thresholds& t) {
  if (std::is_sorted(t.values.begin(), t.values.end())) return absl::OkStatus();
  return args.InvalidArgument(
      absl::StrCat("thresholds must be sorted in increasing order for an area under the curve, got [",
                   absl::StrJoin(t.values, ", "), "]"));
}

Expr ThresholdTensor(Expr like, const Thresholds& t) {
  const int64_t n = t.size();
  // ATen's own kernel: no formula restates its float32 rounding for every T
  // (linspace(0, 1, 10)[6] is 0.6666667, a two-sided formula gives 0.6666666).
  if (t.values.empty()) return ops::Linspace(like, 0.0, 1.0, n, DType::kFloat32);
  // A listed threshold is its float32 rounding, as torch.tensor(list) makes
  // it: one dense constant, whatever the list's length.
  std::vector<double> values(t.values.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(t.values[i]);
  return ops::Dense(like, std::move(values), DType::kFloat32);
}

namespace {

std::string ShapeString(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

}  // namespace

SortedThresholds SortThresholds(const Thresholds& th) {
  SortedThresholds out;
  out.sorted = th;
  const int64_t n = th.size();
  if (th.values.empty()) {
    // linspace is ascending: the identity, made in the graph (PermIndex),
    // never as a host vector of T entries (thresholds=10^9 would allocate
    // 8 GB here before the budget could refuse it).
    return out;
  }
  out.perm.resize(n);
  std::iota(out.perm.begin(), out.perm.end(), 0);
  std::vector<float> f(n);
  for (int64_t i = 0; i < n; ++i) f[i] = static_cast<float>(th.values[i]);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return f[x] < f[y]; });
  for (int64_t j = 0; j < n; ++j) {
    out.sorted.values[j] = th.values[order[j]];
    out.perm[order[j]] = j;
    if (order[j] != j) out.identity = false;
  }
  return out;
}

Expr LastOfTies(Expr sorted, Expr n_kept) {
  Expr rank = ops::Cumsum(ops::FullLike(sorted, 1.0, DType::kInt64), 0);  // i + 1
  Expr next = ops::Take(sorted, rank);  // row i + 1; the final row (clamped) is itself
  Expr final_row = rank == ops::Size(sorted, 0);
  return (next != sorted || final_row) && rank <= n_kept;
}

Expr PermIndex(Expr like, const SortedThresholds& st, bool reversed) {
  const int64_t t = st.sorted.size();
  if (st.perm.empty()) {
    Expr ar = ops::Arange(like, t);
    return reversed ? static_cast<double>(t - 1) - ar : ar;
  }
  if (!reversed) return IndexVector(like, st.perm);
  return IndexVector(like, std::vector<int64_t>(st.perm.rbegin(), st.perm.rend()));
}

Expr IndexVector(Expr like, const std::vector<int64_t>& v) {
  const int64_t n = static_cast<int64_t>(v.size());
  Expr ar = ops::Arange(like, n);
  bool progression = true;
  const int64_t step = n > 1 ? v[1] - v[0] : 1;
  for (int64_t i = 0; i < n && progression; ++i) progression = v[i] == v[0] + step * i;
  if (progression) {
    if (n > 0 && v[0] == 0 && step == 1) return ar;
    return ar * static_cast<double>(step) + static_cast<double>(n > 0 ? v[0] : 0);
  }
  Expr out = ops::FullLike(ar, 0.0, DType::kInt64);
  for (int64_t i = 0; i < n; ++i) {
    out = ops::Where(ar == static_cast<double>(i), ops::ScalarOf(ar, static_cast<double>(v[i]), DType::kInt64), out);
  }
  return out;
}

Expr AtOrAbove(Expr hist, Expr cum) {
  Expr ge = ops::Sum(ops::Cast(hist, cum.dtype()), {2}, /*keepdim=*/true) - cum;
  if (!ir::IsFloating(hist.dtype())) return ge;  // integer counts are exact
  Expr nonzero = ops::Cast(hist != 0.0, DType::kInt64);
  Expr after = ops::Sum(nonzero, {2}, /*keepdim=*/true) - ops::Cumsum(nonzero, 2);
  return ops::Where(after == int64_t{0}, 0.0, ge);
}

Expr BinnedHistogram(Expr probs, Expr label, Expr cls, int64_t k, const SortedThresholds& st, Expr w) {
  const int64_t t = st.sorted.size();
  Expr thr = ThresholdTensor(probs, st.sorted);
  if (probs.dtype() != DType::kFloat32) thr = ops::Cast(thr, probs.dtype());
  Expr above = ops::SearchSorted(thr, probs, /*right=*/true);
  above = ops::Where(ops::IsNan(probs), int64_t{0}, above);
  Expr idx = above + (label + cls * int64_t{2}) * static_cast<double>(t + 1);
  idx = ops::Where(label >= int64_t{0}, idx, int64_t{-1});
  const int64_t size = k * 2 * (t + 1);
  Expr h = w.valid() ? ops::Histogram(ops::Flatten(idx), ops::Flatten(PerElement(w, idx)), size)
                     : ops::Histogram(ops::Flatten(idx), size);
  return ops::Reshape(h, {k, 2, t + 1});
}

DescendingRows SortDescending(Expr s, Expr label, Expr w) {
  Expr valid = label >= int64_t{0};
  Expr key = ops::Where(valid, s, -1.0);  // dropped rows sort after every probability
  Expr perm = ops::Argsort(key, 0, /*descending=*/true);
  auto weighed = [&](Expr mask) {
    return ops::Take(w.valid() ? ops::Where(mask, w, 0.0) : ops::Cast(mask, DType::kInt64), perm);
  };
  DescendingRows r;
  r.sorted = ops::Take(key, perm);
  r.pos = weighed(label == int64_t{1});
  r.neg = weighed(label == int64_t{0});
  r.last = LastOfTies(r.sorted, ops::Sum(ops::Cast(valid, DType::kInt64)));
  return r;
}

ClfCurve BinaryClfCurve(Expr s, Expr label, Expr w) {
  DescendingRows r = SortDescending(s, label, w);
  ClfCurve c;
  c.n_pos = ops::Sum(r.pos);
  c.n_neg = ops::Sum(r.neg);
  auto at_points = [&](Expr x) { return s.builder()->Op(ops::OpId::kMaskedSelect, {x, r.last}); };
  c.tps = at_points(ops::Cumsum(r.pos, 0));
  c.fps = at_points(ops::Cumsum(r.neg, 0));
  c.thresholds = at_points(r.sorted);
  return c;
}

ExactRows AccumulateExactRows(dsl::MetricBuilder& b, Expr probs, Expr stored_target, bool multiclass,
                              const std::vector<int64_t>& row, const std::vector<int64_t>& target_row, Expr w) {
  ExactRows out;
  dsl::State p_rows = b.AddState("preds", probs.dtype(), row, ir::Reducer::kCat);
  if (multiclass) {
    // A class index (or -1) fits in 4 bytes: the budget keeps C far below 2^31.
    dsl::State t_rows = b.AddState("target", DType::kInt32, target_row, ir::Reducer::kCat);
    b.Accumulate(p_rows, probs);
    b.Accumulate(t_rows, ops::Cast(stored_target, DType::kInt32));
    out.scores = b.Read(p_rows);
    if (b.ok()) out.y = ops::Cast(b.Read(t_rows), DType::kInt64);
  } else {
    dsl::State positive = b.AddState("positive", DType::kBool, target_row, ir::Reducer::kCat);
    b.Accumulate(p_rows, ops::Where(stored_target >= int64_t{0}, probs, -1.0));
    b.Accumulate(positive, stored_target == int64_t{1});
    out.scores = b.Read(p_rows);
    if (!b.ok()) return out;
    out.positive = b.Read(positive);
    out.y = ops::Where(out.scores < 0.0, int64_t{-1}, ops::Cast(out.positive, DType::kInt64));
  }
  if (!w.valid() || !b.ok()) return out;
  dsl::State weights = b.AddState("weight", DType::kFloat64, {}, ir::Reducer::kCat);
  b.Accumulate(weights, w);
  if (!b.ok()) return out;
  out.weight = b.Read(weights);
  out.y = ops::Where(PerElement(out.weight, out.y) > 0.0, out.y, int64_t{-1});
  return out;
}

std::string Exact16Format(const Thresholds& t, DType preds_dtype) {
  if (t.binned) return "";
  if (t.exact16 == "fp16" || t.exact16 == "bf16") return t.exact16;
  if (preds_dtype == DType::kBFloat16) return "bf16";
  if (preds_dtype == DType::kFloat16 || t.exact16 == "auto") return "fp16";
  return "";
}

Expr Exact16Histogram(Expr probs, Expr label, int64_t k, const std::string& format) {
  // One fused pass on the CPU (ops/fused/score_code.h); a histogram elsewhere.
  return probs.builder()->Op(ops::OpId::kCode16Counts, {probs, label},
                             ops::ToAttrMap(ops::Code16CountsAttrs{format, k}));
}

Expr Exact16Counts(Expr probs, Expr label, int64_t k, const std::string& format, Expr w) {
  if (!w.valid()) return Exact16Histogram(probs, label, k, format);
  Expr row = label;
  if (k > 1) row = row + ClassIndex(label, k, label.rank()) * int64_t{2};
  Expr idx = ops::ScoreCode16(probs, format) + row * static_cast<double>(kCodes16);
  idx = ops::Where(label >= int64_t{0}, idx, int64_t{-1});
  Expr h = ops::Histogram(ops::Flatten(idx), ops::Flatten(PerElement(w, idx)), k * 2 * kCodes16);
  return ops::Reshape(h, {k, 2, kCodes16});
}

Expr CurveWeights(dsl::MetricBuilder& b, bool flat, bool refused) {
  Expr w = flat ? FlatWeights(b, "target") : RowWeights(b, "preds");
  if (w.valid() && refused) {
    b.FailInput(kWeightInput, "the partial AUC (max_fpr) has no weighted form; drop max_fpr or the weights");
    return Expr();
  }
  return w;
}

Expr DecodeCode16(Expr codes, const std::string& format) {
  const bool bf16 = format == "bf16";
  const int64_t lo = bf16 ? -126 : -14;
  const int64_t emax = bf16 ? 255 : 31;    // the all-ones exponent: inf and NaN
  const double m = bf16 ? 128.0 : 1024.0;  // 2^M
  Expr c = ops::Cast(codes, DType::kFloat64);
  Expr negative = c < 32768.0;
  Expr u = ops::Where(negative, 32767.0 - c, c - 32768.0);  // the magnitude's bits
  // E = floor(u / 2^M), by bucketize against the multiples of 2^M (exact).
  Expr steps = (ops::Cast(ops::Arange(c, emax), DType::kFloat64) + 1.0) * m;
  Expr e = ops::Cast(ops::Bucketize(u, steps, /*right=*/true), DType::kFloat64);
  Expr f = u - e * m;
  Expr two = ops::FullLike(c, 2.0, DType::kFloat64);
  Expr normal = (f / m + 1.0) * ops::Pow(two, e + static_cast<double>(lo - 1));
  Expr sub = f * std::ldexp(1.0, static_cast<int>(lo) - static_cast<int>(std::log2(m)));
  Expr v = ops::Where(e == 0.0, sub, normal);
  v = ops::Where(e == static_cast<double>(emax), ops::Where(f == 0.0, ops::FullLike(v, INFINITY, DType::kFloat64), NAN),
                 v);
  return ops::Cast(ops::Where(negative, -v, v), DType::kFloat32);
}

Exact16Stats Exact16StatsOf(Expr counts) {
  Expr h = ops::Cast(counts, DType::kFloat64);
  Expr neg = ops::Select(h, 1, 0), pos = ops::Select(h, 1, 1);  // [K, codes]
  Exact16Stats s;
  s.n_pos = ops::Sum(pos, {1});
  s.n_neg = ops::Sum(neg, {1});
  // Positives scored above code c: n_pos - cumsum(pos)[c]; a tied pair is one half.
  Expr pos_above = ops::Unsqueeze(s.n_pos, 1) - ops::Cumsum(pos, 1);
  s.u = ops::Sum(neg * (pos_above + pos * 0.5), {1});
  // At code c: positives and rows scored >= it.
  Expr all = pos + neg;
  Expr tp_ge = pos_above + pos;
  Expr n_ge = ops::Unsqueeze(s.n_pos + s.n_neg, 1) - ops::Cumsum(all, 1) + all;
  s.precision_sum = ops::Sum(ops::Where(pos > 0.0, pos * ops::SafeDiv(tp_ge, n_ge), 0.0), {1});
  return s;
}

void CountNanScores(dsl::MetricBuilder& b, Expr nan_kept) {
  b.Check("preds", "{n} NaN scores", ops::Sum(ops::Cast(nan_kept, DType::kInt64)));
}

Expr ClassIndex(Expr like, int64_t c, int64_t rank) {
  Expr cls = ops::Arange(like, c);
  if (rank > 2) {
    std::vector<int64_t> shape(rank - 1, 1);
    shape[0] = c;
    cls = ops::Reshape(cls, shape);
  }
  return cls;
}

bool ReadClassInputs(ClassTask task, int64_t num, std::optional<int64_t> ignore_index, dsl::MetricBuilder& b,
                     ClassInputs& in, NanScores nan_scores) {
  Expr preds = b.Input("preds");
  Expr target = b.Input("target");
  if (!b.ok()) return false;
  const std::vector<int64_t>& ps = b.FindInput("preds")->shape;
  const std::vector<int64_t>& ts = b.FindInput("target")->shape;
  const int64_t c = num;
  const char* num_name = task == ClassTask::kMulticlass ? "num_classes" : "num_labels";
  if (!ir::IsFloating(preds.dtype())) {
    b.FailInput("preds",
                absl::StrCat("expected floating point probabilities or logits, got ", ir::DTypeName(preds.dtype())));
  } else if (ir::IsFloating(target.dtype())) {
    b.FailInput("target", absl::StrCat("expected integer or bool labels, got ", ir::DTypeName(target.dtype())));
  } else if (task == ClassTask::kMulticlass) {
    if (ps.size() != ts.size() + 1 || ts.empty()) {
      b.FailInput("preds", absl::StrCat("expected scores of shape (N, ", c, ", ...) with one more dim than target ",
                                        ShapeString(ts), ", got ", ShapeString(ps)));
    } else if (ps[1] != c) {
      b.FailInput("preds", absl::StrCat("expected scores of shape (N, ", c, ", ...) for num_classes=", c, ", got ",
                                        ShapeString(ps)));
    } else if (ps[0] != ts[0] || !std::equal(ps.begin() + 2, ps.end(), ts.begin() + 1)) {
      b.FailInput("preds", absl::StrCat("scores of shape ", ShapeString(ps), " do not match target's shape ",
                                        ShapeString(ts), " (expected (N, C, ...) and (N, ...))"));
    }
  } else if (ps != ts) {
    b.FailInput("preds", absl::StrCat("shape ", ShapeString(ps), " does not match target's shape ", ShapeString(ts)));
  } else if (ps.size() < 2 || ps[1] != c) {
    b.FailInput("preds",
                absl::StrCat("expected shape (N, ", c, ", ...) for ", num_name, "=", c, ", got ", ShapeString(ps)));
  }
  if (!b.ok()) return false;
  in.extra.assign(ps.begin() + 2, ps.end());
  if (preds.dtype() != DType::kFloat32 && preds.dtype() != DType::kFloat64) preds = ops::Cast(preds, DType::kFloat32);
  Expr t = ops::Cast(target, DType::kInt64);
  Expr ignored;
  if (ignore_index) ignored = t == static_cast<double>(*ignore_index);
  // NaN fails both comparisons, so it also counts as outside (as in TorchMetrics).
  Expr outside = !(preds >= 0.0 && preds <= 1.0);
  if (task == ClassTask::kMulticlass) {
    Expr bad = t < 0.0 || t >= static_cast<double>(c);
    if (ignored.valid()) bad = bad && !ignored;
    b.Check("target", absl::StrCat("{n} values outside [0, ", c, ")"), ops::Sum(ops::Cast(bad, DType::kInt64)));
    Expr valid = !bad;
    if (ignored.valid()) valid = valid && !ignored;
    if (nan_scores == NanScores::kRejected) CountNanScores(b, ops::IsNan(preds) && ops::Unsqueeze(valid, 1));
    // TorchMetrics drops ignored samples before it looks for logits.
    Expr probs = ops::Where(ops::Any(outside && ops::Unsqueeze(valid, 1)), ops::Softmax(preds, 1), preds);
    Expr cls = ClassIndex(t, c, preds.rank());
    Expr t1 = ops::Unsqueeze(t, 1);
    in.probs = probs;
    in.label = ops::Where(ops::Unsqueeze(valid, 1), ops::Cast(t1 == cls, DType::kInt64), int64_t{-1});
    in.stored_target = ops::Where(valid, t, int64_t{-1});
  } else {
    Expr bad = !(t == 0.0 || t == 1.0);
    if (ignored.valid()) bad = bad && !ignored;
    b.Check("target", "{n} values outside {0, 1}", ops::Sum(ops::Cast(bad, DType::kInt64)));
    Expr valid = !bad;
    if (ignored.valid()) valid = valid && !ignored;
    if (nan_scores == NanScores::kRejected) CountNanScores(b, ops::IsNan(preds) && valid);
    // TorchMetrics looks for logits among all elements, ignored ones included.
    in.probs = ops::Where(ops::Any(outside), ops::Sigmoid(preds), preds);
    in.label = ops::Where(valid, t, int64_t{-1});
    in.stored_target = in.label;
  }
  return b.ok();
}

bool ReadCurveInputs(std::optional<ClassTask> task, int64_t num, std::optional<int64_t> ignore_index,
                     dsl::MetricBuilder& b, ClassInputs& in) {
  if (task.has_value()) return ReadClassInputs(*task, num, ignore_index, b, in);
  BinaryInputs bin;
  if (!ReadBinaryInputs(ignore_index, /*cast_f32=*/true, b, bin)) return false;
  in.probs = bin.probs;
  in.label = ops::Where(bin.valid, bin.target, int64_t{-1});
  in.stored_target = in.label;
  in.extra.clear();
  return b.ok();
}

bool ReadBinaryInputs(std::optional<int64_t> ignore_index, bool cast_f32, dsl::MetricBuilder& b, BinaryInputs& in,
                      NanScores nan_scores) {
  Expr preds = b.Input("preds");
  Expr target = b.Input("target");
  if (!b.ok()) return false;
  auto shape = [](const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); };
  const std::vector<int64_t>& ps = b.FindInput("preds")->shape;
  const std::vector<int64_t>& ts = b.FindInput("target")->shape;
  if (!ir::IsFloating(preds.dtype())) {
    b.FailInput("preds",
                absl::StrCat("expected floating point probabilities or logits, got ", ir::DTypeName(preds.dtype())));
  } else if (ir::IsFloating(target.dtype())) {
    b.FailInput("target", absl::StrCat("expected integer or bool labels, got ", ir::DTypeName(target.dtype())));
  } else if (ps.empty()) {
    b.FailInput("preds", "expected a tensor of shape (N, ...), got a scalar");
  } else if (ps != ts) {
    b.FailInput("preds", absl::StrCat("shape ", shape(ps), " does not match target's shape ", shape(ts)));
  }
  if (!b.ok()) return false;
  if (preds.rank() > 1) {
    preds = ops::Flatten(preds);
    target = ops::Flatten(target);
  }
  if (cast_f32 && preds.dtype() != DType::kFloat32 && preds.dtype() != DType::kFloat64) {
    preds = ops::Cast(preds, DType::kFloat32);
  }
  Expr t = ops::Cast(target, DType::kInt64);
  Expr valid = t == int64_t{0} || t == int64_t{1};
  Expr bad = !valid;
  if (ignore_index) {
    Expr ignored = t == static_cast<double>(*ignore_index);
    bad = bad && !ignored;
    valid = valid && !ignored;
  }
  b.Check("target", "{n} values outside {0, 1}", ops::Sum(ops::Cast(bad, DType::kInt64)));
  if (nan_scores == NanScores::kRejected) CountNanScores(b, ops::IsNan(preds) && valid);
  Expr outside = !(preds >= 0.0 && preds <= 1.0) && valid;
  in.probs = ops::Where(ops::Any(outside), ops::Sigmoid(preds), preds);
  in.target = t;
  in.valid = valid;
  return b.ok();
}

}  // namespace tally::metrics
