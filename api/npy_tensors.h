// NumPy arrays (engine/io/npy.h) as tensors and back, on the CPU.
#ifndef TALLY_API_NPY_TENSORS_H_
#define TALLY_API_NPY_TENSORS_H_

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "engine/io/npy.h"

namespace tally {

// TensorFromNpy copies an array into a tensor of its dtype (float16 files
// stay float16).
absl::StatusOr<at::Tensor> TensorFromNpy(const io::NpyArray& a);
// NpyFromTensor copies a tensor out (float16 and bfloat16 as float32, the
// former marked float16).
absl::StatusOr<io::NpyArray> NpyFromTensor(const at::Tensor& t);

}  // namespace tally

#endif  // TALLY_API_NPY_TENSORS_H_
