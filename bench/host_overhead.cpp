//===- host_overhead.cpp - The library's host time per call ---------------===//
//
// How long rt::AttentionLibrary takes on the host for one forward call
// (validation, choosing and re-shaping the kernel, encoding its tensor maps,
// the launch), the part of a call's cost that the GPU does not hide for
// short kernels (decoding) and that a framework binding adds to. Each call
// kind is made --calls times after a warm-up; the time is the host's, per
// call, in batches that never wait for the GPU. With --driver naming the test's
// fake driver (libsinkattn-fake-cuda.so, run with FAKE_CUDA_QUIET=1 so that it
// records nothing) it runs without a GPU and measures the library alone;
// with libcuda.so.1 (the default; $SINKATTN_CUDA_DRIVER overrides it) the
// driver's share too.
//
// usage: sinkattn-host-overhead --library DIR [--driver LIB] [--calls N]
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/Attention.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace sinkattn::rt;

namespace {
/// Per-call host microseconds of `call` over `calls` calls, after 20, in
/// batches of 16 with the GPU drained between them (untimed), so that a
/// full launch queue never makes the host wait for the kernels.
Expected<double> timeCalls(const Context &ctx, int calls,
                           const std::function<Status()> &call) {
  for (int i = 0; i < 20; ++i)
    SINKATTN_RT_TRY(call());
  SINKATTN_RT_TRY(ctx.synchronize());
  std::chrono::duration<double, std::micro> spent{0};
  for (int done = 0; done < calls;) {
    int batch = std::min(16, calls - done);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i)
      SINKATTN_RT_TRY(call());
    spent += std::chrono::steady_clock::now() - start;
    SINKATTN_RT_TRY(ctx.synchronize());
    done += batch;
  }
  return spent.count() / calls;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}
} // namespace

int main(int argc, char **argv) {
  std::string library, driverName = defaultCudaDriverLibrary();
  int calls = 2000;
  const std::string usage =
      "usage: " + std::string(argv[0]) +
      " --library DIR [--driver LIB] [--calls N]";
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc)
      return fail(usage);
    if (flag == "--library")
      library = argv[++i];
    else if (flag == "--driver")
      driverName = argv[++i];
    else if (flag == "--calls")
      calls = std::atoi(argv[++i]);
    else
      return fail("unknown flag " + flag);
  }
  if (library.empty() || calls < 1)
    return fail(usage + " (N >= 1)");
  Expected<std::shared_ptr<const CudaDriver>> driver =
      CudaDriver::load(driverName);
  if (!driver.ok())
    return fail(driver.message());
  Expected<Context> ctx = Context::create(*driver, 0);
  if (!ctx.ok())
    return fail(ctx.message());
  Expected<AttentionLibrary> kernels = AttentionLibrary::open(*ctx, library);
  if (!kernels.ok())
    return fail(kernels.message());

  // Decoding-like BSHD: B 8, one query against 4096 keys, H 64, HK 8, D 64;
  // and one varlen sequence of the seed table's 8192 tokens.
  const int64_t b = 8, skv = 4096, h = 64, hk = 8, d = 64, t = 8192;
  std::vector<DeviceBuffer> memory;
  auto allocate = [&](size_t bytes) -> CUdeviceptr {
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(*ctx, bytes);
    if (!buffer.ok())
      std::exit(fail(buffer.message()));
    memory.push_back(buffer.take());
    return memory.back().address();
  };
  ForwardArgs decode;
  decode.q = {allocate(b * h * d * 2), DType::BF16, {b, 1, h, d}, {}};
  decode.k = {allocate(b * skv * hk * d * 2), DType::BF16, {b, skv, hk, d}, {}};
  decode.v = {allocate(b * skv * hk * d * 2), DType::BF16, {b, skv, hk, d}, {}};
  decode.out = {allocate(b * h * d * 2), DType::BF16, {b, 1, h, d}, {}};
  decode.lse = {allocate(h * b * 4), DType::F32, {b, h, 1}, {1, b, 1}};
  decode.sinks = DeviceTensor{allocate(h * 4), DType::F32, {h}, {}};
  VarlenForwardArgs varlen;
  varlen.q = {allocate(t * h * d * 2), DType::BF16, {t, h, d}, {}};
  varlen.k = {allocate(t * hk * d * 2), DType::BF16, {t, hk, d}, {}};
  varlen.v = {allocate(t * hk * d * 2), DType::BF16, {t, hk, d}, {}};
  varlen.out = {allocate(t * h * d * 2), DType::BF16, {t, h, d}, {}};
  varlen.lse = {allocate(h * t * 4), DType::F32, {h, t}, {}};
  varlen.sinks = decode.sinks;
  CUdeviceptr offsets = allocate(2 * 4);
  int32_t bounds[2] = {0, int32_t(t)};
  if (Status copied = memory.back().copyFromHost(bounds, sizeof(bounds));
      !copied.ok())
    return fail(copied.message());
  varlen.cuSeqlensQ = varlen.cuSeqlensKv = {offsets, DType::I32, {2}, {}};
  varlen.maxSeqlenQ = varlen.maxSeqlenKv = t;

  Expected<double> bshd =
      timeCalls(*ctx, calls, [&] { return kernels->forward(decode, nullptr); });
  if (!bshd.ok())
    return fail(bshd.message());
  Expected<double> packed = timeCalls(
      *ctx, calls, [&] { return kernels->forwardVarlen(varlen, nullptr); });
  if (!packed.ok())
    return fail(packed.message());
  if (Status synced = ctx->synchronize(); !synced.ok())
    return fail(synced.message());
  std::printf("driver %s, %d calls each, host time per call:\n",
              driverName.c_str(), calls);
  std::printf("  forward (BSHD, B 8, SQ 1, SKV 4096, H 64, HK 8, D 64)  %7.2f us\n",
              *bshd);
  std::printf("  forwardVarlen (one sequence of 8192, H 64, HK 8, D 64) %7.2f us\n",
              *packed);
  return 0;
}
