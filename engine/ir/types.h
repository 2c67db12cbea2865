// Tensor types of the Tally IR: element dtype, a shape of fixed or symbolic
// dims, and the device the value lives on.
//
// Types are plain data with no LibTorch dependency so that the IR, the
// printer/parser and the passes compile without ATen. Symbolic dims (`N` rows,
// `R` accumulated rows) stand for sizes known only at run time; every other dim
// is fixed when a metric is built.
#ifndef TALLY_ENGINE_IR_TYPES_H_
#define TALLY_ENGINE_IR_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tally::ir {

// DType is the element type of a tensor value.
// kFloat16 and kBFloat16 are input dtypes: a metric's builder widens a
// 16-bit float input to f32 exactly (dsl::MetricBuilder::Input), so only the
// program boundary and the curves' exact16 form see them.
enum class DType { kBool, kInt32, kInt64, kFloat32, kFloat64, kFloat16, kBFloat16 };

// DTypeName returns the short IR spelling: i1, i32, i64, f32, f64, f16, bf16.
absl::string_view DTypeName(DType d);
// ParseDType parses the short IR spelling or the NumPy name ("float32").
absl::StatusOr<DType> ParseDType(absl::string_view s);
// IsFloating is true for f16, bf16, f32 and f64.
bool IsFloating(DType d);
// IsIntegral is true for i32 and i64 (not bool).
bool IsIntegral(DType d);
// DTypeSize is the bytes of one element: 1 for i1, 2 for f16/bf16, 4 for
// i32/f32, 8 otherwise.
int64_t DTypeSize(DType d);
// PromoteTypes follows torch.result_type for two tensors of equal rank class
// (f16 with bf16 gives f32).
DType PromoteTypes(DType a, DType b);

// Dim is one dimension: a fixed size or a named symbol such as `N`.
struct Dim {
  int64_t size = 0;    // valid when symbol is empty
  std::string symbol;  // non-empty for a symbolic dim

  static Dim Fixed(int64_t n) { return Dim{n, ""}; }
  static Dim Symbol(std::string s) { return Dim{0, std::move(s)}; }
  bool is_symbolic() const { return !symbol.empty(); }
  bool operator==(const Dim& o) const { return symbol == o.symbol && (is_symbolic() || size == o.size); }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string ToString() const;
};

using Shape = std::vector<Dim>;

// Device names a placement: "cpu", "meta", "cuda:1", "mps". It is a string so
// that planning for devices this machine lacks needs no hardware.
struct Device {
  std::string name = "cpu";
  // Any is the device of an input that may arrive anywhere and is copied to
  // the program's device by an explicit transfer node (insert-transfers);
  // its text form is "*".
  static Device Any() { return Device{"*"}; }
  bool is_any() const { return name == "*"; }
  bool operator==(const Device& o) const { return name == o.name; }
  bool operator!=(const Device& o) const { return name != o.name; }
};
// ParseDevice validates a device name ("cpu", "meta", "cuda", "cuda:N", "mps").
absl::StatusOr<Device> ParseDevice(absl::string_view s);

// TensorType is the type of every IR value.
struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;
  Device device;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape && device == o.device; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  // ToString prints `f32[N,3]@cpu`.
  std::string ToString() const;
  // ShapeString prints `[N,3]`.
  std::string ShapeString() const;
};

// ParseTensorType parses the ToString form.
absl::StatusOr<TensorType> ParseTensorType(absl::string_view s);

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_TYPES_H_
