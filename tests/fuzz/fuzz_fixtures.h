// The fixed programs and session that the state and checkpoint fuzz targets
// load bytes into, and the rows make_corpus feeds them to write seeds.
#ifndef TALLY_TESTS_FUZZ_FUZZ_FIXTURES_H_
#define TALLY_TESTS_FUZZ_FUZZ_FIXTURES_H_

#include <memory>
#include <string>
#include <vector>

#include "api/tally.h"
#include "engine/runtime/program.h"

namespace tally::fuzz {

// CompileForFuzz builds `specs` for `sig` and compiles them for the CPU;
// aborts on an error (a broken fixture, not a finding).
std::unique_ptr<Program> CompileForFuzz(const std::vector<std::string>& specs, const dsl::Signature& sig);

// StatePrograms are two compiled collections, made once: binary_accuracy and
// binary_auroc (a sum and cat states, preds f32[N], target i64[N]), and
// multiclass_accuracy and multiclass_auroc with num_classes=3 (preds
// f32[N, 3]). Their rows: StateProgramRows()[i].
const std::vector<std::unique_ptr<Program>>& StatePrograms();
std::vector<NamedTensors> StateProgramRows();

// NewCheckpointSession makes a session of two sets, "cls"
// (multiclass_accuracy(num_classes=3)) and "agg" (sum), with an update-count
// window "last4" (4 updates, 2 buckets) and a time window "last10s".
std::unique_ptr<Session> NewCheckpointSession();
// CheckpointSessionRows are rows that session takes (preds/target int64
// labels in [0, 3), value float64).
NamedTensors CheckpointSessionRows();

}  // namespace tally::fuzz

#endif  // TALLY_TESTS_FUZZ_FUZZ_FIXTURES_H_
