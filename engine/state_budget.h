// The state budget: the most memory a program's fixed-size states may take,
// checked when it is compiled, before any state is allocated. A program over
// it is a ResourceExhausted error naming the metric, the argument that
// drives the size and the bytes, instead of an allocator failure (or the
// kernel's OOM killer) later.
#ifndef TALLY_ENGINE_STATE_BUDGET_H_
#define TALLY_ENGINE_STATE_BUDGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/ir/module.h"
#include "engine/metric.h"

namespace tally {

// DefaultStateBudget is half of this machine's physical memory (8 GiB if
// that cannot be read).
int64_t DefaultStateBudget();

// CheckStateBudget fails with ResourceExhausted when the fixed-size states
// of `m` need more than `budget` bytes (budget <= 0: DefaultStateBudget()).
// The one-line message names the largest state's metric, its shape, the
// integer argument of the metric's spec that sizes it (from `entries`), the
// bytes needed and the budget.
absl::Status CheckStateBudget(const ir::Module& m, const std::vector<CollectionEntry>& entries, int64_t budget);

// SizeDrivers lists the integer arguments ("num_classes=131072",
// "thresholds=100000") of the spec of the metric owning `s` that one of its
// dims equals (or exceeds by one: a histogram of T thresholds has T + 1
// bins), so that inspect and the budget error can say what sizes a state.
std::vector<std::string> SizeDrivers(const ir::StateDecl& s, const std::vector<CollectionEntry>& entries);

// FormatBytes prints "N bytes (x.y GiB)" (MiB, KiB below a GiB).
std::string FormatBytes(int64_t bytes);

}  // namespace tally

#endif  // TALLY_ENGINE_STATE_BUDGET_H_
