//===- AttentionGpuTest.cpp - rt::AttentionLibrary on a real GPU ----------===//
//
// The library's forward over packed sequences, from a kernel library of
// bundles compiled for run-time shapes (test/GPU/bundles.txt's
// sink-fwd-run-time-shapes-*), against the float64 CPU forward on fresh
// random data: per kernel several calls with their own heads (GQA 3:1 and
// 64:8 among them), window sizes, softmax scales and lengths (empty and
// one-token sequences, sequences longer than the bundle was compiled for),
// with and without sinks; causal, sliding-window and non-causal kernels,
// bf16 and f16; calls of one length run persistent where the library has
// that form; each kernel the calls take is compiled once (--kernels N of
// them); a variant the library lacks is refused naming it. With
// --backward-kernels N, also the backward's calls (from the float64
// forward's O and LSE) against the float64 backward, over N kernels.
//
// usage: SinkAttnAttentionGpuTest [--require-gpu] [--lacks-f16-d64]
//            --kernels N [--backward-kernels N] --library DIR
// Without libcuda it prints SKIP and exits 0 (2 with --require-gpu).
//
//===----------------------------------------------------------------------===//

#include "CApiTensor.h"
#include "SinkAttn-c/Attention.h"
#include "SinkAttn/Runtime/Attention.h"
#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Random.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
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

/// `values` rounded to `dtype` (bf16 or f16): the bits, and `values`
/// replaced by what they hold.
std::vector<uint16_t> round16(std::vector<float> &values, DType dtype) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    bits[i] =
        dtype == DType::BF16 ? floatToBf16(values[i]) : floatToHalf(values[i]);
    values[i] =
        dtype == DType::BF16 ? bf16ToFloat(bits[i]) : halfToFloat(bits[i]);
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

/// One call: what it computes (its kernel's variant, and the heads,
/// window, scale and lengths it gives at run time).
struct Case {
  DType dtype, sinkDtype;
  int64_t headDim;
  bool causal;
  int64_t heads, kvHeads, window;
  std::optional<double> scale; ///< none: the default 1/sqrt(D)
  std::vector<int64_t> lengthsQ, lengthsKv;
  bool withSinks;
  /// q, k and v as views of one [T, H + 2 HK, D] tensor (equal lengths).
  bool fusedQkv = false;
  /// A BSHD call ([B, S, H, D]; each of lengthsQ and lengthsKv one length).
  bool bshd = false;
  /// out as a view of [T, H·D + 64] rows: the 64 columns past each token's
  /// heads must keep their poison (the stores stop at each head's view).
  bool paddedOut = false;
};

/// Elements between consecutive tokens of a case's out.
size_t outRowOf(const Case &c) {
  return size_t(c.heads * c.headDim + (c.paddedOut ? 64 : 0));
}

/// One call of the library (through the C ABI where `cLibrary` is given),
/// compared with the float64 forward.
void runCase(const Context &ctx, AttentionLibrary &library,
             SinkAttnLibrary *cLibrary, const Case &c, uint64_t seed) {
  SinkAttentionShape shape;
  shape.layout = AttentionLayout::Varlen;
  shape.batch = int64_t(c.lengthsQ.size());
  shape.heads = c.heads;
  shape.kvHeads = c.kvHeads;
  shape.headDim = c.headDim;
  shape.window = c.window;
  shape.causal = c.causal;
  shape.scale = c.scale ? *c.scale : 1.0 / std::sqrt(double(c.headDim));
  shape.cuSeqlensQ = offsetsOf(c.lengthsQ);
  shape.cuSeqlensKv = offsetsOf(c.lengthsKv);
  shape.seqQ = std::max<int64_t>(
      1, *std::max_element(c.lengthsQ.begin(), c.lengthsQ.end()));
  shape.seqKv = std::max<int64_t>(
      1, *std::max_element(c.lengthsKv.begin(), c.lengthsKv.end()));
  char scale[32];
  std::snprintf(scale, sizeof(scale), "%.4g", shape.scale);
  std::string what =
      std::string(dtypeName(c.dtype)) + " D=" + std::to_string(c.headDim) +
      (c.causal ? " causal" : " non-causal") + " H=" + std::to_string(c.heads) +
      " HK=" + std::to_string(c.kvHeads) +
      " window=" + std::to_string(c.window) + " scale=" + scale + ", lengths " +
      formatLengths(c.lengthsQ) + " / " + formatLengths(c.lengthsKv) +
      (c.withSinks ? std::string(", ") + dtypeName(c.sinkDtype) + " sinks"
                   : ", no sinks");
  if (Status valid = validate(shape); !valid.ok())
    return check(false, what, valid.message());

  std::vector<float> q = randomNormal(shape.qElements(), seed, 0.f, 1.5f),
                     k = randomNormal(shape.kvElements(), seed + 1, 0.f, 1.5f),
                     v = randomUniform(shape.kvElements(), seed + 2),
                     sinks = randomUniform(size_t(shape.heads), seed + 3, -1.f,
                                           3.f);
  std::vector<uint16_t> qBits = round16(q, c.dtype),
                        kBits = round16(k, c.dtype),
                        vBits = round16(v, c.dtype);
  // Sinks as the kernel reads them: f32, or bf16 bits.
  std::vector<uint16_t> sinkBits;
  if (c.sinkDtype == DType::BF16)
    sinkBits = round16(sinks, DType::BF16);
  const void *sinkData = c.sinkDtype == DType::BF16
                             ? static_cast<const void *>(sinkBits.data())
                             : static_cast<const void *>(sinks.data());
  std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end()),
      cuKv(shape.cuSeqlensKv.begin(), shape.cuSeqlensKv.end());
  Expected<DeviceBuffer> dq = upload(ctx, qBits.data(), qBits.size() * 2),
                         dk = upload(ctx, kBits.data(), kBits.size() * 2),
                         dv = upload(ctx, vBits.data(), vBits.size() * 2),
                         dsinks = upload(ctx, sinkData,
                                         sinks.size() * dtypeSize(c.sinkDtype)),
                         dcuQ = upload(ctx, cuQ.data(), cuQ.size() * 4),
                         dcuKv = upload(ctx, cuKv.data(), cuKv.size() * 4),
                         dout = DeviceBuffer::allocate(
                             ctx, size_t(shape.tokensQ()) * outRowOf(c) * 2),
                         dlse = DeviceBuffer::allocate(
                             ctx, size_t(shape.rows()) * 4);
  // The fused tensor: each token's q heads, then its k and v heads.
  const int64_t fusedRow = (shape.heads + 2 * shape.kvHeads) * shape.headDim;
  std::vector<uint16_t> fusedBits;
  if (c.fusedQkv) {
    const size_t qRow = size_t(shape.heads * shape.headDim),
                 kvRow = size_t(shape.kvHeads * shape.headDim);
    for (int64_t token = 0; token < shape.tokensQ(); ++token) {
      auto append = [&](const std::vector<uint16_t> &bits, size_t row) {
        fusedBits.insert(fusedBits.end(), bits.begin() + token * row,
                         bits.begin() + (token + 1) * row);
      };
      append(qBits, qRow);
      append(kBits, kvRow);
      append(vBits, kvRow);
    }
    what += ", q/k/v views of one fused tensor";
  }
  Expected<DeviceBuffer> dqkv =
      c.fusedQkv ? upload(ctx, fusedBits.data(), fusedBits.size() * 2)
                 : DeviceBuffer::allocate(ctx, 16);
  for (auto *buffer :
       {&dq, &dk, &dv, &dsinks, &dcuQ, &dcuKv, &dout, &dlse, &dqkv})
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
  args.q = t(*dq, c.dtype, {tq, h, d});
  args.k = t(*dk, c.dtype, {tkv, hk, d});
  args.v = t(*dv, c.dtype, {tkv, hk, d});
  if (c.fusedQkv) {
    CUdeviceptr base = dqkv->address();
    args.q = {base, c.dtype, {tq, h, d}, {fusedRow, d, 1}};
    args.k = {
        base + uint64_t(h * d * 2), c.dtype, {tkv, hk, d}, {fusedRow, d, 1}};
    args.v = {base + uint64_t((h + hk) * d * 2),
              c.dtype,
              {tkv, hk, d},
              {fusedRow, d, 1}};
  }
  args.out = t(*dout, c.dtype, {tq, h, d});
  if (c.paddedOut) {
    args.out.strides = {int64_t(outRowOf(c)), d, 1};
    what += ", out rows padded";
  }
  args.lse = t(*dlse, DType::F32, {h, tq});
  if (c.withSinks)
    args.sinks = t(*dsinks, c.sinkDtype, {h});
  args.cuSeqlensQ = t(*dcuQ, DType::I32, {shape.batch + 1});
  args.cuSeqlensKv = t(*dcuKv, DType::I32, {shape.batch + 1});
  args.maxSeqlenQ = shape.seqQ;
  args.maxSeqlenKv = shape.seqKv;
  args.causal = c.causal;
  args.window = c.window;
  args.softmaxScale = c.scale;
  Status ran;
  if (c.bshd) {
    // The same memory as [B, S, H, D], and lse as the [B, H, SQ] view of
    // [H, B * SQ].
    const int64_t batch = shape.batch, seqQ = c.lengthsQ[0],
                  seqKv = c.lengthsKv[0];
    for (int64_t length : c.lengthsQ)
      if (length != seqQ)
        return check(false, what, "a BSHD case needs one query length");
    for (int64_t length : c.lengthsKv)
      if (length != seqKv)
        return check(false, what, "a BSHD case needs one key length");
    what += ", BSHD";
    auto bshd = [&](const DeviceTensor &rows, int64_t length) {
      DeviceTensor t{rows.data, rows.dtype,
                     {batch, length, rows.sizes[1], rows.sizes[2]}, {}};
      if (!rows.strides.empty())
        t.strides = {length * rows.strides[0], rows.strides[0],
                     rows.strides[1], rows.strides[2]};
      return t;
    };
    ForwardArgs forward;
    forward.q = bshd(args.q, seqQ);
    forward.k = bshd(args.k, seqKv);
    forward.v = bshd(args.v, seqKv);
    forward.out = bshd(args.out, seqQ);
    forward.lse = {args.lse.data, DType::F32, {batch, h, seqQ},
                   {seqQ, batch * seqQ, 1}};
    forward.sinks = args.sinks;
    forward.causal = args.causal;
    forward.window = args.window;
    forward.softmaxScale = args.softmaxScale;
    if (!cLibrary) {
      ran = library.forward(forward, nullptr);
    } else {
      what += ", through the C ABI";
      SinkAttnForwardArgs cArgs = {};
      cArgs.q = cTensor(forward.q);
      cArgs.k = cTensor(forward.k);
      cArgs.v = cTensor(forward.v);
      cArgs.out = cTensor(forward.out);
      cArgs.lse = cTensor(forward.lse);
      if (forward.sinks)
        cArgs.sinks = cTensor(*forward.sinks);
      cArgs.causal = forward.causal;
      cArgs.window = forward.window;
      cArgs.softmax_scale = c.scale ? *c.scale : 0;
      ran = sinkattnForward(cLibrary, &cArgs, nullptr) == SINKATTN_SUCCESS
                ? Status()
                : Status::error(sinkattnLastError());
    }
  } else if (!cLibrary) {
    ran = library.forwardVarlen(args, nullptr);
  } else {
    what += ", through the C ABI";
    SinkAttnVarlenForwardArgs cArgs = {};
    cArgs.q = cTensor(args.q);
    cArgs.k = cTensor(args.k);
    cArgs.v = cTensor(args.v);
    cArgs.out = cTensor(args.out);
    cArgs.lse = cTensor(args.lse);
    if (args.sinks)
      cArgs.sinks = cTensor(*args.sinks);
    cArgs.cu_seqlens_q = cTensor(args.cuSeqlensQ);
    cArgs.cu_seqlens_k = cTensor(args.cuSeqlensKv);
    cArgs.max_seqlen_q = args.maxSeqlenQ;
    cArgs.max_seqlen_k = args.maxSeqlenKv;
    cArgs.causal = args.causal;
    cArgs.window = args.window;
    cArgs.softmax_scale = c.scale ? *c.scale : 0;
    ran = sinkattnVarlenForward(cLibrary, &cArgs, nullptr) == SINKATTN_SUCCESS
              ? Status()
              : Status::error(sinkattnLastError());
  }
  if (!ran.ok())
    return check(false, what, ran.message());
  if (Status synced = ctx.synchronize(); !synced.ok())
    return check(false, what, synced.message());

  if (!c.withSinks)
    sinks.assign(sinks.size(), -INFINITY);
  std::vector<double> refO, refLse;
  if (Status reference =
          sinkAttentionForward(shape, q, k, v, sinks, refO, refLse);
      !reference.ok())
    return check(false, what, reference.message());
  Expected<std::vector<uint16_t>> outBits = dout->download<uint16_t>();
  Expected<std::vector<float>> lse = dlse->download<float>();
  if (!outBits.ok() || !lse.ok())
    return check(false, what, "download failed");
  size_t bad = 0;
  double worst = 0;
  const size_t row = size_t(h * d), outRow = outRowOf(c);
  for (size_t i = 0; i < refO.size(); ++i) {
    uint16_t bits = (*outBits)[i / row * outRow + i % row];
    double got = c.dtype == DType::BF16 ? bf16ToFloat(bits) : halfToFloat(bits);
    double err = std::fabs(got - refO[i]);
    worst = std::max(worst, err);
    bad += !(err <= 1e-2 + 1e-2 * std::fabs(refO[i]));
  }
  size_t clobbered = 0;
  for (size_t token = 0; token < size_t(tq); ++token)
    for (size_t col = row; col < outRow; ++col)
      clobbered += (*outBits)[token * outRow + col] != 0xFFFF;
  for (size_t i = 0; i < refLse.size(); ++i) {
    double err = std::fabs((*lse)[i] - refLse[i]);
    // A row that attends nothing without a sink has LSE -inf.
    bool same = std::isinf(refLse[i]) ? (*lse)[i] == refLse[i] : err <= 1e-3;
    bad += !same;
  }
  check(bad == 0 && clobbered == 0, what,
        std::to_string(bad) +
            " elements outside tolerance (o: 1e-2 + 1e-2|ref|, "
            "lse: 1e-3) of " +
            std::to_string(refO.size() + refLse.size()) + ", o max-abs " +
            std::to_string(worst) + ", " + std::to_string(clobbered) +
            " padding elements written");
}
/// One backward call of the library for a causal case, from the float64
/// forward's O (rounded as a kernel stores it) and LSE, against the float64
/// backward of that stored O on a fresh random dO: every element of dq, dk,
/// dv and dsinks within 2e-2 (|ref| + max|ref|) and each tensor within
/// relative L2 1e-2 (bf16 rounds P and dS before their GEMMs; as the
/// runner's check). `c.fusedQkv`: dq, dk and dv as views of one [T, H +
/// 2 HK, D] gradient (equal lengths); `c.bshd`: the BSHD call over the same
/// memory.
void runBackwardCase(const Context &ctx, AttentionLibrary &library,
                     const Case &c, uint64_t seed) {
  SinkAttentionShape shape;
  shape.layout = AttentionLayout::Varlen;
  shape.batch = int64_t(c.lengthsQ.size());
  shape.heads = c.heads;
  shape.kvHeads = c.kvHeads;
  shape.headDim = c.headDim;
  shape.window = c.window;
  shape.causal = c.causal;
  shape.scale = c.scale ? *c.scale : 1.0 / std::sqrt(double(c.headDim));
  shape.cuSeqlensQ = offsetsOf(c.lengthsQ);
  shape.cuSeqlensKv = offsetsOf(c.lengthsKv);
  shape.seqQ = std::max<int64_t>(
      1, *std::max_element(c.lengthsQ.begin(), c.lengthsQ.end()));
  shape.seqKv = std::max<int64_t>(
      1, *std::max_element(c.lengthsKv.begin(), c.lengthsKv.end()));
  std::string what =
      "backward " + std::string(dtypeName(c.dtype)) +
      " D=" + std::to_string(c.headDim) + " H=" + std::to_string(c.heads) +
      " HK=" + std::to_string(c.kvHeads) +
      " window=" + std::to_string(c.window) + ", lengths " +
      formatLengths(c.lengthsQ) + " / " + formatLengths(c.lengthsKv) +
      (c.withSinks ? std::string(", ") + dtypeName(c.sinkDtype) + " sinks"
                   : ", no sinks") +
      (c.fusedQkv ? ", dq/dk/dv views of one fused gradient" : "");
  if (Status valid = validate(shape); !valid.ok())
    return check(false, what, valid.message());
  std::vector<float> q = randomNormal(shape.qElements(), seed, 0.f, 1.5f),
                     k = randomNormal(shape.kvElements(), seed + 1, 0.f, 1.5f),
                     v = randomUniform(shape.kvElements(), seed + 2),
                     dO = randomNormal(shape.qElements(), seed + 3, 0.f, 1.f),
                     sinks = randomUniform(size_t(shape.heads), seed + 4, -1.f,
                                           3.f);
  std::vector<uint16_t> qBits = round16(q, c.dtype),
                        kBits = round16(k, c.dtype),
                        vBits = round16(v, c.dtype),
                        dOBits = round16(dO, c.dtype);
  std::vector<uint16_t> sinkBits;
  if (c.sinkDtype == DType::BF16)
    sinkBits = round16(sinks, DType::BF16);
  if (!c.withSinks)
    sinks.assign(sinks.size(), -INFINITY);
  std::vector<double> refO, refLse;
  if (Status forward =
          sinkAttentionForward(shape, q, k, v, sinks, refO, refLse);
      !forward.ok())
    return check(false, what, forward.message());
  // O as a kernel stores it, and LSE in f32.
  std::vector<float> storedO(refO.begin(), refO.end()),
      lse(refLse.begin(), refLse.end());
  std::vector<uint16_t> oBits = round16(storedO, c.dtype);
  const void *sinkData = c.sinkDtype == DType::BF16
                             ? static_cast<const void *>(sinkBits.data())
                             : static_cast<const void *>(sinks.data());
  std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end()),
      cuKv(shape.cuSeqlensKv.begin(), shape.cuSeqlensKv.end());
  const int64_t tq = shape.tokensQ(), tkv = shape.tokensKv(), h = shape.heads,
                hk = shape.kvHeads, d = shape.headDim;
  const int64_t fusedRow = (h + 2 * hk) * d;
  if (c.fusedQkv && tq != tkv)
    return check(false, what, "a fused gradient needs equal token counts");
  Expected<DeviceBuffer> dq = upload(ctx, qBits.data(), qBits.size() * 2),
                         dk = upload(ctx, kBits.data(), kBits.size() * 2),
                         dv = upload(ctx, vBits.data(), vBits.size() * 2),
                         ddO = upload(ctx, dOBits.data(), dOBits.size() * 2),
                         dO16 = upload(ctx, oBits.data(), oBits.size() * 2),
                         dLse = upload(ctx, lse.data(), lse.size() * 4),
                         dSinks = upload(ctx, sinkData,
                                         sinks.size() * dtypeSize(c.sinkDtype)),
                         dcuQ = upload(ctx, cuQ.data(), cuQ.size() * 4),
                         dcuKv = upload(ctx, cuKv.data(), cuKv.size() * 4),
                         gradients = DeviceBuffer::allocate(
                             ctx, size_t(c.fusedQkv
                                             ? tq * fusedRow
                                             : tq * h * d + 2 * tkv * hk * d) *
                                      2),
                         gradSinks = DeviceBuffer::allocate(ctx, size_t(h) * 4);
  for (auto *buffer : {&dq, &dk, &dv, &ddO, &dO16, &dLse, &dSinks, &dcuQ,
                       &dcuKv, &gradients, &gradSinks})
    if (!buffer->ok())
      return check(false, what, "device buffers: " + buffer->message());
  (void)gradients->poison();
  (void)gradSinks->poison();
  auto t = [](const DeviceBuffer &b, DType dtype, std::vector<int64_t> sizes) {
    return DeviceTensor{b.address(), dtype, std::move(sizes), {}};
  };
  VarlenBackwardArgs args;
  args.q = t(*dq, c.dtype, {tq, h, d});
  args.k = t(*dk, c.dtype, {tkv, hk, d});
  args.v = t(*dv, c.dtype, {tkv, hk, d});
  args.out = t(*dO16, c.dtype, {tq, h, d});
  args.lse = t(*dLse, DType::F32, {h, tq});
  args.dout = t(*ddO, c.dtype, {tq, h, d});
  const CUdeviceptr base = gradients->address();
  if (c.fusedQkv) {
    args.dq = {base, c.dtype, {tq, h, d}, {fusedRow, d, 1}};
    args.dk = {
        base + uint64_t(h * d * 2), c.dtype, {tkv, hk, d}, {fusedRow, d, 1}};
    args.dv = {base + uint64_t((h + hk) * d * 2),
               c.dtype,
               {tkv, hk, d},
               {fusedRow, d, 1}};
  } else {
    args.dq = {base, c.dtype, {tq, h, d}, {}};
    args.dk = {base + uint64_t(tq * h * d * 2), c.dtype, {tkv, hk, d}, {}};
    args.dv = {base + uint64_t((tq * h * d + tkv * hk * d) * 2),
               c.dtype,
               {tkv, hk, d},
               {}};
  }
  if (c.withSinks) {
    args.sinks = t(*dSinks, c.sinkDtype, {h});
    args.dsinks = t(*gradSinks, DType::F32, {h});
  }
  args.cuSeqlensQ = t(*dcuQ, DType::I32, {shape.batch + 1});
  args.cuSeqlensKv = t(*dcuKv, DType::I32, {shape.batch + 1});
  args.maxSeqlenQ = shape.seqQ;
  args.maxSeqlenKv = shape.seqKv;
  args.window = c.window;
  args.softmaxScale = c.scale;
  Expected<size_t> bytes = library.backwardWorkspaceBytes(args);
  if (!bytes.ok())
    return check(false, what, bytes.message());
  Expected<DeviceBuffer> workspace =
      DeviceBuffer::allocate(ctx, std::max<size_t>(*bytes, 256));
  if (!workspace.ok())
    return check(false, what, workspace.message());
  // Scratch the kernels must not trust: poisoned.
  (void)workspace->poison();
  args.workspace = workspace->address();
  args.workspaceBytes = *bytes;
  Status ran;
  if (c.bshd) {
    // The same memory as [B, S, heads, D], lse as the [B, H, SQ] view of
    // [H, B * SQ].
    const int64_t batch = shape.batch, seqQ = c.lengthsQ[0],
                  seqKv = c.lengthsKv[0];
    for (size_t i = 0; i < c.lengthsQ.size(); ++i)
      if (c.lengthsQ[i] != seqQ || c.lengthsKv[i] != seqKv)
        return check(false, what, "a BSHD case needs one length each");
    what += ", BSHD";
    auto batched = [&](const DeviceTensor &rows, int64_t length) {
      DeviceTensor t{rows.data,
                     rows.dtype,
                     {batch, length, rows.sizes[1], rows.sizes[2]},
                     {}};
      if (!rows.strides.empty())
        t.strides = {length * rows.strides[0], rows.strides[0], rows.strides[1],
                     rows.strides[2]};
      return t;
    };
    BackwardArgs bshd;
    bshd.q = batched(args.q, seqQ);
    bshd.out = batched(args.out, seqQ);
    bshd.dout = batched(args.dout, seqQ);
    bshd.dq = batched(args.dq, seqQ);
    bshd.k = batched(args.k, seqKv);
    bshd.v = batched(args.v, seqKv);
    bshd.dk = batched(args.dk, seqKv);
    bshd.dv = batched(args.dv, seqKv);
    bshd.lse = {
        args.lse.data, DType::F32, {batch, h, seqQ}, {seqQ, batch * seqQ, 1}};
    bshd.sinks = args.sinks;
    bshd.dsinks = args.dsinks;
    bshd.window = args.window;
    bshd.softmaxScale = args.softmaxScale;
    bshd.workspace = args.workspace;
    bshd.workspaceBytes = args.workspaceBytes;
    Expected<size_t> needed = library.backwardWorkspaceBytes(bshd);
    if (!needed.ok() || *needed > args.workspaceBytes)
      return check(false, what,
                   needed.ok() ? "the BSHD call needs more workspace"
                               : needed.message());
    ran = library.backward(bshd, nullptr);
  } else {
    ran = library.backwardVarlen(args, nullptr);
  }
  if (!ran.ok())
    return check(false, what, ran.message());
  if (Status synced = ctx.synchronize(); !synced.ok())
    return check(false, what, synced.message());

  SinkAttentionGradients refs;
  if (Status reference =
          sinkAttentionBackward(shape, q, k, v, sinks, dO, refs, &storedO);
      !reference.ok())
    return check(false, what, reference.message());
  Expected<std::vector<uint16_t>> gradBits = gradients->download<uint16_t>();
  Expected<std::vector<float>> dsinksGot = gradSinks->download<float>();
  if (!gradBits.ok() || !dsinksGot.ok())
    return check(false, what, "download failed");
  auto element = [&](const DeviceTensor &tensor, size_t i) {
    // Element i of the dense [T, heads, D] layout, read from the tensor's.
    const size_t row = size_t(tensor.sizes[1] * tensor.sizes[2]);
    const size_t stride =
        tensor.strides.empty() ? row : size_t(tensor.strides[0]);
    const size_t at = (tensor.data - base) / 2 + i / row * stride + i % row;
    const uint16_t bits = (*gradBits)[at];
    return c.dtype == DType::BF16 ? double(bf16ToFloat(bits))
                                  : double(halfToFloat(bits));
  };
  std::string detail;
  bool ok = true;
  auto compare = [&](const char *name, const std::vector<double> &ref,
                     auto got) {
    double largest = 0, errSq = 0, refSq = 0, worst = 0;
    for (double r : ref)
      largest = std::max(largest, std::fabs(r));
    size_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const double g = got(i), err = std::fabs(g - ref[i]);
      bad += !(err <= 2e-2 * (std::fabs(ref[i]) + largest));
      worst = std::max(worst, err);
      errSq += err * err;
      refSq += ref[i] * ref[i];
    }
    const double relL2 =
        refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
    ok = ok && bad == 0 && relL2 <= 1e-2;
    char text[160];
    std::snprintf(text, sizeof(text), "%s%s: %zu outside, rel-L2 %.2e",
                  detail.empty() ? "" : "; ", name, bad, relL2);
    detail += text;
  };
  compare("dq", refs.dq, [&](size_t i) { return element(args.dq, i); });
  compare("dk", refs.dk, [&](size_t i) { return element(args.dk, i); });
  compare("dv", refs.dv, [&](size_t i) { return element(args.dv, i); });
  if (c.withSinks)
    compare("dsinks", refs.dsinks,
            [&](size_t i) { return double((*dsinksGot)[i]); });
  check(ok, what, detail);
}
} // namespace

int main(int argc, char **argv) {
  bool requireGpu = false;
  // The library lacks f16 D 64 kernels: check that calls for them are
  // refused.
  bool lacksF16D64 = false;
  size_t expectedKernels = 0;
  // With N > 0, also the backward's calls, over N backward kernels.
  size_t backwardKernels = 0;
  std::string directory;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--require-gpu") == 0)
      requireGpu = true;
    else if (std::strcmp(argv[i], "--library") == 0 && i + 1 < argc)
      directory = argv[++i];
    else if (std::strcmp(argv[i], "--lacks-f16-d64") == 0)
      lacksF16D64 = true;
    else if (std::strcmp(argv[i], "--kernels") == 0 && i + 1 < argc)
      expectedKernels = size_t(std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--backward-kernels") == 0 && i + 1 < argc)
      backwardKernels = size_t(std::atoi(argv[++i]));
  }
  if (directory.empty() || expectedKernels == 0) {
    std::fprintf(stderr,
                 "usage: %s [--require-gpu] [--lacks-f16-d64] --kernels N "
                 "[--backward-kernels N] --library DIR\n",
                 argv[0]);
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
  // The kernels of test/GPU/bundles.txt's sink-fwd-run-time-shapes-*:
  // bf16 D 64 causal, bf16 D 128 sliding-window, bf16 D 64 non-causal, f16
  // D 128 causal with bf16 sinks. Heads, window size, scale and lengths are
  // each call's: none is what the bundle was compiled for.
  const DType bf16 = DType::BF16, f16 = DType::F16, f32 = DType::F32;
  // clang-format off
  const std::vector<Case> cases = {
      {bf16, f32, 64, true, 8, 1, 0, {}, {100, 0, 513, 1000}, {200, 5, 513, 1000}, true},
      {bf16, f32, 64, true, 64, 8, 0, 0.3, {0, 1, 300, 17}, {3, 1, 500, 17}, true},
      {bf16, f32, 64, true, 3, 1, 0, {}, {1}, {1}, false},
      {bf16, f32, 128, true, 6, 2, 128, {}, {4096, 3}, {4096, 300}, true},
      {bf16, f32, 128, true, 6, 2, 1, {}, {64, 0, 129}, {64, 7, 1000}, false},
      {bf16, f32, 128, true, 16, 16, 517, 0.05, {777, 1000}, {900, 1000}, true},
      {bf16, f32, 64, false, 4, 4, 0, {}, {100, 7, 0}, {50, 300, 9}, true},
      {bf16, f32, 64, false, 12, 4, 0, 0.05, {1, 333}, {1000, 1}, false},
      {f16, DType::BF16, 128, true, 8, 2, 0, {}, {300, 5}, {300, 700}, true},
      {bf16, f32, 64, true, 8, 2, 0, {}, {300, 0, 77}, {300, 0, 77}, true, true},
      {bf16, f32, 128, true, 6, 2, 300, {}, {1000, 1}, {1000, 1}, true, true},
      // BSHD: one kernel per variant runs batches of equal lengths too.
      {bf16, f32, 64, true, 8, 2, 0, {}, {200, 200, 200}, {300, 300, 300}, true, false, true},
      {bf16, f32, 128, true, 6, 2, 128, {}, {1000, 1000}, {1000, 1000}, true, true, true},
      {bf16, f32, 64, false, 4, 4, 0, 0.2, {1, 1, 1, 1}, {77, 77, 77, 77}, false, false, true},
      {f16, DType::BF16, 128, true, 8, 2, 0, {}, {129}, {129}, true, false, true},
      // Sequences ending mid-tile into padded rows of out.
      {bf16, f32, 128, true, 6, 2, 300, {}, {777, 1, 130}, {900, 1, 130}, true, false, false, true},
      // One length, rows of at most 32 key blocks, more tiles than SMs: a
      // library with the persistent forms runs these persistent (overlap,
      // BSHD with a past; ws, one sequence, non-causal).
      {f16, DType::BF16, 128, true, 8, 2, 0, {}, {600, 600, 600, 600}, {2200, 2200, 2200, 2200}, true, false, true},
      {bf16, f32, 128, false, 16, 4, 0, 0.1, {1100}, {2000}, true},
  };
  // clang-format on
  uint64_t seed = 1;
  for (const Case &c : cases)
    runCase(*ctx, *library, nullptr, c, seed++);
  check(library->compiledKernels() == expectedKernels,
        "each kernel the calls take loaded once (" +
            std::to_string(expectedKernels) + " over " +
            std::to_string(cases.size()) + " calls)",
        std::to_string(library->compiledKernels()) + " compiled");

  // The C ABI (libsinkattn.so) over the same kernels: a library of its own.
  SinkAttnLibrary *cLibrary = nullptr;
  if (sinkattnLibraryOpen(directory.c_str(), 0, &cLibrary) !=
      SINKATTN_SUCCESS) {
    check(false, "the C ABI opens the kernel library", sinkattnLastError());
  } else {
    // bf16 D 64 causal, with sinks and without, fused q/k/v, BSHD: one
    // kernel.
    runCase(*ctx, *library, cLibrary, cases[1], seed++);
    runCase(*ctx, *library, cLibrary, cases[2], seed++);
    runCase(*ctx, *library, cLibrary, cases[9], seed++);
    runCase(*ctx, *library, cLibrary, cases[11], seed++);
    check(sinkattnLibraryCompiledKernels(cLibrary) == 1,
          "the C ABI's library loaded one kernel for four calls",
          std::to_string(sinkattnLibraryCompiledKernels(cLibrary)));
    if (lacksF16D64) {
      SinkAttnVarlenForwardArgs missing = {};
      missing.q = {0x100000, SINKATTN_DTYPE_F16, 3, {10, 8, 64}, {}};
      missing.k =
          missing.v = {0x200000, SINKATTN_DTYPE_F16, 3, {10, 1, 64}, {}};
      missing.out = missing.q;
      missing.out.data = 0x300000;
      missing.lse = {0x400000, SINKATTN_DTYPE_F32, 2, {8, 10}, {}};
      missing.cu_seqlens_q =
          missing.cu_seqlens_k = {0x500000, SINKATTN_DTYPE_I32, 1, {2}, {}};
      missing.max_seqlen_q = missing.max_seqlen_k = 10;
      missing.causal = 1;
      check(
          sinkattnVarlenForward(cLibrary, &missing, nullptr) ==
                  SINKATTN_ERROR_NOT_SUPPORTED &&
              std::string(sinkattnLastError()).find("no kernel for f16 D=64") !=
                  std::string::npos,
          "the C ABI says a variant is not supported", sinkattnLastError());
    }
    sinkattnLibraryClose(cLibrary);
  }

  if (backwardKernels > 0) {
    // The backward's calls: GQA (8:2, 6:3) and MHA, with and without a
    // window and sinks, empty and one-token sequences, more keys than
    // queries, other scales, f16 with bf16 sinks, gradients as views of one
    // fused tensor.
    // clang-format off
    const std::vector<Case> backward = {
        {bf16, f32, 64, true, 8, 2, 0, {}, {100, 0, 300}, {200, 5, 300}, true},
        {bf16, f32, 64, true, 4, 4, 0, {}, {1, 129, 0, 700}, {1, 129, 5, 700}, false},
        {bf16, f32, 128, true, 6, 2, 517, 0.05, {777, 1000}, {900, 1000}, true},
        {f16, DType::BF16, 128, true, 6, 3, 0, {}, {77, 0, 1500}, {900, 8, 1500}, true},
        {bf16, f32, 128, true, 16, 16, 0, 0.3, {300, 5}, {300, 700}, true},
        {bf16, f32, 64, true, 8, 2, 0, {}, {300, 0, 77}, {300, 0, 77}, true, true},
        // BSHD: batches of one length, SQ < SKV, through the same kernels.
        {bf16, f32, 64, true, 8, 2, 0, {}, {200, 200, 200}, {300, 300, 300}, true, false, true},
        {bf16, f32, 128, true, 6, 2, 128, {}, {500, 500}, {500, 500}, false, false, true},
    };
    // clang-format on
    const size_t forwardKernels = library->compiledKernels();
    for (const Case &c : backward)
      runBackwardCase(*ctx, *library, c, seed++);
    check(library->compiledKernels() - forwardKernels == backwardKernels,
          "each backward kernel the calls take loaded once (" +
              std::to_string(backwardKernels) + " over " +
              std::to_string(backward.size()) + " calls)",
          std::to_string(library->compiledKernels() - forwardKernels) +
              " loaded");
  }

  if (!lacksF16D64) {
    std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED",
                failures);
    return failures ? 1 : 0;
  }
  // f16 D 64 is not in the library.
  VarlenForwardArgs args;
  // Aligned, distinct addresses that no call dereferences.
  args.q = {0x100000, f16, {10, 8, 64}, {}};
  args.k = args.v = {0x200000, f16, {10, 1, 64}, {}};
  args.out = {0x300000, f16, {10, 8, 64}, {}};
  args.lse = {0x400000, f32, {8, 10}, {}};
  args.cuSeqlensQ = args.cuSeqlensKv = {0x500000, DType::I32, {2}, {}};
  args.maxSeqlenQ = args.maxSeqlenKv = 10;
  Status refused = library->forwardVarlen(args, nullptr);
  check(!refused.ok() &&
            refused.message().find("no kernel for f16 D=64 causal f32 sinks") !=
                std::string::npos,
        "a variant the library lacks is refused, naming it", refused.message());
  std::printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
