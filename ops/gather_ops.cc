// Ops that join and pick elements of tensors whose length may only be known
// at run time (the finalize of exact curves, whose points come out of
// masked_select):
//
//   concat(x0, x1, ...) -> x0 ++ x1 ++ ... along dim 0 (torch.cat(xs, 0)):
//     one dtype, equal trailing dims; the leading dim is the sum of the
//     operands' (fixed sizes add up; symbols join as "M+K+1").
//   take(x[K], idx[...]) -> x[idx], of idx's shape; indices are clamped into
//     [0, K) so that no index ever faults on a device (K must be > 0 unless
//     idx is empty). A gather with a data-dependent index but not a
//     data-dependent shape: sync-free.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::Dim;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

}  // namespace

void RegisterGatherOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  add(MakeOp(
      OpId::kConcat, 1, -1, {}, [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
        const TensorType& first = in[0];
        if (first.rank() < 1) return absl::InvalidArgumentError("expects operands of rank >= 1");
        int64_t fixed = 0;
        std::vector<std::string> symbols;
        for (const TensorType& x : in) {
          if (x.dtype != first.dtype) {
            return absl::InvalidArgumentError(absl::StrCat("operands differ in dtype (", ir::DTypeName(first.dtype),
                                                           " vs ", ir::DTypeName(x.dtype), ")"));
          }
          if (x.rank() != first.rank() || !std::equal(x.shape.begin() + 1, x.shape.end(), first.shape.begin() + 1)) {
            return absl::InvalidArgumentError(
                absl::StrCat("operands differ in their trailing dims (", first.ToString(), " vs ", x.ToString(), ")"));
          }
          if (x.shape[0].is_symbolic())
            symbols.push_back(x.shape[0].symbol);
          else
            fixed += x.shape[0].size;
        }
        TensorType out = first;
        if (symbols.empty()) {
          out.shape[0] = Dim::Fixed(fixed);
        } else {
          if (fixed != 0) symbols.push_back(absl::StrCat(fixed));
          out.shape[0] = Dim::Symbol(absl::StrJoin(symbols, "+"));
        }
        return std::vector<TensorType>{out};
      }));
  add(MakeOp(OpId::kTake, 2, 2, {},
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               if (in[0].rank() != 1) return absl::InvalidArgumentError("expects a rank-1 source");
               if (!ir::IsIntegral(in[1].dtype)) return absl::InvalidArgumentError("expects integer indices");
               TensorType out = in[1];
               out.dtype = in[0].dtype;
               return std::vector<TensorType>{out};
             }));
}

}  // namespace tally::ops
