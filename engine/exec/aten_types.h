// Conversions between IR types and ATen's dtypes and devices.
#ifndef TALLY_ENGINE_EXEC_ATEN_TYPES_H_
#define TALLY_ENGINE_EXEC_ATEN_TYPES_H_

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "absl/status/statusor.h"
#include "engine/ir/types.h"

namespace tally::exec {

// ToScalarType maps an IR dtype to ATen's.
c10::ScalarType ToScalarType(ir::DType d);
// FromScalarType maps an ATen dtype to the IR's; others are InvalidArgument.
absl::StatusOr<ir::DType> FromScalarType(c10::ScalarType s);
// ToDevice maps an IR device to c10::Device (constructible without the hardware).
absl::StatusOr<c10::Device> ToDevice(const ir::Device& d);
// FromDevice prints a c10::Device the IR way ("cpu", "cuda:1").
ir::Device FromDevice(const c10::Device& d);

}  // namespace tally::exec

#endif  // TALLY_ENGINE_EXEC_ATEN_TYPES_H_
