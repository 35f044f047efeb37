//===- SinkBwdReference.cpp - fp32 GPU reference of the sink backward -----===//
//
// The independent reference a backward kernel is checked against
// (semantics and ABI in SinkAttn/Runtime/AttentionReference.h): plain SIMT
// code in gpu/scf/arith/memref, like the forward's reference, in three
// kernels of one module.
//
//   rows   one thread per query row recomputes M, L (two passes, every
//          exponent <= 0) and O, then its dQ row from
//          dS_j = P_j (dO . v_j - delta) with delta = dO . o, o the
//          forward's output as given (stored in the input dtype: the
//          backward's specification, as in every FlashAttention backward);
//          it also writes its O (the check compares the stored o with
//          it) and records LSE, delta and the row's sink term
//          -exp(t - LSE) dO . O with its own, unrounded O (dsinks are exact
//          gradients) for the kernels after it.
//   keys   one thread per key row of a kv head accumulates its dK and dV
//          rows over every query row, of every query head of its group,
//          that attends it (the rows' LSE and delta from `rows`), so GQA
//          sums without repeating K/V.
//   sinks  one thread per head sums its rows' sink terms in a fixed order.
//
// Each output element has one writer: the reference is deterministic.
// exp uses ex2.approx.f32 and ln lg2.approx.f32, as in the forward's
// reference; the CPU test runs this code against the float64 backward.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "ReferenceBuilding.h"

#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <limits>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;
using namespace sinkattn::kernels::reference;

namespace {

/// The module's buffer types: `row` is a thread's private f32 row of D.
struct BufferTypes {
  MemRefType q, kv, sinks, dq, dkv, dsinks, rows, row, offsets;
};

/// The arguments every kernel of the module takes (one ABI, launched in
/// order with the same values).
struct KernelArgs {
  Value q, k, v, sinks, dO, storedO, dq, dk, dv, dsinks, refO, lse, delta,
      terms, cuQ, cuK;
};

KernelArgs kernelArgs(ValueRange args) {
  KernelArgs a;
  a.q = args[0];
  a.k = args[1];
  a.v = args[2];
  a.sinks = args[3];
  a.dO = args[4];
  a.storedO = args[5];
  a.dq = args[6];
  a.dk = args[7];
  a.dv = args[8];
  a.dsinks = args[9];
  a.refO = args[10];
  a.lse = args[11];
  a.delta = args[12];
  a.terms = args[13];
  if (args.size() > 14) {
    a.cuQ = args[14];
    a.cuK = args[15];
  }
  return a;
}

/// Calls of the module's private functions (defined by buildHelpers).
Value call(ImplicitLocOpBuilder &b, StringRef callee, ValueRange operands) {
  return func::CallOp::create(b, callee, b.getF32Type(), operands).getResult(0);
}
/// scale * (qRow . k_j) for the key j of a kv head at kBase.
Value score(ImplicitLocOpBuilder &b, Value qRow, Value keys, const QueryRow &r,
            Value j) {
  return call(b, "score", {qRow, keys, r.kBase, r.kStride, j});
}
/// x . y_j for the row y_j at kBase + j * kStride.
Value dotRow(ImplicitLocOpBuilder &b, Value x, Value y, const QueryRow &r,
             Value j) {
  return call(b, "dotRow", {x, y, r.kBase, r.kStride, j});
}
/// row . x for the row of x at `at` (a query, dO or stored O row).
Value dotAt(ImplicitLocOpBuilder &b, Value row, Value x, Value at) {
  return call(b, "dotAt", {row, x, at});
}
Value exp(ImplicitLocOpBuilder &b, Value x) { return call(b, "exp", {x}); }

/// The private functions the kernels call: score, dotRow, dotAt and exp.
void buildHelpers(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                  const BufferTypes &types) {
  Type f32 = b.getF32Type(), index = b.getIndexType();
  auto function = [&](StringRef name, TypeRange args,
                      function_ref<Value(ValueRange)> body) {
    auto func = func::FuncOp::create(b, name, b.getFunctionType(args, f32));
    func.setPrivate();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(func.addEntryBlock());
    func::ReturnOp::create(b, body(func.getArguments()));
  };
  auto headDimLoop = [&] {
    HeadDimLoop loop;
    loop.c0 = constantIndex(b, 0);
    loop.c1 = constantIndex(b, 1);
    loop.dim = constantIndex(b, shape.headDim);
    loop.zero = constantF32(b, 0.0f);
    return loop;
  };
  function("score", {types.row, types.kv, index, index, index},
           [&](ValueRange args) -> Value {
             Value scale = constantF32(b, float(shape.scale));
             Value dot = call(b, "dotRow", args);
             return arith::MulFOp::create(b, dot, scale);
           });
  function("dotRow", {types.row, types.kv, index, index, index},
           [&](ValueRange args) -> Value {
             HeadDimLoop loop = headDimLoop();
             Value jOffset = arith::MulIOp::create(b, args[4], args[3]);
             Value base = arith::AddIOp::create(b, args[2], jOffset);
             return dotWithBuffer(b, loop, args[0], args[1], base);
           });
  function("dotAt", {types.row, types.q, index}, [&](ValueRange args) -> Value {
    HeadDimLoop loop = headDimLoop();
    return dotWithBuffer(b, loop, args[0], args[1], args[2]);
  });
  function("exp", {f32}, [&](ValueRange args) -> Value {
    Value log2e = constantF32(b, float(1.44269504088896341));
    Value y = arith::MulFOp::create(b, args[0], log2e);
    return exp2Approx(b, y);
  });
}

/// `rows`: one thread per query row recomputes M, L and O, then its dQ row,
/// and records O, LSE, delta and its sink term.
void buildQueryRow(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                   const BufferTypes &types, const KernelConstants &k,
                   const KernelArgs &a, Value row) {
  QueryRow r = queryRow(b, shape, k, row, a.cuQ, a.cuK);
  AttendedKeys keys = attendedKeys(b, k, r);
  HeadDimLoop dims = k.headDimLoop();

  Value qRow = memref::AllocaOp::create(b, types.row);
  Value doRow = memref::AllocaOp::create(b, types.row);
  Value acc = memref::AllocaOp::create(b, types.row);
  Value dqRow = memref::AllocaOp::create(b, types.row);
  forEachElement(b, dims, [&](Value d) {
    Value at = arith::AddIOp::create(b, r.qBase, d);
    store(b, loadF32(b, a.q, at), qRow, d);
    store(b, loadF32(b, a.dO, at), doRow, d);
    store(b, k.zero, acc, d);
    store(b, k.zero, dqRow, d);
  });
  Value t = loadSinkLogit(b, a.sinks, r.h);

  // M = max(t, max_j s_j).
  Value m = fold(b, keys.lo, keys.hi, k.c1, t, [&](Value j, Value mj) -> Value {
    Value s = score(b, qRow, a.k, r, j);
    return arith::MaximumFOp::create(b, mj, s);
  });
  // L = exp(t - M) + sum_j exp(s_j - M); acc = sum_j exp(s_j - M) v_j.
  // M is -inf only for a row with no key and a -inf sink: then L = 0.
  Value ninf = constantF32(b, -std::numeric_limits<float>::infinity());
  Value one = constantF32(b, 1.0f);
  Value mIsInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, ninf);
  Value mSafe = arith::SelectOp::create(b, mIsInf, k.zero, m);
  Value l0 = exp(b, arith::SubFOp::create(b, t, mSafe));
  Value l =
      fold(b, keys.lo, keys.hi, k.c1, l0, [&](Value j, Value lj) -> Value {
        Value s = score(b, qRow, a.k, r, j);
        Value e = exp(b, arith::SubFOp::create(b, s, mSafe));
        Value jOffset = arith::MulIOp::create(b, j, r.kStride);
        Value vRow = arith::AddIOp::create(b, r.kBase, jOffset);
        forEachElement(b, dims, [&](Value d) {
          Value y = loadF32(b, a.v, arith::AddIOp::create(b, vRow, d));
          Value accD = load(b, acc, d);
          Value ey = arith::MulFOp::create(b, e, y);
          store(b, arith::AddFOp::create(b, accD, ey), acc, d);
        });
        return arith::AddFOp::create(b, lj, e);
      });
  // LSE = M + ln L; dO . O with O = acc / L (the sink term's); delta =
  // dO . o with the given o (dS's).
  Value log2l = log2Approx(b, l);
  Value lnl = arith::MulFOp::create(b, log2l, k.ln2);
  Value rowLse = arith::AddFOp::create(b, m, lnl);
  Value lIsZero =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, k.zero);
  Value lSafe = arith::SelectOp::create(b, lIsZero, one, l);
  Value doDotO =
      fold(b, dims.c0, dims.dim, dims.c1, dims.zero, [&](Value d, Value sum) {
        Value accD = load(b, acc, d);
        Value o = arith::DivFOp::create(b, accD, lSafe);
        Value oAt = arith::AddIOp::create(b, r.qBase, d);
        store(b, o, a.refO, oAt);
        Value g = load(b, doRow, d);
        Value go = arith::MulFOp::create(b, g, o);
        return Value(arith::AddFOp::create(b, sum, go));
      });
  Value given = dotAt(b, doRow, a.storedO, r.qBase);
  // dQ = scale sum_j P_j (dO . v_j - delta) k_j.
  buildForLoop(b, keys.lo, keys.hi, k.c1, [&](Value j) {
    Value s = score(b, qRow, a.k, r, j);
    Value pj = exp(b, arith::SubFOp::create(b, s, rowLse));
    Value dp = dotRow(b, doRow, a.v, r, j);
    Value dpd = arith::SubFOp::create(b, dp, given);
    Value ds = arith::MulFOp::create(b, pj, dpd);
    Value dsScaled = arith::MulFOp::create(b, ds, k.scale);
    Value jOffset = arith::MulIOp::create(b, j, r.kStride);
    Value kRow = arith::AddIOp::create(b, r.kBase, jOffset);
    forEachElement(b, dims, [&](Value d) {
      Value y = loadF32(b, a.k, arith::AddIOp::create(b, kRow, d));
      Value dqD = load(b, dqRow, d);
      Value term = arith::MulFOp::create(b, dsScaled, y);
      store(b, arith::AddFOp::create(b, dqD, term), dqRow, d);
    });
  });
  forEachElement(b, dims, [&](Value d) {
    Value dqD = load(b, dqRow, d);
    Value at = arith::AddIOp::create(b, r.qBase, d);
    store(b, dqD, a.dq, at);
  });
  // The row's share of dsink: -exp(t - LSE) dO . O.
  Value pSinkRaw = exp(b, arith::SubFOp::create(b, t, rowLse));
  // A -inf sink takes no probability (and exp(-inf - -inf) is NaN).
  Value tIsInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, t, ninf);
  Value pSink = arith::SelectOp::create(b, tIsInf, k.zero, pSinkRaw);
  Value share = arith::MulFOp::create(b, pSink, doDotO);
  Value term = arith::NegFOp::create(b, share);
  store(b, rowLse, a.lse, row);
  store(b, given, a.delta, row);
  store(b, term, a.terms, row);
}

/// A key row of a kv head: its sequence's lengths, the key j in its
/// sequence, its kv head, its offset in k/v (kvAt), and how to address the
/// query rows of (b, h, i): q/dO at qBatchBase + h * qHeadStride +
/// i * qPosStride, LSE's order at lseBatchBase + h * lseHeadStride + i.
struct KeyRow {
  Value seqQ, skv, j, hk, kvAt, qBatchBase, qHeadStride, qPosStride,
      lseBatchBase, lseHeadStride;
};

/// From `keyRow` (kv head major, then token).
KeyRow keyRow(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &s,
              const KernelConstants &k, const KernelArgs &a, Value keyRow) {
  using arith::AddIOp, arith::DivUIOp, arith::MulIOp, arith::RemUIOp;
  KeyRow r;
  if (!s.varlen()) {
    // Element strides of (batch, head, position) in q and in k/v.
    r.seqQ = constantIndex(b, s.seqQ);
    r.skv = constantIndex(b, s.seqKv);
    Value kvHeads = constantIndex(b, s.kvHeads);
    r.j = RemUIOp::create(b, keyRow, r.skv);
    Value bhk = DivUIOp::create(b, keyRow, r.skv);
    r.hk = RemUIOp::create(b, bhk, kvHeads);
    Value batch = DivUIOp::create(b, bhk, kvHeads);
    Value kvBatch = constantIndex(b, s.kvOffset(1, 0, 0));
    Value kvHead = constantIndex(b, s.kvOffset(0, 1, 0));
    Value kvPos = constantIndex(b, s.kvOffset(0, 0, 1));
    Value kb = MulIOp::create(b, batch, kvBatch);
    Value kh = MulIOp::create(b, r.hk, kvHead);
    Value kj = MulIOp::create(b, r.j, kvPos);
    Value kbh = AddIOp::create(b, kb, kh);
    r.kvAt = AddIOp::create(b, kbh, kj);
    Value qBatch = constantIndex(b, s.qOffset(1, 0, 0));
    r.qHeadStride = constantIndex(b, s.qOffset(0, 1, 0));
    r.qPosStride = constantIndex(b, s.qOffset(0, 0, 1));
    r.qBatchBase = MulIOp::create(b, batch, qBatch);
    Value lseBatch = constantIndex(b, s.heads * s.seqQ);
    r.lseBatchBase = MulIOp::create(b, batch, lseBatch);
    r.lseHeadStride = constantIndex(b, s.seqQ);
    return r;
  }
  // Varlen: the sequence of key token t is the number of offsets
  // cu_seqlens_kv[1..B] at or below t.
  Value tokens = constantIndex(b, s.tokensKv());
  Value token = RemUIOp::create(b, keyRow, tokens);
  r.hk = DivUIOp::create(b, keyRow, tokens);
  Value offsetCount = constantIndex(b, s.batch + 1);
  Value batch = sequenceOfToken(b, a.cuK, token, offsetCount, k.c0, k.c1);
  SequenceBounds bounds = sequenceBounds(b, a.cuQ, a.cuK, batch, k.c1);
  r.seqQ = bounds.seqQ;
  r.skv = bounds.skv;
  r.j = arith::SubIOp::create(b, token, bounds.kStart);
  Value dim = constantIndex(b, s.headDim);
  Value kvPos = constantIndex(b, s.kvHeads * s.headDim);
  Value kt = MulIOp::create(b, token, kvPos);
  Value kh = MulIOp::create(b, r.hk, dim);
  r.kvAt = AddIOp::create(b, kt, kh);
  r.qHeadStride = constantIndex(b, s.headDim);
  r.qPosStride = constantIndex(b, s.heads * s.headDim);
  r.qBatchBase = MulIOp::create(b, bounds.qStart, r.qPosStride);
  r.lseBatchBase = AddIOp::create(b, bounds.qStart, k.c0);
  r.lseHeadStride = constantIndex(b, s.tokensQ());
  return r;
}

/// `keys`: one thread per key row accumulates its dK and dV rows over every
/// query row, of every query head of its group, that attends it.
void buildKeyRow(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                 const BufferTypes &types, const KernelConstants &k,
                 const KernelArgs &a, Value keyRowIndex) {
  KeyRow r = keyRow(b, shape, k, a, keyRowIndex);
  HeadDimLoop dims = k.headDimLoop();
  // The query rows i whose position i + SKV - SQ lies in [j, j + WINDOW):
  // those that attend key j.
  Value offset = arith::SubIOp::create(b, r.skv, r.seqQ);
  Value iFirstRaw = arith::SubIOp::create(b, r.j, offset);
  Value iFirst = arith::MaxSIOp::create(b, iFirstRaw, k.c0);
  Value iEndRaw = arith::AddIOp::create(b, iFirstRaw, k.window);
  Value iEnd = arith::MinSIOp::create(b, iEndRaw, r.seqQ);
  Value kRow = memref::AllocaOp::create(b, types.row);
  Value vRow = memref::AllocaOp::create(b, types.row);
  Value dkRow = memref::AllocaOp::create(b, types.row);
  Value dvRow = memref::AllocaOp::create(b, types.row);
  forEachElement(b, dims, [&](Value d) {
    Value at = arith::AddIOp::create(b, r.kvAt, d);
    store(b, loadF32(b, a.k, at), kRow, d);
    store(b, loadF32(b, a.v, at), vRow, d);
    store(b, k.zero, dkRow, d);
    store(b, k.zero, dvRow, d);
  });
  Value hFirst = arith::MulIOp::create(b, r.hk, k.group);
  Value hEnd = arith::AddIOp::create(b, hFirst, k.group);
  buildForLoop(b, hFirst, hEnd, k.c1, [&](Value h) {
    Value qh = arith::MulIOp::create(b, h, r.qHeadStride);
    Value qbh = arith::AddIOp::create(b, r.qBatchBase, qh);
    Value lh = arith::MulIOp::create(b, h, r.lseHeadStride);
    Value lbh = arith::AddIOp::create(b, r.lseBatchBase, lh);
    buildForLoop(b, iFirst, iEnd, k.c1, [&](Value i) {
      Value qi = arith::MulIOp::create(b, i, r.qPosStride);
      Value qAt = arith::AddIOp::create(b, qbh, qi);
      Value rowIndex = arith::AddIOp::create(b, lbh, i);
      Value rowLse = load(b, a.lse, rowIndex);
      Value rowDelta = load(b, a.delta, rowIndex);
      Value qk = dotAt(b, kRow, a.q, qAt);
      Value s = arith::MulFOp::create(b, qk, k.scale);
      Value pij = exp(b, arith::SubFOp::create(b, s, rowLse));
      Value dp = dotAt(b, vRow, a.dO, qAt);
      Value dpd = arith::SubFOp::create(b, dp, rowDelta);
      Value ds = arith::MulFOp::create(b, pij, dpd);
      Value dsScaled = arith::MulFOp::create(b, ds, k.scale);
      forEachElement(b, dims, [&](Value d) {
        Value at = arith::AddIOp::create(b, qAt, d);
        Value x = loadF32(b, a.q, at);
        Value g = loadF32(b, a.dO, at);
        Value dkD = load(b, dkRow, d);
        Value dkTerm = arith::MulFOp::create(b, dsScaled, x);
        store(b, arith::AddFOp::create(b, dkD, dkTerm), dkRow, d);
        Value dvD = load(b, dvRow, d);
        Value dvTerm = arith::MulFOp::create(b, pij, g);
        store(b, arith::AddFOp::create(b, dvD, dvTerm), dvRow, d);
      });
    });
  });
  forEachElement(b, dims, [&](Value d) {
    Value at = arith::AddIOp::create(b, r.kvAt, d);
    store(b, load(b, dkRow, d), a.dk, at);
    store(b, load(b, dvRow, d), a.dv, at);
  });
}

/// `sinks`: one thread per head sums its rows' sink terms in a fixed order.
/// Rows of head h come in runs of SQ per batch ([B, H, SQ]), or one run of
/// TQ (varlen's [H, TQ]).
void buildHeadSink(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                   const KernelConstants &k, const KernelArgs &a, Value h) {
  int64_t runRows = shape.varlen() ? shape.tokensQ() : shape.seqQ;
  Value batches = constantIndex(b, shape.varlen() ? 1 : shape.batch);
  Value run = constantIndex(b, runRows);
  Value batchRows =
      constantIndex(b, shape.varlen() ? 0 : shape.heads * shape.seqQ);
  Value headStart = arith::MulIOp::create(b, h, run);
  Value sum =
      fold(b, k.c0, batches, k.c1, k.zero, [&](Value batch, Value total) {
        Value bStart = arith::MulIOp::create(b, batch, batchRows);
        Value start = arith::AddIOp::create(b, bStart, headStart);
        Value end = arith::AddIOp::create(b, start, run);
        return fold(b, start, end, k.c1, total,
                    [&](Value r, Value acc) -> Value {
                      Value x = load(b, a.terms, r);
                      return arith::AddFOp::create(b, acc, x);
                    });
      });
  store(b, sum, a.dsinks, h);
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>>
kernels::buildSinkBwdReference(MLIRContext &context,
                               const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "sink-bwd reference: ";
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or fp16";
  rt::SinkAttentionShape shape = sinkAttentionShape(config);
  if (rt::Status valid = rt::validate(shape); !valid.ok())
    return fail() << valid.message();
  if (shape.headDim > 256)
    return fail() << "head_dim " << shape.headDim
                  << " is not supported (at most 256)";
  if (!rt::sinkBwdReferenceLaunches(shape).ok())
    return fail() << "the problem needs more than 2^31-1 blocks of "
                  << rt::kSinkFwdReferenceBlockSize << " threads";

  context
      .loadDialect<arith::ArithDialect, func::FuncDialect, gpu::GPUDialect,
                   LLVM::LLVMDialect, memref::MemRefDialect, scf::SCFDialect>();
  ImplicitLocOpBuilder b(
      NameLoc::get(StringAttr::get(&context, "sink-bwd reference")), &context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getLoc());
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                     b.getUnitAttr());
  b.setInsertionPointToEnd(module->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, "sink_bwd_reference");
  b.setInsertionPointToStart(gpuModule.getBody());

  Type t = getElementType(&context, config.dtype);
  Type f32 = b.getF32Type();
  BufferTypes types;
  types.q = flatBuffer(shape.qElements(), t);
  types.kv = flatBuffer(shape.kvElements(), t);
  types.sinks =
      flatBuffer(shape.heads, getElementType(&context, config.sinkDtype));
  types.dq = flatBuffer(shape.qElements(), f32);
  types.dkv = flatBuffer(shape.kvElements(), f32);
  types.dsinks = flatBuffer(shape.heads, f32);
  types.rows = flatBuffer(shape.rows(), f32);
  types.row = flatBuffer(shape.headDim, f32);
  types.offsets = flatBuffer(shape.batch + 1, b.getI32Type());
  SmallVector<Type> argTypes = {types.q,    types.kv,     types.kv, types.sinks,
                                types.q,    types.q,      types.dq, types.dkv,
                                types.dkv,  types.dsinks, types.dq, types.rows,
                                types.rows, types.rows};
  if (shape.varlen())
    argTypes.append(2, types.offsets);

  // Each kernel: the shared constants, then the thread's item (its index
  // `first + tid` below `count`) built by `body`.
  auto kernel =
      [&](StringRef name, function_ref<Value(const KernelConstants &)> count,
          function_ref<void(const KernelConstants &, const KernelArgs &, Value)>
              body) {
        auto func =
            gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}));
        func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                      b.getUnitAttr());
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&func.getBody().front());
        KernelConstants k = kernelConstants(b, shape, /*withLog2e=*/false);
        KernelArgs args = kernelArgs(func.getArguments());
        Value items = count(k);
        Value item = arith::AddIOp::create(b, k.first, k.tid);
        Value inside =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, items);
        buildIfThen(b, inside, [&] { body(k, args, item); });
        gpu::ReturnOp::create(b);
      };
  kernel(
      rt::kSinkBwdReferenceRowsEntry,
      [](const KernelConstants &k) { return k.rows; },
      [&](const KernelConstants &k, const KernelArgs &args, Value row) {
        buildQueryRow(b, shape, types, k, args, row);
      });
  kernel(
      rt::kSinkBwdReferenceKeysEntry,
      [&](const KernelConstants &) {
        return constantIndex(b, shape.kvHeads * shape.tokensKv());
      },
      [&](const KernelConstants &k, const KernelArgs &args, Value keyRow) {
        buildKeyRow(b, shape, types, k, args, keyRow);
      });
  kernel(
      rt::kSinkBwdReferenceSinksEntry,
      [](const KernelConstants &k) { return k.heads; },
      [&](const KernelConstants &k, const KernelArgs &args, Value h) {
        buildHeadSink(b, shape, k, args, h);
      });
  buildHelpers(b, shape, types);

  if (failed(verify(*module)))
    return failure();
  return module;
}
