#include "passes/registry.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/eliminate_dead_states.h"
#include "passes/insert_transfers.h"
#include "passes/narrow_states.h"
#include "passes/place.h"
#include "passes/prove_single_device.h"
#include "passes/remove_host_syncs.h"

namespace tally::passes {
namespace {

using Factory = std::function<std::unique_ptr<Pass>(const PassOptions&)>;

struct Entry {
  std::string name;
  Factory make;
};

// Entries in the default pipeline's order.
const std::vector<Entry>& Entries() {
  static const auto* entries = new std::vector<Entry>{
      {"canonicalize", [](const PassOptions&) { return std::make_unique<Canonicalize>(); }},
      {"cse", [](const PassOptions&) { return std::make_unique<Cse>(); }},
      {"eliminate-dead-states", [](const PassOptions&) { return std::make_unique<EliminateDeadStates>(); }},
      {"narrow-states", [](const PassOptions&) { return std::make_unique<NarrowStates>(); }},
      {"remove-host-syncs", [](const PassOptions&) { return std::make_unique<RemoveHostSyncs>(); }},
      {"place", [](const PassOptions& o) { return std::make_unique<Place>(o.device); }},
      {"fuse", [](const PassOptions& o) { return std::make_unique<Fuse>(o.device, o.fuse_policy); }},
      {"insert-transfers", [](const PassOptions& o) { return std::make_unique<InsertTransfers>(o.device); }},
      {"prove-single-device", [](const PassOptions& o) { return std::make_unique<ProveSingleDevicePass>(o.device); }},
  };
  return *entries;
}

std::unique_ptr<PassPipeline> PipelineOf(std::string name, const std::vector<std::string>& passes,
                                         const PassOptions& options) {
  auto p = std::make_unique<PassPipeline>(std::move(name));
  for (const std::string& pass : passes) {
    if (pass == "insert-transfers" && !options.transfer_inputs) continue;
    p->AddPass(*CreatePass(pass, options));  // registered names: cannot fail
  }
  return p;
}

}  // namespace

const std::vector<std::string>& PassNames() {
  static const auto* names = [] {
    auto* n = new std::vector<std::string>();
    for (const Entry& e : Entries()) n->push_back(e.name);
    return n;
  }();
  return *names;
}

absl::StatusOr<std::unique_ptr<Pass>> CreatePass(absl::string_view name, const PassOptions& options) {
  for (const Entry& e : Entries()) {
    if (e.name == name) return e.make(options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pass '", name, "' (known: ", absl::StrJoin(PassNames(), ", "), ")"));
}

std::unique_ptr<PassPipeline> DefaultPipeline(const PassOptions& options) {
  return PipelineOf("default", PassNames(), options);
}

std::unique_ptr<PassPipeline> PlacementPipeline(const PassOptions& options) {
  return PipelineOf("placement", {"place", "fuse", "insert-transfers", "prove-single-device"}, options);
}

}  // namespace tally::passes
