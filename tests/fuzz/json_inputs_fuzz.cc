#include <vector>

#include "api/tally.h"
#include "engine/dsl/builder.h"
#include "engine/ir/types.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {
namespace {

// What a binary session and a float16 multiclass session fixed.
const std::vector<dsl::Signature>& Signatures() {
  static const auto* sigs = new std::vector<dsl::Signature>{
      {{"preds", ir::DType::kFloat32, {4}}, {"target", ir::DType::kInt64, {4}}},
      {{"preds", ir::DType::kFloat16, {4, 3}},
       {"target", ir::DType::kInt32, {4}},
       {"weight", ir::DType::kFloat64, {4}}},
  };
  return *sigs;
}

}  // namespace

void FuzzJsonInputs(absl::string_view data) {
  absl::StatusOr<NamedTensors> inputs = tally::TensorsFromJson(data);
  if (!inputs.ok()) return;
  for (const dsl::Signature& sig : Signatures()) (void)tally::ConformToSignature(*inputs, sig);
}

}  // namespace tally::fuzz
