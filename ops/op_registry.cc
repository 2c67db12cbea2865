#include "ops/op_registry.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

bool AttrMatches(const ir::Attr& a, AttrKind k) {
  switch (k) {
    case AttrKind::kInt:
      return std::holds_alternative<int64_t>(a);
    case AttrKind::kDouble:
      return std::holds_alternative<double>(a) || std::holds_alternative<int64_t>(a);
    case AttrKind::kBool:
      return std::holds_alternative<bool>(a);
    case AttrKind::kString:
      return std::holds_alternative<std::string>(a);
    case AttrKind::kInts:
      return std::holds_alternative<std::vector<int64_t>>(a);
    case AttrKind::kDoubles:
      return std::holds_alternative<std::vector<double>>(a) || std::holds_alternative<std::vector<int64_t>>(a);
  }
  return false;
}

// Names a family file defined that op_list.h lacks, or defined twice: what
// CheckOpTable reports (AddOp cannot fail, the table is built in a static).
std::vector<std::string>& TableErrors() {
  static auto* errors = new std::vector<std::string>();
  return *errors;
}

}  // namespace

const OpTable& Registry() {
  static const OpTable* table = [] {
    auto* t = new OpTable();
    RegisterElementwiseOps(*t);
    RegisterReduceOps(*t);
    RegisterIndexOps(*t);
    RegisterSyncOps(*t);
    RegisterCompositeOps(*t);
    RegisterSegmentOps(*t);
    RegisterSortOps(*t);
    RegisterGatherOps(*t);
    RegisterRetrievalOps(*t);
    RegisterSequenceOps(*t);
    RegisterSignalOps(*t);
    RegisterImageOps(*t);
    RegisterLinalgOps(*t);
    return t;
  }();
  return *table;
}

OpDef MakeOp(OpId id, int min_inputs, int max_inputs, std::vector<AttrSpec> attrs, InferFn infer) {
  OpDef d;
  d.id = id;
  d.min_inputs = min_inputs;
  d.max_inputs = max_inputs;
  d.attrs = std::move(attrs);
  d.infer = std::move(infer);
  return d;
}

bool OpTable::Add(OpDef d) {
  const size_t i = Index(*d.id);
  if (defs_[i]) return false;
  defs_[i] = std::move(d);
  return true;
}

size_t OpTable::size() const {
  size_t n = 0;
  for (const auto& d : defs_) n += d.has_value();
  return n;
}

void AddOp(OpTable& t, OpDef d) {
  if (!d.id) {
    TableErrors().push_back("a definition has no op id");
    return;
  }
  d.name = std::string(OpName(*d.id));
  const OpId id = *d.id;
  if (!t.Add(std::move(d))) TableErrors().push_back(absl::StrCat("op '", OpName(id), "' is defined twice"));
}

namespace {

// ById: the definition of op `i` (nullptr where a family file forgot one).
const OpDef* ById(size_t i) { return Registry().Find(static_cast<OpId>(i)); }

}  // namespace

absl::Status CheckOpTable() {
  Registry();  // fills TableErrors
  std::vector<std::string> errors = TableErrors();
  for (size_t i = 0; i < kNumOps; ++i) {
    const OpDef* d = ById(i);
    if (d == nullptr) {
      errors.push_back(absl::StrCat("op '", kOpNames[i], "' is in op_list.h but has no definition"));
    } else if (d->traits.composite != (kOpKinds[i] == OpKind::kComposite)) {
      errors.push_back(
          absl::StrCat("op '", kOpNames[i], "': its definition's composite trait disagrees with op_list.h"));
    }
  }
  if (errors.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("the op table is incomplete: ", absl::StrJoin(errors, "; ")));
}

const OpDef& Def(OpId id) { return *ById(Index(id)); }

// DefOf: a node's definition through its cached op id (no name hashing).
const OpDef* DefOf(const ir::Node& n) {
  std::optional<OpId> id = IdOf(n);
  return id ? ById(Index(*id)) : nullptr;
}

const OpDef* FindOp(absl::string_view name) {
  std::optional<OpId> id = OpIdNamed(name);
  return id ? ById(Index(*id)) : nullptr;
}

bool IsPure(const ir::Node& n) {
  const OpDef* d = DefOf(n);
  return d != nullptr && d->traits.pure;
}
bool SyncsHost(const ir::Node& n) {
  const OpDef* d = DefOf(n);
  return d == nullptr || d->traits.syncs_host;
}
bool HasDataDependentShape(const ir::Node& n) {
  const OpDef* d = DefOf(n);
  return d == nullptr || d->traits.data_dependent_shape;
}
bool IsCreation(const ir::Node& n) {
  const OpDef* d = DefOf(n);
  return d != nullptr && d->traits.creates;
}

bool IsComposite(const ir::Node& n) {
  const OpDef* d = DefOf(n);
  return d != nullptr && d->traits.composite;
}
bool IsCommutative(const ir::Node& n) {
  const OpDef* d = DefOf(n);
  return d != nullptr && d->traits.commutative;
}
bool HasFusedKernel(const ir::Node& n, const ir::Device& device) {
  const OpDef* d = DefOf(n);
  if (d == nullptr) return false;
  std::string type = device.name.substr(0, device.name.find(':'));
  return std::find(d->fused_devices.begin(), d->fused_devices.end(), type) != d->fused_devices.end();
}

absl::StatusOr<std::vector<ir::TensorType>> InferTypes(absl::string_view op, const std::vector<ir::TensorType>& inputs,
                                                       const ir::AttrMap& attrs, const ir::Device& device) {
  const OpDef* d = FindOp(op);
  if (d == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown op '", op, "'"));
  int n = static_cast<int>(inputs.size());
  if (n < d->min_inputs || (d->max_inputs >= 0 && n > d->max_inputs)) {
    return absl::InvalidArgumentError(absl::StrCat(
        op, ": takes ", d->min_inputs,
        d->max_inputs == d->min_inputs ? "" : (d->max_inputs < 0 ? " or more" : absl::StrCat(" to ", d->max_inputs)),
        " inputs, got ", n));
  }
  for (const AttrSpec& s : d->attrs) {
    auto it = attrs.find(s.name);
    if (it == attrs.end()) {
      if (s.required) {
        return absl::InvalidArgumentError(absl::StrCat(op, ": missing attribute '", s.name, "'"));
      }
      continue;
    }
    if (!AttrMatches(it->second, s.kind)) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": attribute '", s.name, "' has the wrong kind"));
    }
  }
  for (const auto& [k, v] : attrs) {
    bool known = false;
    for (const AttrSpec& s : d->attrs) known |= s.name == k;
    if (!known) return absl::InvalidArgumentError(absl::StrCat(op, ": unknown attribute '", k, "'"));
  }
  if (d->traits.preserves_device && !inputs.empty()) {
    for (const auto& t : inputs) {
      if (t.device != inputs[0].device) {
        return absl::InvalidArgumentError(
            absl::StrCat(op, ": inputs on different devices (", inputs[0].device.name, " and ", t.device.name, ")"));
      }
    }
  }
  auto out = d->infer(inputs, attrs, device);
  if (!out.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", out.status().message()));
  }
  return out;
}

absl::StatusOr<ir::Node*> Build(ir::Graph& g, absl::string_view op, std::vector<ir::Value*> inputs, ir::AttrMap attrs,
                                const ir::Device& device, std::string loc) {
  std::vector<ir::TensorType> types;
  for (ir::Value* v : inputs) types.push_back(v->type());
  TALLY_ASSIGN_OR_RETURN(std::vector<ir::TensorType> outs, InferTypes(op, types, attrs, device));
  return g.AddNode(std::string(op), std::move(inputs), std::move(attrs), std::move(outs), std::move(loc));
}

absl::Status CheckNode(const ir::Node& n) {
  std::vector<ir::TensorType> types;
  for (ir::Value* v : n.inputs()) types.push_back(v->type());
  ir::Device device = n.outputs().empty() ? ir::Device{} : n.output(0)->type().device;
  TALLY_ASSIGN_OR_RETURN(std::vector<ir::TensorType> outs, InferTypes(n.op(), types, n.attrs(), device));
  if (outs.size() != n.outputs().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(n.op(), ": expected ", outs.size(), " results, has ", n.outputs().size()));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] != n.output(i)->type()) {
      return absl::InvalidArgumentError(absl::StrCat(n.op(), ": result ", i, " has type ",
                                                     n.output(i)->type().ToString(), " but the op gives ",
                                                     outs[i].ToString()));
    }
  }
  return absl::OkStatus();
}

ir::Dim FlatDim(const std::vector<ir::Dim>& dims) {
  int64_t fixed = 1;
  std::vector<std::string> syms;
  for (const ir::Dim& d : dims) {
    if (d.is_symbolic())
      syms.push_back(d.symbol);
    else
      fixed *= d.size;
  }
  if (syms.empty()) return ir::Dim::Fixed(fixed);
  if (fixed != 1) syms.push_back(absl::StrCat(fixed));
  return ir::Dim::Symbol(absl::StrJoin(syms, "*"));
}

absl::StatusOr<ir::Shape> BroadcastShapes(const ir::Shape& a, const ir::Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  ir::Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const ir::Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const ir::Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) {
      out[i] = *db;
      continue;
    }
    if (!db) {
      out[i] = *da;
      continue;
    }
    if (*da == *db) {
      out[i] = *da;
      continue;
    }
    if (!da->is_symbolic() && da->size == 1) {
      out[i] = *db;
      continue;
    }
    if (!db->is_symbolic() && db->size == 1) {
      out[i] = *da;
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("shapes do not broadcast: dim ", da->ToString(), " vs ", db->ToString()));
  }
  return out;
}

absl::StatusOr<int64_t> NormalizeDim(int64_t dim, int64_t rank) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("dim ", dim, " out of range for rank ", rank));
  }
  return d;
}

}  // namespace tally::ops
