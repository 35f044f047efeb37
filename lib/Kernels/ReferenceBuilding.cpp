//===- ReferenceBuilding.cpp - Builders of the SIMT reference kernels -----===//

#include "ReferenceBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;
using namespace sinkattn::kernels::reference;

MemRefType reference::flatBuffer(int64_t elements, Type type) {
  return MemRefType::get({elements}, type);
}

Value reference::fold(ImplicitLocOpBuilder &b, Value lo, Value hi, Value step,
                      Value init,
                      llvm::function_ref<Value(Value, Value)> body) {
  return buildForLoop(b, lo, hi, step, ValueRange{init},
                      [&](Value iv, ValueRange carried) {
                        return SmallVector<Value>{body(iv, carried.front())};
                      })
      .getResult(0);
}

Value reference::load(ImplicitLocOpBuilder &b, Value buffer, Value at) {
  return memref::LoadOp::create(b, buffer, at, BoolAttr(), IntegerAttr());
}

void reference::store(ImplicitLocOpBuilder &b, Value value, Value buffer,
                      Value at) {
  memref::StoreOp::create(b, value, buffer, at, BoolAttr(), IntegerAttr());
}

Value reference::loadF32(ImplicitLocOpBuilder &b, Value buffer, Value at) {
  Value stored = load(b, buffer, at);
  return arith::ExtFOp::create(b, b.getF32Type(), stored);
}

Value reference::loadSinkLogit(ImplicitLocOpBuilder &b, Value sinks,
                               Value head) {
  Value stored = load(b, sinks, head);
  if (stored.getType().isF32())
    return stored;
  return arith::ExtFOp::create(b, b.getF32Type(), stored);
}

Value reference::exp2Approx(ImplicitLocOpBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.ex2.approx.f32"), x)
      .getResult(0);
}

Value reference::log2Approx(ImplicitLocOpBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, b.getF32Type(), b.getStringAttr("llvm.nvvm.lg2.approx.f"), x)
      .getResult(0);
}

void reference::forEachElement(ImplicitLocOpBuilder &b, const HeadDimLoop &loop,
                               llvm::function_ref<void(Value)> body) {
  buildForLoop(b, loop.c0, loop.dim, loop.c1, body);
}

Value reference::dotWithBuffer(ImplicitLocOpBuilder &b, const HeadDimLoop &loop,
                               Value row, Value buffer, Value base) {
  return fold(b, loop.c0, loop.dim, loop.c1, loop.zero,
              [&](Value d, Value sum) -> Value {
                Value x = load(b, row, d);
                Value y = loadF32(b, buffer, arith::AddIOp::create(b, base, d));
                Value xy = arith::MulFOp::create(b, x, y);
                return arith::AddFOp::create(b, sum, xy);
              });
}

KernelConstants
reference::kernelConstants(ImplicitLocOpBuilder &b,
                           const rt::SinkAttentionShape &shape, bool withLog2e,
                           std::optional<RunTimeSizes> runTime) {
  KernelConstants k;
  k.c0 = constantIndex(b, 0);
  k.c1 = constantIndex(b, 1);
  k.block = constantIndex(b, rt::kSinkFwdReferenceBlockSize);
  k.rows = runTime ? runTime->rows : constantIndex(b, shape.rows());
  k.dim = constantIndex(b, shape.headDim);
  if (runTime) {
    k.heads = runTime->heads;
    k.kvHeads = runTime->kvHeads;
    k.group = arith::DivUIOp::create(b, k.heads, k.kvHeads);
    // Window 0 (none): any distance a 32-bit position can have.
    Value none = constantIndex(b, INT32_MAX);
    Value noWindow = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                           runTime->window, k.c0);
    k.window = arith::SelectOp::create(b, noWindow, none, runTime->window);
    k.causal = runTime->causal;
    k.scale = runTime->scale;
  } else {
    k.heads = constantIndex(b, shape.heads);
    k.group = constantIndex(b, shape.heads / shape.kvHeads);
    // Without a window the longest SKV: the lower bound of every row's
    // keys is then 0.
    k.window = constantIndex(b, shape.window > 0 ? shape.window : shape.seqKv);
    k.scale = constantF32(b, float(shape.scale));
  }
  if (runTime && shape.varlen()) {
    k.tokensQ = arith::DivUIOp::create(b, k.rows, k.heads);
    k.offsetCount = runTime->offsetCount;
  }
  if (withLog2e)
    k.log2e = constantF32(b, float(1.44269504088896341));
  k.ln2 = constantF32(b, float(0.693147180559945309));
  k.zero = constantF32(b, 0.0f);
  k.tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  k.bid = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  k.first = arith::MulIOp::create(b, k.bid, k.block);
  return k;
}

SequenceBounds reference::sequenceBounds(ImplicitLocOpBuilder &b, Value cuQ,
                                         Value cuK, Value sequence, Value c1) {
  SequenceBounds s;
  s.bNext = arith::AddIOp::create(b, sequence, c1);
  Value qStart = load(b, cuQ, sequence);
  Value qEnd = load(b, cuQ, s.bNext);
  Value kStart = load(b, cuK, sequence);
  Value kEnd = load(b, cuK, s.bNext);
  Type index = b.getIndexType();
  s.qStart = arith::IndexCastUIOp::create(b, index, qStart);
  s.qEnd = arith::IndexCastUIOp::create(b, index, qEnd);
  s.kStart = arith::IndexCastUIOp::create(b, index, kStart);
  s.kEnd = arith::IndexCastUIOp::create(b, index, kEnd);
  s.seqQ = arith::SubIOp::create(b, s.qEnd, s.qStart);
  s.skv = arith::SubIOp::create(b, s.kEnd, s.kStart);
  return s;
}

Value reference::sequenceOfToken(ImplicitLocOpBuilder &b, Value scanOffsets,
                                 Value token, Value offsetCount, Value c0,
                                 Value c1) {
  return fold(b, c1, offsetCount, c1, c0, [&](Value n, Value count) -> Value {
    Value end32 = load(b, scanOffsets, n);
    Value end = arith::IndexCastUIOp::create(b, b.getIndexType(), end32);
    Value before =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ule, end, token);
    Value more = arith::AddIOp::create(b, count, c1);
    return arith::SelectOp::create(b, before, more, count);
  });
}

QueryRow reference::queryRow(ImplicitLocOpBuilder &b,
                             const rt::SinkAttentionShape &s,
                             const KernelConstants &k, Value row, Value cuQ,
                             Value cuK) {
  using arith::AddIOp, arith::DivUIOp, arith::MulIOp, arith::RemUIOp;
  QueryRow r;
  if (!s.varlen()) {
    // Element strides of (batch, head, position) in q and in k/v.
    r.seqQ = constantIndex(b, s.seqQ);
    r.skv = constantIndex(b, s.seqKv);
    r.i = RemUIOp::create(b, row, r.seqQ);
    Value bh = DivUIOp::create(b, row, r.seqQ);
    r.h = RemUIOp::create(b, bh, k.heads);
    r.b = DivUIOp::create(b, bh, k.heads);
    r.hk = DivUIOp::create(b, r.h, k.group);
    Value qBatch = constantIndex(b, s.qOffset(1, 0, 0));
    Value qHead = constantIndex(b, s.qOffset(0, 1, 0));
    Value qPos = constantIndex(b, s.qOffset(0, 0, 1));
    Value kvBatch = constantIndex(b, s.kvOffset(1, 0, 0));
    Value kvHead = constantIndex(b, s.kvOffset(0, 1, 0));
    r.kStride = constantIndex(b, s.kvOffset(0, 0, 1));
    Value qb = MulIOp::create(b, r.b, qBatch);
    Value qh = MulIOp::create(b, r.h, qHead);
    Value qi = MulIOp::create(b, r.i, qPos);
    Value qbh = AddIOp::create(b, qb, qh);
    r.qBase = AddIOp::create(b, qbh, qi);
    Value kb = MulIOp::create(b, r.b, kvBatch);
    Value kh = MulIOp::create(b, r.hk, kvHead);
    r.kBase = AddIOp::create(b, kb, kh);
    return r;
  }
  // Varlen: LSE is [H, TQ]; q is [TQ, H, D] and k/v [TKV, HKV, D].
  Value tokens = k.tokensQ ? k.tokensQ : constantIndex(b, s.tokensQ());
  Value token = RemUIOp::create(b, row, tokens);
  r.h = DivUIOp::create(b, row, tokens);
  r.hk = DivUIOp::create(b, r.h, k.group);
  Value offsetCount =
      k.offsetCount ? k.offsetCount : constantIndex(b, s.batch + 1);
  r.b = sequenceOfToken(b, cuQ, token, offsetCount, k.c0, k.c1);
  SequenceBounds bounds = sequenceBounds(b, cuQ, cuK, r.b, k.c1);
  r.seqQ = bounds.seqQ;
  r.skv = bounds.skv;
  r.i = arith::SubIOp::create(b, token, bounds.qStart);
  Value dim = constantIndex(b, s.headDim);
  Value qPos;
  if (k.kvHeads) {
    qPos = MulIOp::create(b, k.heads, dim);
    r.kStride = MulIOp::create(b, k.kvHeads, dim);
  } else {
    qPos = constantIndex(b, s.heads * s.headDim);
    r.kStride = constantIndex(b, s.kvHeads * s.headDim);
  }
  Value qt = MulIOp::create(b, token, qPos);
  Value qh = MulIOp::create(b, r.h, dim);
  r.qBase = AddIOp::create(b, qt, qh);
  Value kt = MulIOp::create(b, bounds.kStart, r.kStride);
  Value kh = MulIOp::create(b, r.hk, dim);
  r.kBase = AddIOp::create(b, kt, kh);
  return r;
}

AttendedKeys reference::attendedKeys(ImplicitLocOpBuilder &b,
                                     const KernelConstants &k,
                                     const QueryRow &row) {
  Value offset = arith::SubIOp::create(b, row.skv, row.seqQ);
  Value p = arith::AddIOp::create(b, row.i, offset);
  // Without the causal mask every row sits at the last key.
  if (k.causal) {
    Value lastKey = arith::SubIOp::create(b, row.skv, k.c1);
    p = arith::SelectOp::create(b, k.causal, p, lastKey);
  }
  AttendedKeys keys;
  keys.hi = arith::AddIOp::create(b, p, k.c1);
  Value loRaw = arith::SubIOp::create(b, keys.hi, k.window);
  keys.lo = arith::MaxSIOp::create(b, loRaw, k.c0);
  return keys;
}

FailureOr<std::string> sinkattn::kernels::reference::compileReferencePTX(
    MLIRContext &context, FailureOr<OwningOpRef<ModuleOp>> module,
    const KernelConfig &config, PTXTargetOptions target, StringRef kernel) {
  if (failed(module))
    return failure();
  target.barePointers = !config.runTimeShapes;
  FailureOr<std::map<std::string, std::string>> ptx =
      compileToPTX(**module, target);
  if (failed(ptx))
    return failure();
  if (ptx->size() != 1)
    return emitError(UnknownLoc::get(&context))
           << "internal error: the " << kernel << " reference produced "
           << ptx->size() << " PTX modules, expected 1";
  return ptx->begin()->second;
}
