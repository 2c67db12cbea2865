// CompileReport: what a pipeline's passes leave behind besides the rewritten
// module — the log of what each pass did, the device proof and the fusion
// groups. Each pass writes its own artefacts (Pass::Report) instead of the
// compiler reaching into pass objects or running a pass again.
#ifndef TALLY_PASSES_COMPILE_REPORT_H_
#define TALLY_PASSES_COMPILE_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tally::passes {

// PassRecord is what one pass did.
struct PassRecord {
  std::string pass;
  bool changed = false;
  std::map<std::string, int64_t> counters;
  std::string dump;  // the IR after the pass, when requested and changed
};

// DeviceProof is the single-device certificate: edge classes with their
// counts, and the inputs that get a boundary check.
struct DeviceProof {
  std::string device;
  std::map<std::string, int64_t> edges;  // "update: param -> node" -> count
  int64_t states = 0;
  std::vector<std::string> boundary_checks;  // one line per program input
  // ToString prints one line per edge class, then the boundary checks.
  std::string ToString() const;
};

struct CompileReport {
  std::vector<PassRecord> log;             // one record per pass run, in order
  std::optional<DeviceProof> proof;        // written by prove-single-device
  std::vector<std::string> fusion_groups;  // written by fuse
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_COMPILE_REPORT_H_
