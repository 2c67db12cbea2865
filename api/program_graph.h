// A compiled program as a Graphviz graph or as JSON (`tally inspect --format
// dot|json`): inputs, states with their reducers, the update and finalize
// plans with every value's device, fusion groups, passes and outputs.
#ifndef TALLY_API_PROGRAM_GRAPH_H_
#define TALLY_API_PROGRAM_GRAPH_H_

#include <string>

#include "engine/runtime/compiler.h"

namespace tally {

// ProgramToDot draws `c`: the update plan (fused kernels filled), states as
// cylinders between it and the finalize plan, outputs as notes; edges are
// labelled with types, and a value on another device than the program's is
// drawn red (the proof rules that out, so red means a bug).
std::string ProgramToDot(const Compiled& c, const ir::Device& device);

// ProgramToJson gives the same facts as data: {"device", "inputs", "states",
// "passes", "fusion_groups", "update", "finalize", "outputs", "proof"}.
std::string ProgramToJson(const Compiled& c, const ir::Device& device);

}  // namespace tally

#endif  // TALLY_API_PROGRAM_GRAPH_H_
