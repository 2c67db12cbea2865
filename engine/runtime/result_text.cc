#include "engine/runtime/result_text.h"

#include <ATen/ATen.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/ir/attribute.h"

namespace tally {
namespace {

// Number prints one value. JSON has no NaN or infinities: there they are
// null (`Infinity` would make the whole document unparsable for strict
// parsers); the table, which people read, says nan, inf and -inf.
std::string Number(double v, bool json) {
  if (json && !std::isfinite(v)) return "null";
  return ir::FormatDouble(v);
}

void AppendValue(const at::Tensor& t, std::string& out, bool json) {
  if (t.dim() == 0) {
    // Counts (confusion matrices, stat scores) print as integers.
    if (!at::isFloatingType(t.scalar_type()))
      out += absl::StrCat(t.item<int64_t>());
    else
      out += Number(t.item<double>(), json);
    return;
  }
  out += "[";
  for (int64_t i = 0; i < t.size(0); ++i) {
    if (i) out += ", ";
    AppendValue(t[i], out, json);
  }
  out += "]";
}

std::string TensorText(const at::Tensor& t, bool json) {
  std::string out;
  at::Tensor cpu = t.to(at::kCPU);
  AppendValue(at::isFloatingType(cpu.scalar_type()) ? cpu.to(at::kDouble) : cpu.to(at::kLong), out, json);
  return out;
}

// A tuple prints as the list of its parts.
std::string TreeText(const ResultTree& r, bool json) {
  if (r.is_leaf()) return TensorText(r.tensor, json);
  std::string out = "[";
  for (size_t i = 0; i < r.parts.size(); ++i) {
    if (i) out += ", ";
    out += TreeText(r.parts[i], json);
  }
  return out + "]";
}

// A dict result prints as an object of its named parts, in order.
std::string KeyedText(const ResultTree& r, bool json) {
  const std::vector<std::string>& keys = r.keys;
  if (keys.empty() || keys.size() != r.parts.size()) return TreeText(r, json);
  std::string out = "{";
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", JsonString(keys[i]), ": ", TreeText(r.parts[i], json));
  }
  return out + "}";
}

}  // namespace

std::string ValueToJson(const at::Tensor& t) { return TensorText(t, /*json=*/true); }
std::string ValueToJson(const ResultTree& r) { return KeyedText(r, /*json=*/true); }
std::string ValueToText(const ResultTree& r) { return KeyedText(r, /*json=*/false); }

std::string JsonString(absl::string_view s) {
  // nlohmann-json escapes quotes, backslashes and every control character;
  // bytes that are not UTF-8 become U+FFFD (JSON text is UTF-8), never an
  // invalid document or an exception.
  return nlohmann::json(std::string(s)).dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tally
