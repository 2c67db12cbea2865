#include "examples/inference_server/server.h"

#include <ATen/ATen.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/runtime/result_text.h"
#include "examples/inference_server/request.h"
#include "support/torch_status.h"

namespace tally::examples {
namespace {

Reply Error(int status, const absl::Status& st) {
  // dump() escapes newlines, so the body is one line.
  return {status, nlohmann::json{{"error", std::string(st.message())}}.dump() + "\n"};
}

// Answer turns a handler's Reply into the httplib response.
void Answer(const Reply& r, httplib::Response& res) {
  res.status = r.status;
  res.set_content(r.body, r.content_type.c_str());
}

}  // namespace

InferenceServer::InferenceServer(const Model& model, Session& session)
    : model_(model), session_(session), http_(std::make_unique<httplib::Server>()) {
  http_->Post("/predict",
              [this](const httplib::Request& req, httplib::Response& res) { Answer(Predict(req.body), res); });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { Answer(PrometheusMetrics(), res); });
  http_->Get("/v1/metrics", [this](const httplib::Request&, httplib::Response& res) { Answer(JsonMetrics(), res); });
  // The handlers return errors as Replies; this only catches what they missed.
  http_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    Answer(Error(500, absl::InternalError("unexpected exception")), res);
  });
  http_->set_keep_alive_timeout(1);
}

InferenceServer::~InferenceServer() = default;

Reply InferenceServer::Predict(absl::string_view body) const {
  absl::StatusOr<PredictRequest> req = ParsePredictRequest(body, model_.features(), model_.classes());
  if (!req.ok()) {
    // Counted like an update the session rejects; nothing else changes.
    session_.CountRejected();
    return Error(400, req.status());
  }
  at::Tensor x, labels;
  absl::Status st = support::CatchTorch(
      [&] {
        const auto on_device = at::TensorOptions().device(model_.device());
        // from_blob aliases req->features, which outlives x.
        x = at::from_blob(req->features.data(), {req->rows, model_.features()}, at::kFloat).to(on_device);
        if (req->labels) labels = at::tensor(*req->labels, at::kLong).to(on_device);
      },
      "moving the request to the model's device");
  if (!st.ok()) return Error(500, st);

  absl::StatusOr<at::Tensor> logits = model_.Forward(x);
  if (!logits.ok()) return Error(500, logits.status());
  if (labels.defined()) {
    // The logits stay on the model's device: the session reduces them there.
    st = session_.Update({{"preds", *logits}, {"target", labels}});
    if (!st.ok()) return Error(absl::IsInvalidArgument(st) ? 400 : 500, st);
  }

  // Only the response needs the outputs on the host.
  nlohmann::json out = {{"predictions", nlohmann::json::array()}, {"scores", nlohmann::json::array()}};
  st = support::CatchTorch(
      [&] {
        const at::Tensor scores = logits->to(at::kCPU).contiguous();
        const at::Tensor preds = scores.argmax(1);
        const auto s = scores.accessor<float, 2>();
        const auto p = preds.accessor<int64_t, 1>();
        for (int64_t r = 0; r < s.size(0); ++r) {
          out["predictions"].push_back(p[r]);
          nlohmann::json row = nlohmann::json::array();
          for (int64_t c = 0; c < s.size(1); ++c) row.push_back(s[r][c]);
          out["scores"].push_back(std::move(row));
        }
      },
      "reading the predictions");
  if (!st.ok()) return Error(500, st);
  return {200, out.dump() + "\n"};
}

Reply InferenceServer::PrometheusMetrics() const {
  return {200, session_.ExportPrometheus(), "text/plain; version=0.0.4"};
}

Reply InferenceServer::JsonMetrics() const {
  absl::StatusOr<SessionCounters> c = session_.Counters();
  if (!c.ok()) return Error(500, c.status());
  absl::StatusOr<std::vector<MetricValue>> values = session_.Compute();
  if (!values.ok()) return Error(500, values.status());
  nlohmann::json out = {
      {"set", "default"},
      {"counters",
       {{"updates", c->updates}, {"rows", c->rows}, {"rejected", c->rejected}, {"compute_errors", c->compute_errors}}},
      {"metrics", nlohmann::json::array()}};
  for (const MetricValue& v : *values) {
    // ValueToJson prints NaN as null, as JSON needs.
    nlohmann::json value = nlohmann::json::parse(ValueToJson(v.value), nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) return Error(500, absl::InternalError(absl::StrCat(v.spec, ": result is not JSON")));
    out["metrics"].push_back({{"metric", v.spec}, {"value", std::move(value)}});
  }
  return {200, out.dump() + "\n"};
}

absl::StatusOr<int> InferenceServer::Bind(int port) {
  const int bound =
      port == 0 ? http_->bind_to_any_port("127.0.0.1") : (http_->bind_to_port("127.0.0.1", port) ? port : -1);
  if (bound < 0) return absl::UnavailableError(absl::StrCat("cannot listen on 127.0.0.1:", port));
  return bound;
}

absl::Status InferenceServer::Serve() {
  const bool ok = http_->listen_after_bind();
  serve_returned_ = true;
  return ok ? absl::OkStatus() : absl::UnavailableError("the HTTP server stopped with an error");
}

void InferenceServer::Stop() {
  // httplib's stop() does nothing until the accept loop runs.
  while (!http_->is_running() && !serve_returned_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  http_->stop();
}

}  // namespace tally::examples
