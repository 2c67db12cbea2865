#include "api/npy_tensors.h"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>

#include "engine/ir/aten_types.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally {

absl::StatusOr<at::Tensor> TensorFromNpy(const io::NpyArray& a) {
  at::ScalarType s = at::kFloat;
  switch (a.dtype) {
    case io::NpyDType::kBool:
      s = at::kBool;
      break;
    case io::NpyDType::kInt32:
      s = at::kInt;
      break;
    case io::NpyDType::kInt64:
      s = at::kLong;
      break;
    case io::NpyDType::kFloat32:
      s = at::kFloat;
      break;
    case io::NpyDType::kFloat64:
      s = at::kDouble;
      break;
  }
  at::Tensor t;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        t = at::empty(a.shape, at::TensorOptions().dtype(s));
        if (static_cast<size_t>(t.numel() * t.element_size()) != a.data.size()) {
          throw std::runtime_error("array byte count does not match its shape");
        }
        if (!a.data.empty()) std::memcpy(t.data_ptr(), a.data.data(), a.data.size());
        // float16 files stay 16-bit (exactly): metrics widen them, and the
        // exact curves keep a histogram per score code (thresholds=exact16).
        if (a.float16) t = t.to(at::kHalf);
      },
      "npy"));
  return t;
}

absl::StatusOr<io::NpyArray> NpyFromTensor(const at::Tensor& in) {
  io::NpyArray a;
  at::Tensor t = in.to(at::kCPU).contiguous();
  auto dtype = ir::FromScalarType(t.scalar_type());
  if (!dtype.ok()) return dtype.status();
  switch (*dtype) {
    case ir::DType::kBool:
      a.dtype = io::NpyDType::kBool;
      break;
    case ir::DType::kInt32:
      a.dtype = io::NpyDType::kInt32;
      break;
    case ir::DType::kInt64:
      a.dtype = io::NpyDType::kInt64;
      break;
    case ir::DType::kFloat32:
      a.dtype = io::NpyDType::kFloat32;
      break;
    case ir::DType::kFloat64:
      a.dtype = io::NpyDType::kFloat64;
      break;
    case ir::DType::kFloat16:
    case ir::DType::kBFloat16:
      // Written as float32 (exact; NumPy has no bfloat16), marked for float16.
      t = t.to(at::kFloat);
      a.dtype = io::NpyDType::kFloat32;
      a.float16 = *dtype == ir::DType::kFloat16;
      break;
  }
  a.shape.assign(t.sizes().begin(), t.sizes().end());
  a.data.assign(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return a;
}

}  // namespace tally
