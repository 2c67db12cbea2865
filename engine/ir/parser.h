// Parser for the text IR printed by printer.h. Errors are InvalidArgument and
// carry the line number and the offending text.
#ifndef TALLY_ENGINE_IR_PARSER_H_
#define TALLY_ENGINE_IR_PARSER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/graph.h"
#include "engine/ir/module.h"

namespace tally::ir {

// ParseModule parses `module { ... }`.
absl::StatusOr<std::unique_ptr<Module>> ParseModule(absl::string_view text);
// ParseGraph parses a single `graph @name(...) { ... }`.
absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text);

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_PARSER_H_
