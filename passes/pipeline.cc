#include "passes/pipeline.h"

#include "absl/strings/str_cat.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "engine/status_macros.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/eliminate_dead_states.h"
#include "passes/narrow_states.h"
#include "passes/place.h"
#include "passes/remove_host_syncs.h"
#include "passes/prove_single_device.h"

namespace tally::passes {

absl::StatusOr<bool> PassPipeline::Run(ir::Module& m) {
  absl::Status s = ir::VerifyModule(m);
  if (!s.ok()) {
    return absl::Status(s.code(), absl::StrCat("at the start of pipeline '", name_, "': ", s.message()));
  }
  bool any = false;
  for (auto& p : passes_) {
    auto changed = p->Run(m);
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass '", p->name(), "': ", changed.status().message()));
    }
    PassRecord rec{std::string(p->name()), *changed, p->counters(), ""};
    if (*changed) {
      any = true;
      absl::Status v = ir::VerifyModule(m);
      if (!v.ok()) {
        return absl::InternalError(absl::StrCat("after pass '", p->name(), "': ", v.message()));
      }
      if (dump_after_ == "all" || dump_after_ == p->name()) rec.dump = ir::PrintModule(m);
    }
    records_.push_back(std::move(rec));
  }
  return any;
}

absl::StatusOr<std::unique_ptr<Pass>> MakePass(absl::string_view name) {
  if (name == "cse") return std::unique_ptr<Pass>(new Cse());
  if (name == "eliminate-dead-states") return std::unique_ptr<Pass>(new EliminateDeadStates());
  if (name == "narrow-states") return std::unique_ptr<Pass>(new NarrowStates());
  if (name == "canonicalize") return std::unique_ptr<Pass>(new Canonicalize());
  if (name == "remove-host-syncs") return std::unique_ptr<Pass>(new RemoveHostSyncs());
  if (name == "place") return std::unique_ptr<Pass>(new Place(ir::Device{"cpu"}));
  if (name == "prove-single-device") return std::unique_ptr<Pass>(new ProveSingleDevicePass(ir::Device{"cpu"}));
  return absl::InvalidArgumentError(absl::StrCat("unknown pass '", name,
                                                 "' (known: canonicalize, cse, eliminate-dead-states, narrow-states, remove-host-syncs, place, prove-single-device)"));
}

}  // namespace tally::passes
