// InferenceServer: the HTTP front of the example. It runs a Model on each
// request and folds the request's logits and labels into an embedded
// tally::Session on the model's device; reads export the Session.
//
//   POST /predict     {"features": [[...], ...], "labels": [...]}
//                  -> {"predictions": [class ids], "scores": [[logits], ...]}
//   GET  /metrics     Session::ExportPrometheus() (text format 0.0.4)
//   GET  /v1/metrics  {"set", "counters": {updates, rows, rejected,
//                      compute_errors}, "metrics": [{"metric", "value"}]}
//
// Errors are one-line JSON bodies {"error": "..."}: 400 for a bad request
// (checked on the host before any tensor is made: it only counts as
// rejected), 500 when the model or the session fails.
#ifndef TALLY_EXAMPLES_INFERENCE_SERVER_SERVER_H_
#define TALLY_EXAMPLES_INFERENCE_SERVER_SERVER_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/serving/session.h"
#include "examples/inference_server/model.h"

namespace httplib {
class Server;
}

namespace tally::examples {

// Reply is one HTTP answer, without the transport.
struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
};

// InferenceServer serves `model` and updates `session` (whose signature is
// preds f32[N, classes], target i64[N] on the model's device); both must
// outlive it. The handlers are thread-safe.
class InferenceServer {
 public:
  InferenceServer(const Model& model, Session& session);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Predict answers `POST /predict` with `body`.
  Reply Predict(absl::string_view body) const;
  // PrometheusMetrics answers `GET /metrics`.
  Reply PrometheusMetrics() const;
  // JsonMetrics answers `GET /v1/metrics`.
  Reply JsonMetrics() const;

  // Bind listens on 127.0.0.1:`port` (0: a free port) and returns the port.
  absl::StatusOr<int> Bind(int port);
  // Serve answers requests on the bound socket until Stop; it blocks.
  absl::Status Serve();
  // Stop makes a running or starting Serve return (any thread; a Serve must
  // have been or be about to be called, as httplib ignores an early stop).
  void Stop();

 private:
  const Model& model_;
  Session& session_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> serve_returned_{false};
};

}  // namespace tally::examples

#endif  // TALLY_EXAMPLES_INFERENCE_SERVER_SERVER_H_
