#include "metrics/replicas.h"

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "metrics/inputs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

bool BuilderRead(const SpecArgs& args, absl::string_view name) {
  const auto& r = args.requests();
  return std::any_of(r.begin(), r.end(), [&](const SpecArgs::Request& q) { return q.name == name; });
}

// The cap keeps the finalize (one copy per replica) and B x G x state sane;
// the memory budget bounds the states themselves.
constexpr int64_t kMaxReplicas = 100000;

absl::Status CheckCount(SpecArgs& args, absl::string_view name, int64_t n) {
  if (n < 1 || n > kMaxReplicas) {
    return args.InvalidArgument(absl::StrCat(name, " must be in [1, ", kMaxReplicas, "], got ", n));
  }
  return absl::OkStatus();
}

absl::StatusOr<dsl::ReplicaSpec> ReadBootstrap(SpecArgs& args, int64_t b) {
  dsl::ReplicaSpec s;
  s.kind = dsl::ReplicaSpec::Kind::kBootstrap;
  s.replicas = b;
  s.key_input = kRowIdInput;
  s.arg_name = "num_bootstraps";
  TALLY_ASSIGN_OR_RETURN(s.seed, args.GetInt("seed", 0));
  TALLY_ASSIGN_OR_RETURN(s.mean, args.GetBool("mean", true));
  TALLY_ASSIGN_OR_RETURN(s.std, args.GetBool("std", true));
  TALLY_ASSIGN_OR_RETURN(s.raw, args.GetBool("raw", false));
  TALLY_RETURN_IF_ERROR(args.GetEnum("sampling_strategy", {"poisson"}, "poisson").status());
  if (const ArgValue* q = args.Find("quantile", "a float or a list of floats", "none")) {
    if (const auto* d = std::get_if<double>(q)) {
      s.quantiles = {*d};
    } else if (const auto* i = std::get_if<int64_t>(q)) {
      s.quantiles = {static_cast<double>(*i)};
    } else if (const auto* l = std::get_if<std::vector<double>>(q)) {
      s.quantiles = *l;
      s.quantile_list = true;
    } else if (const auto* li = std::get_if<std::vector<int64_t>>(q)) {
      s.quantiles.assign(li->begin(), li->end());
      s.quantile_list = true;
    } else if (!std::holds_alternative<std::monostate>(*q)) {
      return args.InvalidArgument("quantile must be a float in [0, 1] or a list of them");
    }
    if (s.quantile_list && s.quantiles.empty()) return args.InvalidArgument("quantile must not be an empty list");
    for (double v : s.quantiles) {
      if (!(v >= 0 && v <= 1)) return args.InvalidArgument(absl::StrCat("quantile must be in [0, 1], got ", v));
    }
  }
  if (!s.mean && !s.std && !s.raw && s.quantiles.empty()) {
    return args.InvalidArgument("num_bootstraps with mean, std and raw false and no quantile has no output");
  }
  return s;
}

}  // namespace

absl::StatusOr<std::vector<dsl::ReplicaSpec>> ReadReplicaArgs(SpecArgs& args) {
  std::vector<dsl::ReplicaSpec> out;
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> b, args.GetOptionalInt("num_bootstraps"));
  if (b) {
    TALLY_RETURN_IF_ERROR(CheckCount(args, "num_bootstraps", *b));
    TALLY_ASSIGN_OR_RETURN(dsl::ReplicaSpec s, ReadBootstrap(args, *b));
    out.push_back(s);
  }
  if (!BuilderRead(args, "num_groups")) {
    TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> g, args.GetOptionalInt("num_groups"));
    if (g) {
      TALLY_RETURN_IF_ERROR(CheckCount(args, "num_groups", *g));
      dsl::ReplicaSpec s;
      s.kind = dsl::ReplicaSpec::Kind::kGroups;
      s.replicas = *g;
      s.key_input = kGroupsInput;
      s.arg_name = "num_groups";
      TALLY_ASSIGN_OR_RETURN(s.overall, args.GetBool("overall", false));
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace tally::metrics
