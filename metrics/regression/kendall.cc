// kendall_rank_corrcoef, after TorchMetrics 1.5.2's functional API
// (reg/kendall.py): `variant` a/b/c (default b), `t_test` (default false)
// and `alternative` two-sided/less/greater (default two-sided).
//
// Inputs preds and target, (N) or (N, d), are kept whole in cat states; the
// finalize counts pairs without forming them (no O(n²) memory or time):
//
// * ties: with x sorted, an element's tie group has size
//   c = searchsorted_right(x) − searchsorted_left(x), so Σ_groups f(c) =
//   Σ_elements f(c)/c. Pairs tied in both come from the key
//   rank_x·n + rank_y (ranks = searchsorted_left, exact in int64).
// * discordant pairs D: the rows sorted by (x, y) ascending make D the
//   number of inversions of rank_y (x ties, ordered by y, add none). They
//   are counted level by level as in merge sort — at level L each row of a
//   right half-block of size 2^L counts the rows of its left sibling with a
//   larger rank_y, via one sort of the left keys parent·n + rank_y and two
//   searchsorted — unrolled for kLevels levels (n < 2^kLevels rows):
//   O(n log² n) per column.
// * the d columns are laid end to end and handled at once: keys carry their
//   column (col·n² + ...), and per-column sums are histograms over the
//   column index. Keys stay below 4e18 while n·√d < 2.8e9 rows.
// * C + D = n(n−1)/2 − T_x − T_y + T_xy, so C − D = (C + D) − 2D.
//
// tau_a = (C − D)/(C + D) (TorchMetrics' tau_a: the untied pairs, not
// n(n−1)/2), tau_b = (C − D)/sqrt((n0 − T_x)(n0 − T_y)), tau_c =
// 2(C − D)/(n²(m − 1)/m) with m the smaller number of distinct values; all
// clamped to [−1, 1]. t_test adds TorchMetrics' asymptotic p-value (the
// result is then the tuple (tau, p_value)). Deliberate differences: the
// normal cdf is evaluated with a Chebyshev erfc fit (relative error
// < 1.2e-7, also in the tails; TorchMetrics: float32 torch.distributions);
// integer inputs are accepted (cast to float64), as TorchMetrics does.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

// Levels of the inversion count: rows < 2^kLevels.
constexpr int kLevels = 32;
// A key above every parent·n + rank_y (n < 2^32: keys < 2^64 / 4).
constexpr double kFarKey = 4.0e18;

Expr I64(Expr x) { return ops::Cast(x, DType::kInt64); }

// Columns are the d columns of an [n, d] state laid end to end (column-major,
// length n·d) with, per element, its column and its row position.
struct Columns {
  Expr col;  // i64 column of every element
  Expr pos;  // i64 position within its column
  Expr n_i;  // i64 scalar rows
  int64_t d;
  // PerColumn sums f64 `values` (one per element) into an f64 [d].
  Expr PerColumn(Expr values) const { return ops::Histogram(col, F64(values), d); }
};

// ColumnRanks are one input's per-column min ranks (i64, 0-based: the number
// of smaller values in the column), the sorted column-tagged keys and the
// size of every element's tie group.
struct ColumnRanks {
  Expr rank, sorted_key, ties;
};

ColumnRanks RanksOf(Expr flat, const Columns& c) {
  // A global min rank keeps every column's order and ties; tagging it with
  // the column keeps the columns apart.
  Expr global = ops::SearchSorted(ops::SortValues(flat, 0), flat);
  Expr key = c.col * (c.n_i * c.d) + global;
  ColumnRanks r;
  r.sorted_key = ops::SortValues(key, 0);
  Expr below = ops::SearchSorted(r.sorted_key, key);
  r.rank = below - c.col * c.n_i;
  r.ties = ops::SearchSorted(r.sorted_key, key, /*right=*/true) - below;
  return r;
}

// TieStats are the per-column tie sums (f64 [d]): pairs tied, and the
// p-value's Σ t(t−1)(t−2) and Σ t(t−1)(2t+5) over tie groups of size t.
struct TieStats {
  Expr pairs, p1, p2;
};

TieStats Ties(Expr group_sizes, const Columns& c) {
  Expr t = F64(group_sizes);  // Σ_groups f(t) = Σ_elements f(t)/t
  return {c.PerColumn((t - 1.0) / 2.0), c.PerColumn((t - 1.0) * (t - 2.0)), c.PerColumn((t - 1.0) * (2.0 * t + 5.0))};
}

// NormalCdf is Φ(z) = erfc(−z/√2)/2, erfc by Numerical Recipes' Chebyshev
// fit (relative error < 1.2e-7 everywhere); NaN stays NaN.
Expr NormalCdf(Expr z) {
  Expr x = z * (-1.0 / std::sqrt(2.0));
  Expr a = ops::Abs(x);
  Expr t = 1.0 / (1.0 + 0.5 * a);
  const double c[] = {-1.26551223, 1.00002368,  0.37409196, 0.09678418,  -0.18628806,
                      0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
  Expr poly = ops::Scalar(t, c[9]);
  for (int k = 8; k >= 0; --k) poly = poly * t + c[k];
  Expr erfc_a = t * ops::Exp(poly - a * a);
  Expr erfc_x = ops::Where(x >= 0.0, erfc_a, 2.0 - erfc_a);
  return ops::Where(ops::IsNan(z), NAN, 0.5 * erfc_x);
}

struct KendallResult {
  Expr tau, p_value;  // f64 [d]
};

// Kendall computes every column of the [n, d] states at once.
KendallResult Kendall(Expr preds, Expr target, int64_t d, const std::string& variant,
                      const std::optional<std::string>& alternative) {
  Expr xf = ops::Flatten(ops::Transpose(preds, 0, 1)), yf = ops::Flatten(ops::Transpose(target, 0, 1));
  Columns c;
  c.d = d;
  c.n_i = ops::Size(preds, 0);
  Expr gpos = ops::Cumsum(ops::FullLike(xf, 1.0, DType::kInt64), 0) - 1;
  Expr n_f = F64(c.n_i);
  c.col = I64(F64(gpos) / ops::Maximum(n_f, ops::Scalar(n_f, 1.0)));
  c.pos = gpos - c.col * c.n_i;
  ColumnRanks rx = RanksOf(xf, c), ry = RanksOf(yf, c);
  // Pairs tied in both, and the (column, x, y) order.
  Expr key = (c.col * c.n_i + rx.rank) * c.n_i + ry.rank;
  Expr sorted_key = ops::SortValues(key, 0);
  Expr ties_xy = ops::SearchSorted(sorted_key, key, /*right=*/true) - ops::SearchSorted(sorted_key, key);
  // Discordant pairs: inversions of rank_y within each column in (x, y)
  // order; the sorted element k is row k − col·n of column col, as before.
  Expr v = ops::Take(ry.rank, ops::Argsort(key, 0));
  Expr pos_f = F64(c.pos);
  Expr far = ops::FullLike(v, kFarKey, DType::kInt64);
  Expr zero = ops::FullLike(v, 0.0, DType::kInt64);
  Expr discordant;
  for (int level = 0; level < kLevels; ++level) {
    const double h = std::ldexp(1.0, level);
    Expr parent = I64(pos_f / (2.0 * h));
    Expr left = I64(pos_f / h) - parent * 2 == 0;
    Expr parents = I64(ops::Maximum(n_f - 1.0, ops::Scalar(n_f, 0.0)) / (2.0 * h)) + 1;  // per column
    Expr base = (c.col * parents + parent) * c.n_i;
    Expr sorted_left = ops::SortValues(ops::Where(left, base + v, far), 0);
    Expr above = ops::SearchSorted(sorted_left, base + (c.n_i - 1), /*right=*/true) -
                 ops::SearchSorted(sorted_left, base + v, /*right=*/true);
    Expr count = c.PerColumn(ops::Where(left, zero, above));
    discordant = discordant.valid() ? discordant + count : count;
  }
  TieStats tx = Ties(rx.ties, c), ty = Ties(ry.ties, c), txy = Ties(ties_xy, c);
  Expr n = n_f;
  Expr n0 = n * (n - 1.0) / 2.0;
  Expr untied = n0 - tx.pairs - ty.pairs + txy.pairs;  // C + D
  Expr con_min_dis = untied - 2.0 * discordant;        // C − D
  Expr tau;
  if (variant == "a") {
    tau = con_min_dis / untied;
  } else if (variant == "b") {
    tau = con_min_dis / ops::Sqrt((n0 - tx.pairs) * (n0 - ty.pairs));
  } else {
    // Distinct values per column: the first element of every tie group.
    auto distinct = [&](const ColumnRanks& r) {
      return c.PerColumn(ops::SearchSorted(r.sorted_key, r.sorted_key) == gpos);
    };
    Expr m = ops::Minimum(distinct(rx), distinct(ry));
    tau = 2.0 * con_min_dis / ((m - 1.0) / m * n * n);
  }
  KendallResult r;
  r.tau = ops::Clamp(tau, -1.0, 1.0);
  if (alternative.has_value()) {
    Expr base = n * (n - 1.0) * (2.0 * n + 5.0);
    Expr t;
    if (variant == "a") {
      t = 3.0 * con_min_dis / ops::Sqrt(base / 2.0);
    } else {
      Expr m = n * (n - 1.0);
      Expr var = (base - tx.p2 - ty.p2) / 18.0 + 2.0 * tx.pairs * ty.pairs / m + tx.p1 * ty.p1 / (9.0 * m * (n - 2.0));
      t = con_min_dis / ops::Sqrt(var);
    }
    if (*alternative == "two-sided") t = ops::Abs(t);
    if (*alternative != "less") t = -t;
    Expr p = NormalCdf(t);
    r.p_value = *alternative == "two-sided" ? 2.0 * p : p;
  }
  return r;
}

absl::StatusOr<dsl::Metric> BuildKendall(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::string variant, args.GetEnum("variant", {"a", "b", "c"}, "b"));
  TALLY_ASSIGN_OR_RETURN(bool t_test, args.GetBool("t_test", false));
  // TorchMetrics reads `alternative` only under t_test (default two-sided;
  // None is then an error).
  TALLY_ASSIGN_OR_RETURN(std::optional<std::string> alternative, args.GetOptionalString("alternative"));
  if (!args.Has("alternative")) alternative = "two-sided";
  if (!t_test) {
    alternative.reset();
  } else if (!alternative.has_value()) {
    return args.InvalidArgument("alternative is required when t_test=true, got none");
  } else if (*alternative != "two-sided" && *alternative != "less" && *alternative != "greater") {
    return args.InvalidArgument(
        absl::StrCat("alternative must be one of two-sided, less or greater, got ", *alternative));
  }

  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in, /*max_rank=*/2)) return b.status();
  Expr preds = in.preds, target = in.target;
  const dsl::InputSpec* ps = b.FindInput("preds");
  const dsl::InputSpec* ts = b.FindInput("target");
  const int64_t rank = in.rank();
  const bool one_dim = rank == 1;
  const int64_t d = one_dim ? 1 : ps->shape[1];
  auto row_dtype = [](const dsl::InputSpec* s) {
    return s->dtype == DType::kFloat32 ? DType::kFloat32 : DType::kFloat64;
  };
  State preds_rows = b.AddState("preds", row_dtype(ps), {d}, Reducer::kCat);
  State target_rows = b.AddState("target", row_dtype(ts), {d}, Reducer::kCat);
  auto columns = [&](Expr x, DType dtype) {
    Expr c = ops::Cast(x, dtype);
    return one_dim ? ops::Unsqueeze(c, 1) : c;
  };
  b.Accumulate(preds_rows, columns(preds, row_dtype(ps)));
  b.Accumulate(target_rows, columns(target, row_dtype(ts)));

  KendallResult r = Kendall(b.Read(preds_rows), b.Read(target_rows), d, variant, alternative);
  // TorchMetrics squeezes a single output to a scalar.
  auto shaped = [&](Expr x) { return d == 1 ? ops::Squeeze(x, 0) : x; };
  if (alternative.has_value()) {
    b.Output(dsl::Parts{shaped(r.tau), shaped(r.p_value)});
  } else {
    b.Output(shaped(r.tau));
  }
  return b.Finish();
}

}  // namespace

void RegisterRegressionKendallMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"kendall_rank_corrcoef", "regression", {"preds", "target"}, BuildKendall});
}

}  // namespace tally::metrics
