#include "passes/place.h"

namespace tally::passes {
namespace {

int PlaceGraph(ir::Graph& g, const ir::Device& d) {
  int moved = 0;
  auto place = [&](ir::Value* v) {
    if (v->type().device != d) {
      v->mutable_type().device = d;
      ++moved;
    }
  };
  for (ir::Value* p : g.params()) place(p);
  for (const auto& n : g.nodes())
    for (ir::Value* out : n->outputs()) place(out);
  return moved;
}

}  // namespace

absl::StatusOr<bool> Place::Run(ir::Module& m) {
  int moved = PlaceGraph(*m.update, device_) + PlaceGraph(*m.finalize, device_);
  for (auto& [group, g] : m.merges) moved += PlaceGraph(*g, device_);
  for (auto& s : m.states) {
    if (s.type.device != device_) {
      s.type.device = device_;
      ++moved;
    }
  }
  counters_ = {{"values_moved", moved}};
  return moved > 0;
}

}  // namespace tally::passes
