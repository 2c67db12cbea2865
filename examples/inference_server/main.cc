// inference_server: a TorchScript classifier behind HTTP, with a
// tally::Session embedded the way docs/api.md ("Embed a Session in a server")
// describes: each labelled request's logits and labels update the session on
// the model's device; GET /metrics exports it for Prometheus.
//
//   inference_server [--port N] [--model FILE | --save-model FILE]
//                    [--device DEV] [--features F] [--classes C] [--seed S]
//                    [--self-test REQUESTS]
//
// Without --model it writes a tiny linear classifier (F features, C classes,
// weights from --seed) as TorchScript and loads it back from the file. The
// first stdout line is "listening on 127.0.0.1:PORT" (--port 0: a free
// port). It serves until SIGINT/SIGTERM, or with --self-test runs the
// self-test clients against itself and exits 0 when every check passed.
// Failures print one line on stderr and exit 1.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/ir/types.h"
#include "examples/inference_server/model.h"
#include "examples/inference_server/self_test.h"
#include "examples/inference_server/server.h"
#include "support/status_macros.h"

namespace tally::examples {
namespace {

constexpr char kUsage[] =
    "usage: inference_server [--port N] [--model FILE | --save-model FILE] [--device DEV]\n"
    "                        [--features F] [--classes C] [--seed S] [--self-test REQUESTS]\n";

absl::StatusOr<std::map<std::string, std::string>> ParseFlags(int argc, char** argv) {
  const std::map<std::string, std::string> defaults = {{"port", "8080"},  {"model", ""},     {"save-model", ""},
                                                       {"device", "cpu"}, {"features", "4"}, {"classes", "3"},
                                                       {"seed", "0"},     {"self-test", "0"}};
  std::map<std::string, std::string> flags = defaults;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string key = arg.rfind("--", 0) == 0 ? arg.substr(2) : "";
    if (!defaults.count(key)) return absl::InvalidArgumentError(absl::StrCat("unknown argument '", arg, "'"));
    if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("flag '", arg, "' needs a value"));
    flags[key] = argv[++i];
  }
  return flags;
}

absl::StatusOr<int64_t> IntFlag(const std::map<std::string, std::string>& flags, const std::string& key, int64_t min) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(flags.at(key), &v) || v < min) {
    return absl::InvalidArgumentError(absl::StrCat("--", key, " must be an integer >= ", min));
  }
  return v;
}

absl::Status Run(int argc, char** argv) {
  TALLY_ASSIGN_OR_RETURN(auto flags, ParseFlags(argc, argv));
  TALLY_ASSIGN_OR_RETURN(const int64_t port, IntFlag(flags, "port", 0));
  TALLY_ASSIGN_OR_RETURN(const int64_t features, IntFlag(flags, "features", 1));
  TALLY_ASSIGN_OR_RETURN(const int64_t classes, IntFlag(flags, "classes", 2));
  TALLY_ASSIGN_OR_RETURN(const int64_t seed, IntFlag(flags, "seed", 0));
  TALLY_ASSIGN_OR_RETURN(const int64_t self_test, IntFlag(flags, "self-test", 0));
  TALLY_ASSIGN_OR_RETURN(const ir::Device device, ir::ParseDevice(flags["device"]));

  // The model: an existing TorchScript file, or the tiny one written first.
  std::string path = flags["model"];
  const bool temporary = path.empty() && flags["save-model"].empty();
  if (path.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    path = temporary ? absl::StrCat(tmp ? tmp : "/tmp", "/tiny_classifier_", getpid(), ".pt") : flags["save-model"];
    TALLY_RETURN_IF_ERROR(SaveTinyClassifier(path, features, classes, seed));
  }
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(path, device.name, features, classes);
  if (temporary) std::remove(path.c_str());
  TALLY_RETURN_IF_ERROR(model.status());

  // The session lives on the model's device: preds f32[N, C] logits and
  // target i64[N] never leave it.
  SessionOptions options;
  options.device = device;
  const std::string c = absl::StrCat("num_classes=", classes);
  TALLY_ASSIGN_OR_RETURN(
      std::unique_ptr<Session> session,
      tally::CreateDefaultSession({absl::StrCat("multiclass_accuracy(", c, ", average=micro)"),
                                   absl::StrCat("multiclass_f1_score(", c, ", average=macro)"),
                                   absl::StrCat("multiclass_confusion_matrix(", c, ")")},
                                  {{"preds", ir::DType::kFloat32, {1, classes}}, {"target", ir::DType::kInt64, {1}}},
                                  options));

  InferenceServer server(**model, *session);
  TALLY_ASSIGN_OR_RETURN(const int bound, server.Bind(static_cast<int>(port)));
  std::printf("listening on 127.0.0.1:%d\n", bound);
  std::fflush(stdout);

  if (self_test > 0) {
    std::thread serving([&] { server.Serve().IgnoreError(); });
    SelfTestOptions o;
    o.port = bound;
    o.requests = self_test;
    o.features = features;
    o.classes = classes;
    const absl::Status st = RunSelfTest(o, std::cout);
    std::cout.flush();
    server.Stop();
    serving.join();
    return st;
  }
  // SIGINT/SIGTERM are blocked in every thread (main blocked them first);
  // this one waits for them and stops the server.
  std::thread waiter([&server] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    int sig = 0;
    sigwait(&set, &sig);
    server.Stop();
  });
  const absl::Status st = server.Serve();
  // Wakes the waiter when Serve ended on its own (its Stop is then a no-op).
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return st;
}

}  // namespace
}  // namespace tally::examples

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--help") {
    std::fputs(tally::examples::kUsage, stdout);
    return 0;
  }
  // Before any thread starts, so that all of them inherit the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const absl::Status st = tally::examples::Run(argc, argv);
  if (!st.ok()) {
    std::fprintf(stderr, "inference_server: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
