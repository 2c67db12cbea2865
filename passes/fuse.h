// fuse: choose, for every composite op (a fusion group), between Tally's
// one-pass kernel and its primitive decomposition.
//
// With FusePolicy::kFused a composite stays whole where the op table lists a
// fused kernel for the program's device (cpu and meta today) and is
// decomposed into primitive ATen ops elsewhere (cuda:N, mps). kReference
// always decomposes: the ATen composition that tests compare the fused
// kernels against. Identical composites were already merged by cse, so a
// collection runs each group once. Before choosing, a composite whose op
// has a prune function is narrowed to the results in use (reg_stats drops
// the error moments when no explained_variance reads them). Counters:
// fused_groups, decomposed, pruned, aten_calls_per_update.
#ifndef TALLY_PASSES_FUSE_H_
#define TALLY_PASSES_FUSE_H_

#include <string>
#include <vector>

#include "passes/pass.h"

namespace tally::passes {

enum class FusePolicy { kFused, kReference };

class Fuse : public Pass {
 public:
  Fuse(ir::Device device, FusePolicy policy) : device_(std::move(device)), policy_(policy) {}
  absl::string_view name() const override { return "fuse"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
  // groups describes each kept fusion group, e.g.
  // "mc_confmat {num_classes=10}: 1 kernel for 11 ATen ops".
  const std::vector<std::string>& groups() const { return groups_; }
  void Report(CompileReport& report) const override { report.fusion_groups = groups_; }

 private:
  ir::Device device_;
  FusePolicy policy_;
  std::vector<std::string> groups_;
};

// CountAtenCalls is the number of kernels one run of `g` dispatches
// (constants are materialized once and not counted).
int CountAtenCalls(const ir::Graph& g);

}  // namespace tally::passes

#endif  // TALLY_PASSES_FUSE_H_
