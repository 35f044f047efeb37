//===- FakeDriverTest.cpp - The library's calls end to end, on the CPU ----===//
//
// rt::AttentionLibrary over the built kernel library, on a CUDA driver
// without a GPU (FakeCudaDriver.cpp): what a call loads, uploads, encodes
// and launches, read from the fake driver's log. The numbers the kernels
// compute are the GPU tests' (test/GPU/attention-library.test).
//
//===----------------------------------------------------------------------===//

#include "CApiTensor.h"
#include "SinkAttn-c/Attention.h"
#include "SinkAttn/Runtime/Attention.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

using namespace sinkattn::rt;

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

namespace {

/// The fake driver's log: the lines recorded since the last clear.
struct FakeDriverLog {
  const char *(*text)() = nullptr;
  void (*clear)() = nullptr;
  /// Makes the next call of an entry point fail (FakeCudaDriver.cpp).
  void (*failNext)(const char *function) = nullptr;

  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    std::istringstream in(text());
    for (std::string line; std::getline(in, line);)
      result.push_back(line);
    return result;
  }
  /// The lines that start with `prefix`.
  std::vector<std::string> starting(const std::string &prefix) const {
    std::vector<std::string> result;
    for (const std::string &line : lines())
      if (line.rfind(prefix, 0) == 0)
        result.push_back(line);
    return result;
  }
};

/// Device buffers for a call: the fake driver's memory is host memory.
struct Buffers {
  std::vector<DeviceBuffer> held;
  CUdeviceptr allocate(const Context &ctx, size_t bytes) {
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(ctx, bytes);
    EXPECT_TRUE(buffer.ok()) << buffer.message();
    held.push_back(buffer.take());
    return held.back().address();
  }
};

class FakeDriver : public ::testing::Test {
protected:
  void SetUp() override {
    Expected<std::shared_ptr<const CudaDriver>> driver =
        CudaDriver::load(SINKATTN_FAKE_CUDA_DRIVER);
    ASSERT_TRUE(driver.ok()) << driver.message();
    // The same handle CudaDriver::load opened (never closed).
    void *handle = dlopen(SINKATTN_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(handle, nullptr);
    log.text = reinterpret_cast<const char *(*)()>(dlsym(handle, "fakeCudaLog"));
    log.clear = reinterpret_cast<void (*)()>(dlsym(handle, "fakeCudaClearLog"));
    log.failNext = reinterpret_cast<void (*)(const char *)>(
        dlsym(handle, "fakeCudaFailNext"));
    ASSERT_TRUE(log.text && log.clear && log.failNext);
    driver_ = *driver;
    // No failure left armed by a test whose call never came.
    log.failNext("");
    Expected<Context> created = Context::create(*driver, 0);
    ASSERT_TRUE(created.ok()) << created.message();
    context = std::make_unique<Context>(created.take());
    log.clear();
  }

  std::unique_ptr<Context> context;
  std::shared_ptr<const CudaDriver> driver_;
  FakeDriverLog log;
};

/// A valid BSHD call of B 2, SQ 100, SKV 100, H 4, HK 4, D 64, with sinks.
struct SmallCall {
  Buffers memory;
  ForwardArgs args;
  explicit SmallCall(const Context &ctx) {
    const int64_t b = 2, s = 100, h = 4, d = 64;
    auto tensor = [&](std::vector<int64_t> sizes, DType dtype, size_t bytes) {
      return DeviceTensor{memory.allocate(ctx, bytes), dtype, sizes, {}};
    };
    args.q = tensor({b, s, h, d}, DType::BF16, b * s * h * d * 2);
    args.k = tensor({b, s, h, d}, DType::BF16, b * s * h * d * 2);
    args.v = tensor({b, s, h, d}, DType::BF16, b * s * h * d * 2);
    args.out = tensor({b, s, h, d}, DType::BF16, b * s * h * d * 2);
    args.lse = tensor({b, h, s}, DType::F32, h * b * s * 4);
    args.lse.strides = {s, b * s, 1};
    args.sinks = tensor({h}, DType::F32, h * 4);
  }
};

TEST_F(FakeDriver, ContextAndDevice) {
  EXPECT_EQ(context->info().name, "Fake H200");
  EXPECT_EQ(context->info().smName(), "sm_90");
  EXPECT_EQ(context->info().smCount, 132);
}

#ifdef SINKATTN_HAS_KERNEL_LIBRARY
TEST_F(FakeDriver, BshdAndVarlenCallsOverTheKernelLibrary) {
  Expected<AttentionLibrary> opened = AttentionLibrary::open(
      *context, SINKATTN_KERNEL_LIBRARY_DIR);
  ASSERT_TRUE(opened.ok()) << opened.message();
  AttentionLibrary &library = *opened;
  log.clear();

  // BSHD: B 3, SQ 200, SKV 300, H 8, HK 2, D 128, causal, sinks.
  Buffers memory;
  const int64_t b = 3, sq = 200, skv = 300, h = 8, hk = 2, d = 128;
  ForwardArgs args;
  args.q = {memory.allocate(*context, b * sq * h * d * 2), DType::BF16,
            {b, sq, h, d}, {}};
  args.k = {memory.allocate(*context, b * skv * hk * d * 2), DType::BF16,
            {b, skv, hk, d}, {}};
  args.v = {memory.allocate(*context, b * skv * hk * d * 2), DType::BF16,
            {b, skv, hk, d}, {}};
  args.out = {memory.allocate(*context, b * sq * h * d * 2), DType::BF16,
              {b, sq, h, d}, {}};
  args.lse = {memory.allocate(*context, h * b * sq * 4), DType::F32,
              {b, h, sq}, {sq, b * sq, 1}};
  args.sinks = DeviceTensor{memory.allocate(*context, h * 4), DType::F32,
                            {h}, {}};
  log.clear();
  Status ran = library.forward(args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();

  // The offsets 0, 1, ..., 65535 uploaded once; the kernel loaded from its
  // SASS where the build assembled it (no JIT); Q's map over B * SQ token
  // rows of H * D; one launch: the 4 query heads of a kv head, ceil(200 /
  // 128) row blocks (D 128, ws), 3 sequences x 2 kv heads.
  EXPECT_EQ(log.starting("copy to device").front(),
            "copy to device " + std::to_string(65536 * 4));
  CUdeviceptr table = *library.offsetTable();
  std::vector<int32_t> offsets(65536);
  std::memcpy(offsets.data(), reinterpret_cast<const void *>(table),
              offsets.size() * 4);
  for (int32_t i : {0, 1, 2, 3, 65535})
    EXPECT_EQ(offsets[size_t(i)], i);
  std::vector<std::string> modules = log.starting("load module");
  ASSERT_EQ(modules.size(), 1u);
#ifdef SINKATTN_KERNEL_LIBRARY_HAS_SASS
  EXPECT_EQ(modules[0], "load module cubin");
#else
  EXPECT_EQ(modules[0], "load module ptx");
#endif
  std::vector<std::string> maps = log.starting("tensor map");
  ASSERT_FALSE(maps.empty());
  EXPECT_EQ(maps[0], "tensor map at " + std::to_string(args.q.data) +
                         " dims 1024,600 strides 2048 box 64,128");
  std::vector<std::string> launches = log.starting("launch");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].substr(0, launches[0].find(" block")),
            "launch sink_fwd grid 4,2,6");

  // A second BSHD call of other lengths and no sinks: nothing loaded or
  // uploaded again but the -inf sink logits of a call without sinks (8 x
  // f32), its own grid.
  log.clear();
  ForwardArgs other = args;
  for (DeviceTensor *t : {&other.q, &other.out})
    t->sizes[1] = 1;
  for (DeviceTensor *t : {&other.k, &other.v})
    t->sizes[1] = 1000;
  other.lse = {args.lse.data, DType::F32, {b, h, 1}, {1, b, 1}};
  other.sinks.reset();
  ran = library.forward(other, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_TRUE(log.starting("load module").empty());
  EXPECT_EQ(log.starting("copy to device"),
            std::vector<std::string>{"copy to device 32"});
  launches = log.starting("launch");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].substr(0, launches[0].find(" block")),
            "launch sink_fwd grid 4,1,6");
  EXPECT_EQ(library.compiledKernels(), 1u);

  // A varlen call whose longest sequence has 4000 keys takes the form auto
  // picks for it (D 128: overlap from 17 key blocks), the variant's other
  // kernel: loaded now; its offsets are the caller's.
  log.clear();
  VarlenForwardArgs varlen;
  varlen.q = {args.q.data, DType::BF16, {600, h, d}, {}};
  varlen.k = {args.k.data, DType::BF16, {900, hk, d}, {}};
  varlen.v = {args.v.data, DType::BF16, {900, hk, d}, {}};
  varlen.out = {args.out.data, DType::BF16, {600, h, d}, {}};
  varlen.lse = {args.lse.data, DType::F32, {h, 600}, {}};
  varlen.sinks = args.sinks;
  CUdeviceptr cu = memory.allocate(*context, 2 * 4);
  varlen.cuSeqlensQ = varlen.cuSeqlensKv = {cu, DType::I32, {2}, {}};
  varlen.maxSeqlenQ = 600;
  varlen.maxSeqlenKv = 900;
  ran = library.forwardVarlen(varlen, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_TRUE(log.starting("load module").empty());
  varlen.k.sizes[0] = varlen.v.sizes[0] = 4000;
  varlen.maxSeqlenKv = 4000;
  CUdeviceptr k4000 = memory.allocate(*context, 4000 * hk * d * 2);
  varlen.k.data = k4000;
  varlen.v.data = memory.allocate(*context, 4000 * hk * d * 2);
  log.clear();
  ran = library.forwardVarlen(varlen, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(log.starting("load module").size(), 1u);
  EXPECT_EQ(library.compiledKernels(), 2u);
}

/// The backward over the kernel library: the GQA kernel of the variant,
/// its scratch carved from the caller's workspace, its launches after the
/// forward's (which the caller ran).
TEST_F(FakeDriver, BackwardCallsOverTheKernelLibrary) {
  Expected<AttentionLibrary> opened =
      AttentionLibrary::open(*context, SINKATTN_KERNEL_LIBRARY_DIR);
  ASSERT_TRUE(opened.ok()) << opened.message();
  AttentionLibrary &library = *opened;
  Buffers memory;
  const int64_t tq = 300, tkv = 500, h = 8, hk = 2, d = 64;
  auto tensor = [&](DType dtype, std::vector<int64_t> sizes) {
    size_t bytes = dtypeSize(dtype);
    for (int64_t size : sizes)
      bytes *= size_t(size);
    return DeviceTensor{memory.allocate(*context, bytes), dtype, sizes, {}};
  };
  VarlenBackwardArgs args;
  args.q = tensor(DType::BF16, {tq, h, d});
  args.k = tensor(DType::BF16, {tkv, hk, d});
  args.v = tensor(DType::BF16, {tkv, hk, d});
  args.out = tensor(DType::BF16, {tq, h, d});
  args.lse = tensor(DType::F32, {h, tq});
  args.dout = tensor(DType::BF16, {tq, h, d});
  args.dq = tensor(DType::BF16, {tq, h, d});
  args.dk = tensor(DType::BF16, {tkv, hk, d});
  args.dv = tensor(DType::BF16, {tkv, hk, d});
  args.sinks = tensor(DType::F32, {h});
  args.dsinks = tensor(DType::F32, {h});
  args.cuSeqlensQ = tensor(DType::I32, {3});
  args.cuSeqlensKv = tensor(DType::I32, {3});
  args.maxSeqlenQ = 200;
  args.maxSeqlenKv = 400;
  Expected<size_t> bytes = library.backwardWorkspaceBytes(args);
  ASSERT_TRUE(bytes.ok()) << bytes.message();
  // delta and the sink terms [H, Tq] f32, the records [B, H, ceil(200 /
  // 64), 2, 64] f32, the shares [H, Tkv, D] f32 twice, the share counters
  // [B x HK x ceil(400 / 64)] and the dsink counters [H] i32, each rounded
  // up to 256 bytes.
  auto rounded = [](size_t n) { return (n + 255) / 256 * 256; };
  EXPECT_EQ(*bytes, 2 * rounded(h * tq * 4) + rounded(2 * h * 4 * 2 * 64 * 4) +
                        2 * rounded(h * tkv * d * 4) + rounded(2 * hk * 7 * 4) +
                        rounded(h * 4));
  EXPECT_CONTAINS(library.backwardVarlen(args, nullptr).message(),
                  "workspace: 0 bytes; the call needs " +
                      std::to_string(*bytes));
  // The workspace may not share memory with a tensor of the call (here dq,
  // and whatever the host allocator put after it).
  args.workspace = args.dq.data;
  args.workspaceBytes = *bytes;
  EXPECT_CONTAINS(library.backwardVarlen(args, nullptr).message(),
                  "workspace: overlaps ");
  args.workspace = memory.allocate(*context, *bytes);
  log.clear();
  Status ran = library.backwardVarlen(args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  std::vector<std::string> launches = log.starting("launch");
  ASSERT_EQ(launches.size(), 3u);
  auto shapeOf = [](const std::string &launch) {
    return launch.substr(0, launch.find(" block"));
  };
  // Preprocess per 64 query rows, head and sequence; dK/dV per 64 keys
  // (x: the 4 query heads of a kv head, z: sequences x kv heads); dQ per
  // 64 query rows.
  EXPECT_EQ(shapeOf(launches[0]), "launch sink_bwd_preprocess grid 4,8,2");
  EXPECT_EQ(shapeOf(launches[1]), "launch sink_bwd_dkdv grid 4,7,4");
  EXPECT_EQ(shapeOf(launches[2]), "launch sink_bwd_dq grid 4,4,4");
  EXPECT_EQ(library.compiledKernels(), 1u);

  // A call without sinks writes its dsinks into the workspace; MHA takes
  // the GQA kernel too (the library has no MHA one); nothing is loaded
  // again.
  args.sinks.reset();
  args.dsinks.reset();
  args.k.sizes[1] = args.v.sizes[1] = args.dk.sizes[1] = args.dv.sizes[1] = 8;
  for (DeviceTensor *t : {&args.k, &args.v, &args.dk, &args.dv})
    t->data = memory.allocate(*context, size_t(tkv * h * d * 2));
  Expected<size_t> mhaBytes = library.backwardWorkspaceBytes(args);
  ASSERT_TRUE(mhaBytes.ok()) << mhaBytes.message();
  EXPECT_EQ(*mhaBytes - *bytes,
            rounded(h * 4) + rounded(2 * h * 7 * 4) - rounded(2 * hk * 7 * 4));
  args.workspace = memory.allocate(*context, *mhaBytes);
  args.workspaceBytes = *mhaBytes;
  log.clear();
  ran = library.backwardVarlen(args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_TRUE(log.starting("load module").empty());
  EXPECT_EQ(library.compiledKernels(), 1u);
  args.causal = false;
  EXPECT_CONTAINS(library.backwardVarlen(args, nullptr).message(),
                  "causal: the backward is causal only so far");

  // BSHD: 2 sequences of 128 queries and 250 keys over the same memory,
  // the offsets 0, 1, 2 in units of the lengths; the preprocess and dQ
  // grids cover 128 rows, dK/dV's 250 keys.
  BackwardArgs bshd;
  auto batched = [](const DeviceTensor &rows, int64_t length) {
    return DeviceTensor{
        rows.data, rows.dtype, {2, length, rows.sizes[1], rows.sizes[2]}, {}};
  };
  bshd.q = batched(args.q, 128);
  bshd.out = batched(args.out, 128);
  bshd.dout = batched(args.dout, 128);
  bshd.dq = batched(args.dq, 128);
  bshd.k = batched(args.k, 250);
  bshd.v = batched(args.v, 250);
  bshd.dk = batched(args.dk, 250);
  bshd.dv = batched(args.dv, 250);
  bshd.lse = {args.lse.data, DType::F32, {2, h, 128}, {128, 256, 1}};
  Expected<size_t> bshdBytes = library.backwardWorkspaceBytes(bshd);
  ASSERT_TRUE(bshdBytes.ok()) << bshdBytes.message();
  bshd.workspace = memory.allocate(*context, *bshdBytes);
  bshd.workspaceBytes = *bshdBytes;
  log.clear();
  ran = library.backward(bshd, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  launches = log.starting("launch");
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(shapeOf(launches[0]), "launch sink_bwd_preprocess grid 2,8,2");
  EXPECT_EQ(shapeOf(launches[1]), "launch sink_bwd_dkdv grid 1,4,16");
  EXPECT_EQ(shapeOf(launches[2]), "launch sink_bwd_dq grid 1,2,16");
}

/// Calls of one length run persistent where auto would compile them so:
/// one block per SM over a tile table built for the call's sizes,
/// uploaded once per sizes; a varlen call of several sequences does not.
TEST_F(FakeDriver, PersistentCallsOverTheKernelLibrary) {
  Expected<AttentionLibrary> opened =
      AttentionLibrary::open(*context, SINKATTN_KERNEL_LIBRARY_DIR);
  ASSERT_TRUE(opened.ok()) << opened.message();
  AttentionLibrary &library = *opened;
  // BSHD: B 2, SQ = SKV 1000, H 16, HK 2, D 128: 8 row blocks x 16 heads
  // x 2 sequences = 256 tiles, more than the 132 SMs; 8 key blocks (ws).
  Buffers memory;
  const int64_t b = 2, s = 1000, h = 16, d = 128;
  auto bshdCall = [&](int64_t kvHeads) {
    ForwardArgs args;
    args.q = {memory.allocate(*context, b * s * h * d * 2),
              DType::BF16,
              {b, s, h, d},
              {}};
    args.k = {memory.allocate(*context, b * s * kvHeads * d * 2),
              DType::BF16,
              {b, s, kvHeads, d},
              {}};
    args.v = {memory.allocate(*context, b * s * kvHeads * d * 2),
              DType::BF16,
              {b, s, kvHeads, d},
              {}};
    args.out = {memory.allocate(*context, b * s * h * d * 2),
                DType::BF16,
                {b, s, h, d},
                {}};
    args.lse = {memory.allocate(*context, h * b * s * 4),
                DType::F32,
                {b, h, s},
                {s, b * s, 1}};
    args.sinks =
        DeviceTensor{memory.allocate(*context, h * 4), DType::F32, {h}, {}};
    return args;
  };
  const std::string table =
      "copy to device " + std::to_string((132 + 1 + 256) * 4);
  auto launched = [&]() {
    std::vector<std::string> launches = log.starting("launch");
    EXPECT_EQ(launches.size(), 1u);
    return launches.empty() ? std::string()
                            : launches[0].substr(0, launches[0].find(" block"));
  };
  auto copies = [&](const std::string &line) {
    std::vector<std::string> all = log.starting("copy to device");
    return std::count(all.begin(), all.end(), line);
  };
  ForwardArgs gqa8 = bshdCall(2);
  log.clear();
  Status ran = library.forward(gqa8, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(launched(), "launch sink_fwd grid 132,1,1");
  EXPECT_EQ(copies(table), 1);
  // The same sizes again: the table is reused.
  log.clear();
  ran = library.forward(gqa8, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(launched(), "launch sink_fwd grid 132,1,1");
  EXPECT_TRUE(log.starting("copy to device").empty());
  // Other kv heads group the tiles otherwise: a table of their own.
  ForwardArgs gqa4 = bshdCall(4);
  log.clear();
  ran = library.forward(gqa4, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(copies(table), 1);

  // Varlen: two sequences of 1000 (whose lengths the host does not know)
  // run one block per tile; one sequence of 2000 runs persistent.
  VarlenForwardArgs varlen;
  varlen.q = {gqa8.q.data, DType::BF16, {b * s, h, d}, {}};
  varlen.k = {gqa8.k.data, DType::BF16, {b * s, 2, d}, {}};
  varlen.v = {gqa8.v.data, DType::BF16, {b * s, 2, d}, {}};
  varlen.out = {gqa8.out.data, DType::BF16, {b * s, h, d}, {}};
  varlen.lse = {gqa8.lse.data, DType::F32, {h, b * s}, {}};
  varlen.sinks = gqa8.sinks;
  CUdeviceptr cu = memory.allocate(*context, 3 * 4);
  varlen.cuSeqlensQ = varlen.cuSeqlensKv = {cu, DType::I32, {3}, {}};
  varlen.maxSeqlenQ = varlen.maxSeqlenKv = s;
  log.clear();
  ran = library.forwardVarlen(varlen, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(launched(), "launch sink_fwd grid 8,8,4");
  varlen.cuSeqlensQ.sizes = varlen.cuSeqlensKv.sizes = {2};
  varlen.maxSeqlenQ = varlen.maxSeqlenKv = b * s;
  log.clear();
  ran = library.forwardVarlen(varlen, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(launched(), "launch sink_fwd grid 132,1,1");
  EXPECT_EQ(copies("copy to device " + std::to_string((132 + 1 + 256) * 4)), 1);
}

/// runReshaped trusts a bundle made from the loaded one, but not one with
/// other launches or params.
TEST_F(FakeDriver, ReshapedRunsRefuseAnotherBundle) {
  Expected<Bundle> bundle =
      readBundle(std::string(SINKATTN_KERNEL_LIBRARY_DIR) +
                 "/fwd-bf16-d64-causal-f32-sinks-plain");
  ASSERT_TRUE(bundle.ok()) << bundle.message();
  Expected<LoadedBundle> loaded = LoadedBundle::load(*context, *bundle);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  Bundle renamed = *bundle;
  renamed.params[0].name = "q2";
  EXPECT_CONTAINS(loaded->runReshaped(renamed, {}, nullptr).message(),
                  "the re-shaped bundle's launches or params are not the "
                  "loaded bundle's");
  Bundle fewer = *bundle;
  fewer.params.pop_back();
  EXPECT_CONTAINS(loaded->runReshaped(fewer, {}, nullptr).message(),
                  "are not the loaded bundle's");
}

/// A cubin the driver refuses falls back to the PTX; a failed launch or
/// allocation is an error naming the call, and the library's next call
/// works.
TEST_F(FakeDriver, DriverFailures) {
  Expected<AttentionLibrary> library =
      AttentionLibrary::open(*context, SINKATTN_KERNEL_LIBRARY_DIR);
  ASSERT_TRUE(library.ok()) << library.message();
  SmallCall call(*context);
  log.failNext("cuMemAlloc_v2");
  EXPECT_CONTAINS(library->forward(call.args, nullptr).message(),
                  "cuMemAlloc_v2 failed: CUDA_ERROR_FAKE");
  log.clear();
  log.failNext("cuModuleLoadDataEx(cubin)");
  Status ran = library->forward(call.args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(log.starting("load module"),
            std::vector<std::string>{"load module ptx"});
  log.failNext("cuLaunchKernel");
  EXPECT_CONTAINS(library->forward(call.args, nullptr).message(),
                  "cuLaunchKernel failed: CUDA_ERROR_FAKE");
  log.clear();
  ran = library->forward(call.args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(log.starting("launch").size(), 1u);
  EXPECT_EQ(library->compiledKernels(), 1u);
}

/// The C ABI on the fake driver ($SINKATTN_CUDA_DRIVER): a BSHD call runs,
/// the caller's current context is the same after it, and a failed launch
/// is SINKATTN_ERROR_RUNTIME with its message.
TEST_F(FakeDriver, CApi) {
  ASSERT_EQ(setenv("SINKATTN_CUDA_DRIVER", SINKATTN_FAKE_CUDA_DRIVER, 1), 0);
  SinkAttnLibrary *library = nullptr;
  SinkAttnStatus opened =
      sinkattnLibraryOpen(SINKATTN_KERNEL_LIBRARY_DIR, 0, &library);
  unsetenv("SINKATTN_CUDA_DRIVER");
  ASSERT_EQ(opened, SINKATTN_SUCCESS) << sinkattnLastError();
  SmallCall call(*context);
  SinkAttnForwardArgs args = {};
  args.q = cTensor(call.args.q);
  args.k = cTensor(call.args.k);
  args.v = cTensor(call.args.v);
  args.out = cTensor(call.args.out);
  args.lse = cTensor(call.args.lse);
  args.sinks = cTensor(*call.args.sinks);
  args.causal = 1;
  // Another context current on this thread: the call leaves it so.
  int other = 0;
  auto callers = reinterpret_cast<CUcontext>(&other);
  ASSERT_EQ(driver_->cuCtxSetCurrent(callers), CUDA_SUCCESS);
  log.clear();
  EXPECT_EQ(sinkattnForward(library, &args, nullptr), SINKATTN_SUCCESS)
      << sinkattnLastError();
  EXPECT_EQ(log.starting("launch").size(), 1u);
  EXPECT_EQ(sinkattnLibraryCompiledKernels(library), 1);
  CUcontext after = nullptr;
  ASSERT_EQ(driver_->cuCtxGetCurrent(&after), CUDA_SUCCESS);
  EXPECT_EQ(after, callers);
  log.failNext("cuLaunchKernel");
  EXPECT_EQ(sinkattnForward(library, &args, nullptr), SINKATTN_ERROR_RUNTIME);
  EXPECT_CONTAINS(sinkattnLastError(), "cuLaunchKernel failed");
  ASSERT_EQ(driver_->cuCtxGetCurrent(&after), CUDA_SUCCESS);
  EXPECT_EQ(after, callers);
  sinkattnLibraryClose(library);
  ASSERT_EQ(driver_->cuCtxSetCurrent(context->handle()), CUDA_SUCCESS);
}

/// The C ABI's backward on the fake driver: the workspace it asks for runs
/// the call; a smaller one, a non-causal call and a library without
/// backward kernels are refused with their statuses.
TEST_F(FakeDriver, CApiBackward) {
  namespace fs = std::filesystem;
  fs::path forwardOnly = fs::temp_directory_path() /
                         ("sinkattn-fwd-only-" + std::to_string(::getpid()));
  fs::remove_all(forwardOnly);
  fs::create_directories(forwardOnly);
  fs::copy(fs::path(SINKATTN_KERNEL_LIBRARY_DIR) /
               "fwd-bf16-d64-causal-f32-sinks-plain",
           forwardOnly / "fwd", fs::copy_options::recursive);
  ASSERT_EQ(setenv("SINKATTN_CUDA_DRIVER", SINKATTN_FAKE_CUDA_DRIVER, 1), 0);
  SinkAttnLibrary *library = nullptr, *noBackward = nullptr;
  SinkAttnStatus opened =
      sinkattnLibraryOpen(SINKATTN_KERNEL_LIBRARY_DIR, 0, &library);
  SinkAttnStatus openedForward =
      sinkattnLibraryOpen(forwardOnly.c_str(), 0, &noBackward);
  unsetenv("SINKATTN_CUDA_DRIVER");
  ASSERT_EQ(opened, SINKATTN_SUCCESS) << sinkattnLastError();
  ASSERT_EQ(openedForward, SINKATTN_SUCCESS) << sinkattnLastError();
  Buffers memory;
  const int64_t t = 200, h = 4, hk = 2, d = 64;
  auto tensor = [&](SinkAttnDType dtype, std::vector<int64_t> sizes) {
    size_t bytes = dtype == SINKATTN_DTYPE_F32 ? 4 : 2;
    for (int64_t size : sizes)
      bytes *= size_t(size);
    SinkAttnTensor c = {};
    c.data = memory.allocate(*context, bytes);
    c.dtype = dtype;
    c.rank = int32_t(sizes.size());
    std::copy(sizes.begin(), sizes.end(), c.sizes);
    return c;
  };
  SinkAttnVarlenBackwardArgs args = {};
  args.q = tensor(SINKATTN_DTYPE_BF16, {t, h, d});
  args.k = tensor(SINKATTN_DTYPE_BF16, {t, hk, d});
  args.v = tensor(SINKATTN_DTYPE_BF16, {t, hk, d});
  args.out = tensor(SINKATTN_DTYPE_BF16, {t, h, d});
  args.lse = tensor(SINKATTN_DTYPE_F32, {h, t});
  args.dout = tensor(SINKATTN_DTYPE_BF16, {t, h, d});
  args.dq = tensor(SINKATTN_DTYPE_BF16, {t, h, d});
  args.dk = tensor(SINKATTN_DTYPE_BF16, {t, hk, d});
  args.dv = tensor(SINKATTN_DTYPE_BF16, {t, hk, d});
  args.cu_seqlens_q = args.cu_seqlens_k = tensor(SINKATTN_DTYPE_I32, {2});
  args.max_seqlen_q = args.max_seqlen_k = t;
  args.causal = 1;
  EXPECT_EQ(sinkattnValidateVarlenBackward(&args), SINKATTN_SUCCESS)
      << sinkattnLastError();
  uint64_t bytes = 0;
  ASSERT_EQ(sinkattnVarlenBackwardWorkspaceBytes(library, &args, &bytes),
            SINKATTN_SUCCESS)
      << sinkattnLastError();
  EXPECT_GT(bytes, 0u);
  EXPECT_EQ(sinkattnVarlenBackward(library, &args, nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "workspace: 0 bytes; the call needs");
  args.workspace = memory.allocate(*context, bytes);
  args.workspace_bytes = bytes;
  log.clear();
  EXPECT_EQ(sinkattnVarlenBackward(library, &args, nullptr), SINKATTN_SUCCESS)
      << sinkattnLastError();
  EXPECT_EQ(log.starting("launch").size(), 3u);
  // The BSHD call over the same memory: 2 sequences of 100 tokens.
  SinkAttnBackwardArgs bshd = {};
  auto batched = [](SinkAttnTensor rows) {
    rows.rank = 4;
    rows.sizes[3] = rows.sizes[2];
    rows.sizes[2] = rows.sizes[1];
    rows.sizes[1] = rows.sizes[0] / 2;
    rows.sizes[0] = 2;
    return rows;
  };
  bshd.q = batched(args.q), bshd.k = batched(args.k), bshd.v = batched(args.v);
  bshd.out = batched(args.out), bshd.dout = batched(args.dout);
  bshd.dq = batched(args.dq), bshd.dk = batched(args.dk);
  bshd.dv = batched(args.dv);
  bshd.lse = args.lse;
  bshd.lse.rank = 3;
  const int64_t lseSizes[3] = {2, h, t / 2}, lseStrides[3] = {t / 2, t, 1};
  std::copy(lseSizes, lseSizes + 3, bshd.lse.sizes);
  std::copy(lseStrides, lseStrides + 3, bshd.lse.strides);
  bshd.causal = 1;
  EXPECT_EQ(sinkattnValidateBackward(&bshd), SINKATTN_SUCCESS)
      << sinkattnLastError();
  uint64_t bshdBytes = 0;
  ASSERT_EQ(sinkattnBackwardWorkspaceBytes(library, &bshd, &bshdBytes),
            SINKATTN_SUCCESS)
      << sinkattnLastError();
  bshd.workspace = memory.allocate(*context, bshdBytes);
  bshd.workspace_bytes = bshdBytes;
  log.clear();
  EXPECT_EQ(sinkattnBackward(library, &bshd, nullptr), SINKATTN_SUCCESS)
      << sinkattnLastError();
  EXPECT_EQ(log.starting("launch").size(), 3u);
  bshd.dq.sizes[1] = 50;
  EXPECT_EQ(sinkattnValidateBackward(&bshd), SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "dq: sizes [2, 50, 4, 64] differ in "
                                       "batch or length");
  EXPECT_EQ(sinkattnVarlenBackward(noBackward, &args, nullptr),
            SINKATTN_ERROR_NOT_SUPPORTED);
  EXPECT_CONTAINS(sinkattnLastError(),
                  "no backward kernel for bf16 D=64 causal f32 sinks with "
                  "GQA in the kernel library; compile one with");
  args.causal = 0;
  EXPECT_EQ(sinkattnValidateVarlenBackward(&args),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(),
                  "causal: the backward is causal only so far");
  EXPECT_EQ(sinkattnVarlenBackwardWorkspaceBytes(library, &args, nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinkattnVarlenBackward(nullptr, &args, nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sinkattnValidateVarlenBackward(nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "args: the pointer is null");
  sinkattnLibraryClose(noBackward);
  sinkattnLibraryClose(library);
  fs::remove_all(forwardOnly);
  ASSERT_EQ(driver_->cuCtxSetCurrent(context->handle()), CUDA_SUCCESS);
}
#endif

} // namespace
