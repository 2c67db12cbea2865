#include "metrics/catalogue.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/ir/types.h"
#include "metrics/classification/stats.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "metrics/weights.h"

namespace tally::metrics {
namespace {

constexpr int64_t kRows = 8;
constexpr int64_t kClasses = 4;  // also the placeholder for required ints

// The input forms a builder may expect: binary, multiclass, multilabel,
// regression, multi-output regression.
std::vector<dsl::Signature> CandidateSignatures(const std::vector<std::string>& inputs) {
  using ir::DType;
  struct Form {
    DType preds, target;
    std::vector<int64_t> preds_shape, target_shape;
  };
  const Form forms[] = {
      {DType::kFloat32, DType::kInt64, {kRows}, {kRows}},
      {DType::kFloat32, DType::kInt64, {kRows, kClasses}, {kRows}},
      {DType::kFloat32, DType::kInt64, {kRows, kClasses}, {kRows, kClasses}},
      {DType::kFloat32, DType::kFloat32, {kRows}, {kRows}},
      {DType::kFloat32, DType::kFloat32, {kRows, 3}, {kRows, 3}},
  };
  std::vector<dsl::Signature> out;
  for (const Form& f : forms) {
    dsl::Signature sig;
    for (const std::string& name : inputs) {
      if (name == "preds") {
        sig.push_back({name, f.preds, f.preds_shape});
      } else if (name == "target") {
        sig.push_back({name, f.target, f.target_shape});
      } else if (name == "indexes" || name == kGroupsInput) {
        sig.push_back({name, DType::kInt64, {kRows}});
      } else {
        sig.push_back({name, DType::kFloat32, {kRows}});
      }
    }
    out.push_back(sig);
    // Without the optional weight too: some forms take none (exact curves).
    auto w = std::find_if(sig.begin(), sig.end(), [](const dsl::InputSpec& in) { return in.name == kWeightInput; });
    if (w != sig.end() && inputs.size() > 1) {
      sig.erase(w);
      out.push_back(std::move(sig));
    }
  }
  return out;
}

// A value of `type` that lets the builder go past a required argument.
ArgValue Placeholder(absl::string_view type) {
  if (absl::StartsWith(type, "one of ")) {
    std::vector<std::string> choices = absl::StrSplit(type.substr(7), ", ");
    return choices.front();
  }
  if (type == "float") return 0.5;
  if (type == "bool") return false;
  if (type == "string") return std::string("x");
  if (type == "int list") return std::vector<int64_t>{1};
  if (type == "float list") return std::vector<double>{0.5};
  return int64_t{kClasses};
}

// The name in "...missing required argument 'NAME'...", or "".
std::string MissingArgument(absl::string_view message) {
  constexpr absl::string_view kMarker = "missing required argument '";
  size_t at = message.find(kMarker);
  if (at == absl::string_view::npos) return "";
  absl::string_view rest = message.substr(at + kMarker.size());
  return std::string(rest.substr(0, rest.find('\'')));
}

// Builds `info` for `sig`, filling in required arguments as they are asked
// for, and adds what it read to `found` (first description wins).
void Record(const MetricInfo& info, const dsl::Signature& sig, std::vector<ArgumentDoc>& found) {
  MetricSpec spec;
  spec.name = info.name;
  for (int attempt = 0; attempt < 16; ++attempt) {
    SpecArgs args(spec);
    absl::StatusOr<dsl::Metric> built = info.build(args, sig, ir::Device{"meta"});
    // The message, not the requests, names the missing argument: a task
    // wrapper's own task metric asks for it on a SpecArgs of its own.
    const std::string missing = built.ok() ? "" : MissingArgument(built.status().message());
    std::string type;
    for (const SpecArgs::Request& r : args.requests()) {
      const bool required = r.required || r.name == missing;
      if (r.name == missing) type = r.type;
      auto d = std::find_if(found.begin(), found.end(), [&](const ArgumentDoc& a) { return a.name == r.name; });
      if (d == found.end()) {
        found.push_back({r.name, r.type, r.default_text, required});
      } else {
        d->required = d->required || required;
      }
    }
    // Done, or the placeholder was refused: stop here.
    if (missing.empty() || args.Has(missing)) return;
    spec.args.emplace_back(missing, Placeholder(type));
  }
}

}  // namespace

std::vector<MetricDoc> DescribeMetrics() {
  std::vector<MetricDoc> out;
  for (const MetricInfo& info : AllMetrics()) {
    MetricDoc doc{info.name, info.domain, info.inputs, {}};
    for (const dsl::Signature& sig : CandidateSignatures(info.inputs)) Record(info, sig, doc.arguments);
    for (ArgumentDoc& a : doc.arguments) {
      if (a.required) a.default_text.clear();
    }
    out.push_back(std::move(doc));
  }
  return out;
}

std::string CatalogueMarkdown(const std::vector<MetricDoc>& docs) {
  std::map<std::string, std::vector<const MetricDoc*>> by_domain;
  for (const MetricDoc& d : docs) by_domain[d.domain].push_back(&d);
  std::string out =
      "# Metric catalogue\n\n"
      "Every metric `tally` knows, with its inputs and arguments (TorchMetrics' functional\n"
      "names and defaults). Generated from the registry by\n"
      "`tally list-metrics --format markdown > docs/metrics.md`; a test checks that this file\n"
      "is what the command prints.\n\n"
      "An argument without a default is required. `none` is written as `none`.\n\n"
      "The clustering and nominal metrics declare the label ranges TorchMetrics infers:\n"
      "`num_classes` (the ids in `target`) and `num_clusters` (the ids in `preds`; `none`\n"
      "means num_classes), or `num_clusters` for the scores of `data` points and their\n"
      "`labels` ([docs/metric_library.md](metric_library.md)). The text error rates take\n"
      "`preds` and `target` as integer token ids [N, L], a negative id being padding\n"
      "(`tally eval` also reads them from `.txt` files). The audio metrics take waveforms\n"
      "whose dim 0 is the batch: [N, ..., time]. The segmentation metrics take masks: class\n"
      "ids [N, ...] (`input_format=index`) or 0/1 channels [N, num_classes, ...]; the image\n"
      "metrics images [N, C, H, W] (`img` for total variation); the Fréchet distance\n"
      "features [N, D] (`real_features` and `fake_features`, or `features` and a bool `real`).\n\n"
      "`weight` is optional: one float per row, scikit-learn's `sample_weight` (row i counts\n"
      "as w_i rows; weights must be finite and >= 0, and 0 drops the row). A collection\n"
      "weights every metric or none. The weighted classification metrics take the global\n"
      "forms (not `top_k > 1`, not `multidim_average=samplewise`). The curves (AUROC, AP,\n"
      "ROC and PR curves, the operating points; binary, multiclass and multilabel) take\n"
      "weights in every form: binned and `exact16` sum them, the exact form keeps each row's\n"
      "weight beside it, and a zero-weight row is no point of a curve (as scikit-learn drops\n"
      "it); only the exact partial AUC (`max_fpr`) refuses a weight. R² and explained\n"
      "variance are scikit-learn's weighted forms (weighted centred moments; adjusted R²\n"
      "counts rows). Pearson, concordance and Spearman are unweighted (as in scikit-learn).\n"
      "The retrieval metrics weigh each query by the mean of its rows' weights (scikit-learn's\n"
      "`ndcg_score` takes one weight per query: give every row of a query its weight) and\n"
      "return the weighted mean of the queries' scores (`aggregation=mean` only); the\n"
      "retrieval curves are unweighted.\n\n"
      "`groups` is one integer id per row in [0, num_groups). Every metric takes `num_groups=G`\n"
      "(slices): its value is then one per group, stacked on a leading [G] axis (a list of\n"
      "per-group results where a result's length depends on the data), each the metric on\n"
      "that group's rows alone (a group without rows gives the value of no rows), and\n"
      "`overall=true` makes it (per group, over every row). Every metric also takes\n"
      "`num_bootstraps=B` (TorchMetrics' `BootStrapper`): `seed=0`, `mean=true`, `std=true`,\n"
      "`quantile=none` (a float or a list), `raw=false`, `sampling_strategy=poisson`; the value\n"
      "is the tuple of the outputs asked for, in that order. Row i counts in replica b a\n"
      "Poisson(1) number of times drawn from (seed, its `row_id`, b): `row_id` is an optional\n"
      "int64 input, by default the row's position in the whole input, so the intervals are the\n"
      "same for any batch size, shard or merge order. Both together give each group's intervals\n"
      "(mean [G], std [G], quantiles [G, Q]; each group's own bootstrap). R², explained\n"
      "variance, Pearson and concordance slice into each group's own two-pass moments, the exact\n"
      "curves and rank correlations keep each row's group beside it, and the task wrappers\n"
      "(`accuracy(task=...)`) slice as their task metric; running max/min keep each group's\n"
      "own extreme (a bootstrap refuses them). The multilabel ranking metrics refuse\n"
      "`num_groups`. R², explained variance, Pearson, concordance and\n"
      "relative squared error bootstrap their moments around the batch's mean (each replica's\n"
      "moments hold around any shift; unweighted only). Metrics that keep every row (exact\n"
      "curves, rank correlations, retrieval) or return a tuple refuse `num_bootstraps` (use\n"
      "`thresholds=` or `exact16` for the curves). The fairness metrics (TorchMetrics' `binary_groups_stat_rates`,\n"
      "`demographic_parity`, `equal_opportunity`, `binary_fairness`) require `num_groups`: rates\n"
      "are [num_groups, 4] (tp, fp, tn, fn rates; NaN for a group without rows); parity and\n"
      "opportunity are (ratio, low group, high group), TorchMetrics' `DP_low_high` key.\n";
  for (const auto& [domain, metrics] : by_domain) {
    absl::StrAppend(&out, "\n## ", domain, "\n\n| metric | inputs | arguments |\n|---|---|---|\n");
    for (const MetricDoc* m : metrics) {
      std::vector<std::string> args;
      for (const ArgumentDoc& a : m->arguments) {
        // `name=default`, or `name` when it is required or its default depends
        // on other arguments (a task wrapper passes it on).
        std::string text = absl::StrCat("`", a.name, a.default_text.empty() ? "" : "=", a.default_text, "`");
        if (!a.type.empty())
          absl::StrAppend(&text, " (", a.type, a.required ? ", required" : "", ")");
        else if (a.required)
          absl::StrAppend(&text, " (required)");
        args.push_back(std::move(text));
      }
      absl::StrAppend(&out, "| `", m->name, "` | ", absl::StrJoin(m->inputs, ", "), " | ",
                      args.empty() ? "—" : absl::StrJoin(args, "; "), " |\n");
    }
  }
  return out;
}

}  // namespace tally::metrics
