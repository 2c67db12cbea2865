#include "passes/prove_single_device.h"

#include "absl/strings/str_cat.h"
#include "ops/op_list.h"
#include "support/status_macros.h"

namespace tally::passes {
namespace {

absl::Status CheckGraph(const ir::Graph& g, const ir::Device& d, DeviceProof& proof) {
  auto fail = [&](const ir::Node* n, const ir::Value* v, absl::string_view what) {
    return absl::FailedPreconditionError(
        absl::StrCat("device proof failed in @", g.name(), ": ", what, " ", v->type().ToString(),
                     n ? absl::StrCat(" at ", n->op(), n->loc().empty() ? "" : " (" + n->loc() + ")") : "",
                     "; the program is placed on ", d.name));
  };
  for (const ir::Value* p : g.params()) {
    // An input opted into transfer arrives anywhere (Device::Any()) and may only feed
    // explicit transfer nodes.
    if (p->type().device.is_any()) continue;
    if (p->type().device != d) return fail(nullptr, p, absl::StrCat("parameter %", p->name(), " is"));
  }
  for (const auto& n : g.nodes()) {
    if (ops::Is(*n, ops::OpId::kTransfer)) {
      const ir::Value* in = n->input(0);
      if (in->producer() != nullptr || !in->type().device.is_any() || n->output()->type().device != d) {
        return fail(n.get(), in, "transfer of");
      }
      ++proof.edges[absl::StrCat(g.name(), ": input -> explicit transfer to ", d.name)];
      continue;
    }
    for (const ir::Value* in : n->inputs()) {
      if (in->type().device != d) return fail(n.get(), in, "input");
      ++proof.edges[absl::StrCat(g.name(), ": ", in->producer() ? "node -> node" : "param -> node")];
    }
    for (const ir::Value* out : n->outputs()) {
      if (out->type().device != d) return fail(n.get(), out, "result");
    }
    if (n->inputs().empty()) ++proof.edges[absl::StrCat(g.name(), ": constant materialized")];
  }
  for (const auto& [label, v] : g.returns()) {
    if (v->type().device != d) return fail(nullptr, v, absl::StrCat("result '", label, "'"));
    ++proof.edges[absl::StrCat(g.name(), ": value -> result")];
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DeviceProof> ProveSingleDevice(const ir::Module& m, const ir::Device& device) {
  DeviceProof proof;
  proof.device = device.name;
  TALLY_RETURN_IF_ERROR(CheckGraph(*m.update, device, proof));
  TALLY_RETURN_IF_ERROR(CheckGraph(*m.finalize, device, proof));
  for (const auto& [group, g] : m.merges) TALLY_RETURN_IF_ERROR(CheckGraph(*g, device, proof));
  for (const auto& s : m.states) {
    if (s.type.device != device) {
      return absl::FailedPreconditionError(absl::StrCat("device proof failed: state @", s.name, " is on ",
                                                        s.type.device.name, ", the program on ", device.name));
    }
    ++proof.states;
  }
  for (const ir::Value* p : m.update->params()) {
    if (p->type().device.is_any()) {
      proof.boundary_checks.push_back(absl::StrCat("%", p->name(), " must be ", p->type().ToString(),
                                                   " on any device, then one explicit transfer to ", device.name));
      continue;
    }
    proof.boundary_checks.push_back(absl::StrCat("%", p->name(), " must be ", p->type().ToString(),
                                                 " (checked on the host in Program::Update before any state changes)"));
  }
  return proof;
}

absl::StatusOr<bool> ProveSingleDevicePass::Run(ir::Module& m) {
  TALLY_ASSIGN_OR_RETURN(proof_, ProveSingleDevice(m, device_));
  int64_t total = 0;
  for (const auto& [k, n] : proof_.edges) total += n;
  counters_ = {{"edges_proved", total}, {"boundary_checks", static_cast<int64_t>(proof_.boundary_checks.size())}};
  return false;
}

}  // namespace tally::passes
