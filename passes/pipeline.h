// PassPipeline: an ordered list of passes with the verifier between them.
//
// The verifier runs at the start and after every pass that reports a change;
// a failure names the pass (`after pass 'cse'`). With `dump_after` set to a
// pass name or "all", the IR is recorded after each matching pass that
// changed it. The pipeline records a log line per pass for `inspect`.
#ifndef TALLY_PASSES_PIPELINE_H_
#define TALLY_PASSES_PIPELINE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pass.h"

namespace tally::passes {

// PassRecord is what one pass did.
struct PassRecord {
  std::string pass;
  bool changed = false;
  std::map<std::string, int64_t> counters;
  std::string dump;  // the IR after the pass, when requested and changed
};

class PassPipeline {
 public:
  explicit PassPipeline(std::string name) : name_(std::move(name)) {}

  template <typename P, typename... Args>
  P* AddPass(Args&&... args) {
    auto p = std::make_unique<P>(std::forward<Args>(args)...);
    P* raw = p.get();
    passes_.push_back(std::move(p));
    return raw;
  }
  void AddPass(std::unique_ptr<Pass> p) { passes_.push_back(std::move(p)); }
  // set_dump_after selects dumps: a pass name, "all", or "" for none.
  void set_dump_after(std::string d) { dump_after_ = std::move(d); }

  // Run runs every pass in order; returns true when any changed the module.
  absl::StatusOr<bool> Run(ir::Module& m);
  const std::vector<PassRecord>& records() const { return records_; }
  const std::string& name() const { return name_; }
  const std::vector<std::unique_ptr<Pass>>& passes() const { return passes_; }

 private:
  std::string name_;
  std::string dump_after_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_PIPELINE_H_
