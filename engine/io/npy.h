// Reading and writing NumPy `.npy` files without any dependency beyond Abseil.
//
// This file holds a small in-memory array type, `NpyArray`, whose element
// bytes are little-endian, C order and one of the five dtypes Tally computes
// with (bool, int32, int64, float32, float64), together with a parser for the
// NumPy file format (versions 1.0, 2.0 and 3.0) and a serializer that writes
// version 1.0 files that `numpy.load` reads back.
//
// The parser accepts more than it stores, converting on read, losslessly:
//
//   in the file (descr)                     read as
//   bool     |b1 (or numpy.load's '?')       kBool
//   int8     |i1                             kInt32
//   int16    <i2 >i2                         kInt32
//   int32    <i4 >i4                         kInt32
//   int64    <i8 >i8                         kInt64
//   uint8    |u1                             kInt32
//   uint16   <u2 >u2                         kInt32
//   uint32   <u4 >u4                         kInt64
//   uint64   <u8 >u8                         kInt64, if every value is at
//                                            most 2^63 - 1 (else an error
//                                            naming the first one above)
//   float16  <f2 >f2                         kFloat32, exactly (subnormals,
//                                            +-inf, -0.0, NaN payloads),
//                                            with NpyArray::float16 set
//   float32  <f4 >f4                         kFloat32
//   float64  <f8 >f8                         kFloat64
//
// Big-endian data is byte-swapped, and `fortran_order: True` arrays of any
// rank are reordered into C order (the shape stays the same). One-byte types
// may carry any byte-order mark ('|', '<', '>', '='); wider ones need '<' or
// '>'.
// Everything else -- complex, object arrays (pickles), structured and void
// dtypes, byte and unicode strings, datetime and timedelta, types wider than
// 8 bytes -- is rejected with an `absl::InvalidArgumentError` whose message
// starts with the name of the file, says what was wrong and lists what is
// supported, e.g.
//
//   preds.npy: truncated: header says 300 bytes of data, file has 120
//   labels.npy: uint64 element 2 (index [2]) has value 18446744073709551615,
//       which does not fit in int64 (max 9223372036854775807)
//
// The parser is strict: the data must be exactly as long as the header's
// shape and dtype require (a `.npy` file holds exactly one array; trailing
// bytes are rejected), and bool elements must be 0 or 1 so that callers can
// safely reinterpret the data as `bool`.
//
// The element bytes are kept in a `std::string` so that an `NpyArray` is a
// plain value type; callers that want typed access copy (or, on a
// little-endian host, reinterpret) `data` as the matching C++ type: `bool`,
// `int32_t`, `int64_t`, `float` or `double`.

#ifndef TALLY_ENGINE_IO_NPY_H_
#define TALLY_ENGINE_IO_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tally::io {

// Element type of an `NpyArray`: the dtypes Tally computes with. Files of
// other integer and float dtypes are converted to one of these on read (see
// the table at the top of this file); `SerializeNpy` writes these as is.
enum class NpyDType {
  kBool,     // NumPy `|b1`, one byte per element, 0 or 1.
  kInt32,    // NumPy `<i4`.
  kInt64,    // NumPy `<i8`.
  kFloat32,  // NumPy `<f4`.
  kFloat64,  // NumPy `<f8`.
};

// Returns the lower-case NumPy name of `dtype`: "bool", "int32", "int64",
// "float32" or "float64".
absl::string_view NpyDTypeName(NpyDType dtype);

// Returns the size in bytes of one element of `dtype` (1, 4, 8, 4 or 8).
int64_t NpyDTypeSize(NpyDType dtype);

// A dense n-dimensional array as stored in an `.npy` file.
struct NpyArray {
  // Element type.
  NpyDType dtype = NpyDType::kFloat32;
  // Dimensions, outermost first. Empty for a scalar (NumPy shape `()`).
  std::vector<int64_t> shape;
  // Element bytes, little-endian, C (row-major) order. For a valid array
  // `data.size() == numel() * NpyDTypeSize(dtype)`.
  std::string data;
  // float16 is true when the file held float16 values (kFloat32 `data`
  // holds them exactly), so that a reader can keep them 16-bit.
  bool float16 = false;

  // Returns the number of elements: the product of `shape`, 1 for a scalar
  // and 0 if any dimension is 0.
  int64_t numel() const;
};

// Checks that `a` can be serialized: every dimension is non-negative, the
// element count does not overflow, `data` holds exactly
// `numel() * NpyDTypeSize(dtype)` bytes, and (for bool) every byte is 0 or 1.
// Returns InvalidArgument describing the first problem otherwise.
absl::Status ValidateNpyArray(const NpyArray& a);

// Parses the contents of an `.npy` file. `name_for_errors` (usually the file
// path) prefixes every error message. Accepts format versions 1.0, 2.0 and
// 3.0, either byte order and either memory order, and the dtypes in the table
// at the top of this file, converting them to an `NpyDType` in C order;
// returns InvalidArgument for anything else, including a bad magic string, a
// malformed header, an unsupported dtype, a uint64 value above int64's range,
// fewer data bytes than the shape requires (truncation) and extra bytes after
// the data.
absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes, absl::string_view name_for_errors);

// Reads and parses the `.npy` file at `path`. Returns NotFound if the file
// does not exist, another errno-derived status if it cannot be read, and the
// errors of `ParseNpy` (prefixed with `path`) if its contents are invalid.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);

// Returns the `.npy` encoding of `a`: format version 1.0 (2.0 only if the
// header would not fit in 65535 bytes), header padded so the data starts at a
// multiple of 64 bytes, exactly as NumPy lays it out. `a` must satisfy
// `ValidateNpyArray`; otherwise the result is unspecified (use `WriteNpy`, or
// call `ValidateNpyArray` first, when the array comes from untrusted code).
std::string SerializeNpy(const NpyArray& a);

// Validates `a` (see `ValidateNpyArray`) and writes `SerializeNpy(a)` to
// `path`, replacing any existing file. Returns InvalidArgument for an
// invalid array and an errno-derived status naming `path` if the file cannot
// be written.
absl::Status WriteNpy(const std::string& path, const NpyArray& a);

}  // namespace tally::io

#endif  // TALLY_ENGINE_IO_NPY_H_
