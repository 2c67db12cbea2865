#include "api/evaluate.h"

#include <ATen/ATen.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/detection_rows.h"
#include "engine/ir/aten_types.h"
#include "engine/ir/attribute.h"
#include "metrics/inputs.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally {
namespace {

// Tree is a result's tree; results made by hand may set only `value`.
ResultTree Tree(const EvalResult& r) {
  return r.result.is_leaf() && !r.result.tensor.defined() ? ResultTree::Leaf(r.value) : r.result;
}

}  // namespace

absl::StatusOr<dsl::Signature> SignatureOf(const NamedTensors& inputs) {
  dsl::Signature sig;
  for (const auto& [name, t] : inputs) {
    auto dtype = ir::FromScalarType(t.scalar_type());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ", dtype.status().message()));
    }
    sig.push_back({name, *dtype, std::vector<int64_t>(t.sizes().begin(), t.sizes().end())});
  }
  return sig;
}

absl::Status CheckInputNamesAndRows(const NamedTensors& inputs) {
  int64_t rows = -1;
  std::string rows_from;
  for (const auto& [name, t] : inputs) {
    if (!metrics::IsInputName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown input name '", name, "' (expected ", metrics::kInputNamesText, ")"));
    }
    if (t.dim() == 0) continue;
    if (rows >= 0 && t.size(0) != rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", name, "' has ", t.size(0), " rows but '", rows_from, "' has ", rows));
    }
    rows = t.size(0);
    rows_from = name;
  }
  return absl::OkStatus();
}

absl::StatusOr<PreparedEval> PrepareProgram(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                            const EvalOptions& options) {
  if (specs.empty()) return absl::InvalidArgumentError("no --metric given");
  if (options.batch_size < 0) return absl::InvalidArgumentError("--batch-size must be positive");
  TALLY_RETURN_IF_ERROR(CheckInputNamesAndRows(inputs));
  PreparedEval prepared;
  TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, SignatureOf(inputs));
  prepared.specs = specs;
  prepared.signature = sig;
  TALLY_ASSIGN_OR_RETURN(prepared.entries, BuildEntries(specs, sig, options.device));
  CompileOptions co;
  co.device = options.device;
  co.checked = options.checked;
  co.transfer_inputs = options.transfer_inputs;
  co.backend = options.backend;
  co.max_state_bytes = options.max_state_bytes;
  TALLY_ASSIGN_OR_RETURN(prepared.program, Compile(prepared.entries, co));
  // An input no metric reads is an error, not ignored: a weight that no
  // metric takes would otherwise give unweighted results without a word.
  const ir::Graph& update = *prepared.program->module().update;
  for (const auto& [name, t] : inputs) {
    if (update.FindParam(name) != nullptr) continue;
    std::vector<std::string> taken;
    for (const ir::Value* p : update.params()) taken.push_back(p->name());
    return absl::InvalidArgumentError(absl::StrCat("input '", name, "' is read by no metric (",
                                                   specs.size() == 1 ? specs[0] + " reads" : "the metrics read", " ",
                                                   absl::StrJoin(taken, ", "), ")"));
  }
  return prepared;
}

absl::StatusOr<PreparedEval> PrepareEval(const std::vector<std::string>& specs, const NamedTensors& given,
                                         const EvalOptions& options) {
  // Detections given one row per box become one row per image.
  NamedTensors inputs = given;
  TALLY_RETURN_IF_ERROR(PadDetectionRows(inputs).status());
  TALLY_ASSIGN_OR_RETURN(PreparedEval prepared, PrepareProgram(specs, inputs, options));
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(options.device));
  for (const auto& [name, t] : inputs) {
    at::Tensor moved = t;
    if (!options.transfer_inputs) {
      // Files are read on the CPU; the CLI places them on --device (the
      // program boundary still checks every batch).
      TALLY_RETURN_IF_ERROR(
          support::CatchTorch([&, &t = t] { moved = t.to(dev); }, absl::StrCat("input '", name, "'")));
    }
    prepared.used.emplace_back(name, moved);
  }
  prepared.rows = 0;
  for (const auto& [name, t] : inputs) {
    if (t.dim() > 0) {
      prepared.rows = t.size(0);
      break;
    }
  }
  return prepared;
}

absl::Status FeedRows(Program& program, const NamedTensors& used, int64_t begin, int64_t end, int64_t batch_size) {
  const int64_t n = std::max<int64_t>(end - begin, 0);
  const int64_t step = batch_size > 0 ? batch_size : std::max<int64_t>(n, 1);
  int64_t start = begin;
  program.SeekRows(begin);  // a row's identity is its position in the whole input
  do {
    int64_t len = std::min(step, end - start);
    NamedTensors batch;
    for (const auto& [name, t] : used)
      batch.emplace_back(name, t.dim() == 0 ? t : t.narrow(0, start, std::max<int64_t>(len, 0)));
    TALLY_RETURN_IF_ERROR(program.Update(batch));
    start += std::max<int64_t>(len, 0);
  } while (start < end);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EvalResult>> CollectResults(const Program& program,
                                                       const std::vector<dsl::CollectionEntry>& entries,
                                                       const std::vector<std::string>& specs) {
  TALLY_ASSIGN_OR_RETURN(NamedTensors values, program.Compute());
  std::vector<EvalResult> results;
  for (size_t i = 0; i < entries.size(); ++i) {
    TALLY_ASSIGN_OR_RETURN(ResultTree tree,
                           CollectMetricResult(values, entries[i].label, entries[i].metric.result_keys));
    at::Tensor tensor = tree.tensor;
    results.push_back({specs[i], std::move(tensor), std::move(tree)});
  }
  return results;
}

absl::StatusOr<std::vector<EvalResult>> Evaluate(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                 const EvalOptions& options) {
  TALLY_ASSIGN_OR_RETURN(PreparedEval p, PrepareEval(specs, inputs, options));
  TALLY_RETURN_IF_ERROR(FeedRows(*p.program, p.used, 0, p.rows, options.batch_size));
  return CollectResults(*p.program, p.entries, specs);
}

std::string ResultsToJson(const std::vector<EvalResult>& results) {
  std::string out = "{\"results\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) out += ", ";
    absl::StrAppend(&out, "{\"metric\": ", JsonString(results[i].spec), ", \"value\": ", ValueToJson(Tree(results[i])),
                    "}");
  }
  return out + "]}";
}

std::string ResultsToTable(const std::vector<EvalResult>& results) {
  size_t width = 6;
  for (const auto& r : results) width = std::max(width, r.spec.size());
  std::string out = absl::StrCat("metric", std::string(width - 6 + 2, ' '), "value\n");
  out += std::string(width + 2 + 5, '-') + "\n";
  for (const auto& r : results) {
    absl::StrAppend(&out, r.spec, std::string(width - r.spec.size() + 2, ' '), ValueToText(Tree(r)), "\n");
  }
  return out;
}

}  // namespace tally
