#include <ATen/ATen.h>
#include <iostream>
#include "api/tally.h"

int main() {
  tally::NamedTensors inputs = {{"preds", at::tensor({0, 2, 1, 2, 0, 1, 1, 0}, at::kLong)},
                                {"target", at::tensor({0, 1, 1, 2, 0, 2, 1, 0}, at::kLong)}};
  auto results = tally::Evaluate(
      {"multiclass_accuracy(num_classes=3, average=micro)", "multiclass_f1_score(num_classes=3, average=macro)"},
      inputs, tally::EvalOptions());
  if (!results.ok()) return std::cerr << results.status() << "\n", 1;
  std::cout << tally::ResultsToJson(*results) << "\n";
}
