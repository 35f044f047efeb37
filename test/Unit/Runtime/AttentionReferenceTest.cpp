//===- AttentionReferenceTest.cpp - float64 attention-sink reference ------===//
//
// Tiny problems whose answers are computed by hand: the float64 reference
// is what the GPU reference kernel is cross-checked against, so it has to
// be right by construction.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/AttentionReference.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sinkattn::rt;

namespace {

struct Result {
  std::vector<double> o, lse;
};

Result run(const SinkAttentionShape &shape, const std::vector<float> &q,
           const std::vector<float> &k, const std::vector<float> &v,
           const std::vector<float> &sinks) {
  Result r;
  Status st = sinkAttentionForward(shape, q, k, v, sinks, r.o, r.lse);
  EXPECT_TRUE(st.ok()) << st.message();
  return r;
}

SinkAttentionShape shapeOf(int64_t heads, int64_t kvHeads, int64_t seqQ,
                           int64_t seqKv, int64_t dim, int64_t window = 0,
                           double scale = 1.0) {
  SinkAttentionShape s;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.seqQ = seqQ;
  s.seqKv = seqKv;
  s.headDim = dim;
  s.window = window;
  s.scale = scale;
  return s;
}

TEST(AttentionReference, SingleKey) {
  // s = scale * q.k = 0.5 * (1*2 + 2*1) = 2, sink t = 0.
  SinkAttentionShape s = shapeOf(1, 1, 1, 1, 2, 0, 0.5);
  Result r = run(s, {1, 2}, {2, 1}, {3, -1}, {0});
  double l = std::exp(0.0) + std::exp(2.0);
  EXPECT_NEAR(r.o[0], 3 * std::exp(2.0) / l, 1e-14);
  EXPECT_NEAR(r.o[1], -1 * std::exp(2.0) / l, 1e-14);
  EXPECT_NEAR(r.lse[0], std::log(l), 1e-14);
}

TEST(AttentionReference, SinkDominates) {
  // A sink far above the score takes (almost) all the probability mass: O
  // vanishes and LSE is the sink logit.
  SinkAttentionShape s = shapeOf(1, 1, 1, 1, 1);
  Result r = run(s, {1}, {1}, {5}, {60});
  EXPECT_NEAR(r.o[0], 5 * std::exp(1.0 - 60.0), 1e-30);
  EXPECT_GT(r.o[0], 0);
  EXPECT_NEAR(r.lse[0], 60.0, 1e-14);
  // A sink far below leaves plain softmax: O = v, LSE = s.
  r = run(s, {1}, {1}, {5}, {-60});
  EXPECT_NEAR(r.o[0], 5, 1e-14);
  EXPECT_NEAR(r.lse[0], 1.0, 1e-14);
}

TEST(AttentionReference, LargeLogitsDoNotOverflow) {
  SinkAttentionShape s = shapeOf(1, 1, 1, 2, 1, 0, 1.0);
  // Scores 1000 and 999: exp would overflow without the max subtraction.
  Result r = run(s, {1}, {1000, 999}, {1, -1}, {0});
  double e = std::exp(-1.0);
  EXPECT_NEAR(r.o[0], (1 - e) / (1 + e), 1e-12);
  EXPECT_NEAR(r.lse[0], 1000 + std::log(1 + e), 1e-10);
}

TEST(AttentionReference, RowsWithoutKeys) {
  // SQ = 3 > SKV = 2: row 0 sits at position -1 and attends nothing
  // (O = 0, LSE = t); row 1 attends key 0; row 2 keys 0 and 1.
  SinkAttentionShape s = shapeOf(1, 1, 3, 2, 1, 0, 1.0);
  Result r = run(s, {0, 0, 0}, {0, 0}, {2, 4}, {0.5f});
  EXPECT_EQ(attendedKeys(s, 0).size(), 0);
  EXPECT_EQ(r.o[0], 0.0);
  EXPECT_EQ(r.lse[0], 0.5);
  double t = std::exp(0.5);
  EXPECT_NEAR(r.o[1], 2 / (t + 1), 1e-14);
  EXPECT_NEAR(r.lse[1], std::log(t + 1), 1e-14);
  EXPECT_NEAR(r.o[2], (2 + 4) / (t + 2), 1e-14);
  EXPECT_NEAR(r.lse[2], std::log(t + 2), 1e-14);
}

TEST(AttentionReference, CausalAndWindowMasks) {
  // All scores 0, the sink at -1000 (exp underflows to 0): O is the mean of
  // the attended v_j = j, LSE = ln(number of keys).
  std::vector<float> q(4, 0), k(4, 0), v = {0, 1, 2, 3};
  SinkAttentionShape causal = shapeOf(1, 1, 4, 4, 1);
  Result r = run(causal, q, k, v, {-1000});
  double mean[] = {0, 0.5, 1, 1.5};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(r.o[i], mean[i], 1e-14) << "row " << i;
    EXPECT_NEAR(r.lse[i], std::log(i + 1.0), 1e-14) << "row " << i;
  }
  // Window 2: key j attended iff i - 2 < j <= i.
  SinkAttentionShape window = shapeOf(1, 1, 4, 4, 1, 2);
  r = run(window, q, k, v, {-1000});
  double windowed[] = {0, 0.5, 1.5, 2.5};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(r.o[i], windowed[i], 1e-14) << "row " << i;
    EXPECT_NEAR(r.lse[i], std::log(i == 0 ? 1.0 : 2.0), 1e-14) << "row " << i;
  }
  // Right-aligned: SQ = 2 queries over SKV = 5 keys sit at positions 3, 4.
  SinkAttentionShape decode = shapeOf(1, 1, 2, 5, 1);
  r = run(decode, {0, 0}, std::vector<float>(5, 0), {0, 1, 2, 3, 4}, {-1000});
  EXPECT_NEAR(r.o[0], 1.5, 1e-14);
  EXPECT_NEAR(r.o[1], 2.0, 1e-14);
  EXPECT_EQ(attendedKeys(decode, 0).begin, 0);
  EXPECT_EQ(attendedKeys(decode, 0).end, 4);
}

TEST(AttentionReference, GroupedQueryHeads) {
  // H = 4 query heads over HK = 2 kv heads: heads 0, 1 read kv head 0 and
  // heads 2, 3 kv head 1. One key per kv head, score 0, sink 0: O = v / 2.
  SinkAttentionShape s = shapeOf(4, 2, 1, 1, 2);
  std::vector<float> v = {10, 11, 20, 21}; // [HK=2, SKV=1, D=2]
  Result r = run(s, std::vector<float>(8, 0), std::vector<float>(4, 0), v,
                 {0, 0, 0, 0});
  float expected[4][2] = {{5, 5.5f}, {5, 5.5f}, {10, 10.5f}, {10, 10.5f}};
  for (int h = 0; h < 4; ++h) {
    EXPECT_NEAR(r.o[h * 2], expected[h][0], 1e-14) << "head " << h;
    EXPECT_NEAR(r.o[h * 2 + 1], expected[h][1], 1e-14) << "head " << h;
    EXPECT_NEAR(r.lse[h], std::log(2.0), 1e-14);
  }
  // Per-head sinks and batches: batch 1 reads its own K/V.
  s.batch = 2;
  std::vector<float> v2 = {10, 11, 20, 21, 30, 31, 40, 41};
  r = run(s, std::vector<float>(16, 0), std::vector<float>(8, 0), v2,
          {0, 0, 0, 100});
  EXPECT_NEAR(r.o[4 * 2], 15, 1e-14);     // batch 1, head 0 -> kv head 0
  EXPECT_NEAR(r.o[7 * 2], 40 * std::exp(-100.0) / (1 + std::exp(-100.0)),
              1e-40);                     // batch 1, head 3: its sink wins
  EXPECT_NEAR(r.lse[7], 100.0, 1e-12);
}

TEST(AttentionReference, AttendedPairsMatchesCounting) {
  for (int64_t seqQ = 1; seqQ <= 9; ++seqQ)
    for (int64_t seqKv = 1; seqKv <= 9; ++seqKv)
      for (int64_t window = 0; window <= 10; ++window) {
        SinkAttentionShape s = shapeOf(1, 1, seqQ, seqKv, 1, window);
        uint64_t counted = 0;
        for (int64_t i = 0; i < seqQ; ++i) {
          int64_t p = i + seqKv - seqQ;
          for (int64_t j = 0; j < seqKv; ++j)
            if (j <= p && (window == 0 || j > p - window))
              ++counted;
          // attendedKeys agrees with the definition row by row.
          KeyRange keys = attendedKeys(s, i);
          for (int64_t j = 0; j < seqKv; ++j) {
            bool in = j >= keys.begin && j < keys.end;
            EXPECT_EQ(in, j <= p && (window == 0 || j > p - window));
          }
        }
        EXPECT_EQ(attendedPairs(s), counted)
            << "SQ=" << seqQ << " SKV=" << seqKv << " W=" << window;
      }
  // The seed's causal shapes: S(S+1)/2 pairs, no overflow at large S.
  EXPECT_EQ(attendedPairs(shapeOf(1, 1, 16384, 16384, 128)),
            16384ull * 16385 / 2);
  EXPECT_EQ(attendedPairs(shapeOf(1, 1, 4096, 4096, 128, 128)),
            128ull * 129 / 2 + (4096ull - 128) * 128);
  EXPECT_EQ(attendedPairs(shapeOf(1, 1, int64_t(1) << 31, int64_t(1) << 31, 1)),
            (uint64_t(1) << 30) * ((uint64_t(1) << 31) + 1));
}

TEST(AttentionReference, Validation) {
  EXPECT_TRUE(validate(shapeOf(8, 2, 16, 32, 64, 4, 0.125)).ok());
  EXPECT_EQ(validate(shapeOf(6, 4, 1, 1, 64)).message(),
            "kv_heads 4 does not divide heads 6");
  EXPECT_EQ(validate(shapeOf(1, 1, 0, 1, 64)).message(),
            "seq_q must be positive, got 0");
  EXPECT_EQ(validate(shapeOf(1, 1, 1, 1, 64, -1)).message(),
            "window must be 0 (none) or positive, got -1");
  EXPECT_EQ(validate(shapeOf(1, 1, 1, 1, 64, 0, NAN)).message(),
            "scale is not a finite number");
  EXPECT_EQ(validate(shapeOf(1 << 20, 1, 1 << 20, 1, 128)).message(),
            "the attention tensors have more than 2^40 elements");

  std::vector<double> o, lse;
  Status st = sinkAttentionForward(shapeOf(2, 1, 1, 1, 1), {0, 0}, {0}, {0},
                                   {0}, o, lse);
  EXPECT_EQ(st.message(), "sinks has 1 elements; the shape needs 2");
}

TEST(AttentionReference, GpuReferenceLaunchShape) {
  SinkAttentionShape s = shapeOf(3, 1, 100, 100, 64); // 300 rows
  Expected<LaunchConfig> launch = sinkFwdReferenceLaunch(s);
  ASSERT_TRUE(launch.ok()) << launch.message();
  EXPECT_EQ(launch->grid, (Dim3{3, 1, 1}));
  EXPECT_EQ(launch->block, (Dim3{128, 1, 1}));
  EXPECT_EQ(launch->dynamicSharedMemoryBytes, 0u);
  EXPECT_TRUE(validateLaunchConfig(*launch).ok());
  s.seqQ = 128;
  EXPECT_EQ(sinkFwdReferenceLaunch(s)->grid, (Dim3{3, 1, 1}));
  s.seqQ = 129;
  EXPECT_EQ(sinkFwdReferenceLaunch(s)->grid, (Dim3{4, 1, 1}));
}

} // namespace
