// The state budget: the most memory a program's fixed-size states may take,
// checked when it is compiled, before any state is allocated. A program over
// it is a ResourceExhausted error naming the metric, the argument that
// drives the size and the bytes, instead of an allocator failure (or the
// kernel's OOM killer) later.
#ifndef TALLY_ENGINE_RUNTIME_STATE_BUDGET_H_
#define TALLY_ENGINE_RUNTIME_STATE_BUDGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/metric.h"
#include "engine/ir/module.h"

namespace tally {

// DefaultStateBudget is half of this machine's physical memory (8 GiB if
// that cannot be read).
int64_t DefaultStateBudget();

// CheckStateBudget fails with ResourceExhausted when the fixed-size states
// of `m` need more than `budget` bytes (budget <= 0: DefaultStateBudget()).
// The one-line message names the largest state's metric, its shape, the
// integer argument of the metric's spec that sizes it (from `entries`), the
// bytes needed and the budget.
absl::Status CheckStateBudget(const ir::Module& m, const std::vector<dsl::CollectionEntry>& entries, int64_t budget);

// SizeDrivers lists the integer arguments ("num_classes=131072",
// "thresholds=100000") of the spec of the metric owning `s` that one of its
// dims equals (or exceeds by one: a histogram of T thresholds has T + 1
// bins), so that inspect and the budget error can say what sizes a state.
std::vector<std::string> SizeDrivers(const ir::StateDecl& s, const std::vector<dsl::CollectionEntry>& entries);

// SizeArg is one integer argument of a metric's spec ("max_k", 100000000),
// kept by a program so that a budget error can name what sizes a tensor.
struct SizeArg {
  std::string metric, key;
  int64_t value = 0;
};
std::vector<SizeArg> SizeArgsOf(const std::vector<dsl::CollectionEntry>& entries);

// SymbolSizes binds symbolic dims (N, R, ...) to sizes; the names point into
// the module's types, so binding them per update copies no string.
using SymbolSizes = absl::InlinedVector<std::pair<const std::string*, int64_t>, 4>;

// Footprint is what a graph's nodes allocate: the bytes of every node
// output, as a sum of terms `coeff * product of symbolic dims` (the fixed
// dims, those set by arguments such as max_k, num_classes or thresholds,
// folded into coeff), so that a program can tell, before it runs a plan for
// a batch of N rows (or over R accumulated rows), whether the temporaries
// fit the budget: one multiply-add per term, a handful per graph.
class Footprint {
 public:
  Footprint() = default;
  explicit Footprint(const ir::Graph& g);
  // Of `values` alone (an update's partials of cat states: the rows it
  // appends); Largest is then empty.
  explicit Footprint(const std::vector<const ir::Value*>& values);
  // Bytes with `sizes` bound; a symbol `sizes` does not bind counts 0, so
  // Bytes({}) is the fixed part, which a compiler can check up front.
  double Bytes(const SymbolSizes& sizes) const;
  // Largest describes the largest node output under `sizes`, with the
  // arguments in `args` that one of its dims equals:
  //   "f64[R,100000000] (50 x 100000000) from max_k=100000000 of retrieval_precision_recall_curve"
  std::string Largest(const SymbolSizes& sizes, const std::vector<SizeArg>& args) const;

 private:
  struct Term {
    double coeff = 0;
    std::vector<std::string> symbols;
  };
  void Add(const ir::Value& v);
  std::vector<Term> terms_;
  const ir::Graph* graph_ = nullptr;
};

// CheckFootprint fails with ResourceExhausted, before anything is
// allocated, when `f` under `sizes` needs more than `budget` bytes (<= 0:
// DefaultStateBudget()). `what` says what would run ("update of 50 rows",
// "compute over 50 accumulated rows").
absl::Status CheckFootprint(const Footprint& f, const SymbolSizes& sizes, int64_t budget,
                            const std::vector<SizeArg>& args, absl::string_view metric_names, absl::string_view what);

// FormatBytes prints "N bytes (x.y GiB)" (MiB, KiB below a GiB).
std::string FormatBytes(int64_t bytes);

}  // namespace tally

#endif  // TALLY_ENGINE_RUNTIME_STATE_BUDGET_H_
