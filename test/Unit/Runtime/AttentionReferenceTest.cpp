//===- AttentionReferenceTest.cpp - float64 attention-sink reference ------===//
//
// Tiny problems whose answers are computed by hand: the float64 reference
// is what the GPU reference kernel is cross-checked against, so it has to
// be right by construction.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Random.h"

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
  EXPECT_EQ(attendedKeys(s, 0, 0).size(), 0);
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
  EXPECT_EQ(attendedKeys(decode, 0, 0).begin, 0);
  EXPECT_EQ(attendedKeys(decode, 0, 0).end, 4);
}

TEST(AttentionReference, WithoutTheCausalMask) {
  // Every row attends all five keys: O is their mean 2, LSE ln 5; with more
  // queries than keys too, and in each varlen sequence its own keys.
  SinkAttentionShape full = shapeOf(1, 1, 2, 5, 1);
  full.causal = false;
  Result r =
      run(full, {0, 0}, std::vector<float>(5, 0), {0, 1, 2, 3, 4}, {-1000});
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(r.o[i], 2.0, 1e-14) << "row " << i;
    EXPECT_NEAR(r.lse[i], std::log(5.0), 1e-14) << "row " << i;
    EXPECT_EQ(attendedKeys(full, 0, i).begin, 0);
    EXPECT_EQ(attendedKeys(full, 0, i).end, 5);
  }
  EXPECT_EQ(attendedPairs(full), 10u);
  SinkAttentionShape tall = shapeOf(1, 1, 7, 3, 1);
  tall.causal = false;
  r = run(tall, std::vector<float>(7, 0), {0, 0, 0}, {3, 6, 9}, {-1000});
  for (int i = 0; i < 7; ++i)
    EXPECT_NEAR(r.o[i], 6.0, 1e-14) << "row " << i;
  EXPECT_EQ(attendedPairs(tall), 21u);
  SinkAttentionShape varlen = shapeOf(1, 1, 3, 4, 1);
  varlen.causal = false;
  varlen.batch = 3;
  varlen.layout = AttentionLayout::Varlen;
  varlen.cuSeqlensQ = offsetsOf({2, 3, 0});
  varlen.cuSeqlensKv = offsetsOf({4, 0, 2});
  EXPECT_EQ(attendedPairs(varlen), 8u);
  EXPECT_EQ(attendedKeys(varlen, 1, 0).size(), 0);
  SinkAttentionShape plain = shapeOf(1, 1, 1, 1, 64, 0, 0.1);
  plain.causal = false;
  EXPECT_TRUE(validate(plain).ok());
  SinkAttentionShape windowed = shapeOf(1, 1, 4, 4, 1, 2);
  windowed.causal = false;
  EXPECT_EQ(validate(windowed).message(),
            "a sliding window needs the causal mask (window 2 without causal)");
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
          KeyRange keys = attendedKeys(s, 0, i);
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

TEST(AttentionReference, LayoutsAddressTheSameRows) {
  // One problem in BHSD and in BSHD (the same values, transposed): the same
  // answers, each in its own layout.
  SinkAttentionShape bhsd = shapeOf(4, 2, 3, 5, 2, 0, 0.7);
  bhsd.batch = 2;
  SinkAttentionShape bshd = bhsd;
  bshd.layout = AttentionLayout::BSHD;
  EXPECT_EQ(bhsd.qDims(), (std::vector<uint64_t>{2, 4, 3, 2}));
  EXPECT_EQ(bshd.qDims(), (std::vector<uint64_t>{2, 3, 4, 2}));
  EXPECT_EQ(bshd.kvDims(), (std::vector<uint64_t>{2, 5, 2, 2}));
  EXPECT_EQ(bshd.lseDims(), (std::vector<uint64_t>{2, 4, 3}));
  // Batch 1, head 2, row 1: BSHD offset ((1*3 + 1)*4 + 2)*2 = 36.
  EXPECT_EQ(bshd.qOffset(1, 2, 1), 36);
  EXPECT_EQ(bhsd.qOffset(1, 2, 1), ((1 * 4 + 2) * 3 + 1) * 2);
  EXPECT_EQ(bshd.kvOffset(1, 1, 4), ((1 * 5 + 4) * 2 + 1) * 2);
  std::vector<float> q(bhsd.qElements()), k(bhsd.kvElements()),
      v(bhsd.kvElements());
  for (size_t e = 0; e < q.size(); ++e)
    q[e] = float(std::sin(double(e)));
  for (size_t e = 0; e < k.size(); ++e) {
    k[e] = float(std::cos(double(e)));
    v[e] = float(e % 7) - 3;
  }
  auto transpose = [](const SinkAttentionShape &from,
                      const SinkAttentionShape &to, const std::vector<float> &x,
                      int64_t heads, int64_t seq, bool isQ) {
    std::vector<float> y(x.size());
    for (int64_t b = 0; b < from.batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < seq; ++i)
          for (int64_t c = 0; c < from.headDim; ++c) {
            int64_t src = isQ ? from.qOffset(b, h, i) : from.kvOffset(b, h, i);
            int64_t dst = isQ ? to.qOffset(b, h, i) : to.kvOffset(b, h, i);
            y[size_t(dst + c)] = x[size_t(src + c)];
          }
    return y;
  };
  std::vector<float> sinks = {0.5f, -1, 2, 0};
  Result a = run(bhsd, q, k, v, sinks);
  Result b = run(bshd, transpose(bhsd, bshd, q, 4, 3, true),
                 transpose(bhsd, bshd, k, 2, 5, false),
                 transpose(bhsd, bshd, v, 2, 5, false), sinks);
  EXPECT_EQ(a.lse, b.lse);
  for (int64_t row = 0; row < bhsd.rows(); ++row) {
    SinkAttentionShape::Row at = bhsd.rowAt(row);
    for (int64_t c = 0; c < 2; ++c)
      EXPECT_EQ(a.o[size_t(bhsd.qOffset(at.batch, at.head, at.i) + c)],
                b.o[size_t(bshd.qOffset(at.batch, at.head, at.i) + c)]);
  }
}

TEST(AttentionReference, VarlenIsEachSequenceAlone) {
  // Sequences of (SQ, SKV) = (2, 3), (0, 2), (3, 1), (1, 4) packed: each
  // row equals the same row of its sequence computed as a BHSD problem of
  // its own; the third has more queries than keys, so its first two rows
  // attend nothing (O = 0, LSE = sink).
  const std::vector<int64_t> lengthsQ = {2, 0, 3, 1}, lengthsKv = {3, 2, 1, 4};
  SinkAttentionShape s = shapeOf(2, 1, 3, 4, 2, 0, 0.9);
  s.batch = 4;
  s.layout = AttentionLayout::Varlen;
  s.cuSeqlensQ = offsetsOf(lengthsQ);
  s.cuSeqlensKv = offsetsOf(lengthsKv);
  ASSERT_TRUE(validate(s).ok()) << validate(s).message();
  EXPECT_EQ(s.tokensQ(), 6);
  EXPECT_EQ(s.rows(), 12);
  EXPECT_EQ(s.qDims(), (std::vector<uint64_t>{6, 2, 2}));
  EXPECT_EQ(s.kvDims(), (std::vector<uint64_t>{10, 1, 2}));
  EXPECT_EQ(s.lseDims(), (std::vector<uint64_t>{2, 6}));
  // LSE row 8 = head 1, token 2 = sequence 2 (the empty one is skipped).
  SinkAttentionShape::Row at = s.rowAt(8);
  EXPECT_EQ(at.batch, 2);
  EXPECT_EQ(at.head, 1);
  EXPECT_EQ(at.i, 0);
  EXPECT_EQ(attendedKeys(s, 2, 0).size(), 0);
  EXPECT_EQ(attendedKeys(s, 2, 2).size(), 1);
  // Pairs: 2+3, 0, 1, 4.
  EXPECT_EQ(attendedPairs(s), 10u);

  std::vector<float> q(s.qElements()), k(s.kvElements()), v(s.kvElements());
  for (size_t e = 0; e < q.size(); ++e)
    q[e] = float(std::sin(0.7 * double(e)));
  for (size_t e = 0; e < k.size(); ++e) {
    k[e] = float(std::cos(1.3 * double(e)));
    v[e] = float(e % 5) - 2;
  }
  std::vector<float> sinks = {0.25f, 1.5f};
  Result all = run(s, q, k, v, sinks);
  for (int64_t b = 0; b < s.batch; ++b) {
    if (lengthsQ[size_t(b)] == 0)
      continue;
    SinkAttentionShape one =
        shapeOf(2, 1, lengthsQ[size_t(b)], lengthsKv[size_t(b)], 2, 0, 0.9);
    std::vector<float> q1, k1, v1;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < one.seqQ; ++i)
        for (int64_t c = 0; c < 2; ++c)
          q1.push_back(q[size_t(s.qOffset(b, h, i) + c)]);
    for (int64_t j = 0; j < one.seqKv; ++j)
      for (int64_t c = 0; c < 2; ++c) {
        k1.push_back(k[size_t(s.kvOffset(b, 0, j) + c)]);
        v1.push_back(v[size_t(s.kvOffset(b, 0, j) + c)]);
      }
    Result alone = run(one, q1, k1, v1, sinks);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < one.seqQ; ++i) {
        int64_t row = h * s.tokensQ() + s.cuSeqlensQ[size_t(b)] + i;
        EXPECT_EQ(all.lse[size_t(row)], alone.lse[size_t(h * one.seqQ + i)]);
        for (int64_t c = 0; c < 2; ++c)
          EXPECT_EQ(all.o[size_t(s.qOffset(b, h, i) + c)],
                    alone.o[size_t((h * one.seqQ + i) * 2 + c)]);
      }
  }
  // Rows with no key: O = 0, LSE = the sink.
  EXPECT_EQ(all.lse[size_t(0 * 6 + 2)], 0.25);
  EXPECT_EQ(all.o[size_t(s.qOffset(2, 1, 1))], 0.0);
  EXPECT_EQ(all.lse[size_t(1 * 6 + 3)], 1.5);
}

TEST(AttentionReference, VarlenValidationAndLengths) {
  Expected<std::vector<int64_t>> lengths = parseLengths("100,0,513", "--x");
  ASSERT_TRUE(lengths.ok());
  EXPECT_EQ(*lengths, (std::vector<int64_t>{100, 0, 513}));
  EXPECT_EQ(formatLengths(*lengths), "100,0,513");
  EXPECT_EQ(offsetsOf(*lengths), (std::vector<int64_t>{0, 100, 100, 613}));
  EXPECT_EQ(lengthsOf(offsetsOf(*lengths)), *lengths);
  // Long runs of digits or of other characters are rejected without
  // overflowing (found by the bundle fuzzer under UBSan).
  for (const char *bad : {"", "1,,2", "1,", "-3", "1 2", "12x",
                          "1000000000000", "99999999999999999999999",
                          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx20"})
    EXPECT_EQ(parseLengths(bad, "--x").message(),
              "--x: '" + std::string(bad) +
                  "' is not a comma-separated list of lengths (non-negative "
                  "integers below 10^12)");
  // The list splitter both parsers use keeps empty items (for them to
  // reject).
  EXPECT_EQ(splitCommaList("a,,b"),
            (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(splitCommaList(""), (std::vector<std::string_view>{""}));
  EXPECT_EQ(parseLayout("bshd"), AttentionLayout::BSHD);
  EXPECT_EQ(parseLayout("varlen"), AttentionLayout::Varlen);
  EXPECT_FALSE(parseLayout("thd"));

  SinkAttentionShape s = shapeOf(1, 1, 4, 4, 8);
  s.batch = 2;
  s.layout = AttentionLayout::Varlen;
  s.cuSeqlensQ = {0, 3, 7};
  s.cuSeqlensKv = {0, 4, 8};
  EXPECT_TRUE(validate(s).ok());
  s.cuSeqlensQ = {0, 3};
  EXPECT_EQ(validate(s).message(),
            "cu_seqlens_q: has 2 offsets; 2 sequences need 3");
  s.cuSeqlensQ = {1, 3, 7};
  EXPECT_EQ(validate(s).message(), "cu_seqlens_q: starts at 1, not 0");
  s.cuSeqlensQ = {0, 3, 2};
  EXPECT_EQ(validate(s).message(),
            "cu_seqlens_q: decreases after sequence 1");
  s.cuSeqlensQ = {0, 3, 7};
  s.cuSeqlensKv = {0, 5, 8};
  EXPECT_EQ(validate(s).message(),
            "cu_seqlens_kv: sequence 0 has length 5 > seq_kv 4");
  s.layout = AttentionLayout::BSHD;
  EXPECT_EQ(validate(s).message(),
            "sequence offsets need the varlen layout, not bshd");
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

namespace {

/// Central differences of sinkAttentionLoss against every input element,
/// with the perturbation actually applied (q + eps rounded to float).
void expectGradientsMatchFiniteDifferences(const SinkAttentionShape &s,
                                           uint64_t seed) {
  auto fill = [&](size_t n, double scale, uint64_t stream) {
    std::vector<float> x(n);
    for (size_t e = 0; e < n; ++e)
      x[e] = float(scale * std::sin(1.7 * double(e) + 0.37 * double(stream) +
                                    double(seed)));
    return x;
  };
  std::vector<float> q = fill(s.qElements(), 1.2, 1), k = fill(s.kvElements(), 1.1, 2),
                     v = fill(s.kvElements(), 1.0, 3), dO = fill(s.qElements(), 1.0, 4),
                     sinks = fill(size_t(s.heads), 1.5, 5);
  SinkAttentionGradients g;
  Status st = sinkAttentionBackward(s, q, k, v, sinks, dO, g);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<double> sinks64(sinks.begin(), sinks.end());
  auto loss = [&]() {
    double value = 0;
    Status status = sinkAttentionLoss(s, q, k, v, sinks64, dO, value);
    EXPECT_TRUE(status.ok()) << status.message();
    return value;
  };
  double largest = 0;
  auto check = [&](const char *name, std::vector<float> &x,
                   const std::vector<double> &grad) {
    ASSERT_EQ(grad.size(), x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      float original = x[e];
      float up = float(double(original) + 1e-3), down = float(double(original) - 1e-3);
      x[e] = up;
      double lUp = loss();
      x[e] = down;
      double lDown = loss();
      x[e] = original;
      double fd = (lUp - lDown) / (double(up) - double(down));
      largest = std::max(largest, std::fabs(fd));
      EXPECT_NEAR(grad[e], fd, 1e-5 + 1e-4 * std::fabs(fd)) << name << "[" << e << "]";
    }
  };
  check("dq", q, g.dq);
  check("dk", k, g.dk);
  check("dv", v, g.dv);
  for (int64_t h = 0; h < s.heads; ++h) {
    double original = sinks64[size_t(h)];
    sinks64[size_t(h)] = original + 1e-4;
    double lUp = loss();
    sinks64[size_t(h)] = original - 1e-4;
    double lDown = loss();
    sinks64[size_t(h)] = original;
    double fd = (lUp - lDown) / 2e-4;
    EXPECT_NEAR(g.dsinks[size_t(h)], fd, 1e-7 + 1e-5 * std::fabs(fd))
        << "dsinks[" << h << "]";
    EXPECT_GT(std::fabs(g.dsinks[size_t(h)]), 1e-3) << "a sink that matters";
  }
  // Not vacuous: the gradients are far from zero.
  EXPECT_GT(largest, 0.05);
}

TEST(AttentionReferenceBackward, MatchesFiniteDifferences) {
  // GQA 4:2, a past (SQ < SKV), D 3.
  SinkAttentionShape gqa = shapeOf(4, 2, 3, 5, 3, 0, 0.6);
  expectGradientsMatchFiniteDifferences(gqa, 1);
  // Window 2, two batches, BSHD.
  SinkAttentionShape window = shapeOf(2, 1, 4, 4, 2, 2, 0.8);
  window.batch = 2;
  window.layout = AttentionLayout::BSHD;
  expectGradientsMatchFiniteDifferences(window, 2);
  // More queries than keys: the first rows see only the sink.
  expectGradientsMatchFiniteDifferences(shapeOf(2, 2, 4, 2, 2, 0, 0.9), 3);
  // Varlen with an empty sequence.
  SinkAttentionShape varlen = shapeOf(2, 1, 3, 4, 2, 0, 0.7);
  varlen.batch = 3;
  varlen.layout = AttentionLayout::Varlen;
  varlen.cuSeqlensQ = offsetsOf({2, 0, 3});
  varlen.cuSeqlensKv = offsetsOf({4, 1, 3});
  expectGradientsMatchFiniteDifferences(varlen, 4);
  // Without the causal mask, more queries than keys, GQA.
  SinkAttentionShape full = shapeOf(4, 2, 4, 3, 2, 0, 0.7);
  full.causal = false;
  expectGradientsMatchFiniteDifferences(full, 6);
}

TEST(AttentionReferenceBackward, InfiniteSinkOnRowsWithoutKeys) {
  // Three queries, one key: rows 0 and 1 sit before the key. With a -inf
  // sink they see nothing: O = 0, LSE = -inf, and no NaN anywhere.
  SinkAttentionShape s = shapeOf(1, 1, 3, 1, 1, 0, 1.0);
  Result r = run(s, {1, 2, 3}, {0.5f}, {4}, {-INFINITY});
  EXPECT_EQ(r.o[0], 0.0);
  EXPECT_EQ(r.lse[0], -INFINITY);
  EXPECT_EQ(r.o[2], 4.0); // the last row: its one key takes everything
  SinkAttentionGradients g;
  ASSERT_TRUE(sinkAttentionBackward(s, {1, 2, 3}, {0.5f}, {4}, {-INFINITY},
                                    {1, 1, 1}, g).ok());
  EXPECT_EQ(g.dsinks[0], 0.0);
  for (const std::vector<double> *x : {&g.dq, &g.dk, &g.dv})
    for (double value : *x)
      EXPECT_TRUE(std::isfinite(value));
  EXPECT_EQ(g.dv[0], 1.0); // row 2's P = 1 times its dO
}

TEST(AttentionReference, VarlenNeedsTokens) {
  SinkAttentionShape s = shapeOf(1, 1, 4, 4, 8);
  s.batch = 2;
  s.layout = AttentionLayout::Varlen;
  s.cuSeqlensQ = {0, 0, 0};
  s.cuSeqlensKv = {0, 4, 8};
  EXPECT_EQ(validate(s).message(),
            "cu_seqlens_q: no tokens at all (every sequence is empty)");
  s.cuSeqlensQ = {0, 3, 7};
  s.cuSeqlensKv = {0, 0, 0};
  EXPECT_EQ(validate(s).message(),
            "cu_seqlens_kv: no tokens at all (every sequence is empty)");
}

TEST(AttentionReferenceBackward, SinkGradientByHand) {
  // One row, one key with value v, score 0, sink t: P = e^0/(e^t + 1),
  // P_sink = e^t/(e^t + 1), O = P v, D = dO O, dsink = -P_sink D.
  SinkAttentionShape s = shapeOf(1, 1, 1, 1, 1, 0, 1.0);
  SinkAttentionGradients g;
  ASSERT_TRUE(sinkAttentionBackward(s, {0}, {0}, {2}, {0.5f}, {3}, g).ok());
  double pSink = std::exp(0.5) / (std::exp(0.5) + 1), p = 1 - pSink;
  EXPECT_NEAR(g.dsinks[0], -pSink * 3 * p * 2, 1e-15);
  EXPECT_NEAR(g.dv[0], p * 3, 1e-15);
  std::vector<double> sinks = {0.5};
  double loss = 0;
  ASSERT_TRUE(sinkAttentionLoss(s, {0}, {0}, {2}, sinks, {3}, loss).ok());
  EXPECT_NEAR(loss, p * 2 * 3, 1e-15);
  EXPECT_EQ(sinkAttentionBackward(s, {0}, {0}, {2}, {0.5f}, {3, 4}, g).message(),
            "do has 2 elements; the shape needs 1");
}

TEST(AttentionReferenceBackward, StoredOutputGivesDeltaForDsOnly) {
  // The same row with a stored o = 1.25 (the exact O is P v = 2p): dS =
  // P (dO v - dO o) = p (6 - 3.75) moves dq and dk; dv has no delta and
  // dsink keeps the exact D = dO O = 6p.
  SinkAttentionShape s = shapeOf(1, 1, 1, 1, 1, 0, 1.0);
  SinkAttentionGradients g;
  std::vector<float> q = {0.5f}, k = {-1.0f}, stored = {1.25f};
  ASSERT_TRUE(sinkAttentionBackward(s, q, k, {2}, {0.5f}, {3}, g, &stored).ok());
  // Score -0.5: P = e^-0.5 / (e^-0.5 + e^0.5).
  double p = std::exp(-0.5) / (std::exp(-0.5) + std::exp(0.5)), pSink = 1 - p;
  EXPECT_NEAR(g.dq[0], p * (6 - 3.75) * -1.0, 1e-15);
  EXPECT_NEAR(g.dk[0], p * (6 - 3.75) * 0.5, 1e-15);
  EXPECT_NEAR(g.dv[0], p * 3, 1e-15);
  EXPECT_NEAR(g.dsinks[0], -pSink * 3 * p * 2, 1e-15);
  stored.push_back(0);
  EXPECT_EQ(sinkAttentionBackward(s, q, k, {2}, {0.5f}, {3}, g, &stored).message(),
            "o has 2 elements; the shape needs 1");
}


/// The backward of single rows and keys (what the runner's check samples
/// at scale) against the whole backward, element by element, with and
/// without a stored O.
void expectRowsAndKeysMatchTheWholeBackward(const SinkAttentionShape &s,
                                            uint64_t seed) {
  std::vector<float> q = randomNormal(s.qElements(), seed, 0, 1.5),
                     k = randomNormal(s.kvElements(), seed + 1, 0, 1.5),
                     v = randomUniform(s.kvElements(), seed + 2),
                     dO = randomUniform(s.qElements(), seed + 3),
                     stored = randomUniform(s.qElements(), seed + 4),
                     sinks = randomUniform(size_t(s.heads), seed + 5, -1, 3);
  sinks[0] = -INFINITY; // a head without a sink
  for (const std::vector<float> *storedO : {(const std::vector<float> *)nullptr,
                                            (const std::vector<float> *)&stored}) {
    SinkAttentionGradients whole;
    Status st = sinkAttentionBackward(s, q, k, v, sinks, dO, whole, storedO);
    ASSERT_TRUE(st.ok()) << st.message();
    const float *o = storedO ? storedO->data() : nullptr;
    std::vector<SinkRowStatistics> statistics(size_t(s.rows()));
    std::vector<double> dsinks(size_t(s.heads), 0.0);
    for (int64_t row = 0; row < s.rows(); ++row) {
      statistics[size_t(row)] = sinkAttentionRowStatistics(
          s, q.data(), k.data(), v.data(), sinks.data(), dO.data(), o, row);
      SinkAttentionShape::Row at = s.rowAt(row);
      EXPECT_EQ(s.rowIndex(at.batch, at.head, at.i), row);
      dsinks[size_t(at.head)] +=
          sinkAttentionDsinkTerm(sinks[size_t(at.head)], statistics[size_t(row)]);
      std::vector<double> dq(size_t(s.headDim));
      sinkAttentionDqRow(s, q.data(), k.data(), v.data(), dO.data(), row,
                         statistics[size_t(row)], dq.data());
      size_t offset = size_t(s.qOffset(at.batch, at.head, at.i));
      for (int64_t c = 0; c < s.headDim; ++c)
        EXPECT_NEAR(dq[size_t(c)], whole.dq[offset + size_t(c)],
                    1e-12 + 1e-12 * std::fabs(whole.dq[offset + size_t(c)]))
            << "dq row " << row;
    }
    for (int64_t h = 0; h < s.heads; ++h)
      EXPECT_NEAR(dsinks[size_t(h)], whole.dsinks[size_t(h)], 1e-12);
    double largest = 0;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t hk = 0; hk < s.kvHeads; ++hk)
        for (int64_t j = 0; j < s.seqKvOf(b); ++j) {
          std::vector<double> dk(size_t(s.headDim)), dv(size_t(s.headDim));
          sinkAttentionDkvRow(
              s, q.data(), k.data(), v.data(), dO.data(), b, hk, j,
              [&](int64_t row) -> const SinkRowStatistics & {
                return statistics[size_t(row)];
              },
              dk.data(), dv.data());
          size_t offset = size_t(s.kvOffset(b, hk, j));
          for (int64_t c = 0; c < s.headDim; ++c) {
            double wk = whole.dk[offset + size_t(c)], wv = whole.dv[offset + size_t(c)];
            EXPECT_NEAR(dk[size_t(c)], wk, 1e-12 + 1e-12 * std::fabs(wk))
                << "dk of key " << j << " (batch " << b << ", kv head " << hk << ")";
            EXPECT_NEAR(dv[size_t(c)], wv, 1e-12 + 1e-12 * std::fabs(wv))
                << "dv of key " << j << " (batch " << b << ", kv head " << hk << ")";
            largest = std::max(largest, std::fabs(wk));
          }
        }
    EXPECT_GT(largest, 1e-2) << "gradients far from zero";
  }
}

TEST(AttentionReferenceBackward, RowsAndKeysMatchTheWholeBackward) {
  // GQA 4:2 with a past (SQ < SKV).
  expectRowsAndKeysMatchTheWholeBackward(shapeOf(4, 2, 20, 33, 8, 0, 0.35), 11);
  // Window 5 with a past, two batches, BSHD.
  SinkAttentionShape window = shapeOf(2, 1, 17, 23, 8, 5, 0.35);
  window.batch = 2;
  window.layout = AttentionLayout::BSHD;
  expectRowsAndKeysMatchTheWholeBackward(window, 12);
  // More queries than keys: the first rows see only the sink.
  expectRowsAndKeysMatchTheWholeBackward(shapeOf(2, 2, 30, 12, 8, 4, 0.35), 13);
  // Varlen with an empty sequence and one without keys.
  SinkAttentionShape varlen = shapeOf(4, 2, 19, 21, 8, 0, 0.35);
  varlen.batch = 4;
  varlen.layout = AttentionLayout::Varlen;
  varlen.cuSeqlensQ = offsetsOf({7, 0, 19, 3});
  varlen.cuSeqlensKv = offsetsOf({21, 5, 16, 0});
  expectRowsAndKeysMatchTheWholeBackward(varlen, 14);
}

} // namespace
