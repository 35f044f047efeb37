//===- AttentionTest.cpp - The library's argument checks -----------------===//

#include "SinkAttn/Runtime/Attention.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

using namespace sinkattn::rt;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "message: " << (haystack)

DeviceTensor tensor(CUdeviceptr data, DType dtype, std::vector<int64_t> sizes) {
  return {data, dtype, std::move(sizes), {}};
}

/// Two sequences, 300 query and 500 key tokens, H 8, HK 2, D 64.
VarlenForwardArgs validArgs() {
  VarlenForwardArgs a;
  a.q = tensor(0x100000000, DType::BF16, {300, 8, 64});
  a.k = tensor(0x200000000, DType::BF16, {500, 2, 64});
  a.v = tensor(0x300000000, DType::BF16, {500, 2, 64});
  a.out = tensor(0x400000000, DType::BF16, {300, 8, 64});
  a.lse = tensor(0x500000000, DType::F32, {8, 300});
  a.sinks = tensor(0x600000000, DType::F32, {8});
  a.cuSeqlensQ = tensor(0x700000000, DType::I32, {3});
  a.cuSeqlensKv = tensor(0x800000000, DType::I32, {3});
  a.maxSeqlenQ = 200;
  a.maxSeqlenKv = 400;
  return a;
}

std::string error(void (*edit)(VarlenForwardArgs &)) {
  VarlenForwardArgs a = validArgs();
  edit(a);
  Expected<VarlenForwardProblem> p = validateVarlenForward(a);
  EXPECT_FALSE(p.ok());
  return p.ok() ? std::string() : p.message();
}

TEST(Attention, ValidCall) {
  Expected<VarlenForwardProblem> p = validateVarlenForward(validArgs());
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->tokensQ, 300);
  EXPECT_EQ(p->tokensKv, 500);
  EXPECT_EQ(p->batch, 2);
  EXPECT_EQ(p->variant.describe(), "bf16 D=64 causal f32 sinks");
  EXPECT_EQ(p->heads, 8);
  EXPECT_EQ(p->kvHeads, 2);
  EXPECT_EQ(p->softmaxScale, 0.125);
  // Dense strides given explicitly, a window, another scale, no sinks.
  VarlenForwardArgs a = validArgs();
  a.q.strides = {512, 64, 1};
  a.window = 128;
  a.softmaxScale = 0.1;
  a.sinks.reset();
  p = validateVarlenForward(a);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->window, 128);
  EXPECT_EQ(p->softmaxScale, 0.1);
  EXPECT_EQ(p->variant.describe(), "bf16 D=64 causal sliding-window f32 sinks");
  // Without the causal mask.
  a = validArgs();
  a.causal = false;
  a.q.dtype = a.k.dtype = a.v.dtype = a.out.dtype = DType::F16;
  p = validateVarlenForward(a);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->variant.describe(), "f16 D=64 non-causal f32 sinks");
  // q, k and v as views of one fused [T, H + 2 HK, D] tensor.
  a = validArgs();
  a.q.sizes[0] = a.out.sizes[0] = a.lse.sizes[1] = 500;
  a.q.strides = a.k.strides = a.v.strides = {768, 64, 1};
  p = validateVarlenForward(a);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->tokenStrides.q, 768);
  EXPECT_EQ(p->tokenStrides.k, 768);
  EXPECT_EQ(p->tokenStrides.out, 0);
  // Outputs right after each other, and strided out beside the fused
  // input it does not reach.
  a = validArgs();
  a.lse.data = a.out.data + 300 * 512 * 2;
  EXPECT_TRUE(validateVarlenForward(a).ok())
      << validateVarlenForward(a).message();
  // Views of one fused tensor whose rows they split do not overlap; rows
  // that share bytes do.
  a = validArgs();
  a.q.strides = a.out.strides = {1024, 64, 1};
  a.out.data = a.q.data + 1024;
  EXPECT_TRUE(validateVarlenForward(a).ok())
      << validateVarlenForward(a).message();
  a.out.data = a.q.data + 1008;
  EXPECT_CONTAINS(validateVarlenForward(a).message(), "out: overlaps q");
  // Windowed calls put the sequences alone in a grid dimension.
  a = validArgs();
  a.window = 128;
  a.cuSeqlensQ.sizes = a.cuSeqlensKv.sizes = {40000};
  EXPECT_TRUE(validateVarlenForward(a).ok());
}

TEST(Attention, EveryRefusal) {
  EXPECT_CONTAINS(error([](auto &a) { a.q.data = 0; }), "q: the device address is null");
  EXPECT_CONTAINS(error([](auto &a) { a.q.sizes = {300, 512}; }),
                  "q: has 2 dimensions [300, 512]; expected 3");
  EXPECT_CONTAINS(error([](auto &a) { a.q.dtype = DType::F32; }),
                  "q: has dtype f32; expected bf16 or f16");
  EXPECT_CONTAINS(error([](auto &a) { a.k.dtype = DType::F16; }),
                  "k: has dtype f16; expected bf16");
  EXPECT_CONTAINS(error([](auto &a) { a.v.sizes[0] = -1; }),
                  "v: has a size outside [0, 2^31-1] in [-1, 2, 64]");
  EXPECT_CONTAINS(error([](auto &a) { a.v.sizes[0] = int64_t(1) << 40; }),
                  "v: has a size outside [0, 2^31-1]");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.q.strides = {int64_t(1) << 41, 64, 1};
                  }),
                  "q: has a stride outside [0, 2^40]");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.k.strides = {-128, 64, 1};
                  }),
                  "k: has a stride outside [0, 2^40]");
  EXPECT_CONTAINS(error([](auto &a) { a.out.data = a.q.data + 1024; }),
                  "out: overlaps q in memory");
  EXPECT_CONTAINS(
      error([](auto &a) { a.lse.data = a.out.data + 300 * 512 * 2 - 16; }),
      "lse: overlaps out in memory");
  EXPECT_CONTAINS(error([](auto &a) { a.lse.data = a.cuSeqlensKv.data; }),
                  "lse: overlaps cu_seqlens_k in memory");
  EXPECT_CONTAINS(error([](auto &a) { a.out.data = a.sinks->data - 16; }),
                  "out: overlaps sinks in memory");
  EXPECT_CONTAINS(error([](auto &a) { a.out.dtype = DType::F32; }),
                  "out: has dtype f32; expected bf16");
  EXPECT_CONTAINS(error([](auto &a) { a.lse.dtype = DType::BF16; }),
                  "lse: has dtype bf16; expected f32");
  EXPECT_CONTAINS(error([](auto &a) { a.cuSeqlensQ.dtype = DType::I64; }),
                  "cu_seqlens_q: has dtype i64; expected i32");
  EXPECT_CONTAINS(error([](auto &a) { a.cuSeqlensKv.sizes = {3, 1}; }),
                  "cu_seqlens_k: has 2 dimensions");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.q.strides = {256, 64, 1};
                  }),
                  "q: token stride 256 is below a token's 512 elements");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.k.strides = {132, 64, 1};
                  }),
                  "k: token stride 132 is not a multiple of 16 bytes");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.v.strides = {1024, 128, 1};
                  }),
                  "v: strides [1024, 128, 1] are not dense within a token "
                  "(heads and elements) for sizes [500, 2, 64]");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.out.strides = {512, 1, 8};
                  }),
                  "out: strides [512, 1, 8] are not dense within a token");
  EXPECT_CONTAINS(error([](auto &a) { a.q.data = 0x1008; }),
                  "q: the address is not 16-byte aligned");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.lse.strides = {600, 1};
                  }),
                  "lse: strides [600, 1] are not those of a dense row-major "
                  "tensor of sizes [8, 300]");
  EXPECT_CONTAINS(error([](auto &a) { a.k.strides = {128, 64}; }),
                  "k: has 2 strides for 3 dimensions");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.q.sizes[2] = a.k.sizes[2] = a.v.sizes[2] = 96;
                    a.out.sizes[2] = 96;
                  }),
                  "q: head dimension 96 is not compiled; the kernels take 64 or 128");
  EXPECT_CONTAINS(error([](auto &a) { a.k.sizes[1] = a.v.sizes[1] = 3; }),
                  "k: 3 kv heads do not divide q's 8 heads");
  EXPECT_CONTAINS(error([](auto &a) { a.k.sizes[1] = a.v.sizes[1] = 0; }),
                  "q, k: need at least one head, got H=8 HK=0");
  EXPECT_CONTAINS(error([](auto &a) { a.k.sizes[2] = a.v.sizes[2] = 128; }),
                  "k: head dimension 128 differs from q's 64");
  EXPECT_CONTAINS(error([](auto &a) { a.v.sizes[0] = 499; }),
                  "v: sizes [499, 2, 64] differ from k's [500, 2, 64]");
  EXPECT_CONTAINS(error([](auto &a) { a.out.sizes[0] = 299; }),
                  "out: sizes [299, 8, 64] differ from q's [300, 8, 64]");
  EXPECT_CONTAINS(error([](auto &a) { a.lse.sizes = {300, 8}; }),
                  "lse: sizes [300, 8] differ from [H, Tq] of q's [8, 300]");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.q.sizes[0] = a.out.sizes[0] = a.lse.sizes[1] = 0;
                  }),
                  "q, k: need at least one query and one key token, got Tq=0 Tkv=500");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.q.sizes[0] = a.out.sizes[0] = a.lse.sizes[1] = int64_t(1) << 31;
                  }),
                  "q: has a size outside [0, 2^31-1] in [2147483648, 8, 64]");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.q.sizes[0] = a.out.sizes[0] = a.lse.sizes[1] = 1 << 22;
                  }),
                  "q, k: the tensors have more than 2^31-1 elements (4194304 "
                  "query and 500 key tokens)");
  EXPECT_CONTAINS(error([](auto &a) { a.cuSeqlensQ.sizes = a.cuSeqlensKv.sizes = {1}; }),
                  "cu_seqlens_q: 1 offsets; B sequences need B + 1, at least 2");
  EXPECT_CONTAINS(error([](auto &a) { a.cuSeqlensKv.sizes = {4}; }),
                  "cu_seqlens_k: sizes [4] differ from cu_seqlens_q's [3]");
  EXPECT_CONTAINS(error([](auto &a) { a.cuSeqlensQ.sizes = a.cuSeqlensKv.sizes = {40000}; }),
                  "cu_seqlens_q: 39999 sequences x 2 kv heads exceed the 65535 blocks");
  EXPECT_CONTAINS(error([](auto &a) { a.sinks->dtype = DType::F16; }),
                  "sinks: has dtype f16; expected f32 or bf16");
  EXPECT_CONTAINS(error([](auto &a) { a.sinks->sizes = {2}; }),
                  "sinks: sizes [2] differ from [H] of q's [8]");
  EXPECT_CONTAINS(error([](auto &a) { a.maxSeqlenQ = 0; }),
                  "max_seqlen_q: 0 is not in [1, Tq = 300]");
  EXPECT_CONTAINS(error([](auto &a) { a.maxSeqlenKv = 501; }),
                  "max_seqlen_k: 501 is not in [1, Tkv = 500]");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.causal = false;
                    a.window = 128;
                  }),
                  "window: a sliding window of 128 keys needs causal=true");
  EXPECT_CONTAINS(error([](auto &a) { a.window = -1; }),
                  "window: -1 is not in [0, 2^31-1] (0: no window)");
  EXPECT_CONTAINS(error([](auto &a) { a.window = int64_t(1) << 31; }),
                  "window: 2147483648 is not in [0, 2^31-1]");
  EXPECT_CONTAINS(error([](auto &a) { a.softmaxScale = -0.1; }),
                  "softmax_scale: -0.100000 is not a positive finite number");
  EXPECT_CONTAINS(error([](auto &a) { a.softmaxScale = NAN; }),
                  "softmax_scale: nan is not a positive finite number");
  EXPECT_CONTAINS(error([](auto &a) { a.softmaxScale = 3e38; }),
                  "is too large for the kernels' f32");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.window = 128;
                    a.cuSeqlensQ.sizes = a.cuSeqlensKv.sizes = {65537};
                  }),
                  "cu_seqlens_q: 65536 sequences exceed the 65535 blocks");
  EXPECT_CONTAINS(error([](auto &a) {
                    a.window = 128;
                    a.q.sizes[1] = a.out.sizes[1] = a.lse.sizes[0] = 65536;
                    a.k.sizes[1] = a.v.sizes[1] = 65536;
                    a.sinks.reset();
                    a.q.sizes[0] = a.out.sizes[0] = a.lse.sizes[1] = 1;
                    a.k.sizes[0] = a.v.sizes[0] = 1;
                    a.maxSeqlenQ = a.maxSeqlenKv = 1;
                  }),
                  "q: 65536 heads with a window exceed the 65535 blocks");
}

/// A varlen sink-fwd bundle for run-time shapes as the compiler writes it
/// (causal, D 64, plain: 64-row blocks; its default instance H 8, HK 2);
/// with `windowed` one that takes a window size.
Bundle fwdBundle(bool windowed = false) {
  auto buffer = [](const char *name, DType dtype, std::vector<uint64_t> shape,
                   std::vector<uint64_t> dynamic,
                   std::vector<uint64_t> strides = {}) {
    BundleParam p;
    p.name = name;
    p.kind = ParamKind::Buffer;
    p.dtype = dtype;
    p.shape = std::move(shape);
    p.descriptor = true;
    p.dynamicDims = std::move(dynamic);
    p.strides = std::move(strides);
    return p;
  };
  Bundle b;
  b.formatVersion = kBundleDescriptorFormatVersion;
  b.kernel = "sink-fwd";
  b.entry = "sink_fwd";
  b.grid = {4, 2, 4};
  b.block = {128, 1, 1};
  b.config = {{"layout", std::string("varlen")},
              {"head_dim", int64_t(64)},
              {"heads", int64_t(8)},
              {"kv_heads", int64_t(2)},
              {"window", int64_t(windowed ? 128 : 0)},
              {"block_m", int64_t(64)},
              {"causal", int64_t(1)}};
  b.params = {buffer("q", DType::BF16, {100, 512}, {0, 1}, {512, 1}),
              buffer("k", DType::BF16, {100, 128}, {0, 1}, {128, 1}),
              buffer("v", DType::BF16, {100, 128}, {0, 1}, {128, 1}),
              buffer("sinks", DType::F32, {8}, {0}),
              buffer("o", DType::BF16, {100, 512}, {0, 1}, {512, 1}),
              buffer("lse", DType::F32, {8, 100}, {0, 1}),
              buffer("cu_seqlens_q", DType::I32, {3}, {0}),
              buffer("cu_seqlens_kv", DType::I32, {3}, {0})};
  b.params[4].role = b.params[5].role = BufferRole::Output;
  b.params.push_back(
      scalarParam("scale_log2", DType::F32, 0.125 * 1.4426950408889634));
  if (windowed)
    b.params.push_back(scalarParam("window", DType::I32, 128));
  b.params.push_back(scalarParam("cu_seqlens_q_unit", DType::I32, 1));
  b.params.push_back(scalarParam("cu_seqlens_kv_unit", DType::I32, 1));
  return b;
}

/// A batch of 3 sequences, 200 queries and 300 keys each, H 8, HK 2,
/// D 64, lse the [B, H, SQ] view of [H, B * SQ].
ForwardArgs validBshdArgs() {
  ForwardArgs a;
  a.q = tensor(0x100000000, DType::BF16, {3, 200, 8, 64});
  a.k = tensor(0x200000000, DType::BF16, {3, 300, 2, 64});
  a.v = tensor(0x300000000, DType::BF16, {3, 300, 2, 64});
  a.out = tensor(0x400000000, DType::BF16, {3, 200, 8, 64});
  a.lse = {0x500000000, DType::F32, {3, 8, 200}, {200, 600, 1}};
  a.sinks = tensor(0x600000000, DType::F32, {8});
  return a;
}

std::string bshdError(void (*edit)(ForwardArgs &)) {
  ForwardArgs a = validBshdArgs();
  edit(a);
  Expected<VarlenForwardProblem> p = validateForward(a);
  EXPECT_FALSE(p.ok());
  return p.ok() ? std::string() : p.message();
}

TEST(Attention, BshdCall) {
  Expected<VarlenForwardProblem> p = validateForward(validBshdArgs());
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->batch, 3);
  EXPECT_EQ(p->tokensQ, 600);
  EXPECT_EQ(p->tokensKv, 900);
  EXPECT_EQ(p->maxSeqlenQ, 200);
  EXPECT_EQ(p->heads, 8);
  EXPECT_EQ(p->kvHeads, 2);
  EXPECT_EQ(p->offsetUnits.q, 200);
  EXPECT_EQ(p->offsetUnits.kv, 300);
  EXPECT_EQ(p->variant.describe(), "bf16 D=64 causal f32 sinks");

  // As the varlen call: token rows, lse [H, B * SQ], the table's offsets.
  Expected<VarlenForwardArgs> varlen = bshdAsVarlen(validBshdArgs(), 0x900000000);
  ASSERT_TRUE(varlen.ok()) << varlen.message();
  EXPECT_EQ(varlen->q.sizes, (std::vector<int64_t>{600, 8, 64}));
  EXPECT_EQ(varlen->k.sizes, (std::vector<int64_t>{900, 2, 64}));
  EXPECT_EQ(varlen->lse.sizes, (std::vector<int64_t>{8, 600}));
  EXPECT_EQ(varlen->lse.data, 0x500000000u);
  EXPECT_EQ(varlen->cuSeqlensQ.data, 0x900000000u);
  EXPECT_EQ(varlen->cuSeqlensQ.sizes, (std::vector<int64_t>{4}));
  EXPECT_EQ(varlen->maxSeqlenKv, 300);

  // q, k and v as views of one fused [B, S, H + 2 HK, D] tensor.
  ForwardArgs fused = validBshdArgs();
  fused.k.sizes[1] = fused.v.sizes[1] = 200;
  const int64_t row = (8 + 2 * 2) * 64;
  fused.q.strides = {200 * row, row, 64, 1};
  fused.k = {0x100000000 + 8 * 64 * 2, DType::BF16, {3, 200, 2, 64},
             {200 * row, row, 64, 1}};
  fused.v = {0x100000000 + 10 * 64 * 2, DType::BF16, {3, 200, 2, 64},
             {200 * row, row, 64, 1}};
  varlen = bshdAsVarlen(fused, 0x900000000);
  ASSERT_TRUE(varlen.ok()) << varlen.message();
  EXPECT_EQ(varlen->k.strides, (std::vector<int64_t>{row, 64, 1}));
  p = validateForward(fused);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->tokenStrides.q, row);

  // One token per sequence: any batch stride is the token stride. One
  // sequence: lse dense is the view. No sinks, a window, a scale.
  ForwardArgs decode = validBshdArgs();
  decode.q = {0x100000000, DType::BF16, {3, 1, 8, 64}, {4096, 999, 64, 1}};
  decode.out.sizes[1] = 1;
  decode.lse = {0x500000000, DType::F32, {3, 8, 1}, {1, 3, 1}};
  decode.sinks.reset();
  decode.window = 128;
  decode.softmaxScale = 0.2;
  varlen = bshdAsVarlen(decode, 0x900000000);
  ASSERT_TRUE(varlen.ok()) << varlen.message();
  EXPECT_EQ(varlen->q.strides, (std::vector<int64_t>{4096, 64, 1}));
  p = validateForward(decode);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->variant.describe(), "bf16 D=64 causal sliding-window f32 sinks");
  ForwardArgs single = validBshdArgs();
  for (DeviceTensor *t : {&single.q, &single.k, &single.v, &single.out})
    t->sizes[0] = 1;
  single.lse = tensor(0x500000000, DType::F32, {1, 8, 200});
  p = validateForward(single);
  ASSERT_TRUE(p.ok()) << p.message();
}

TEST(Attention, EveryBshdRefusal) {
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.q.sizes = {600, 8, 64}; }),
                  "q: has 3 dimensions [600, 8, 64]; expected 4 ([B, S, heads, "
                  "D])");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.v.sizes[1] = -1; }),
                  "v: has a size outside [0, 2^31-1] in [3, -1, 2, 64]");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.k.strides = {1, 1}; }),
                  "k: has 2 strides for 4 dimensions");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    a.out.strides = {int64_t(1) << 41, 512, 64, 1};
                  }),
                  "out: has a stride outside [0, 2^40]");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    a.q.strides = {200 * 512 + 64, 512, 64, 1};
                  }),
                  "q: batch stride 102464 is not the length 200 times the "
                  "token stride 512 (the kernels take the batch's tokens "
                  "evenly spaced); copy it with .contiguous()");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.k.sizes[0] = 2; }),
                  "k: batch 2 differs from q's 3");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.out.sizes[0] = 4; }),
                  "out: batch 4 differs from q's 3");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    for (DeviceTensor *t : {&a.q, &a.k, &a.v, &a.out})
                      t->sizes[0] = 0;
                    a.lse.sizes[0] = 0;
                  }),
                  "q, k: need at least one sequence of at least one query and "
                  "one key, got B=0 SQ=200 SKV=300");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    a.k.sizes[1] = a.v.sizes[1] = 0;
                  }),
                  "got B=3 SQ=200 SKV=0");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    for (DeviceTensor *t : {&a.q, &a.k, &a.v, &a.out})
                      t->sizes = {40000, 1, t->sizes[2], 64};
                    a.lse = {a.lse.data, DType::F32, {40000, 8, 1}, {1, 40000, 1}};
                  }),
                  "q: batch 40000 x 2 kv heads exceed the 65535 blocks of a "
                  "grid dimension");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    for (DeviceTensor *t : {&a.q, &a.k, &a.v, &a.out})
                      t->sizes = {70000, 1, t->sizes[2], 64};
                    a.lse = {a.lse.data, DType::F32, {70000, 8, 1}, {1, 70000, 1}};
                    a.window = 16;
                  }),
                  "q: batch 70000 exceed the 65535 blocks of a grid dimension");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.lse.sizes = {8, 600}; }),
                  "lse: sizes [8, 600] differ from [B, H, SQ] of q, [3, 8, "
                  "200]");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.lse.strides = {1600, 200, 1}; }),
                  "lse: strides [1600, 200, 1] are not those of a [B, H, SQ] "
                  "view of an [H, B * SQ] tensor, [200, 600, 1]");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.lse.strides.clear(); }),
                  "lse: a dense [B, H, SQ] tensor is not the [H, B * SQ] "
                  "memory the kernels write");
  // What the varlen call checks, named as the BSHD arguments.
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.k.dtype = DType::F16; }),
                  "k: has dtype f16; expected bf16");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.q.sizes[3] = 96; }),
                  "head dimension 96 is not compiled");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    a.q.sizes[2] = a.out.sizes[2] = 7;
                    a.lse.sizes[1] = 7;
                  }),
                  "k: 2 kv heads do not divide q's 7 heads");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.out.data = a.q.data; }),
                  "out: overlaps q in memory");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) {
                    a.causal = false;
                    a.window = 4;
                  }),
                  "window: a sliding window of 4 keys needs causal=true");
  EXPECT_CONTAINS(bshdError([](ForwardArgs &a) { a.q.data += 2; }),
                  "q: the address is not 16-byte aligned");
}

TEST(Attention, BundleForACall) {
  Expected<SinkFwdVariant> variant = sinkFwdVariantOf(fwdBundle());
  ASSERT_TRUE(variant.ok()) << variant.message();
  EXPECT_EQ(variant->describe(), "bf16 D=64 causal f32 sinks");
  Expected<VarlenForwardProblem> problem = validateVarlenForward(validArgs());
  ASSERT_TRUE(problem.ok());
  Expected<Bundle> shaped = sinkFwdForProblem(fwdBundle(), *problem);
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "q")->shape, (std::vector<uint64_t>{300, 512}));
  EXPECT_EQ(findParam(*shaped, "v")->shape, (std::vector<uint64_t>{500, 128}));
  EXPECT_EQ(findParam(*shaped, "lse")->shape, (std::vector<uint64_t>{8, 300}));
  // (H / HK, ceil(200 / 64), HK x B).
  EXPECT_EQ(shaped->grid, (Dim3{4, 4, 4}));
  // Token strides reach the descriptors and the tensor maps.
  VarlenForwardArgs fused = validArgs();
  fused.q.sizes[0] = fused.out.sizes[0] = fused.lse.sizes[1] = 500;
  fused.q.strides = fused.k.strides = fused.v.strides = {768, 64, 1};
  Expected<VarlenForwardProblem> fusedProblem = validateVarlenForward(fused);
  ASSERT_TRUE(fusedProblem.ok()) << fusedProblem.message();
  Expected<Bundle> strided = sinkFwdForProblem(fwdBundle(), *fusedProblem);
  ASSERT_TRUE(strided.ok()) << strided.message();
  EXPECT_EQ(findParam(*strided, "k")->strides, (std::vector<uint64_t>{768, 1}));
  EXPECT_EQ(findParam(*strided, "o")->strides, (std::vector<uint64_t>{512, 1}));
  Bundle dense = fwdBundle();
  for (BundleParam &p : dense.params)
    p.strides.clear();
  EXPECT_CONTAINS(sinkFwdForProblem(dense, *fusedProblem).message(),
                  "strides [768, 1] are not row-major; the kernel takes a "
                  "dense tensor");
  // Other heads, and another scale, from the same bundle.
  VarlenForwardArgs gqa = validArgs();
  gqa.q.sizes = gqa.out.sizes = {300, 64, 64};
  gqa.lse.sizes = {64, 300};
  gqa.sinks->sizes = {64};
  gqa.k.sizes = gqa.v.sizes = {500, 8, 64};
  gqa.softmaxScale = 0.5;
  Expected<VarlenForwardProblem> wide = validateVarlenForward(gqa);
  ASSERT_TRUE(wide.ok()) << wide.message();
  shaped = sinkFwdForProblem(fwdBundle(), *wide);
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "q")->shape, (std::vector<uint64_t>{300, 4096}));
  EXPECT_EQ(findParam(*shaped, "k")->shape, (std::vector<uint64_t>{500, 512}));
  EXPECT_EQ(findParam(*shaped, "sinks")->shape, (std::vector<uint64_t>{64}));
  EXPECT_EQ(findParam(*shaped, "lse")->shape, (std::vector<uint64_t>{64, 300}));
  EXPECT_FLOAT_EQ(float(findParam(*shaped, "scale_log2")->floatValue),
                  float(0.5 * 1.4426950408889634));
  EXPECT_EQ(shaped->grid, (Dim3{8, 4, 16}));
  // A windowed kernel takes the call's window; (blocks, H, B).
  VarlenForwardArgs windowedArgs = validArgs();
  windowedArgs.window = 517;
  Expected<VarlenForwardProblem> windowProblem =
      validateVarlenForward(windowedArgs);
  ASSERT_TRUE(windowProblem.ok()) << windowProblem.message();
  shaped = sinkFwdForProblem(fwdBundle(/*windowed=*/true), *windowProblem);
  ASSERT_TRUE(shaped.ok()) << shaped.message();
  EXPECT_EQ(findParam(*shaped, "window")->intValue, 517);
  EXPECT_EQ(shaped->grid, (Dim3{4, 8, 2}));
  VarlenForwardProblem tall = *problem;
  tall.maxSeqlenQ = 64 * 65536;
  Expected<Bundle> tooTall = sinkFwdForProblem(fwdBundle(), tall);
  ASSERT_FALSE(tooTall.ok());
  EXPECT_CONTAINS(tooTall.message(), "max_seqlen_q 4194304: the longest query "
                                     "sequence needs 65536 row blocks");

  Expected<Bundle> refused = sinkFwdForProblem(fwdBundle(), *windowProblem);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.message(), "the bundle serves bf16 D=64 causal f32 "
                                     "sinks, the call needs bf16 D=64 causal "
                                     "sliding-window f32 sinks");
  VarlenForwardProblem full = *problem;
  full.variant.causal = false;
  EXPECT_CONTAINS(sinkFwdForProblem(fwdBundle(), full).message(),
                  "the call needs bf16 D=64 non-causal f32 sinks");
  Bundle older = fwdBundle();
  older.params.resize(older.params.size() - 2);
  EXPECT_CONTAINS(sinkFwdVariantOf(older).message(),
                  "takes no units for its sequence offsets: compiled by an "
                  "older SinkAttn; recompile it");
  older.params.pop_back();
  EXPECT_CONTAINS(sinkFwdVariantOf(older).message(),
                  "takes no softmax scale: compiled by an older SinkAttn");
  Bundle fixed = fwdBundle();
  fixed.params[0].descriptor = false;
  fixed.params[0].dynamicDims.clear();
  EXPECT_CONTAINS(sinkFwdVariantOf(fixed).message(),
                  "is not a varlen sink-fwd bundle for run-time shapes");
  Bundle copy = fwdBundle();
  copy.kernel = "tma-copy";
  EXPECT_CONTAINS(sinkFwdVariantOf(copy).message(), "holds a tma-copy kernel, not sink-fwd");
  Bundle sinkless = fwdBundle();
  sinkless.params.erase(
      std::find_if(sinkless.params.begin(), sinkless.params.end(),
                   [](const BundleParam &p) { return p.name == "sinks"; }));
  EXPECT_CONTAINS(sinkFwdVariantOf(sinkless).message(), "has no sinks buffer");
}

/// A directory of bundles: the ones a call can use, each with its form;
/// two of one variant and form refused; why others were passed over.
/// validArgs()'s problem's backward: dout, dq, dk, dv and dsinks at
/// addresses of their own.
VarlenBackwardArgs validBackwardArgs() {
  VarlenForwardArgs f = validArgs();
  VarlenBackwardArgs a;
  a.q = f.q, a.k = f.k, a.v = f.v, a.out = f.out, a.lse = f.lse;
  a.sinks = f.sinks;
  a.cuSeqlensQ = f.cuSeqlensQ, a.cuSeqlensKv = f.cuSeqlensKv;
  a.maxSeqlenQ = f.maxSeqlenQ, a.maxSeqlenKv = f.maxSeqlenKv;
  a.dout = tensor(0x900000000, DType::BF16, {300, 8, 64});
  a.dq = tensor(0xa00000000, DType::BF16, {300, 8, 64});
  a.dk = tensor(0xb00000000, DType::BF16, {500, 2, 64});
  a.dv = tensor(0xc00000000, DType::BF16, {500, 2, 64});
  a.dsinks = tensor(0xd00000000, DType::F32, {8});
  return a;
}

std::string backwardError(void (*edit)(VarlenBackwardArgs &)) {
  VarlenBackwardArgs a = validBackwardArgs();
  edit(a);
  Expected<VarlenBackwardProblem> p = validateVarlenBackward(a);
  EXPECT_FALSE(p.ok());
  return p.ok() ? std::string() : p.message();
}

TEST(Attention, ValidBackwardCall) {
  Expected<VarlenBackwardProblem> p =
      validateVarlenBackward(validBackwardArgs());
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->forward.heads, 8);
  EXPECT_EQ(p->forward.kvHeads, 2);
  EXPECT_EQ(p->gradientStrides.dQ, 0);
  // Gradients as views of fused tensors: token strides of their own.
  VarlenBackwardArgs strided = validBackwardArgs();
  strided.dq.strides = {768, 64, 1};
  strided.dk.strides = {256, 64, 1};
  strided.dv.strides = {256, 64, 1};
  strided.dv.data = strided.dk.data + 128 * 2;
  p = validateVarlenBackward(strided);
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->gradientStrides.dQ, 768);
  EXPECT_EQ(p->gradientStrides.dK, 256);
  EXPECT_EQ(p->gradientStrides.dV, 256);
  // No sinks, no dsinks.
  VarlenBackwardArgs none = validBackwardArgs();
  none.sinks.reset();
  none.dsinks.reset();
  EXPECT_TRUE(validateVarlenBackward(none).ok());
}

TEST(Attention, EveryBackwardRefusal) {
  // The forward's arguments are the forward's checks.
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.lse.sizes = {8, 299};
                  }),
                  "lse: sizes [8, 299] differ from [H, Tq] of q's [8, 300]");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.causal = false; }),
                  "causal: the backward is causal only so far");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dout.dtype = DType::F16; }),
                  "dout: has dtype f16; expected bf16");
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.dout.sizes = {300, 8, 128};
                  }),
                  "dout: sizes [300, 8, 128] differ from q's [300, 8, 64]");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dq.data = 0; }),
                  "dq: the device address is null");
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.dk.sizes = {500, 8, 64};
                  }),
                  "dk: sizes [500, 8, 64] differ from k's [500, 2, 64]");
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.dv.sizes = {499, 2, 64};
                  }),
                  "dv: sizes [499, 2, 64] differ from v's [500, 2, 64]");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dq.data += 8; }),
                  "dq: the address is not 16-byte aligned");
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.dk.strides = {132, 64, 1};
                  }),
                  "dk: token stride 132 is not a multiple of 16 bytes");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dsinks.reset(); }),
                  "dsinks: a call with sinks needs their gradient's [H] f32 "
                  "tensor");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.sinks.reset(); }),
                  "dsinks: given without sinks");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dsinks->dtype = DType::BF16; }),
                  "dsinks: has dtype bf16; expected f32");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dsinks->sizes = {2}; }),
                  "dsinks: sizes [2] differ from [H] of q's [8]");
  // Outputs apart from the inputs and from each other.
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dq.data = a.q.data; }),
                  "dq: overlaps q in memory");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dk.data = a.dout.data; }),
                  "dk: overlaps dout in memory");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dv.data = a.dk.data + 64; }),
                  "dv: overlaps dk in memory");
  // Views of one fused tensor overlap where their rows do.
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.dk.strides = a.dv.strides = {256, 64, 1};
                    a.dv.data = a.dk.data + 128 * 2 - 16;
                  }),
                  "dv: overlaps dk in memory");
  EXPECT_CONTAINS(backwardError([](auto &a) {
                    a.dk.strides = a.dv.strides = {256, 64, 1};
                    a.dk.data = a.dv.data + 128 * 2 + 16;
                  }),
                  "dv: overlaps dk in memory");
  EXPECT_CONTAINS(
      backwardError([](auto &a) { a.dsinks->data = a.sinks->data; }),
      "dsinks: overlaps sinks in memory");
  EXPECT_CONTAINS(backwardError([](auto &a) { a.dq.data = a.lse.data; }),
                  "dq: overlaps lse in memory");
}

/// A BSHD backward: 3 sequences of 200 queries and 300 keys, H 8, HK 2,
/// D 64, lse the [B, H, SQ] view of [H, B * SQ].
BackwardArgs validBshdBackwardArgs() {
  BackwardArgs a;
  a.q = tensor(0x100000000, DType::BF16, {3, 200, 8, 64});
  a.k = tensor(0x200000000, DType::BF16, {3, 300, 2, 64});
  a.v = tensor(0x300000000, DType::BF16, {3, 300, 2, 64});
  a.out = tensor(0x400000000, DType::BF16, {3, 200, 8, 64});
  a.lse = {0x500000000, DType::F32, {3, 8, 200}, {200, 600, 1}};
  a.dout = tensor(0x600000000, DType::BF16, {3, 200, 8, 64});
  a.dq = tensor(0x700000000, DType::BF16, {3, 200, 8, 64});
  a.dk = tensor(0x800000000, DType::BF16, {3, 300, 2, 64});
  a.dv = tensor(0x900000000, DType::BF16, {3, 300, 2, 64});
  return a;
}

TEST(Attention, BshdBackward) {
  Expected<VarlenBackwardProblem> p = validateBackward(validBshdBackwardArgs());
  ASSERT_TRUE(p.ok()) << p.message();
  EXPECT_EQ(p->forward.batch, 3);
  EXPECT_EQ(p->forward.tokensQ, 600);
  EXPECT_EQ(p->forward.tokensKv, 900);
  EXPECT_EQ(p->forward.offsetUnits.q, 200);
  EXPECT_EQ(p->forward.offsetUnits.kv, 300);
  Expected<VarlenBackwardArgs> varlen =
      bshdBackwardAsVarlen(validBshdBackwardArgs(), 0xa00000000);
  ASSERT_TRUE(varlen.ok()) << varlen.message();
  EXPECT_EQ(varlen->dq.sizes, (std::vector<int64_t>{600, 8, 64}));
  EXPECT_EQ(varlen->dk.sizes, (std::vector<int64_t>{900, 2, 64}));
  EXPECT_EQ(varlen->cuSeqlensQ.data, 0xa00000000u);
  auto refused = [](void (*edit)(BackwardArgs &)) {
    BackwardArgs a = validBshdBackwardArgs();
    edit(a);
    Expected<VarlenBackwardProblem> p = validateBackward(a);
    EXPECT_FALSE(p.ok());
    return p.ok() ? std::string() : p.message();
  };
  EXPECT_CONTAINS(refused([](auto &a) {
                    a.dq.sizes = {3, 100, 8, 64};
                  }),
                  "dq: sizes [3, 100, 8, 64] differ in batch or length from "
                  "[3, 200, 8, 64]");
  EXPECT_CONTAINS(refused([](auto &a) {
                    a.dv.sizes = {2, 300, 2, 64};
                  }),
                  "dv: sizes [2, 300, 2, 64] differ in batch or length");
  EXPECT_CONTAINS(refused([](auto &a) {
                    a.dout.sizes = {600, 8, 64};
                  }),
                  "dout: has 3 dimensions [600, 8, 64]; expected 4");
  EXPECT_CONTAINS(refused([](auto &a) {
                    a.dk.strides = {300 * 256, 128, 64, 1};
                  }),
                  "dk: batch stride 76800 is not the length 300 times the "
                  "token stride 128");
  EXPECT_CONTAINS(refused([](auto &a) { a.lse.strides.clear(); }),
                  "lse: a dense [B, H, SQ] tensor is not the [H, B * SQ] "
                  "memory the kernels write");
  EXPECT_CONTAINS(refused([](auto &a) { a.dk.sizes[2] = 8; }),
                  "dk: sizes [900, 8, 64] differ from k's [900, 2, 64]");
  EXPECT_CONTAINS(refused([](auto &a) { a.causal = false; }),
                  "causal: the backward is causal only so far");
}

TEST(Attention, ScanKernelLibrary) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("sinkattn-scan-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto write = [&](const std::string &name, Bundle b, const char *schedule) {
    b.config["schedule"] = std::string(schedule);
    b.ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n\n"
            ".visible .entry sink_fwd(\n)\n{\n  ret;\n}\n";
    Status written = writeBundle((dir / name).string(), b);
    ASSERT_TRUE(written.ok()) << written.message();
  };
  write("a", fwdBundle(), "plain");
  write("b", fwdBundle(), "ws");
  write("c", fwdBundle(/*windowed=*/true), "plain");
  Bundle older = fwdBundle();
  older.params.erase(older.params.begin() + 8);
  write("d", older, "plain");
  Expected<std::vector<KernelLibraryEntry>> entries =
      scanKernelLibrary(dir.string());
  ASSERT_TRUE(entries.ok()) << entries.message();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].schedule, "plain");
  EXPECT_EQ((*entries)[1].schedule, "ws");
  EXPECT_TRUE((*entries)[2].variant.windowed);
  // A persistent form beside the ws one.
  Bundle persistent = fwdBundle();
  persistent.config["persistent_blocks"] = int64_t(132);
  persistent.config["tile_lists"] = int64_t(1);
  BundleParam tiles = persistent.params[6];
  tiles.name = "tiles";
  persistent.params.insert(persistent.params.begin() + 8, tiles);
  write("bp", persistent, "ws");
  entries = scanKernelLibrary(dir.string());
  ASSERT_TRUE(entries.ok()) << entries.message();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_FALSE((*entries)[1].persistent);
  EXPECT_EQ((*entries)[2].schedule, "ws");
  EXPECT_TRUE((*entries)[2].persistent);
  write("bq", persistent, "ws");
  EXPECT_CONTAINS(scanKernelLibrary(dir.string()).message(),
                  "holds two ws persistent bundles for bf16 D=64 causal f32 "
                  "sinks");
  fs::remove_all(dir / "bq");
  write("e", fwdBundle(), "ws");
  EXPECT_CONTAINS(scanKernelLibrary(dir.string()).message(),
                  "holds two ws bundles for bf16 D=64 causal f32 sinks");
  for (const char *name : {"a", "b", "bp", "c", "e"})
    fs::remove_all(dir / name);
  EXPECT_CONTAINS(scanKernelLibrary(dir.string()).message(),
                  "holds no varlen sink-fwd bundle compiled for run-time "
                  "shapes (passed over; d takes no softmax scale");
  fs::remove_all(dir);
  EXPECT_CONTAINS(scanKernelLibrary(dir.string()).message(), "cannot list it");
}

} // namespace
