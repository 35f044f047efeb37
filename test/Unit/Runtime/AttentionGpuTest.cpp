//===- AttentionGpuTest.cpp - rt::AttentionLibrary on a real GPU ----------===//
//
// The library's forward over packed sequences, from a kernel library of
// bundles compiled for run-time shapes (test/GPU/bundles.txt's
// sink-fwd-run-time-shapes-*), against the float64 CPU forward on fresh
// random data: several batches of lengths per kernel (empty and one-token
// sequences, sequences longer than the bundle was compiled for), with and
// without sinks; two calls of one variant compile it once; a variant the
// library lacks is refused naming it.
//
// usage: SinkAttnAttentionGpuTest [--require-gpu] --library DIR
// Without libcuda it prints SKIP and exits 0 (2 with --require-gpu).
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/Attention.h"
#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Random.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace sinkattn::rt;

namespace {
int failures = 0;

void check(bool ok, const std::string &what, const std::string &detail = "") {
  std::printf("%s: %s%s%s\n", ok ? "PASS" : "FAIL", what.c_str(),
              detail.empty() ? "" : ": ", detail.c_str());
  failures += ok ? 0 : 1;
}

/// bf16 values of `values`, and the floats they round to.
std::vector<uint16_t> toBf16(std::vector<float> &values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] = floatToBf16(values[i]);
    values[i] = bf16ToFloat(bits[i]);
  }
  return bits;
}

Expected<DeviceBuffer> upload(const Context &ctx, const void *data,
                              size_t bytes) {
  SINKATTN_RT_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                               DeviceBuffer::allocate(ctx, bytes));
  SINKATTN_RT_TRY(buffer.copyFromHost(data, bytes));
  return buffer;
}

/// One call of the library for `variant` and the lengths, compared with the
/// float64 forward.
void runCase(const Context &ctx, AttentionLibrary &library,
             const SinkFwdVariant &variant, const std::vector<int64_t> &lengthsQ,
             const std::vector<int64_t> &lengthsKv, bool withSinks,
             uint64_t seed) {
  SinkAttentionShape shape;
  shape.layout = AttentionLayout::Varlen;
  shape.batch = int64_t(lengthsQ.size());
  shape.heads = variant.heads;
  shape.kvHeads = variant.kvHeads;
  shape.headDim = variant.headDim;
  shape.window = variant.window;
  shape.scale = 1.0 / std::sqrt(double(variant.headDim));
  shape.cuSeqlensQ = offsetsOf(lengthsQ);
  shape.cuSeqlensKv = offsetsOf(lengthsKv);
  shape.seqQ = std::max<int64_t>(1, *std::max_element(lengthsQ.begin(), lengthsQ.end()));
  shape.seqKv = std::max<int64_t>(1, *std::max_element(lengthsKv.begin(), lengthsKv.end()));
  std::string what = variant.describe() + ", lengths " + formatLengths(lengthsQ) +
                     " / " + formatLengths(lengthsKv) +
                     (withSinks ? "" : ", no sinks");
  if (Status valid = validate(shape); !valid.ok())
    return check(false, what, valid.message());

  std::vector<float> q = randomNormal(shape.qElements(), seed, 0.f, 1.5f),
                     k = randomNormal(shape.kvElements(), seed + 1, 0.f, 1.5f),
                     v = randomUniform(shape.kvElements(), seed + 2),
                     sinks = randomUniform(size_t(shape.heads), seed + 3, -1.f, 3.f);
  std::vector<uint16_t> qBits = toBf16(q), kBits = toBf16(k), vBits = toBf16(v);
  std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end()),
      cuKv(shape.cuSeqlensKv.begin(), shape.cuSeqlensKv.end());
  Expected<DeviceBuffer> dq = upload(ctx, qBits.data(), qBits.size() * 2),
                         dk = upload(ctx, kBits.data(), kBits.size() * 2),
                         dv = upload(ctx, vBits.data(), vBits.size() * 2),
                         dsinks = upload(ctx, sinks.data(), sinks.size() * 4),
                         dcuQ = upload(ctx, cuQ.data(), cuQ.size() * 4),
                         dcuKv = upload(ctx, cuKv.data(), cuKv.size() * 4),
                         dout = DeviceBuffer::allocate(ctx, qBits.size() * 2),
                         dlse = DeviceBuffer::allocate(ctx, size_t(shape.rows()) * 4);
  for (auto *buffer : {&dq, &dk, &dv, &dsinks, &dcuQ, &dcuKv, &dout, &dlse})
    if (!buffer->ok())
      return check(false, what, "device buffers: " + buffer->message());
  (void)dout->poison();
  (void)dlse->poison();

  auto t = [](const DeviceBuffer &b, DType dtype, std::vector<int64_t> sizes) {
    return DeviceTensor{b.address(), dtype, std::move(sizes), {}};
  };
  const int64_t tq = shape.tokensQ(), tkv = shape.tokensKv(), h = shape.heads,
                hk = shape.kvHeads, d = shape.headDim;
  VarlenForwardArgs args;
  args.q = t(*dq, DType::BF16, {tq, h, d});
  args.k = t(*dk, DType::BF16, {tkv, hk, d});
  args.v = t(*dv, DType::BF16, {tkv, hk, d});
  args.out = t(*dout, DType::BF16, {tq, h, d});
  args.lse = t(*dlse, DType::F32, {h, tq});
  if (withSinks)
    args.sinks = t(*dsinks, DType::F32, {h});
  args.cuSeqlensQ = t(*dcuQ, DType::I32, {shape.batch + 1});
  args.cuSeqlensKv = t(*dcuKv, DType::I32, {shape.batch + 1});
  args.maxSeqlenQ = shape.seqQ;
  args.maxSeqlenKv = shape.seqKv;
  args.window = variant.window;
  Status ran = library.forwardVarlen(args, nullptr);
  if (!ran.ok())
    return check(false, what, ran.message());
  if (Status synced = ctx.synchronize(); !synced.ok())
    return check(false, what, synced.message());

  if (!withSinks)
    sinks.assign(sinks.size(), -INFINITY);
  std::vector<double> refO, refLse;
  if (Status reference = sinkAttentionForward(shape, q, k, v, sinks, refO, refLse);
      !reference.ok())
    return check(false, what, reference.message());
  Expected<std::vector<uint16_t>> outBits = dout->download<uint16_t>();
  Expected<std::vector<float>> lse = dlse->download<float>();
  if (!outBits.ok() || !lse.ok())
    return check(false, what, "download failed");
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < refO.size(); ++i) {
    double got = bf16ToFloat((*outBits)[i]), err = std::fabs(got - refO[i]);
    worst = std::max(worst, err);
    bad += !(err <= 1e-2 + 1e-2 * std::fabs(refO[i]));
  }
  for (size_t i = 0; i < refLse.size(); ++i) {
    double err = std::fabs((*lse)[i] - refLse[i]);
    // A row that attends nothing without a sink has LSE -inf.
    bool same = std::isinf(refLse[i]) ? (*lse)[i] == refLse[i] : err <= 1e-3;
    bad += !same;
  }
  check(bad == 0, what,
        std::to_string(bad) + " elements outside tolerance (o: 1e-2 + 1e-2|ref|, "
        "lse: 1e-3) of " + std::to_string(refO.size() + refLse.size()) +
        ", o max-abs " + std::to_string(worst));
}
} // namespace

int main(int argc, char **argv) {
  bool requireGpu = false;
  std::string directory;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-gpu") == 0)
      requireGpu = true;
    else if (std::strcmp(argv[i], "--library") == 0 && i + 1 < argc)
      directory = argv[++i];
  }
  if (directory.empty()) {
    std::fprintf(stderr, "usage: %s [--require-gpu] --library DIR\n", argv[0]);
    return 2;
  }
  Expected<std::shared_ptr<const CudaDriver>> driver = CudaDriver::load();
  if (!driver.ok()) {
    std::printf("SKIP: %s\n", driver.message().c_str());
    return requireGpu ? 2 : 0;
  }
  Expected<Context> ctx = Context::create(*driver, 0);
  if (!ctx.ok()) {
    std::printf("FAIL: %s\n", ctx.message().c_str());
    return 1;
  }
  Expected<AttentionLibrary> library = AttentionLibrary::open(*ctx, directory);
  if (!library.ok()) {
    std::printf("FAIL: %s\n", library.message().c_str());
    return 1;
  }
  SinkFwdVariant d64{DType::BF16, DType::F32, 64, 8, 1, 0};
  SinkFwdVariant d128{DType::BF16, DType::F32, 128, 6, 2, 128};
  runCase(*ctx, *library, d64, {100, 0, 513, 1000}, {200, 5, 513, 1000}, true, 1);
  runCase(*ctx, *library, d64, {0, 1, 2000, 17}, {3, 1, 2500, 17}, true, 2);
  runCase(*ctx, *library, d64, {1}, {1}, false, 3);
  runCase(*ctx, *library, d128, {4096, 3}, {4096, 300}, true, 4);
  runCase(*ctx, *library, d128, {64, 0, 129}, {64, 7, 1000}, false, 5);
  check(library->compiledKernels() == 2,
        "two variants, each JIT-compiled once over five calls",
        std::to_string(library->compiledKernels()) + " compiled");

  SinkFwdVariant missing{DType::BF16, DType::F32, 64, 8, 1, 64};
  VarlenForwardArgs args;
  args.q = {1, DType::BF16, {10, 8, 64}, {}};
  args.k = args.v = {1, DType::BF16, {10, 1, 64}, {}};
  args.out = args.q;
  args.lse = {1, DType::F32, {8, 10}, {}};
  args.cuSeqlensQ = args.cuSeqlensKv = {1, DType::I32, {2}, {}};
  args.maxSeqlenQ = args.maxSeqlenKv = 10;
  args.window = missing.window;
  Status refused = library->forwardVarlen(args, nullptr);
  check(!refused.ok() &&
            refused.message().find("no kernel for " + missing.describe()) !=
                std::string::npos,
        "a variant the library lacks is refused, naming it", refused.message());
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
