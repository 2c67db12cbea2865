// Request: the JSON body of `POST /predict`, parsed and checked on the host
// before any tensor is made, so that a bad request changes nothing.
//
//   {"features": [[f, ...], ...], "labels": [l, ...]}
//
// `features` is a non-empty list of rows of `features` numbers each;
// `labels` (optional: without it the server only predicts) holds one class
// id in [0, classes) per row.
#ifndef TALLY_EXAMPLES_INFERENCE_SERVER_REQUEST_H_
#define TALLY_EXAMPLES_INFERENCE_SERVER_REQUEST_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tally::examples {

// PredictRequest is a checked request.
struct PredictRequest {
  int64_t rows = 0;
  std::vector<float> features;                 // rows * features, row-major
  std::optional<std::vector<int64_t>> labels;  // rows class ids, when given
};

// ParsePredictRequest parses `body`; anything malformed is an
// InvalidArgument with a one-line message naming the field.
absl::StatusOr<PredictRequest> ParsePredictRequest(absl::string_view body, int64_t features, int64_t classes);

}  // namespace tally::examples

#endif  // TALLY_EXAMPLES_INFERENCE_SERVER_REQUEST_H_
