#include "tools/tally/serve.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dirent.h>
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/checkpoint_format.h"
#include "engine/exec/aten_types.h"
#include "engine/exec/torch_status.h"
#include "engine/session.h"
#include "engine/status_macros.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "tools/tally/evaluate.h"
#include "tools/tally/json_inputs.h"

namespace tally::tools {
namespace {

constexpr char kJson[] = "application/json";
constexpr char kPrometheusText[] = "text/plain; version=0.0.4; charset=utf-8";

// OneLine is a status message as `tally eval` prints it: one line.
std::string OneLine(const absl::Status& st) {
  std::string msg(st.message());
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  return msg;
}

void Fail(httplib::Response& res, int code, const absl::Status& st) {
  res.status = code;
  res.set_content(nlohmann::json{{"error", OneLine(st)}}.dump(), kJson);
}

void Ok(httplib::Response& res) { res.set_content("{\"ok\": true}", kJson); }

// RemoveStaleTemps deletes `<checkpoint>.tmp.<pid>.<n>` files a killed
// server left behind mid-write (checkpoint::WriteFileAtomically's names).
void RemoveStaleTemps(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string prefix = absl::StrCat(slash == std::string::npos ? path : path.substr(slash + 1), ".tmp.");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    if (!absl::ConsumePrefix(&name, prefix)) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(name, '.');
    uint64_t x = 0;
    if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &x) && absl::SimpleAtoi(parts[1], &x)) {
      ::unlink(absl::StrCat(dir, "/", e->d_name).c_str());
    }
  }
  closedir(d);
}

// MetricsServer holds the session, created by the first accepted update
// (or a checkpoint) and never replaced afterwards.
class MetricsServer {
 public:
  explicit MetricsServer(ServeOptions options) : options_(std::move(options)) {}

  absl::Status Restore() {
    if (options_.checkpoint.empty()) return absl::OkStatus();
    // Refuses a directory, FIFO or device (or a link to one) at start-up;
    // a link to a regular file is written through.
    TALLY_ASSIGN_OR_RETURN(std::string target, checkpoint::WriteTarget(options_.checkpoint));
    RemoveStaleTemps(target);
    if (::access(options_.checkpoint.c_str(), F_OK) != 0) return absl::OkStatus();  // a first start
    TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, Session::CheckpointSignature(options_.checkpoint));
    TALLY_ASSIGN_OR_RETURN(Session * s, Create(sig));
    return s->LoadCheckpoint(options_.checkpoint);
  }

  void Update(const httplib::Request& req, httplib::Response& res) {
    absl::Status done = DoUpdateCaught(req.body);
    if (!done.ok()) return Fail(res, 400, done);
    Ok(res);
  }

  void Metrics(httplib::Response& res) {
    Session* s = session_.load(std::memory_order_acquire);
    if (s == nullptr) {
      return Fail(res, 409, absl::FailedPreconditionError(
                                "no update received yet: the first update fixes the inputs' dtypes and shapes"));
    }
    absl::StatusOr<std::vector<MetricValue>> values = absl::InternalError("not computed");
    absl::Status caught = exec::CatchTorch([&] { values = s->Compute(); }, "compute");
    if (!caught.ok()) return Fail(res, 500, caught);
    if (!values.ok()) return Fail(res, 400, values.status());
    std::vector<EvalResult> results;
    for (MetricValue& v : *values) results.push_back({v.spec, v.value.tensor, std::move(v.value)});
    res.set_content(ResultsToJson(results), kJson);
  }

  void Prometheus(httplib::Response& res) {
    Session* s = session_.load(std::memory_order_acquire);
    res.set_content(s == nullptr ? std::string() : s->ExportPrometheus(), kPrometheusText);
  }

  void Reset(httplib::Response& res) {
    Session* s = session_.load(std::memory_order_acquire);
    if (s != nullptr) {
      absl::Status st = s->Reset();
      if (!st.ok()) return Fail(res, 500, st);
    }
    Ok(res);
  }

  void Checkpoint(httplib::Response& res) {
    if (options_.checkpoint.empty()) {
      return Fail(res, 400, absl::FailedPreconditionError("no --checkpoint FILE was given to tally serve"));
    }
    Session* s = session_.load(std::memory_order_acquire);
    if (s == nullptr) {
      return Fail(res, 409, absl::FailedPreconditionError("no update received yet: nothing to checkpoint"));
    }
    // One writer at a time: each write is atomic, and the last one wins.
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    absl::Status st = s->SaveCheckpoint(options_.checkpoint);
    if (!st.ok()) return Fail(res, 500, st);
    Ok(res);
  }

 private:
  absl::Status DoUpdateCaught(const std::string& body) {
    absl::Status st;
    absl::Status caught = exec::CatchTorch([&] { st = DoUpdate(body); }, "update");
    return caught.ok() ? st : caught;
  }

  absl::Status DoUpdate(const std::string& body) {
    Session* s = session_.load(std::memory_order_acquire);
    if (s == nullptr) return FirstUpdate(body);
    absl::StatusOr<NamedTensors> inputs = Parse(body);
    if (inputs.ok()) inputs = Prepare(*std::move(inputs), s->signature());
    if (!inputs.ok()) {
      // Turned away before the session saw it: still a rejected update.
      s->CountRejected();
      return inputs.status();
    }
    return s->Update(*inputs);
  }

  // Parse reads a body as named tensors and checks what eval checks first
  // (known names, one row count).
  static absl::StatusOr<NamedTensors> Parse(const std::string& body) {
    TALLY_ASSIGN_OR_RETURN(NamedTensors parsed, TensorsFromJson(body));
    TALLY_RETURN_IF_ERROR(CheckInputNamesAndRows(parsed));
    return parsed;
  }

  // Prepare makes parsed inputs fit the session's signature `sig`. When
  // the request's own signature differs, the error for data that cannot
  // work is the one `tally eval` gives for it: what building the metrics
  // for the request's shapes and dtypes says (remembered per signature).
  absl::StatusOr<NamedTensors> Prepare(NamedTensors parsed, const dsl::Signature& sig) {
    // Lossless casts first (integers for a float input are fine); data they
    // cannot fit gets eval's word on it, else the cast's own error.
    absl::StatusOr<NamedTensors> conformed = ConformToSignature(parsed, sig);
    TALLY_ASSIGN_OR_RETURN(dsl::Signature own, SignatureOf(conformed.ok() ? *conformed : parsed));
    const std::string key = SignatureKey(own);
    if (key != SignatureKey(sig)) TALLY_RETURN_IF_ERROR(Buildable(key, own));
    TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, std::move(conformed));
    if (options_.device.name != "cpu") {
      TALLY_ASSIGN_OR_RETURN(c10::Device dev, exec::ToDevice(options_.device));
      for (auto& [name, t] : inputs) t = t.to(dev);
    }
    return inputs;
  }

  // Buildable is what building the metrics for `sig` says (eval's errors),
  // remembered per signature key.
  absl::Status Buildable(const std::string& key, const dsl::Signature& sig) {
    std::lock_guard<std::mutex> lock(build_mu_);
    auto it = built_.find(key);
    // Bounded: clients choose the shapes.
    if (it == built_.end() && built_.size() >= 256) built_.clear();
    if (it == built_.end()) it = built_.emplace(key, BuildEntries(options_.specs, sig, options_.device).status()).first;
    return it->second;
  }

  // SignatureKey names a signature up to its leading (row) dims.
  static std::string SignatureKey(const dsl::Signature& sig) {
    std::string key;
    for (const dsl::InputSpec& in : sig) {
      absl::StrAppend(&key, in.name, ":", ir::DTypeName(in.dtype), "[");
      for (size_t d = 1; d < in.shape.size(); ++d) absl::StrAppend(&key, in.shape[d], ",");
      absl::StrAppend(&key, in.shape.size(), "];");
    }
    return key;
  }

  // FirstUpdate compiles the session for the first body's signature and
  // publishes it only if that body is accepted: a rejected first update
  // fixes nothing. Requests racing it wait here.
  absl::Status FirstUpdate(const std::string& body) {
    std::lock_guard<std::mutex> lock(create_mu_);
    if (session_.load(std::memory_order_acquire) != nullptr) return DoUpdate(body);
    TALLY_ASSIGN_OR_RETURN(NamedTensors parsed, Parse(body));
    TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, SignatureOf(parsed));
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Session> candidate, NewSession(sig));
    TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, Prepare(std::move(parsed), sig));
    TALLY_RETURN_IF_ERROR(candidate->Update(inputs));
    owned_ = std::move(candidate);
    session_.store(owned_.get(), std::memory_order_release);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Session>> NewSession(const dsl::Signature& sig) const {
    SessionOptions so;
    so.device = options_.device;
    so.backend = options_.backend;
    so.reject_invalid_values = true;
    so.max_state_bytes = options_.max_state_bytes;
    return Session::CreateDefault(options_.specs, sig, so);
  }

  // Create makes and publishes the session for `sig` (a restored checkpoint).
  absl::StatusOr<Session*> Create(const dsl::Signature& sig) {
    std::lock_guard<std::mutex> lock(create_mu_);
    TALLY_ASSIGN_OR_RETURN(owned_, NewSession(sig));
    session_.store(owned_.get(), std::memory_order_release);
    return owned_.get();
  }

  ServeOptions options_;
  std::mutex create_mu_, checkpoint_mu_, build_mu_;
  absl::flat_hash_map<std::string, absl::Status> built_;  // under build_mu_
  std::unique_ptr<Session> owned_;
  std::atomic<Session*> session_{nullptr};
};

}  // namespace

bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  // 127.0.0.0/8, written as a dotted quad.
  std::vector<absl::string_view> parts = absl::StrSplit(host, '.');
  int first = 0;
  if (parts.size() != 4 || !absl::SimpleAtoi(parts[0], &first) || first != 127) return false;
  for (absl::string_view p : parts) {
    int v = 0;
    if (!absl::SimpleAtoi(p, &v) || v < 0 || v > 255) return false;
  }
  return true;
}

absl::Status Serve(const ServeOptions& options) {
  if (options.specs.empty()) return absl::InvalidArgumentError("no --metric given");
  // Requests run on the server's threads; intra-op threads would only
  // compete with them for the cores.
  at::set_num_threads(1);
  // A spec that cannot parse or names no metric fails at start-up; its
  // arguments are checked when the first update compiles it (they may
  // depend on the inputs, e.g. num_classes against the logits' width).
  for (const std::string& text : options.specs) {
    TALLY_ASSIGN_OR_RETURN(metrics::MetricSpec spec, metrics::ParseMetricSpec(text));
    if (metrics::FindMetric(spec.name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown metric '", spec.name, "' (see tally list-metrics)"));
    }
  }
  MetricsServer state(options);
  TALLY_RETURN_IF_ERROR(state.Restore());

  httplib::Server server;
  // Without Nagle's algorithm: a kept-alive client's next request would
  // otherwise wait for the delayed ACK of the last answer (~40 ms).
  server.set_tcp_nodelay(true);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which lets
  // a second server bind the same port and take half the requests.
  server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, reinterpret_cast<const void*>(&yes), sizeof(yes));
  });
  server.set_payload_max_length(static_cast<size_t>(options.max_body_bytes));
  server.set_error_handler([&options](const httplib::Request&, httplib::Response& res) {
    if (res.status == 413) {
      Fail(res, 413, absl::ResourceExhaustedError(absl::StrCat(
                         "request body over ", options.max_body_bytes,
                         " bytes (--max-body-bytes): send smaller batches")));
    }
  });
  server.Post("/v1/update", [&](const httplib::Request& req, httplib::Response& res) { state.Update(req, res); });
  server.Get("/v1/metrics", [&](const httplib::Request&, httplib::Response& res) { state.Metrics(res); });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) { state.Prometheus(res); });
  server.Post("/v1/reset", [&](const httplib::Request&, httplib::Response& res) { state.Reset(res); });
  server.Post("/v1/checkpoint", [&](const httplib::Request&, httplib::Response& res) { state.Checkpoint(res); });

  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options.host, ":", options.port));
  }
  if (!IsLoopback(options.host)) {
    std::cerr << "tally serve: warning: listening on " << options.host
              << " serves every client that can reach port " << port
              << ", with no authentication: any of them can post updates, reset the metrics and read them "
                 "(bind 127.0.0.1, the default, and put an authenticating proxy in front to serve others)"
              << std::endl;
  }
  std::cout << "listening on " << options.host << ":" << port << std::endl;

  // SIGINT/SIGTERM stop the server from a thread of their own (a handler
  // may not call stop()).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::atomic<bool> done{false};
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (!done.load()) server.stop();
  });
  server.listen_after_bind();
  done.store(true);
  kill(getpid(), SIGTERM);  // wakes the stopper if the server stopped by itself
  stopper.join();
  return absl::OkStatus();
}

}  // namespace tally::tools
