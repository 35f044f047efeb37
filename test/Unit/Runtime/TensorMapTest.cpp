//===- TensorMapTest.cpp - TMA spec validation ----------------------------===//

#include "SinkAttn/Runtime/TensorMap.h"

#include <gtest/gtest.h>

using namespace sinkattn::rt;

namespace {

/// Q tile of an attention kernel: [seq=4096, d=128] bf16, row-major.
TensorMapSpec qSpec(uint32_t boxRows, uint32_t boxCols,
                    TensorMapSwizzle swizzle = TensorMapSwizzle::B128) {
  return makeRowMajorTiledSpec(DType::BF16, {4096, 128}, {boxRows, boxCols},
                               swizzle);
}

::testing::AssertionResult failsWith(const TensorMapSpec &spec,
                                     const std::string &needle) {
  Status st = validate(spec);
  if (st.ok())
    return ::testing::AssertionFailure() << "spec was accepted";
  if (st.message().find(needle) == std::string::npos)
    return ::testing::AssertionFailure()
           << "message '" << st.message() << "' lacks '" << needle << "'";
  return ::testing::AssertionSuccess();
}

TEST(TensorMap, RowMajorHelperUsesInnermostFirstOrder) {
  TensorMapSpec s = makeRowMajorTiledSpec(DType::F16, {2, 8, 1024, 64},
                                          {1, 1, 128, 64},
                                          TensorMapSwizzle::B128);
  EXPECT_EQ(s.globalDims, (std::vector<uint64_t>{64, 1024, 8, 2}));
  EXPECT_EQ(s.globalStridesBytes,
            (std::vector<uint64_t>{128, 128 * 1024, 128 * 1024 * 8}));
  EXPECT_EQ(s.boxDims, (std::vector<uint32_t>{64, 128, 1, 1}));
  EXPECT_EQ(s.elementStrides, (std::vector<uint32_t>{1, 1, 1, 1}));
  EXPECT_TRUE(validate(s).ok()) << validate(s).message();
  EXPECT_EQ(globalExtentBytes(s), uint64_t(2) * 8 * 1024 * 64 * 2);
}

TEST(TensorMap, HeadDim128Bf16With128BSwizzleNeedsTwo64ColumnBoxes) {
  EXPECT_EQ(maxInnerBoxElements(DType::BF16, TensorMapSwizzle::B128), 64u);
  // A full 128-column box is 256 bytes, wider than the 128-byte swizzle span.
  TensorMapSpec full = qSpec(64, 128);
  EXPECT_TRUE(failsWith(full, "128B swizzle spans only 128 bytes"));
  EXPECT_TRUE(failsWith(full, "at most 64 elements"));
  // The same tile as two 64-column boxes is accepted.
  TensorMapSpec half = qSpec(64, 64);
  Status st = validate(half);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(half.boxDims, (std::vector<uint32_t>{64, 64}));
  // Without swizzle the wide box is fine.
  EXPECT_TRUE(validate(qSpec(64, 128, TensorMapSwizzle::None)).ok());
  // 64B swizzle allows 32 bf16 columns only.
  EXPECT_TRUE(failsWith(qSpec(64, 64, TensorMapSwizzle::B64),
                        "64B swizzle spans only 64 bytes"));
  EXPECT_TRUE(validate(qSpec(64, 32, TensorMapSwizzle::B64)).ok());
  EXPECT_TRUE(validate(qSpec(64, 16, TensorMapSwizzle::B32)).ok());
}

TEST(TensorMap, BoxOver256Rejected) {
  TensorMapSpec s = qSpec(300, 64);
  Status st = validate(s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "box dimension 1 is 300; TMA boxes are at most 256 "
                          "elements per dimension");
  EXPECT_TRUE(validate(qSpec(256, 64)).ok());
  EXPECT_TRUE(failsWith(qSpec(0, 64), "box dimension 1 is 0"));
}

TEST(TensorMap, StrideMustBeMultipleOf16) {
  // 100 bf16 columns = 200-byte rows.
  TensorMapSpec s = makeRowMajorTiledSpec(DType::BF16, {64, 100}, {64, 8},
                                          TensorMapSwizzle::None);
  EXPECT_TRUE(failsWith(s, "global stride of dimension 1 is 200 bytes"));
  EXPECT_TRUE(failsWith(s, "multiples of 16 bytes"));
  s.globalStridesBytes = {208}; // Padded pitch is fine.
  EXPECT_TRUE(validate(s).ok()) << validate(s).message();
  s.globalStridesBytes = {uint64_t(1) << 40};
  EXPECT_TRUE(failsWith(s, "below 2^40"));
}

TEST(TensorMap, RankLimits) {
  TensorMapSpec s = makeRowMajorTiledSpec(DType::F32, {2, 2, 2, 2, 2, 4},
                                          {1, 1, 1, 1, 1, 4},
                                          TensorMapSwizzle::None);
  EXPECT_TRUE(failsWith(s, "tensor map rank is 6"));
  TensorMapSpec one = makeRowMajorTiledSpec(DType::F32, {64}, {16},
                                            TensorMapSwizzle::None);
  EXPECT_TRUE(failsWith(one, "rank is 1"));
  TensorMapSpec five = makeRowMajorTiledSpec(DType::F32, {2, 2, 2, 2, 4},
                                             {1, 1, 1, 1, 4},
                                             TensorMapSwizzle::None);
  EXPECT_TRUE(validate(five).ok()) << validate(five).message();
}

TEST(TensorMap, ArraySizesMustMatchRank) {
  TensorMapSpec s = qSpec(64, 64);
  s.globalStridesBytes.push_back(1024);
  EXPECT_TRUE(failsWith(s, "needs 1 global strides"));
  s = qSpec(64, 64);
  s.boxDims.pop_back();
  EXPECT_TRUE(failsWith(s, "needs 2 box dimensions"));
  s = qSpec(64, 64);
  s.elementStrides.clear();
  EXPECT_TRUE(failsWith(s, "needs 2 element strides"));
}

TEST(TensorMap, OtherRules) {
  TensorMapSpec s = qSpec(64, 4, TensorMapSwizzle::None); // 8-byte inner box
  EXPECT_TRUE(failsWith(s, "multiple of 16 bytes"));

  s = qSpec(64, 64);
  s.elementStrides = {1, 9};
  EXPECT_TRUE(failsWith(s, "element stride 1 is 9"));
  s.elementStrides = {0, 1};
  EXPECT_TRUE(failsWith(s, "element stride 0 is 0"));

  s = qSpec(64, 64);
  s.globalDims[1] = 0;
  EXPECT_TRUE(failsWith(s, "global dimension 1 is 0"));
  s.globalDims[1] = (uint64_t(1) << 32) + 1;
  EXPECT_TRUE(failsWith(s, "between 1 and 2^32"));
  s.globalDims[1] = uint64_t(1) << 32;
  EXPECT_TRUE(validate(s).ok());

  s = qSpec(64, 64);
  s.interleave = TensorMapInterleave::B16;
  EXPECT_TRUE(failsWith(s, "interleaved tensor maps need rank >= 3"));

  TensorMapSpec i = makeRowMajorTiledSpec(DType::F16, {4, 32, 16}, {1, 8, 16},
                                          TensorMapSwizzle::B64);
  i.interleave = TensorMapInterleave::B32;
  EXPECT_TRUE(failsWith(i, "32B interleave requires 32B swizzle"));
  i.swizzle = TensorMapSwizzle::B32;
  EXPECT_TRUE(validate(i).ok()) << validate(i).message();

  TensorMapSpec u = makeRowMajorTiledSpec(DType::U8, {64, 64}, {64, 64},
                                          TensorMapSwizzle::None);
  u.oobFill = TensorMapOobFill::NanRequestZeroFma;
  EXPECT_TRUE(failsWith(u, "needs a floating-point dtype"));
  u.dtype = DType::F32;
  u.globalStridesBytes = {256};
  EXPECT_TRUE(validate(u).ok()) << validate(u).message();
}

TEST(TensorMap, Im2col) {
  // NHWC bf16 image, innermost first: C=64, W=16, H=16, N=2.
  TensorMapSpec s;
  s.dtype = DType::BF16;
  s.globalDims = {64, 16, 16, 2};
  s.globalStridesBytes = {128, 128 * 16, 128 * 16 * 16};
  s.elementStrides = {1, 1, 1, 1};
  s.swizzle = TensorMapSwizzle::B128;
  s.im2col = Im2colSpec{{-1, -1}, {-1, -1}, 64, 128};
  EXPECT_TRUE(validate(s).ok()) << validate(s).message();

  TensorMapSpec bad = s;
  bad.im2col->pixelBoxLowerCorner = {-129, 0};
  EXPECT_TRUE(failsWith(bad, "allows [-128, 127]"));
  bad = s;
  bad.im2col->channelsPerPixel = 300;
  EXPECT_TRUE(failsWith(bad, "channels_per_pixel is 300"));
  bad = s;
  bad.im2col->pixelsPerColumn = 2000;
  EXPECT_TRUE(failsWith(bad, "pixels_per_column is 2000"));
  bad = s;
  bad.im2col->pixelBoxUpperCorner = {-1};
  EXPECT_TRUE(failsWith(bad, "needs 2 entries in each pixel box corner"));
  bad = s;
  bad.boxDims = {64, 1, 1, 1};
  EXPECT_TRUE(failsWith(bad, "take no box dimensions"));
  bad = s;
  bad.im2col->channelsPerPixel = 128; // 256 bytes > 128B swizzle
  EXPECT_TRUE(failsWith(bad, "channels_per_pixel = 128"));
  bad = s;
  bad.globalDims = {64, 16};
  bad.globalStridesBytes = {128};
  bad.elementStrides = {1, 1};
  EXPECT_TRUE(failsWith(bad, "im2col tensor maps must have rank 3 to 5"));
}

TEST(TensorMap, GlobalAddressAlignment) {
  TensorMapSpec s = qSpec(64, 64);
  EXPECT_TRUE(validateGlobalAddress(s, 0x7f0000001000ull).ok());
  Status st = validateGlobalAddress(s, 0x7f0000001008ull);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("0x7f0000001008 is not 16-byte aligned"),
            std::string::npos)
      << st.message();
}

TEST(TensorMap, EnumSpellingsRoundTrip) {
  for (auto v : {TensorMapSwizzle::None, TensorMapSwizzle::B32,
                 TensorMapSwizzle::B64, TensorMapSwizzle::B128})
    EXPECT_EQ(parseSwizzle(swizzleName(v)), v);
  for (auto v : {TensorMapInterleave::None, TensorMapInterleave::B16,
                 TensorMapInterleave::B32})
    EXPECT_EQ(parseInterleave(interleaveName(v)), v);
  for (auto v : {TensorMapL2Promotion::None, TensorMapL2Promotion::B64,
                 TensorMapL2Promotion::B128, TensorMapL2Promotion::B256})
    EXPECT_EQ(parseL2Promotion(l2PromotionName(v)), v);
  for (auto v : {TensorMapOobFill::None, TensorMapOobFill::NanRequestZeroFma})
    EXPECT_EQ(parseOobFill(oobFillName(v)), v);
  EXPECT_FALSE(parseSwizzle("256B").has_value());
}

TEST(TensorMap, ExtentSaturates) {
  TensorMapSpec s = qSpec(64, 64);
  s.globalDims = {uint64_t(1) << 32, uint64_t(1) << 32};
  s.globalStridesBytes = {(uint64_t(1) << 40) - 16};
  EXPECT_EQ(globalExtentBytes(s), UINT64_MAX);
}

} // namespace
