// The embedded demo data set `tally eval` uses when no --input is given.
#ifndef TALLY_TOOLS_TALLY_DEMO_DATA_H_
#define TALLY_TOOLS_TALLY_DEMO_DATA_H_

#include <string>
#include <vector>

#include "engine/runtime/program.h"

namespace tally::tools {

// DemoData is a small deterministic data set and the metrics shown on it.
struct DemoData {
  NamedTensors inputs;
  std::vector<std::string> specs;  // used when the user gave no --metric
  std::string description;
};

// MakeDemoData picks a data set that fits `specs`: logits and labels for
// multiclass (the default; 3 classes, or the specs' num_classes),
// probabilities for binary and multilabel (4 labels, or num_labels), float
// pairs for regression (positive rows for kl_divergence and
// cosine_similarity), values for
// aggregation, and 8 queries for retrieval.
DemoData MakeDemoData(const std::vector<std::string>& specs);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_DEMO_DATA_H_
