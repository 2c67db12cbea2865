// PassPipeline: an ordered list of passes with invariant checks between
// them. It is itself a Pass, so pipelines nest (`tally_opt` runs one built
// from --passes; the compiler's default pipeline is one of them).
//
// The invariants run at the start and after every pass that reports a
// change; a failure names the pass (`after pass 'cse'`). By default the one
// invariant is the IR verifier with the op table's per-op check
// (ops/op_verifier.h); ClearInvariants/AddInvariant replace or extend it.
// With `dump_after` set to a pass name or "all", the IR is recorded after
// each matching pass that changed it. Each pass writes its artefacts into
// the pipeline's CompileReport (log, proof, fusion groups).
#ifndef TALLY_PASSES_PIPELINE_H_
#define TALLY_PASSES_PIPELINE_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "passes/compile_report.h"
#include "passes/pass.h"

namespace tally::passes {

// An invariant a module must keep between passes; a failure is its message.
using Invariant = std::function<absl::Status(const ir::Module&)>;

class PassPipeline : public Pass {
 public:
  explicit PassPipeline(std::string name);

  template <typename P, typename... Args>
  P* AddPass(Args&&... args) {
    auto p = std::make_unique<P>(std::forward<Args>(args)...);
    P* raw = p.get();
    passes_.push_back(std::move(p));
    return raw;
  }
  void AddPass(std::unique_ptr<Pass> p) { passes_.push_back(std::move(p)); }

  // Invariants: the verifier by default.
  void ClearInvariants() { invariants_.clear(); }
  void AddInvariant(std::string name, Invariant check) { invariants_.emplace_back(std::move(name), std::move(check)); }

  // set_dump_after selects dumps: a pass name, "all", or "" for none.
  void set_dump_after(std::string d) { dump_after_ = std::move(d); }

  absl::string_view name() const override { return name_; }
  // Run runs every pass in order; returns true when any changed the module.
  // The report is rebuilt on each run.
  absl::StatusOr<bool> Run(ir::Module& m) override;
  // Report adds this pipeline's log and artefacts to an enclosing one's.
  void Report(CompileReport& report) const override;

  const CompileReport& report() const { return report_; }
  const std::vector<PassRecord>& records() const { return report_.log; }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

 private:
  absl::Status CheckInvariants(const ir::Module& m, absl::string_view where) const;

  std::string name_;
  std::string dump_after_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<std::pair<std::string, Invariant>> invariants_;
  CompileReport report_;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_PIPELINE_H_
