// The `tally` command line: eval and inspect (see docs/cli.md).
//
// Every failure prints one line on stderr and exits non-zero; nothing here
// lets an exception or abort escape.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <glog/logging.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/exec/torch_status.h"
#include "engine/io/npy.h"
#include "engine/status_macros.h"
#include "tools/tally/bench.h"
#include "tools/tally/demo_data.h"
#include "tools/tally/distributed_eval.h"
#include "api/tally.h"
#include "tools/tally/export.h"
#include "tools/tally/inspect.h"
#include "tools/tally/serve.h"

namespace tally::tools {
namespace {

constexpr char kUsage[] =
    "usage: tally eval --metric SPEC [--metric SPEC ...] [--input NAME=FILE ...]\n"
    "                  [--batch-size N] [--world-size W] [--sync-timeout SECONDS]\n"
    "                  [--backend eager|torchscript] [--device DEV] [--format table|json]\n"
    "                  [--checked] [--transfer-inputs] [--max-state-bytes BYTES]\n"
    "       tally inspect --metric SPEC [--metric SPEC ...] [--input NAME=FILE ...]\n"
    "                  [--device DEV] [--dump-after PASS|all] [--proof] [--transfer-inputs] [--format text|torchscript]\n"
    "       tally bench --workload NAME [--backend eager|torchscript] [--format table|json] [--quick]\n"
    "       tally export --metric SPEC [--metric SPEC ...] [--input NAME=FILE ...] --out FILE.pt [--device DEV]\n"
    "       tally serve --metric SPEC [--metric SPEC ...] [--host 127.0.0.1] [--port N]\n"
    "                  [--checkpoint FILE] [--device DEV] [--backend eager|torchscript]\n"
    "                  [--max-body-bytes BYTES] [--max-state-bytes BYTES] [--dtype NAME=DTYPE ...]\n"
    "                  [--threads N] [--max-connections N] [--max-connections-per-client N]\n"
    "                  [--idle-timeout SECONDS] [--request-timeout SECONDS] [--auth-token-file FILE]\n"
    "       tally list-metrics\n";

// Args holds parsed flags: repeated ones keep every value.
struct Args {
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> switches;
  bool Has(const std::string& k) const { return values.count(k) > 0; }
  bool Switch(const std::string& k) const {
    return std::find(switches.begin(), switches.end(), k) != switches.end();
  }
  std::string Get(const std::string& k, const std::string& dflt) const {
    auto it = values.find(k);
    return it == values.end() ? dflt : it->second.back();
  }
};

absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first,
                               const std::vector<std::string>& valued,
                               const std::vector<std::string>& bools) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg, "'"));
    }
    std::string key = arg.substr(2), value;
    bool inline_value = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      inline_value = true;
    }
    if (std::find(bools.begin(), bools.end(), key) != bools.end()) {
      // `--checked=no` must not turn checking on.
      bool on = true;
      if (inline_value && !absl::SimpleAtob(value, &on)) {
        return absl::InvalidArgumentError(
            absl::StrCat("flag '--", key, "' takes no value or one of true/false, yes/no, 1/0; got '", value, "'"));
      }
      if (on) a.switches.push_back(key);
      continue;
    }
    if (std::find(valued.begin(), valued.end(), key) == valued.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '--", key, "'"));
    }
    if (!inline_value) {
      if (i + 1 >= argc) return absl::InvalidArgumentError(absl::StrCat("flag '--", key, "' needs a value"));
      value = argv[++i];
    }
    a.values[key].push_back(value);
  }
  return a;
}

// PositiveIntFlag sets `out` from `--name` when given: a positive integer.
absl::Status PositiveIntFlag(const Args& a, const std::string& name, int64_t* out) {
  if (!a.Has(name)) return absl::OkStatus();
  if (!absl::SimpleAtoi(a.Get(name, ""), out) || *out < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a positive integer, got '", a.Get(name, ""), "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NamedTensors> ReadInputs(const Args& a) {
  NamedTensors inputs;
  auto it = a.values.find("input");
  if (it == a.values.end()) return inputs;
  for (const std::string& kv : it->second) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input expects NAME=FILE, got '", kv, "'"));
    }
    std::string name = kv.substr(0, eq), path = kv.substr(eq + 1);
    for (const auto& [n, t] : inputs) {
      if (n == name) return absl::InvalidArgumentError(absl::StrCat("input '", name, "' given twice"));
    }
    auto arr = io::ReadNpy(path);
    if (!arr.ok()) {
      return absl::Status(arr.status().code(), absl::StrCat("input '", name, "': ", arr.status().message()));
    }
    TALLY_ASSIGN_OR_RETURN(at::Tensor t, TensorFromNpy(*arr));
    inputs.emplace_back(name, t);
  }
  return inputs;
}

absl::Status RunEval(int argc, char** argv) {
  TALLY_ASSIGN_OR_RETURN(Args a, ParseArgs(argc, argv, 2,
                                           {"metric", "input", "batch-size", "world-size", "sync-timeout",
                                            "backend", "device", "format", "max-state-bytes"},
                                           {"checked", "transfer-inputs"}));
  std::string format = a.Get("format", "table");
  if (format != "table" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--format must be table or json, got '", format, "'"));
  }
  TALLY_ASSIGN_OR_RETURN(exec::Backend backend, exec::ParseBackend(a.Get("backend", "eager")));
  int64_t world = 1;
  if (!absl::SimpleAtoi(a.Get("world-size", "1"), &world) || world < 1 || world > kMaxWorldSize) {
    return absl::InvalidArgumentError(absl::StrCat("--world-size must be an integer from 1 to ", kMaxWorldSize,
                                                   ", got '", a.Get("world-size", ""), "'"));
  }
  DistributedEvalOptions dist_opts;
  dist_opts.world_size = static_cast<int>(world);
  dist_opts.format = format;
  if (a.Has("sync-timeout")) {
    double seconds = 0;
    if (!absl::SimpleAtod(a.Get("sync-timeout", ""), &seconds) || !(seconds > 0) || seconds > 86400) {
      return absl::InvalidArgumentError(absl::StrCat("--sync-timeout must be a positive number of seconds, got '",
                                                     a.Get("sync-timeout", ""), "'"));
    }
    dist_opts.timeout = absl::Seconds(seconds);
  }
  EvalOptions opts;
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "batch-size", &opts.batch_size));
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "max-state-bytes", &opts.max_state_bytes));
  TALLY_ASSIGN_OR_RETURN(opts.device, ir::ParseDevice(a.Get("device", "cpu")));
  opts.checked = a.Switch("checked");
  opts.transfer_inputs = a.Switch("transfer-inputs");
  opts.backend = backend;
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, ReadInputs(a));
  std::vector<std::string> specs;
  if (a.Has("metric")) specs = a.values.at("metric");
  if (inputs.empty()) {
    DemoData demo = MakeDemoData(specs);
    inputs = std::move(demo.inputs);
    if (specs.empty()) specs = demo.specs;
    if (format == "table") std::cout << "(no --input: using the embedded demo data, " << demo.description << ")\n";
  }
  if (specs.empty()) return absl::InvalidArgumentError("no --metric given");
  if (world > 1) {
    TALLY_ASSIGN_OR_RETURN(std::string text, EvaluateDistributed(specs, inputs, opts, dist_opts));
    std::cout << text;
    return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(std::vector<EvalResult> results, Evaluate(specs, inputs, opts));
  if (format == "json") std::cout << ResultsToJson(results) << "\n";
  else std::cout << ResultsToTable(results);
  return absl::OkStatus();
}

absl::Status RunInspect(int argc, char** argv) {
  TALLY_ASSIGN_OR_RETURN(Args a, ParseArgs(argc, argv, 2,
                                           {"metric", "input", "device", "dump-after", "format"},
                                           {"proof", "transfer-inputs"}));
  InspectOptions opts;
  TALLY_ASSIGN_OR_RETURN(opts.device, ir::ParseDevice(a.Get("device", "cpu")));
  opts.dump_after = a.Get("dump-after", "");
  opts.proof = a.Switch("proof");
  opts.transfer_inputs = a.Switch("transfer-inputs");
  opts.format = a.Get("format", "text");
  if (!a.Has("metric")) return absl::InvalidArgumentError("no --metric given");
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, ReadInputs(a));
  TALLY_ASSIGN_OR_RETURN(std::string text, Inspect(a.values.at("metric"), inputs, opts));
  std::cout << text;
  return absl::OkStatus();
}

absl::Status RunExport(int argc, char** argv) {
  TALLY_ASSIGN_OR_RETURN(Args a, ParseArgs(argc, argv, 2, {"metric", "input", "out", "device"}, {}));
  if (!a.Has("metric")) return absl::InvalidArgumentError("no --metric given");
  if (!a.Has("out")) return absl::InvalidArgumentError("--out FILE.pt is required");
  ExportOptions opts;
  TALLY_ASSIGN_OR_RETURN(opts.device, ir::ParseDevice(a.Get("device", "cpu")));
  opts.out = a.Get("out", "");
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, ReadInputs(a));
  TALLY_ASSIGN_OR_RETURN(std::string summary, Export(a.values.at("metric"), inputs, opts));
  std::cout << summary;
  return absl::OkStatus();
}

absl::Status RunBenchCommand(int argc, char** argv) {
  TALLY_ASSIGN_OR_RETURN(Args a, ParseArgs(argc, argv, 2, {"workload", "backend", "format"}, {"quick"}));
  std::string format = a.Get("format", "table");
  if (format != "table" && format != "json") {
    return absl::InvalidArgumentError(absl::StrCat("--format must be table or json, got '", format, "'"));
  }
  if (!a.Has("workload")) return absl::InvalidArgumentError("--workload is required (a name or 'all')");
  std::string workload = a.Get("workload", "");
  if (workload != "all") {
    TALLY_ASSIGN_OR_RETURN(BenchResult r, RunBench(workload, a.Get("backend", "eager"), a.Switch("quick")));
    std::cout << (format == "json" ? BenchToJson(r) + "\n" : BenchToTable(r));
    return absl::OkStatus();
  }
  // `all` runs every workload; one that cannot run here says why and the
  // others still run.
  for (const std::string& w : BenchWorkloads()) {
    auto r = RunBench(w, a.Get("backend", "eager"), a.Switch("quick"));
    if (!r.ok() && r.status().code() != absl::StatusCode::kUnimplemented) return r.status();
    if (r.ok()) {
      std::cout << (format == "json" ? BenchToJson(*r) + "\n" : BenchToTable(*r));
    } else if (format == "json") {
      std::cout << "{\"workload\": \"" << w << "\", \"backend\": \"" << a.Get("backend", "eager")
                << "\", \"skipped\": \"" << r.status().message() << "\"}\n";
    } else {
      std::cout << "workload  " << w << ": skipped: " << r.status().message() << "\n";
    }
  }
  return absl::OkStatus();
}

absl::Status RunServe(int argc, char** argv) {
  TALLY_ASSIGN_OR_RETURN(Args a, ParseArgs(argc, argv, 2,
                                           {"metric", "host", "port", "checkpoint", "device", "backend", "max-body-bytes",
                                            "max-state-bytes", "dtype", "threads", "max-connections",
                                            "max-connections-per-client", "idle-timeout", "request-timeout",
                                            "auth-token-file"},
                                           {}));
  ServeOptions opts;
  if (a.Has("metric")) opts.specs = a.values.at("metric");
  opts.host = a.Get("host", "127.0.0.1");
  if (!absl::SimpleAtoi(a.Get("port", "8080"), &opts.port) || opts.port < 0 || opts.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--port must be an integer from 0 to 65535, got '",
                                                   a.Get("port", ""), "'"));
  }
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "max-body-bytes", &opts.max_body_bytes));
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "max-state-bytes", &opts.max_state_bytes));
  // Counts and seconds: positive, and small enough for an int.
  const std::pair<const char*, int*> small[] = {{"threads", &opts.threads},
                                                {"max-connections", &opts.max_connections},
                                                {"max-connections-per-client", &opts.max_connections_per_client},
                                                {"idle-timeout", &opts.idle_timeout_s},
                                                {"request-timeout", &opts.request_timeout_s}};
  for (const auto& [name, out] : small) {
    int64_t v = *out;
    TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, name, &v));
    if (v > 100000) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " must be at most 100000, got ", v));
    }
    *out = static_cast<int>(v);
  }
  if (a.Has("dtype")) {
    for (const std::string& kv : a.values.at("dtype")) {
      std::vector<std::string> parts = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      if (parts.size() != 2 || parts[0].empty()) {
        return absl::InvalidArgumentError(absl::StrCat("--dtype expects NAME=DTYPE (e.g. preds=float32), got '", kv, "'"));
      }
      auto dtype = ir::ParseDType(parts[1]);
      if (!dtype.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--dtype ", parts[0], ": unknown dtype '", parts[1],
                                                       "' (bool, int32, int64, float16, bfloat16, float32, float64)"));
      }
      if (!opts.dtypes.emplace(parts[0], *dtype).second) {
        return absl::InvalidArgumentError(absl::StrCat("--dtype ", parts[0], " given twice"));
      }
    }
  }
  opts.checkpoint = a.Get("checkpoint", "");
  opts.auth_token_file = a.Get("auth-token-file", "");
  TALLY_ASSIGN_OR_RETURN(opts.device, ir::ParseDevice(a.Get("device", "cpu")));
  TALLY_ASSIGN_OR_RETURN(opts.backend, exec::ParseBackend(a.Get("backend", "eager")));
  return Serve(opts);
}

absl::Status RunListMetrics(int argc, char** argv) {
  TALLY_RETURN_IF_ERROR(ParseArgs(argc, argv, 2, {}, {}).status());
  return ListMetrics(std::cout);
}

// Printable is `msg` on one line that a terminal shows as is: newlines become
// spaces, and other control bytes (a raw \r or ESC from a spec or a file
// header could rewrite the terminal) are shown escaped, \r and \x1b.
std::string Printable(absl::string_view msg) {
  std::string out;
  out.reserve(msg.size());
  for (char c : msg) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out.push_back(' ');
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      out += absl::StrFormat("\\x%02x", u);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

int Main(int argc, char** argv) {
  // c10 logs through glog (c10d's socket timeouts, for one); a failure is
  // Tally's one line, so only a fatal log may add to it.
  FLAGS_minloglevel = google::GLOG_FATAL;
  // ATen's OpenMP pool may start with one thread even on a multi-core
  // machine; the command line uses every core it is allowed.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    if (cores > at::get_num_threads()) at::set_num_threads(cores);
  }
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
    std::cerr << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  absl::Status st;
  absl::Status caught = exec::CatchTorch(
      [&] {
        if (cmd == "eval") st = RunEval(argc, argv);
        else if (cmd == "inspect") st = RunInspect(argc, argv);
        else if (cmd == "list-metrics") st = RunListMetrics(argc, argv);
        else if (cmd == "bench") st = RunBenchCommand(argc, argv);
        else if (cmd == "export") st = RunExport(argc, argv);
        else if (cmd == "serve") st = RunServe(argc, argv);
        else st = absl::InvalidArgumentError(absl::StrCat("unknown command '", cmd, "' (eval, inspect, bench, export, serve, list-metrics)"));
      },
      "tally");
  if (!caught.ok()) st = caught;
  if (!st.ok()) {
    std::cerr << "tally " << Printable(cmd) << ": error: " << Printable(st.message()) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tally::tools

int main(int argc, char** argv) { return tally::tools::Main(argc, argv); }
