// SelfTest: drives a running InferenceServer over HTTP the way clients
// would, and checks what the embedded Session reports against what the
// clients sent and were answered.
#ifndef TALLY_EXAMPLES_INFERENCE_SERVER_SELF_TEST_H_
#define TALLY_EXAMPLES_INFERENCE_SERVER_SELF_TEST_H_

#include <cstdint>
#include <ostream>

#include "absl/status/status.h"

namespace tally::examples {

// SelfTestOptions say where the server listens and what to send.
struct SelfTestOptions {
  int port = 0;
  int64_t requests = 200;  // labelled requests, spread over `threads` clients
  int threads = 4;
  int64_t max_rows = 16;  // rows per request: uniform in [1, max_rows]
  int64_t features = 4;
  int64_t classes = 3;
  uint64_t seed = 1;
};

// RunSelfTest sends the labelled requests from concurrent clients, then
// checks, printing one line per check to `out`:
//   - every request is answered 200 with one prediction (the argmax of its
//     scores) per row;
//   - `GET /v1/metrics` counts the requests and rows sent, and its
//     multiclass_accuracy (average=micro) and multiclass_confusion_matrix
//     equal those computed from the returned predictions and the labels;
//   - `GET /metrics` has the same counters;
//   - malformed requests are answered 400 with a one-line error and only
//     counted as rejected; an unlabelled one is answered 200; neither
//     changes anything else in /v1/metrics or /metrics.
// The last line is "self-test: PASS" or "self-test: FAIL (K checks)"; the
// status is not OK when a check failed.
absl::Status RunSelfTest(const SelfTestOptions& options, std::ostream& out);

}  // namespace tally::examples

#endif  // TALLY_EXAMPLES_INFERENCE_SERVER_SELF_TEST_H_
