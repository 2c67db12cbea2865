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
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "api/coco_json.h"
#include "api/export.h"
#include "api/inspect.h"
#include "api/tally.h"
#include "api/text_inputs.h"
#include "api/version.h"
#include "engine/io/npy.h"
#include "engine/io/regular_file.h"
#include "metrics/spec.h"
#include "support/status_macros.h"
#include "support/torch_logging_compat.h"
#include "support/torch_status.h"
#include "tools/tally/bench.h"
#include "tools/tally/demo_data.h"
#include "tools/tally/distributed_eval.h"
#include "tools/tally/merge.h"
#include "tools/tally/serve.h"
#include "tools/tally/text_files.h"

namespace tally::tools {
namespace {

// The flags of each command are typed fields of the options the command
// runs with; a field's initializer is the flag's default (in the options
// struct of api/ or tools/tally/, or in the *Flags struct below), and CLI11
// parses into it. Validators check a value as it is read and say what is
// wrong in the words of docs/cli.md: "--batch-size must be a positive
// integer, got '-3'" (TranslateParseError drops CLI11's colon).

// Check is a CLI11 validator from `why`: the message of a bad value, or ""
// when it is fine.
CLI::Validator Check(std::function<std::string(const std::string&)> why, std::string type) {
  return CLI::Validator([why = std::move(why)](std::string& v) { return why(v); }, std::move(type));
}

// AtMost is a positive integer no larger than `hi` (counts that must fit an int).
CLI::Validator AtMost(int64_t hi) {
  return Check(
      [hi](const std::string& v) -> std::string {
        int64_t n = 0;
        if (!absl::SimpleAtoi(v, &n) || n < 1) return absl::StrCat("must be a positive integer, got '", v, "'");
        return n <= hi ? "" : absl::StrCat("must be at most ", hi, ", got ", n);
      },
      "N");
}

CLI::Validator PositiveInt() { return AtMost(std::numeric_limits<int64_t>::max()); }

// IntRangeError is why `text` is not an integer in [lo, hi] ("" if it is).
std::string IntRangeError(const std::string& text, int64_t lo, int64_t hi) {
  int64_t n = 0;
  if (absl::SimpleAtoi(text, &n) && n >= lo && n <= hi) return "";
  return absl::StrCat("must be an integer from ", lo, " to ", hi, ", got '", text, "'");
}

CLI::Validator IntRange(int64_t lo, int64_t hi) {
  return Check([lo, hi](const std::string& v) { return IntRangeError(v, lo, hi); }, "N");
}

// Seconds is a positive number of seconds, at most a day.
CLI::Validator Seconds() {
  return Check(
      [](const std::string& v) {
        double s = 0;
        return absl::SimpleAtod(v, &s) && s > 0 && s <= 86400
                   ? ""
                   : absl::StrCat("must be a positive number of seconds, got '", v, "'");
      },
      "SECONDS");
}

// OneOf is one of `words` ("must be table, json or none, got 'x'").
CLI::Validator OneOf(std::vector<std::string> words) {
  return Check(
      [words](const std::string& v) -> std::string {
        if (std::find(words.begin(), words.end(), v) != words.end()) return "";
        std::string list = absl::StrJoin(words.begin(), words.end() - 1, ", ");
        return absl::StrCat("must be ", list, " or ", words.back(), ", got '", v, "'");
      },
      "");
}

CLI::Validator BackendName() {
  return Check(
      [](const std::string& v) {
        absl::StatusOr<exec::Backend> b = exec::ParseBackend(v);
        return b.ok() ? "" : std::string(b.status().message());
      },
      "");
}

CLI::Validator DeviceName() {
  return Check(
      [](const std::string& v) {
        absl::StatusOr<ir::Device> d = ir::ParseDevice(v);
        return d.ok() ? "" : std::string(d.status().message());
      },
      "");
}

// The flags every command that names them shares.
constexpr char kMetricHelp[] = "a metric: name or name(key=value, ...), TorchMetrics' functional names (repeatable)";
constexpr char kInputHelp[] =
    "an input (preds, target, indexes, value, weight, groups, row_id, data, labels, ratings, boxes, ...) from a .npy "
    "file, the text metrics' preds and target from a .txt file (UTF-8, one sentence a line), or COCO's files as "
    "coco_gt=instances.json and coco_dt=results.json (repeatable)";
constexpr char kDeviceHelp[] = "the device of every state and plan: cpu, meta, cuda, cuda:N, mps (default cpu)";
constexpr char kBackendHelp[] = "what runs the plans (default eager)";
constexpr char kMaxStateBytesHelp[] =
    "refuse a collection whose fixed-size states exceed this (default: half the memory)";
constexpr char kTransferInputsHelp[] =
    "copy inputs to the program's device inside update, instead of placing them first";

// Repeated adds a repeatable `--name VALUE` (one value per occurrence).
CLI::Option* Repeated(CLI::App* app, const std::string& name, std::vector<std::string>& into, const char* type,
                      const char* help) {
  return app->add_option(name, into, help)->allow_extra_args(false)->type_name(type);
}

// Single adds `--name VALUE` into `into`; given twice, the last one counts.
template <typename T>
CLI::Option* Single(CLI::App* app, const std::string& name, T& into, const char* type, const char* help) {
  return app->add_option(name, into, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->type_name(type);
}

// Device adds --device, parsed into `into` (validated first).
CLI::Option* Device(CLI::App* app, ir::Device& into) {
  return app
      ->add_option_function<std::string>(
          "--device", [&into](const std::string& v) { into = *ir::ParseDevice(v); }, kDeviceHelp)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(DeviceName())
      ->type_name("DEV");
}

CLI::Option* Backend(CLI::App* app, exec::Backend& into) {
  return app
      ->add_option_function<std::string>(
          "--backend", [&into](const std::string& v) { into = *exec::ParseBackend(v); }, kBackendHelp)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(BackendName())
      ->type_name("eager|torchscript");
}

CLI::Option* Duration(CLI::App* app, const std::string& name, absl::Duration& into, const char* help) {
  return app
      ->add_option_function<double>(
          name, [&into](double s) { into = absl::Seconds(s); }, help)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(Seconds())
      ->type_name("SECONDS");
}

CLI::Option* MaxStateBytes(CLI::App* app, int64_t& into) {
  return Single(app, "--max-state-bytes", into, "BYTES", kMaxStateBytesHelp)->check(PositiveInt());
}

// ReadInputs reads every --input: arrays, and the sentences of .txt files
// into `texts`; `{rank}` in a path is `rank` (one file per rank of a
// distributed eval).
absl::StatusOr<NamedTensors> ReadInputs(const std::vector<std::string>& flags, std::vector<TextInput>& texts,
                                        int rank = -1) {
  NamedTensors inputs;
  absl::flat_hash_set<std::string> names;
  std::string coco[2];  // coco_gt, coco_dt
  for (const std::string& kv : flags) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      return absl::InvalidArgumentError(absl::StrCat("--input expects NAME=FILE, got '", kv, "'"));
    }
    std::string name = kv.substr(0, eq), path = kv.substr(eq + 1);
    if (rank >= 0) path = absl::StrReplaceAll(path, {{"{rank}", absl::StrCat(rank)}});
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "' given twice"));
    }
    auto named = [&name](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat("input '", name, "': ", s.message()));
    };
    if (name == kCocoGroundTruth || name == kCocoDetections) {
      coco[name == kCocoDetections] = path;
      continue;
    }
    if (IsTextPath(path)) {
      auto text = ReadTextInput(name, path);
      if (!text.ok()) return named(text.status());
      texts.push_back(*std::move(text));
      continue;
    }
    auto arr = io::ReadNpy(path);
    if (!arr.ok()) return named(arr.status());
    TALLY_ASSIGN_OR_RETURN(at::Tensor t, TensorFromNpy(*arr));
    inputs.emplace_back(name, t);
  }
  if (!coco[0].empty() || !coco[1].empty()) {
    if (coco[0].empty() || coco[1].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--input ", coco[0].empty() ? kCocoGroundTruth : kCocoDetections,
                                                     "=FILE is missing: COCO files come as a pair (ground truth "
                                                     "and results)"));
    }
    TALLY_ASSIGN_OR_RETURN(NamedTensors boxes, ReadCocoDetections(coco[0], coco[1]));
    for (auto& named : boxes) inputs.push_back(std::move(named));
  }
  return inputs;
}

// CheckCocoBoxFormat refuses a box metric over COCO's files that reads
// boxes as anything but COCO's [x, y, width, height].
absl::Status CheckCocoBoxFormat(const std::vector<std::string>& flags, const std::vector<std::string>& specs) {
  const bool coco = absl::c_any_of(flags, [](const std::string& kv) {
    return absl::StartsWith(kv, absl::StrCat(kCocoGroundTruth, "=")) ||
           absl::StartsWith(kv, absl::StrCat(kCocoDetections, "="));
  });
  if (!coco) return absl::OkStatus();
  for (const std::string& s : specs) {
    auto spec = metrics::ParseMetricSpec(s);
    if (!spec.ok() || spec->name != "mean_average_precision") continue;
    bool xywh = false;
    for (const auto& [key, v] : spec->args)
      xywh = xywh || (key == "box_format" && v == metrics::ArgValue(std::string("xywh")));
    if (!xywh) {
      return absl::InvalidArgumentError(absl::StrCat(s,
                                                     ": COCO files hold boxes as [x, y, width, height]: evaluate them "
                                                     "with mean_average_precision(box_format=xywh, ...)"));
    }
  }
  return absl::OkStatus();
}

// EnvInt is the integer in the environment variable `env` (torchrun's
// names) for `--flag`, when set; it must lie in [lo, hi].
absl::StatusOr<std::optional<int64_t>> EnvInt(const char* flag, const char* env, int64_t lo, int64_t hi) {
  const char* v = std::getenv(env);
  if (v == nullptr || *v == '\0') return std::nullopt;
  std::string why = IntRangeError(v, lo, hi);
  if (!why.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, " (from ", env, ") ", why));
  int64_t n = 0;
  (void)absl::SimpleAtoi(v, &n);
  return n;
}

// EvalFlags are eval's flags beyond EvalOptions and DistributedEvalOptions:
// those torchrun's variables stand in for, and those read before the
// options can be filled.
struct EvalFlags {
  EvalOptions opts;
  DistributedEvalOptions dist;
  std::vector<std::string> metrics;
  std::vector<std::string> inputs;
  std::string device = "cpu";              // "cuda" becomes cuda:$LOCAL_RANK for a rank
  std::optional<int64_t> rank;             // else $RANK, else none: fork the ranks
  std::optional<int64_t> world_size;       // else $WORLD_SIZE for a rank, else 1
  std::optional<std::string> master_addr;  // else $MASTER_ADDR
  std::optional<int64_t> master_port;      // else $MASTER_PORT
  std::optional<std::string> local_addr;
};

void BindEval(CLI::App* app, EvalFlags& f) {
  Repeated(app, "--metric", f.metrics, "SPEC", kMetricHelp);
  Repeated(app, "--input", f.inputs, "NAME=FILE", kInputHelp);
  Single(app, "--batch-size", f.opts.batch_size, "N", "feed the rows to update in batches of N (default: one update)")
      ->check(PositiveInt());
  Single(app, "--world-size", f.world_size, "W",
         "split the rows into W shards synced over torch.distributed (Gloo, loopback)")
      ->check(IntRange(1, kMaxWorldSize));
  Duration(app, "--sync-timeout", f.dist.timeout, "how long the distributed sync waits for a rank (default 30)");
  Single(app, "--rank", f.rank, "R", "run as rank R of --world-size ranks started elsewhere (default: $RANK)")
      ->check(IntRange(0, kMaxWorldSize - 1));
  Single(app, "--master-addr", f.master_addr, "HOST",
         "with --rank: the host of rank 0, which hosts the rendezvous (default: $MASTER_ADDR)");
  Single(app, "--master-port", f.master_port, "PORT",
         "with --rank: the rendezvous port on the master (default: $MASTER_PORT)")
      ->check(IntRange(1, 65535));
  Single(app, "--local-addr", f.local_addr, "ADDR",
         "with --rank: the address this rank's Gloo binds (default: $GLOO_SOCKET_IFNAME, else the host name's)");
  app->add_flag("--inputs-per-rank", f.dist.inputs_per_rank,
                "with --rank: the --input files are this rank's rows (default: every rank takes its shard of them; "
                "{rank} in a path implies this)");
  Single(app, "--save-state", f.dist.save_state, "FILE",
         "also write the states (every rank's, with ranks) to FILE for tally merge");
  Backend(app, f.opts.backend);
  Single(app, "--device", f.device, "DEV", kDeviceHelp)->check(DeviceName());
  Single(app, "--format", f.dist.format, "table|json|none",
         "how to print the results (default table; none: only --save-state)")
      ->check(OneOf({"table", "json", "none"}));
  app->add_flag("--checked", f.opts.checked,
                "check every node's output dtype, rank and device against its plan as it runs");
  app->add_flag("--transfer-inputs", f.opts.transfer_inputs, kTransferInputsHelp);
  MaxStateBytes(app, f.opts.max_state_bytes);
}

// Distributed completes f.dist from the group's flags and torchrun's
// variables.
absl::Status Distributed(EvalFlags& f) {
  DistributedEvalOptions& d = f.dist;
  std::optional<int64_t> rank = f.rank;
  if (!rank) {
    TALLY_ASSIGN_OR_RETURN(rank, EnvInt("rank", "RANK", 0, kMaxWorldSize - 1));
  }
  d.rank = rank ? static_cast<int>(*rank) : -1;
  std::optional<int64_t> world = f.world_size;
  // WORLD_SIZE counts only for a rank: alone it would fork ranks unasked.
  if (!world && rank) {
    TALLY_ASSIGN_OR_RETURN(world, EnvInt("world-size", "WORLD_SIZE", 1, kMaxWorldSize));
  }
  d.world_size = world ? static_cast<int>(*world) : 1;
  if (d.rank < 0) {
    const std::pair<const char*, bool> needs_rank[] = {{"master-addr", f.master_addr.has_value()},
                                                       {"master-port", f.master_port.has_value()},
                                                       {"local-addr", f.local_addr.has_value()},
                                                       {"inputs-per-rank", d.inputs_per_rank}};
    for (const auto& [flag, given] : needs_rank) {
      if (given) return absl::InvalidArgumentError(absl::StrCat("--", flag, " needs --rank (or RANK)"));
    }
    return absl::OkStatus();
  }
  if (d.rank >= d.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank ", d.rank, " is not below --world-size ", d.world_size, " (ranks are 0 to W-1)"));
  }
  const char* env_addr = std::getenv("MASTER_ADDR");
  d.master_addr = f.master_addr.value_or(env_addr == nullptr ? "" : env_addr);
  if (d.master_addr.empty()) {
    return absl::InvalidArgumentError("--rank needs --master-addr (or MASTER_ADDR): the host of rank 0");
  }
  std::optional<int64_t> port = f.master_port;
  if (!port) {
    TALLY_ASSIGN_OR_RETURN(port, EnvInt("master-port", "MASTER_PORT", 1, 65535));
  }
  if (!port) return absl::InvalidArgumentError("--rank needs --master-port (or MASTER_PORT)");
  d.master_port = static_cast<int>(*port);
  d.local_addr = f.local_addr.value_or("");
  // Under torchrun (elastic agent) the agent already serves the store.
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent != nullptr && std::string(agent) == "True") {
    d.agent_store = true;
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    d.store_prefix = absl::StrCat("/worker/attempt_", attempt == nullptr || *attempt == '\0' ? "0" : attempt);
  }
  for (const std::string& kv : f.inputs) d.inputs_per_rank |= absl::StrContains(kv, "{rank}");
  return absl::OkStatus();
}

absl::Status RunEval(EvalFlags& f) {
  if (f.dist.format == "none" && f.dist.save_state.empty()) {
    return absl::InvalidArgumentError("--format none prints nothing: give --save-state FILE");
  }
  TALLY_RETURN_IF_ERROR(Distributed(f));
  EvalOptions& opts = f.opts;
  std::string device = f.device;
  // torchrun's LOCAL_RANK picks the GPU of a rank that asks for `cuda`.
  const char* local_rank = std::getenv("LOCAL_RANK");
  if (device == "cuda" && f.dist.rank >= 0 && local_rank != nullptr && *local_rank != '\0') {
    device = absl::StrCat("cuda:", local_rank);
  }
  TALLY_ASSIGN_OR_RETURN(opts.device, ir::ParseDevice(device));
  std::vector<TextInput> texts;
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, ReadInputs(f.inputs, texts, f.dist.rank));
  std::vector<std::string> specs = f.metrics;
  const std::string& format = f.dist.format;
  if (inputs.empty() && texts.empty()) {
    DemoData demo = MakeDemoData(specs);
    inputs = std::move(demo.inputs);
    if (specs.empty()) specs = demo.specs;
    if (format == "table" && f.dist.rank <= 0) {
      std::cout << "(no --input: using the embedded demo data, " << demo.description << ")\n";
    }
  }
  if (specs.empty()) return absl::InvalidArgumentError("no --metric given");
  TALLY_RETURN_IF_ERROR(CheckCocoBoxFormat(f.inputs, specs));
  if (!texts.empty()) {
    // One program when every metric splits the text one way; otherwise one
    // a way, which neither a distributed eval nor one state file can be.
    absl::StatusOr<NamedTensors> ids = WithTokenIds(specs, inputs, texts);
    if (!ids.ok() && f.dist.world_size <= 1 && f.dist.save_state.empty()) {
      TALLY_ASSIGN_OR_RETURN(std::vector<EvalResult> results, EvaluateText(specs, inputs, texts, opts));
      std::cout << FormatResults(results, format);
      return absl::OkStatus();
    }
    TALLY_ASSIGN_OR_RETURN(inputs, std::move(ids));
  }
  if (f.dist.world_size > 1) {
    TALLY_ASSIGN_OR_RETURN(std::string text, EvaluateDistributed(specs, inputs, opts, f.dist));
    std::cout << text;
    return absl::OkStatus();
  }
  TALLY_ASSIGN_OR_RETURN(PreparedEval prepared, PrepareEval(specs, inputs, opts));
  TALLY_RETURN_IF_ERROR(FeedRows(*prepared.program, prepared.used, 0, prepared.rows, opts.batch_size));
  TALLY_ASSIGN_OR_RETURN(std::string text, FinishEval(prepared, format, f.dist.save_state));
  std::cout << text;
  return absl::OkStatus();
}

struct MergeFlags {
  MergeCommand m;
  std::string auth_token_file;
};

void BindMerge(CLI::App* app, MergeFlags& f) {
  app->add_option("SOURCE", f.m.sources,
                  "a state file (tally eval --save-state) or a server, http://HOST:PORT (its GET /v1/state)");
  Single(app, "--format", f.m.format, "table|json|none",
         "how to print the results (default table; none: only --save-state)")
      ->check(OneOf({"table", "json", "none"}));
  Single(app, "--save-state", f.m.save_state, "FILE", "also write the merged states to FILE");
  Single(app, "--auth-token-file", f.auth_token_file, "FILE",
         "send `Authorization: Bearer <the file's token>` to servers");
  Duration(app, "--timeout", f.m.timeout, "how long to wait for each server (default 30)");
  Device(app, f.m.eval.device);
  Backend(app, f.m.eval.backend);
  MaxStateBytes(app, f.m.eval.max_state_bytes);
}

absl::Status RunMergeCommand(MergeFlags& f) {
  if (!f.auth_token_file.empty()) {
    absl::StatusOr<std::string> token = io::ReadRegularFile(f.auth_token_file);
    if (!token.ok()) {
      return absl::Status(token.status().code(), absl::StrCat("--auth-token-file: ", token.status().message()));
    }
    f.m.auth_token = std::string(absl::StripAsciiWhitespace(*token));
  }
  TALLY_ASSIGN_OR_RETURN(std::string text, RunMerge(f.m));
  std::cout << text;
  return absl::OkStatus();
}

struct InspectFlags {
  InspectOptions opts;
  std::vector<std::string> metrics;
  std::vector<std::string> inputs;
};

void BindInspect(CLI::App* app, InspectFlags& f) {
  Repeated(app, "--metric", f.metrics, "SPEC", kMetricHelp);
  Repeated(app, "--input", f.inputs, "NAME=FILE", kInputHelp);
  Device(app, f.opts.device);
  Single(app, "--dump-after", f.opts.dump_after, "PASS|all", "print the IR after this pass (or every pass)");
  app->add_flag("--proof", f.opts.proof, "print the single-device proof");
  app->add_flag("--transfer-inputs", f.opts.transfer_inputs, kTransferInputsHelp);
  Single(app, "--format", f.opts.format, "text|torchscript|dot|json",
         "text IR, the TorchScript graphs, a Graphviz graph, or the same facts as JSON (default text)");
}

absl::Status RunInspect(InspectFlags& f) {
  if (f.metrics.empty()) return absl::InvalidArgumentError("no --metric given");
  std::vector<TextInput> texts;
  TALLY_ASSIGN_OR_RETURN(NamedTensors arrays, ReadInputs(f.inputs, texts));
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, WithTokenIds(f.metrics, arrays, texts));
  TALLY_ASSIGN_OR_RETURN(std::string text, Inspect(f.metrics, inputs, f.opts));
  std::cout << text;
  return absl::OkStatus();
}

struct ExportFlags {
  ExportOptions opts;
  std::vector<std::string> metrics;
  std::vector<std::string> inputs;
};

void BindExport(CLI::App* app, ExportFlags& f) {
  Repeated(app, "--metric", f.metrics, "SPEC", kMetricHelp);
  Repeated(app, "--input", f.inputs, "NAME=FILE", kInputHelp);
  Single(app, "--out", f.opts.out, "FILE.pt", "the module file to write");
  Device(app, f.opts.device);
}

absl::Status RunExport(ExportFlags& f) {
  if (f.metrics.empty()) return absl::InvalidArgumentError("no --metric given");
  if (f.opts.out.empty()) return absl::InvalidArgumentError("--out FILE.pt is required");
  std::vector<TextInput> texts;
  TALLY_ASSIGN_OR_RETURN(NamedTensors arrays, ReadInputs(f.inputs, texts));
  TALLY_ASSIGN_OR_RETURN(NamedTensors inputs, WithTokenIds(f.metrics, arrays, texts));
  TALLY_ASSIGN_OR_RETURN(std::string summary, Export(f.metrics, inputs, f.opts));
  std::cout << summary;
  return absl::OkStatus();
}

struct BenchFlags {
  std::string workload;  // a name or "all"
  std::string backend = "eager";
  std::string format = "table";
  bool quick = false;
  ir::Device device;
};

void BindBench(CLI::App* app, BenchFlags& f) {
  Single(app, "--workload", f.workload, "NAME",
         "acc_small, cls_small, cls_large, reg_large, retrieval, sync_cls, merge_cls, ... or all");
  Single(app, "--backend", f.backend, "eager|torchscript", kBackendHelp)->check(BackendName());
  Single(app, "--format", f.format, "table|json", "how to print the results (default table)")
      ->check(OneOf({"table", "json"}));
  app->add_flag("--quick", f.quick, "fewer repetitions (a smoke run)");
  Device(app, f.device);
}

absl::Status RunBenchCommand(BenchFlags& f) {
  if (f.workload.empty()) return absl::InvalidArgumentError("--workload is required (a name or 'all')");
  const bool json = f.format == "json";
  if (f.workload != "all") {
    TALLY_ASSIGN_OR_RETURN(BenchResult r, RunBench(f.workload, f.backend, f.quick, f.device));
    std::cout << (json ? BenchToJson(r) + "\n" : BenchToTable(r));
    return absl::OkStatus();
  }
  // `all` runs every workload; one that cannot run here says why and the
  // others still run.
  for (const std::string& w : BenchWorkloads()) {
    auto r = RunBench(w, f.backend, f.quick, f.device);
    if (!r.ok() && r.status().code() != absl::StatusCode::kUnimplemented) return r.status();
    if (r.ok()) {
      std::cout << (json ? BenchToJson(*r) + "\n" : BenchToTable(*r));
    } else if (json) {
      std::cout << BenchSkippedToJson(w, f.backend, r.status().message()) << "\n";
    } else {
      std::cout << "workload  " << w << ": skipped: " << r.status().message() << "\n";
    }
  }
  return absl::OkStatus();
}

struct ServeFlags {
  ServeOptions opts;
  std::vector<std::string> dtypes;  // NAME=DTYPE
};

void BindServe(CLI::App* app, ServeFlags& f) {
  ServeOptions& o = f.opts;
  Repeated(app, "--metric", o.specs, "SPEC", kMetricHelp);
  Single(app, "--host", o.host, "ADDR", "the address to listen on (default 127.0.0.1)");
  Single(app, "--port", o.port, "N", "the port (default 8080; 0 picks a free one)")->check(IntRange(0, 65535));
  Single(app, "--checkpoint", o.checkpoint, "FILE", "restore from FILE at start; POST /v1/checkpoint writes it");
  Device(app, o.device);
  Backend(app, o.backend);
  Single(app, "--max-body-bytes", o.max_body_bytes, "BYTES", "the largest request body (default 16 MiB)")
      ->check(PositiveInt());
  MaxStateBytes(app, o.max_state_bytes);
  Repeated(app, "--dtype", f.dtypes, "NAME=DTYPE", "declare an input's dtype (preds=float32, ...) (repeatable)");
  // Counts and seconds: positive, and small enough for an int.
  constexpr int64_t kMaxCount = 100000;
  Single(app, "--threads", o.threads, "N", "worker threads for updates (default 4)")->check(AtMost(kMaxCount));
  Single(app, "--max-connections", o.max_connections, "N", "connections open at once (default 512)")
      ->check(AtMost(kMaxCount));
  Single(app, "--max-connections-per-client", o.max_connections_per_client, "N",
         "connections open at once per client address (default 64)")
      ->check(AtMost(kMaxCount));
  Single(app, "--idle-timeout", o.idle_timeout_s, "SECONDS", "close a connection idle this long (default 10)")
      ->check(AtMost(kMaxCount));
  Single(app, "--request-timeout", o.request_timeout_s, "SECONDS",
         "close a connection whose request takes longer (default 30)")
      ->check(AtMost(kMaxCount));
  Single(app, "--auth-token-file", o.auth_token_file, "FILE", "require `Authorization: Bearer <the file's token>`");
}

absl::Status RunServe(ServeFlags& f) {
  for (const std::string& kv : f.dtypes) {
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
    if (!f.opts.dtypes.emplace(parts[0], *dtype).second) {
      return absl::InvalidArgumentError(absl::StrCat("--dtype ", parts[0], " given twice"));
    }
  }
  return Serve(f.opts);
}

struct ListMetricsFlags {
  std::string format = "text";
};

void BindListMetrics(CLI::App* app, ListMetricsFlags& f) {
  Single(app, "--format", f.format, "text|markdown",
         "one line per metric, or the catalogue with arguments and defaults (default text)");
}

absl::Status RunListMetrics(ListMetricsFlags& f) { return ListMetrics(std::cout, f.format); }

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

// Flags holds every command's flags; CLI11 parses into the one command's.
struct Flags {
  EvalFlags eval;
  InspectFlags inspect;
  BenchFlags bench;
  ExportFlags export_;
  ServeFlags serve;
  MergeFlags merge;
  ListMetricsFlags list_metrics;
};

// Command is one `tally <command>`: its flags bound on its CLI11 subcommand,
// and what runs once they are parsed.
struct Command {
  const char* name;
  const char* help;
  std::function<void(CLI::App*, Flags&)> bind;
  std::function<absl::Status(Flags&)> run;
};

template <typename F>
Command Make(const char* name, const char* help, void (*bind)(CLI::App*, F&), absl::Status (*run)(F&),
             F Flags::*field) {
  return {name, help, [bind, field](CLI::App* app, Flags& f) { bind(app, f.*field); },
          [run, field](Flags& f) { return run(f.*field); }};
}

const std::vector<Command>& Commands() {
  static const auto* commands = new std::vector<Command>{
      Make("eval", "Compute metrics over arrays on disk (or the embedded demo data).", BindEval, RunEval, &Flags::eval),
      Make("inspect", "Show what the compiler made: inputs, states, passes, fusion groups, plans.", BindInspect,
           RunInspect, &Flags::inspect),
      Make("bench", "Run a benchmark workload (or all).", BindBench, RunBenchCommand, &Flags::bench),
      Make("export", "Write the compiled metrics as a TorchScript module (update, compute, reset).", BindExport,
           RunExport, &Flags::export_),
      Make("serve",
           "Serve metrics over HTTP: POST /v1/update, GET /v1/metrics, GET /v1/state, GET /metrics (Prometheus).",
           BindServe, RunServe, &Flags::serve),
      Make("merge", "Merge state files and servers' states, and print the metrics over all their rows.", BindMerge,
           RunMergeCommand, &Flags::merge),
      Make("list-metrics", "List every metric with its domain and inputs.", BindListMetrics, RunListMetrics,
           &Flags::list_metrics),
  };
  return *commands;
}

constexpr char kAppDescription[] = "tally: a metrics engine for PyTorch models.";

// MakeApp declares every command and its flags on `app`, parsing into `f`.
void MakeApp(CLI::App& app, Flags& f) {
  app.set_version_flag("--version", absl::StrCat("tally ", kTallyVersion));
  app.footer("The command-line reference: docs/cli.md.\n");
  app.get_formatter()->column_width(36);
  for (const Command& cmd : Commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    sub->footer("The command-line reference: docs/cli.md.\n");
    // Unknown flags and stray words are ours to report (one line each).
    sub->allow_extras();
    cmd.bind(sub, f);
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
  if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
    // "--batch-size: must be a positive integer, got '-3'"
    const size_t colon = msg.find(": ");
    if (colon != std::string::npos) return absl::StrCat(msg.substr(0, colon), " ", msg.substr(colon + 2));
  }
  return msg;
}

// RunCommand parses `argv` for the command argv[1] and runs it; `out_code`
// is set when the parse itself answers (--help, --version).
absl::Status RunCommand(int argc, char** argv, int* out_code) {
  CLI::App app(kAppDescription, "tally");
  Flags f;
  MakeApp(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      *out_code = app.exit(e);  // --help or --version: printed on stdout
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(TranslateParseError(e));
  }
  for (const Command& cmd : Commands()) {
    CLI::App* sub = app.get_subcommand(cmd.name);
    if (!sub->parsed()) continue;
    for (const std::string& extra : sub->remaining()) {
      if (absl::StartsWith(extra, "-")) {
        return absl::InvalidArgumentError(absl::StrCat("unknown flag '", extra.substr(0, extra.find('=')), "'"));
      }
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", extra, "'"));
    }
    return cmd.run(f);
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
    Flags f;
    MakeApp(app, f);
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
