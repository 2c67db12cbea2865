#include "ops/op_list.h"

#include <string>

#include "absl/container/flat_hash_map.h"

namespace tally::ops {

std::optional<OpId> OpIdNamed(absl::string_view name) {
  static const auto* ids = [] {
    auto* m = new absl::flat_hash_map<std::string, OpId>();
    for (size_t i = 0; i < kNumOps; ++i) m->emplace(std::string(kOpNames[i]), static_cast<OpId>(i));
    return m;
  }();
  auto it = ids->find(name);
  if (it == ids->end()) return std::nullopt;
  return it->second;
}

std::optional<OpId> IdOf(const ir::Node& n) {
  const int code = n.opcode_cache();
  if (code >= 0) return static_cast<OpId>(code);
  if (code == -2) return std::nullopt;
  std::optional<OpId> id = OpIdNamed(n.op());
  n.set_opcode_cache(id ? static_cast<int>(Index(*id)) : -2);
  return id;
}

}  // namespace tally::ops
