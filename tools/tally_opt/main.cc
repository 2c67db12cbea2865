// tally-opt: run passes over a text-IR module, like mlir-opt.
//
//   tally_opt --passes=canonicalize,cse [--device cuda:1] FILE.ir|-
//
// Prints the module after the passes, or one error line and exits 1.
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "passes/pipeline.h"
#include "passes/registry.h"

int main(int argc, char** argv) {
  std::string passes, file = "-", device = "cpu";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (absl::StartsWith(a, "--passes="))
      passes = a.substr(9);
    else if (absl::StartsWith(a, "--device="))
      device = a.substr(9);
    else
      file = a;
  }
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
  tally::passes::PassPipeline pipeline("tally_opt");
  tally::passes::PassOptions options;
  options.device = tally::ir::Device{device};
  for (absl::string_view name : absl::StrSplit(passes, ',', absl::SkipEmpty())) {
    auto p = tally::passes::CreatePass(name, options);
    if (!p.ok()) {
      std::cerr << "tally_opt: error: " << p.status().message() << "\n";
      return 1;
    }
    pipeline.AddPass(std::move(*p));
  }
  auto changed = pipeline.Run(**module);
  if (!changed.ok()) {
    std::cerr << "tally_opt: error: " << changed.status().message() << "\n";
    return 1;
  }
  std::cout << tally::ir::PrintModule(**module);
  return 0;
}
