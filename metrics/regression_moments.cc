#include "metrics/regression_moments.h"

#include "absl/strings/str_cat.h"

namespace tally::metrics {

using dsl::Expr;
using ir::DType;
using ir::Reducer;

MomentGroup::MomentGroup(dsl::MetricBuilder& b, std::string group, int64_t d, Expr rows)
    : b_(b), group_(std::move(group)), d_(d) {
  n_ = b_.AddState("n", DType::kInt64, {}, Reducer::kCustom, 0, group_);
  b_.Accumulate(n_, rows);
}

int MomentGroup::AddVariable(const std::string& name, const BatchMoments& batch) {
  Variable v;
  v.name = name;
  v.mean = b_.AddState(absl::StrCat("mean_", name), DType::kFloat64, {d_}, Reducer::kCustom, 0, group_);
  v.mean_lo = b_.AddState(absl::StrCat("mean_lo_", name), DType::kFloat64, {d_}, Reducer::kCustom, 0, group_);
  v.m2 = b_.AddState(absl::StrCat("m2_", name), DType::kFloat64, {d_}, Reducer::kCustom, 0, group_);
  b_.Accumulate(v.mean, batch.hi);
  b_.Accumulate(v.mean_lo, batch.lo);
  b_.Accumulate(v.m2, batch.m2);
  vars_.push_back(v);
  return static_cast<int>(vars_.size()) - 1;
}

int MomentGroup::AddCoMoment(int a, int b, Expr batch) {
  Pair p{a, b, {}};
  p.c = b_.AddState(absl::StrCat("c_", vars_[a].name, "_", vars_[b].name), DType::kFloat64, {d_},
                    Reducer::kCustom, 0, group_);
  b_.Accumulate(p.c, batch);
  pairs_.push_back(p);
  return static_cast<int>(pairs_.size()) - 1;
}

void MomentGroup::Finish() {
  Expr na = b_.MergeA(n_), nb = b_.MergeB(n_);
  b_.SetMerged(n_, na + nb);
  Expr fa = dsl::Cast(na, DType::kFloat64), fb = dsl::Cast(nb, DType::kFloat64);
  Expr total = fa + fb;
  Expr a_empty = na == 0.0, b_empty = nb == 0.0;
  Expr either_empty = a_empty || b_empty;
  // Weights of the pairwise update; both are 0 when the merged count is 0.
  Expr w_mean = dsl::SafeDiv(fb, total);
  Expr w_moment = dsl::SafeDiv(fa * fb, total);
  std::vector<Expr> delta;
  for (const Variable& v : vars_) {
    Expr ha = b_.MergeA(v.mean), hb = b_.MergeB(v.mean);
    Expr la = b_.MergeA(v.mean_lo), lb = b_.MergeB(v.mean_lo);
    Expr d = (hb - ha) + (lb - la);
    delta.push_back(d);
    // (ha + la) + δ·w as two doubles: s = ha + t rounded, e its exact error
    // (TwoSum, valid whatever the magnitudes).
    Expr t = la + d * w_mean;
    Expr s = ha + t;
    Expr t_part = s - ha;
    Expr e = (ha - (s - t_part)) + (t - t_part);
    b_.SetMerged(v.mean, dsl::Where(b_empty, ha, dsl::Where(a_empty, hb, s)));
    b_.SetMerged(v.mean_lo, dsl::Where(b_empty, la, dsl::Where(a_empty, lb, e)));
    Expr extra = dsl::Where(either_empty, 0.0, d * d * w_moment);
    b_.SetMerged(v.m2, b_.MergeA(v.m2) + b_.MergeB(v.m2) + extra);
  }
  for (const Pair& p : pairs_) {
    Expr extra = dsl::Where(either_empty, 0.0, delta[p.a] * delta[p.b] * w_moment);
    b_.SetMerged(p.c, b_.MergeA(p.c) + b_.MergeB(p.c) + extra);
  }
}

Expr MomentGroup::Count() { return dsl::Cast(b_.Read(n_), DType::kFloat64); }
Expr MomentGroup::Mean(int v) { return b_.Read(vars_[v].mean) + b_.Read(vars_[v].mean_lo); }
Expr MomentGroup::MeanDifference(int a, int b) {
  return (b_.Read(vars_[a].mean) - b_.Read(vars_[b].mean)) + (b_.Read(vars_[a].mean_lo) - b_.Read(vars_[b].mean_lo));
}
Expr MomentGroup::M2(int v) { return b_.Read(vars_[v].m2); }
Expr MomentGroup::CoMoment(int pair) { return b_.Read(pairs_[pair].c); }

}  // namespace tally::metrics
