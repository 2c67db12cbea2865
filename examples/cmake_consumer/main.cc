// tally_consumer: Tally embedded the way a server embeds it, built with CMake
// against an installed Tally (find_package(Tally)). It builds a collection
// from metric spec strings, feeds it labelled batches and prints the results
// as `tally eval --format json` prints them, so the two can be compared.
//
//   tally_consumer [--batch-rows N] PREDS.npy TARGET.npy [SPEC ...]
//
// The inputs are NumPy arrays (the files `tally eval --input preds=...
// --input target=...` reads); their rows go to Session::Update N at a time
// (default 100), as a server's requests would. Without SPECs it computes
// binary_accuracy, binary_f1_score(threshold=0.3), binary_auroc and
// binary_average_precision. Errors print one line on stderr and exit 1.
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"  // or <tally/api/tally.h>

namespace {

constexpr char kUsage[] = "usage: tally_consumer [--batch-rows N] PREDS.npy TARGET.npy [SPEC ...]";

// ReadInput reads one .npy file as a CPU tensor.
absl::StatusOr<at::Tensor> ReadInput(const std::string& path) {
  absl::StatusOr<tally::io::NpyArray> array = tally::io::ReadNpy(path);
  if (!array.ok()) return array.status();
  return tally::TensorFromNpy(*array);
}

absl::Status Run(int argc, char** argv) {
  int64_t batch_rows = 100;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "--batch-rows") {
    if (!absl::SimpleAtoi(args[1], &batch_rows) || batch_rows < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--batch-rows must be a positive integer, got '", args[1], "'"));
    }
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() < 2) return absl::InvalidArgumentError(kUsage);
  std::vector<std::string> specs(args.begin() + 2, args.end());
  if (specs.empty()) {
    specs = {"binary_accuracy", "binary_f1_score(threshold=0.3)", "binary_auroc", "binary_average_precision"};
  }

  absl::StatusOr<at::Tensor> preds = ReadInput(args[0]);
  if (!preds.ok()) return preds.status();
  absl::StatusOr<at::Tensor> target = ReadInput(args[1]);
  if (!target.ok()) return target.status();
  const tally::NamedTensors inputs = {{"preds", *preds}, {"target", *target}};

  // The collection: the specs compiled together into one program, for the
  // inputs' dtypes and trailing shapes. A server does this once at start-up.
  absl::StatusOr<tally::dsl::Signature> sig = tally::SignatureOf(inputs);
  if (!sig.ok()) return sig.status();
  tally::SessionOptions options;  // options.device: the model's (cpu here); batches must be on it
  absl::StatusOr<std::unique_ptr<tally::Session>> session = tally::CreateDefaultSession(specs, *sig, options);
  if (!session.ok()) return session.status();

  // The updates, one batch of rows each; what a request handler would call
  // (Update is thread-safe). A bad batch is refused whole, with one line.
  const int64_t rows = preds->dim() > 0 ? preds->size(0) : 1;
  for (int64_t begin = 0; begin < rows; begin += batch_rows) {
    const int64_t n = std::min(batch_rows, rows - begin);
    absl::Status st =
        (*session)->Update({{"preds", preds->narrow(0, begin, n)}, {"target", target->narrow(0, begin, n)}});
    if (!st.ok()) return st;
  }

  // The results over every update so far, as `tally eval --format json`.
  absl::StatusOr<std::vector<tally::MetricValue>> values = (*session)->Compute();
  if (!values.ok()) return values.status();
  std::string json = "{\"results\": [";
  for (size_t i = 0; i < values->size(); ++i) {
    const tally::MetricValue& v = (*values)[i];
    absl::StrAppend(&json, i ? ", " : "", "{\"metric\": ", tally::JsonString(v.spec),
                    ", \"value\": ", tally::ValueToJson(v.value), "}");
  }
  std::cout << json << "]}\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status st = Run(argc, argv);
  if (!st.ok()) {
    std::cerr << "tally_consumer: " << st.message() << "\n";
    return 1;
  }
  return 0;
}
