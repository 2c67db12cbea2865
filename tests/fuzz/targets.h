// The fuzz targets: one function per parser or decoder of outside bytes.
//
// Each takes arbitrary bytes and must return normally: a bad input is an
// absl::Status error inside, never a crash, an abort or an escaping
// exception. Where a parser promises more (a printed IR module parses back to
// itself, a parsed .npy array is valid), the target checks it with
// FuzzCheck, which aborts. libFuzzer binaries call them from
// fuzz_entry.cc; fuzz_corpus_test runs the seeds and regressions through
// them in the regular build.
#ifndef TALLY_TESTS_FUZZ_TARGETS_H_
#define TALLY_TESTS_FUZZ_TARGETS_H_

#include "absl/strings/string_view.h"

namespace tally::fuzz {

// FuzzNpy: io::ParseNpy, then the array must validate, serialize and parse
// back to the same array, and convert to a tensor (TensorFromNpy).
void FuzzNpy(absl::string_view data);
// FuzzMetricSpec: metrics::ParseMetricSpec, every argument's printed value
// parses back to itself, then BuildMetric for a binary and a multiclass
// signature.
void FuzzMetricSpec(absl::string_view data);
// FuzzIr: ir::ParseModule and ir::ParseGraph, the verifier on what parsed,
// and print -> parse -> print is a fixed point.
void FuzzIr(absl::string_view data);
// FuzzCheckpoint: persist::Unframe of the bytes, then the bytes framed as
// a checkpoint payload through Session::CheckpointSignature and
// Session::LoadCheckpoint (and Compute when it loads).
void FuzzCheckpoint(absl::string_view data);
// FuzzJsonInputs: tally::TensorsFromJson, then ConformToSignature for a
// binary and a 16-bit multiclass signature.
void FuzzJsonInputs(absl::string_view data);
// FuzzProgramState: Program::LoadState into two compiled collections (and
// Compute when it loads).
void FuzzProgramState(absl::string_view data);
// FuzzStateFile: persist::DecodeStateFile of the bytes, then the bytes framed
// as a state file's payload (a valid checksum) merged by StateMerger, twice,
// and computed and saved when they merge (`tally merge` of outside files).
void FuzzStateFile(absl::string_view data);

}  // namespace tally::fuzz

#endif  // TALLY_TESTS_FUZZ_TARGETS_H_
