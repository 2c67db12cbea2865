#include "engine/ir/types.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tally::ir {

absl::string_view DTypeName(DType d) {
  switch (d) {
    case DType::kBool:
      return "i1";
    case DType::kInt32:
      return "i32";
    case DType::kInt64:
      return "i64";
    case DType::kFloat32:
      return "f32";
    case DType::kFloat64:
      return "f64";
    case DType::kFloat16:
      return "f16";
    case DType::kBFloat16:
      return "bf16";
  }
  return "?";
}

absl::StatusOr<DType> ParseDType(absl::string_view s) {
  if (s == "i1" || s == "bool") return DType::kBool;
  if (s == "i32" || s == "int32") return DType::kInt32;
  if (s == "i64" || s == "int64") return DType::kInt64;
  if (s == "f32" || s == "float32") return DType::kFloat32;
  if (s == "f64" || s == "float64") return DType::kFloat64;
  if (s == "f16" || s == "float16") return DType::kFloat16;
  if (s == "bf16" || s == "bfloat16") return DType::kBFloat16;
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", s, "'"));
}

bool IsFloating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 || d == DType::kBFloat16;
}
bool IsIntegral(DType d) { return d == DType::kInt32 || d == DType::kInt64; }

int64_t DTypeSize(DType d) {
  switch (d) {
    case DType::kBool:
      return 1;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    default:
      return 8;
  }
}

namespace {
// Rank orders dtypes as torch.promote_types does: bool < int32 < int64 <
// f16, bf16 < f32 < f64.
int Rank(DType d) {
  switch (d) {
    case DType::kBool:
      return 0;
    case DType::kInt32:
      return 1;
    case DType::kInt64:
      return 2;
    case DType::kFloat16:
    case DType::kBFloat16:
      return 3;
    case DType::kFloat32:
      return 4;
    case DType::kFloat64:
      return 5;
  }
  return 0;
}
}  // namespace

DType PromoteTypes(DType a, DType b) {
  if (a != b && Rank(a) == 3 && Rank(b) == 3) return DType::kFloat32;  // f16 with bf16
  return Rank(a) >= Rank(b) ? a : b;
}

std::string Dim::ToString() const { return is_symbolic() ? symbol : absl::StrCat(size); }

absl::StatusOr<Device> ParseDevice(absl::string_view s) {
  s = absl::StripAsciiWhitespace(s);
  // "*" is Device::Any(): an input that may arrive on any device and is
  // transferred explicitly (ProgramOptions::transfer_inputs).
  if (s == "cpu" || s == "meta" || s == "mps" || s == "cuda" || s == Device::Any().name) {
    return Device{std::string(s)};
  }
  if (absl::StartsWith(s, "cuda:")) {
    int index;
    if (absl::SimpleAtoi(s.substr(5), &index) && index >= 0) {
      return Device{std::string(s)};
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown device '", s, "' (expected cpu, meta, mps, cuda or cuda:N)"));
}

std::string TensorType::ShapeString() const {
  return absl::StrCat("[", absl::StrJoin(shape, ",", [](std::string* out, const Dim& d) { out->append(d.ToString()); }),
                      "]");
}

std::string TensorType::ToString() const { return absl::StrCat(DTypeName(dtype), ShapeString(), "@", device.name); }

absl::StatusOr<TensorType> ParseTensorType(absl::string_view s) {
  s = absl::StripAsciiWhitespace(s);
  size_t lb = s.find('[');
  size_t rb = s.find(']');
  if (lb == absl::string_view::npos || rb == absl::string_view::npos || rb < lb) {
    return absl::InvalidArgumentError(absl::StrCat("bad tensor type '", s, "'"));
  }
  TensorType t;
  auto dtype = ParseDType(s.substr(0, lb));
  if (!dtype.ok()) return dtype.status();
  t.dtype = *dtype;
  absl::string_view dims = s.substr(lb + 1, rb - lb - 1);
  if (!absl::StripAsciiWhitespace(dims).empty()) {
    for (absl::string_view d : absl::StrSplit(dims, ',')) {
      d = absl::StripAsciiWhitespace(d);
      int64_t n;
      if (absl::SimpleAtoi(d, &n)) {
        t.shape.push_back(Dim::Fixed(n));
      } else if (!d.empty() && (absl::ascii_isalpha(d[0]) || d[0] == '_')) {
        t.shape.push_back(Dim::Symbol(std::string(d)));
      } else {
        return absl::InvalidArgumentError(absl::StrCat("bad dim '", d, "' in '", s, "'"));
      }
    }
  }
  absl::string_view rest = s.substr(rb + 1);
  if (!rest.empty()) {
    if (rest[0] != '@') {
      return absl::InvalidArgumentError(absl::StrCat("bad tensor type '", s, "'"));
    }
    auto dev = ParseDevice(rest.substr(1));
    if (!dev.ok()) return dev.status();
    t.device = *dev;
  }
  return t;
}

}  // namespace tally::ir
