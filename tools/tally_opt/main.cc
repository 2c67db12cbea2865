// tally-opt: run passes over a text-IR module, like mlir-opt.
//
//   tally_opt [--passes=canonicalize,cse] [--device=cuda:1] [FILE.ir|-]
//
// Runs the passes in order (none: the module is only verified) over FILE
// (default `-`, stdin), each checked against its "changed" answer
// (run_passes.h), and prints the module. An error is one line on stderr and
// exit 1; a bad argument also prints the usage line.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "tools/tally_opt/run_passes.h"

namespace {

constexpr char kUsage[] = "usage: tally_opt [--passes=PASS,PASS...] [--device=DEVICE] [FILE.ir|-]";

int BadArgument(const std::string& why) {
  std::cerr << "tally_opt: error: " << why << "\n" << kUsage << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string passes, file, device = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::cout << kUsage << "\n";
      return 0;
    } else if (absl::StartsWith(a, "--passes=")) {
      passes = a.substr(9);
    } else if (absl::StartsWith(a, "--device=")) {
      device = a.substr(9);
      if (device.empty()) return BadArgument("--device= needs a device, e.g. --device=cuda:1");
    } else if (a != "-" && absl::StartsWith(a, "-")) {
      return BadArgument("unknown argument '" + a + "'");
    } else if (!file.empty()) {
      return BadArgument("more than one input file ('" + file + "', '" + a + "')");
    } else {
      file = a;
    }
  }
  if (file.empty()) file = "-";
  std::stringstream text;
  if (file == "-")
    text << std::cin.rdbuf();
  else {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "tally_opt: error: cannot read " << file << "\n";
      return 1;
    }
    text << in.rdbuf();
  }
  auto module = tally::ir::ParseModule(text.str());
  if (!module.ok()) {
    std::cerr << "tally_opt: error: " << module.status().message() << "\n";
    return 1;
  }
  tally::passes::PassOptions options;
  options.device = tally::ir::Device{device};
  std::vector<std::unique_ptr<tally::passes::Pass>> pipeline;
  for (absl::string_view name : absl::StrSplit(passes, ',', absl::SkipEmpty())) {
    auto p = tally::passes::CreatePass(name, options);
    if (!p.ok()) {
      std::cerr << "tally_opt: error: " << p.status().message() << "\n";
      return 1;
    }
    pipeline.push_back(std::move(*p));
  }
  absl::Status run = tally::tools::RunPassesChecked(std::move(pipeline), **module);
  if (!run.ok()) {
    std::cerr << "tally_opt: error: " << run.message() << "\n";
    return 1;
  }
  std::cout << tally::ir::PrintModule(**module);
  return 0;
}
