#include "passes/pipeline.h"

#include "absl/strings/str_cat.h"
#include "engine/ir/printer.h"
#include "ops/op_verifier.h"
#include "support/status_macros.h"

namespace tally::passes {

PassPipeline::PassPipeline(std::string name) : name_(std::move(name)) {
  AddInvariant("verifier", [](const ir::Module& m) { return ops::VerifyModule(m); });
}

absl::Status PassPipeline::CheckInvariants(const ir::Module& m, absl::string_view where) const {
  for (const auto& [name, check] : invariants_) {
    absl::Status s = check(m);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> PassPipeline::Run(ir::Module& m) {
  report_ = CompileReport{};
  TALLY_RETURN_IF_ERROR(CheckInvariants(m, absl::StrCat("at the start of pipeline '", name_, "'")));
  bool any = false;
  for (auto& p : passes_) {
    auto changed = p->Run(m);
    if (!changed.ok()) {
      return absl::Status(changed.status().code(),
                          absl::StrCat("pass '", p->name(), "': ", changed.status().message()));
    }
    if (*changed) {
      any = true;
      absl::Status v = CheckInvariants(m, absl::StrCat("after pass '", p->name(), "'"));
      if (!v.ok()) return absl::InternalError(v.message());
    }
    // A nested pipeline brings its own records; a pass gets one.
    if (dynamic_cast<const PassPipeline*>(p.get()) == nullptr) {
      PassRecord rec{std::string(p->name()), *changed, p->counters(), ""};
      if (*changed && (dump_after_ == "all" || dump_after_ == p->name())) rec.dump = ir::PrintModule(m);
      report_.log.push_back(std::move(rec));
    }
    p->Report(report_);
  }
  return any;
}

void PassPipeline::Report(CompileReport& report) const {
  report.log.insert(report.log.end(), report_.log.begin(), report_.log.end());
  if (report_.proof.has_value()) report.proof = report_.proof;
  if (!report_.fusion_groups.empty()) report.fusion_groups = report_.fusion_groups;
}

}  // namespace tally::passes
