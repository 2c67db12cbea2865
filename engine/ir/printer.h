// The text form of the IR. `PrintModule(ParseModule(t)) == t` for every printed
// module, so pass tests are written as IR in, IR out, and `tally inspect`
// prints the same text.
//
//   module {
//     state @acc.tp : i64[3]@cpu init=0.0 reducer=sum metric="multiclass_accuracy"
//     graph @update(%preds: f32[N,3]@cpu, %target: i64[N]@cpu) {
//       %0 = argmax(%preds) {dim=1} : i64[N]@cpu loc("metrics/classification/classification.cc:88")
//       return (acc.tp: %0)
//     }
//   }
//
// Node outputs are renumbered %0, %1, ... in order; parameters keep their names.
#ifndef TALLY_ENGINE_IR_PRINTER_H_
#define TALLY_ENGINE_IR_PRINTER_H_

#include <string>

#include "engine/ir/graph.h"
#include "engine/ir/module.h"

namespace tally::ir {

// PrintGraph prints one graph, indented by `indent` spaces.
std::string PrintGraph(const Graph& g, int indent = 0);
// PrintModule prints a whole module.
std::string PrintModule(const Module& m);
// PrintStateDecl prints one `state` line without indentation or newline.
std::string PrintStateDecl(const StateDecl& s);

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_PRINTER_H_
