// Builds exported modules method by method as TorchScript graphs: boundary
// checks and state folds are emitted here; plan bodies come from the lowering
// (lowering.h) with creation ops on the buffers' run-time device.
#include "engine/exec/torchscript/module_export.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/compilation_unit.h>
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/constant_pooling.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>

#include <cctype>
#include <functional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/exec/fold_state.h"
#include "engine/exec/torchscript/lowering.h"
#include "engine/exec/torchscript/module_builder.h"
#include "engine/ir/aten_types.h"
#include "ops/op_registry.h"
#include "support/hash.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::exec::torchscript {

namespace jit = torch::jit;
using jit::Value;

namespace {

c10::Symbol A(const char* name) { return c10::Symbol::aten(name); }

const char* const kReserved[] = {
    // methods and nn.Module attributes of the exported module
    "update", "compute", "reset", "merge_state", "states", "fingerprint", "forward", "training", "to",
    // Python keywords
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};

std::string Identifier(const std::string& name) {
  std::string out;
  for (char ch : name) out.push_back(std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "s_" + out;
  return out;
}

// BufferNames gives every state a distinct Python identifier.
std::vector<std::string> BufferNames(const ir::Module& m) {
  std::vector<std::string> names;
  for (const auto& s : m.states) {
    std::string base = Identifier(s.name), name = base;
    auto taken = [&](const std::string& n) {
      return std::find(names.begin(), names.end(), n) != names.end() ||
             std::find(std::begin(kReserved), std::end(kReserved), n) != std::end(kReserved);
    };
    for (int k = 2; taken(name); ++k) name = absl::StrCat(base, "_", k);
    names.push_back(name);
  }
  return names;
}

// Fingerprint identifies the state layout — what merge_state folds — by a
// stable hash (FNV-1a) of every state's name, type without device, reducer
// and group, so modules exported by different builds or for different
// devices still merge.
std::string Fingerprint(const ir::Module& m) {
  std::string layout;
  for (const auto& s : m.states) {
    absl::StrAppend(&layout, s.name, " ", ir::DTypeName(s.type.dtype), s.type.ShapeString(), " ",
                    ir::ReducerName(s.reducer), " ", s.group, ";");
  }
  // The seed is FNV-1a's offset basis with its last decimal digit lost
  // (14695981039346656037 -> 1469598103934665603); exported modules carry
  // this fingerprint, so it stays.
  const uint64_t h = support::Fnv1a64(layout, 1469598103934665603ull);
  return absl::StrCat("tally-states-", absl::Hex(h, absl::kZeroPad16));
}

// TypeText is a value type without its device (buffers move with `to`).
std::string TypeText(const ir::TensorType& t) { return absl::StrCat(ir::DTypeName(t.dtype), t.ShapeString()); }

class Builder {
 public:
  Builder(const ir::Module& m, c10::Device device) : m_(m), device_(device) {}

  absl::StatusOr<jit::Module> Build() {
    TALLY_RET_CHECK(!m_.states.empty());
    for (const auto& n : m_.update->nodes()) {
      if (ops::IsComposite(*n)) {
        return absl::FailedPreconditionError(
            absl::StrCat("composite op '", n->op(),
                         "' in the update plan: exported modules are compiled with their "
                         "composite ops decomposed (FusePolicy::kReference) so that they need nothing of Tally"));
      }
    }
    metric_names_ = absl::StrJoin(m_.MetricNames(), ", ");
    fingerprint_ = Fingerprint(m_);
    attrs_ = BufferNames(m_);
    TALLY_ASSIGN_OR_RETURN(partial_of_state_, m_.PartialIndices());

    cu_ = std::make_shared<jit::CompilationUnit>();
    cls_ = c10::ClassType::create(c10::QualifiedName("__torch__.tally.Metrics"), cu_, /*is_module=*/true);
    cu_->register_type(cls_);
    iface_ = c10::InterfaceType::create(c10::QualifiedName("__torch__.tally.MetricStates"), /*is_module=*/true);
    iface_->addMethod(
        c10::FunctionSchema("states", "", {c10::Argument("self", iface_)}, {c10::Argument("", DictType())}));
    iface_->addMethod(c10::FunctionSchema("fingerprint", "", {c10::Argument("self", iface_)},
                                          {c10::Argument("", c10::StringType::get())}));
    cu_->register_type(iface_);
    jit::Module module(cu_, cls_);
    // Planning for a device needs no hardware; holding buffers on it does.
    const bool available =
        device_.is_cuda()
            ? at::hasCUDA() && (!device_.has_index() || static_cast<size_t>(device_.index()) < at::getNumGPUs())
        : device_.is_mps() ? at::hasMPS()
                           : true;
    if (!available) {
      return absl::FailedPreconditionError(absl::StrCat(metric_names_, ": cannot create the buffers on ", device_.str(),
                                                        ": the device is not available on this machine"));
    }
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          for (size_t i = 0; i < m_.states.size(); ++i) {
            const ir::StateDecl& s = m_.states[i];
            auto opts = at::TensorOptions().dtype(ir::ToScalarType(s.type.dtype)).device(device_);
            module.register_buffer(attrs_[i], at::full(InitialSizes(s), s.init, opts));
          }
        },
        absl::StrCat(metric_names_, ": creating the buffers")));

    TALLY_RETURN_IF_ERROR(AddMethod("states", {}, [&](jit::Graph& g, Value* self, const std::vector<Value*>&) {
      std::vector<Value*> keys, values;
      for (size_t i = 0; i < m_.states.size(); ++i) {
        keys.push_back(g.insertConstant(m_.states[i].name));
        values.push_back(g.insertGetAttr(self, attrs_[i]));
      }
      return absl::StatusOr<Value*>(
          g.insertNode(g.createDict(c10::StringType::get(), c10::TensorType::get(), keys, values))->output());
    }));
    TALLY_RETURN_IF_ERROR(AddMethod("fingerprint", {}, [&](jit::Graph& g, Value*, const std::vector<Value*>&) {
      return absl::StatusOr<Value*>(g.insertConstant(fingerprint_));
    }));
    std::vector<std::string> inputs;
    for (ir::Value* p : m_.update->params()) inputs.push_back(p->name());
    TALLY_RETURN_IF_ERROR(AddMethod("update", inputs, [&](jit::Graph& g, Value* self, const std::vector<Value*>& in) {
      return EmitUpdate(g, self, in);
    }));
    TALLY_RETURN_IF_ERROR(AddMethod(
        "compute", {}, [&](jit::Graph& g, Value* self, const std::vector<Value*>&) { return EmitCompute(g, self); }));
    TALLY_RETURN_IF_ERROR(AddMethod(
        "reset", {}, [&](jit::Graph& g, Value* self, const std::vector<Value*>&) { return EmitReset(g, self); }));
    TALLY_RETURN_IF_ERROR(AddMethod(
        "merge_state", {"other"},
        [&](jit::Graph& g, Value* self, const std::vector<Value*>& in) { return EmitMergeState(g, self, in[0]); }));
    return module;
  }

 private:
  using Emit = std::function<absl::StatusOr<Value*>(jit::Graph&, Value*, const std::vector<Value*>&)>;

  static c10::TypePtr DictType() { return c10::DictType::create(c10::StringType::get(), c10::TensorType::get()); }

  static std::vector<int64_t> InitialSizes(const ir::StateDecl& s) {
    std::vector<int64_t> sizes;
    for (const auto& d : s.type.shape) sizes.push_back(d.is_symbolic() ? 0 : d.size);
    return sizes;
  }

  // AddMethod builds one method graph (self first, then `args`; `merge_state`
  // takes the states interface) and adds it to the class.
  absl::Status AddMethod(const std::string& name, const std::vector<std::string>& args, const Emit& emit) {
    auto g = std::make_shared<jit::Graph>();
    Value* self = g->addInput("self")->setType(cls_);
    std::vector<Value*> in;
    for (const std::string& a : args) {
      Value* v = g->addInput(Identifier(a));
      v->setType(name == "merge_state" ? c10::TypePtr(iface_) : c10::TypePtr(c10::TensorType::get()));
      in.push_back(v);
    }
    absl::StatusOr<Value*> out = absl::InternalError("not built");
    TALLY_RETURN_IF_ERROR(
        support::CatchTorch([&] { out = emit(*g, self, in); }, absl::StrCat(metric_names_, ": building ", name, "()")));
    if (!out.ok()) return out.status();
    g->registerOutput(*out);
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          jit::ConstantPooling(g);
          jit::EliminateDeadCode(g);
          jit::Function* fn = cu_->create_function(c10::QualifiedName(*cls_->name(), name), g);
          cls_->addMethod(fn);
        },
        absl::StrCat(metric_names_, ": adding ", name, "()")));
    return absl::OkStatus();
  }

  // Check raises `message` (a str value) unless `ok` holds.
  void Check(jit::Graph& g, Value* ok, const std::function<Value*()>& message) {
    jit::Node* n = g.insertNode(g.create(c10::prim::If, {ok}, 0));
    n->addBlock();
    jit::Block* fail = n->addBlock();
    jit::WithInsertPoint guard(fail);
    g.insert(c10::prim::RaiseException, {message()});
  }

  Value* Format(jit::Graph& g, const std::string& fmt, std::vector<Value*> args) {
    std::vector<jit::NamedValue> all{jit::NamedValue(g.insertConstant(fmt))};
    for (Value* a : args) all.emplace_back(a);
    return g.insert(A("format"), all);
  }

  Value* StateDevice(jit::Graph& g, Value* self) {
    return g.insert(c10::prim::device, {g.insertGetAttr(self, attrs_[0])});
  }

  std::vector<Value*> States(jit::Graph& g, Value* self) {
    std::vector<Value*> out;
    for (const std::string& a : attrs_) out.push_back(g.insertGetAttr(self, a));
    return out;
  }

  // Fold combines current states with incoming partials (or another
  // module's states) by reducer, exactly as Program::Fold does.
  absl::StatusOr<std::vector<Value*>> Fold(jit::Graph& g, const std::vector<Value*>& current,
                                           const std::vector<Value*>& incoming, Value* device, FoldOf of) {
    std::vector<Value*> next(current.size(), nullptr);
    const auto& states = m_.states;
    std::vector<size_t> scattered;  // scatter states taking an update's rows: added in place, last
    for (size_t i = 0; i < states.size(); ++i) {
      if (states[i].scatter && of == FoldOf::kPartials) {
        scattered.push_back(i);
        continue;
      }
      switch (states[i].reducer) {
        case ir::Reducer::kSum:
          next[i] = g.insert(A("add"), {current[i], incoming[i]});
          break;
        case ir::Reducer::kMax:
          next[i] = g.insert(A("maximum"), {current[i], incoming[i]});
          break;
        case ir::Reducer::kMin:
          next[i] = g.insert(A("minimum"), {current[i], incoming[i]});
          break;
        case ir::Reducer::kCat: {
          Value* list = g.insertNode(g.createList(c10::TensorType::get(), {current[i], incoming[i]}))->output();
          next[i] = g.insert(A("cat"), {list, 0});
          break;
        }
        case ir::Reducer::kCustom:
          break;
      }
    }
    LoweringOptions lo;
    lo.device_source = DeviceSource::kRuntime;
    lo.allow_tally_ops = false;
    for (const auto& [group, merge] : m_.merges) {
      std::vector<int> members;
      for (size_t i = 0; i < states.size(); ++i)
        if (states[i].reducer == ir::Reducer::kCustom && states[i].group == group) members.push_back(i);
      std::vector<Value*> args;
      for (int i : members) args.push_back(current[i]);
      for (int i : members) args.push_back(incoming[i]);
      TALLY_ASSIGN_OR_RETURN(std::vector<Value*> merged, LowerInto(g, *merge, args, device, lo));
      TALLY_RET_CHECK(merged.size() == members.size());
      for (size_t k = 0; k < members.size(); ++k) next[members[k]] = merged[k];
    }
    // A scatter state adds its rows at the elements they name, in place (a
    // copy of a large histogram per update is what the rows avoid), after
    // every other fold: what can fail has run.
    for (size_t i : scattered) {
      Value* flat = g.insert(A("view"), {current[i], std::vector<int64_t>{-1}});
      Value* rows = g.insert(A("reshape"), {incoming[i], std::vector<int64_t>{-1, 2}});
      Value* added = g.insert(A("index_add_"),
                              {flat, 0, g.insert(A("select"), {rows, 1, 0}), g.insert(A("select"), {rows, 1, 1})});
      next[i] = g.insert(A("view_as"), {added, current[i]});  // the state, as index_add_ returns it: kept by DCE
    }
    for (size_t i = 0; i < next.size(); ++i) {
      if (next[i] == nullptr) {
        return absl::InternalError(absl::StrCat(states[i].name, ": custom state without a merge graph"));
      }
    }
    return next;
  }

  void SetStates(jit::Graph& g, Value* self, const std::vector<Value*>& values) {
    for (size_t i = 0; i < values.size(); ++i) g.insertNode(g.createSetAttr(self, attrs_[i], values[i]));
  }

  // The program's boundary checks (Program::CheckInputs) from metadata only.
  void EmitInputChecks(jit::Graph& g, const std::vector<Value*>& in, Value* device) {
    const auto& params = m_.update->params();
    struct Seen {
      std::string symbol;
      Value* size;
      std::string input;
    };
    std::vector<Seen> symbols;
    for (size_t i = 0; i < params.size(); ++i) {
      const ir::TensorType& want = params[i]->type();
      const std::string& name = params[i]->name();
      const std::string prefix = absl::StrCat(metric_names_, ": input '", name, "': ");
      Value* x = in[i];
      Value* dtype = g.insert(c10::prim::dtype, {x});
      Check(g, g.insert(A("eq"), {dtype, static_cast<int64_t>(ir::ToScalarType(want.dtype))}), [&] {
        return g.insertConstant(absl::StrCat(prefix, "wrong dtype: expected ", TypeText(want), " (",
                                             c10::toString(ir::ToScalarType(want.dtype)), ")"));
      });
      Value* rank = g.insert(A("dim"), {x});
      Check(g, g.insert(A("eq"), {rank, want.rank()}), [&] {
        return Format(g, absl::StrCat(prefix, "wrong rank: expected ", TypeText(want), ", got rank {}"), {rank});
      });
      if (want.rank() >= 2) {
        // Rows of zero elements, as Program::CheckInputs refuses them.
        Value* has_elements = g.insert(A("ne"), {g.insert(A("numel"), {x}), int64_t{0}});
        Value* no_rows = g.insert(A("eq"), {g.insert(A("size"), {x, int64_t{0}}), int64_t{0}});
        Check(g, g.insert(A("__or__"), {has_elements, no_rows}), [&] {
          return g.insertConstant(absl::StrCat(prefix, "rows of zero elements (an empty batch has 0 rows)"));
        });
      }
      for (int64_t d = 0; d < want.rank(); ++d) {
        const ir::Dim& dim = want.shape[d];
        Value* size = g.insert(A("size"), {x, d});
        if (!dim.is_symbolic()) {
          Check(g, g.insert(A("eq"), {size, dim.size}), [&] {
            return Format(g, absl::StrCat(prefix, "wrong size of dim ", d, ": expected ", TypeText(want), ", got {}"),
                          {size});
          });
          continue;
        }
        auto it = std::find_if(symbols.begin(), symbols.end(), [&](const Seen& s) { return s.symbol == dim.symbol; });
        if (it == symbols.end()) {
          symbols.push_back({dim.symbol, size, name});
          continue;
        }
        Value* first = it->size;
        Check(g, g.insert(A("eq"), {size, first}), [&] {
          return Format(
              g, absl::StrCat(metric_names_, ": input '", name, "' has {} rows (dim ", d, ") but another input has {}"),
              {size, first});
        });
      }
      Value* xdev = g.insert(c10::prim::device, {x});
      Check(g, g.insert(A("eq"), {xdev, device}), [&] {
        return Format(g, absl::StrCat(metric_names_, ": input '", name, "' is on {} but the module's states are on {}"),
                      {xdev, device});
      });
    }
  }

  absl::StatusOr<Value*> EmitUpdate(jit::Graph& g, Value* self, const std::vector<Value*>& in) {
    Value* device = StateDevice(g, self);
    EmitInputChecks(g, in, device);
    LoweringOptions lo;
    lo.device_source = DeviceSource::kRuntime;
    lo.allow_tally_ops = false;
    TALLY_ASSIGN_OR_RETURN(std::vector<Value*> results, LowerInto(g, *m_.update, in, device, lo));
    std::vector<Value*> partials;
    for (int idx : partial_of_state_) partials.push_back(results[idx]);
    std::vector<Value*> current = States(g, self);
    TALLY_ASSIGN_OR_RETURN(std::vector<Value*> next, Fold(g, current, partials, device, FoldOf::kPartials));
    // Everything that can fail ran above: the states change all together.
    SetStates(g, self, next);
    return g.insertConstant(c10::IValue());
  }

  absl::StatusOr<Value*> EmitCompute(jit::Graph& g, Value* self) {
    std::vector<Value*> states = States(g, self);
    for (size_t i = 0; i < m_.states.size(); ++i) {
      const ir::StateDecl& s = m_.states[i];
      if (s.check.empty()) continue;
      Value* n = g.insert(A("Int"), {states[i]});
      std::string message = absl::StrCat(s.metric, ": ", s.check);
      std::vector<std::string> parts = absl::StrSplit(message, "{n}");
      std::vector<Value*> args(parts.size() - 1, n);
      Check(g, g.insert(A("le"), {n, 0}), [&] { return Format(g, absl::StrJoin(parts, "{}"), args); });
    }
    Value* device = StateDevice(g, self);
    LoweringOptions lo;
    lo.device_source = DeviceSource::kRuntime;
    lo.allow_tally_ops = false;
    TALLY_ASSIGN_OR_RETURN(std::vector<Value*> results, LowerInto(g, *m_.finalize, states, device, lo));
    std::vector<Value*> keys;
    for (const auto& [label, v] : m_.finalize->returns()) keys.push_back(g.insertConstant(label));
    return g.insertNode(g.createDict(c10::StringType::get(), c10::TensorType::get(), keys, results))->output();
  }

  absl::StatusOr<Value*> EmitReset(jit::Graph& g, Value* self) {
    std::vector<Value*> current = States(g, self);
    std::vector<Value*> next;
    for (size_t i = 0; i < m_.states.size(); ++i) {
      const ir::StateDecl& s = m_.states[i];
      Value* dev = g.insert(c10::prim::device, {current[i]});
      next.push_back(
          g.insert(A("full"), {InitialSizes(s), s.init}, {{"dtype", ir::ToScalarType(s.type.dtype)}, {"device", dev}}));
    }
    SetStates(g, self, next);
    return g.insertConstant(c10::IValue());
  }

  absl::StatusOr<Value*> EmitMergeState(jit::Graph& g, Value* self, Value* other) {
    auto call = [&](const char* method, c10::TypePtr type) {
      jit::Node* n = g.insertNode(g.create(c10::prim::CallMethod, {other}, 1));
      n->s_(c10::attr::name, method);
      n->output()->setType(type);
      return n->output();
    };
    Value* theirs = call("fingerprint", c10::StringType::get());
    Check(g, g.insert(A("eq"), {theirs, fingerprint_}), [&] {
      return g.insertConstant(absl::StrCat(metric_names_, ": cannot merge a module of different metrics"));
    });
    Value* dict = call("states", DictType());
    std::vector<Value*> current = States(g, self);
    std::vector<Value*> incoming;
    for (size_t i = 0; i < m_.states.size(); ++i) {
      Value* t = g.insert(A("__getitem__"), {dict, m_.states[i].name});
      incoming.push_back(g.insert(A("to"), {t, g.insert(c10::prim::device, {current[i]})}));
    }
    TALLY_ASSIGN_OR_RETURN(std::vector<Value*> next, Fold(g, current, incoming, StateDevice(g, self), FoldOf::kStates));
    SetStates(g, self, next);
    return g.insertConstant(c10::IValue());
  }

  const ir::Module& m_;
  c10::Device device_;
  std::string metric_names_;
  std::string fingerprint_;
  std::vector<std::string> attrs_;
  std::vector<int> partial_of_state_;
  std::shared_ptr<jit::CompilationUnit> cu_;
  c10::ClassTypePtr cls_;
  c10::InterfaceTypePtr iface_;
};

}  // namespace

std::string BufferName(const ir::Module& m, int index) { return BufferNames(m).at(index); }

absl::StatusOr<jit::Module> BuildTorchModule(const ir::Module& m, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(device));
  return Builder(m, dev).Build();
}

absl::Status ExportModule(const ir::Module& m, const ir::Device& device, const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(jit::Module module, BuildTorchModule(m, device));
  return support::CatchTorch([&] { module.save(path); }, absl::StrCat("writing ", path));
}

absl::StatusOr<std::string> ExportedGraphs(const ir::Module& m, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(jit::Module module, BuildTorchModule(m, device));
  std::ostringstream os;
  for (const char* name : {"update", "compute", "reset", "merge_state"}) {
    os << "// " << name << "\n" << *jit::toGraphFunction(module.get_method(name).function()).graph() << "\n";
  }
  return os.str();
}

}  // namespace tally::exec::torchscript
