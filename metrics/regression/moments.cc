#include "metrics/regression/moments.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/attrs.h"

namespace tally::metrics {

using ir::DType;
using ir::Reducer;
using ops::Expr;

MomentGroup::MomentGroup(dsl::MetricBuilder& b, std::string group, int64_t d, Expr rows)
    : b_(b), group_(std::move(group)), d_(d) {
  n_ = b_.AddState("n", rows.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kInt64, {}, Reducer::kCustom, 0,
                   group_);
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
  p.c = b_.AddState(absl::StrCat("c_", vars_[a].name, "_", vars_[b].name), DType::kFloat64, {d_}, Reducer::kCustom, 0,
                    group_);
  b_.Accumulate(p.c, batch);
  pairs_.push_back(p);
  return static_cast<int>(pairs_.size()) - 1;
}

void MomentGroup::Finish() {
  // One composite node: the pairwise formulas (its decomposition,
  // ops/decompositions.cc) or, on CPU, one fused kernel for the whole group.
  std::vector<Expr> states;
  for (bool a : {true, false}) {
    auto read = [&](const dsl::State& s) { return a ? b_.MergeA(s) : b_.MergeB(s); };
    states.push_back(read(n_));
    for (const Variable& v : vars_) {
      states.push_back(read(v.mean));
      states.push_back(read(v.mean_lo));
      states.push_back(read(v.m2));
    }
    for (const Pair& p : pairs_) states.push_back(read(p.c));
  }
  ops::MomentsMergeAttrs attrs{static_cast<int64_t>(vars_.size())};
  if (!pairs_.empty()) {
    std::vector<int64_t> pairs;
    for (const Pair& p : pairs_) {
      pairs.push_back(p.a);
      pairs.push_back(p.b);
    }
    attrs.pairs = pairs;
  }
  std::vector<Expr> merged = b_.OpN(ops::OpId::kMomentsMerge, states, ops::ToAttrMap(attrs));
  if (!b_.ok()) return;
  if (merged.size() != states.size() / 2) {
    b_.Fail(absl::InternalError(absl::StrCat("moments_merge gave ", merged.size(), " results")));
    return;
  }
  size_t k = 0;
  b_.SetMerged(n_, merged[k++]);
  for (const Variable& v : vars_) {
    b_.SetMerged(v.mean, merged[k++]);
    b_.SetMerged(v.mean_lo, merged[k++]);
    b_.SetMerged(v.m2, merged[k++]);
  }
  for (const Pair& p : pairs_) b_.SetMerged(p.c, merged[k++]);
}

Expr MomentGroup::Count() { return ops::Cast(b_.Read(n_), DType::kFloat64); }
Expr MomentGroup::Mean(int v) { return b_.Read(vars_[v].mean) + b_.Read(vars_[v].mean_lo); }
Expr MomentGroup::MeanDifference(int a, int b) {
  return (b_.Read(vars_[a].mean) - b_.Read(vars_[b].mean)) + (b_.Read(vars_[a].mean_lo) - b_.Read(vars_[b].mean_lo));
}
Expr MomentGroup::M2(int v) { return b_.Read(vars_[v].m2); }
Expr MomentGroup::CoMoment(int pair) { return b_.Read(pairs_[pair].c); }

}  // namespace tally::metrics
