// Matrix ops:
//   matmul(a, b) -> [M, P]: a [M, K] times b [K, P], one floating dtype.
//   trace_sqrt(m) -> f64 []: the real part of the sum of the square roots of
//     the eigenvalues of the square m (tr sqrtm(m) for m = S1 S2, S1 and S2
//     covariance matrices: the Fréchet distance's cross term).
#include "ops/op_registry.h"

namespace tally::ops {

void RegisterLinalgOps(OpTable& t) {
  using ir::TensorType;
  using Types = absl::StatusOr<std::vector<TensorType>>;
  AddOp(t, MakeOp(OpId::kMatmul, 2, 2, {},
                  [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                    const TensorType& a = in[0];
                    const TensorType& b = in[1];
                    if (!ir::IsFloating(a.dtype) || a.dtype != b.dtype || a.rank() != 2 || b.rank() != 2 ||
                        !(a.shape[1] == b.shape[0])) {
                      return absl::InvalidArgumentError("expects floating matrices [M, K] and [K, P]");
                    }
                    return std::vector<TensorType>{{a.dtype, {a.shape[0], b.shape[1]}, a.device}};
                  }));
  AddOp(t, MakeOp(OpId::kTraceSqrt, 1, 1, {},
                  [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                    const TensorType& m = in[0];
                    if (!ir::IsFloating(m.dtype) || m.rank() != 2 || !(m.shape[0] == m.shape[1])) {
                      return absl::InvalidArgumentError("expects a floating square matrix");
                    }
                    return std::vector<TensorType>{{ir::DType::kFloat64, {}, m.device}};
                  }));
}

}  // namespace tally::ops
