#include "engine/io/npy.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
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
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
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
std::string BuildNpy(int major, absl::string_view header,
                     absl::string_view data) {
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
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/npy_test_", getpid(),
                      "_", name);
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
      {NpyDType::kInt64,
       {3},
       Bytes<int64_t>({-1, 0, std::numeric_limits<int64_t>::max()})},
      {NpyDType::kFloat32, {2, 1, 2}, Bytes<float>({0.5f, -1.25f, 3e30f, 0})},
      {NpyDType::kFloat64,
       {2},
       Bytes<double>({0.1, -std::numeric_limits<double>::infinity()})},
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
    const std::string path =
        TempPath(absl::StrCat(NpyDTypeName(a.dtype), ".npy"));
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
  const std::string dict =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
  EXPECT_EQ(bytes.substr(10, dict.size()), dict);
  EXPECT_EQ(bytes.substr(10 + dict.size(), 128 - 10 - dict.size() - 1),
            std::string(128 - 10 - dict.size() - 1, ' '));
  EXPECT_EQ(bytes[127], '\n');
  EXPECT_EQ(bytes.substr(128), a.data);
}

// Verifies that a hand-built version 1.0 file (NumPy's usual output, with a
// bool array and '|b1') is parsed.
TEST(NpyReadTest, HandBuiltVersion1) {
  std::string file = BuildNpy(
      1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 2), }   \n",
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
  const std::string dict =
      "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }";
  std::string file = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                     std::string(118 - dict.size() - 1, ' ') + "\n" +
                     Bytes<int32_t>({1, 0, 0, 1});
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
    std::string file = BuildNpy(
        major,
        "{ \"shape\" : ( 3L , ) , 'fortran_order':False,'descr':'<i8'}\n",
        data);
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
      BuildNpy(1, "{'descr': '<b1', 'fortran_order': False, 'shape': (1,), }\n",
               std::string("\x01", 1)),
      "b.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kBool);

  a = ParseNpy(
      BuildNpy(1,
               "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 3), }\n",
               Bytes<int32_t>({1, 2, 3})),
      "i.npy");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype, NpyDType::kInt32);
  EXPECT_THAT(Values<int32_t>(*a), ElementsAre(1, 2, 3));

  a = ParseNpy(
      BuildNpy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': ()}",
               Bytes<double>({-3.5})),
      "f.npy");
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
  EXPECT_EQ(
      r.status().message(),
      "preds.npy: truncated: header says 300 bytes of data, file has 120");
}

// Verifies that files cut inside the preamble or header are rejected.
TEST(NpyReadTest, TruncatedHeader) {
  std::string bytes =
      SerializeNpy({NpyDType::kInt32, {1}, Bytes<int32_t>({1})});
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
  std::string bytes =
      SerializeNpy({NpyDType::kInt32, {1}, Bytes<int32_t>({1})});
  bytes += "xyz";
  absl::StatusOr<NpyArray> r = ParseNpy(bytes, "x.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("x.npy: 3 unexpected bytes after the array data"));
}

// Verifies that big-endian dtypes are rejected with a hint to convert.
TEST(NpyReadTest, BigEndianRejected) {
  absl::StatusOr<NpyArray> r = ParseNpy(
      BuildNpy(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }\n",
               std::string(8, '\0')),
      "be.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("be.npy: big-endian dtype '>f8'"));
  EXPECT_THAT(r.status().message(), HasSubstr("astype('<f8')"));
}

// Verifies that unsupported dtypes (uint8, float16, structured, strings) are
// rejected with a message listing the supported dtypes.
TEST(NpyReadTest, UnsupportedDTypeRejected) {
  for (absl::string_view descr :
       {"'|u1'", "'<f2'", "'<U3'", "'|O'", "[('a', '<i4')]"}) {
    SCOPED_TRACE(descr);
    absl::StatusOr<NpyArray> r = ParseNpy(
        BuildNpy(1,
                 absl::StrCat("{'descr': ", descr,
                              ", 'fortran_order': False, 'shape': (1,), }\n"),
                 std::string(4, '\0')),
        "u.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("u.npy: unsupported dtype"));
    EXPECT_THAT(r.status().message(),
                HasSubstr("bool (|b1), int32 (<i4), int64 (<i8), float32 "
                          "(<f4), float64 (<f8)"));
  }
}

// Verifies that Fortran-order arrays with a real 2-D layout are rejected.
TEST(NpyReadTest, FortranOrderRejected) {
  absl::StatusOr<NpyArray> r = ParseNpy(
      BuildNpy(1,
               "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }\n",
               std::string(24, '\0')),
      "f.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("f.npy: Fortran-order arrays are not supported"));
}

// Verifies that a file without the magic string is rejected.
TEST(NpyReadTest, BadMagicRejected) {
  for (absl::string_view bytes :
       {absl::string_view(""), absl::string_view("NUMPY"),
        absl::string_view("PK\x03\x04 this is a zip")}) {
    absl::StatusOr<NpyArray> r = ParseNpy(bytes, "m.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("m.npy: not a .npy file"));
  }
}

// Verifies that unknown format versions are rejected.
TEST(NpyReadTest, BadVersionRejected) {
  std::string file =
      BuildNpy(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }\n",
               std::string(4, '\0'));
  file[6] = 4;
  absl::StatusOr<NpyArray> r = ParseNpy(file, "v.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("v.npy: unsupported .npy format version 4.0"));
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
    absl::StatusOr<NpyArray> r =
        ParseNpy(BuildNpy(1, h, std::string(4, '\0')), "h.npy");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("h.npy: malformed header"));
  }
}

// Verifies that a shape whose byte size overflows int64 is rejected rather
// than wrapping around.
TEST(NpyReadTest, HugeShapeRejected) {
  absl::StatusOr<NpyArray> r =
      ParseNpy(BuildNpy(1,
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
      BuildNpy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }\n",
               std::string("\x01\x02", 2)),
      "b.npy");
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
  absl::Status s =
      WriteNpy(path, {NpyDType::kInt64, {3}, std::string(16, '\0')});
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
  EXPECT_TRUE(
      ValidateNpyArray({NpyDType::kFloat32, {2, 2}, std::string(16, 'a')})
          .ok());
  EXPECT_TRUE(
      ValidateNpyArray({NpyDType::kInt32, {}, std::string(4, 'a')}).ok());
  EXPECT_TRUE(ValidateNpyArray({NpyDType::kBool, {0}, ""}).ok());
}

}  // namespace
}  // namespace tally::io
