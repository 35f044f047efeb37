//===- NpyTest.cpp - .npy read/write --------------------------------------===//

#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace sinkattn::rt;

namespace {

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("sinkattn_npy_test_" + std::to_string(getpid()) + "_" + name))
      .string();
}

TEST(Npy, HeaderLayout) {
  Expected<std::string> bytes =
      encodeNpy(makeNpyF32({2, 3}, {1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  const std::string &b = *bytes;
  EXPECT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  size_t headerLen = uint8_t(b[8]) | (size_t(uint8_t(b[9])) << 8);
  EXPECT_EQ((10 + headerLen) % 64, 0u);
  std::string header = b.substr(10, headerLen);
  EXPECT_EQ(header.find("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (2, 3), }"),
            0u);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ(b.size(), 10 + headerLen + 24);

  Expected<std::string> vec = encodeNpy(makeNpyI32({5}, {1, 2, 3, 4, 5}));
  ASSERT_TRUE(vec.ok());
  EXPECT_NE(vec->find("'shape': (5,)"), std::string::npos);
  Expected<std::string> scalar = encodeNpy(makeNpyF32({}, {3.0f}));
  ASSERT_TRUE(scalar.ok());
  EXPECT_NE(scalar->find("'shape': ()"), std::string::npos);
  Expected<std::string> bf = encodeNpy(makeNpyBf16({1}, {0x3F80}));
  ASSERT_TRUE(bf.ok());
  EXPECT_NE(bf->find("'descr': '<u2'"), std::string::npos);
}

TEST(Npy, RoundTripAllDTypes) {
  std::vector<NpyArray> arrays = {
      makeNpyF32({2, 3}, {1.5f, -2, 3, 4, 5, 6e-8f}),
      makeNpyF16({4}, toHalf({1.0f, -2.5f, 65504.0f, 0.0f})),
      makeNpyBf16({2, 2}, toBf16({1.0f, -2.5f, 3.0e38f, 1e-3f})),
      makeNpyI32({1, 1, 3}, {-1, 0, 2147483647}),
      makeNpyF32({}, {42.0f}),
      makeNpyF32({0, 4}, {}),
  };
  for (const NpyArray &a : arrays) {
    Expected<std::string> bytes = encodeNpy(a);
    ASSERT_TRUE(bytes.ok()) << bytes.message();
    Expected<NpyArray> back = decodeNpy(*bytes);
    ASSERT_TRUE(back.ok()) << back.message();
    EXPECT_EQ(*back, a) << npyDescr(a.dtype);
  }
}

TEST(Npy, FileRoundTrip) {
  std::string path = tempPath("a.npy");
  NpyArray a = makeNpyF32({3, 2}, {0, 1, 2, 3, 4, 5});
  ASSERT_TRUE(writeNpy(path, a).ok());
  Expected<NpyArray> back = readNpy(path);
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(*back, a);
  Expected<std::vector<float>> values = npyAsF32(*back);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(*values, (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(npyAsI32(*back).ok());
  std::filesystem::remove(path);

  Expected<NpyArray> missing = readNpy(tempPath("missing.npy"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("missing.npy"), std::string::npos);
}

TEST(Npy, AcceptsNumpyStyleVariants) {
  // Double quotes, extra spaces, no trailing comma, version 2.0 header.
  std::string header = "{\"descr\": \"<i4\", \"shape\": ( 2 , ),  "
                       "\"fortran_order\": False}\n";
  std::string v2("\x93NUMPY\x02\x00", 8);
  v2 += char(header.size());
  v2 += std::string(3, '\0');
  v2 += header;
  int32_t data[2] = {7, -7};
  v2.append(reinterpret_cast<const char *>(data), 8);
  Expected<NpyArray> a = decodeNpy(v2);
  ASSERT_TRUE(a.ok()) << a.message();
  EXPECT_EQ(a->dtype, NpyDType::I32);
  EXPECT_EQ(a->shape, (std::vector<uint64_t>{2}));
}

TEST(Npy, MalformedInputsFailCleanly) {
  std::string good = *encodeNpy(makeNpyF32({2}, {1, 2}));
  auto expectError = [](const std::string &bytes, const std::string &needle) {
    Expected<NpyArray> a = decodeNpy(bytes);
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.message().find(needle), std::string::npos) << a.message();
  };
  expectError("hello", "magic");
  expectError(good.substr(0, 20), "truncated");
  expectError(good.substr(0, good.size() - 1), "does not match");
  std::string f8 = good;
  f8.replace(f8.find("<f4"), 3, "<f8");
  expectError(f8, "unsupported .npy dtype '<f8'");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  expectError(fortran, "Fortran-order");
  std::string v9 = good;
  v9[6] = 9;
  expectError(v9, "version 9");
  // Every truncation of a valid file must fail without crashing.
  for (size_t n = 0; n < good.size(); ++n)
    EXPECT_FALSE(decodeNpy(good.substr(0, n)).ok());
  // Shape overflow.
  std::string big = good;
  big.replace(big.find("(2,)"), 4, "(99999999999,99999999999)");
  EXPECT_FALSE(decodeNpy(big).ok());
  EXPECT_FALSE(encodeNpy(makeNpyF32({3}, {1, 2})).ok());
}

} // namespace
