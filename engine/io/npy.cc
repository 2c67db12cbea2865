#include "engine/io/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
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

namespace tally::io {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Data starts at a multiple of this many bytes from the start of the file.
constexpr size_t kAlignment = 64;
constexpr absl::string_view kSupportedDTypes =
    "bool (|b1), int32 (<i4), int64 (<i8), float32 (<f4), float64 (<f8)";

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

// Maps a little-endian (or byte-order-free) `descr` to a dtype.
std::optional<NpyDType> DTypeFromDescr(absl::string_view descr) {
  // Byte order is meaningless for one-byte elements.
  if (descr == "|b1" || descr == "<b1" || descr == ">b1") {
    return NpyDType::kBool;
  }
  if (descr == "<i4") return NpyDType::kInt32;
  if (descr == "<i8") return NpyDType::kInt64;
  if (descr == "<f4") return NpyDType::kFloat32;
  if (descr == "<f8") return NpyDType::kFloat64;
  return std::nullopt;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// Returns the element count of `shape`, or nullopt on a negative dimension
// or if the byte size of the array would overflow int64 for `item_size`.
std::optional<int64_t> CheckedNumel(const std::vector<int64_t>& shape,
                                    int64_t item_size) {
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

uint32_t ReadLittleEndian(absl::string_view bytes, size_t offset,
                          size_t width) {
  uint32_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i]))
         << (8 * i);
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
      if (!Consume(':'))
        return Error(absl::StrCat("expected ':' after '", key, "'"));
      SkipSpace();
      if (key == "descr") {
        if (seen_descr) return Error("duplicate key 'descr'");
        seen_descr = true;
        if (Peek() == '[' || Peek() == '(') {
          return absl::InvalidArgumentError(absl::StrCat(
              "unsupported dtype: structured dtypes are not supported; "
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
    return absl::InvalidArgumentError(absl::StrCat("malformed header: ", what,
                                                   " at offset ", pos_,
                                                   " in \"", shown, "\""));
  }

  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  void SkipSpace() {
    while (pos_ < text_.size() &&
           absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
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
    if (end < text_.size() &&
        (absl::ascii_isalnum(static_cast<unsigned char>(text_[end])) ||
         text_[end] == '_')) {
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
          absl::StrCat("bool element ", i, " has byte value ", b,
                       "; bool data must be 0 or 1"));
    }
  }
  return absl::OkStatus();
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
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::Status ValidateNpyArray(const NpyArray& a) {
  if (NpyDTypeName(a.dtype) == "unknown") {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid NpyDType value ", static_cast<int>(a.dtype)));
  }
  std::optional<int64_t> numel = CheckedNumel(a.shape, NpyDTypeSize(a.dtype));
  if (!numel.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid shape ", ShapeToString(a.shape),
                     ": dimensions must be non-negative and the array must "
                     "fit in 2^63 bytes"));
  }
  const int64_t want = *numel * NpyDTypeSize(a.dtype);
  if (static_cast<int64_t>(a.data.size()) != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", ShapeToString(a.shape), " of ", NpyDTypeName(a.dtype),
        " needs ", want, " bytes of data, array has ", a.data.size()));
  }
  if (a.dtype == NpyDType::kBool) return CheckBoolBytes(a.data);
  return absl::OkStatus();
}

absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes,
                                  absl::string_view name_for_errors) {
  auto error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat(name_for_errors, ": ", what));
  };
  if (bytes.size() < kMagicSize || bytes.substr(0, kMagicSize) != kMagic) {
    return error(
        "not a .npy file: missing the \\x93NUMPY magic string at the start");
  }
  if (bytes.size() < kMagicSize + 2) {
    return error("truncated: file ends inside the format version");
  }
  const int major = static_cast<unsigned char>(bytes[kMagicSize]);
  const int minor = static_cast<unsigned char>(bytes[kMagicSize + 1]);
  if (minor != 0 || (major != 1 && major != 2 && major != 3)) {
    return error(absl::StrCat("unsupported .npy format version ", major, ".",
                              minor, " (supported: 1.0, 2.0, 3.0)"));
  }
  const size_t len_width = major == 1 ? 2 : 4;
  const size_t preamble = kMagicSize + 2 + len_width;
  if (bytes.size() < preamble) {
    return error("truncated: file ends inside the header length");
  }
  const size_t header_len = ReadLittleEndian(bytes, kMagicSize + 2, len_width);
  if (bytes.size() - preamble < header_len) {
    return error(absl::StrCat("truncated: header length is ", header_len,
                              " bytes, file has ", bytes.size() - preamble,
                              " bytes after the preamble"));
  }
  absl::StatusOr<Header> header =
      HeaderParser(bytes.substr(preamble, header_len)).Parse();
  if (!header.ok()) return Prefixed(name_for_errors, header.status());

  std::optional<NpyDType> dtype = DTypeFromDescr(header->descr);
  if (!dtype.has_value()) {
    const absl::string_view d = header->descr;
    if (!d.empty() && d[0] == '>' &&
        DTypeFromDescr(absl::StrCat("<", d.substr(1))).has_value()) {
      return error(absl::StrCat("big-endian dtype '", d,
                                "' is not supported; convert with "
                                "arr.astype('<",
                                d.substr(1), "') before saving"));
    }
    return error(absl::StrCat("unsupported dtype '", d,
                              "'; supported dtypes are ", kSupportedDTypes));
  }
  if (header->fortran_order && !LayoutIsOrderIndependent(header->shape)) {
    return error(absl::StrCat("Fortran-order arrays are not supported (shape ",
                              ShapeToString(header->shape),
                              "); save np.ascontiguousarray(arr) instead"));
  }

  NpyArray out;
  out.dtype = *dtype;
  out.shape = std::move(header->shape);
  std::optional<int64_t> numel = CheckedNumel(out.shape, NpyDTypeSize(*dtype));
  if (!numel.has_value()) {
    return error(
        absl::StrCat("shape ", ShapeToString(out.shape), " is too large"));
  }
  const uint64_t want = static_cast<uint64_t>(*numel) *
                        static_cast<uint64_t>(NpyDTypeSize(*dtype));
  const uint64_t have = bytes.size() - preamble - header_len;
  if (have < want) {
    return error(absl::StrCat("truncated: header says ", want,
                              " bytes of data, file has ", have));
  }
  if (have > want) {
    return error(absl::StrCat(have - want,
                              " unexpected bytes after the array data (header "
                              "says ",
                              want, " bytes; a .npy file holds one array)"));
  }
  out.data = std::string(bytes.substr(preamble + header_len));
  if (out.dtype == NpyDType::kBool) {
    absl::Status s = CheckBoolBytes(out.data);
    if (!s.ok()) return Prefixed(name_for_errors, s);
  }
  return out;
}

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "'"));
  }
  std::string bytes;
  char buf[1 << 16];
  while (true) {
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    bytes.append(buf, n);
    if (n < sizeof(buf)) break;
  }
  if (std::ferror(f)) {
    int err = errno;
    std::fclose(f);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot read '", path, "'"));
  }
  std::fclose(f);
  return ParseNpy(bytes, path);
}

std::string SerializeNpy(const NpyArray& a) {
  std::string dict = absl::StrCat(
      "{'descr': '", Descr(a.dtype),
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
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot open '", path, "' for writing"));
  }
  size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int write_errno = errno;
  if (written != bytes.size()) {
    std::fclose(f);
    return absl::ErrnoToStatus(write_errno,
                               absl::StrCat("cannot write '", path, "'"));
  }
  if (std::fclose(f) != 0) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace tally::io
