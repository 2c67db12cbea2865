#include "engine/io/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "engine/io/regular_file.h"

namespace tally::io {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Data starts at a multiple of this many bytes from the start of the file.
constexpr size_t kAlignment = 64;
constexpr absl::string_view kSupportedDTypes =
    "bool (|b1), int8/int16/int32/int64 (i1, i2, i4, i8), "
    "uint8/uint16/uint32/uint64 (u1, u2, u4, u8; uint64 values must fit in "
    "int64), float16/float32/float64 (f2, f4, f8), little- or big-endian, C "
    "or Fortran order";

// Returns the NumPy `descr` string written for `dtype`.
absl::string_view Descr(NpyDType dtype) {
  switch (dtype) {
    case NpyDType::kBool:
      return "|b1";
    case NpyDType::kInt32:
      return "<i4";
    case NpyDType::kInt64:
      return "<i8";
    case NpyDType::kFloat32:
      return "<f4";
    case NpyDType::kFloat64:
      return "<f8";
  }
  return "?";
}

// The element type stored in a file, and the dtype it is converted to.
struct FileDType {
  char kind = 'b';  // 'b' bool, 'i' signed, 'u' unsigned, 'f' IEEE float
  int size = 1;     // bytes per element
  bool big_endian = false;
  NpyDType target = NpyDType::kBool;

  // True if the file bytes already are the bytes of `target`.
  bool IsNative() const { return !big_endian && kind != 'u' && size == NpyDTypeSize(target); }
};

// Maps a NumPy `descr` to the file's element type, or says (without the file
// name) why it is not supported.
absl::StatusOr<FileDType> ParseDescr(absl::string_view descr) {
  auto unsupported = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported dtype '", descr, "' (", why, "); supported dtypes are ", kSupportedDTypes));
  };
  // NumPy writes '|b1'; numpy.load also reads a bare '?'.
  if (descr == "?" || descr == "|?" || descr == "<?" || descr == ">?" || descr == "=?") {
    return FileDType{'b', 1, false, NpyDType::kBool};
  }
  if (descr.size() < 2 || absl::string_view("<>|=").find(descr[0]) == absl::string_view::npos) {
    return unsupported("not a NumPy type string");
  }
  const char order = descr[0];
  const char kind = descr[1];
  switch (kind) {
    case 'b':
    case 'i':
    case 'u':
    case 'f':
      break;
    case 'c':
      return unsupported("complex");
    case 'O':
      return unsupported("Python objects, stored as a pickle");
    case 'S':
    case 'a':
      return unsupported("byte strings");
    case 'U':
      return unsupported("unicode strings");
    case 'V':
      return unsupported("void/raw bytes");
    case 'M':
      return unsupported("datetime");
    case 'm':
      return unsupported("timedelta");
    default:
      return unsupported("unknown type code");
  }
  const absl::string_view digits = descr.substr(2);
  int size = 0;
  if (digits.empty() || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) ||
      !absl::SimpleAtoi(digits, &size)) {
    return unsupported("not a NumPy type string");
  }
  if (size > 8) return unsupported("wider than 8 bytes");
  FileDType t;
  t.kind = kind;
  t.size = size;
  switch (kind) {
    case 'b':
      if (size != 1) return unsupported("bool must be 1 byte");
      t.target = NpyDType::kBool;
      break;
    case 'i':
    case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) {
        return unsupported("integer size must be 1, 2, 4 or 8 bytes");
      }
      t.target = size <= 2 || (kind == 'i' && size == 4) ? NpyDType::kInt32 : NpyDType::kInt64;
      break;
    case 'f':
      if (size != 2 && size != 4 && size != 8) {
        return unsupported("float size must be 2, 4 or 8 bytes");
      }
      t.target = size == 8 ? NpyDType::kFloat64 : NpyDType::kFloat32;
      break;
  }
  if (size > 1) {
    // '|' (no byte order) and '=' (the writer's native order) never describe
    // a multi-byte number in a file NumPy wrote.
    if (order != '<' && order != '>') {
      return unsupported("a multi-byte type needs byte order '<' or '>'");
    }
    t.big_endian = order == '>';
  }
  return t;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// Returns the element count of `shape`, or nullopt on a negative dimension
// or if the byte size of the array would overflow int64 for `item_size`.
std::optional<int64_t> CheckedNumel(const std::vector<int64_t>& shape, int64_t item_size) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  const int64_t limit = std::numeric_limits<int64_t>::max() / item_size;
  for (int64_t d : shape) {
    if (n > limit / d) return std::nullopt;
    n *= d;
  }
  return n;
}

uint32_t ReadLittleEndian(absl::string_view bytes, size_t offset, size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return v;
}

// The fields of an `.npy` header dictionary.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// Parses the Python dict literal that forms an `.npy` header, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Only the subset of Python literal syntax that NumPy writes is accepted.
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  // Returns the header, or an error message (without file name) on failure.
  absl::StatusOr<Header> Parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      if (!ParseString(&key)) return Error("expected a quoted key");
      SkipSpace();
      if (!Consume(':')) return Error(absl::StrCat("expected ':' after '", key, "'"));
      SkipSpace();
      if (key == "descr") {
        if (seen_descr) return Error("duplicate key 'descr'");
        seen_descr = true;
        if (Peek() == '[' || Peek() == '(') {
          return absl::InvalidArgumentError(
              absl::StrCat("unsupported dtype: structured dtypes are not supported; "
                           "supported dtypes are ",
                           kSupportedDTypes));
        }
        if (!ParseString(&h.descr)) return Error("'descr' must be a string");
      } else if (key == "fortran_order") {
        if (seen_fortran) return Error("duplicate key 'fortran_order'");
        seen_fortran = true;
        if (ConsumeWord("True")) {
          h.fortran_order = true;
        } else if (ConsumeWord("False")) {
          h.fortran_order = false;
        } else {
          return Error("'fortran_order' must be True or False");
        }
      } else if (key == "shape") {
        if (seen_shape) return Error("duplicate key 'shape'");
        seen_shape = true;
        absl::Status s = ParseShape(&h.shape);
        if (!s.ok()) return s;
      } else {
        return Error(absl::StrCat("unexpected key '", key, "'"));
      }
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return Error("expected ',' or '}'");
    }
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after '}'");
    if (!seen_descr) return Error("missing key 'descr'");
    if (!seen_fortran) return Error("missing key 'fortran_order'");
    if (!seen_shape) return Error("missing key 'shape'");
    return h;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    constexpr size_t kMaxShown = 200;
    std::string shown(absl::StripTrailingAsciiWhitespace(text_));
    if (shown.size() > kMaxShown) shown = shown.substr(0, kMaxShown) + "...";
    return absl::InvalidArgumentError(
        absl::StrCat("malformed header: ", what, " at offset ", pos_, " in \"", shown, "\""));
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    if (Peek() != c) return false;
    ++pos_;
    return true;
  }

  // Consumes `word` if it is followed by a non-identifier character.
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    size_t end = pos_ + word.size();
    if (end < text_.size() && (absl::ascii_isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
      return false;
    }
    pos_ = end;
    return true;
  }

  // Parses a '...' or "..." string without escapes (NumPy never writes any).
  bool ParseString(std::string* out) {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return false;
    size_t end = text_.find(quote, pos_ + 1);
    if (end == absl::string_view::npos) return false;
    absl::string_view body = text_.substr(pos_ + 1, end - pos_ - 1);
    if (body.find('\\') != absl::string_view::npos) return false;
    *out = std::string(body);
    pos_ = end + 1;
    return true;
  }

  // Parses a tuple of non-negative integers: (), (3,), (3, 4), (3, 4,).
  // Python 2 long suffixes (`3L`) are accepted.
  absl::Status ParseShape(std::vector<int64_t>* shape) {
    if (!Consume('(')) return Error("'shape' must be a tuple");
    while (true) {
      SkipSpace();
      if (Consume(')')) return absl::OkStatus();
      size_t start = pos_;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
      absl::string_view digits = text_.substr(start, pos_ - start);
      int64_t dim;
      if (digits.empty() || !absl::SimpleAtoi(digits, &dim)) {
        pos_ = start;
        return Error("'shape' must be a tuple of non-negative integers");
      }
      Consume('L');
      shape->push_back(dim);
      SkipSpace();
      if (Consume(',')) continue;
      if (Consume(')')) return absl::OkStatus();
      return Error("expected ',' or ')' in 'shape'");
    }
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// True if C order and Fortran order lay out `shape` identically, i.e. at most
// one dimension has more than one element (or the array is empty).
bool LayoutIsOrderIndependent(const std::vector<int64_t>& shape) {
  int big = 0;
  for (int64_t d : shape) {
    if (d == 0) return true;
    if (d > 1) ++big;
  }
  return big <= 1;
}

absl::Status CheckBoolBytes(absl::string_view data) {
  for (size_t i = 0; i < data.size(); ++i) {
    unsigned char b = static_cast<unsigned char>(data[i]);
    if (b > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("bool element ", i, " has byte value ", b, "; bool data must be 0 or 1"));
    }
  }
  return absl::OkStatus();
}

// Returns the elements of a Fortran-order array (first index fastest) in C
// order (last index fastest); `item` is the element size in bytes.
std::string FortranToC(absl::string_view data, const std::vector<int64_t>& shape, size_t item) {
  std::string out(data.size(), '\0');
  const size_t rank = shape.size();
  const size_t n = data.size() / item;
  std::vector<size_t> c_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    c_stride[d - 1] = c_stride[d] * static_cast<size_t>(shape[d]);
  }
  std::vector<int64_t> index(rank, 0);
  size_t c_offset = 0;
  for (size_t k = 0; k < n; ++k) {
    std::memcpy(&out[c_offset * item], data.data() + k * item, item);
    for (size_t d = 0; d < rank; ++d) {
      c_offset += c_stride[d];
      if (++index[d] < shape[d]) break;
      c_offset -= c_stride[d] * static_cast<size_t>(shape[d]);
      index[d] = 0;
    }
  }
  return out;
}

// Reads an unsigned integer of `Size` bytes in the given byte order.
template <int Size, bool BigEndian>
uint64_t LoadBits(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < Size; ++i) {
    const int shift = 8 * (BigEndian ? Size - 1 - i : i);
    v |= static_cast<uint64_t>(p[i]) << shift;
  }
  return v;
}

// Writes the low `size` bytes of `bits` to `out`, little-endian.
void StoreBits(uint64_t bits, int size, char* out) {
  for (int i = 0; i < size; ++i) {
    out[i] = static_cast<char>((bits >> (8 * i)) & 0xFF);
  }
}

// Returns the float32 bit pattern of the IEEE binary16 value `h`. Exact: every
// half (subnormals included) is a float; infinities keep their sign and NaNs
// their sign and payload (shifted into the top of the float mantissa, as
// NumPy's astype(float32) does).
uint32_t HalfToFloatBits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return sign | 0x7F800000u | (mantissa << 13);
  if (exponent != 0) return sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;
  // Subnormal: mantissa * 2^-24. Normalize so the leading 1 is bit 10.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  const uint32_t float_exponent = 127 - 15 + 1 - shift;
  return sign | (float_exponent << 23) | ((mantissa & 0x3FFu) << 13);
}

// Formats the C-order multi-index of flat element `flat` of `shape`.
std::string IndexToString(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

// Converts `data` (C order, `n` elements of `from`) to the little-endian
// bytes of `from.target`. Fails only for uint64 values above int64's range.
template <int Size, bool BigEndian>
absl::StatusOr<std::string> ConvertAs(absl::string_view data, int64_t n, const FileDType& from,
                                      const std::vector<int64_t>& shape) {
  const int out_size = static_cast<int>(NpyDTypeSize(from.target));
  std::string out(static_cast<size_t>(n) * out_size, '\0');
  const auto* in = reinterpret_cast<const unsigned char*>(data.data());
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = LoadBits<Size, BigEndian>(in + i * Size);
    uint64_t out_bits = bits;
    if (from.kind == 'i' && Size < 8) {
      // Sign-extend to 64 bits; StoreBits keeps the low out_size bytes.
      const uint64_t sign_bit = uint64_t{1} << (8 * Size - 1);
      out_bits = (bits ^ sign_bit) - sign_bit;
    } else if (from.kind == 'u' && Size == 8 && bits > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat("uint64 element ", i, " (index ", IndexToString(i, shape),
                                                     ") has value ", bits, ", which does not fit in int64 (max ",
                                                     std::numeric_limits<int64_t>::max(), ")"));
    } else if (from.kind == 'f' && Size == 2) {
      out_bits = HalfToFloatBits(static_cast<uint16_t>(bits));
    }
    StoreBits(out_bits, out_size, &out[i * out_size]);
  }
  return out;
}

template <bool BigEndian>
absl::StatusOr<std::string> ConvertOrder(absl::string_view data, int64_t n, const FileDType& from,
                                         const std::vector<int64_t>& shape) {
  switch (from.size) {
    case 1:
      return ConvertAs<1, BigEndian>(data, n, from, shape);
    case 2:
      return ConvertAs<2, BigEndian>(data, n, from, shape);
    case 4:
      return ConvertAs<4, BigEndian>(data, n, from, shape);
    default:
      return ConvertAs<8, BigEndian>(data, n, from, shape);
  }
}

absl::StatusOr<std::string> Convert(absl::string_view data, int64_t n, const FileDType& from,
                                    const std::vector<int64_t>& shape) {
  return from.big_endian ? ConvertOrder<true>(data, n, from, shape) : ConvertOrder<false>(data, n, from, shape);
}

absl::Status Prefixed(absl::string_view name, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
}

}  // namespace

absl::string_view NpyDTypeName(NpyDType dtype) {
  switch (dtype) {
    case NpyDType::kBool:
      return "bool";
    case NpyDType::kInt32:
      return "int32";
    case NpyDType::kInt64:
      return "int64";
    case NpyDType::kFloat32:
      return "float32";
    case NpyDType::kFloat64:
      return "float64";
  }
  return "unknown";
}

int64_t NpyDTypeSize(NpyDType dtype) {
  switch (dtype) {
    case NpyDType::kBool:
      return 1;
    case NpyDType::kInt32:
    case NpyDType::kFloat32:
      return 4;
    case NpyDType::kInt64:
    case NpyDType::kFloat64:
      return 8;
  }
  return 1;
}

int64_t NpyArray::numel() const {
  // A zero dimension first: the other dimensions' product may overflow
  // (ParseNpy accepts a shape such as (2^40, 2^40, 0): the array is empty).
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::Status ValidateNpyArray(const NpyArray& a) {
  if (NpyDTypeName(a.dtype) == "unknown") {
    return absl::InvalidArgumentError(absl::StrCat("invalid NpyDType value ", static_cast<int>(a.dtype)));
  }
  std::optional<int64_t> numel = CheckedNumel(a.shape, NpyDTypeSize(a.dtype));
  if (!numel.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid shape ", ShapeToString(a.shape),
                                                   ": dimensions must be non-negative and the array must "
                                                   "fit in 2^63 bytes"));
  }
  const int64_t want = *numel * NpyDTypeSize(a.dtype);
  if (static_cast<int64_t>(a.data.size()) != want) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeToString(a.shape), " of ", NpyDTypeName(a.dtype),
                                                   " needs ", want, " bytes of data, array has ", a.data.size()));
  }
  if (a.dtype == NpyDType::kBool) return CheckBoolBytes(a.data);
  return absl::OkStatus();
}

absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes, absl::string_view name_for_errors) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(name_for_errors, ": ", what));
  };
  if (bytes.size() < kMagicSize || bytes.substr(0, kMagicSize) != kMagic) {
    return error("not a .npy file: missing the \\x93NUMPY magic string at the start");
  }
  if (bytes.size() < kMagicSize + 2) {
    return error("truncated: file ends inside the format version");
  }
  const int major = static_cast<unsigned char>(bytes[kMagicSize]);
  const int minor = static_cast<unsigned char>(bytes[kMagicSize + 1]);
  if (minor != 0 || (major != 1 && major != 2 && major != 3)) {
    return error(absl::StrCat("unsupported .npy format version ", major, ".", minor, " (supported: 1.0, 2.0, 3.0)"));
  }
  const size_t len_width = major == 1 ? 2 : 4;
  const size_t preamble = kMagicSize + 2 + len_width;
  if (bytes.size() < preamble) {
    return error("truncated: file ends inside the header length");
  }
  const size_t header_len = ReadLittleEndian(bytes, kMagicSize + 2, len_width);
  if (bytes.size() - preamble < header_len) {
    return error(absl::StrCat("truncated: header length is ", header_len, " bytes, file has ", bytes.size() - preamble,
                              " bytes after the preamble"));
  }
  absl::StatusOr<Header> header = HeaderParser(bytes.substr(preamble, header_len)).Parse();
  if (!header.ok()) return Prefixed(name_for_errors, header.status());

  absl::StatusOr<FileDType> from = ParseDescr(header->descr);
  if (!from.ok()) return Prefixed(name_for_errors, from.status());

  NpyArray out;
  out.dtype = from->target;
  out.float16 = from->kind == 'f' && from->size == 2;
  out.shape = std::move(header->shape);
  // The converted array may be wider than the file's (uint8 -> int32).
  std::optional<int64_t> numel = CheckedNumel(out.shape, std::max<int64_t>(from->size, NpyDTypeSize(from->target)));
  if (!numel.has_value()) {
    return error(absl::StrCat("shape ", ShapeToString(out.shape), " is too large"));
  }
  const uint64_t want = static_cast<uint64_t>(*numel) * static_cast<uint64_t>(from->size);
  const uint64_t have = bytes.size() - preamble - header_len;
  if (have < want) {
    return error(absl::StrCat("truncated: header says ", want, " bytes of data, file has ", have));
  }
  if (have > want) {
    return error(absl::StrCat(have - want,
                              " unexpected bytes after the array data (header "
                              "says ",
                              want, " bytes; a .npy file holds one array)"));
  }
  absl::string_view file_data = bytes.substr(preamble + header_len);
  std::string c_order;
  if (header->fortran_order && !LayoutIsOrderIndependent(out.shape)) {
    c_order = FortranToC(file_data, out.shape, from->size);
    file_data = c_order;
  }
  if (from->IsNative()) {
    out.data = std::string(file_data);
  } else {
    absl::StatusOr<std::string> converted = Convert(file_data, *numel, *from, out.shape);
    if (!converted.ok()) return Prefixed(name_for_errors, converted.status());
    out.data = *std::move(converted);
  }
  if (out.dtype == NpyDType::kBool) {
    absl::Status s = CheckBoolBytes(out.data);
    if (!s.ok()) return Prefixed(name_for_errors, s);
  }
  return out;
}

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadRegularFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseNpy(*bytes, path);
}

std::string SerializeNpy(const NpyArray& a) {
  std::string dict = absl::StrCat("{'descr': '", Descr(a.dtype),
                                  "', 'fortran_order': False, 'shape': ", ShapeToString(a.shape), ", }");
  // Pad with spaces and a final newline so the data is aligned.
  auto padded_len = [&](size_t preamble) {
    size_t total = preamble + dict.size() + 1;
    return dict.size() + 1 + (kAlignment - total % kAlignment) % kAlignment;
  };
  int major = 1;
  size_t preamble = kMagicSize + 2 + 2;
  size_t header_len = padded_len(preamble);
  if (header_len > 0xFFFF) {
    major = 2;
    preamble = kMagicSize + 2 + 4;
    header_len = padded_len(preamble);
  }
  std::string out;
  out.reserve(preamble + header_len + a.data.size());
  out.append(kMagic.data(), kMagic.size());
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < preamble - kMagicSize - 2; ++i) {
    out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xFF));
  }
  out.append(dict);
  out.append(header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  out.append(a.data);
  return out;
}

absl::Status WriteNpy(const std::string& path, const NpyArray& a) {
  absl::Status valid = ValidateNpyArray(a);
  if (!valid.ok()) return Prefixed(path, valid);
  const std::string bytes = SerializeNpy(a);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "' for writing"));
  }
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int write_errno = errno;
  if (written != bytes.size()) {
    std::fclose(f);
    return absl::ErrnoToStatus(write_errno, absl::StrCat("cannot write '", path, "'"));
  }
  if (std::fclose(f) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace tally::io
