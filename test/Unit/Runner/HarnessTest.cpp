//===- HarnessTest.cpp - The host side of the runner's attention checks ---===//
//
// What sink-fwd's and sink-bwd's checks decide from the downloaded outputs,
// on synthetic outputs: a right answer passes, and zeros, NaN (unwritten),
// a forgotten sink, an off-by-one window, a wrong gradient element or a
// missing GQA share fail; a GPU reference that disagrees with the float64
// CPU reference fails the check with a message saying so. The inputs come
// from the same generator prepare() uses.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"
#include "Options.h"

#include "SinkAttn/Runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "text: " << (haystack)

rt::SinkAttentionShape shapeOf(int64_t batch, int64_t heads, int64_t kvHeads,
                               int64_t seqQ, int64_t seqKv, int64_t headDim,
                               int64_t window) {
  rt::SinkAttentionShape s;
  s.batch = batch;
  s.heads = heads;
  s.kvHeads = kvHeads;
  s.seqQ = seqQ;
  s.seqKv = seqKv;
  s.headDim = headDim;
  s.window = window;
  s.scale = 1.0 / std::sqrt(double(headDim));
  return s;
}

/// Inputs as prepare() makes them for a bf16 bundle.
struct Problem {
  rt::SinkAttentionShape shape;
  std::vector<float> q, k, v, sinks;
  SinkFwdInputs inputs() const { return {q, k, v, sinks}; }
};

Problem problem(const rt::SinkAttentionShape &shape, uint64_t seed) {
  auto bf16 = [](std::vector<float> values) {
    return rt::fromBf16(rt::toBf16(values));
  };
  Problem p;
  p.shape = shape;
  p.q = bf16(randomInput("sink-fwd", "q", shape.qElements(), seed));
  p.k = bf16(randomInput("sink-fwd", "k", shape.kvElements(), seed + 1));
  p.v = bf16(randomInput("sink-fwd", "v", shape.kvElements(), seed + 2));
  p.sinks = randomInput("sink-fwd", "sinks", size_t(shape.heads), seed + 3);
  return p;
}

/// The float64 answer for `shape` (which may differ from the problem's, to
/// fake a kernel with a wrong mask), rounded to float.
void answer(const Problem &p, const rt::SinkAttentionShape &shape,
            const std::vector<float> &sinks, std::vector<float> &o,
            std::vector<float> &lse) {
  std::vector<double> o64, lse64;
  rt::Status st = rt::sinkAttentionForward(shape, p.q, p.k, p.v, sinks, o64, lse64);
  ASSERT_TRUE(st.ok()) << st.message();
  o.assign(o64.begin(), o64.end());
  lse.assign(lse64.begin(), lse64.end());
}

TEST(SinkFwdCheck, InputsAreNotTrivial) {
  std::vector<float> q = randomInput("sink-fwd", "q", 4096, 1);
  std::vector<float> sinks = randomInput("sink-fwd", "sinks", 4096, 2);
  double q2 = 0, sMin = 10, sMax = -10;
  for (float x : q)
    q2 += double(x) * x;
  for (float x : sinks) {
    sMin = std::min<double>(sMin, x);
    sMax = std::max<double>(sMax, x);
  }
  EXPECT_NEAR(std::sqrt(q2 / 4096), 1.5, 0.1);
  EXPECT_GE(sMin, -1.0);
  EXPECT_LT(sMax, 3.0);
  EXPECT_GT(sMax - sMin, 3.5);
  // Other seeds, other data.
  EXPECT_NE(randomInput("sink-fwd", "q", 16, 1), randomInput("sink-fwd", "q", 16, 2));
  // Other kernels keep uniform [-1, 1].
  for (float x : randomInput("gemm", "a", 1000, 3))
    EXPECT_LE(std::fabs(x), 1.0f);
}

TEST(SinkFwdCheck, RightAnswerPasses) {
  Problem p = problem(shapeOf(2, 4, 2, 96, 160, 64, 0), 7);
  std::vector<float> o, lse;
  answer(p, p.shape, p.sinks, o, lse);
  CheckReport r = compareSinkFwd(p.shape, p.inputs(), o, lse, o, lse, 7);
  EXPECT_TRUE(r.passed) << r.criterion;
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.nonFinite, 0u);
  EXPECT_EQ(r.checked, o.size() + lse.size());
  EXPECT_EQ(r.maxAbs, 0.0);
  EXPECT_CONTAINS(r.criterion, "768 of 768 rows");
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_CONTAINS(r.notes[1], "0 of 49920 values outside 1e-4");

  // Errors the size of bf16 rounding pass.
  std::vector<float> rounded = rt::fromBf16(rt::toBf16(o));
  r = compareSinkFwd(p.shape, p.inputs(), rounded, lse, o, lse, 7);
  EXPECT_TRUE(r.passed);
  EXPECT_GT(r.maxAbs, 0.0);
  EXPECT_LT(r.relL2, 1e-2);
}

TEST(SinkFwdCheck, NegativeInfinitySinkRowsWithoutKeys) {
  // More queries than keys: the first 32 rows of each head see no key, and
  // head 0 has no sink (-inf), so its first rows have LSE = -inf, O = 0.
  Problem p = problem(shapeOf(1, 2, 1, 96, 64, 64, 0), 9);
  p.sinks[0] = -INFINITY;
  std::vector<float> o, lse;
  answer(p, p.shape, p.sinks, o, lse);
  ASSERT_TRUE(std::isinf(lse[0]) && lse[0] < 0);
  ASSERT_EQ(o[0], 0.0f);
  // A kernel that writes -inf there passes (the GPU and CPU references
  // agree on it); one that writes anything else, NaN included, fails.
  CheckReport r = compareSinkFwd(p.shape, p.inputs(), o, lse, o, lse, 9);
  EXPECT_TRUE(r.passed) << r.criterion;
  EXPECT_EQ(r.checked, o.size() + lse.size());
  for (float wrong : {0.0f, -1e30f, NAN, INFINITY}) {
    std::vector<float> bad = lse;
    bad[0] = wrong;
    r = compareSinkFwd(p.shape, p.inputs(), o, bad, o, lse, 9);
    EXPECT_FALSE(r.passed) << wrong;
    EXPECT_GE(r.mismatches + r.nonFinite, 1u) << wrong;
  }
  // And a finite reference is not matched by -inf.
  std::vector<float> bad = lse;
  bad[size_t(p.shape.seqQ) - 1] = -INFINITY;
  EXPECT_FALSE(compareSinkFwd(p.shape, p.inputs(), o, bad, o, lse, 9).passed);
}

TEST(SinkFwdCheck, WrongAnswersFail) {
  Problem p = problem(shapeOf(1, 4, 1, 256, 256, 64, 32), 8);
  std::vector<float> o, lse;
  answer(p, p.shape, p.sinks, o, lse);
  auto check = [&](const std::vector<float> &kernelO,
                   const std::vector<float> &kernelLse) {
    return compareSinkFwd(p.shape, p.inputs(), kernelO, kernelLse, o, lse, 8);
  };

  // Zeros: the outputs are far from 0 for most elements.
  CheckReport r = check(std::vector<float>(o.size(), 0.f), lse);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.mismatches, o.size() / 2);
  r = check(o, std::vector<float>(lse.size(), 0.f));
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.mismatches, lse.size() / 2);

  // An element left unwritten (NaN poison).
  std::vector<float> holey = o;
  holey[12345] = NAN;
  r = check(holey, lse);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.nonFinite, 1u);
  EXPECT_EQ(r.mismatches, 0u);

  // A kernel that forgets the sink.
  std::vector<float> noSinkO, noSinkLse;
  answer(p, p.shape, std::vector<float>(p.sinks.size(), -1e30f), noSinkO,
         noSinkLse);
  r = check(noSinkO, noSinkLse);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.mismatches, 100u);

  // A window one key too wide.
  rt::SinkAttentionShape wide = p.shape;
  wide.window += 1;
  std::vector<float> wideO, wideLse;
  answer(p, wide, p.sinks, wideO, wideLse);
  r = check(wideO, wideLse);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.mismatches, 100u);
}

/// Rows of 128+ keys under a large fixed sink (`--sinks 6`): the sink's
/// share of a long row's softmax denominator is under 1%, which moves O
/// less than its bf16 bound but LSE by ~8e-3.
Problem longRowsWithLargeSink() {
  // 256 queries after a past of 3840 keys: every row attends 3841+ keys.
  Problem p = problem(shapeOf(1, 2, 1, 256, 4096, 64, 0), 21);
  p.sinks.assign(p.sinks.size(), 6.f);
  return p;
}

TEST(SinkFwdCheck, SinkIgnoredPastTheFirstKeysFails) {
  Problem p = longRowsWithLargeSink();
  std::vector<float> o, lse;
  answer(p, p.shape, p.sinks, o, lse);
  ASSERT_TRUE(compareSinkFwd(p.shape, p.inputs(), o, lse, o, lse, 5).passed);
  // A kernel whose sink drops out of rows past their first 128 keys: here
  // every row, whose outputs are then those without a sink.
  std::vector<float> brokenO, brokenLse;
  answer(p, p.shape, std::vector<float>(p.sinks.size(), -INFINITY), brokenO,
         brokenLse);
  for (int64_t row = 0; row < p.shape.rows(); ++row) {
    rt::SinkAttentionShape::Row at = p.shape.rowAt(row);
    ASSERT_GT(rt::attendedKeys(p.shape, at.batch, at.i).size(), 128);
  }
  CheckReport r = compareSinkFwd(p.shape, p.inputs(), brokenO, brokenLse, o, lse, 5);
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.mismatches, uint64_t(p.shape.rows()) / 2);
  // Its O alone is within O's bound: only the LSE comparison can see it.
  EXPECT_TRUE(compareSinkFwd(p.shape, p.inputs(), brokenO, lse, o, lse, 5).passed);
}

TEST(SinkFwdCheck, LseOfADenominatorFivePercentOffFails) {
  Problem p = longRowsWithLargeSink();
  std::vector<float> o, lse;
  answer(p, p.shape, p.sinks, o, lse);
  std::vector<float> off = lse;
  for (float &x : off)
    x += float(std::log(1.05));
  CheckReport r = compareSinkFwd(p.shape, p.inputs(), o, off, o, lse, 5);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, lse.size());
  // fp32 rounding of the LSE (what two correct fp32 kernels differ by) passes.
  std::vector<float> nudged = lse;
  for (float &x : nudged)
    x = std::nextafter(std::nextafter(x, INFINITY), INFINITY);
  EXPECT_TRUE(compareSinkFwd(p.shape, p.inputs(), o, nudged, o, lse, 5).passed);
}

TEST(SinkFwdCheck, ReferenceIsCrossChecked) {
  Problem p = problem(shapeOf(1, 2, 2, 64, 64, 128, 0), 9);
  std::vector<float> o, lse;
  answer(p, p.shape, p.sinks, o, lse);

  // A GPU reference off by 1e-3 in one element: the kernel agrees with the
  // true answer, but the reference is wrong, and the check says so.
  std::vector<float> badRef = o;
  badRef[77 * 128 + 5] += 1e-3f;
  CheckReport r = compareSinkFwd(p.shape, p.inputs(), o, lse, badRef, lse, 9);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 0u);
  ASSERT_EQ(r.notes.size(), 3u);
  EXPECT_CONTAINS(r.notes[2], "FAIL: the GPU reference kernel disagrees with "
                              "the float64 CPU reference (1 values, worst at "
                              "row 77)");

  // A reference that left rows unwritten.
  std::vector<float> holeyLse = lse;
  holeyLse[3] = NAN;
  r = compareSinkFwd(p.shape, p.inputs(), o, lse, o, holeyLse, 9);
  EXPECT_FALSE(r.passed);
  EXPECT_CONTAINS(r.notes.back(), "the reference, not necessarily the kernel");
  bool nonFiniteNote = false;
  for (const std::string &note : r.notes)
    nonFiniteNote |= note.find("produced 1 non-finite outputs") != std::string::npos;
  EXPECT_TRUE(nonFiniteNote);

  // Large problems cross-check sampled rows, chosen by the seed.
  r = compareSinkFwd(p.shape, p.inputs(), o, lse, o, lse, 9, /*work=*/0);
  EXPECT_TRUE(r.passed);
  EXPECT_CONTAINS(r.criterion, "128 of 128 rows");
  Problem big = problem(shapeOf(1, 8, 2, 128, 128, 64, 0), 10);
  std::vector<float> bigO, bigLse;
  answer(big, big.shape, big.sinks, bigO, bigLse);
  r = compareSinkFwd(big.shape, big.inputs(), bigO, bigLse, bigO, bigLse, 10, 0);
  EXPECT_TRUE(r.passed);
  EXPECT_CONTAINS(r.criterion, "512 of 1024 rows");
}

//===----------------------------------------------------------------------===//
// Bundle config -> shape
//===----------------------------------------------------------------------===//

rt::Bundle sinkFwdBundle() {
  rt::Bundle b;
  b.kernel = "sink-fwd";
  b.entry = "sink_fwd";
  b.config = {{"batch", int64_t(2)},   {"heads", int64_t(8)},
              {"kv_heads", int64_t(2)}, {"seq_q", int64_t(64)},
              {"seq_kv", int64_t(128)}, {"head_dim", int64_t(64)},
              {"window", int64_t(16)},  {"scale", 0.125},
              {"dtype", std::string("bf16")}};
  auto buffer = [](const char *name, rt::DType dtype,
                   std::vector<uint64_t> shape, rt::BufferRole role) {
    rt::BundleParam p;
    p.name = name;
    p.kind = rt::ParamKind::Buffer;
    p.dtype = dtype;
    p.shape = std::move(shape);
    p.role = role;
    return p;
  };
  using rt::BufferRole;
  using rt::DType;
  b.params = {buffer("q", DType::BF16, {2, 8, 64, 64}, BufferRole::Input),
              buffer("k", DType::BF16, {2, 2, 128, 64}, BufferRole::Input),
              buffer("v", DType::BF16, {2, 2, 128, 64}, BufferRole::Input),
              buffer("sinks", DType::F32, {8}, BufferRole::Input),
              buffer("o", DType::BF16, {2, 8, 64, 64}, BufferRole::Output),
              buffer("lse", DType::F32, {2, 8, 64}, BufferRole::Output)};
  return b;
}

/// A backward problem: the forward's inputs, an upstream gradient dO
/// (bf16), the forward's exact O (float64, as floats) and the O a kernel
/// stores (rounded to bf16).
struct BwdProblem {
  Problem p;
  std::vector<float> dO, exactO, storedO;
  SinkBwdInputs inputs() const {
    return {p.q, p.k, p.v, p.sinks, dO, storedO};
  }
};

BwdProblem bwdProblem(const rt::SinkAttentionShape &shape, uint64_t seed,
                      uint64_t dOSeed) {
  BwdProblem b;
  b.p = problem(shape, seed);
  b.dO = rt::fromBf16(
      rt::toBf16(randomInput("sink-bwd", "do", shape.qElements(), dOSeed)));
  std::vector<double> o, lse;
  rt::Status st =
      rt::sinkAttentionForward(shape, b.p.q, b.p.k, b.p.v, b.p.sinks, o, lse);
  EXPECT_TRUE(st.ok()) << st.message();
  b.exactO.assign(o.begin(), o.end());
  b.storedO = rt::fromBf16(rt::toBf16(b.exactO));
  return b;
}

/// The float64 gradients of `b` as floats, dS from the stored forward
/// output `o`, with the exact O as the reference reports it.
SinkBwdGradients gradients(const BwdProblem &b, const std::vector<float> &o) {
  const Problem &p = b.p;
  rt::SinkAttentionGradients g;
  rt::Status st =
      rt::sinkAttentionBackward(p.shape, p.q, p.k, p.v, p.sinks, b.dO, g, &o);
  EXPECT_TRUE(st.ok()) << st.message();
  SinkBwdGradients out;
  out.dq.assign(g.dq.begin(), g.dq.end());
  out.dk.assign(g.dk.begin(), g.dk.end());
  out.dv.assign(g.dv.begin(), g.dv.end());
  out.dsinks.assign(g.dsinks.begin(), g.dsinks.end());
  out.o = b.exactO;
  return out;
}

TEST(SinkBwdCheck, RightAnswerPassesAndWrongOnesFail) {
  // GQA 2:1 with a window: small enough for the float64 cross-check and
  // the finite differences of dsinks.
  BwdProblem b = bwdProblem(shapeOf(1, 2, 1, 24, 24, 64, 9), 31, 35);
  const Problem &p = b.p;
  SinkBwdInputs in = b.inputs();
  // The specification's gradients: dS from the stored O, dsinks exact.
  SinkBwdGradients exact = gradients(b, b.storedO);
  rt::Expected<CheckReport> r = compareSinkBwd(p.shape, in, exact, exact, 7);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->passed) << r->notes.back();
  EXPECT_EQ(r->mismatches, 0u);
  std::string notes;
  for (const std::string &note : r->notes)
    notes += note + "\n";
  EXPECT_CONTAINS(notes, "0 of 2 finite-sink heads outside tolerance");
  EXPECT_CONTAINS(notes, "every gradient element: max-abs");
  EXPECT_CONTAINS(notes, ", 0 outside 2e-2 * (|exact| + max|exact|)");
  EXPECT_CONTAINS(notes, "reference's fp32 O: max-abs");

  // bf16-rounded gradients (what the kernels store) still pass.
  SinkBwdGradients rounded = exact;
  for (std::vector<float> *g : {&rounded.dq, &rounded.dk, &rounded.dv})
    *g = rt::fromBf16(rt::toBf16(*g));
  r = compareSinkBwd(p.shape, in, rounded, exact, 7);
  EXPECT_TRUE(r->passed);

  // One wrong element of dK, a NaN (unwritten) dQ element, dV without the
  // GQA sum's second head (half of it), a dsink without its sign: each fails.
  SinkBwdGradients wrong = exact;
  wrong.dk[17] += 0.5f;
  r = compareSinkBwd(p.shape, in, wrong, exact, 7);
  EXPECT_FALSE(r->passed);
  EXPECT_EQ(r->mismatches, 1u);
  wrong = exact;
  wrong.dq[3] = NAN;
  r = compareSinkBwd(p.shape, in, wrong, exact, 7);
  EXPECT_FALSE(r->passed);
  EXPECT_EQ(r->nonFinite, 1u);
  wrong = exact;
  for (float &x : wrong.dv)
    x *= 0.5f;
  r = compareSinkBwd(p.shape, in, wrong, exact, 7);
  EXPECT_FALSE(r->passed);
  wrong = exact;
  for (float &x : wrong.dsinks)
    x = -x;
  r = compareSinkBwd(p.shape, in, wrong, exact, 7);
  EXPECT_FALSE(r->passed);

  // A reference that disagrees with the float64 backward fails the check
  // even when the kernel agrees with it.
  SinkBwdGradients badRef = exact;
  badRef.dk[5] += 0.1f;
  r = compareSinkBwd(p.shape, in, badRef, badRef, 7);
  EXPECT_FALSE(r->passed);
  EXPECT_CONTAINS(r->notes.back(), "the references disagree");
  // A reference's dsinks that the finite differences contradict: also.
  badRef = exact;
  badRef.dsinks[1] *= 1.1f;
  r = compareSinkBwd(p.shape, in, badRef, badRef, 7, double(1 << 28), 0);
  EXPECT_FALSE(r->passed) << "the float64 cross-check catches it";
  r = compareSinkBwd(p.shape, in, badRef, badRef, 7, 0, double(1 << 22));
  EXPECT_FALSE(r->passed) << "the sampled cross-check sees the kv head's dsinks";

  // A wrong stored O (a forward off by 30%) fools the reference's
  // gradients, which take delta from it as the kernels do, but not the
  // stored O's own check (at any size) nor, on small problems, the
  // comparison with the exact gradient.
  std::vector<float> badO = b.storedO;
  for (float &x : badO)
    x *= 1.3f;
  SinkBwdInputs badIn{p.q, p.k, p.v, p.sinks, b.dO, badO};
  SinkBwdGradients fromBadO = gradients(b, badO);
  auto noteWith = [](const CheckReport &report, const std::string &text) {
    for (const std::string &note : report.notes)
      if (note.find(text) != std::string::npos)
        return true;
    return false;
  };
  r = compareSinkBwd(p.shape, badIn, fromBadO, fromBadO, 7);
  EXPECT_FALSE(r->passed);
  EXPECT_TRUE(noteWith(*r, "off the exact float64 gradient"));
  EXPECT_TRUE(noteWith(*r, "the setup forward's stored O is wrong"));
  r = compareSinkBwd(p.shape, badIn, fromBadO, fromBadO, 7, 0, 0);
  EXPECT_FALSE(r->passed) << "with the sampled float64 backward";
  EXPECT_TRUE(noteWith(*r, "the setup forward's stored O is wrong"));
  // Without the reference's O, the exact gradient at the sampled elements
  // still sees it.
  fromBadO.o.clear();
  r = compareSinkBwd(p.shape, badIn, fromBadO, fromBadO, 7, 0, 0);
  EXPECT_FALSE(r->passed);
  EXPECT_TRUE(noteWith(*r, "off the exact float64 gradient"));

  // Sizes that disagree are an internal error, not a verdict.
  wrong = exact;
  wrong.dv.pop_back();
  EXPECT_FALSE(compareSinkBwd(p.shape, in, wrong, exact, 7).ok());
}

TEST(SinkBwdCheck, SampledFloat64CrossCheckAtScale) {
  // Past the full cross-check's size (forced with a work limit of 0): 1200
  // query rows of 4 heads over 2 kv heads, 300 keys each, a window.
  BwdProblem b = bwdProblem(shapeOf(1, 4, 2, 300, 300, 32, 200), 51, 55);
  const Problem &p = b.p;
  SinkBwdInputs in = b.inputs();
  SinkBwdGradients exact = gradients(b, b.storedO);
  rt::Expected<CheckReport> r = compareSinkBwd(p.shape, in, exact, exact, 3, 0, 0);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->passed);
  std::string notes;
  for (const std::string &note : r->notes)
    notes += note + "\n";
  EXPECT_CONTAINS(notes, " of 1200 dq rows, 256 of 300 dk/dv rows of kv head ");
  EXPECT_CONTAINS(notes, ", 0 outside 2e-2 * (|exact| + max|exact|)");
  EXPECT_CONTAINS(r->criterion, "dk/dv rows of kv head");

  // A reference 1% off in every gradient of a kind: the sampled elements see
  // each (1e-3 bound), whichever rows and kv head the seed picks.
  for (auto member : {&SinkBwdGradients::dq, &SinkBwdGradients::dk,
                      &SinkBwdGradients::dv, &SinkBwdGradients::dsinks}) {
    SinkBwdGradients badRef = exact;
    for (float &x : badRef.*member)
      x *= 1.01f;
    for (uint64_t seed : {1, 2, 3}) {
      r = compareSinkBwd(p.shape, in, badRef, badRef, seed, 0, 0);
      EXPECT_FALSE(r->passed);
      EXPECT_CONTAINS(r->notes.back(), "the references disagree");
    }
  }
  // Kernels and a reference that both drop the sink from P (the gradients
  // of a plain softmax): the float64 backward at the sampled elements sees
  // them, though the GPU comparison cannot.
  rt::SinkAttentionGradients noSink;
  std::vector<float> noSinks(p.sinks.size(), -INFINITY);
  ASSERT_TRUE(rt::sinkAttentionBackward(p.shape, p.q, p.k, p.v, noSinks, b.dO,
                                        noSink, &b.storedO).ok());
  SinkBwdGradients wrong = exact;
  wrong.dq.assign(noSink.dq.begin(), noSink.dq.end());
  wrong.dk.assign(noSink.dk.begin(), noSink.dk.end());
  wrong.dv.assign(noSink.dv.begin(), noSink.dv.end());
  r = compareSinkBwd(p.shape, in, wrong, wrong, 3, 0, 0);
  EXPECT_FALSE(r->passed);
  EXPECT_CONTAINS(r->notes.back(), "the references disagree");
}

TEST(SinkBwdCheck, ZeroedSmallRowsFail) {
  // At S = 200 the last key's dK and dV rows (one query sees that key) are
  // tiny next to the largest rows: zeroing them stays inside the
  // tensor-wide element tolerance, and only the per-row test sees it.
  BwdProblem b = bwdProblem(shapeOf(1, 2, 2, 200, 200, 64, 0), 41, 45);
  const Problem &p = b.p;
  SinkBwdInputs in = b.inputs();
  SinkBwdGradients exact = gradients(b, b.storedO);
  rt::Expected<CheckReport> r = compareSinkBwd(p.shape, in, exact, exact, 7);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(r->passed);
  SinkBwdGradients wrong = exact;
  const size_t d = size_t(p.shape.headDim);
  size_t lastKey = size_t(p.shape.kvOffset(0, 1, p.shape.seqKv - 1));
  for (size_t c = 0; c < d; ++c)
    wrong.dk[lastKey + c] = wrong.dv[lastKey + c] = 0;
  r = compareSinkBwd(p.shape, in, wrong, exact, 7);
  EXPECT_FALSE(r->passed);
  EXPECT_EQ(r->mismatches, 0u) << "the tensor-wide scale cannot see it";
  bool rowNote = false;
  for (const std::string &note : r->notes)
    rowNote = rowNote || note.find("rows of dq/dk/dv are off") != std::string::npos;
  EXPECT_TRUE(rowNote);
}

TEST(SinkLogits, ParsedAndFittedToTheBundle) {
  auto parsed = parseSinkLogits("1.5,-inf,-2");
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0], 1.5f);
  EXPECT_TRUE(std::isinf((*parsed)[1]) && (*parsed)[1] < 0);
  for (const char *bad : {"", "1,", ",1", "nan", "inf", "+inf", "1e50",
                          "-1e50", "1x", "1;2"}) {
    auto rejected = parseSinkLogits(bad);
    ASSERT_FALSE(rejected.ok()) << bad;
    EXPECT_CONTAINS(rejected.status().message(), "is not a sink logit");
  }
  // Finite, but the kernels' sink * log2(e) would overflow f32.
  for (const char *huge : {"3e38", "-2e38"}) {
    auto rejected = parseSinkLogits(huge);
    ASSERT_FALSE(rejected.ok()) << huge;
    EXPECT_CONTAINS(rejected.status().message(), "is out of range");
  }
  EXPECT_TRUE(parseSinkLogits("1e38,-1e38").ok());
  EXPECT_EQ(formatSinkLogits(*parsed), "1.5,-inf,-2");
  rt::Bundle bundle;
  bundle.kernel = "sink-fwd";
  rt::BundleParam sinks;
  sinks.name = "sinks";
  sinks.kind = rt::ParamKind::Buffer;
  sinks.role = rt::BufferRole::Input;
  sinks.dtype = rt::DType::F32;
  sinks.shape = {3};
  bundle.params.push_back(sinks);
  // One value for every head, or one per head.
  auto all = sinkLogitsFor(bundle, {-INFINITY});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  EXPECT_TRUE(std::isinf(all->back()));
  EXPECT_EQ(*sinkLogitsFor(bundle, {1, 2, 3}), (std::vector<float>{1, 2, 3}));
  auto wrongCount = sinkLogitsFor(bundle, {1, 2});
  ASSERT_FALSE(wrongCount.ok());
  EXPECT_CONTAINS(wrongCount.status().message(),
                  "--sinks has 2 values; this bundle has 3 heads");
  bundle.kernel = "gemm";
  bundle.params.clear();
  auto noSinks = sinkLogitsFor(bundle, {1});
  ASSERT_FALSE(noSinks.ok());
  EXPECT_CONTAINS(noSinks.status().message(), "not to this gemm bundle");
}

TEST(SinkFwdShape, FromConfig) {
  rt::Expected<rt::SinkAttentionShape> s = sinkFwdShape(sinkFwdBundle());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->batch, 2);
  EXPECT_EQ(s->heads, 8);
  EXPECT_EQ(s->kvHeads, 2);
  EXPECT_EQ(s->seqQ, 64);
  EXPECT_EQ(s->seqKv, 128);
  EXPECT_EQ(s->headDim, 64);
  EXPECT_EQ(s->window, 16);
  EXPECT_EQ(s->scale, 0.125);
  // Without a scale: 1/sqrt(head_dim).
  rt::Bundle b = sinkFwdBundle();
  b.config.erase("scale");
  EXPECT_EQ(sinkFwdShape(b)->scale, 0.125);
  EXPECT_TRUE(harnessSupports("sink-fwd"));
}

TEST(SinkFwdShape, ContradictionsAreErrors) {
  auto error = [](auto edit) {
    rt::Bundle b = sinkFwdBundle();
    edit(b);
    rt::Expected<rt::SinkAttentionShape> s = sinkFwdShape(b);
    EXPECT_FALSE(s.ok());
    return s.ok() ? std::string() : s.message();
  };
  EXPECT_EQ(error([](rt::Bundle &b) { b.config.erase("seq_kv"); }),
            "sink-fwd bundle: config has no 'seq_kv'");
  EXPECT_EQ(error([](rt::Bundle &b) { b.config["window"] = std::string("no"); }),
            "sink-fwd bundle: config 'window' is not an integer");
  EXPECT_EQ(error([](rt::Bundle &b) { b.config["scale"] = std::string("1/8"); }),
            "sink-fwd bundle: config 'scale' is not a number");
  EXPECT_EQ(error([](rt::Bundle &b) { b.config["kv_heads"] = int64_t(3); }),
            "sink-fwd bundle: kv_heads 3 does not divide heads 8");
  EXPECT_EQ(error([](rt::Bundle &b) { b.params[1].shape[2] = 64; }),
            "sink-fwd bundle: buffer 'k' does not have the shape [2, 2, 128, "
            "64] that the config implies");
  EXPECT_EQ(error([](rt::Bundle &b) { b.params[2].dtype = rt::DType::F16; }),
            "sink-fwd bundle: buffer 'v' has the unsupported dtype f16");
  EXPECT_EQ(error([](rt::Bundle &b) { b.params[5].role = rt::BufferRole::Input; }),
            "sink-fwd bundle: buffer 'lse' should be an output");
  EXPECT_EQ(error([](rt::Bundle &b) { b.params.erase(b.params.begin() + 3); }),
            "sink-fwd bundle: buffer 'sinks' is missing");
}

/// sinkFwdBundle() as a varlen problem: sequences of 40 and 64 query rows
/// (128 and 64 keys), packed.
rt::Bundle varlenBundle() {
  rt::Bundle b = sinkFwdBundle();
  b.config["layout"] = std::string("varlen");
  b.config["seqlens_q"] = std::string("40,64");
  b.config["seqlens_kv"] = std::string("128,64");
  auto find = [&](const char *name) -> rt::BundleParam & {
    for (rt::BundleParam &p : b.params)
      if (p.name == name)
        return p;
    std::abort();
  };
  find("q").shape = find("o").shape = {104, 8, 64};
  find("k").shape = find("v").shape = {192, 2, 64};
  find("lse").shape = {8, 104};
  for (const char *name : {"cu_seqlens_q", "cu_seqlens_kv"}) {
    rt::BundleParam p = find("sinks");
    p.name = name;
    p.dtype = rt::DType::I32;
    p.shape = {3};
    b.params.push_back(p);
  }
  return b;
}

TEST(SinkFwdShape, LayoutsFromConfig) {
  rt::Bundle bshd = sinkFwdBundle();
  bshd.config["layout"] = std::string("bshd");
  EXPECT_EQ(sinkFwdShape(bshd).message(),
            "sink-fwd bundle: buffer 'q' does not have the shape [2, 64, 8, "
            "64] that the config implies");
  bshd.params[0].shape = bshd.params[4].shape = {2, 64, 8, 64};
  bshd.params[1].shape = bshd.params[2].shape = {2, 128, 2, 64};
  rt::Expected<rt::SinkAttentionShape> s = sinkFwdShape(bshd);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->layout, rt::AttentionLayout::BSHD);
  bshd.config["layout"] = std::string("thd");
  EXPECT_EQ(sinkFwdShape(bshd).message(),
            "sink-fwd bundle: unknown layout 'thd' (bhsd, bshd or varlen)");

  s = sinkFwdShape(varlenBundle());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(s->varlen());
  EXPECT_EQ(s->cuSeqlensQ, (std::vector<int64_t>{0, 40, 104}));
  EXPECT_EQ(s->cuSeqlensKv, (std::vector<int64_t>{0, 128, 192}));
  // The offsets the harness uploads come from the config.
  rt::Expected<std::vector<int32_t>> offsets =
      integerInput(varlenBundle(), "cu_seqlens_kv");
  ASSERT_TRUE(offsets.ok()) << offsets.message();
  EXPECT_EQ(*offsets, (std::vector<int32_t>{0, 128, 192}));
  EXPECT_EQ(integerInput(sinkFwdBundle(), "q").message(),
            "the harness cannot fill the integer buffer 'q' of a sink-fwd "
            "bundle");

  auto error = [](auto edit) {
    rt::Bundle b = varlenBundle();
    edit(b);
    rt::Expected<rt::SinkAttentionShape> shape = sinkFwdShape(b);
    EXPECT_FALSE(shape.ok());
    return shape.ok() ? std::string() : shape.message();
  };
  EXPECT_EQ(error([](rt::Bundle &b) { b.config.erase("seqlens_kv"); }),
            "sink-fwd bundle: config has no 'seqlens_kv'");
  EXPECT_EQ(error([](rt::Bundle &b) {
              b.config["seqlens_q"] = std::string("40,x");
            }),
            "sink-fwd bundle: config 'seqlens_q': '40,x' is not a "
            "comma-separated list of lengths (non-negative integers below "
            "10^12)");
  EXPECT_EQ(error([](rt::Bundle &b) {
              b.config["seqlens_q"] = std::string("40,65");
            }),
            "sink-fwd bundle: cu_seqlens_q: sequence 1 has length 65 > seq_q "
            "64");
  EXPECT_EQ(error([](rt::Bundle &b) { b.params.pop_back(); }),
            "sink-fwd bundle: buffer 'cu_seqlens_kv' is missing");
  EXPECT_EQ(error([](rt::Bundle &b) { b.params.back().dtype = rt::DType::F32; }),
            "sink-fwd bundle: buffer 'cu_seqlens_kv' has the unsupported dtype "
            "f32");
}

} // namespace
