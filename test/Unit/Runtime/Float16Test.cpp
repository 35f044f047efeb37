//===- Float16Test.cpp - bf16/fp16 conversions ----------------------------===//

#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

using namespace sinkattn::rt;

namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Bf16, KnownValues) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(-2.5f), 0xC020);
  EXPECT_EQ(floatToBf16(0.0f), 0x0000);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  // 65504 = 0x477FE000: the dropped bits are above half, so it rounds up.
  EXPECT_EQ(floatToBf16(65504.0f), 0x4780);
  EXPECT_EQ(bf16ToFloat(0x4780), 65536.0f);
  EXPECT_EQ(floatToBf16(kInf), 0x7F80);
  EXPECT_EQ(floatToBf16(-kInf), 0xFF80);
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bf16ToFloat(0xC020), -2.5f);
}

TEST(Bf16, RoundingTiesToEven) {
  // 1 + 2^-8 is exactly between 0x3F80 and 0x3F81: keep the even one.
  EXPECT_EQ(floatToBf16(floatFromBits(0x3F808000)), 0x3F80);
  // Between 0x3F81 and 0x3F82: round up to the even 0x3F82.
  EXPECT_EQ(floatToBf16(floatFromBits(0x3F818000)), 0x3F82);
  // Just above / below the tie.
  EXPECT_EQ(floatToBf16(floatFromBits(0x3F808001)), 0x3F81);
  EXPECT_EQ(floatToBf16(floatFromBits(0x3F817FFF)), 0x3F81);
  // FLT_MAX overflows to infinity.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7F80);
}

TEST(Bf16, SubnormalsAndNaN) {
  // Smallest bf16 subnormal is fp32 0x00010000.
  EXPECT_EQ(floatToBf16(floatFromBits(0x00010000)), 0x0001);
  EXPECT_EQ(bf16ToFloat(0x0001), floatFromBits(0x00010000));
  EXPECT_EQ(floatToBf16(floatFromBits(0x00008000)), 0x0000); // tie -> even
  EXPECT_EQ(floatToBf16(floatFromBits(0x00018000)), 0x0002); // tie -> even
  // NaN stays NaN, even when only low payload bits are set.
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(kNaN))));
  uint16_t lowPayload = floatToBf16(floatFromBits(0x7F800001));
  EXPECT_EQ(lowPayload & 0x7F80, 0x7F80);
  EXPECT_NE(lowPayload & 0x007F, 0);
  EXPECT_EQ(floatToBf16(floatFromBits(0xFFC00000)), 0xFFC0); // sign kept
}

TEST(Bf16, AllBitPatternsRoundTrip) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(f))));
      continue;
    }
    ASSERT_EQ(floatToBf16(f), h) << std::hex << h;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.5f), 0xC100);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // tie with 65536 -> even -> inf
  EXPECT_EQ(floatToHalf(kInf), 0x7C00);
  EXPECT_EQ(floatToHalf(-kInf), 0xFC00);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0xC100), -2.5f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x7C00), kInf);
  EXPECT_EQ(halfToFloat(0xFC00), -kInf);
}

TEST(Half, Subnormals) {
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001); // smallest
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie -> even 0
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -26)), 0x0001); // above the tie
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002); // 1.5 ulp -> even
  EXPECT_EQ(floatToHalf(std::ldexp(5.0f, -25)), 0x0002); // 2.5 ulp -> even
  EXPECT_EQ(floatToHalf(std::ldexp(1023.0f, -24)), 0x03FF); // largest
  EXPECT_EQ(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // smallest normal
  // Rounds up from the largest subnormal into the smallest normal.
  EXPECT_EQ(floatToHalf(std::ldexp(2047.0f, -25)), 0x0400);
  EXPECT_EQ(floatToHalf(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
}

TEST(Half, RoundingTiesToEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3C01);
  // Mantissa carry into the exponent: 2 - 2^-12 rounds to 2.0.
  EXPECT_EQ(floatToHalf(2.0f - std::ldexp(1.0f, -12)), 0x4000);
}

TEST(Half, NaN) {
  uint16_t h = floatToHalf(kNaN);
  EXPECT_EQ(h & 0x7C00, 0x7C00);
  EXPECT_NE(h & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(halfToFloat(h)));
  // Payload only in bits that are dropped: must still be NaN.
  uint16_t low = floatToHalf(floatFromBits(0x7F800001));
  EXPECT_NE(low & 0x03FF, 0);
  EXPECT_EQ(floatToHalf(floatFromBits(0xFFC00000)) & 0x8000, 0x8000);
}

TEST(Half, AllBitPatternsRoundTrip) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    ASSERT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

#ifdef __FLT16_MAX__
// Cross-check against the compiler's IEEE binary16 conversion (RNE).
TEST(Half, MatchesCompilerFloat16) {
  Rng rng(1234);
  for (int i = 0; i < 200000; ++i) {
    // Random bit patterns concentrated around the half range.
    uint32_t bits = static_cast<uint32_t>(rng.next());
    uint32_t exp = 100 + static_cast<uint32_t>(rng.next() % 45); // 2^-27..2^17
    bits = (bits & 0x807FFFFFu) | (exp << 23);
    float f = floatFromBits(bits);
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t refBits;
    static_assert(sizeof(ref) == 2);
    std::memcpy(&refBits, &ref, 2);
    ASSERT_EQ(floatToHalf(f), refBits) << std::hex << bits;
  }
}
#endif

TEST(Float16, VectorHelpers) {
  std::vector<float> v = {1.0f, -2.5f, 0.5f};
  EXPECT_EQ(fromBf16(toBf16(v)), v);
  EXPECT_EQ(fromHalf(toHalf(v)), v);
}

} // namespace
