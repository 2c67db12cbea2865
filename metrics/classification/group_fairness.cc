// Group fairness: TorchMetrics 1.5's binary_groups_stat_rates,
// demographic_parity, equal_opportunity and binary_fairness, over one state,
// the binary counts of each group (BinaryGroupCounts: i64[G, 5], one scatter
// per update), with the functional argument names and defaults.
//
// Where Tally deliberately differs from TorchMetrics 1.5 (whose functions
// see all their rows at once, while Tally's states are fixed before the
// first row arrives):
//   * `num_groups` is required by all four (TorchMetrics' functions infer it
//     from the rows, as its BinaryFairness class does not).
//   * binary_groups_stat_rates is f64[G, 4], row g the tp, fp, tn, fn rates
//     of group g (TorchMetrics: a dict {"group_i": rates} over the groups
//     present, renumbered); a group without rows is a row of NaN (0/0), as
//     in TorchMetrics' BinaryGroupStatRates class.
//   * demographic_parity and equal_opportunity are the tuple (ratio,
//     low_group, high_group): TorchMetrics' {"DP_low_high": ratio}, with
//     the groups' own ids (TorchMetrics numbers the groups present; the
//     same ids when every group has rows). They compare the groups with
//     rows only; none at all gives (NaN, -1, -1) (TorchMetrics fails).
//     binary_fairness(task=all) is ((DP tuple), (EO tuple)).
//   * Ratios and rates are float64 (TorchMetrics: float32).
#include <cmath>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/classification/stats.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::Parts;
using dsl::State;
using ops::Expr;

enum class Kind { kStatRates, kDemographicParity, kEqualOpportunity, kFairness };

struct Args {
  int64_t num_groups = 0;
  std::string task = "all";  // binary_fairness
  double threshold = 0.5;
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<Args> ReadArgs(Kind kind, SpecArgs& args) {
  Args a;
  TALLY_ASSIGN_OR_RETURN(a.num_groups, args.GetInt("num_groups"));
  if (a.num_groups < 1) return args.InvalidArgument(absl::StrCat("num_groups must be >= 1, got ", a.num_groups));
  if (kind == Kind::kFairness) {
    TALLY_ASSIGN_OR_RETURN(a.task, args.GetEnum("task", {"demographic_parity", "equal_opportunity", "all"}, "all"));
  }
  TALLY_ASSIGN_OR_RETURN(a.threshold, args.GetDouble("threshold", 0.5));
  if (!(a.threshold >= 0 && a.threshold <= 1)) {
    return args.InvalidArgument(absl::StrCat("threshold must be in [0, 1], got ", a.threshold));
  }
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  return a;
}

// GroupCounts are each group's float64 counts, [G] each.
struct GroupCounts {
  Expr tp, fp, tn, fn;
  Expr has_rows;  // bool [G]: any row at all, ignored ones included
};

GroupCounts ReadCounts(MetricBuilder& b, const State& s) {
  Expr c = F64(b.Read(s));
  GroupCounts g{ops::Select(c, 1, 0), ops::Select(c, 1, 1), ops::Select(c, 1, 2), ops::Select(c, 1, 3)};
  g.has_rows = ops::Sum(c, {1}) > 0.0;
  return g;
}

// Disparity is (min rate / max rate, argmin, argmax) over the groups with
// rows (the first group among equal rates), or (NaN, -1, -1) without any.
Parts Disparity(Expr rate, Expr has_rows) {
  Expr low = ops::Argmax(ops::Where(has_rows, -rate, -INFINITY), 0);
  Expr high = ops::Argmax(ops::Where(has_rows, rate, -INFINITY), 0);
  Expr ratio = ops::SafeDiv(ops::Take(rate, low), ops::Take(rate, high));
  Expr any = ops::Any(has_rows);
  return Parts{ops::Where(any, ratio, NAN), ops::Where(any, low, -1.0), ops::Where(any, high, -1.0)};
}

// The positivity rate (tp + fp) / rows and the true positive rate
// tp / (tp + fn), 0 where undefined (TorchMetrics' _safe_divide).
Parts DemographicParity(const GroupCounts& g) {
  return Disparity(ops::SafeDiv(g.tp + g.fp, g.tp + g.fp + g.tn + g.fn), g.has_rows);
}
Parts EqualOpportunity(const GroupCounts& g) { return Disparity(ops::SafeDiv(g.tp, g.tp + g.fn), g.has_rows); }

absl::StatusOr<dsl::Metric> Build(Kind kind, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(kind, args));
  MetricBuilder b(args.metric_name(), sig, device);
  // Demographic parity alone compares predictions only: TorchMetrics gives
  // it a target of zeros (binary_fairness(task=demographic_parity) takes a
  // target all the same, unread; task=all counts against the real one).
  const bool zeros = kind == Kind::kDemographicParity || (kind == Kind::kFairness && a.task == "demographic_parity");
  if (zeros && kind == Kind::kFairness) b.Input("target");
  State s = BinaryGroupCounts(b, a.num_groups, a.threshold, a.ignore_index, /*with_target=*/!zeros);
  if (!b.ok()) return b.status();
  GroupCounts g = ReadCounts(b, s);
  switch (kind) {
    case Kind::kStatRates: {
      // [4, G] -> [G, 4]; each row over its group's kept elements (0/0 = NaN).
      auto row = [](Expr x) { return ops::Unsqueeze(x, 0); };
      Expr counts = ops::Transpose(ops::Concat({row(g.tp), row(g.fp), row(g.tn), row(g.fn)}), 0, 1);
      b.Output(counts / ops::Unsqueeze(g.tp + g.fp + g.tn + g.fn, 1));
      break;
    }
    case Kind::kDemographicParity:
      b.Output(DemographicParity(g));
      break;
    case Kind::kEqualOpportunity:
      b.Output(EqualOpportunity(g));
      break;
    case Kind::kFairness:
      if (a.task == "demographic_parity") {
        b.Output(DemographicParity(g));
      } else if (a.task == "equal_opportunity") {
        b.Output(EqualOpportunity(g));
      } else {
        b.Output(Parts{DemographicParity(g), EqualOpportunity(g)});
      }
      break;
  }
  return b.Finish();
}

}  // namespace

void RegisterGroupFairnessMetrics(std::vector<MetricInfo>& out) {
  out.push_back(
      {"binary_groups_stat_rates", "fairness", {"preds", "target", kGroupsInput}, Bound(Build, Kind::kStatRates)});
  out.push_back({"demographic_parity", "fairness", {"preds", kGroupsInput}, Bound(Build, Kind::kDemographicParity)});
  out.push_back(
      {"equal_opportunity", "fairness", {"preds", "target", kGroupsInput}, Bound(Build, Kind::kEqualOpportunity)});
  out.push_back({"binary_fairness", "fairness", {"preds", "target", kGroupsInput}, Bound(Build, Kind::kFairness)});
}

}  // namespace tally::metrics
