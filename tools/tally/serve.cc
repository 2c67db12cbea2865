#include "tools/tally/serve.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
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
#include "api/json_inputs.h"
#include "api/tally.h"
#include "engine/io/regular_file.h"
#include "engine/ir/aten_types.h"
#include "engine/persist/checkpoint_format.h"
#include "metrics/inputs.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "support/status_macros.h"
#include "support/torch_status.h"
#include "tools/tally/http_server.h"
#include "tools/tally/text_files.h"

namespace tally::tools {
namespace {

constexpr char kPrometheusText[] = "text/plain; version=0.0.4; charset=utf-8";

// OneLine is a status message as `tally eval` prints it: one line.
std::string OneLine(absl::string_view message) {
  std::string msg(message);
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  return msg;
}

std::string ErrorJson(int, const std::string& message) {
  // Bytes that are not UTF-8 (a path, an echoed input) become U+FFFD rather
  // than an exception.
  return nlohmann::json{{"error", OneLine(message)}}.dump(-1, ' ', /*ensure_ascii=*/false,
                                                          nlohmann::json::error_handler_t::replace);
}

HttpResponse Fail(int code, const absl::Status& st) {
  HttpResponse r;
  r.status = code;
  r.body = ErrorJson(code, std::string(st.message()));
  return r;
}

HttpResponse Ok() {
  HttpResponse r;
  r.body = "{\"ok\": true}";
  return r;
}

// RemoveStaleTemps deletes `<checkpoint>.tmp.<pid>.<n>` files a killed
// server left behind mid-write (persist::WriteFileAtomically's names).
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

// MetricsServer holds the session: created by the first accepted update
// (or a checkpoint), and replaced only when the first update after a reset
// brings another signature (counters carried over).
class MetricsServer {
 public:
  explicit MetricsServer(ServeOptions options) : options_(std::move(options)) {}

  absl::Status Restore() {
    if (options_.checkpoint.empty()) return absl::OkStatus();
    // Refuses a directory, FIFO or device (or a link to one) at start-up;
    // a link to a regular file is written through.
    TALLY_ASSIGN_OR_RETURN(std::string target, persist::WriteTarget(options_.checkpoint));
    RemoveStaleTemps(target);
    if (::access(options_.checkpoint.c_str(), F_OK) != 0) return absl::OkStatus();  // a first start
    TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, Session::CheckpointSignature(options_.checkpoint));
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, NewSession(sig));
    TALLY_RETURN_IF_ERROR(s->LoadCheckpoint(options_.checkpoint));
    Publish(std::move(s));
    return absl::OkStatus();
  }

  HttpResponse Update(const std::string& body) {
    absl::Status done;
    absl::Status caught = support::CatchTorch([&] { done = DoUpdate(body); }, "update");
    if (!caught.ok()) done = caught;
    return done.ok() ? Ok() : Fail(400, done);
  }

  HttpResponse Metrics() {
    std::shared_ptr<Session> s = Current();
    if (s == nullptr) {
      return Fail(409, absl::FailedPreconditionError(
                           "no update received yet: the first update fixes the inputs' dtypes and shapes"));
    }
    absl::StatusOr<std::vector<MetricValue>> values = absl::InternalError("not computed");
    absl::Status caught = support::CatchTorch([&] { values = s->Compute(); }, "compute");
    if (!caught.ok()) return Fail(500, caught);
    if (!values.ok()) return Fail(400, values.status());
    std::vector<EvalResult> results;
    for (MetricValue& v : *values) results.push_back({v.spec, v.value.tensor, std::move(v.value)});
    HttpResponse r;
    r.body = ResultsToJson(results);
    return r;
  }

  // State is the session's state file (api/state_files.h): what
  // `tally merge` folds with other replicas' states.
  HttpResponse State() {
    std::shared_ptr<Session> s = Current();
    if (s == nullptr) {
      return Fail(409, absl::FailedPreconditionError(
                           "no update received yet: the first update fixes the inputs' dtypes and shapes"));
    }
    absl::StatusOr<std::string> bytes = absl::InternalError("not saved");
    absl::Status caught = support::CatchTorch([&] { bytes = s->SaveState(); }, "state");
    if (!caught.ok()) return Fail(500, caught);
    if (!bytes.ok()) return Fail(500, bytes.status());
    HttpResponse r;
    r.content_type = "application/octet-stream";
    r.body = *std::move(bytes);
    return r;
  }

  HttpResponse Prometheus() {
    std::shared_ptr<Session> s = Current();
    HttpResponse r;
    r.content_type = kPrometheusText;
    if (s != nullptr) r.body = s->ExportPrometheus();
    return r;
  }

  HttpResponse Reset() {
    std::shared_ptr<Session> s = Current();
    if (s != nullptr) {
      absl::Status st = s->Reset();
      if (!st.ok()) return Fail(500, st);
      // The signature came from data (or a checkpoint of data): the next
      // update may fix another one.
      refit_.store(true);
    }
    return Ok();
  }

  HttpResponse Checkpoint() {
    if (options_.checkpoint.empty()) {
      return Fail(400, absl::FailedPreconditionError("no --checkpoint FILE was given to tally serve"));
    }
    std::shared_ptr<Session> s = Current();
    if (s == nullptr) return Fail(409, absl::FailedPreconditionError("no update received yet: nothing to checkpoint"));
    // One writer at a time: each write is atomic, and the last one wins.
    std::lock_guard<std::mutex> lock(checkpoint_mu_);
    absl::Status st = s->SaveCheckpoint(options_.checkpoint);
    return st.ok() ? Ok() : Fail(500, st);
  }

 private:
  std::shared_ptr<Session> Current() const { return std::atomic_load(&session_); }
  void Publish(std::shared_ptr<Session> s) { std::atomic_store(&session_, std::move(s)); }

  absl::Status DoUpdate(const std::string& body) {
    std::shared_ptr<Session> s = Current();
    if (s == nullptr || refit_.load()) return Fix(body);
    return UpdateParsed(*s, Parse(body, s.get()));
  }

  // UpdateParsed updates `s` with a parsed body, counting one that never
  // reaches it as rejected.
  absl::Status UpdateParsed(Session& s, absl::StatusOr<NamedTensors> parsed) {
    absl::StatusOr<NamedTensors> inputs =
        parsed.ok() ? Prepare(*std::move(parsed), s.signature()) : std::move(parsed).status();
    if (!inputs.ok()) {
      // Turned away before the session saw it: still a rejected update.
      s.CountRejected();
      return inputs.status();
    }
    return s.Update(*inputs);
  }

  // Parse reads a body as named tensors, its text inputs as token ids split
  // as the metrics split text (one vocabulary a request: ids are compared
  // only within a row) and their references as many as `session`'s first
  // batch had, and checks what eval checks first (known names, one row
  // count).
  absl::StatusOr<NamedTensors> Parse(const std::string& body, const Session* session) const {
    TALLY_ASSIGN_OR_RETURN(TextBody split, SplitTextBody(body));
    NamedTensors parsed;
    if (split.texts.empty() || split.json != "{}") {
      TALLY_ASSIGN_OR_RETURN(parsed, TensorsFromJson(split.json));
    }
    if (!split.texts.empty()) {
      TALLY_ASSIGN_OR_RETURN(parsed, WithTokenIds(options_.specs, parsed, split.texts));
      if (session != nullptr) FitReferences(parsed, split.texts, session->signature());
      // The canonical input order, as TensorsFromJson gives it.
      const auto rank = [](const std::string& name) {
        return std::find(metrics::kInputNames.begin(), metrics::kInputNames.end(), name) - metrics::kInputNames.begin();
      };
      std::stable_sort(parsed.begin(), parsed.end(),
                       [&](const auto& a, const auto& b) { return rank(a.first) < rank(b.first); });
    }
    TALLY_RETURN_IF_ERROR(CheckInputNamesAndRows(parsed));
    return parsed;
  }

  // FitReferences pads the token ids of `texts` ([N, L] or [N, R, L]) with
  // absent (all padding) references up to the R of `sig`: a text batch has
  // as many references as its fullest row, and rows may hold fewer.
  static void FitReferences(NamedTensors& inputs, const std::vector<TextInput>& texts, const dsl::Signature& sig) {
    for (auto& input : inputs) {
      const std::string& name = input.first;  // not a structured binding: lambdas capture it (C++17)
      at::Tensor& ids = input.second;
      const bool text = std::any_of(texts.begin(), texts.end(), [&](const TextInput& t) {
        return name == t.name || name == absl::StrCat(t.name, "_words");
      });
      auto spec = std::find_if(sig.begin(), sig.end(), [&](const dsl::InputSpec& in) { return in.name == name; });
      if (!text || spec == sig.end() || spec->shape.size() != 3) continue;
      if (ids.dim() == 2) ids = ids.unsqueeze(1);
      if (ids.size(1) < spec->shape[1]) ids = at::constant_pad_nd(ids, {0, 0, 0, spec->shape[1] - ids.size(1)}, -1);
    }
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
      TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(options_.device));
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

  // SignatureFor is the signature a body fixes: its shapes, the declared
  // dtypes (--dtype), and int64 for an undeclared bool input when the
  // metrics take that (later 0/1 integers then fit; bools always widen).
  absl::StatusOr<dsl::Signature> SignatureFor(const NamedTensors& parsed) {
    TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, SignatureOf(parsed));
    std::vector<dsl::InputSpec*> widened;
    for (dsl::InputSpec& in : sig) {
      auto declared = options_.dtypes.find(in.name);
      if (declared != options_.dtypes.end()) {
        in.dtype = declared->second;
      } else if (in.dtype == ir::DType::kBool) {
        in.dtype = ir::DType::kInt64;
        widened.push_back(&in);
      }
    }
    if (!widened.empty() && !Buildable(SignatureKey(sig), sig).ok()) {
      for (dsl::InputSpec* in : widened) in->dtype = ir::DType::kBool;
    }
    return sig;
  }

  // Fix compiles a session for the body's signature and publishes it only
  // if the body is accepted: a rejected first update fixes nothing. After a
  // reset, a body of the session's own signature just clears the mark; one
  // of another signature replaces the (empty) session, counters carried.
  // Requests racing it wait here.
  absl::Status Fix(const std::string& body) {
    std::lock_guard<std::mutex> lock(create_mu_);
    std::shared_ptr<Session> current = Current();
    if (current != nullptr && !refit_.load()) return UpdateParsed(*current, Parse(body, current.get()));
    absl::StatusOr<NamedTensors> parsed = Parse(body, current.get());
    absl::StatusOr<dsl::Signature> sig = parsed.ok() ? SignatureFor(*parsed) : parsed.status();
    if (current != nullptr && (!sig.ok() || SignatureKey(*sig) == SignatureKey(current->signature()))) {
      // Bad, or of the signature already fixed: the session decides.
      TALLY_RETURN_IF_ERROR(UpdateParsed(*current, std::move(parsed)));
      refit_.store(false);
      return absl::OkStatus();
    }
    absl::Status st = sig.status();
    if (st.ok()) st = CreateFrom(*std::move(parsed), *sig, current.get());
    if (!st.ok() && current != nullptr) current->CountRejected();
    return st;
  }

  absl::Status CreateFrom(NamedTensors parsed, const dsl::Signature& sig, const Session* previous) {
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Session> candidate, NewSession(sig));
    TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, Prepare(std::move(parsed), sig));
    TALLY_RETURN_IF_ERROR(candidate->Update(inputs));
    if (previous != nullptr) TALLY_RETURN_IF_ERROR(candidate->AddCounters(*previous));
    Publish(std::move(candidate));
    refit_.store(false);
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Session>> NewSession(const dsl::Signature& sig) const {
    SessionOptions so;
    so.device = options_.device;
    so.backend = options_.backend;
    so.reject_invalid_values = true;
    so.max_state_bytes = options_.max_state_bytes;
    return tally::CreateDefaultSession(options_.specs, sig, so);
  }

  ServeOptions options_;
  std::mutex create_mu_, checkpoint_mu_, build_mu_;
  absl::flat_hash_map<std::string, absl::Status> built_;  // under build_mu_
  // Requests hold the session they started with; a replaced one lives
  // until they finish.
  std::shared_ptr<Session> session_;  // std::atomic_load / atomic_store
  std::atomic<bool> refit_{false};    // a reset since the signature was fixed
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
  // Temporaries of 4 MiB and more are mapped and unmapped, not kept in
  // the per-thread malloc arenas: with glibc's sliding threshold a 32 MB
  // state held ~390 MB per worker thread after a few updates, 65 MB with
  // this (updates of such a state cost ~1.5x).
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  // A spec that cannot parse or names no metric fails at start-up; its
  // arguments are checked when the first update compiles it (they may
  // depend on the inputs, e.g. num_classes against the logits' width).
  for (const std::string& text : options.specs) {
    TALLY_ASSIGN_OR_RETURN(metrics::MetricSpec spec, metrics::ParseMetricSpec(text));
    if (metrics::FindMetric(spec.name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown metric '", spec.name, "' (see tally list-metrics)"));
    }
  }
  if (!options.dtypes.empty()) {
    NamedTensors declared;
    for (const auto& [name, dtype] : options.dtypes) declared.emplace_back(name, at::zeros({0}));
    absl::Status st = CheckInputNamesAndRows(declared);
    if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat("--dtype: ", st.message()));
  }
  MetricsServer state(options);
  TALLY_RETURN_IF_ERROR(state.Restore());

  HttpServerOptions http;
  http.host = options.host;
  http.port = options.port;
  http.write_threads = options.threads;
  http.max_connections = options.max_connections;
  http.max_connections_per_client = options.max_connections_per_client;
  http.idle_timeout_s = options.idle_timeout_s;
  http.request_timeout_s = options.request_timeout_s;
  http.max_body_bytes = options.max_body_bytes;
  http.max_buffered_bytes = std::max<int64_t>(options.max_body_bytes * 8, int64_t{64} << 20);
  http.error = &ErrorJson;
  if (!options.auth_token_file.empty()) {
    absl::StatusOr<std::string> token = io::ReadRegularFile(options.auth_token_file);
    if (!token.ok())
      return absl::Status(token.status().code(), absl::StrCat("--auth-token-file: ", token.status().message()));
    http.token = std::string(absl::StripAsciiWhitespace(*token));
    if (http.token.empty() || http.token.find_first_of(" \t\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--auth-token-file ", options.auth_token_file, ": the file must hold one token (no spaces)"));
    }
  }
  using Kind = HttpRoute::Kind;
  std::vector<HttpRoute> routes = {
      {"POST", "/v1/update", Kind::kWrite, [&](const std::string& body) { return state.Update(body); }},
      {"GET", "/v1/metrics", Kind::kRead, [&](const std::string&) { return state.Metrics(); }},
      {"GET", "/v1/state", Kind::kRead, [&](const std::string&) { return state.State(); }},
      {"GET", "/metrics", Kind::kRead, [&](const std::string&) { return state.Prometheus(); }},
      {"POST", "/v1/reset", Kind::kWrite, [&](const std::string&) { return state.Reset(); }},
      {"POST", "/v1/checkpoint", Kind::kWrite, [&](const std::string&) { return state.Checkpoint(); }},
  };

  // SIGINT/SIGTERM are taken by sigwait below; blocked before any server
  // thread starts, so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> server, HttpServer::Start(http, std::move(routes)));
  if (!IsLoopback(options.host) && !http.token.empty()) {
    std::cerr << "tally serve: warning: listening on " << options.host << " port " << server->port()
              << " over plain HTTP: the token (--auth-token-file) and the metrics cross the network unencrypted "
                 "(put a TLS proxy in front)"
              << std::endl;
  } else if (!IsLoopback(options.host)) {
    std::cerr << "tally serve: warning: listening on " << options.host << " serves every client that can reach port "
              << server->port()
              << ", with no authentication: any of them can post updates, reset the metrics and read them "
                 "(bind 127.0.0.1, the default, and put an authenticating proxy in front to serve others, or "
                 "give --auth-token-file)"
              << std::endl;
  }
  std::cout << "listening on " << options.host << ":" << server->port() << std::endl;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  server->Stop();
  return absl::OkStatus();
}

}  // namespace tally::tools
