// Ops that read device values on the host or whose result shape depends on
// values: bincount, masked_select, nonzero, assert_zero, and the host
// algorithms of finalize (expected_mutual_info, max_assignment). They exist so that code written
// the familiar PyTorch way can be expressed, and so that remove-host-syncs
// can rewrite them into sync-free forms; none may remain in an update plan.
#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::Dim;
using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

// HostRead is an op the host reads, with a fixed result shape.
OpDef HostRead(OpId id, int arity, std::vector<AttrSpec> attrs, InferFn infer) {
  OpDef d = MakeOp(id, arity, arity, std::move(attrs), std::move(infer));
  d.traits.syncs_host = true;
  return d;
}

// Syncing is an op the host reads to know its result's shape.
OpDef Syncing(OpId id, int arity, std::vector<AttrSpec> attrs, InferFn infer) {
  OpDef d = HostRead(id, arity, std::move(attrs), std::move(infer));
  d.traits.data_dependent_shape = true;
  return d;
}

}  // namespace

void RegisterSyncOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  // bincount(x) {minlength}: torch's output has max(minlength, max(x) + 1)
  // elements, known only after reading x; the IR types it i64[minlength] (the
  // declared size) and checked execution catches a larger result.
  add(Syncing(OpId::kBincount, 1, SpecsOf<BincountAttrs>(),
              [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                if (!ir::IsIntegral(in[0].dtype) || in[0].rank() != 1) {
                  return absl::InvalidArgumentError("expects a rank-1 integer input");
                }
                const int64_t k = AttrsOf<BincountAttrs>(a).minlength;
                return std::vector<TensorType>{{DType::kInt64, {Dim::Fixed(k)}, in[0].device}};
              }));
  // masked_select(x, mask): the elements where mask is true, i.e. x[mask].
  add(Syncing(OpId::kMaskedSelect, 2, {},
              [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                if (in[1].dtype != DType::kBool) return absl::InvalidArgumentError("mask must be i1");
                TALLY_RETURN_IF_ERROR(BroadcastShapes(in[0].shape, in[1].shape).status());
                return std::vector<TensorType>{{in[0].dtype, {Dim::Symbol("M")}, in[0].device}};
              }));
  // nonzero(x): i64[M, rank] indices of the non-zero elements.
  add(Syncing(
      OpId::kNonzero, 1, {}, [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
        return std::vector<TensorType>{{DType::kInt64, {Dim::Symbol("M"), Dim::Fixed(in[0].rank())}, in[0].device}};
      }));
  // assert_zero(count, value) {message, whole_state}: `value`, once the host
  // has read `count` and found it 0; otherwise an error with the message
  // ("{n}" stands for the count). The finalize form of a deferred check.
  // whole_state=true marks a condition only the whole state can tell (a
  // query without positives) rather than a bad input value, so that a
  // per-request validation (Program::CheckValues) can tell the two apart.
  // On `meta` the count has no value and the check is skipped.
  add(HostRead(OpId::kAssertZero, 2, SpecsOf<AssertZeroAttrs>(),
               [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                 if (in[0].dtype != DType::kInt64 || in[0].rank() != 0) {
                   return absl::InvalidArgumentError("count must be i64[]");
                 }
                 return std::vector<TensorType>{in[1]};
               }));
  // Host algorithms of finalize (fixed shapes; the host reads every value).
  // expected_mutual_info(rows, cols): f64[], ops/fused/expected_mutual_info.h.
  add(HostRead(OpId::kExpectedMutualInfo, 2, {},
               [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                 for (const TensorType& t : in) {
                   if (t.rank() != 1 || t.dtype == DType::kBool) {
                     return absl::InvalidArgumentError("expects rank-1 numeric row and column sums");
                   }
                 }
                 return std::vector<TensorType>{{DType::kFloat64, {}, in[0].device}};
               }));
  // max_assignment(table): i64[], ops/fused/max_assignment.h.
  add(HostRead(OpId::kMaxAssignment, 1, {},
               [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                 if (!ir::IsIntegral(in[0].dtype) || in[0].rank() != 2) {
                   return absl::InvalidArgumentError("expects a rank-2 integer table");
                 }
                 return std::vector<TensorType>{{DType::kInt64, {}, in[0].device}};
               }));
}

}  // namespace tally::ops
