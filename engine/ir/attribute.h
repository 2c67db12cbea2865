// Node attributes: a small closed set of constant kinds.
//
// Attributes are part of a node's identity: CSE merges two nodes only when
// their op, inputs and attributes are all equal, so equality here is exact
// (doubles compare bitwise, NaN equals NaN).
#ifndef TALLY_ENGINE_IR_ATTRIBUTE_H_
#define TALLY_ENGINE_IR_ATTRIBUTE_H_

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "support/format_double.h"

namespace tally::ir {

// Attr is one attribute value.
using Attr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

// AttrMap is ordered so that printing is deterministic.
using AttrMap = std::map<std::string, Attr>;

// AttrEquals compares exactly; doubles compare by bit pattern.
bool AttrEquals(const Attr& a, const Attr& b);
// AttrMapEquals compares two maps with AttrEquals.
bool AttrMapEquals(const AttrMap& a, const AttrMap& b);
// AttrToString prints an attribute so that ParseAttr reads it back exactly.
std::string AttrToString(const Attr& a);
// ParseAttr parses one printed attribute.
absl::StatusOr<Attr> ParseAttr(absl::string_view s);
// FormatDouble prints a double that parses back to the same value
// (support/format_double.h; named here for the IR's printer and its users).
using ::tally::support::FormatDouble;

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_ATTRIBUTE_H_
