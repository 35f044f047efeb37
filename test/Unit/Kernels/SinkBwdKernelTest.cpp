//===- SinkBwdKernelTest.cpp - The backward's kernels and bundle ----------===//
//
// What of sink-bwd can be checked without a GPU: the bundle's launches and
// arguments for each layout and GQA or MHA, that the compiled bundle
// validates (every launched entry in the PTX), and the SIMT kernel that adds
// GQA's dK/dV shares under --dkdv-warpgroups 2, run on the CPU for every
// layout against sums computed here from the layouts' own offsets (the
// one-warpgroup dK/dV kernel adds them itself; test/GPU/sink-bwd.test
// checks that on the GPU).
//
//===----------------------------------------------------------------------===//

#include "../../../lib/Kernels/KernelBuilders.h"
#include "HostEmulation.h"
#include "ReferenceTestSupport.h"

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Float16.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace sinkattn;
using sinkattn::test::configOf;
using sinkattn::test::varlenConfigOf;

namespace {

class SinkBwdKernelTest : public test::KernelContextTest {};

KernelConfig backward(KernelConfig config) {
  config.kernel = "sink-bwd";
  return config;
}

std::vector<std::string> entries(const rt::Bundle &bundle) {
  std::vector<std::string> names;
  for (const rt::BundleLaunch &launch : bundle.launches)
    names.push_back(launch.entry);
  return names;
}

TEST_F(SinkBwdKernelTest, LaunchesPerLayoutAndGroup) {
  // GQA in BHSD: the forward as setup; the dK/dV kernel sums the group's
  // shares itself, through counters that the preprocess kernel zeroes.
  FailureOr<KernelModule> gqa =
      kernels::buildSinkBwd(context, backward(configOf(2, 4, 2, 100, 300, 64, 0)));
  ASSERT_TRUE(succeeded(gqa));
  const rt::Bundle &b = gqa->bundle;
  // Version 4: the dK/dV launch overlaps dQ (below).
  EXPECT_EQ(b.formatVersion, rt::kBundleOverlapFormatVersion);
  EXPECT_TRUE(b.entry.empty());
  // The dQ kernel's last block of each head sums dsinks: no dsinks kernel.
  EXPECT_EQ(entries(b), (std::vector<std::string>{
                            "sink_fwd", "sink_bwd_preprocess", "sink_bwd_dkdv",
                            "sink_bwd_dq"}));
  EXPECT_TRUE(b.launches[0].setup);
  for (size_t i = 1; i < b.launches.size(); ++i)
    EXPECT_FALSE(b.launches[i].setup) << b.launches[i].entry;
  // dK/dV and dQ run together (disjoint outputs, both after preprocess).
  for (size_t i = 0; i < b.launches.size(); ++i)
    EXPECT_EQ(b.launches[i].overlapsNext, i == 2) << b.launches[i].entry;
  // dK/dV and dQ, causal: x the query head within its kv head's group, y
  // the 64-key (64-row) block, z kv head and sequence (blockGrid).
  EXPECT_EQ(b.launches[2].grid, (rt::Dim3{2, 5, 4}));
  EXPECT_EQ(b.launches[3].grid, (rt::Dim3{2, 2, 4}));
  // The dK/dV kernel reads the preprocess kernel's per-block row
  // records [B, H, query blocks, 2, 64] instead of LSE and Delta.
  EXPECT_EQ(b.launches[1].args,
            (std::vector<std::string>{"o", "do", "delta", "lse", "row_stats",
                                      "share_counts", "sink_counts"}));
  EXPECT_EQ(b.launches[2].args,
            (std::vector<std::string>{"q", "k", "v", "do", "row_stats",
                                      "dk_shares", "dv_shares", "dk", "dv",
                                      "share_counts"}));
  // One counter per (sequence, kv head, 64-key block).
  const rt::BundleParam *counts = rt::findParam(b, "share_counts");
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->shape, (std::vector<uint64_t>{2 * 2 * 5}));
  EXPECT_EQ(counts->dtype, rt::DType::I32);
  EXPECT_EQ(rt::findParam(b, "row_stats")->shape,
            (std::vector<uint64_t>{2, 4, 2, 2, 64}));
  // The shares: [H, B * SKV, D] fp32.
  const rt::BundleParam *shares = rt::findParam(b, "dk_shares");
  ASSERT_TRUE(shares);
  EXPECT_EQ(shares->shape, (std::vector<uint64_t>{4, 600, 64}));
  EXPECT_EQ(shares->dtype, rt::DType::F32);
  // dQ also writes dsinks, through one counter per head (which the
  // preprocess kernel zeroes) electing the head's last block.
  EXPECT_EQ(b.launches[3].args,
            (std::vector<std::string>{"q", "k", "v", "do", "lse", "delta",
                                      "sinks", "dq", "sink_terms", "dsinks",
                                      "sink_counts"}));
  const rt::BundleParam *sinkCounts = rt::findParam(b, "sink_counts");
  ASSERT_TRUE(sinkCounts);
  EXPECT_EQ(sinkCounts->shape, (std::vector<uint64_t>{4}));
  EXPECT_EQ(sinkCounts->dtype, rt::DType::I32);

  // The shared-tile kernels (two warpgroups each) keep a kernel of their
  // own for the sum (their barriers would have to leave the producer out),
  // launched after the dQ kernel: one thread per dK element, no counters.
  KernelConfig sharedConfig = backward(configOf(2, 4, 2, 100, 300, 128, 0));
  sharedConfig.dqWarpgroups = 2;
  sharedConfig.dkdvWarpgroups = 2;
  FailureOr<KernelModule> shared = kernels::buildSinkBwd(context, sharedConfig);
  ASSERT_TRUE(succeeded(shared));
  EXPECT_EQ(entries(shared->bundle), (std::vector<std::string>{
                                         "sink_fwd", "sink_bwd_preprocess",
                                         "sink_bwd_dkdv", "sink_bwd_dq",
                                         "sink_bwd_dkdv_sum", "sink_bwd_sinks"}));
  EXPECT_EQ(shared->bundle.launches[4].grid,
            (rt::Dim3{(2 * 2 * 300 * 128 + 255) / 256, 1, 1}));
  EXPECT_FALSE(rt::findParam(shared->bundle, "share_counts"));
  // ... and the dsinks kernel: one warp per head.
  EXPECT_FALSE(rt::findParam(shared->bundle, "sink_counts"));
  EXPECT_EQ(shared->bundle.launches[5].grid, (rt::Dim3{4, 1, 1}));
  EXPECT_EQ(shared->bundle.launches[5].block, (rt::Dim3{32, 1, 1}));
  EXPECT_EQ(shared->bundle.launches[2].args.back(), "dv_shares");
  // dK/dV still runs beside dQ; the sum after both.
  for (size_t i = 0; i < shared->bundle.launches.size(); ++i)
    EXPECT_EQ(shared->bundle.launches[i].overlapsNext, i == 2)
        << shared->bundle.launches[i].entry;
  for (const char *name : {"do", "dq", "dk", "dv", "dsinks", "delta", "sink_terms"})
    EXPECT_TRUE(rt::findParam(b, name)) << name;

  // MHA: dK/dV stored directly, no shares and no sum.
  FailureOr<KernelModule> mha = kernels::buildSinkBwd(
      context, backward(configOf(1, 2, 2, 64, 64, 128, 16)));
  ASSERT_TRUE(succeeded(mha));
  EXPECT_EQ(entries(mha->bundle),
            (std::vector<std::string>{"sink_fwd", "sink_bwd_preprocess",
                                      "sink_bwd_dkdv", "sink_bwd_dq"}));
  EXPECT_FALSE(rt::findParam(mha->bundle, "dk_shares"));
  EXPECT_EQ(mha->bundle.launches[2].args.back(), "dv");
  EXPECT_TRUE(mha->bundle.launches[2].overlapsNext);
  // D 128 loads the row records too.
  EXPECT_EQ(mha->bundle.launches[1].args,
            (std::vector<std::string>{"o", "do", "delta", "lse", "row_stats",
                                      "sink_counts"}));
  EXPECT_EQ(mha->bundle.launches[2].args,
            (std::vector<std::string>{"q", "k", "v", "do", "row_stats", "dk", "dv"}));
  EXPECT_EQ(rt::findParam(mha->bundle, "row_stats")->shape,
            (std::vector<uint64_t>{1, 2, 1, 2, 64}));

  // Varlen: the sequence offsets follow the tile kernels' buffers; the
  // shares are [H, packed kv tokens, D].
  FailureOr<KernelModule> varlen = kernels::buildSinkBwd(
      context, backward(varlenConfigOf(4, 1, {3, 0, 70}, {5, 2, 70}, 64, 0)));
  ASSERT_TRUE(succeeded(varlen));
  for (const rt::BundleLaunch &launch : varlen->bundle.launches) {
    bool tiled = launch.entry == "sink_fwd" ||
                 launch.entry == "sink_bwd_preprocess" ||
                 launch.entry == "sink_bwd_dkdv" || launch.entry == "sink_bwd_dq";
    bool hasOffsets =
        std::find(launch.args.begin(), launch.args.end(), "cu_seqlens_kv") !=
        launch.args.end();
    EXPECT_EQ(hasOffsets, tiled) << launch.entry;
  }
  EXPECT_EQ(rt::findParam(varlen->bundle, "dk_shares")->shape,
            (std::vector<uint64_t>{4, 77, 64}));
}

TEST_F(SinkBwdKernelTest, CompiledBundleValidates) {
  // Every layout compiles to one PTX module declaring each launched entry
  // (validateBundle checks that), with per-launch tensor maps.
  for (KernelConfig config :
       {backward(configOf(1, 4, 1, 100, 200, 64, 32)),
        backward(varlenConfigOf(2, 2, {65, 1}, {65, 129}, 128, 0))}) {
    FailureOr<rt::Bundle> bundle = compileKernel(context, config);
    ASSERT_TRUE(succeeded(bundle));
    rt::Status valid = rt::validateBundle(*bundle);
    EXPECT_TRUE(valid.ok()) << valid.message();
    ASSERT_TRUE(bundle->reference);
    EXPECT_EQ(bundle->reference->entry, rt::kSinkBwdReferenceRowsEntry);
    for (const rt::BundleLaunch &launch : bundle->launches) {
      if (launch.entry == "sink_bwd_dkdv" || launch.entry == "sink_bwd_dq") {
        EXPECT_EQ(test::count(launch.args.back(), launch.entry + "_"), 1u)
            << "the last argument is one of its tensor maps";
      }
    }
  }
  KernelConfig bshd = backward(configOf(2, 4, 2, 77, 77, 64, 0));
  bshd.layout = rt::AttentionLayout::BSHD;
  FailureOr<rt::Bundle> bundle = compileKernel(context, bshd);
  ASSERT_TRUE(succeeded(bundle));
  EXPECT_TRUE(rt::validateBundle(*bundle).ok());
}

TEST_F(SinkBwdKernelTest, AtomicDqLaunchesAndBuffers) {
  // --dq atomic (with its two dK/dV warpgroups): no dQ kernel; preprocess
  // also zeros the fp32 dQ and writes the sink weights, dK/dV adds into dQ
  // and writes per-key sink terms, a convert kernel rounds dQ and sums
  // dsinks (no dsinks kernel). Every layout's bundle validates.
  KernelConfig config = backward(configOf(2, 4, 4, 100, 300, 64, 0));
  config.dq = "atomic";
  config.dkdvWarpgroups = 2;
  FailureOr<KernelModule> atomic = kernels::buildSinkBwd(context, config);
  ASSERT_TRUE(succeeded(atomic));
  const rt::Bundle &b = atomic->bundle;
  EXPECT_EQ(entries(b), (std::vector<std::string>{
                            "sink_fwd", "sink_bwd_preprocess", "sink_bwd_dkdv",
                            "sink_bwd_dq_convert"}));
  EXPECT_EQ(b.launches[1].args,
            (std::vector<std::string>{"o", "do", "delta", "lse", "row_stats",
                                      "sinks", "dq_accum"}));
  EXPECT_EQ(b.launches[2].args,
            (std::vector<std::string>{"q", "k", "v", "do", "row_stats", "dk",
                                      "dv", "dq_accum", "sink_terms"}));
  EXPECT_EQ(b.launches[3].grid, (rt::Dim3{2, 4, 2}));
  EXPECT_EQ(b.launches[3].args,
            (std::vector<std::string>{"dq_accum", "dq", "sink_terms", "dsinks"}));
  // The convert kernel reads the dQ that dK/dV adds to: nothing overlaps.
  for (const rt::BundleLaunch &launch : b.launches)
    EXPECT_FALSE(launch.overlapsNext) << launch.entry;
  EXPECT_EQ(b.formatVersion, rt::kBundleLaunchesFormatVersion);
  EXPECT_EQ(rt::findParam(b, "sink_terms")->shape,
            (std::vector<uint64_t>{2, 4, 300}));
  // The sink weights ride in the row records as their third row.
  EXPECT_EQ(rt::findParam(b, "sink_weights"), nullptr);
  EXPECT_EQ(rt::findParam(b, "row_stats")->shape,
            (std::vector<uint64_t>{2, 4, 2, 3, 64}));
  EXPECT_EQ(rt::findParam(b, "dq_accum")->shape,
            (std::vector<uint64_t>{2, 4, 100, 64}));
  EXPECT_EQ(rt::findParam(b, "dq_accum")->dtype, rt::DType::F32);

  KernelConfig varlen = backward(varlenConfigOf(2, 2, {65, 1}, {65, 129}, 128, 0));
  KernelConfig bshd = backward(configOf(2, 4, 2, 77, 77, 64, 16));
  bshd.layout = rt::AttentionLayout::BSHD;
  for (KernelConfig each : {config, varlen, bshd}) {
    each.dq = "atomic";
    each.dkdvWarpgroups = 2;
    FailureOr<rt::Bundle> bundle = compileKernel(context, each);
    ASSERT_TRUE(succeeded(bundle));
    rt::Status valid = rt::validateBundle(*bundle);
    EXPECT_TRUE(valid.ok()) << valid.message();
  }
  FailureOr<KernelModule> varlenBundle = kernels::buildSinkBwd(context, [&] {
    KernelConfig c = varlen;
    c.dq = "atomic";
    c.dkdvWarpgroups = 2;
    return c;
  }());
  ASSERT_TRUE(succeeded(varlenBundle));
  EXPECT_EQ(rt::findParam(varlenBundle->bundle, "sink_terms")->shape,
            (std::vector<uint64_t>{2, 194}));

  // 64-key blocks (one dK/dV warpgroup, given or auto's) were removed.
  for (int64_t warpgroups : {int64_t(1), kAutoWarpgroups}) {
    KernelConfig oneWarpgroup = config;
    oneWarpgroup.dkdvWarpgroups = warpgroups;
    EXPECT_TRUE(failed(kernels::buildSinkBwd(context, oneWarpgroup)));
  }
  // Anything else is an error naming the modes.
  config.dq = "fast";
  EXPECT_TRUE(failed(kernels::buildSinkBwd(context, config)));
}

TEST_F(SinkBwdKernelTest, SplitAddsGqaDkDvPerKvHead) {
  // The split (--dq atomic, two dK/dV warpgroups, D 128) with GQA: fp32 dK
  // and dV per kv head, [HK, tokens, D], zeroed by the preprocess kernel,
  // added to by the dK/dV kernel and rounded by the sum kernel; no per
  // query head shares. Every layout's bundle validates.
  KernelConfig config = backward(configOf(2, 4, 2, 100, 300, 128, 0));
  config.dq = "atomic";
  config.dkdvWarpgroups = 2;
  KernelConfig varlen =
      backward(varlenConfigOf(4, 2, {65, 1}, {65, 129}, 128, 0));
  KernelConfig bshd = backward(configOf(2, 4, 2, 77, 77, 128, 16));
  bshd.layout = rt::AttentionLayout::BSHD;
  for (KernelConfig each : {config, varlen, bshd}) {
    each.dq = "atomic";
    each.dkdvWarpgroups = 2;
    FailureOr<KernelModule> split = kernels::buildSinkBwd(context, each);
    ASSERT_TRUE(succeeded(split));
    const rt::Bundle &b = split->bundle;
    rt::Status valid = rt::validateBundle(b);
    EXPECT_TRUE(valid.ok()) << valid.message();
    EXPECT_EQ(rt::findParam(b, "dk_shares"), nullptr);
    EXPECT_EQ(rt::findParam(b, "dv_shares"), nullptr);
    const uint64_t tokens = each.layout == rt::AttentionLayout::Varlen
                                ? 65 + 129
                                : uint64_t(each.batch * each.seqKv);
    for (const char *name : {"dk_accum", "dv_accum"}) {
      const rt::BundleParam *accum = rt::findParam(b, name);
      ASSERT_NE(accum, nullptr) << name;
      EXPECT_EQ(accum->shape, (std::vector<uint64_t>{2, tokens, 128})) << name;
      EXPECT_EQ(accum->dtype, rt::DType::F32) << name;
    }
    EXPECT_EQ(entries(b),
              (std::vector<std::string>{"sink_fwd", "sink_bwd_preprocess",
                                        "sink_bwd_dkdv", "sink_bwd_dq_convert",
                                        "sink_bwd_dkdv_sum"}));
    // The preprocess kernel zeroes both (after dQ's fp32 accumulator).
    const std::vector<std::string> &preprocessArgs = b.launches[1].args;
    auto dqAccum = std::find(preprocessArgs.begin(), preprocessArgs.end(),
                             "dq_accum");
    ASSERT_GE(std::distance(dqAccum, preprocessArgs.end()), 3);
    EXPECT_EQ(*(dqAccum + 1), "dk_accum");
    EXPECT_EQ(*(dqAccum + 2), "dv_accum");
    EXPECT_EQ(b.launches[4].args,
              (std::vector<std::string>{"dk_accum", "dv_accum", "dk", "dv"}));
  }
  // MHA keeps writing dK and dV directly.
  KernelConfig mha = backward(configOf(2, 2, 2, 100, 100, 128, 0));
  mha.dq = "atomic";
  mha.dkdvWarpgroups = 2;
  FailureOr<KernelModule> mhaSplit = kernels::buildSinkBwd(context, mha);
  ASSERT_TRUE(succeeded(mhaSplit));
  EXPECT_EQ(rt::findParam(mhaSplit->bundle, "dk_accum"), nullptr);
}

/// kAutoWarpgroups in the deterministic form: two dK/dV and two dQ
/// warpgroups exactly where SinkBwdForm's rule holds (D 128, rows and keys
/// of at least 192 blocks of 64, --dq separate, the auto schedule, no
/// window, not varlen); one where any of it fails; a count given for one
/// kernel is both kernels'.
TEST_F(SinkBwdKernelTest, AutoWarpgroupsShareTilesOnLongRowsAtD128) {
  auto warpgroupsOf = [&](KernelConfig config) {
    FailureOr<KernelModule> built = kernels::buildSinkBwd(context, config);
    EXPECT_TRUE(succeeded(built));
    if (failed(built))
      return std::pair<int64_t, int64_t>{-1, -1};
    // Absent from the config: the one-warpgroup kernels.
    auto count = [&](const char *key) {
      rt::Expected<int64_t> value = rt::configInteger(built->bundle, key);
      return value.ok() ? *value : int64_t(1);
    };
    return std::pair<int64_t, int64_t>{count("dkdv_warpgroups"),
                                       count("dq_warpgroups")};
  };
  auto autoOf = [](KernelConfig config) {
    config = backward(config);
    config.deterministic = true;
    config.dqWarpgroups = kAutoWarpgroups;
    config.dkdvWarpgroups = kAutoWarpgroups;
    return config;
  };
  using Pair = std::pair<int64_t, int64_t>;
  const KernelConfig longRows = autoOf(configOf(1, 2, 1, 12288, 12288, 128, 0));
  EXPECT_EQ(warpgroupsOf(longRows), Pair(2, 2));
  KernelConfig bshd = longRows;
  bshd.layout = rt::AttentionLayout::BSHD;
  EXPECT_EQ(warpgroupsOf(bshd), Pair(2, 2));
  // One block of 64 short of the threshold, in the rows or in the keys.
  EXPECT_EQ(warpgroupsOf(autoOf(configOf(1, 2, 1, 12224, 12288, 128, 0))),
            Pair(1, 1));
  EXPECT_EQ(warpgroupsOf(autoOf(configOf(1, 2, 1, 12288, 12224, 128, 0))),
            Pair(1, 1));
  EXPECT_EQ(warpgroupsOf(autoOf(configOf(1, 2, 1, 16384, 16384, 64, 0))),
            Pair(1, 1));
  EXPECT_EQ(warpgroupsOf(autoOf(configOf(1, 2, 1, 12288, 12288, 128, 128))),
            Pair(1, 1));
  EXPECT_EQ(warpgroupsOf(autoOf(varlenConfigOf(2, 1, {12288, 12288},
                                               {12288, 12288}, 128, 0))),
            Pair(1, 1));
  KernelConfig plain = longRows;
  plain.schedule = "plain";
  EXPECT_EQ(warpgroupsOf(plain), Pair(1, 1));
  // --dq atomic (the split) keeps one dQ warpgroup: it has no dQ kernel.
  KernelConfig atomic = longRows;
  atomic.deterministic = false;
  atomic.dq = "atomic";
  atomic.dkdvWarpgroups = 2;
  EXPECT_EQ(warpgroupsOf(atomic), Pair(2, 1));
  // A given count wins, and the other kernel's follows it: the two counts
  // are one choice.
  KernelConfig oneDq = longRows;
  oneDq.dqWarpgroups = 1;
  EXPECT_EQ(warpgroupsOf(oneDq), Pair(1, 1));
  KernelConfig oneDkdv = longRows;
  oneDkdv.dkdvWarpgroups = 1;
  EXPECT_EQ(warpgroupsOf(oneDkdv), Pair(1, 1));
  const KernelConfig shortRows = autoOf(configOf(1, 2, 1, 256, 256, 128, 0));
  KernelConfig twoDq = shortRows;
  twoDq.dqWarpgroups = 2;
  EXPECT_EQ(warpgroupsOf(twoDq), Pair(2, 2));
  KernelConfig twoDkdv = shortRows;
  twoDkdv.dkdvWarpgroups = 2;
  EXPECT_EQ(warpgroupsOf(twoDkdv), Pair(2, 2));
}

/// The deterministic form's refusals (docs/design.md, "Backward forms kept
/// (issue 44)"): counts that differ, and two warpgroups at D 64.
TEST_F(SinkBwdKernelTest, SharedTilesRefuseMixedCountsAndD64) {
  auto refused = [&](KernelConfig config) {
    return failed(kernels::buildSinkBwd(context, config));
  };
  KernelConfig mixed = backward(configOf(1, 2, 1, 256, 256, 128, 0));
  mixed.dq = "separate";
  mixed.dqWarpgroups = 2;
  mixed.dkdvWarpgroups = 1;
  EXPECT_TRUE(refused(mixed));
  std::swap(mixed.dqWarpgroups, mixed.dkdvWarpgroups);
  EXPECT_TRUE(refused(mixed));
  for (auto [dq, dkdv] : {std::pair<int64_t, int64_t>{2, kAutoWarpgroups},
                          {kAutoWarpgroups, 2},
                          {2, 2}}) {
    KernelConfig d64 = backward(configOf(1, 2, 1, 256, 256, 64, 0));
    d64.dq = "separate";
    d64.dqWarpgroups = dq;
    d64.dkdvWarpgroups = dkdv;
    EXPECT_TRUE(refused(d64));
  }
  // The split at D 64 keeps its two dK/dV warpgroups.
  KernelConfig split = backward(configOf(1, 2, 1, 256, 256, 64, 0));
  split.dq = "atomic";
  split.dkdvWarpgroups = 2;
  EXPECT_FALSE(refused(split));
}

/// Runs sink_bwd_dkdv_sum (--dkdv-warpgroups 2) on the CPU: dK/dV of every
/// (batch, kv head, key, column) must be the sum of its group's shares, in
/// each layout.
TEST_F(SinkBwdKernelTest, ShareSumFollowsEachLayout) {
  KernelConfig bshd = backward(configOf(2, 6, 2, 5, 7, 128, 0));
  bshd.layout = rt::AttentionLayout::BSHD;
  for (KernelConfig config :
       {backward(configOf(2, 6, 2, 5, 7, 128, 0)), bshd,
        backward(varlenConfigOf(4, 1, {3, 0, 6}, {5, 2, 6}, 128, 0))}) {
    SCOPED_TRACE(rt::layoutName(config.layout));
    config.dqWarpgroups = 2;
    config.dkdvWarpgroups = 2;
    rt::SinkAttentionShape shape = kernels::sinkAttentionShape(config);
    FailureOr<KernelModule> kernel = kernels::buildSinkBwd(context, config);
    ASSERT_TRUE(succeeded(kernel));
    int64_t elements = shape.kvElements();
    int64_t blocks = (elements + 255) / 256;
    ASSERT_TRUE(succeeded(test::emulateOnHost(
        *kernel->module, {{"sink_bwd_dkdv_sum", blocks}}, 256)));
    auto engine = test::jitForHost(*kernel->module);
    ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
    auto address = (*engine)->lookup("host_sink_bwd_dkdv_sum");
    ASSERT_TRUE(bool(address)) << llvm::toString(address.takeError());

    // Shares [H, tokens, D]: small integers, so every sum is exact in bf16.
    const int64_t d = shape.headDim, group = shape.heads / shape.kvHeads;
    const int64_t tokens = shape.varlen() ? shape.tokensKv()
                                          : shape.batch * shape.seqKv;
    auto shareK = [&](int64_t h, int64_t t, int64_t c) {
      return float((h * 7 + t * 3 + c) % 11 - 5);
    };
    auto shareV = [&](int64_t h, int64_t t, int64_t c) {
      return float((h * 5 + t + 2 * c) % 13 - 6);
    };
    std::vector<float> dkShares(size_t(shape.heads * tokens * d)),
        dvShares(dkShares.size());
    for (int64_t h = 0; h < shape.heads; ++h)
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t c = 0; c < d; ++c) {
          dkShares[size_t((h * tokens + t) * d + c)] = shareK(h, t, c);
          dvShares[size_t((h * tokens + t) * d + c)] = shareV(h, t, c);
        }
    std::vector<uint16_t> dk(size_t(elements), 0x7FC0), dv(size_t(elements), 0x7FC0);
    reinterpret_cast<void (*)(void *, void *, void *, void *)>(*address)(
        dkShares.data(), dvShares.data(), dk.data(), dv.data());
    std::vector<float> dkValues = rt::fromBf16(dk), dvValues = rt::fromBf16(dv);

    int64_t checked = 0, wrong = 0;
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t hk = 0; hk < shape.kvHeads; ++hk)
        for (int64_t n = 0; n < shape.seqKvOf(b); ++n) {
          int64_t token = shape.varlen() ? shape.cuSeqlensKv[size_t(b)] + n
                                         : b * shape.seqKv + n;
          for (int64_t c = 0; c < d; ++c) {
            float wantK = 0, wantV = 0;
            for (int64_t g = 0; g < group; ++g) {
              wantK += shareK(hk * group + g, token, c);
              wantV += shareV(hk * group + g, token, c);
            }
            size_t at = size_t(shape.kvOffset(b, hk, n) + c);
            ++checked;
            if (dkValues[at] != wantK || dvValues[at] != wantV)
              if (wrong++ < 5)
                ADD_FAILURE() << "b " << b << " hk " << hk << " n " << n
                              << " c " << c << ": dk " << dkValues[at]
                              << " (want " << wantK << "), dv " << dvValues[at]
                              << " (want " << wantV << ")";
          }
        }
    // Every element of dK is some (batch, kv head, key, column).
    EXPECT_EQ(checked, elements);
    EXPECT_EQ(wrong, 0);
  }
}

} // namespace
