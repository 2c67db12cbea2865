#include "api/inspect.h"

#include <algorithm>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/evaluate.h"
#include "api/program_graph.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/printer.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/state_budget.h"
#include "metrics/catalogue.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "ops/op_registry.h"
#include "passes/fuse.h"
#include "support/status_macros.h"

namespace tally {

dsl::Signature DefaultSignature(const std::vector<std::string>& specs) {
  const int64_t n = 8;
  std::string domain = "regression";
  int64_t classes = 0, labels = 0;
  bool groups = false, target = true;  // binary inputs: `groups` for slices and fairness
  bool words = false;                  // chrF++'s word ids beside its characters
  bool index_masks = false;            // segmentation's input_format=index
  for (const std::string& s : specs) {
    auto spec = metrics::ParseMetricSpec(s);
    if (!spec.ok()) continue;
    if (spec->name == "chrf_score") {
      words = true;
      for (const auto& [k, v] : spec->args)
        words = words && !(k == "n_word_order" && v == metrics::ArgValue(int64_t{0}));
    }
    const metrics::MetricInfo* info = metrics::FindMetric(spec->name);
    if (info) domain = info->domain == "classification" ? domain : info->domain;
    if (info && info->domain == "fairness") {
      domain = "binary";
      groups = true;
      target = std::find(info->inputs.begin(), info->inputs.end(), "target") != info->inputs.end();
    }
    if (absl::StartsWith(spec->name, "binary_")) domain = "binary";
    if (absl::StartsWith(spec->name, "multiclass_")) domain = "multiclass";
    if (absl::StartsWith(spec->name, "multilabel_")) domain = "multilabel";
    for (const auto& [k, v] : spec->args) {
      if (k == "num_groups") groups = true;
      if (k == "num_classes" && std::holds_alternative<int64_t>(v)) classes = std::get<int64_t>(v);
      if (k == "num_labels" && std::holds_alternative<int64_t>(v)) labels = std::get<int64_t>(v);
      if (k == "input_format" && v == metrics::ArgValue(std::string("index"))) index_masks = true;
      // A task wrapper (accuracy(task=multiclass, ...)) takes its task's inputs.
      if (k == "task" && info && info->domain == "task_wrapper" && std::holds_alternative<std::string>(v)) {
        domain = absl::AsciiStrToLower(std::get<std::string>(v));
      }
    }
  }
  if (domain == "aggregation") return {{"value", ir::DType::kFloat32, {n}}};
  // An ensemble of 4 members per observation.
  if (absl::c_any_of(specs,
                     [](const std::string& s) { return absl::StartsWith(s, "continuous_ranked_probability_score"); })) {
    return {{"preds", ir::DType::kFloat32, {n, 4}}, {"target", ir::DType::kFloat32, {n}}};
  }
  // Cluster or category ids; Fleiss' kappa's counts per category.
  if (domain == "clustering" || domain == "nominal") {
    if (absl::c_any_of(specs, [](const std::string& s) { return absl::StartsWith(s, "fleiss_kappa"); })) {
      return {{"ratings", ir::DType::kInt64, {n, 3}}};
    }
    const metrics::MetricInfo* first =
        specs.empty() ? nullptr : metrics::FindMetric(specs[0].substr(0, specs[0].find('(')));
    if (first != nullptr && first->inputs[0] == "data") {
      return {{"data", ir::DType::kFloat32, {n, 2}}, {"labels", ir::DType::kInt64, {n}}};
    }
    return {{"preds", ir::DType::kInt64, {n}}, {"target", ir::DType::kInt64, {n}}};
  }
  // Logits [N, S, V] and token ids [N, S] for perplexity; token ids [N, L],
  // -1 padding, for the other text metrics.
  if (domain == "text" &&
      absl::c_any_of(specs, [](const std::string& s) { return absl::StartsWith(s, "perplexity"); })) {
    return {{"preds", ir::DType::kFloat32, {n, 16, 1000}}, {"target", ir::DType::kInt64, {n, 16}}};
  }
  if (domain == "text") {
    dsl::Signature sig = {{"preds", ir::DType::kInt64, {n, 16}}, {"target", ir::DType::kInt64, {n, 16}}};
    if (words) {
      sig.push_back({"preds_words", ir::DType::kInt64, {n, 4}});
      sig.push_back({"target_words", ir::DType::kInt64, {n, 4}});
    }
    return sig;
  }
  // Waveforms [N, spk, time]; spectrograms [N, spk, frequency, time, 2]
  // for the complex SI-SNR.
  if (domain == "audio") {
    const bool complex = absl::c_any_of(specs, [](const std::string& s) { return absl::StrContains(s, "complex_"); });
    const std::vector<int64_t> shape =
        complex ? std::vector<int64_t>{n, 2, 257, 100, 2} : std::vector<int64_t>{n, 2, 16000};
    return {{"preds", ir::DType::kFloat32, shape}, {"target", ir::DType::kFloat32, shape}};
  }
  // Masks of 64 x 64: class ids, or one 0/1 channel per class.
  if (domain == "segmentation") {
    const std::vector<int64_t> shape =
        index_masks ? std::vector<int64_t>{n, 64, 64} : std::vector<int64_t>{n, std::max<int64_t>(classes, 1), 64, 64};
    return {{"preds", ir::DType::kInt64, shape}, {"target", ir::DType::kInt64, shape}};
  }
  // RGB images of 64 x 64 (192 x 192 for MS-SSIM's five scales); features
  // [N, 64] of real and generated images.
  if (domain == "image") {
    auto named = [&specs](const char* name) {
      return absl::c_any_of(specs, [name](const std::string& s) { return absl::StartsWith(s, name); });
    };
    if (named("frechet_inception_distance")) {
      return {{"real_features", ir::DType::kFloat32, {n, 64}}, {"fake_features", ir::DType::kFloat32, {n, 64}}};
    }
    const int64_t side = named("multiscale_") ? 192 : 64;
    if (named("total_variation")) return {{"img", ir::DType::kFloat32, {n, 3, side, side}}};
    return {{"preds", ir::DType::kFloat32, {n, 3, side, side}}, {"target", ir::DType::kFloat32, {n, 3, side, side}}};
  }
  // Detections: 100 slots and 20 ground-truth slots an image; panoptic
  // images of 64 x 64; box pairs.
  if (domain == "detection") {
    if (absl::c_any_of(specs, [](const std::string& s) { return absl::StartsWith(s, "mean_average_precision"); })) {
      return {{"boxes", ir::DType::kFloat32, {n, 100, 4}},   {"scores", ir::DType::kFloat32, {n, 100}},
              {"labels", ir::DType::kInt64, {n, 100}},       {"target_boxes", ir::DType::kFloat32, {n, 20, 4}},
              {"target_labels", ir::DType::kInt64, {n, 20}}, {"target_iscrowd", ir::DType::kInt64, {n, 20}},
              {"target_area", ir::DType::kFloat32, {n, 20}}};
    }
    if (absl::c_any_of(specs, [](const std::string& s) { return absl::StartsWith(s, "panoptic_quality"); })) {
      return {{"preds", ir::DType::kInt64, {n, 64, 64, 2}}, {"target", ir::DType::kInt64, {n, 64, 64, 2}}};
    }
    return {{"preds", ir::DType::kFloat32, {n, 4}}, {"target", ir::DType::kFloat32, {n, 4}}};
  }
  if (domain == "retrieval") {
    return {
        {"preds", ir::DType::kFloat32, {n}}, {"target", ir::DType::kInt64, {n}}, {"indexes", ir::DType::kInt64, {n}}};
  }
  if (domain == "binary") {
    dsl::Signature sig = {{"preds", ir::DType::kFloat32, {n}}};
    if (target) sig.push_back({"target", ir::DType::kInt64, {n}});
    if (groups) sig.push_back({"groups", ir::DType::kInt64, {n}});
    return sig;
  }
  if (domain == "multiclass") {
    return {{"preds", ir::DType::kFloat32, {n, std::max<int64_t>(classes, 2)}}, {"target", ir::DType::kInt64, {n}}};
  }
  if (domain == "multilabel") {
    int64_t l = std::max<int64_t>(labels, 2);
    return {{"preds", ir::DType::kFloat32, {n, l}}, {"target", ir::DType::kInt64, {n, l}}};
  }
  return {{"preds", ir::DType::kFloat32, {n}}, {"target", ir::DType::kFloat32, {n}}};
}

absl::StatusOr<std::vector<dsl::CollectionEntry>> BuildEntriesFor(const std::vector<std::string>& specs,
                                                                  const NamedTensors& inputs,
                                                                  const ir::Device& device) {
  dsl::Signature sig;
  if (inputs.empty())
    sig = DefaultSignature(specs);
  else {
    TALLY_ASSIGN_OR_RETURN(sig, SignatureOf(inputs));
  }
  return BuildEntries(specs, sig, device);
}

absl::StatusOr<std::string> Inspect(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                    const InspectOptions& options) {
  if (options.format != "text" && options.format != "torchscript" && options.format != "dot" &&
      options.format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format must be text, torchscript, dot or json, got '", options.format, "'"));
  }
  TALLY_ASSIGN_OR_RETURN(std::vector<dsl::CollectionEntry> entries, BuildEntriesFor(specs, inputs, options.device));
  CompileOptions co;
  co.device = options.device;
  co.dump_after = options.dump_after;
  co.transfer_inputs = options.transfer_inputs;
  TALLY_ASSIGN_OR_RETURN(Compiled c, CompileModule(entries, co));
  const ir::Module& m = *c.module;
  if (options.format == "dot") return ProgramToDot(c, options.device);
  if (options.format == "json") return ProgramToJson(c, options.device);
  if (options.format == "torchscript") {
    // The plans as the TorchScript backend runs them (torch::jit::Graph IR).
    TALLY_ASSIGN_OR_RETURN(std::string graphs, exec::torchscript::LoweredModuleText(m));
    std::string out = absl::StrCat("program on ", options.device.name, " (TorchScript backend)\n\nstates:\n");
    for (const auto& s : m.states) {
      absl::StrAppend(&out, "  @", s.name, " : ", s.type.ToString(), " reducer=", ir::ReducerName(s.reducer), "\n");
    }
    return absl::StrCat(out, "\n", graphs);
  }
  std::string out = absl::StrCat("program on ", options.device.name, "\n\ninputs:\n");
  for (ir::Value* p : m.update->params()) absl::StrAppend(&out, "  %", p->name(), " : ", p->type().ToString(), "\n");
  out += "\nstates:\n";
  for (const auto& s : m.states) {
    // What sizes it: the bytes, and the arguments its dims come from (a
    // binned multiclass curve is C x T, a confusion matrix C x C).
    std::vector<std::string> drivers = SizeDrivers(s, entries);
    std::string size =
        s.reducer == ir::Reducer::kCat ? absl::StrCat(s.Bytes(), " bytes per row") : FormatBytes(s.Bytes());
    if (!drivers.empty()) absl::StrAppend(&size, ", sized by ", absl::StrJoin(drivers, " x "));
    absl::StrAppend(&out, "  @", s.name, " : ", s.type.ToString(), " reducer=", ir::ReducerName(s.reducer),
                    s.group.empty() ? "" : absl::StrCat(" group=", s.group),
                    s.check.empty() ? "" : absl::StrCat(" (deferred check: ", s.check, ")"), "  [", size, "]\n");
  }
  // Memory: fixed-size states cost their bytes once; cat states grow by a row
  // per accumulated input row (buffers double, so up to 2x in capacity).
  int64_t fixed_bytes = m.FixedStateBytes(), row_bytes = 0;
  for (const auto& s : m.states) {
    if (s.reducer == ir::Reducer::kCat) row_bytes += s.Bytes();
  }
  absl::StrAppend(&out, "memory: ", fixed_bytes, " bytes of fixed-size states, ", row_bytes,
                  " bytes per accumulated row", row_bytes ? " (cat buffers double: up to 2x that in capacity)" : "",
                  "\n");
  out += "\npasses:\n";
  for (const auto& r : c.log) {
    std::vector<std::string> counters;
    for (const auto& [k, v] : r.counters) counters.push_back(absl::StrCat(k, "=", v));
    absl::StrAppend(&out, "  ", r.pass, ": ", r.changed ? "changed" : "unchanged",
                    counters.empty() ? "" : absl::StrCat(" (", absl::StrJoin(counters, ", "), ")"), "\n");
    if (!r.dump.empty()) absl::StrAppend(&out, "  // IR after ", r.pass, "\n", r.dump);
  }
  out += "\nfusion groups:\n";
  if (c.fusion_groups.empty()) out += "  (none)\n";
  for (const auto& g : c.fusion_groups) absl::StrAppend(&out, "  ", g, "\n");
  int syncs = 0;
  for (const auto& n : m.update->nodes()) syncs += ops::SyncsHost(*n) ? 1 : 0;
  absl::StrAppend(&out, "\nupdate: ", passes::CountAtenCalls(*m.update), " ATen calls per update (+ ", m.states.size(),
                  " state folds), ", syncs, " host syncs\n");
  int fin_syncs = 0;
  std::string marks;
  for (const auto& n : m.finalize->nodes()) {
    if (!ops::SyncsHost(*n)) continue;
    ++fin_syncs;
    absl::StrAppend(&marks, "  host sync in finalize: ", n->op(), n->loc().empty() ? "" : " (" + n->loc() + ")", "\n");
  }
  int checks = 0;
  for (const auto& s : m.states) checks += s.check.empty() ? 0 : 1;
  absl::StrAppend(&out, "finalize: ", m.finalize->nodes().size(), " nodes, ", fin_syncs, " host syncs\n", marks);
  absl::StrAppend(&out, "compute: reads ", checks, " deferred-check counter", checks == 1 ? "" : "s",
                  " on the host before finalize\n\n");
  out += ir::PrintModule(m);
  if (options.proof) {
    out += "\n" + c.proof.ToString();
  }
  return out;
}

absl::Status ListMetrics(std::ostream& out, absl::string_view format) {
  if (format == "markdown") {
    out << metrics::CatalogueMarkdown(metrics::DescribeMetrics());
    return absl::OkStatus();
  }
  if (format != "text") return absl::InvalidArgumentError("--format must be text or markdown");
  for (const auto& m : metrics::AllMetrics()) {
    out << m.name << "  (" << m.domain << "; inputs: " << absl::StrJoin(m.inputs, ", ") << ")\n";
  }
  return absl::OkStatus();
}

}  // namespace tally
