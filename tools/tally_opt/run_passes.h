// RunPassesChecked: tally_opt's driver loop, which also holds each pass to
// its "changed" answer.
//
// Each pass runs alone in a PassPipeline of its own, so the verifier runs
// before it and again after it whenever it reports a change (as in the
// compiler's pipelines), and the module is printed before and after it. A
// pass whose run changed the printed IR while answering "unchanged" fails:
// the pipelines skip the verifier after such a pass, and the compiler's
// dumps and counters would lie. A pass that answers "changed" without
// changing anything is allowed (a conservative answer costs a verifier run).
#ifndef TALLY_TOOLS_TALLY_OPT_RUN_PASSES_H_
#define TALLY_TOOLS_TALLY_OPT_RUN_PASSES_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "engine/ir/module.h"
#include "passes/pass.h"

namespace tally::tools {

// RunPassesChecked runs `passes` over `module` in order. An error from a
// pass or the verifier is returned as the pipeline words it (`pass 'cse':
// ...`, `after pass 'cse': ...`); a pass that changed the printed module
// but answered false is Internal, naming the pass. With no passes the module
// is only verified.
absl::Status RunPassesChecked(std::vector<std::unique_ptr<passes::Pass>> passes, ir::Module& module);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_OPT_RUN_PASSES_H_
