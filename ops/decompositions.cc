#include "ops/decompositions.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/attrs.h"
#include "ops/confmat_parts.h"
#include "ops/graph_builder.h"
#include "ops/op_list.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ops::Expr;
// Results are a decomposition's values, one per result of the node, and the
// values it reads only as a centring shift (see Decompose).
struct Results : std::vector<Expr> {
  using std::vector<Expr>::vector;
  std::vector<Expr> shifts;
};
using ir::DType;

// McRows is what mc_confmat and mc_marginals share: each row's label
// (argmax, or the integer pred), the rows kept (target not ignore_index,
// target and label in [0, C)), and the bad targets and label preds.
struct McRows {
  Expr target, label, keep, bad_t, bad_p;
};

McRows DecomposeMcRows(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b, int64_t c, const Opt<int64_t>& ignore_index) {
  McRows r;
  Expr preds = b.Wrap(&g, n.input(0));
  r.target = ops::Cast(b.Wrap(&g, n.input(1)), DType::kInt64);
  Expr ignored;
  if (ignore_index.has_value()) ignored = r.target == static_cast<double>(ignore_index.get());
  r.bad_t = r.target < 0.0 || r.target >= static_cast<double>(c);
  if (ignored.valid()) r.bad_t = r.bad_t && !ignored;
  Expr bad = r.bad_t;
  if (ir::IsFloating(preds.dtype())) {
    r.label = ops::Argmax(preds, 1);
    r.bad_p = ops::FullLike(r.target, 0, DType::kBool);
  } else {
    r.label = ops::Cast(preds, DType::kInt64);
    r.bad_p = r.label < 0.0 || r.label >= static_cast<double>(c);
    if (ignored.valid()) r.bad_p = r.bad_p && !ignored;
    bad = bad || r.bad_p;
  }
  r.keep = !bad;
  if (ignored.valid()) r.keep = r.keep && !ignored;
  return r;
}

// McExtras are mc_confmat's optional operands as a decomposition uses them:
// the row weights sanitized (float64, a negative, NaN or infinite one 0)
// and the group ids.
struct McExtras {
  Expr weight, groups;
  int64_t num_groups = 0;
};

McExtras DecomposeMcExtras(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b, const Opt<int64_t>& num_groups) {
  McExtras x;
  size_t end = n.inputs().size();
  if (num_groups.has_value()) {
    x.num_groups = num_groups.get();
    x.groups = ops::Cast(b.Wrap(&g, n.input(--end)), DType::kInt64);
  }
  if (end > 2) {
    Expr w = b.Wrap(&g, n.input(2));
    x.weight = ops::Where(w >= 0.0 && w < INFINITY, ops::Cast(w, DType::kFloat64), 0.0);
  }
  return x;
}

// CountIndex counts rows per index in [0, size) (skipping -1): an i64
// histogram, f64 weight sums with weights, and per group ([G * size]) with
// groups.
Expr CountIndex(ops::GraphBuilder& b, const McExtras& x, Expr idx, int64_t size) {
  if (!x.groups.valid()) return x.weight.valid() ? ops::Histogram(idx, x.weight, size) : ops::Histogram(idx, size);
  ReplicaHistogramAttrs a;
  a.size = size;
  a.replicas = x.num_groups;
  a.mode = "groups";
  std::vector<Expr> in = {idx, x.groups};
  if (x.weight.valid()) in.push_back(x.weight);
  return b.Op(OpId::kReplicaHistogram, in, ToAttrMap(a));
}

// GroupShape is `shape` with the group axis in front when there is one.
std::vector<int64_t> GroupShape(const McExtras& x, std::vector<int64_t> shape) {
  if (x.groups.valid()) shape.insert(shape.begin(), x.num_groups);
  return shape;
}

// McConfmat: a histogram of target * C + pred over the kept rows.
absl::StatusOr<Results> DecomposeMcConfmat(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  const auto a = AttrsOf<McConfmatAttrs>(n);
  const int64_t c = a.num_classes;
  McRows r = DecomposeMcRows(g, n, b, c, a.ignore_index);
  McExtras x = DecomposeMcExtras(g, n, b, a.num_groups);
  Expr idx = ops::Where(r.keep, r.target * static_cast<double>(c) + r.label, -1.0);
  Expr cm = ops::Reshape(CountIndex(b, x, idx, c * c), GroupShape(x, {c, c}));
  return Results{cm, ops::Sum(r.bad_t), ops::Sum(r.bad_p)};
}

// McMarginals: one histogram over the classes per part, stacked as rows.
absl::StatusOr<Results> DecomposeMcMarginals(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  const auto a = AttrsOf<McMarginalsAttrs>(n);
  const int64_t c = a.num_classes;
  TALLY_ASSIGN_OR_RETURN(std::vector<ConfmatPart> parts, ParseConfmatParts(a.parts));
  McRows r = DecomposeMcRows(g, n, b, c, a.ignore_index);
  McExtras x = DecomposeMcExtras(g, n, b, a.num_groups);
  Expr by_target = ops::Where(r.keep, r.target, -1.0);
  Expr err = r.target - r.label;
  // Weighted: every count and sum adds the row's weight.
  auto count = [&](Expr idx) { return CountIndex(b, x, idx, c); };
  auto sum = [&](Expr idx, Expr v) {
    McExtras summed = x;
    summed.weight = x.weight.valid() ? ops::Cast(v, DType::kFloat64) * x.weight : v;
    return CountIndex(b, summed, idx, c);
  };
  std::vector<Expr> rows;
  for (ConfmatPart p : parts) {
    Expr h;
    switch (p) {
      case ConfmatPart::kTp:
        h = count(ops::Where(r.keep && r.label == r.target, r.target, -1.0));
        break;
      case ConfmatPart::kTarget:
        h = count(by_target);
        break;
      case ConfmatPart::kPred:
        h = count(ops::Where(r.keep, r.label, -1.0));
        break;
      case ConfmatPart::kAbsErr:
        h = sum(by_target, ops::Abs(err));
        break;
      case ConfmatPart::kSqErr:
        h = sum(by_target, err * err);
        break;
    }
    // One row [1, C], or [G, 1, C] per group.
    rows.push_back(ops::Reshape(h, GroupShape(x, {1, c})));
  }
  // Concat joins along dim 0: per group, the parts go there and back.
  if (x.groups.valid()) {
    for (Expr& row : rows) row = ops::Transpose(row, 0, 1);
  }
  Expr marginals = ops::Concat(rows);
  if (x.groups.valid()) marginals = ops::Transpose(marginals, 0, 1);
  if (a.totals.get()) marginals = ops::Sum(marginals, {marginals.rank() - 1});
  return Results{marginals, ops::Sum(r.bad_t), ops::Sum(r.bad_p)};
}

// CountOutside: the elements that fail x >= low and x < high (NaN fails
// both), compared in float64 as the kernel does.
absl::StatusOr<Results> DecomposeCountOutside(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  const auto a = AttrsOf<CountOutsideAttrs>(n);
  Expr x = ops::Cast(b.Wrap(&g, n.input(0)), DType::kFloat64);
  return Results{ops::Sum(ops::Cast(!(x >= a.low && x < a.high), DType::kInt64))};
}

// ConfmatPart: the statistic read off the matrix in O(C^2) work; only the
// diagonal is a gather (no C x C mask).
absl::StatusOr<Results> DecomposeConfmatPart(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  Expr cm = b.Wrap(&g, n.input(0));
  const int64_t c = cm.type().shape[0].size;
  TALLY_ASSIGN_OR_RETURN(std::vector<ConfmatPart> parts, ParseConfmatParts(AttrsOf<ConfmatPartAttrs>(n).part));
  Expr idx = ops::Arange(cm, c);
  Expr diff = ops::Unsqueeze(idx, 1) - ops::Unsqueeze(idx, 0);  // [C, C]: target - pred
  switch (parts.at(0)) {
    case ConfmatPart::kTp:
      return Results{ops::Take(ops::Flatten(cm), idx * static_cast<double>(c + 1))};
    case ConfmatPart::kTarget:
      return Results{ops::Sum(cm, {1})};
    case ConfmatPart::kPred:
      return Results{ops::Sum(cm, {0})};
    case ConfmatPart::kAbsErr:
      return Results{ops::Sum(cm * ops::Cast(ops::Abs(diff), cm.dtype()), {1})};
    case ConfmatPart::kSqErr:
      return Results{ops::Sum(cm * ops::Cast(diff * diff, cm.dtype()), {1})};
  }
  return absl::InternalError("confmat_part: no part");
}

// BinaryRankStats: sorts and binary searches over every row (the exact
// curves' formulas before the fused kernel). NaN counts as +inf; the sorted
// lists are padded with +inf, which a count of rows <= a key must not reach
// past its list's real length.
absl::StatusOr<Results> DecomposeBinaryRankStats(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  Expr s = b.Wrap(&g, n.input(0));
  Expr positive = b.Wrap(&g, n.input(1));
  Expr valid = !(s < 0.0);
  Expr key = ops::Where(ops::IsNan(s), INFINITY, s);
  Expr pos = valid && positive;
  Expr neg = valid && !positive;
  Expr pos_sorted = ops::SortValues(ops::Where(pos, key, INFINITY), 0);
  Expr neg_sorted = ops::SortValues(ops::Where(neg, key, INFINITY), 0);
  Expr all_sorted = ops::SortValues(ops::Where(valid, key, INFINITY), 0);
  Expr n_pos = ops::Sum(ops::Cast(pos, DType::kInt64));
  Expr n_neg = ops::Sum(ops::Cast(neg, DType::kInt64));
  Expr neg_le = ops::Minimum(ops::SearchSorted(neg_sorted, key, /*right=*/true), n_neg);
  Expr below = ops::SearchSorted(neg_sorted, key) + neg_le;
  Expr u = ops::Sum(ops::Where(pos, ops::Cast(below, DType::kFloat64), 0.0)) * 0.5;
  Expr n_valid = ops::Sum(ops::Cast(valid, DType::kInt64));
  Expr n_ge = ops::Cast(n_valid - ops::SearchSorted(all_sorted, key), DType::kFloat64);
  Expr tp_ge = ops::Cast(n_pos - ops::SearchSorted(pos_sorted, key), DType::kFloat64);
  Expr precision_sum = ops::Sum(ops::Where(pos, ops::SafeDiv(tp_ge, n_ge), 0.0));
  return Results{n_pos, n_neg, u, precision_sum};
}

// ScoreCode16: the format's bits from arithmetic on the rounded value h:
// a normal |h| = (1 + f) 2^e has bits (e - lo + 1) 2^M + f 2^M (lo the
// smallest normal exponent, M the mantissa bits), a subnormal |h| 2^(M - lo),
// infinity the all-ones exponent; e is found by bucketize against the
// powers 2^lo .. 2^hi. Every step is exact in float64.
Expr Code16Of(Expr input, bool bf16) {
  const int64_t lo = bf16 ? -126 : -14, hi = bf16 ? 127 : 15;
  const double m = bf16 ? 128.0 : 1024.0;            // 2^M
  Expr x = ops::Cast(input, DType::kFloat64) + 0.0;  // -0 becomes +0
  Expr h = ops::Cast(ops::Cast(x, bf16 ? DType::kBFloat16 : DType::kFloat16), DType::kFloat64);
  Expr a = ops::Abs(h);
  Expr exps = ops::Cast(ops::Arange(a, hi - lo + 1), DType::kFloat64) + static_cast<double>(lo);
  Expr powers = ops::Pow(ops::FullLike(exps, 2.0, DType::kFloat64), exps);
  Expr k = ops::Cast(ops::Bucketize(a, powers, /*right=*/true), DType::kFloat64);  // biased exponent
  Expr e = k - 1.0 + static_cast<double>(lo);
  Expr normal = k * m + (a * ops::Pow(ops::FullLike(a, 2.0, DType::kFloat64), -e) - 1.0) * m;
  Expr sub = a * std::ldexp(m, static_cast<int>(-lo));
  Expr bits = ops::Where(k == 0.0, sub, normal);
  bits = ops::Where(a == INFINITY, static_cast<double>(hi - lo + 2) * m, bits);
  Expr ordered = ops::Where(h < 0.0, 32767.0 - bits, bits + 32768.0);
  ordered = ops::Where(ops::IsNan(x), 65535.0, ordered);
  return ops::Cast(ordered, DType::kInt64);
}

absl::StatusOr<Results> DecomposeScoreCode16(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  return Results{Code16Of(b.Wrap(&g, n.input(0)), AttrsOf<ScoreCode16Attrs>(n).format == "bf16")};
}

// Code16Counts: a histogram of code + (label + class * 2) * 65536 over the
// kept elements. Code16Of, not a score_code16 node: a decomposition leaves
// no composite behind.
absl::StatusOr<Results> DecomposeCode16Counts(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  const auto a = AttrsOf<Code16CountsAttrs>(n);
  const int64_t k = a.classes;
  Expr probs = b.Wrap(&g, n.input(0));
  Expr label = b.Wrap(&g, n.input(1));
  Expr cls = ops::FullLike(label, 0.0, DType::kInt64);
  if (k > 1) {
    std::vector<int64_t> shape(label.rank() - 1, 1);
    shape[0] = k;
    cls = ops::Reshape(ops::Arange(label, k), shape);  // broadcasts along dim 1
  }
  Expr code = Code16Of(probs, a.format == "bf16");
  Expr idx = code + (label + cls * int64_t{2}) * 65536.0;
  idx = ops::Where(label >= int64_t{0}, idx, int64_t{-1});
  return Results{ops::Reshape(ops::Histogram(ops::Flatten(idx), k * 2 * 65536), {k, 2, 65536})};
}

// RegStats: what the regression metrics compute per batch without the
// composite, op for op: the error sums of mean_squared_error and
// mean_absolute_error (over the flattened elements, and per column), and
// the two-pass moments of metrics/regression/moments.h for preds, target and
// target − preds, with the co-moment of preds and target.
absl::StatusOr<Results> DecomposeRegStats(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  Expr preds = ops::Cast(b.Wrap(&g, n.input(0)), DType::kFloat64);
  Expr target = ops::Cast(b.Wrap(&g, n.input(1)), DType::kFloat64);
  const bool one_dim = preds.rank() == 1;
  Expr diff = preds - target;
  Expr flat = ops::Flatten(diff);
  Expr sse_all = ops::Sum(flat * flat, {0});
  Expr sae_all = ops::Sum(ops::Abs(flat), {0});
  // Column form [N, D].
  Expr p = one_dim ? ops::Unsqueeze(preds, 1) : preds;
  Expr t = one_dim ? ops::Unsqueeze(target, 1) : target;
  Expr diff_c = one_dim ? ops::Unsqueeze(diff, 1) : diff;
  Expr sse = ops::Sum(diff_c * diff_c, {0});
  Expr sae = ops::Sum(ops::Abs(diff_c), {0});
  Expr rows = ops::Size(p, 0);
  Expr count = ops::Cast(rows, DType::kFloat64);
  // Sums only (so that dsl::Replicate can slice it), around a shift: the
  // batch mean in two parts, rough = sum(x)/n and rest = sum(x - rough)/n.
  // With d = x - rough - rest, the mean is rough + rest + sum(d)/n (renormalised
  // by Fast TwoSum) and M2 = sum(d^2) - sum(d)^2/n, which hold for any shift,
  // so a bootstrap shares the batch's shift across its replicas and still
  // gets each replica's own moments; d is centred, so nothing cancels. A
  // constant column c still gets mean c and M2 = 0 exactly, as in the
  // kernel: x - rough is exact (Sterbenz) with few significant bits, so n
  // times it sums exactly, rest equals it and every d is 0. An empty batch
  // gets mean 0 from the safe division.
  Results out;
  struct Moments {
    Expr hi, lo, m2, d, s1;
  };
  auto moments = [&](Expr x) {
    Moments m;
    Expr rough = ops::SafeDiv(ops::Sum(x, {0}), count);
    Expr residual = x - rough;
    Expr rest = ops::SafeDiv(ops::Sum(residual, {0}), count);
    out.shifts.push_back(rough);
    out.shifts.push_back(rest);
    m.d = residual - rest;
    m.s1 = ops::Sum(m.d, {0});
    Expr low = rest + ops::SafeDiv(m.s1, count);
    m.hi = rough + low;
    m.lo = low - (m.hi - rough);
    m.m2 = ops::Clamp(ops::Sum(m.d * m.d, {0}) - ops::SafeDiv(m.s1 * m.s1, count), 0.0, std::nullopt);
    return m;
  };
  Moments mp = moments(p), mt = moments(t), me;
  if (AttrsOf<RegStatsAttrs>(n).error_moments.get()) {
    me = moments(t - p);
  } else {  // nobody reads them: zeros, as the kernel gives
    me.hi = me.lo = me.m2 = ops::Sum(ops::FullLike(t, 0.0, DType::kFloat64), {0});
  }
  Expr c = ops::Sum(mp.d * mt.d, {0}) - ops::SafeDiv(mp.s1 * mt.s1, count);
  out.insert(out.end(),
             {rows, mp.hi, mp.lo, mp.m2, mt.hi, mt.lo, mt.m2, me.hi, me.lo, me.m2, c, sse, sae, sse_all, sae_all});
  return out;
}

// BlConfmat: the binary/multilabel labelling, checks and histogram of
// metrics/classification/stats.cc (MakeBinaryForm, BinaryLabels, Kept,
// BinaryConfmat, MultilabelConfmat), op for op. Label l's 2 x 2 matrix
// occupies bins [4l, 4l + 4).
absl::StatusOr<Results> DecomposeBlConfmat(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  Expr preds = b.Wrap(&g, n.input(0));
  Expr target = b.Wrap(&g, n.input(1));
  const auto a = AttrsOf<BlConfmatAttrs>(n);
  const double threshold = a.threshold;
  Expr ignored;
  if (a.ignore_index.has_value()) ignored = target == static_cast<double>(a.ignore_index.get());
  Expr bad_t = !(target == 0.0 || target == 1.0);
  if (ignored.valid()) bad_t = bad_t && !ignored;
  Expr label, bad_p;
  if (ir::IsFloating(preds.dtype())) {
    // NaN fails both comparisons, so it also counts as outside.
    Expr outside = !(preds >= 0.0 && preds <= 1.0);
    if (a.logits_over_kept && ignored.valid()) outside = outside && !ignored;
    label = ops::Where(ops::Any(outside), ops::Sigmoid(preds), preds) > threshold;
  } else if (preds.dtype() == DType::kBool) {
    label = preds;
  } else {
    bad_p = !(preds == 0.0 || preds == 1.0);
    if (ignored.valid()) bad_p = bad_p && !ignored;
    label = preds == 1.0;
  }
  Expr bad = bad_p.valid() ? bad_t || bad_p : bad_t;
  const bool multilabel = target.rank() == 2;
  Expr keep = multilabel ? !ops::Any(bad, {1}, /*keepdim=*/true) : !bad;
  if (ignored.valid()) keep = keep && !ignored;
  Expr idx = ops::Cast(target, DType::kInt64) * 2.0 + ops::Cast(label, DType::kInt64);
  Expr cm;
  if (multilabel) {
    int64_t labels = n.output(0)->type().shape[0].size;
    idx = idx + ops::Arange(target, labels) * 4.0;
    idx = ops::Where(keep, idx, -1.0);
    cm = ops::Reshape(ops::Histogram(ops::Flatten(idx), 4 * labels), {labels, 2, 2});
  } else {
    idx = ops::Where(keep, idx, -1.0);
    cm = ops::Reshape(ops::Histogram(idx, 4), {2, 2});
  }
  if (!bad_p.valid()) bad_p = ops::FullLike(target, 0, DType::kBool);
  Expr nt = ops::Sum(bad_t), np = ops::Sum(bad_p);
  return Results{cm, nt, np};
}

// MomentsMerge: the pairwise update of Chan, Golub and LeVeque with TwoSum
// means, as metrics/regression/moments.h describes; an empty side leaves the
// other unchanged through selects.
absl::StatusOr<Results> DecomposeMomentsMerge(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  const auto attrs = AttrsOf<MomentsMergeAttrs>(n);
  const int64_t vars = attrs.variables;
  const std::vector<int64_t> pairs = attrs.pairs.get();
  const int64_t side = 1 + 3 * vars + static_cast<int64_t>(pairs.size()) / 2;
  auto a = [&](int64_t i) { return b.Wrap(&g, n.input(i)); };
  auto bside = [&](int64_t i) { return b.Wrap(&g, n.input(side + i)); };
  Expr na = a(0), nb = bside(0);
  Results results = {na + nb};
  Expr fa = ops::Cast(na, DType::kFloat64), fb = ops::Cast(nb, DType::kFloat64);
  Expr total = fa + fb;
  Expr a_empty = na == 0.0, b_empty = nb == 0.0;
  Expr either_empty = a_empty || b_empty;
  // Weights of the pairwise update; both are 0 when the merged count is 0.
  Expr w_mean = ops::SafeDiv(fb, total);
  Expr w_moment = ops::SafeDiv(fa * fb, total);
  std::vector<Expr> delta;
  for (int64_t v = 0; v < vars; ++v) {
    Expr ha = a(1 + 3 * v), hb = bside(1 + 3 * v);
    Expr la = a(2 + 3 * v), lb = bside(2 + 3 * v);
    Expr d = (hb - ha) + (lb - la);
    delta.push_back(d);
    // (ha + la) + δ·w as two doubles: s = ha + t rounded, e its exact error
    // (TwoSum, valid whatever the magnitudes).
    Expr t = la + d * w_mean;
    Expr s = ha + t;
    Expr t_part = s - ha;
    Expr e = (ha - (s - t_part)) + (t - t_part);
    results.push_back(ops::Where(b_empty, ha, ops::Where(a_empty, hb, s)));
    results.push_back(ops::Where(b_empty, la, ops::Where(a_empty, lb, e)));
    Expr extra = ops::Where(either_empty, 0.0, d * d * w_moment);
    results.push_back(a(3 + 3 * v) + bside(3 + 3 * v) + extra);
  }
  for (size_t k = 0; k < pairs.size() / 2; ++k) {
    Expr extra = ops::Where(either_empty, 0.0, delta[pairs[2 * k]] * delta[pairs[2 * k + 1]] * w_moment);
    int64_t i = 1 + 3 * vars + static_cast<int64_t>(k);
    results.push_back(a(i) + bside(i) + extra);
  }
  return results;
}

// CountInvalid: the update's target check of the retrieval metrics.
absl::StatusOr<Results> DecomposeCountInvalid(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  Expr t = ops::Cast(b.Wrap(&g, n.input(0)), DType::kFloat64);
  Expr not_binary = !(t == 0.0 || t == 1.0);
  Expr negative = !(t >= 0.0);
  if (const auto a = AttrsOf<CountInvalidAttrs>(n); a.ignore_index.has_value()) {
    Expr kept = !(t == static_cast<double>(a.ignore_index.get()));
    not_binary = not_binary && kept;
    negative = negative && kept;
  }
  return Results{ops::Sum(ops::Cast(not_binary, DType::kInt64)), ops::Sum(ops::Cast(negative, DType::kInt64))};
}

// RetrievalScore: every per-query quantity as a segment_scan (within-query
// cumulative sums and totals) over the sorted rows; each query is read at its
// last row, so there is neither a host loop over queries nor a data-dependent
// number of them.
absl::StatusOr<Results> DecomposeRetrievalScore(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b) {
  Expr keys = b.Wrap(&g, n.input(0));
  Expr preds = b.Wrap(&g, n.input(1));
  Expr t = ops::Cast(b.Wrap(&g, n.input(2)), DType::kFloat64);
  const auto attrs = AttrsOf<RetrievalScoreAttrs>(n);
  const std::string metric = attrs.metric;
  const std::string action = attrs.empty_target_action;
  const std::optional<int64_t> top_k = attrs.top_k.optional();
  // v: 1 for a row that counts; rel: its relevance.
  Expr v = attrs.ignore_index.has_value()
               ? ops::Cast(!(t == static_cast<double>(attrs.ignore_index.get())), DType::kFloat64)
               : ops::FullLike(t, 1.0, DType::kFloat64);
  Expr rel = v * t;
  auto scan = [&](Expr x) {
    std::vector<Expr> r = b.OpN(ops::OpId::kSegmentScan, {x, keys}, {});
    return r.size() == 2 ? std::make_pair(r[0], r[1]) : std::make_pair(Expr(), Expr());
  };
  auto total = [&](Expr x) { return scan(x).second; };
  auto [row_no, rows] = scan(ops::FullLike(v, 1.0, DType::kFloat64));
  auto [pos, count] = scan(v);  // pos: 1-based rank among the query's counted rows
  auto [seen_rel, npos] = scan(rel);
  Expr in_k = top_k.has_value() ? v * ops::Cast(pos <= static_cast<double>(*top_k), DType::kFloat64) : v;
  Expr hits = total(rel * in_k);
  Expr empty = npos == 0.0;
  Expr value;
  if (metric == "recall") {
    value = ops::SafeDiv(hits, npos);
  } else if (metric == "precision") {
    Expr denom = count;
    if (top_k.has_value()) {
      Expr k = ops::FullLike(count, static_cast<double>(*top_k), DType::kFloat64);
      denom = attrs.adaptive_k ? ops::Minimum(count, k) : k;
    }
    value = ops::SafeDiv(hits, denom);
  } else if (metric == "hit_rate") {
    value = ops::Cast(hits > 0.0, DType::kFloat64);
  } else if (metric == "reciprocal_rank") {
    Expr first = rel * in_k * ops::Cast(seen_rel == 1.0, DType::kFloat64);
    value = total(ops::SafeDiv(first, pos));
  } else if (metric == "average_precision") {
    value = ops::SafeDiv(total(rel * in_k * ops::SafeDiv(seen_rel, pos)), hits);
  } else if (metric == "r_precision") {
    Expr in_r = v * ops::Cast(pos <= npos, DType::kFloat64);
    value = ops::SafeDiv(total(rel * in_r), npos);
  } else if (metric == "fall_out") {
    Expr neg = v - rel;
    Expr negs = total(neg);
    value = ops::SafeDiv(total(neg * in_k), negs);
    empty = negs == 0.0;
  } else if (metric == "normalized_dcg") {
    // sklearn's _tie_average_dcg: a run of tied preds shares its mean
    // relevance over the discounts of its positions; the ideal DCG ranks by
    // relevance (rows left out sort last).
    auto discount = [&](Expr rank, Expr counted) {
      Expr d = ops::SafeDiv(counted, ops::Log(rank + 1.0) / std::log(2.0));
      return top_k.has_value() ? d * ops::Cast(rank <= static_cast<double>(*top_k), DType::kFloat64) : d;
    };
    auto tie = [&](Expr x) {
      std::vector<Expr> r = b.OpN(ops::OpId::kSegmentScan, {x, keys, preds}, {});
      return r.size() == 2 ? r[1] : Expr();
    };
    Expr gain = total(discount(pos, v) * ops::SafeDiv(tie(rel), tie(v)));
    std::vector<Expr> ideal = b.OpN(ops::OpId::kSegmentSort, {keys, ops::Where(v > 0.0, t, -1.0)}, {});
    if (ideal.size() != 2) return b.status();
    Expr v2 = ops::Cast(ideal[1] >= 0.0, DType::kFloat64);
    auto [pos2, unused] = scan(v2);
    (void)unused;
    Expr best = total(discount(pos2, v2) * v2 * ideal[1]);
    value = ops::SafeDiv(gain, best);
  } else if (metric == "auroc") {
    // binary_auroc of the top k rows: each positive scores the negatives
    // ranked below it, and half of those tied with it (the trapezoidal ROC).
    Expr neg_k = (v - rel) * in_k;
    Expr negs = total(neg_k);
    std::vector<Expr> tied = b.OpN(ops::OpId::kSegmentScan, {neg_k, keys, preds}, {});
    if (tied.size() != 2) return b.status();
    Expr neg_at_or_above = scan(neg_k).first - tied[0] + tied[1];
    Expr u = total(rel * in_k * (negs - neg_at_or_above + 0.5 * tied[1]));
    value = ops::SafeDiv(u, hits * negs);
  } else {
    return absl::InvalidArgumentError(absl::StrCat("retrieval_score: unknown metric '", metric, "'"));
  }
  Expr exists = (row_no == rows) && (count > 0.0);
  Expr scored = ops::Where(empty, action == "pos" ? 1.0 : 0.0, value);
  Expr include = action == "skip" || action == "error" ? exists && !empty : exists;
  Expr queries = ops::Sum(ops::Cast(include, DType::kFloat64));
  Expr result = ops::SafeDiv(ops::Sum(ops::Where(include, scored, 0.0)), queries);
  if (n.inputs().size() > 3) {
    // A query weighs the mean of its rows' weights.
    Expr w = ops::SafeDiv(total(b.Wrap(&g, n.input(3))), rows);
    result = ops::SafeDiv(ops::Sum(ops::Where(include, w * scored, 0.0)), ops::Sum(ops::Where(include, w, 0.0)));
  }
  const std::string aggregation = attrs.aggregation.get();
  if (aggregation != "mean") {
    // torch.median/min/max over the included scores (0 without any; NaN if
    // any is NaN). A sentinel row keeps the reductions defined on no rows.
    const double fill = aggregation == "max" ? -INFINITY : INFINITY;
    Expr vals = ops::Concat({ops::Where(include, scored, fill), ops::Full(scored, {1}, fill, DType::kFloat64)});
    Expr picked;
    if (aggregation == "min") {
      picked = ops::Min(vals);
    } else if (aggregation == "max") {
      picked = ops::Max(vals);
    } else {  // the lower of the two middle scores
      Expr middle = ops::Cast((queries - 1.0) / 2.0, DType::kInt64);
      picked = ops::Take(ops::SortValues(vals, 0), middle);
    }
    Expr has_nan = ops::Any(ops::IsNan(vals));
    result = ops::Where(queries == 0.0, 0.0, ops::Where(has_nan, NAN, picked));
  }
  return Results{result, ops::Sum(ops::Cast(exists && empty, DType::kInt64))};
}

using DecomposeFn = absl::StatusOr<Results> (*)(ir::Graph& g, ir::Node& n, ops::GraphBuilder& b);

// One decomposition per composite op of op_list.h, and none for primitives:
// checked when this file compiles.
constexpr OpTableOf<DecomposeFn> kDecompositions = {
    {OpId::kMcConfmat, DecomposeMcConfmat},
    {OpId::kMcMarginals, DecomposeMcMarginals},
    {OpId::kCountOutside, DecomposeCountOutside},
    {OpId::kConfmatPart, DecomposeConfmatPart},
    {OpId::kBinaryRankStats, DecomposeBinaryRankStats},
    {OpId::kScoreCode16, DecomposeScoreCode16},
    {OpId::kCode16Counts, DecomposeCode16Counts},
    {OpId::kRegStats, DecomposeRegStats},
    {OpId::kMomentsMerge, DecomposeMomentsMerge},
    {OpId::kBlConfmat, DecomposeBlConfmat},
    {OpId::kCountInvalid, DecomposeCountInvalid},
    {OpId::kRetrievalScore, DecomposeRetrievalScore},
};
static_assert(kDecompositions.Complete(OpKind::kComposite), "a composite op of op_list.h has no decomposition");
static_assert(kDecompositions.CoversOnly(OpKind::kComposite), "a primitive op has a decomposition");

}  // namespace

absl::Status Decompose(ir::Graph& g, ir::Node& n, std::vector<const ir::Value*>* shifts) {
  ir::Device device = n.output(0)->type().device;
  ops::GraphBuilder b(n.op(), device);
  std::optional<OpId> id = IdOf(n);
  DecomposeFn decompose = id ? kDecompositions[*id] : nullptr;
  if (decompose == nullptr) return absl::UnimplementedError(absl::StrCat("no decomposition for op '", n.op(), "'"));
  absl::StatusOr<Results> results = decompose(g, n, b);
  if (!results.ok()) return results.status();
  // A decomposition stands for the node only when it built cleanly and gives
  // one value per result.
  if (!b.ok()) return b.status();
  if (results->size() != n.outputs().size()) {
    return absl::InternalError(
        absl::StrCat(n.op(), ": decomposition gives ", results->size(), " results, the op has ", n.outputs().size()));
  }
  for (size_t i = 0; i < results->size(); ++i) g.ReplaceAllUsesWith(n.output(i), (*results)[i].value());
  if (shifts != nullptr) {
    for (const Expr& x : results->shifts) shifts->push_back(x.value());
  }
  return absl::OkStatus();
}

}  // namespace tally::ops
