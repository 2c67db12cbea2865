// The embedded demo data set `tally eval` uses when no --input is given.
#ifndef TALLY_TOOLS_TALLY_DEMO_DATA_H_
#define TALLY_TOOLS_TALLY_DEMO_DATA_H_

#include <string>
#include <vector>

#include "engine/program.h"

namespace tally::tools {

// DemoData is a small deterministic data set and the metrics shown on it.
struct DemoData {
  NamedTensors inputs;
  std::vector<std::string> specs;  // used when the user gave no --metric
  std::string description;
};

// MakeDemoData picks a data set that fits `specs`: 3-class logits and labels
// for classification (the default), float pairs for regression, values for
// aggregation, binary/multilabel probabilities for those metrics.
DemoData MakeDemoData(const std::vector<std::string>& specs);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_DEMO_DATA_H_
