//===- RandomTest.cpp - Deterministic random data -------------------------===//

#include "SinkAttn/Runtime/Random.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sinkattn::rt;

namespace {

TEST(Random, SplitMix64ReferenceValue) {
  // First output of the reference splitmix64 for state 0.
  uint64_t state = 0;
  EXPECT_EQ(splitMix64(state), 0xE220A8397B1DCDAFull);
}

TEST(Random, SameSeedSameNumbers) {
  Rng a(42), b(42);
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(a.next(), b.next());
  EXPECT_EQ(randomUniform(4096, 7), randomUniform(4096, 7));
  EXPECT_EQ(randomNormal(4096, 7), randomNormal(4096, 7));
}

TEST(Random, DifferentSeedsDiffer) {
  std::vector<float> a = randomUniform(256, 1), b = randomUniform(256, 2);
  int equal = 0;
  for (size_t i = 0; i < a.size(); ++i)
    equal += a[i] == b[i];
  EXPECT_LT(equal, 3);
  EXPECT_NE(Rng(0).next(), Rng(1).next());
}

TEST(Random, UniformRangeAndMoments) {
  std::vector<float> v = randomUniform(100000, 3, -2.0f, 6.0f);
  double sum = 0;
  for (float x : v) {
    ASSERT_GE(x, -2.0f);
    ASSERT_LT(x, 6.0f);
    sum += x;
  }
  EXPECT_NEAR(sum / double(v.size()), 2.0, 0.05);
}

TEST(Random, NormalMoments) {
  std::vector<float> v = randomNormal(200000, 9, 1.0f, 0.5f);
  double sum = 0, sq = 0;
  for (float x : v) {
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    sq += double(x) * x;
  }
  double mean = sum / double(v.size());
  double var = sq / double(v.size()) - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.01);
}

TEST(Random, DoubleIsInUnitInterval) {
  Rng r(5);
  for (int i = 0; i < 10000; ++i) {
    double d = r.nextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

} // namespace
