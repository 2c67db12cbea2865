#include "engine/ir/aten_types.h"

#include "absl/strings/str_cat.h"
#include "support/torch_status.h"

namespace tally::ir {

c10::ScalarType ToScalarType(ir::DType d) {
  switch (d) {
    case ir::DType::kBool:
      return c10::kBool;
    case ir::DType::kInt32:
      return c10::kInt;
    case ir::DType::kInt64:
      return c10::kLong;
    case ir::DType::kFloat32:
      return c10::kFloat;
    case ir::DType::kFloat64:
      return c10::kDouble;
    case ir::DType::kFloat16:
      return c10::kHalf;
    case ir::DType::kBFloat16:
      return c10::kBFloat16;
  }
  return c10::kFloat;
}

absl::StatusOr<ir::DType> FromScalarType(c10::ScalarType s) {
  switch (s) {
    case c10::kBool:
      return ir::DType::kBool;
    case c10::kInt:
      return ir::DType::kInt32;
    case c10::kLong:
      return ir::DType::kInt64;
    case c10::kFloat:
      return ir::DType::kFloat32;
    case c10::kDouble:
      return ir::DType::kFloat64;
    case c10::kHalf:
      return ir::DType::kFloat16;
    case c10::kBFloat16:
      return ir::DType::kBFloat16;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("unsupported dtype ", c10::toString(s),
                       " (supported: bool, int32, int64, float16, bfloat16, float32, float64)"));
  }
}

absl::StatusOr<c10::Device> ToDevice(const ir::Device& d) {
  c10::Device out(c10::kCPU);
  TALLY_RETURN_IF_ERROR(support::CatchTorch([&] { out = c10::Device(d.name); }, "device"));
  return out;
}

ir::Device FromDevice(const c10::Device& d) { return ir::Device{d.str()}; }

}  // namespace tally::ir
