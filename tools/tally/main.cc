// The `tally` command line (docs/cli.md): flags parsed by CLI11, the work
// done by the front door (api/) and the tools beside this file.
//
// Every failure prints one line on stderr and exits non-zero; nothing here
// lets an exception or abort escape.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "api/export.h"
#include "api/inspect.h"
#include "api/tally.h"
#include "api/version.h"
#include "engine/io/npy.h"
#include "engine/io/regular_file.h"
#include "support/status_macros.h"
#include "support/torch_logging_compat.h"
#include "support/torch_status.h"
#include "tools/tally/bench.h"
#include "tools/tally/demo_data.h"
#include "tools/tally/distributed_eval.h"
#include "tools/tally/merge.h"
#include "tools/tally/serve.h"

namespace tally::tools {
namespace {

// Args holds parsed flags: repeated ones keep every value.
struct Args {
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> switches;
  std::vector<std::string> positional;  // a command's operands (merge's sources)
  bool Has(const std::string& k) const { return values.count(k) > 0; }
  bool Switch(const std::string& k) const { return std::find(switches.begin(), switches.end(), k) != switches.end(); }
  std::string Get(const std::string& k, const std::string& dflt) const {
    auto it = values.find(k);
    return it == values.end() ? dflt : it->second.back();
  }
};

// PositiveIntFlag sets `out` from `--name` when given: a positive integer.
absl::Status PositiveIntFlag(const Args& a, const std::string& name, int64_t* out) {
  if (!a.Has(name)) return absl::OkStatus();
  if (!absl::SimpleAtoi(a.Get(name, ""), out) || *out < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a positive integer, got '", a.Get(name, ""), "'"));
  }
  return absl::OkStatus();
}

// SecondsFlag sets `out` from `--name` when given: a positive number of
// seconds, at most a day.
absl::Status SecondsFlag(const Args& a, const std::string& name, absl::Duration* out) {
  if (!a.Has(name)) return absl::OkStatus();
  double seconds = 0;
  if (!absl::SimpleAtod(a.Get(name, ""), &seconds) || !(seconds > 0) || seconds > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, " must be a positive number of seconds, got '", a.Get(name, ""), "'"));
  }
  *out = absl::Seconds(seconds);
  return absl::OkStatus();
}

// ReadInputs reads every --input; `{rank}` in a path is `rank` (one file
// per rank of a distributed eval).
absl::StatusOr<NamedTensors> ReadInputs(const Args& a, int rank = -1) {
  NamedTensors inputs;
  auto it = a.values.find("input");
  if (it == a.values.end()) return inputs;
  for (const std::string& kv : it->second) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input expects NAME=FILE, got '", kv, "'"));
    }
    std::string name = kv.substr(0, eq), path = kv.substr(eq + 1);
    if (rank >= 0) path = absl::StrReplaceAll(path, {{"{rank}", absl::StrCat(rank)}});
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

// EnvOrFlag is --flag when given, else the environment variable `env`
// (torchrun's names), else "".
std::string EnvOrFlag(const Args& a, const std::string& flag, const char* env) {
  if (a.Has(flag)) return a.Get(flag, "");
  const char* v = *env == '\0' ? nullptr : std::getenv(env);
  return v == nullptr ? "" : v;
}

// IntSetting parses EnvOrFlag as an integer in [lo, hi]; `fallback` when
// neither is set.
absl::StatusOr<int64_t> IntSetting(const Args& a, const std::string& flag, const char* env, int64_t lo, int64_t hi,
                                   int64_t fallback) {
  std::string text = EnvOrFlag(a, flag, env);
  if (text.empty() && !a.Has(flag)) return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v) || v < lo || v > hi) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, a.Has(flag) ? "" : absl::StrCat(" (from ", env, ")"),
                                                   " must be an integer from ", lo, " to ", hi, ", got '", text, "'"));
  }
  return v;
}

// DistributedSettings reads the group's flags and torchrun's variables.
absl::StatusOr<DistributedEvalOptions> DistributedSettings(const Args& a, const std::string& format) {
  DistributedEvalOptions d;
  d.format = format;
  d.save_state = a.Get("save-state", "");
  TALLY_ASSIGN_OR_RETURN(int64_t rank, IntSetting(a, "rank", "RANK", 0, kMaxWorldSize - 1, -1));
  // WORLD_SIZE counts only for a rank: alone it would fork ranks unasked.
  TALLY_ASSIGN_OR_RETURN(int64_t world, rank >= 0 ? IntSetting(a, "world-size", "WORLD_SIZE", 1, kMaxWorldSize, 1)
                                                  : IntSetting(a, "world-size", "", 1, kMaxWorldSize, 1));
  d.world_size = static_cast<int>(world);
  d.rank = static_cast<int>(rank);
  TALLY_RETURN_IF_ERROR(SecondsFlag(a, "sync-timeout", &d.timeout));
  d.inputs_per_rank = a.Switch("inputs-per-rank");
  if (d.rank < 0) {
    for (const char* flag : {"master-addr", "master-port", "local-addr", "inputs-per-rank"}) {
      if (a.Has(flag) || a.Switch(flag)) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs --rank (or RANK)"));
      }
    }
    return d;
  }
  if (d.rank >= d.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank ", d.rank, " is not below --world-size ", d.world_size, " (ranks are 0 to W-1)"));
  }
  d.master_addr = EnvOrFlag(a, "master-addr", "MASTER_ADDR");
  if (d.master_addr.empty()) {
    return absl::InvalidArgumentError("--rank needs --master-addr (or MASTER_ADDR): the host of rank 0");
  }
  TALLY_ASSIGN_OR_RETURN(int64_t port, IntSetting(a, "master-port", "MASTER_PORT", 1, 65535, 0));
  if (port == 0) return absl::InvalidArgumentError("--rank needs --master-port (or MASTER_PORT)");
  d.master_port = static_cast<int>(port);
  d.local_addr = a.Get("local-addr", "");
  // Under torchrun (elastic agent) the agent already serves the store.
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent != nullptr && std::string(agent) == "True") {
    d.agent_store = true;
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    d.store_prefix = absl::StrCat("/worker/attempt_", attempt == nullptr || *attempt == '\0' ? "0" : attempt);
  }
  if (a.Has("input")) {
    for (const std::string& kv : a.values.at("input")) d.inputs_per_rank |= absl::StrContains(kv, "{rank}");
  }
  return d;
}

absl::Status RunEval(const Args& a) {
  std::string format = a.Get("format", "table");
  if (format != "table" && format != "json" && format != "none") {
    return absl::InvalidArgumentError(absl::StrCat("--format must be table, json or none, got '", format, "'"));
  }
  const std::string save_state = a.Get("save-state", "");
  if (format == "none" && save_state.empty()) {
    return absl::InvalidArgumentError("--format none prints nothing: give --save-state FILE");
  }
  TALLY_ASSIGN_OR_RETURN(exec::Backend backend, exec::ParseBackend(a.Get("backend", "eager")));
  TALLY_ASSIGN_OR_RETURN(DistributedEvalOptions dist_opts, DistributedSettings(a, format));
  EvalOptions opts;
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "batch-size", &opts.batch_size));
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "max-state-bytes", &opts.max_state_bytes));
  std::string device = a.Get("device", "cpu");
  // torchrun's LOCAL_RANK picks the GPU of a rank that asks for `cuda`.
  const char* local_rank = std::getenv("LOCAL_RANK");
  if (device == "cuda" && dist_opts.rank >= 0 && local_rank != nullptr && *local_rank != '\0') {
    device = absl::StrCat("cuda:", local_rank);
  }
  TALLY_ASSIGN_OR_RETURN(opts.device, ir::ParseDevice(device));
  opts.checked = a.Switch("checked");
  opts.transfer_inputs = a.Switch("transfer-inputs");
  opts.backend = backend;
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, ReadInputs(a, dist_opts.rank));
  std::vector<std::string> specs;
  if (a.Has("metric")) specs = a.values.at("metric");
  if (inputs.empty()) {
    DemoData demo = MakeDemoData(specs);
    inputs = std::move(demo.inputs);
    if (specs.empty()) specs = demo.specs;
    if (format == "table" && dist_opts.rank <= 0) {
      std::cout << "(no --input: using the embedded demo data, " << demo.description << ")\n";
    }
  }
  if (specs.empty()) return absl::InvalidArgumentError("no --metric given");
  if (dist_opts.world_size > 1) {
    TALLY_ASSIGN_OR_RETURN(std::string text, EvaluateDistributed(specs, inputs, opts, dist_opts));
    std::cout << text;
    return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(PreparedEval prepared, PrepareEval(specs, inputs, opts));
  TALLY_RETURN_IF_ERROR(FeedRows(*prepared.program, prepared.used, 0, prepared.rows, opts.batch_size));
  TALLY_ASSIGN_OR_RETURN(std::string text, FinishEval(prepared, format, save_state));
  std::cout << text;
  return absl::OkStatus();
}

absl::Status RunMergeCommand(const Args& a) {
  MergeCommand m;
  m.sources = a.positional;
  m.format = a.Get("format", "table");
  m.save_state = a.Get("save-state", "");
  TALLY_RETURN_IF_ERROR(PositiveIntFlag(a, "max-state-bytes", &m.eval.max_state_bytes));
  TALLY_ASSIGN_OR_RETURN(m.eval.device, ir::ParseDevice(a.Get("device", "cpu")));
  TALLY_ASSIGN_OR_RETURN(m.eval.backend, exec::ParseBackend(a.Get("backend", "eager")));
  TALLY_RETURN_IF_ERROR(SecondsFlag(a, "timeout", &m.timeout));
  if (a.Has("auth-token-file")) {
    absl::StatusOr<std::string> token = io::ReadRegularFile(a.Get("auth-token-file", ""));
    if (!token.ok()) {
      return absl::Status(token.status().code(), absl::StrCat("--auth-token-file: ", token.status().message()));
    }
    m.auth_token = std::string(absl::StripAsciiWhitespace(*token));
  }
  TALLY_ASSIGN_OR_RETURN(std::string text, RunMerge(m));
  std::cout << text;
  return absl::OkStatus();
}

absl::Status RunInspect(const Args& a) {
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

absl::Status RunExport(const Args& a) {
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

absl::Status RunBenchCommand(const Args& a) {
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
      std::cout << BenchSkippedToJson(w, a.Get("backend", "eager"), r.status().message()) << "\n";
    } else {
      std::cout << "workload  " << w << ": skipped: " << r.status().message() << "\n";
    }
  }
  return absl::OkStatus();
}

absl::Status RunServe(const Args& a) {
  ServeOptions opts;
  if (a.Has("metric")) opts.specs = a.values.at("metric");
  opts.host = a.Get("host", "127.0.0.1");
  if (!absl::SimpleAtoi(a.Get("port", "8080"), &opts.port) || opts.port < 0 || opts.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--port must be an integer from 0 to 65535, got '", a.Get("port", ""), "'"));
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
        return absl::InvalidArgumentError(
            absl::StrCat("--dtype expects NAME=DTYPE (e.g. preds=float32), got '", kv, "'"));
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

absl::Status RunListMetrics(const Args& a) { return ListMetrics(std::cout, a.Get("format", "text")); }

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

// Flag is one command-line flag: `--name VALUE` (repeatable when `repeated`)
// or, with an empty `value`, a switch (`--name`, `--name=false`).
struct Flag {
  const char* name;
  const char* value;
  const char* help;
  bool repeated = false;
};

// Command is one `tally <command>` with its flags.
struct Command {
  const char* name;
  const char* help;
  std::vector<Flag> flags;
  absl::Status (*run)(const Args&);
  // operands names the words after the command that are not flags
  // ("SOURCE"); nullptr: none are taken.
  const char* operands = nullptr;
  const char* operands_help = "";
};

const Flag kMetric{"metric", "SPEC", "a metric: name or name(key=value, ...), TorchMetrics' functional names", true};
const Flag kInput{"input", "NAME=FILE", "an input (preds, target, indexes, value, weight) from a .npy file", true};
const Flag kDevice{"device", "DEV", "the device of every state and plan: cpu, meta, cuda, cuda:N, mps (default cpu)"};
const Flag kBackend{"backend", "eager|torchscript", "what runs the plans (default eager)"};
const Flag kMaxStateBytes{"max-state-bytes", "BYTES",
                          "refuse a collection whose fixed-size states exceed this (default: half the memory)"};
const Flag kTransferInputs{"transfer-inputs", "",
                           "copy inputs to the program's device inside update, instead of placing them first"};

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      {"eval",
       "Compute metrics over arrays on disk (or the embedded demo data).",
       {kMetric,
        kInput,
        {"batch-size", "N", "feed the rows to update in batches of N (default: one update)"},
        {"world-size", "W", "split the rows into W shards synced over torch.distributed (Gloo, loopback)"},
        {"sync-timeout", "SECONDS", "how long the distributed sync waits for a rank (default 30)"},
        {"rank", "R", "run as rank R of --world-size ranks started elsewhere (default: $RANK)"},
        {"master-addr", "HOST", "with --rank: the host of rank 0, which hosts the rendezvous (default: $MASTER_ADDR)"},
        {"master-port", "PORT", "with --rank: the rendezvous port on the master (default: $MASTER_PORT)"},
        {"local-addr", "ADDR",
         "with --rank: the address this rank's Gloo binds (default: $GLOO_SOCKET_IFNAME, else the host name's)"},
        {"inputs-per-rank", "",
         "with --rank: the --input files are this rank's rows (default: every rank takes its shard of them; "
         "{rank} in a path implies this)"},
        {"save-state", "FILE", "also write the states (every rank's, with ranks) to FILE for tally merge"},
        kBackend,
        kDevice,
        {"format", "table|json|none", "how to print the results (default table; none: only --save-state)"},
        {"checked", "", "check every node's output dtype, rank and device against its plan as it runs"},
        kTransferInputs,
        kMaxStateBytes},
       RunEval},
      {"inspect",
       "Show what the compiler made: inputs, states, passes, fusion groups, plans.",
       {kMetric,
        kInput,
        kDevice,
        {"dump-after", "PASS|all", "print the IR after this pass (or every pass)"},
        {"proof", "", "print the single-device proof"},
        kTransferInputs,
        {"format", "text|torchscript|dot|json",
         "text IR, the TorchScript graphs, a Graphviz graph, or the same facts as JSON (default text)"}},
       RunInspect},
      {"bench",
       "Run a benchmark workload (or all).",
       {{"workload", "NAME", "acc_small, cls_small, cls_large, reg_large, retrieval, sync_cls, merge_cls, ... or all"},
        kBackend,
        {"format", "table|json", "how to print the results (default table)"},
        {"quick", "", "fewer repetitions (a smoke run)"}},
       RunBenchCommand},
      {"export",
       "Write the compiled metrics as a TorchScript module (update, compute, reset).",
       {kMetric, kInput, {"out", "FILE.pt", "the module file to write"}, kDevice},
       RunExport},
      {"serve",
       "Serve metrics over HTTP: POST /v1/update, GET /v1/metrics, GET /v1/state, GET /metrics (Prometheus).",
       {kMetric,
        {"host", "ADDR", "the address to listen on (default 127.0.0.1)"},
        {"port", "N", "the port (default 8080; 0 picks a free one)"},
        {"checkpoint", "FILE", "restore from FILE at start; POST /v1/checkpoint writes it"},
        kDevice,
        kBackend,
        {"max-body-bytes", "BYTES", "the largest request body (default 16 MiB)"},
        kMaxStateBytes,
        {"dtype", "NAME=DTYPE", "declare an input's dtype (preds=float32, ...)", true},
        {"threads", "N", "worker threads for updates (default 4)"},
        {"max-connections", "N", "connections open at once (default 512)"},
        {"max-connections-per-client", "N", "connections open at once per client address (default 64)"},
        {"idle-timeout", "SECONDS", "close a connection idle this long (default 10)"},
        {"request-timeout", "SECONDS", "close a connection whose request takes longer (default 30)"},
        {"auth-token-file", "FILE", "require `Authorization: Bearer <the file's token>`"}},
       RunServe},
      {"merge",
       "Merge state files and servers' states, and print the metrics over all their rows.",
       {{"format", "table|json|none", "how to print the results (default table; none: only --save-state)"},
        {"save-state", "FILE", "also write the merged states to FILE"},
        {"auth-token-file", "FILE", "send `Authorization: Bearer <the file's token>` to servers"},
        {"timeout", "SECONDS", "how long to wait for each server (default 30)"},
        kDevice,
        kBackend,
        kMaxStateBytes},
       RunMergeCommand,
       "SOURCE",
       "a state file (tally eval --save-state) or a server, http://HOST:PORT (its GET /v1/state)"},
      {"list-metrics",
       "List every metric with its domain and inputs.",
       {{"format", "text|markdown",
         "one line per metric, or the catalogue with arguments and defaults (default text)"}},
       RunListMetrics},
  };
  return *commands;
}

// Parsed holds what CLI11 parsed for each command: the values of its
// flags (every occurrence of a repeatable one, the last of another) and its
// switches.
struct Parsed {
  std::vector<std::map<std::string, std::vector<std::string>>> repeated;
  std::vector<std::map<std::string, std::string>> single;
  std::vector<std::map<std::string, CLI::Option*>> options;
  std::vector<std::map<std::string, bool>> switches;
  std::vector<std::vector<std::string>> operands;
};

constexpr char kAppDescription[] = "tally: a metrics engine for PyTorch models.";

// MakeApp declares every command and its flags on `app`, parsing into `p`.
void MakeApp(CLI::App& app, Parsed& p) {
  app.set_version_flag("--version", absl::StrCat("tally ", kTallyVersion));
  app.footer("The command-line reference: docs/cli.md.\n");
  app.get_formatter()->column_width(36);
  const size_t n = Commands().size();
  p.repeated.resize(n);
  p.single.resize(n);
  p.options.resize(n);
  p.switches.resize(n);
  p.operands.resize(n);
  for (size_t c = 0; c < n; ++c) {
    const Command& cmd = Commands()[c];
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    sub->footer("The command-line reference: docs/cli.md.\n");
    // Unknown flags and stray words are ours to report (one line each).
    sub->allow_extras();
    if (cmd.operands != nullptr) sub->add_option(cmd.operands, p.operands[c], cmd.operands_help);
    for (const Flag& f : cmd.flags) {
      const std::string name = absl::StrCat("--", f.name);
      if (*f.value == '\0') {
        sub->add_flag(name, p.switches[c][f.name], f.help);
        continue;
      }
      // One value per occurrence.
      CLI::Option* o = f.repeated ? sub->add_option(name, p.repeated[c][f.name], absl::StrCat(f.help, " (repeatable)"))
                                        ->allow_extra_args(false)
                                  : sub->add_option(name, p.single[c][f.name], f.help)
                                        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      o->type_name(f.value);
      p.options[c][f.name] = o;
    }
  }
}

// TranslateParseError keeps the one-line errors the hand-written parser gave.
std::string TranslateParseError(const CLI::ParseError& e) {
  std::string msg = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    return absl::StrCat("flag '", msg.substr(0, msg.find(':')), "' needs a value");
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    // "Could not convert: --checked = maybe"
    std::vector<std::string> parts = absl::StrSplit(msg, absl::MaxSplits(" = ", 1));
    std::string flag = parts[0].substr(std::min(parts[0].size(), parts[0].rfind(' ') + 1));
    return absl::StrCat("flag '", flag, "' takes no value or one of true/false, yes/no, 1/0; got '",
                        parts.size() > 1 ? parts[1] : "", "'");
  }
  return msg;
}

// RunCommand parses `argv` for the command argv[1] and runs it; `out_code`
// is set when the parse itself answers (--help, --version).
absl::Status RunCommand(int argc, char** argv, int* out_code) {
  CLI::App app(kAppDescription, "tally");
  Parsed p;
  MakeApp(app, p);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      *out_code = app.exit(e);  // --help or --version: printed on stdout
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(TranslateParseError(e));
  }
  for (size_t c = 0; c < Commands().size(); ++c) {
    CLI::App* sub = app.get_subcommand(Commands()[c].name);
    if (!sub->parsed()) continue;
    for (const std::string& extra : sub->remaining()) {
      if (absl::StartsWith(extra, "-")) {
        return absl::InvalidArgumentError(absl::StrCat("unknown flag '", extra.substr(0, extra.find('=')), "'"));
      }
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", extra, "'"));
    }
    Args a;
    for (auto& [name, v] : p.repeated[c]) {
      if (!v.empty()) a.values[name] = std::move(v);
    }
    for (auto& [name, v] : p.single[c]) {
      if (p.options[c][name]->count() > 0) a.values[name] = {std::move(v)};
    }
    for (const auto& [name, on] : p.switches[c]) {
      if (on) a.switches.push_back(name);
    }
    a.positional = std::move(p.operands[c]);
    return Commands()[c].run(a);
  }
  return absl::InvalidArgumentError("no command given");
}

std::string CommandNames() {
  std::vector<std::string> names;
  for (const Command& c : Commands()) names.push_back(c.name);
  return absl::StrJoin(names, ", ");
}

int Main(int argc, char** argv) {
  // A failure is Tally's one line: only a fatal c10 log may add to it.
  support::compat::OnlyFatalTorchLogs();
  // ATen's OpenMP pool may start with one thread even on a multi-core
  // machine; the command line uses every core it is allowed.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    int cores = static_cast<int>(std::thread::hardware_concurrency());
    if (cores > at::get_num_threads()) at::set_num_threads(cores);
  }
  if (argc < 2) {
    CLI::App app(kAppDescription, "tally");
    Parsed p;
    MakeApp(app, p);
    std::cerr << app.help();
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "help") cmd = "--help";
  const bool known = cmd == "--help" || cmd == "-h" || cmd == "--version" ||
                     std::any_of(Commands().begin(), Commands().end(), [&](const Command& c) { return cmd == c.name; });
  absl::Status st;
  int code = -1;
  if (!known) {
    st = absl::InvalidArgumentError(absl::StrCat("unknown command '", cmd, "' (", CommandNames(), ")"));
  } else {
    std::vector<char*> args(argv, argv + argc);
    args[1] = cmd.data();  // `help` is read as --help
    absl::Status caught =
        support::CatchTorch([&] { st = RunCommand(static_cast<int>(args.size()), args.data(), &code); }, "tally");
    if (!caught.ok()) st = caught;
  }
  if (!st.ok()) {
    std::cerr << "tally " << Printable(cmd) << ": error: " << Printable(st.message()) << "\n";
    return 1;
  }
  return code >= 0 ? code : 0;
}

}  // namespace
}  // namespace tally::tools

int main(int argc, char** argv) { return tally::tools::Main(argc, argv); }
