//===- KernelGridsTest.cpp - Shape-generic bundles for new shapes ---------===//

#include "SinkAttn/Runtime/KernelGrids.h"
#include "SinkAttn/Runtime/TileSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace sinkattn::rt;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "message: " << (haystack)

const char *kPtx = ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
                   ".visible .entry k(\n)\n{\n  ret;\n}\n";

BundleParam buffer(const std::string &name, DType dtype,
                   std::vector<uint64_t> shape, std::vector<uint64_t> dynamic,
                   BufferRole role = BufferRole::Input) {
  BundleParam p;
  p.name = name;
  p.kind = ParamKind::Buffer;
  p.dtype = dtype;
  p.shape = std::move(shape);
  p.role = role;
  p.descriptor = true;
  p.dynamicDims = std::move(dynamic);
  return p;
}

/// A tma-copy bundle as `compile --run-time-shapes --m 1000 --n 200` has it.
Bundle copyBundle() {
  Bundle b;
  b.formatVersion = kBundleDescriptorFormatVersion;
  b.kernel = "tma-copy";
  b.entry = "k";
  b.grid = tmaCopyGrid(1000, 200, 8);
  b.block = {128, 1, 1};
  b.config = {{"m", int64_t(1000)},
              {"n", int64_t(200)},
              {"tiles_per_block", int64_t(8)}};
  b.params = {
      buffer("in", DType::BF16, {1000, 200}, {0, 1}),
      buffer("out", DType::BF16, {1000, 200}, {0, 1}, BufferRole::Output)};
  b.ptx = kPtx;
  return b;
}

/// A varlen sink-fwd bundle for run-time shapes: H 8, HK 1, D 64, two
/// sequences of 100 and 7 queries, 200 and 7 keys.
SinkAttentionShape fwdShape() {
  SinkAttentionShape s;
  s.batch = 2;
  s.heads = 8;
  s.kvHeads = 1;
  s.seqQ = 100;
  s.seqKv = 200;
  s.headDim = 64;
  s.scale = 0.125;
  s.layout = AttentionLayout::Varlen;
  s.cuSeqlensQ = {0, 100, 107};
  s.cuSeqlensKv = {0, 200, 207};
  return s;
}

/// Its bundle: causal, or with `windowed` one that takes a window size.
Bundle fwdBundle(bool windowed = false) {
  Bundle b;
  b.formatVersion = kBundleDescriptorFormatVersion;
  b.kernel = "sink-fwd";
  b.entry = "k";
  b.block = {128, 1, 1};
  b.config = {
      {"block_m", int64_t(64)}, {"batch", int64_t(2)}, {"causal", int64_t(1)}};
  b.grid = attentionBlockGrid(2, fwdShape());
  b.params = {buffer("q", DType::BF16, {107, 512}, {0, 1}),
              buffer("k", DType::BF16, {207, 64}, {0, 1}),
              buffer("v", DType::BF16, {207, 64}, {0, 1}),
              buffer("sinks", DType::F32, {8}, {0}),
              buffer("o", DType::BF16, {107, 512}, {0, 1}, BufferRole::Output),
              buffer("lse", DType::F32, {8, 107}, {0, 1}, BufferRole::Output),
              buffer("cu_seqlens_q", DType::I32, {3}, {0}),
              buffer("cu_seqlens_kv", DType::I32, {3}, {0})};
  b.params.push_back(
      scalarParam("scale_log2", DType::F32, 0.125 * 1.4426950408889634));
  if (windowed)
    b.params.push_back(scalarParam("window", DType::I32, 128));
  b.params.push_back(scalarParam("cu_seqlens_q_unit", DType::I32, 1));
  b.params.push_back(scalarParam("cu_seqlens_kv_unit", DType::I32, 1));
  b.ptx = kPtx;
  return b;
}

TEST(KernelGrids, AttentionBlockGrid) {
  SinkAttentionShape s = fwdShape();
  // Causal: a kv head's query heads side by side, then kv heads x batch.
  EXPECT_EQ(attentionBlockGrid(5, s), (Dim3{8, 5, 2}));
  s.window = 128;
  EXPECT_EQ(attentionBlockGrid(5, s), (Dim3{5, 8, 2}));
}

TEST(KernelGrids, SinkFwdAutoSchedule) {
  EXPECT_EQ(sinkFwdRowKeyBlocks(128, 0), 1);
  EXPECT_EQ(sinkFwdRowKeyBlocks(129, 0), 2);
  EXPECT_EQ(sinkFwdRowKeyBlocks(16384, 128), 2);
  EXPECT_EQ(sinkFwdRowKeyBlocks(16384, 129), 3);
  EXPECT_EQ(sinkFwdRowKeyBlocks(100, 4096), 1);
  EXPECT_STREQ(sinkFwdAutoSchedule(128, kOverlapMinKeyBlocks - 1), "ws");
  EXPECT_STREQ(sinkFwdAutoSchedule(128, kOverlapMinKeyBlocks), "overlap");
  EXPECT_STREQ(sinkFwdAutoSchedule(64, kWarpSpecializedD64MinKeyBlocks - 1),
               "plain");
  EXPECT_STREQ(sinkFwdAutoSchedule(64, kWarpSpecializedD64MinKeyBlocks), "ws");
}

TEST(KernelGrids, SinkFwdRunsPersistent) {
  // As the compiler's auto: ws or overlap, no window, rows of at most 32
  // key blocks, more tiles than SMs.
  EXPECT_TRUE(sinkFwdRunsPersistent("ws", 16, 0, 1024, 132));
  EXPECT_TRUE(
      sinkFwdRunsPersistent("overlap", kPersistentMaxKeyBlocks, 0, 133, 132));
  EXPECT_FALSE(sinkFwdRunsPersistent("plain", 16, 0, 1024, 132));
  EXPECT_FALSE(sinkFwdRunsPersistent("ws", 16, 128, 1024, 132));
  EXPECT_FALSE(sinkFwdRunsPersistent("overlap", kPersistentMaxKeyBlocks + 1, 0,
                                     1024, 132));
  EXPECT_FALSE(sinkFwdRunsPersistent("ws", 16, 0, 132, 132));
}

TEST(KernelGrids, TmaCopyForShape) {
  Expected<Bundle> shaped = tmaCopyForShape(copyBundle(), 4100, 1032);
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  // Strips of 64 rows, blocks of 8 64-column tiles, the last ones partial.
  EXPECT_EQ(shaped->grid, (Dim3{3, 65, 1}));
  EXPECT_EQ(shaped->params[0].shape, (std::vector<uint64_t>{4100, 1032}));
  EXPECT_EQ(std::get<int64_t>(shaped->config.at("m")), 4100);

  auto error = [](const Bundle &b, uint64_t m, uint64_t n) {
    Expected<Bundle> result = tmaCopyForShape(b, m, n);
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string() : result.message();
  };
  EXPECT_CONTAINS(error(copyBundle(), 0, 64),
                  "M=0 N=64: the matrix needs at least one element");
  EXPECT_CONTAINS(
      error(copyBundle(), 4, 7),
      "N=7: rows of 14 bytes; the tensor maps need a multiple of 16");
  EXPECT_CONTAINS(error(copyBundle(), 64 * 65536, 64),
                  "needs more than 65535 blocks in y");
  Bundle fixed = copyBundle();
  for (BundleParam &p : fixed.params) {
    p.descriptor = false;
    p.dynamicDims.clear();
  }
  fixed.formatVersion = 2;
  EXPECT_CONTAINS(error(fixed, 64, 64),
                  "the tma-copy bundle was compiled for M=1000 N=200 only");
  EXPECT_CONTAINS(error(fwdBundle(), 64, 64),
                  "the bundle holds a sink-fwd kernel, not tma-copy");
}

/// A varlen sink-bwd bundle for run-time shapes on fwdShape()'s problem
/// (with `shares`, compiled for GQA): the forward as its setup launch, then
/// preprocess, dK/dV and dQ, as `compile --run-time-shapes` has it.
Bundle bwdBundle(bool shares) {
  Bundle b = fwdBundle();
  b.kernel = "sink-bwd";
  b.entry.clear();
  b.config["dq_block_rows"] = int64_t(64);
  b.config["dkdv_block_keys"] = int64_t(64);
  std::vector<std::string> forwardArgs;
  for (const BundleParam &param : b.params)
    forwardArgs.push_back(param.name);
  auto strided = [](BundleParam p) {
    p.strides = {p.shape[1], 1};
    return p;
  };
  b.params.push_back(strided(buffer("do", DType::BF16, {107, 512}, {0, 1})));
  for (const char *name : {"dq", "dk", "dv"}) {
    std::vector<uint64_t> shape = name == std::string("dq")
                                      ? std::vector<uint64_t>{107, 512}
                                      : std::vector<uint64_t>{207, 64};
    b.params.push_back(
        strided(buffer(name, DType::BF16, shape, {0, 1}, BufferRole::Output)));
  }
  b.params.push_back(
      buffer("dsinks", DType::F32, {8}, {0}, BufferRole::Output));
  for (const char *name : {"delta", "sink_terms"})
    b.params.push_back(
        buffer(name, DType::F32, {8, 107}, {0, 1}, BufferRole::Output));
  b.params.push_back(buffer("row_stats", DType::F32, {2, 8, 2, 2, 64},
                            {0, 1, 2}, BufferRole::Output));
  std::vector<std::string> dkdvArgs = {"q", "k", "v", "do", "row_stats"};
  if (shares) {
    for (const char *name : {"dk_shares", "dv_shares"})
      b.params.push_back(
          buffer(name, DType::F32, {8, 207, 64}, {0, 1}, BufferRole::Output));
    b.params.push_back(
        buffer("share_counts", DType::I32, {8}, {0}, BufferRole::Output));
    dkdvArgs.insert(dkdvArgs.end(),
                    {"dk_shares", "dv_shares", "dk", "dv", "share_counts"});
  } else {
    dkdvArgs.insert(dkdvArgs.end(), {"dk", "dv"});
  }
  b.params.push_back(
      buffer("sink_counts", DType::I32, {8}, {0}, BufferRole::Output));
  b.params.push_back(scalarParam("scale", DType::F32, 0.125));
  auto launch = [](std::string entry, Dim3 grid,
                   std::vector<std::string> args) {
    BundleLaunch l;
    l.entry = std::move(entry);
    l.grid = grid;
    l.block = {128, 1, 1};
    l.args = std::move(args);
    return l;
  };
  b.launches = {
      launch("k", b.grid, forwardArgs),
      launch("sink_bwd_preprocess", {2, 8, 2},
             {"o", "do", "delta", "lse", "row_stats"}),
      launch("sink_bwd_dkdv", attentionBlockGrid(4, fwdShape()), dkdvArgs),
      launch("sink_bwd_dq", attentionBlockGrid(2, fwdShape()),
             {"q", "k", "v", "do", "lse", "delta", "sinks", "dq", "sink_terms",
              "dsinks", "sink_counts"})};
  b.launches[0].setup = true;
  b.grid = {};
  b.block = {};
  for (const char *entry : {"sink_bwd_preprocess", "sink_bwd_dkdv",
                            "sink_bwd_dq", "sink_bwd_sinks"})
    b.ptx += std::string(".visible .entry ") + entry + "(\n)\n{\n  ret;\n}\n";
  return b;
}

TEST(KernelGrids, SinkBwdForLengths) {
  SinkAttentionShape gqa = fwdShape();
  gqa.heads = 6;
  gqa.kvHeads = 2;
  gqa.scale = 0.25;
  Expected<Bundle> shaped = sinkFwdForLengths(bwdBundle(/*shares=*/true), gqa,
                                              {0, 1, 300}, {5, 1, 700});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "do")->shape, (std::vector<uint64_t>{301, 384}));
  EXPECT_EQ(findParam(*shaped, "dq")->shape, (std::vector<uint64_t>{301, 384}));
  EXPECT_EQ(findParam(*shaped, "dk")->shape, (std::vector<uint64_t>{706, 128}));
  EXPECT_EQ(findParam(*shaped, "dsinks")->shape, (std::vector<uint64_t>{6}));
  EXPECT_EQ(findParam(*shaped, "delta")->shape,
            (std::vector<uint64_t>{6, 301}));
  // ceil(300 / 64) query blocks per sequence and head.
  EXPECT_EQ(findParam(*shaped, "row_stats")->shape,
            (std::vector<uint64_t>{3, 6, 5, 2, 64}));
  EXPECT_EQ(findParam(*shaped, "dk_shares")->shape,
            (std::vector<uint64_t>{6, 706, 64}));
  // Sequences x kv heads x ceil(700 / 64) key blocks.
  EXPECT_EQ(findParam(*shaped, "share_counts")->shape,
            (std::vector<uint64_t>{3 * 2 * 11}));
  EXPECT_EQ(findParam(*shaped, "scale")->floatValue, 0.25);
  EXPECT_EQ(findParam(*shaped, "scale_log2")->floatValue,
            double(float(0.25 * 1.4426950408889634)));
  // The forward's grid is the setup launch's; the others per entry.
  EXPECT_EQ(shaped->launches[0].grid, (Dim3{3, 5, 6}));
  EXPECT_EQ(shaped->launches[1].grid, (Dim3{5, 6, 3}));
  EXPECT_EQ(shaped->launches[2].grid, (Dim3{3, 11, 6}));
  EXPECT_EQ(shaped->launches[3].grid, (Dim3{3, 5, 6}));

  // Gradients at token strides of their own (views of a fused tensor).
  gqa.batch = 1;
  shaped = sinkBwdForSizes(bwdBundle(true), gqa, 10, 20, 10, 20, "", {},
                           {1000, 1000, 2000, 2000});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "dq")->strides,
            (std::vector<uint64_t>{1000, 1}));
  EXPECT_EQ(findParam(*shaped, "dv")->strides,
            (std::vector<uint64_t>{2000, 1}));

  // A bundle compiled for MHA has no shares to sum a group with.
  EXPECT_CONTAINS(
      sinkBwdForSizes(bwdBundle(false), gqa, 10, 20, 10, 20).message(),
      "compiled for one query head per kv head; 6 heads over 2 "
      "kv heads need one compiled with --kv-heads below --heads");
  SinkAttentionShape mha = gqa;
  mha.kvHeads = 6;
  Expected<Bundle> mhaShaped =
      sinkBwdForSizes(bwdBundle(false), mha, 10, 20, 10, 20);
  EXPECT_TRUE(mhaShaped.ok()) << mhaShaped.message();
  // A forward bundle is not a backward one.
  EXPECT_CONTAINS(sinkBwdForSizes(fwdBundle(), mha, 10, 20, 10, 20).message(),
                  "not a sink-bwd bundle compiled with --run-time-shapes");
  // The forward's refusals apply, named for the backward.
  SinkAttentionShape windowed = mha;
  windowed.window = 64;
  EXPECT_CONTAINS(
      sinkBwdForSizes(bwdBundle(false), windowed, 10, 20, 10, 20).message(),
      "the sink-bwd bundle is compiled without a sliding window");
  // The dK/dV grid's key blocks are limited like the row blocks.
  EXPECT_CONTAINS(
      sinkBwdForSizes(bwdBundle(true), gqa, 10, 64 * 65536, 10, 64 * 65536)
          .message(),
      "the longest key sequence needs 65536 key blocks, more than "
      "a grid dimension holds (65535)");
  // The launches' grids are known by entry only.
  Bundle unknown = bwdBundle(false);
  unknown.launches[1].entry = "sink_bwd_sinks";
  EXPECT_CONTAINS(sinkBwdForSizes(unknown, mha, 10, 20, 10, 20).message(),
                  "launch 'sink_bwd_sinks' has no grid for run-time shapes");
}

/// bwdBundle(shares) as --dq atomic compiles it with GQA: fp32 dQ and
/// dK/dV sums, sink terms per key row, records of three rows, and the
/// convert and sum kernels after dK/dV.
Bundle atomicBwdBundle() {
  Bundle b = bwdBundle(/*shares=*/false);
  auto drop = [&](const char *name) {
    b.params.erase(
        std::find_if(b.params.begin(), b.params.end(),
                     [&](const BundleParam &p) { return p.name == name; }));
  };
  for (const char *name : {"sink_terms", "row_stats", "sink_counts"})
    drop(name);
  b.params.push_back(buffer("row_stats", DType::F32, {2, 8, 2, 3, 64},
                            {0, 1, 2}, BufferRole::Output));
  b.params.push_back(
      buffer("sink_terms", DType::F32, {8, 207}, {0, 1}, BufferRole::Output));
  b.params.push_back(
      buffer("dq_accum", DType::F32, {107, 512}, {0, 1}, BufferRole::Output));
  for (const char *name : {"dk_accum", "dv_accum"})
    b.params.push_back(
        buffer(name, DType::F32, {1, 207, 64}, {0, 1}, BufferRole::Output));
  b.config["dkdv_block_keys"] = int64_t(128);
  b.launches[1].args = {"o",     "do",       "delta",    "lse",     "row_stats",
                        "sinks", "dq_accum", "dk_accum", "dv_accum"};
  b.launches[2].args = {"q",        "k",         "v",
                        "do",       "row_stats", "dk_accum",
                        "dv_accum", "dq_accum",  "sink_terms"};
  b.launches[3].entry = "sink_bwd_dq_convert";
  b.launches[3].args = {"dq_accum", "dq", "sink_terms", "dsinks"};
  BundleLaunch sum = b.launches[3];
  sum.entry = "sink_bwd_dkdv_sum";
  sum.block = {256, 1, 1};
  sum.args = {"dk_accum", "dv_accum", "dk", "dv"};
  b.launches.push_back(sum);
  for (const char *entry : {"sink_bwd_dq_convert", "sink_bwd_dkdv_sum"})
    b.ptx += std::string(".visible .entry ") + entry + "(\n)\n{\n  ret;\n}\n";
  return b;
}

TEST(KernelGrids, AtomicSinkBwdForLengths) {
  SinkAttentionShape gqa = fwdShape();
  gqa.heads = 8;
  gqa.kvHeads = 2;
  Expected<Bundle> shaped =
      sinkFwdForLengths(atomicBwdBundle(), gqa, {0, 1, 300}, {5, 1, 700});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "dq_accum")->shape,
            (std::vector<uint64_t>{301, 512}));
  EXPECT_EQ(findParam(*shaped, "dk_accum")->shape,
            (std::vector<uint64_t>{2, 706, 64}));
  // The sink terms per key row; records of three rows.
  EXPECT_EQ(findParam(*shaped, "sink_terms")->shape,
            (std::vector<uint64_t>{8, 706}));
  EXPECT_EQ(findParam(*shaped, "row_stats")->shape,
            (std::vector<uint64_t>{3, 8, 5, 3, 64}));
  // dK/dV over blocks of 128 keys; the convert kernel per 64 query rows,
  // head and sequence; the sum one thread per element of dK.
  EXPECT_EQ(shaped->launches[2].grid, (Dim3{4, 6, 6}));
  EXPECT_EQ(shaped->launches[3].grid, (Dim3{5, 8, 3}));
  EXPECT_EQ(shaped->launches[4].grid, (Dim3{(706 * 128 + 255) / 256, 1, 1}));
}

TEST(KernelGrids, SinkFwdForLengths) {
  Expected<Bundle> shaped = sinkFwdForLengths(
      fwdBundle(), fwdShape(), {0, 1, 2000, 17}, {3, 1, 2500, 17});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "q")->shape, (std::vector<uint64_t>{2018, 512}));
  EXPECT_EQ(findParam(*shaped, "k")->shape, (std::vector<uint64_t>{2521, 64}));
  EXPECT_EQ(findParam(*shaped, "lse")->shape, (std::vector<uint64_t>{8, 2018}));
  EXPECT_EQ(findParam(*shaped, "cu_seqlens_kv")->shape,
            (std::vector<uint64_t>{5}));
  // ceil(2000 / 64) row blocks; 8 query heads per kv head; 1 kv head x 4.
  EXPECT_EQ(shaped->grid, (Dim3{8, 32, 4}));
  EXPECT_EQ(std::get<std::string>(shaped->config.at("seqlens_q")),
            "0,1,2000,17");
  EXPECT_EQ(std::get<int64_t>(shaped->config.at("seq_kv")), 2500);

  // Other heads, scale and window from the same kernel; the grid follows.
  SinkAttentionShape other = fwdShape();
  other.heads = 64;
  other.kvHeads = 8;
  other.scale = 0.5;
  shaped = sinkFwdForLengths(fwdBundle(), other, {300}, {400});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "q")->shape, (std::vector<uint64_t>{300, 4096}));
  EXPECT_EQ(findParam(*shaped, "k")->shape, (std::vector<uint64_t>{400, 512}));
  EXPECT_EQ(findParam(*shaped, "sinks")->shape, (std::vector<uint64_t>{64}));
  EXPECT_EQ(findParam(*shaped, "scale_log2")->floatValue,
            double(float(0.5 * 1.4426950408889634)));
  EXPECT_EQ(std::get<int64_t>(shaped->config.at("heads")), 64);
  EXPECT_EQ(std::get<double>(shaped->config.at("scale")), 0.5);
  EXPECT_EQ(shaped->grid, (Dim3{8, 5, 8}));
  other.window = 517;
  shaped = sinkFwdForLengths(fwdBundle(/*windowed=*/true), other, {300}, {400});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "window")->intValue, 517);
  EXPECT_EQ(shaped->grid, (Dim3{5, 64, 1}));
  EXPECT_EQ(findParam(*shaped, "cu_seqlens_q_unit")->intValue, 1);
  EXPECT_EQ(findParam(*shaped, "cu_seqlens_kv_unit")->intValue, 1);

  // A batch of equal lengths: offsets 0, 1, 2 in units of the lengths.
  SinkAttentionShape batch = fwdShape();
  batch.batch = 2;
  shaped = sinkFwdForSizes(fwdBundle(), batch, 2 * 300, 2 * 400, 300, "", {},
                           {300, 400});
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "cu_seqlens_q_unit")->intValue, 300);
  EXPECT_EQ(findParam(*shaped, "cu_seqlens_kv_unit")->intValue, 400);
  EXPECT_EQ(findParam(*shaped, "cu_seqlens_q")->shape,
            (std::vector<uint64_t>{3}));

  auto error = [](std::vector<int64_t> q, std::vector<int64_t> kv) {
    Expected<Bundle> result = sinkFwdForLengths(fwdBundle(), fwdShape(), q, kv);
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string() : result.message();
  };
  EXPECT_CONTAINS(error({}, {}),
                  "must list the same sequences, at least one (got 0 and 0)");
  EXPECT_CONTAINS(error({1, 2}, {1}), "(got 2 and 1)");
  EXPECT_CONTAINS(error({1, -2}, {1, 2}), "sequence 1 has a negative length");
  EXPECT_CONTAINS(error({0, 0}, {1, 2}),
                  "the sequences hold no query or no key token");
  EXPECT_CONTAINS(error({1, 2}, {0, 0}),
                  "the sequences hold no query or no key token");
  EXPECT_CONTAINS(error({INT32_MAX, 1}, {1, 1}),
                  "the sequences hold more than 2^31-1 tokens");
  EXPECT_CONTAINS(error({64 * 65536}, {1}),
                  "the longest query sequence needs 65536 row blocks, more than "
                  "a grid dimension holds (65535)");
  EXPECT_CONTAINS(error(std::vector<int64_t>(65536, 1), std::vector<int64_t>(65536, 1)),
                  "65536 sequences x 1 kv heads exceed the 65535 blocks");
  EXPECT_CONTAINS(error(std::vector<int64_t>(64, 65536), std::vector<int64_t>(64, 1)),
                  "the tensors have more than 2^31-1 elements (4194304 query and 64 "
                  "key tokens)");
  // What the kernel compiled in: its causality and whether it has a window.
  auto refusal = [](const Bundle &bundle, SinkAttentionShape shape) {
    Expected<Bundle> result = sinkFwdForLengths(bundle, shape, {3}, {3});
    EXPECT_FALSE(result.ok());
    return result.ok() ? std::string() : result.message();
  };
  SinkAttentionShape windowed = fwdShape();
  windowed.window = 128;
  EXPECT_CONTAINS(refusal(fwdBundle(), windowed),
                  "the sink-fwd bundle is compiled without a sliding window "
                  "(window 128 needs one compiled with --window)");
  EXPECT_CONTAINS(refusal(fwdBundle(/*windowed=*/true), fwdShape()),
                  "the sink-fwd bundle is compiled with a sliding window; give "
                  "a window of at least 1 key");
  SinkAttentionShape full = fwdShape();
  full.causal = false;
  EXPECT_CONTAINS(refusal(fwdBundle(), full),
                  "the sink-fwd bundle is compiled causal; the call asks for "
                  "attention without it");
  Bundle nonCausal = fwdBundle();
  nonCausal.config["causal"] = int64_t(0);
  EXPECT_CONTAINS(refusal(nonCausal, fwdShape()),
                  "the sink-fwd bundle is compiled without the causal mask "
                  "(--non-causal); the call asks for causal attention");
  EXPECT_TRUE(sinkFwdForLengths(nonCausal, full, {3}, {3}).ok());
  windowed.window = int64_t(1) << 31;
  EXPECT_CONTAINS(refusal(fwdBundle(/*windowed=*/true), windowed),
                  "window 2147483648 is above 2^31-1");
  SinkAttentionShape nanScale = fwdShape();
  nanScale.scale = NAN;
  EXPECT_CONTAINS(refusal(fwdBundle(), nanScale),
                  "scale is not a finite number");
  EXPECT_CONTAINS(sinkFwdForSizes(fwdBundle(), nanScale, 3, 3, 3).message(),
                  "the softmax scale is not a finite number");
  Bundle older = fwdBundle();
  older.config.erase("causal");
  EXPECT_CONTAINS(refusal(older, fwdShape()),
                  "the sink-fwd bundle was compiled by an older SinkAttn");
  older = fwdBundle();
  older.params.pop_back();
  older.params.pop_back();
  EXPECT_CONTAINS(refusal(older, fwdShape()),
                  "the sink-fwd bundle was compiled by an older SinkAttn");
  for (SequenceOffsetUnits units :
       {SequenceOffsetUnits{0, 1}, SequenceOffsetUnits{1, -3},
        SequenceOffsetUnits{int64_t(1) << 31, 1}})
    EXPECT_CONTAINS(sinkFwdForSizes(fwdBundle(), fwdShape(), 3, 3, 3, "", {},
                                    units)
                        .message(),
                    "the sequence offsets' units (")
        << units.q << " " << units.kv;
  // Units other than 1 must be the lengths of the call's sequences.
  SinkAttentionShape pair = fwdShape();
  pair.batch = 2;
  EXPECT_CONTAINS(
      sinkFwdForSizes(fwdBundle(), pair, 600, 800, 300, "", {}, {300, 401})
          .message(),
      "the sequence offsets' units (300, 401 tokens) are not the "
      "lengths of 2 sequences of 600 query and 800 key tokens");
  EXPECT_CONTAINS(
      sinkFwdForSizes(fwdBundle(), pair, 601, 800, 300, "", {}, {300, 400})
          .message(),
      "are not the lengths of 2 sequences");
  SinkAttentionShape uneven = fwdShape();
  uneven.heads = 6;
  uneven.kvHeads = 4;
  EXPECT_CONTAINS(sinkFwdForSizes(fwdBundle(), uneven, 3, 3, 3).message(),
                  "4 kv heads do not divide 6 heads");
  SinkAttentionShape manyHeads = fwdShape();
  manyHeads.window = 128;
  manyHeads.heads = manyHeads.kvHeads = 65536;
  EXPECT_CONTAINS(refusal(fwdBundle(/*windowed=*/true), manyHeads),
                  "65536 heads exceed the 65535 blocks of a grid dimension");

  // A persistent kernel: min(N, tiles) blocks and a table sized for them.
  Bundle persistent = fwdBundle();
  persistent.config["persistent_blocks"] = int64_t(132);
  persistent.config["tile_lists"] = int64_t(1);
  persistent.params.insert(persistent.params.begin() + 8,
                           buffer("tiles", DType::I32, {9}, {0}));
  SinkAttentionShape seed = fwdShape();
  seed.heads = 64;
  seed.kvHeads = 8;
  Expected<Bundle> spread = sinkFwdForLengths(persistent, seed, {2048}, {2048});
  ASSERT_TRUE(spread.ok()) << spread.message();
  // 32 row blocks of 64 x 64 heads: 2048 tiles over 132 blocks.
  EXPECT_EQ(spread->grid, (Dim3{132, 1, 1}));
  EXPECT_EQ(findParam(*spread, "tiles")->shape,
            (std::vector<uint64_t>{132 + 1 + 2048}));
  SinkAttentionShape longest = seed;
  longest.batch = 1;
  longest.seqQ = longest.seqKv = 2048;
  Expected<std::vector<int32_t>> table = sinkFwdTileTableFor(*spread, longest);
  ASSERT_TRUE(table.ok()) << table.message();
  EXPECT_EQ(table->size(), size_t(132 + 1 + 2048));
  EXPECT_EQ(table->front(), 133);
  EXPECT_EQ(table->at(132), 133 + 2048);
  // Fewer tiles than blocks: one block each (2 sequences x 8 heads x 2 and
  // 1 row blocks: the longest sequence's 2 for both).
  Expected<Bundle> few =
      sinkFwdForLengths(persistent, fwdShape(), {100, 7}, {200, 7});
  ASSERT_TRUE(few.ok()) << few.message();
  EXPECT_EQ(few->grid, (Dim3{32, 1, 1}));
  EXPECT_EQ(findParam(*few, "tiles")->shape,
            (std::vector<uint64_t>{32 + 1 + 32}));
  // At most one block per SM where the caller knows their count (an H100
  // PCIe has 114).
  SinkAttentionShape one = seed;
  one.batch = 1;
  Expected<Bundle> capped = sinkFwdForSizes(persistent, one, 2048, 2048, 2048,
                                            "", {}, {}, /*smCount=*/114);
  ASSERT_TRUE(capped.ok()) << capped.message();
  EXPECT_EQ(capped->grid, (Dim3{114, 1, 1}));
  EXPECT_EQ(findParam(*capped, "tiles")->shape,
            (std::vector<uint64_t>{114 + 1 + 2048}));
  Bundle broken = persistent;
  broken.config["persistent_blocks"] = int64_t(0);
  EXPECT_CONTAINS(sinkFwdForLengths(broken, seed, {2048}, {2048}).message(),
                  "the persistent sink-fwd bundle's persistent_blocks (0) is "
                  "not in [1, 65535]");
  longest.heads = 8;
  longest.kvHeads = 1;
  EXPECT_CONTAINS(sinkFwdTileTableFor(*few, longest).message(),
                  "internal error: a tile table of");
  EXPECT_CONTAINS(sinkFwdTileTableFor(fwdBundle(), longest).message(),
                  "the sink-fwd bundle takes no tile table");
  SinkAttentionShape huge = fwdShape();
  huge.heads = huge.kvHeads = 4096;
  huge.batch = 1;
  EXPECT_CONTAINS(sinkFwdForSizes(persistent, huge, int64_t(1) << 26,
                                  int64_t(1) << 26, int64_t(1) << 26, "call: ")
                      .message(),
                  "call: 4294967296 tiles (row blocks x heads x sequences) "
                  "are more than the tile table's 32-bit entries can number");

  Bundle fixed = fwdBundle();
  fixed.params[0].descriptor = false;
  fixed.params[0].dynamicDims.clear();
  Expected<Bundle> refused = sinkFwdForLengths(fixed, fwdShape(), {3}, {3});
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.message(),
                  "compiled for its own sequence lengths only");
}

} // namespace
