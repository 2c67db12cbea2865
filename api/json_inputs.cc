#include "api/json_inputs.h"

#include <map>

#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/ir/aten_types.h"
#include "metrics/inputs.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally {
namespace {

constexpr size_t kMaxRank = 8;

// Flat is a nested list read in row-major order.
struct Flat {
  std::vector<int64_t> shape;
  std::vector<int64_t> ints;    // when every leaf is an integer or a bool
  std::vector<double> doubles;  // every leaf
  bool all_bool = true, all_int = true;
  int64_t leaf_depth = -1;  // where the first leaf was: every leaf must be there
};

absl::Status Walk(const nlohmann::json& j, size_t depth, Flat& f, const std::string& name) {
  if (j.is_array()) {
    if (depth == f.shape.size()) {
      if (f.leaf_depth >= 0) {
        return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ragged nested list (not rectangular)"));
      }
      if (depth >= kMaxRank) {
        return absl::InvalidArgumentError(absl::StrCat("input '", name, "': more than ", kMaxRank, " dims"));
      }
      // The first list seen at a depth fixes that dim.
      f.shape.push_back(static_cast<int64_t>(j.size()));
    } else if (depth > f.shape.size() || f.shape[depth] != static_cast<int64_t>(j.size())) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ragged nested list (not rectangular)"));
    }
    for (const auto& e : j) TALLY_RETURN_IF_ERROR(Walk(e, depth + 1, f, name));
    // An empty list at a depth above others leaves its inner dims unknown:
    // [] is shape [0], [[]] is [1, 0].
    return absl::OkStatus();
  }
  if (f.leaf_depth < 0) f.leaf_depth = static_cast<int64_t>(depth);
  if (depth != f.shape.size() || f.leaf_depth != static_cast<int64_t>(depth)) {
    return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ragged nested list (not rectangular)"));
  }
  if (j.is_boolean()) {
    f.ints.push_back(j.get<bool>() ? 1 : 0);
    f.doubles.push_back(j.get<bool>() ? 1.0 : 0.0);
    return absl::OkStatus();
  }
  f.all_bool = false;
  if (j.is_number_integer()) {
    if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': integer out of int64 range"));
    }
    f.ints.push_back(j.get<int64_t>());
    f.doubles.push_back(static_cast<double>(j.get<int64_t>()));
    return absl::OkStatus();
  }
  if (j.is_number_float()) {
    f.all_int = false;
    f.doubles.push_back(j.get<double>());
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("input '", name, "': expected numbers, true/false or nested lists of them, got ", j.type_name()));
}

}  // namespace

absl::StatusOr<NamedTensors> TensorsFromJson(absl::string_view body) {
  nlohmann::json doc = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("request body is not valid JSON");
  if (!doc.is_object()) return absl::InvalidArgumentError("request body must be a JSON object of named inputs");
  // "dtypes": {"preds": "float16"} declares an input's dtype: float16 and
  // bfloat16 scores (a mixed-precision model's) are rounded to that format,
  // so that the exact curves count them per 16-bit code.
  std::map<std::string, at::ScalarType> declared;
  if (auto d = doc.find("dtypes"); d != doc.end()) {
    if (!d->is_object()) return absl::InvalidArgumentError("\"dtypes\" must map input names to dtype names");
    for (const auto& item : d->items()) {
      if (!metrics::IsInputName(item.key()) || !item.value().is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"dtypes\": '", item.key(), "' is not an input name with a dtype"));
      }
      const std::string name = item.value().get<std::string>();
      auto dtype = ir::ParseDType(name);
      if (!dtype.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("\"dtypes\": input '", item.key(), "': unknown dtype '", name,
                                                       "' (bool, int32, int64, float16, bfloat16, float32, float64)"));
      }
      declared[item.key()] = ir::ToScalarType(*dtype);
    }
    doc.erase("dtypes");
  }
  for (const auto& item : doc.items()) {
    if (!metrics::IsInputName(item.key())) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown input name '", item.key(), "' (expected ", metrics::kInputNamesText, ")"));
    }
  }
  NamedTensors out;
  for (absl::string_view input : metrics::kInputNames) {
    const std::string name(input);
    auto it = doc.find(name);
    if (it == doc.end()) continue;
    Flat f;
    TALLY_RETURN_IF_ERROR(Walk(*it, 0, f, name));
    int64_t numel = 1;
    for (int64_t d : f.shape) numel *= d;
    if (numel != static_cast<int64_t>(f.doubles.size())) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': ragged nested list (not rectangular)"));
    }
    // An empty list has no leaves to type; torch.tensor([]) is float32.
    if (f.doubles.empty()) f.all_bool = f.all_int = false;
    at::Tensor t;
    TALLY_RETURN_IF_ERROR(support::CatchTorch(
        [&] {
          if (f.all_bool) {
            t = at::tensor(f.ints, at::kLong).to(at::kBool);
          } else if (f.all_int) {
            t = at::tensor(f.ints, at::kLong);
          } else {
            t = at::tensor(f.doubles, at::kDouble).to(at::kFloat);
          }
          t = t.reshape(f.shape);
          if (auto d = declared.find(name); d != declared.end()) t = t.to(d->second);
        },
        absl::StrCat("input '", name, "'")));
    out.emplace_back(name, t);
  }
  if (out.empty()) return absl::InvalidArgumentError("request body has no input (expected preds, target, ...)");
  return out;
}

absl::StatusOr<NamedTensors> ConformToSignature(NamedTensors inputs, const dsl::Signature& sig) {
  for (auto& [name, t] : inputs) {
    const dsl::InputSpec* spec = nullptr;
    for (const auto& s : sig)
      if (s.name == name) spec = &s;
    if (spec == nullptr) continue;  // the session names what it does not take
    TALLY_ASSIGN_OR_RETURN(ir::DType have, ir::FromScalarType(t.scalar_type()));
    if (t.numel() == 0) {
      // No rows: [] stands for an empty batch of the signature's trailing dims.
      std::vector<int64_t> shape = spec->shape;
      if (!shape.empty()) shape[0] = 0;
      if (t.dim() == 1 && shape.size() > 1) t = t.reshape(shape);
      t = t.to(ir::ToScalarType(spec->dtype));
      continue;
    }
    if (have == spec->dtype) continue;
    bool widen = (have == ir::DType::kBool) || (ir::IsIntegral(have) && ir::IsFloating(spec->dtype)) ||
                 (ir::IsIntegral(have) && ir::IsIntegral(spec->dtype)) ||
                 (have == ir::DType::kFloat32 && spec->dtype == ir::DType::kFloat64);
    if (!widen && ir::IsFloating(have) && (spec->dtype == ir::DType::kFloat16 || spec->dtype == ir::DType::kBFloat16)) {
      // Undeclared float values for a 16-bit input: taken when they are
      // exactly values of that format (nothing is lost), refused otherwise.
      TALLY_RETURN_IF_ERROR(support::CatchTorch(
          [&, &t = t] {  // init-capture: clang 14 cannot capture a binding
            at::Tensor back = t.to(ir::ToScalarType(spec->dtype)).to(t.scalar_type());
            widen = back.eq(t).logical_or(back.isnan().logical_and(t.isnan())).all().item<bool>();
          },
          absl::StrCat("input '", name, "'")));
    }
    if (!widen) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': got ", ir::DTypeName(have),
                                                     " values where the first update fixed ",
                                                     ir::DTypeName(spec->dtype)));
    }
    TALLY_RETURN_IF_ERROR(support::CatchTorch([&, &t = t] { t = t.to(ir::ToScalarType(spec->dtype)); },
                                              absl::StrCat("input '", name, "'")));
  }
  return inputs;
}

}  // namespace tally
