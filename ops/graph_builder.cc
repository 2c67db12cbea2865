#include "ops/graph_builder.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ops/attrs.h"
#include "ops/op_registry.h"

namespace tally::ops {

std::string Loc::ToString() const { return file == nullptr ? "" : absl::StrCat(file, ":", line); }

const ir::TensorType& Expr::type() const {
  static const ir::TensorType* invalid = new ir::TensorType();
  return v_ ? v_->type() : *invalid;
}

void GraphBuilder::Fail(const absl::Status& status) {
  if (!status_.ok() || status.ok()) return;
  std::string msg(status.message());
  if (!absl::StartsWith(msg, name_ + ":")) msg = absl::StrCat(name_, ": ", msg);
  status_ = absl::Status(status.code(), msg);
}

Expr GraphBuilder::Constant(ir::Graph* g, double value, DType dtype, Loc loc) {
  return Op(ops::OpId::kConstant, {},
            ops::ToAttrMap(ops::ConstantAttrs::Scalar(value, std::string(ir::DTypeName(dtype)))), loc, g);
}

Expr GraphBuilder::Op(ops::OpId op, std::vector<Expr> inputs, ir::AttrMap attrs, Loc loc, ir::Graph* g) {
  auto outs = OpN(op, std::move(inputs), std::move(attrs), loc, g);
  return outs.empty() ? Expr() : outs[0];
}

std::vector<Expr> GraphBuilder::OpN(ops::OpId op, std::vector<Expr> inputs, ir::AttrMap attrs, Loc loc, ir::Graph* g) {
  if (!ok()) return {};
  std::vector<ir::Value*> values;
  for (const Expr& e : inputs) {
    if (!e.valid()) return {};
    if (g == nullptr) g = e.graph();
    if (e.graph() != g) {
      Fail(absl::InternalError(
          absl::StrCat(ops::OpName(op), ": operands come from different graphs (", loc.ToString(), ")")));
      return {};
    }
    values.push_back(e.value());
  }
  if (g == nullptr) {
    Fail(absl::InternalError(absl::StrCat(ops::OpName(op), ": no graph to build in (", loc.ToString(), ")")));
    return {};
  }
  auto node = ops::Build(*g, op, std::move(values), std::move(attrs), device_, loc.ToString());
  if (!node.ok()) {
    Fail(absl::InternalError(absl::StrCat(node.status().message(), " (", loc.ToString(), ")")));
    return {};
  }
  std::vector<Expr> outs;
  for (ir::Value* v : (*node)->outputs()) outs.emplace_back(this, g, v);
  return outs;
}

}  // namespace tally::ops
