#include "passes/pipeline.h"

#include "absl/strings/str_cat.h"
#include "engine/ir/printer.h"
#include "ops/op_verifier.h"
#include "support/status_macros.h"

namespace tally::passes {

absl::StatusOr<bool> PassPipeline::Run(ir::Module& m) {
  absl::Status s = ops::VerifyModule(m);
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
      absl::Status v = ops::VerifyModule(m);
      if (!v.ok()) {
        return absl::InternalError(absl::StrCat("after pass '", p->name(), "': ", v.message()));
      }
      if (dump_after_ == "all" || dump_after_ == p->name()) rec.dump = ir::PrintModule(m);
    }
    records_.push_back(std::move(rec));
  }
  return any;
}

}  // namespace tally::passes
