// Composite ops: one node standing for a whole fusion group. Each has a
// decomposition into primitive ops (ops/decompositions.h, the ATen reference
// path) and, on the devices in `fused_devices`, a one-pass kernel of Tally's
// (ops/fused/). The `fuse` pass keeps a composite where its kernel exists and
// decomposes it everywhere else.
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/op_registry.h"

namespace tally::ops {
namespace {

using ir::Dim;
using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

}  // namespace

void RegisterCompositeOps(OpTable& t) {
  // mc_confmat(preds, target) {num_classes=C[, ignore_index]}:
  //   preds f32/f64 [N, C] scores (argmax) or i32/i64 [N] labels; target
  //   i32/i64 [N]. Rows whose target is ignore_index are dropped; rows with a
  //   target (or label pred) outside [0, C) are dropped and counted.
  //   -> (confmat i64[C, C] indexed [target][pred], bad_target i64[], bad_preds i64[])
  OpDef d;
  d.name = "mc_confmat";
  d.min_inputs = d.max_inputs = 2;
  d.attrs = {{"num_classes", AttrKind::kInt}, {"ignore_index", AttrKind::kInt, false}};
  d.traits.composite = true;
  d.fused_devices = {"cpu", "meta"};
  d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
    int64_t c = std::get<int64_t>(a.at("num_classes"));
    const TensorType& p = in[0];
    const TensorType& t = in[1];
    if (!ir::IsIntegral(t.dtype) || t.rank() != 1) return absl::InvalidArgumentError("target must be integer [N]");
    bool scores = ir::IsFloating(p.dtype) && p.rank() == 2 && p.shape[1] == Dim::Fixed(c) && p.shape[0] == t.shape[0];
    bool labels = ir::IsIntegral(p.dtype) && p.rank() == 1 && p.shape[0] == t.shape[0];
    if (!scores && !labels) {
      return absl::InvalidArgumentError(absl::StrCat("preds must be float [N, ", c, "] or integer [N], got ", p.ToString()));
    }
    TensorType cm{DType::kInt64, {Dim::Fixed(c), Dim::Fixed(c)}, t.device};
    TensorType count{DType::kInt64, {}, t.device};
    return std::vector<TensorType>{cm, count, count};
  };
  t.emplace(d.name, d);
}

}  // namespace tally::ops
