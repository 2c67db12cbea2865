// Tally's front door: the one header a server, a training loop or a tool
// includes to declare, compile and run metrics.
//
//   Spec strings -> entries:   BuildEntries (metrics/collection.h)
//   Entries -> a program:      Compile (engine/runtime/compiler.h), Program
//   Arrays in memory -> values: Evaluate (api/evaluate.h)
//   A long-running server:     CreateSession (api/session_factory.h), Session
//   States across machines:   SaveState, MergeStates (api/state_files.h)
//   Results as text:           ResultsToJson, ValueToJson (engine/runtime/result_text.h)
//   Metrics of your own:       the DSL (engine/dsl/builder.h), Metric
//   What metrics there are:    DescribeMetrics (metrics/catalogue.h)
//   What the compiler made:    Inspect, ProgramToDot, ProgramToJson (api/inspect.h)
//   A self-contained module:   Export (api/export.h)
//   JSON request bodies:       TensorsFromJson (api/json_inputs.h)
#ifndef TALLY_API_TALLY_H_
#define TALLY_API_TALLY_H_

#include "api/evaluate.h"                // IWYU pragma: export
#include "api/export.h"                  // IWYU pragma: export
#include "api/inspect.h"                 // IWYU pragma: export
#include "api/json_inputs.h"             // IWYU pragma: export
#include "api/npy_tensors.h"             // IWYU pragma: export
#include "api/program_graph.h"           // IWYU pragma: export
#include "api/session_factory.h"         // IWYU pragma: export
#include "api/state_files.h"             // IWYU pragma: export
#include "api/version.h"                 // IWYU pragma: export
#include "engine/dsl/builder.h"          // IWYU pragma: export
#include "engine/dsl/metric.h"           // IWYU pragma: export
#include "engine/runtime/compiler.h"     // IWYU pragma: export
#include "engine/runtime/program.h"      // IWYU pragma: export
#include "engine/runtime/result_text.h"  // IWYU pragma: export
#include "engine/runtime/results.h"      // IWYU pragma: export
#include "engine/serving/session.h"      // IWYU pragma: export
#include "metrics/catalogue.h"           // IWYU pragma: export
#include "metrics/collection.h"          // IWYU pragma: export

#endif  // TALLY_API_TALLY_H_
