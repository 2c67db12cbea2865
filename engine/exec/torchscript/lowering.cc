// The lowering driver (graphs, blocks, helpers) and the GraphExecutor-backed
// plan runner. The per-op table is in op_lowerings.cc.
#include "engine/exec/torchscript/lowering.h"

#include <c10/core/InferenceMode.h>
#include <torch/csrc/jit/passes/constant_pooling.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <cctype>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/aten_types.h"
#include "ops/meta_kernels.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::exec::torchscript {

namespace jit = torch::jit;
using jit::Value;

// ---- LowerCtx ----------------------------------------------------------------

Value* LowerCtx::Call(c10::Symbol op, std::vector<jit::NamedValue> args, std::vector<jit::NamedValue> kwargs) {
  return g_.insert(op, args, kwargs);
}

Value* LowerCtx::Const(const c10::IValue& v) { return g_.insertConstant(v); }

Value* LowerCtx::DeviceOf(const ir::Node& n) {
  if (options_.device_source == DeviceSource::kRuntime) return runtime_device_;
  std::string name = n.outputs().empty() ? std::string("cpu") : n.output(0)->type().device.name;
  // A constant made in the top block is visible everywhere after it; one
  // made inside a prim::If branch only there, so that one is not reused.
  auto it = device_constants_.find(name);
  if (it != device_constants_.end()) return it->second;
  Value* v = g_.insertConstant(c10::Device(name));
  if (g_.insertPoint()->owningBlock() == g_.block()) device_constants_[name] = v;
  return v;
}

Value* LowerCtx::As(Value* v, ir::DType from, c10::ScalarType to) {
  if (ir::ToScalarType(from) == to) return v;
  return Call(c10::Symbol::aten("to"), {v, to});
}

std::vector<Value*> LowerCtx::Unpack(Value* v, size_t n) {
  if (v->type()->kind() == c10::TypeKind::ListType) {
    jit::Node* u = g_.insertNode(g_.createListUnpack(v, n));
    return std::vector<Value*>(u->outputs().begin(), u->outputs().end());
  }
  jit::Node* u = g_.insertNode(g_.createTupleUnpack(v));
  return std::vector<Value*>(u->outputs().begin(), u->outputs().end());
}

Value* LowerCtx::If(Value* cond, const std::function<Value*()>& then_fn, const std::function<Value*()>& else_fn) {
  jit::Node* n = g_.insertNode(g_.create(c10::prim::If, {cond}, 1));
  n->output()->setType(c10::TensorType::get());
  for (const auto* fn : {&then_fn, &else_fn}) {
    jit::Block* b = n->addBlock();
    jit::WithInsertPoint guard(b);
    b->registerOutput((*fn)());
  }
  return n->output();
}

// ---- Driver --------------------------------------------------------------------

absl::StatusOr<std::vector<Value*>> LowerInto(jit::Graph& out, const ir::Graph& g, const std::vector<Value*>& params,
                                              Value* runtime_device, const LoweringOptions& options) {
  if (params.size() != g.params().size()) {
    return absl::InternalError(
        absl::StrCat(g.name(), ": ", params.size(), " values for ", g.params().size(), " parameters"));
  }
  if (options.device_source == DeviceSource::kRuntime && runtime_device == nullptr) {
    return absl::InternalError(absl::StrCat(g.name(), ": runtime device source without a device value"));
  }
  LowerCtx ctx(out, runtime_device, options);
  absl::flat_hash_map<const ir::Value*, Value*> env;
  for (size_t i = 0; i < params.size(); ++i) env[g.params()[i]] = params[i];
  for (const auto& node : g.nodes()) {
    const ir::Node& n = *node;
    std::string where = absl::StrCat(g.name(), ": ", n.op(), n.loc().empty() ? "" : absl::StrCat(" at ", n.loc()));
    OpLowering lower = FindOpLowering(n.op());
    if (lower == nullptr) {
      return absl::UnimplementedError(absl::StrCat(where, ": no TorchScript lowering for op '", n.op(), "'"));
    }
    std::vector<Value*> in;
    for (ir::Value* v : n.inputs()) {
      auto it = env.find(v);
      if (it == env.end()) return absl::InternalError(absl::StrCat(where, ": input defined after use"));
      in.push_back(it->second);
    }
    absl::StatusOr<std::vector<Value*>> outs = absl::InternalError("not run");
    try {
      outs = lower(ctx, n, in);
    } catch (const std::exception& e) {
      // Schema-matching errors span several lines; keep them on one.
      std::string msg = absl::StrJoin(absl::StrSplit(e.what(), '\n', absl::SkipWhitespace()), " ");
      if (msg.size() > 400) msg = msg.substr(0, 400) + "...";
      return absl::InternalError(absl::StrCat(where, ": lowering: ", msg));
    }
    if (!outs.ok()) return absl::Status(outs.status().code(), absl::StrCat(where, ": ", outs.status().message()));
    if (outs->size() != n.outputs().size()) {
      return absl::InternalError(
          absl::StrCat(where, ": lowered to ", outs->size(), " values for ", n.outputs().size(), " results"));
    }
    for (size_t i = 0; i < outs->size(); ++i) env[n.output(i)] = (*outs)[i];
  }
  std::vector<Value*> results;
  for (const auto& [label, v] : g.returns()) {
    auto it = env.find(v);
    if (it == env.end()) return absl::InternalError(absl::StrCat(g.name(), ": result '", label, "' is undefined"));
    results.push_back(it->second);
  }
  return results;
}

namespace {

// Identifier spells an IR name as a TorchScript value name.
std::string Identifier(const std::string& name) {
  std::string out;
  for (char ch : name) out.push_back(std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
  return out;
}

void CountIn(const jit::Block* b, int& n) {
  for (const jit::Node* node : b->nodes()) {
    for (const jit::Block* sub : node->blocks()) CountIn(sub, n);
    const c10::Symbol kind = node->kind();
    if (!kind.is_aten() && std::string(kind.ns().toUnqualString()) != "tally") continue;
    bool tensor = false;
    for (const Value* v : node->outputs()) {
      auto k = v->type()->kind();
      tensor |= k == c10::TypeKind::TensorType || k == c10::TypeKind::TupleType || k == c10::TypeKind::ListType;
    }
    n += tensor ? 1 : 0;
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<jit::Graph>> LowerGraph(const ir::Graph& g, const LoweringOptions& options) {
  auto out = std::make_shared<jit::Graph>();
  std::vector<Value*> params;
  for (ir::Value* p : g.params()) {
    params.push_back(out->addInput(Identifier(p->name()))->setType(c10::TensorType::get()));
  }
  Value* device = nullptr;
  if (options.device_source == DeviceSource::kRuntime) {
    if (params.empty()) return absl::InternalError(absl::StrCat(g.name(), ": no input to take the device from"));
    device = out->insert(c10::prim::device, {params[0]});
  }
  TALLY_ASSIGN_OR_RETURN(std::vector<Value*> results, LowerInto(*out, g, params, device, options));
  for (Value* v : results) out->registerOutput(v);
  return out;
}

int CountKernelCalls(const jit::Graph& g) {
  int n = 0;
  CountIn(g.block(), n);
  return n;
}

// ---- The plan runner -------------------------------------------------------------

std::string JitErrorMessage(const char* what) {
  std::string text(what);
  if (!absl::StrContains(text, "TorchScript")) return support::FirstLine(what);
  // The interpreter wraps the original error: "The following operation
  // failed in the TorchScript interpreter. Traceback ... RuntimeError: msg".
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (absl::string_view line : lines) {
    size_t pos = line.find("Error: ");
    if (pos == absl::string_view::npos || line.substr(0, pos).find(' ') != absl::string_view::npos) continue;
    return support::FirstLine(std::string(line.substr(pos + 7)).c_str());
  }
  return support::FirstLine(what);
}

namespace {

bool CallsTallyOps(const jit::Block* b) {
  for (const jit::Node* n : b->nodes()) {
    if (std::string(n->kind().ns().toUnqualString()) == "tally") return true;
    for (const jit::Block* sub : n->blocks())
      if (CallsTallyOps(sub)) return true;
  }
  return false;
}

class TorchScriptPlan : public PlanRunner {
 public:
  static absl::StatusOr<std::unique_ptr<PlanRunner>> Create(const ir::Graph& g) {
    ops::EnsureMetaKernels();  // where/logical_*/abs/... on meta, as the eager kernels have them
    std::unique_ptr<TorchScriptPlan> p(new TorchScriptPlan());
    p->name_ = g.name();
    TALLY_ASSIGN_OR_RETURN(p->graph_, LowerGraph(g, LoweringOptions{}));
    std::string device = "cpu";
    for (const auto& [label, v] : g.returns()) {
      p->return_types_.push_back(v->type());
      device = v->type().device.name;
    }
    for (ir::Value* v : g.params()) device = v->type().device.name;
    // Creation ops with constant arguments become constants once (the eager
    // executor hoists them the same way). Only on the CPU: TorchScript's
    // constant passes read tensor constants on the host (item, equal),
    // which meta tensors refuse.
    if (device == "cpu") {
      TALLY_RETURN_IF_ERROR(support::CatchTorch(
          [&] {
            jit::ConstantPropagation(p->graph_);
            jit::ConstantPooling(p->graph_);
          },
          absl::StrCat(g.name(), ": optimizing the lowered graph")));
    }
    jit::EliminateDeadCode(p->graph_);
    p->kernels_ = CountKernelCalls(*p->graph_);
    // Tally's operators have no Autograd kernel off the CPU; under
    // InferenceMode they run on meta (Meta and CPU kernels are registered;
    // the Autograd key would ask for one of its own).
    p->inference_mode_ = device != "cpu" && CallsTallyOps(p->graph_->block());
    p->executor_ = jit::GraphExecutor(p->graph_, g.name(), jit::ExecutorExecutionMode::SIMPLE);
    return std::unique_ptr<PlanRunner>(std::move(p));
  }

  absl::StatusOr<std::vector<at::Tensor>> Run(const std::vector<at::Tensor>& params, bool checked) const override {
    if (params.size() != graph_->inputs().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": expected ", graph_->inputs().size(), " inputs, got ", params.size()));
    }
    jit::Stack stack;
    stack.reserve(params.size());
    for (const at::Tensor& t : params) stack.emplace_back(t);
    try {
      c10::optional<c10::InferenceMode> guard;
      if (inference_mode_) guard.emplace();
      executor_.run(stack);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": ", JitErrorMessage(e.what())));
    }
    if (stack.size() != return_types_.size()) {
      return absl::InternalError(
          absl::StrCat(name_, ": the executor left ", stack.size(), " values for ", return_types_.size(), " results"));
    }
    std::vector<at::Tensor> out;
    out.reserve(stack.size());
    for (size_t i = 0; i < stack.size(); ++i) {
      at::Tensor t = std::move(stack[i]).toTensor();
      if (checked) {
        const ir::TensorType& want = return_types_[i];
        if (t.device().str() != want.device.name) {
          return absl::InternalError(absl::StrCat(name_, ": result ", i, " is on ", t.device().str(),
                                                  " but the plan places it on ", want.device.name));
        }
        if (t.scalar_type() != ir::ToScalarType(want.dtype) || t.dim() != want.rank()) {
          return absl::InternalError(absl::StrCat(name_, ": result ", i, " is ", c10::toString(t.scalar_type()),
                                                  " rank ", t.dim(), " but planned ", want.ToString()));
        }
      }
      out.push_back(std::move(t));
    }
    return out;
  }

  int num_kernel_calls() const override { return kernels_; }

 private:
  TorchScriptPlan() = default;

  std::string name_;
  std::shared_ptr<jit::Graph> graph_;
  mutable jit::GraphExecutor executor_;
  std::vector<ir::TensorType> return_types_;
  bool inference_mode_ = false;
  int kernels_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PlanRunner>> CreatePlan(const ir::Graph& g) { return TorchScriptPlan::Create(g); }

absl::StatusOr<std::string> LoweredModuleText(const ir::Module& m) {
  std::string out;
  auto print = [&](const ir::Graph& g, const std::string& title) -> absl::Status {
    TALLY_ASSIGN_OR_RETURN(std::shared_ptr<jit::Graph> jg, LowerGraph(g, LoweringOptions{}));
    std::ostringstream os;
    os << *jg;
    absl::StrAppend(&out, "// ", title, ": ", CountKernelCalls(*jg), " kernel calls\n");
    std::vector<std::string> results;
    for (const auto& [label, v] : g.returns()) results.push_back(label);
    absl::StrAppend(&out, "// results: ", absl::StrJoin(results, ", "), "\n", os.str(), "\n");
    return absl::OkStatus();
  };
  TALLY_RETURN_IF_ERROR(print(*m.update, "@update"));
  for (const auto& [group, g] : m.merges) TALLY_RETURN_IF_ERROR(print(*g, absl::StrCat("@merge ", group)));
  TALLY_RETURN_IF_ERROR(print(*m.finalize, "@finalize"));
  return out;
}

}  // namespace tally::exec::torchscript
