#include "engine/io/npy.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally::io {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

template <typename T>
std::vector<T> Values(const NpyArray& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

// Builds an .npy file by hand: magic, version, little-endian header length
// (2 bytes for version 1, 4 otherwise), the header text as given (no padding
// added) and the data.
std::string BuildNpy(int major, absl::string_view header, absl::string_view data) {
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const int width = major == 1 ? 2 : 4;
  for (int i = 0; i < width; ++i) {
    out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
  }
  out.append(header.data(), header.size());
  out.append(data.data(), data.size());
  return out;
}

std::string TempPath(absl::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/npy_test_", getpid(), "_", name);
}

// Verifies that NpyDTypeName and NpyDTypeSize describe every dtype.
TEST(NpyDTypeTest, NamesAndSizes) {
  EXPECT_EQ(NpyDTypeName(NpyDType::kBool), "bool");
  EXPECT_EQ(NpyDTypeName(NpyDType::kInt32), "int32");
  EXPECT_EQ(NpyDTypeName(NpyDType::kInt64), "int64");
  EXPECT_EQ(NpyDTypeName(NpyDType::kFloat32), "float32");
  EXPECT_EQ(NpyDTypeName(NpyDType::kFloat64), "float64");
  EXPECT_EQ(NpyDTypeSize(NpyDType::kBool), 1);
  EXPECT_EQ(NpyDTypeSize(NpyDType::kInt32), 4);
  EXPECT_EQ(NpyDTypeSize(NpyDType::kInt64), 8);
  EXPECT_EQ(NpyDTypeSize(NpyDType::kFloat32), 4);
  EXPECT_EQ(NpyDTypeSize(NpyDType::kFloat64), 8);
}

// Verifies that numel is the product of the shape, 1 for a scalar and 0 for
// an empty dimension.
TEST(NpyArrayTest, Numel) {
  NpyArray a;
  EXPECT_EQ(a.numel(), 1);
  a.shape = {3, 4};
  EXPECT_EQ(a.numel(), 12);
  a.shape = {3, 0, 4};
  EXPECT_EQ(a.numel(), 0);
}

// Verifies that arrays of every dtype survive SerializeNpy -> ParseNpy
// unchanged, and that the data is 64-byte aligned as NumPy lays it out.
TEST(NpyRoundTripTest, EveryDTypeInMemory) {
  std::vector<NpyArray> arrays = {
      {NpyDType::kBool, {4}, Bytes<uint8_t>({1, 0, 0, 1})},
      {NpyDType::kInt32, {2, 3}, Bytes<int32_t>({1, -2, 3, -4, 5, 2147483647})},
      {NpyDType::kInt64, {3}, Bytes<int64_t>({-1, 0, std::numeric_limits<int64_t>::max()})},
      {NpyDType::kFloat32, {2, 1, 2}, Bytes<float>({0.5f, -1.25f, 3e30f, 0})},
      {NpyDType::kFloat64, {2}, Bytes<double>({0.1, -std::numeric_limits<double>::infinity()})},
  };
  for (const NpyArray& a : arrays) {
    SCOPED_TRACE(NpyDTypeName(a.dtype));
    std::string bytes = SerializeNpy(a);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u);
    EXPECT_EQ(bytes[bytes.size() - a.data.size() - 1], '\n');
    absl::StatusOr<NpyArray> back = ParseNpy(bytes, "mem.npy");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype, a.dtype);
    EXPECT_EQ(back->shape, a.shape);
    EXPECT_EQ(back->data, a.data);
  }
}

// Verifies that WriteNpy and ReadNpy round-trip every dtype through a file.
TEST(NpyRoundTripTest, EveryDTypeThroughFile) {
  std::vector<NpyArray> arrays = {
      {NpyDType::kBool, {2, 2}, Bytes<uint8_t>({0, 1, 1, 1})},
      {NpyDType::kInt32, {1}, Bytes<int32_t>({-7})},
      {NpyDType::kInt64, {2, 2}, Bytes<int64_t>({1, 2, 3, 4})},
      {NpyDType::kFloat32, {3}, Bytes<float>({1.5f, 2.5f, -0.0f})},
      {NpyDType::kFloat64, {1, 1}, Bytes<double>({std::nan("")})},
  };
  for (const NpyArray& a : arrays) {
    SCOPED_TRACE(NpyDTypeName(a.dtype));
    const std::string path = TempPath(absl::StrCat(NpyDTypeName(a.dtype), ".npy"));
    ASSERT_TRUE(WriteNpy(path, a).ok());
    absl::StatusOr<NpyArray> back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype, a.dtype);
    EXPECT_EQ(back->shape, a.shape);
    EXPECT_EQ(back->data, a.data);
    std::remove(path.c_str());
  }
}

// Verifies that scalars (shape ()) and empty arrays round-trip, and that the
// header writes NumPy's tuple syntax for them.
TEST(NpyRoundTripTest, ScalarAndEmpty) {
  NpyArray scalar{NpyDType::kFloat64, {}, Bytes<double>({2.5})};
  std::string bytes = SerializeNpy(scalar);
  EXPECT_THAT(bytes, HasSubstr("'shape': (), }"));
  absl::StatusOr<NpyArray> back = ParseNpy(bytes, "scalar.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->shape, IsEmpty());
  EXPECT_EQ(back->numel(), 1);
  EXPECT_THAT(Values<double>(*back), ElementsAre(2.5));

  NpyArray empty{NpyDType::kInt64, {0, 3}, ""};
  bytes = SerializeNpy(empty);
  EXPECT_THAT(bytes, HasSubstr("'shape': (0, 3), }"));
  back = ParseNpy(bytes, "empty.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->shape, ElementsAre(0, 3));
  EXPECT_EQ(back->data, "");
}

// Verifies the exact header SerializeNpy writes for a 1-D float32 array.
TEST(NpyWriteTest, HeaderMatchesNumpyLayout) {
  NpyArray a{NpyDType::kFloat32, {3}, Bytes<float>({1, 2, 3})};
  std::string bytes = SerializeNpy(a);
  // 10-byte preamble + 58-byte dict + padding + '\n' = 128 bytes.
  ASSERT_EQ(bytes.size(), 128u + 12u);
  EXPECT_EQ(bytes[8], 128 - 10);  // header length, little-endian
  EXPECT_EQ(bytes[9], 0);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes.substr(10 + dict.size(), 128 - 10 - dict.size() - 1), std::string(128 - 10 - dict.size() - 1, ' '));
  EXPECT_EQ(bytes[127], '\n');
  EXPECT_EQ(bytes.substr(128), a.data);
}

// Verifies that a hand-built version 1.0 file (NumPy's usual output, with a
// bool array and '|b1') is parsed.
TEST(NpyReadTest, HandBuiltVersion1) {
  std::string file = BuildNpy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }   \n",
                              std::string("\x01\x00\x00\x01", 4));
  absl::StatusOr<NpyArray> a = ParseNpy(file, "mask.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kBool);
  EXPECT_THAT(a->shape, ElementsAre(2, 2));
  EXPECT_THAT(Values<uint8_t>(*a), ElementsAre(1, 0, 0, 1));
}

// Verifies that the exact bytes NumPy 1.24 writes for
// np.save(f, np.array([[1, 0], [0, 1]], dtype=np.int32)) are parsed; NumPy
// pads its header with extra spaces so it can grow in place.
TEST(NpyReadTest, NumpyOutput) {
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }";
  std::string file = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + std::string(118 - dict.size() - 1, ' ') +
                     "\n" + Bytes<int32_t>({1, 0, 0, 1});
  ASSERT_EQ(file.size(), 144u);
  absl::StatusOr<NpyArray> a = ParseNpy(file, "eye.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kInt32);
  EXPECT_THAT(a->shape, ElementsAre(2, 2));
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(1, 0, 0, 1));
}

// Verifies that version 2.0 and 3.0 headers (4-byte header length) are parsed,
// including unusual but valid Python syntax: double quotes, reordered keys,
// no trailing comma, extra spaces and Python 2 long suffixes.
TEST(NpyReadTest, HandBuiltVersion2And3) {
  const std::string data = Bytes<int64_t>({10, 20, 30});
  for (int major : {2, 3}) {
    SCOPED_TRACE(major);
    std::string file = BuildNpy(major, "{ \"shape\" : ( 3L , ) , 'fortran_order':False,'descr':'<i8'}\n", data);
    absl::StatusOr<NpyArray> a = ParseNpy(file, "labels.npy");
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->dtype, NpyDType::kInt64);
    EXPECT_THAT(a->shape, ElementsAre(3));
    EXPECT_THAT(Values<int64_t>(*a), ElementsAre(10, 20, 30));
  }
}

// Verifies that '<b1' is accepted as bool, int32/float64 hand-built files
// parse, and a Fortran-order flag is accepted when the layout is the same as
// C order (at most one dimension larger than 1).
TEST(NpyReadTest, OtherAcceptedHeaders) {
  absl::StatusOr<NpyArray> a = ParseNpy(
      BuildNpy(1, "{'descr': '<b1', 'fortran_order': False, 'shape': (1,), }\n", std::string("\x01", 1)), "b.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kBool);

  a = ParseNpy(BuildNpy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 3), }\n", Bytes<int32_t>({1, 2, 3})),
               "i.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kInt32);
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(1, 2, 3));

  a = ParseNpy(BuildNpy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}", Bytes<double>({-3.5})), "f.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kFloat64);
  EXPECT_THAT(Values<double>(*a), ElementsAre(-3.5));
}

// Verifies that a file with fewer data bytes than the shape needs is rejected
// with a message giving both sizes.
TEST(NpyReadTest, TruncatedData) {
  NpyArray a{NpyDType::kFloat32, {75}, std::string(300, '\0')};
  std::string bytes = SerializeNpy(a);
  bytes.resize(bytes.size() - 180);
  absl::StatusOr<NpyArray> r = ParseNpy(bytes, "preds.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "preds.npy: truncated: header says 300 bytes of data, file has 120");
}

// Verifies that files cut inside the preamble or header are rejected.
TEST(NpyReadTest, TruncatedHeader) {
  std::string bytes = SerializeNpy({NpyDType::kInt32, {1}, Bytes<int32_t>({1})});
  for (size_t len : {7, 9, 30}) {
    SCOPED_TRACE(len);
    absl::StatusOr<NpyArray> r = ParseNpy(bytes.substr(0, len), "x.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("x.npy: truncated"));
  }
}

// Verifies that bytes after the array data are rejected (documented choice).
TEST(NpyReadTest, TrailingBytesRejected) {
  std::string bytes = SerializeNpy({NpyDType::kInt32, {1}, Bytes<int32_t>({1})});
  bytes += "xyz";
  absl::StatusOr<NpyArray> r = ParseNpy(bytes, "x.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("x.npy: 3 unexpected bytes after the array data"));
}

// Verifies that a hand-built big-endian file is byte-swapped into the
// native dtype.
TEST(NpyReadTest, BigEndianByteSwapped) {
  absl::StatusOr<NpyArray> r = ParseNpy(BuildNpy(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }\n",
                                                 std::string("\xC0\x0C\x00\x00\x00\x00\x00\x00", 8)),
                                        "be.npy");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dtype, NpyDType::kFloat64);
  EXPECT_THAT(Values<double>(*r), ElementsAre(-3.5));

  r = ParseNpy(BuildNpy(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n",
                        std::string("\xFF\xFF\xFF\xFE\x01\x02\x03\x04", 8)),
               "be.npy");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dtype, NpyDType::kInt32);
  EXPECT_THAT(Values<int32_t>(*r), ElementsAre(-2, 0x01020304));
}

// Verifies that dtypes Tally cannot convert losslessly, or that are not
// numbers, are rejected with a message saying what they are and listing the
// supported dtypes; so are multi-byte types without an explicit byte order
// and sizes NumPy does not have.
TEST(NpyReadTest, UnsupportedDTypeRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"'<c8'", "(complex)"},
      {"'<U3'", "(unicode strings)"},
      {"'|S4'", "(byte strings)"},
      {"'|O'", "(Python objects, stored as a pickle)"},
      {"'<M8[D]'", "(datetime)"},
      {"'<m8[s]'", "(timedelta)"},
      {"'|V4'", "(void/raw bytes)"},
      {"'<f16'", "(wider than 8 bytes)"},
      {"'<i16'", "(wider than 8 bytes)"},
      {"'<i3'", "(integer size must be 1, 2, 4 or 8 bytes)"},
      {"'<f1'", "(float size must be 2, 4 or 8 bytes)"},
      {"'<b2'", "(bool must be 1 byte)"},
      {"'|i4'", "(a multi-byte type needs byte order '<' or '>')"},
      {"'=f8'", "(a multi-byte type needs byte order '<' or '>')"},
      {"'<i'", "(not a NumPy type string)"},
      {"'<i4 '", "(not a NumPy type string)"},
      {"'int32'", "(not a NumPy type string)"},
      {"''", "(not a NumPy type string)"},
      {"[('a', '<i4')]", "structured dtypes are not supported"},
  };
  for (const auto& [descr, why] : cases) {
    SCOPED_TRACE(descr);
    absl::StatusOr<NpyArray> r =
        ParseNpy(BuildNpy(1, absl::StrCat("{'descr': ", descr, ", 'fortran_order': False, 'shape': (1,), }\n"),
                          std::string(4, '\0')),
                 "u.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("u.npy: "));
    EXPECT_THAT(r.status().message(), HasSubstr("unsupported dtype"));
    EXPECT_THAT(r.status().message(), HasSubstr(why));
    EXPECT_THAT(r.status().message(), HasSubstr("supported dtypes are bool (|b1), int8/int16/int32/int64 "
                                                "(i1, i2, i4, i8), uint8/uint16/uint32/uint64 (u1, u2, u4, "
                                                "u8; uint64 values must fit in int64), "
                                                "float16/float32/float64 (f2, f4, f8), little- or "
                                                "big-endian, C or Fortran order"));
  }
}

// Verifies that a hand-built Fortran-order 2x3 array comes back in C order,
// and that Fortran-order empty arrays are accepted.
TEST(NpyReadTest, FortranOrderReordered) {
  // Column-major bytes of [[1, 2, 3], [4, 5, 6]].
  absl::StatusOr<NpyArray> r = ParseNpy(
      BuildNpy(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }\n", Bytes<int32_t>({1, 4, 2, 5, 3, 6})),
      "f.npy");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->shape, ElementsAre(2, 3));
  EXPECT_THAT(Values<int32_t>(*r), ElementsAre(1, 2, 3, 4, 5, 6));

  r = ParseNpy(BuildNpy(1, "{'descr': '>f2', 'fortran_order': True, 'shape': (2, 0), }\n", ""), "f.npy");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dtype, NpyDType::kFloat32);
  EXPECT_THAT(r->shape, ElementsAre(2, 0));
  EXPECT_EQ(r->data, "");
}

// Verifies that numpy.load's other spellings of bool ('?', '=b1') are read
// as bool.
TEST(NpyReadTest, OtherBoolSpellings) {
  for (absl::string_view descr : {"'?'", "'|?'", "'=b1'", "'>b1'"}) {
    SCOPED_TRACE(descr);
    absl::StatusOr<NpyArray> r =
        ParseNpy(BuildNpy(1, absl::StrCat("{'descr': ", descr, ", 'fortran_order': False, 'shape': (2,), }\n"),
                          std::string("\x00\x01", 2)),
                 "b.npy");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->dtype, NpyDType::kBool);
    EXPECT_THAT(Values<uint8_t>(*r), ElementsAre(0, 1));
  }
}

// Verifies that the size checks use the file's element size, not the
// converted one: a uint8 file is truncated or padded by its own bytes.
TEST(NpyReadTest, ConvertedDTypeSizeChecks) {
  const std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }\n";
  absl::StatusOr<NpyArray> r = ParseNpy(BuildNpy(1, header, std::string(3, '\1')), "u.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "u.npy: truncated: header says 4 bytes of data, file has 3");
  r = ParseNpy(BuildNpy(1, header, std::string(5, '\1')), "u.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("u.npy: 1 unexpected bytes after the array data"));
  r = ParseNpy(BuildNpy(1, header, std::string(4, '\1')), "u.npy");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(Values<int32_t>(*r), ElementsAre(1, 1, 1, 1));

  // A shape whose int32 conversion would not fit in memory sizes, even though
  // the uint8 file would.
  r = ParseNpy(BuildNpy(1,
                        "{'descr': '|u1', 'fortran_order': False, 'shape': "
                        "(4611686018427387904,), }\n",
                        ""),
               "u.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("too large"));
}

// Verifies that a bad bool byte in a Fortran-order file is reported at its
// C-order position.
TEST(NpyReadTest, FortranBoolBadByteIndex) {
  absl::StatusOr<NpyArray> r = ParseNpy(
      BuildNpy(1, "{'descr': '|b1', 'fortran_order': True, 'shape': (2, 2), }\n", std::string("\x00\x01\x07\x00", 4)),
      "b.npy");
  ASSERT_FALSE(r.ok());
  // File position 2 is [0, 1]: C-order element 1.
  EXPECT_THAT(r.status().message(), HasSubstr("b.npy: bool element 1 has byte value 7"));
}

// Reference conversion of IEEE half bits to float, written independently of
// the reader: sign * mantissa * 2^exponent via ldexp.
float ReferenceHalf(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  const float sign = (h & 0x8000) != 0 ? -1.0f : 1.0f;
  if (exponent == 0x1F) {
    return mantissa == 0 ? sign * std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
  }
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
  return sign * std::ldexp(static_cast<float>(mantissa + 1024), exponent - 25);
}

uint32_t FloatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

// Verifies all 65536 half values in both byte orders: finite values (and
// infinities, and the sign of zero) convert to exactly the float the
// reference computes; NaNs stay NaN with their sign, and their payload
// shifted into the float mantissa.
TEST(NpyReadTest, EveryHalfValue) {
  std::string le, be;
  for (uint32_t h = 0; h < 65536; ++h) {
    le.push_back(static_cast<char>(h & 0xFF));
    le.push_back(static_cast<char>(h >> 8));
    be.push_back(static_cast<char>(h >> 8));
    be.push_back(static_cast<char>(h & 0xFF));
  }
  for (const auto& [descr, data] : {std::pair<std::string, std::string>{"<f2", le}, {">f2", be}}) {
    SCOPED_TRACE(descr);
    absl::StatusOr<NpyArray> r = ParseNpy(BuildNpy(1,
                                                   absl::StrCat("{'descr': '", descr,
                                                                "', 'fortran_order': False, 'shape': (65536,), "
                                                                "}\n"),
                                                   data),
                                          "half.npy");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->dtype, NpyDType::kFloat32);
    const std::vector<float> got = Values<float>(*r);
    ASSERT_EQ(got.size(), 65536u);
    int mismatches = 0;
    for (uint32_t h = 0; h < 65536 && mismatches < 10; ++h) {
      const float want = ReferenceHalf(static_cast<uint16_t>(h));
      const uint32_t bits = FloatBits(got[h]);
      if (std::isnan(want)) {
        const uint32_t want_bits = ((h & 0x8000u) << 16) | 0x7F800000u | ((h & 0x3FFu) << 13);
        if (bits != want_bits) ++mismatches;
        EXPECT_EQ(bits, want_bits) << "half 0x" << std::hex << h;
      } else {
        if (bits != FloatBits(want)) ++mismatches;
        EXPECT_EQ(bits, FloatBits(want)) << "half 0x" << std::hex << h;
      }
    }
  }
}

// Verifies that a file without the magic string is rejected.
TEST(NpyReadTest, BadMagicRejected) {
  for (absl::string_view bytes :
       {absl::string_view(""), absl::string_view("NUMPY"), absl::string_view("PK\x03\x04 this is a zip")}) {
    absl::StatusOr<NpyArray> r = ParseNpy(bytes, "m.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("m.npy: not a .npy file"));
  }
}

// Verifies that unknown format versions are rejected.
TEST(NpyReadTest, BadVersionRejected) {
  std::string file = BuildNpy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }\n", std::string(4, '\0'));
  file[6] = 4;
  absl::StatusOr<NpyArray> r = ParseNpy(file, "v.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("v.npy: unsupported .npy format version 4.0"));
}

// Verifies that malformed header dictionaries are rejected as such.
TEST(NpyReadTest, MalformedHeaderRejected) {
  const std::vector<std::string> headers = {
      "",
      "not a dict",
      "{'descr': '<i4', 'fortran_order': False}",
      "{'descr': '<i4', 'shape': (1,)}",
      "{'fortran_order': False, 'shape': (1,)}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
      "{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (1,)}",
      "{'descr': '<i4', 'fortran_order': false, 'shape': (1,)}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': [1]}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (-1,)}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1.5,)}",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)} junk",
      "{'descr': '<i4', 'fortran_order': False, 'shape': (1,)",
      "{'descr': <i4, 'fortran_order': False, 'shape': (1,)}",
  };
  for (const std::string& h : headers) {
    SCOPED_TRACE(h);
    absl::StatusOr<NpyArray> r = ParseNpy(BuildNpy(1, h, std::string(4, '\0')), "h.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("h.npy: malformed header"));
  }
}

// Verifies that a shape whose byte size overflows int64 is rejected rather
// than wrapping around.
TEST(NpyReadTest, HugeShapeRejected) {
  absl::StatusOr<NpyArray> r = ParseNpy(BuildNpy(1,
                                                 "{'descr': '<f8', 'fortran_order': False, 'shape': "
                                                 "(4294967296, 4294967296), }\n",
                                                 ""),
                                        "big.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("big.npy: shape"));
  EXPECT_THAT(r.status().message(), HasSubstr("too large"));
}

// Verifies that bool data bytes other than 0 and 1 are rejected, so callers
// can reinterpret the data as bool safely.
TEST(NpyReadTest, InvalidBoolByteRejected) {
  absl::StatusOr<NpyArray> r = ParseNpy(
      BuildNpy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }\n", std::string("\x01\x02", 2)), "b.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("b.npy: bool element 1"));
}

// Verifies that reading a missing file returns NotFound naming the path.
TEST(NpyFileTest, MissingFile) {
  const std::string path = TempPath("does_not_exist.npy");
  absl::StatusOr<NpyArray> r = ReadNpy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr(path));
}

// Verifies that ReadNpy prefixes parse errors with the path.
TEST(NpyFileTest, ParseErrorNamesPath) {
  const std::string path = TempPath("garbage.npy");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("hello", f);
  std::fclose(f);
  absl::StatusOr<NpyArray> r = ReadNpy(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(path + ": not a .npy file"));
  std::remove(path.c_str());
}

// Verifies that WriteNpy rejects inconsistent arrays and unwritable paths.
TEST(NpyFileTest, WriteErrors) {
  const std::string path = TempPath("bad.npy");
  absl::Status s = WriteNpy(path, {NpyDType::kInt64, {3}, std::string(16, '\0')});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("needs 24 bytes of data, array has 16"));

  s = WriteNpy(path, {NpyDType::kInt64, {-1}, ""});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  s = WriteNpy(path, {NpyDType::kBool, {1}, "\x05"});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  s = WriteNpy(TempPath("no_such_dir/x.npy"), {NpyDType::kBool, {0}, ""});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("no_such_dir/x.npy"));
}

// Verifies that ValidateNpyArray accepts consistent arrays.
TEST(NpyFileTest, ValidateAcceptsConsistentArrays) {
  EXPECT_TRUE(ValidateNpyArray({NpyDType::kFloat32, {2, 2}, std::string(16, 'a')}).ok());
  EXPECT_TRUE(ValidateNpyArray({NpyDType::kInt32, {}, std::string(4, 'a')}).ok());
  EXPECT_TRUE(ValidateNpyArray({NpyDType::kBool, {0}, ""}).ok());
}

// ---------------------------------------------------------------------------
// Files written by numpy.save (tests/engine/io/gen_npy_golden.py, tests/engine/io/golden/).

std::string Golden(absl::string_view name) { return absl::StrCat("tests/engine/io/golden/", name, ".npy"); }

absl::StatusOr<NpyArray> ReadGolden(absl::string_view name) { return ReadNpy(Golden(name)); }

// Every accepted golden file and the dtype the reader must give it.
const std::vector<std::pair<std::string, NpyDType>>& AcceptedGoldens() {
  static const auto* cases = new std::vector<std::pair<std::string, NpyDType>>{
      {"bool", NpyDType::kBool},
      {"int8", NpyDType::kInt32},
      {"int16_le", NpyDType::kInt32},
      {"int16_be", NpyDType::kInt32},
      {"int32_le", NpyDType::kInt32},
      {"int32_be", NpyDType::kInt32},
      {"int64_le", NpyDType::kInt64},
      {"int64_be", NpyDType::kInt64},
      {"uint8", NpyDType::kInt32},
      {"uint16_le", NpyDType::kInt32},
      {"uint16_be", NpyDType::kInt32},
      {"uint32_le", NpyDType::kInt64},
      {"uint32_be", NpyDType::kInt64},
      {"uint64_le", NpyDType::kInt64},
      {"uint64_be", NpyDType::kInt64},
      {"float16_le", NpyDType::kFloat32},
      {"float16_be", NpyDType::kFloat32},
      {"float32_le", NpyDType::kFloat32},
      {"float32_be", NpyDType::kFloat32},
      {"float64_le", NpyDType::kFloat64},
      {"float64_be", NpyDType::kFloat64},
      {"fortran_int16_be_rank2", NpyDType::kInt32},
      {"fortran_float32_le_rank3", NpyDType::kFloat32},
      {"fortran_float16_be_rank3", NpyDType::kFloat32},
      {"fortran_uint8_transpose", NpyDType::kInt32},
      {"fortran_bool_transpose", NpyDType::kBool},
      {"fortran_int64_rank3_transpose", NpyDType::kInt64},
      {"fortran_float64_be_rank4", NpyDType::kFloat64},
      {"empty_uint8", NpyDType::kInt32},
      {"empty_int16_be_0x3", NpyDType::kInt32},
      {"empty_float16_2x0", NpyDType::kFloat32},
      {"scalar_int16_be", NpyDType::kInt32},
      {"half_special_le", NpyDType::kFloat32},
      {"half_special_be", NpyDType::kFloat32},
  };
  return *cases;
}

// Verifies that every file numpy wrote in an accepted dtype, byte order and
// memory order reads as exactly the array numpy's own astype to the target
// dtype in C order gives (NAME.expected.npy): same dtype, shape and bytes.
TEST(NpyGoldenTest, EveryAcceptedFileMatchesNumpyConversion) {
  for (const auto& [name, dtype] : AcceptedGoldens()) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> got = ReadGolden(name);
    ASSERT_TRUE(got.ok()) << got.status();
    absl::StatusOr<NpyArray> want = ReadGolden(name + ".expected");
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(got->dtype, dtype);
    EXPECT_EQ(want->dtype, dtype);
    EXPECT_EQ(got->shape, want->shape);
    EXPECT_EQ(got->data, want->data);
    EXPECT_TRUE(ValidateNpyArray(*got).ok());
  }
}

// Verifies the integer conversions value by value: extremes of every width
// survive, signed ones keep their sign, unsigned ones do not gain one.
TEST(NpyGoldenTest, IntegerValues) {
  absl::StatusOr<NpyArray> a = ReadGolden("int8");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(2, 3));
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(-128, 127, 0, 1, -1, 42));
  a = ReadGolden("uint8");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(0, 255, 0, 1, 1, 85));
  for (const char* name : {"int16_le", "int16_be"}) {
    a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<int32_t>(*a), ElementsAre(-32768, 32767, 0, 1, -1, 10922));
  }
  for (const char* name : {"uint16_le", "uint16_be"}) {
    a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<int32_t>(*a), ElementsAre(0, 65535, 0, 1, 1, 21845));
  }
  a = ReadGolden("int32_be");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(-2147483648, 2147483647, 0, 1, -1, 715827882));
  for (const char* name : {"uint32_le", "uint32_be"}) {
    a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<int64_t>(*a), ElementsAre(0, 4294967295, 0, 1, 1, 1431655765));
  }
  a = ReadGolden("int64_be");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Values<int64_t>(*a), ElementsAre(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                               0, 1, -1, 3074457345618258602));
  for (const char* name : {"uint64_le", "uint64_be"}) {
    a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<int64_t>(*a), ElementsAre(0, 1, std::numeric_limits<int64_t>::max(), 7, int64_t{1} << 32,
                                                 std::numeric_limits<int64_t>::max() - 1));
  }
  a = ReadGolden("scalar_int16_be");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, IsEmpty());
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(-300));
}

// Verifies the float conversions value by value, in both byte orders.
TEST(NpyGoldenTest, FloatValues) {
  for (const char* name : {"float16_le", "float16_be"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<float>(*a),
                ElementsAre(-65504.0f, 65504.0f, 0.0f, -1.5f, std::ldexp(1.0f, -14), std::ldexp(1.0f, -10)));
  }
  for (const char* name : {"float32_le", "float32_be"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<float>(*a),
                ElementsAre(std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max(), 0.0f, -1.5f,
                            std::numeric_limits<float>::min(), std::numeric_limits<float>::epsilon()));
  }
  for (const char* name : {"float64_le", "float64_be"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_THAT(Values<double>(*a),
                ElementsAre(std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max(), 0.0, -1.5,
                            std::numeric_limits<double>::min(), std::numeric_limits<double>::epsilon()));
  }
}

// Verifies the half special values bit for bit: subnormals, the smallest
// normal, the largest finite, +-inf, -0.0, +0.0, NaNs (with sign and
// payload), 1.0 and a negative subnormal.
TEST(NpyGoldenTest, HalfSpecialValues) {
  for (const char* name : {"half_special_le", "half_special_be"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_EQ(a->dtype, NpyDType::kFloat32);
    const std::vector<float> v = Values<float>(*a);
    std::vector<uint32_t> bits;
    for (float f : v) bits.push_back(FloatBits(f));
    EXPECT_THAT(bits, ElementsAre(0x33800000u, 0x387FC000u, 0x38800000u, 0x477FE000u, 0x7F800000u, 0xFF800000u,
                                  0x80000000u, 0x00000000u, 0x7FC00000u, 0xFFC02000u, 0x3F800000u, 0xB8004000u));
    EXPECT_EQ(v[0], std::ldexp(1.0f, -24));
    EXPECT_EQ(v[1], std::ldexp(1023.0f, -24));
    EXPECT_EQ(v[3], 65504.0f);
    EXPECT_TRUE(std::isinf(v[4]) && v[4] > 0);
    EXPECT_TRUE(std::isinf(v[5]) && v[5] < 0);
    EXPECT_TRUE(v[6] == 0.0f && std::signbit(v[6]));
    EXPECT_TRUE(std::isnan(v[8]));
    EXPECT_TRUE(std::isnan(v[9]));
    EXPECT_EQ(v[11], -std::ldexp(513.0f, -24));
  }
}

// Verifies Fortran-order files of rank 2, 3 and 4 (np.asfortranarray and
// transposes saved directly) come back in C order, value by value.
TEST(NpyGoldenTest, FortranOrderValues) {
  absl::StatusOr<NpyArray> a = ReadGolden("fortran_int16_be_rank2");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(3, 4));
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(-6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5));

  a = ReadGolden("fortran_uint8_transpose");  // arange(1, 13).reshape(3, 4).T
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(4, 3));
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12));

  a = ReadGolden("fortran_bool_transpose");  // (arange(6).reshape(2,3)%4==1).T
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(3, 2));
  EXPECT_THAT(Values<uint8_t>(*a), ElementsAre(0, 0, 1, 0, 0, 1));

  a = ReadGolden("fortran_float32_le_rank3");  // arange(24).reshape(2,3,4)/4
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(2, 3, 4));
  std::vector<float> f = Values<float>(*a);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f[i], i / 4.0f) << i;

  a = ReadGolden("fortran_float16_be_rank3");  // arange(24).reshape(4,3,2)-12
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(4, 3, 2));
  f = Values<float>(*a);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(f[i], i - 12.0f) << i;

  // arange(60).reshape(3, 4, 5).transpose(2, 1, 0): [i, j, k] = 20k + 5j + i.
  a = ReadGolden("fortran_int64_rank3_transpose");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(5, 4, 3));
  std::vector<int64_t> v = Values<int64_t>(*a);
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(v[(i * 4 + j) * 3 + k], 20 * k + 5 * j + i);
      }
    }
  }

  a = ReadGolden("fortran_float64_be_rank4");  // arange(120).reshape(2,3,4,5)
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->shape, ElementsAre(2, 3, 4, 5));
  std::vector<double> d = Values<double>(*a);
  for (int i = 0; i < 120; ++i) EXPECT_EQ(d[i], i) << i;
}

// Verifies empty arrays of converted dtypes keep their shape and hold no data.
TEST(NpyGoldenTest, EmptyArrays) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> cases = {
      {"empty_uint8", {0}}, {"empty_int16_be_0x3", {0, 3}}, {"empty_float16_2x0", {2, 0}}};
  for (const auto& [name, shape] : cases) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(a->shape, shape);
    EXPECT_EQ(a->numel(), 0);
    EXPECT_EQ(a->data, "");
  }
}

// Verifies that uint64 values above int64's range are an error naming the
// file, the first offending element (C-order flat index and multi-index, also
// for Fortran-order files) and its value.
TEST(NpyGoldenTest, Uint64OverflowRejected) {
  const std::string kFits = ", which does not fit in int64 (max 9223372036854775807)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"reject_uint64_overflow_le", "uint64 element 2 (index [2]) has value 9223372036854775808"},
      {"reject_uint64_overflow_be", "uint64 element 2 (index [2]) has value 18446744073709551615"},
      // [0, 2] comes first in C order; [1, 0] comes first in the file.
      {"reject_uint64_overflow_fortran", "uint64 element 2 (index [0, 2]) has value 9223372036854775813"},
  };
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(a.status().message(), absl::StrCat(Golden(name), ": ", message, kFits));
  }
}

// Verifies that files numpy writes for dtypes Tally does not read are
// rejected with a message naming the file, the dtype and what it is.
TEST(NpyGoldenTest, UnsupportedFilesRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"reject_complex64", "unsupported dtype '<c8' (complex)"},
      {"reject_complex128_be", "unsupported dtype '>c16' (complex)"},
      {"reject_object", "unsupported dtype '|O' (Python objects"},
      {"reject_structured", "structured dtypes are not supported"},
      {"reject_bytes", "unsupported dtype '|S2' (byte strings)"},
      {"reject_unicode", "unsupported dtype '<U2' (unicode strings)"},
      {"reject_datetime", "unsupported dtype '<M8[D]' (datetime)"},
      {"reject_timedelta", "unsupported dtype '<m8[s]' (timedelta)"},
      {"reject_void", "unsupported dtype '|V4' (void/raw bytes)"},
      {"reject_longdouble", "(wider than 8 bytes)"},
  };
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    absl::StatusOr<NpyArray> a = ReadGolden(name);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(a.status().message(), HasSubstr(Golden(name) + ": "));
    EXPECT_THAT(a.status().message(), HasSubstr(message));
    EXPECT_THAT(a.status().message(), HasSubstr("supported dtypes are"));
  }
}

}  // namespace
}  // namespace tally::io
