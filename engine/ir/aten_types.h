// Conversions between IR types and ATen's dtypes and devices.
#ifndef TALLY_ENGINE_IR_ATEN_TYPES_H_
#define TALLY_ENGINE_IR_ATEN_TYPES_H_

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "absl/status/statusor.h"
#include "engine/ir/types.h"

namespace tally::ir {

// ToScalarType maps an IR dtype to ATen's.
c10::ScalarType ToScalarType(DType d);
// FromScalarType maps an ATen dtype to the IR's; others are InvalidArgument.
absl::StatusOr<DType> FromScalarType(c10::ScalarType s);
// ToDevice maps an IR device to c10::Device (constructible without the hardware).
absl::StatusOr<c10::Device> ToDevice(const Device& d);
// FromDevice prints a c10::Device the IR way ("cpu", "cuda:1").
Device FromDevice(const c10::Device& d);

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_ATEN_TYPES_H_
