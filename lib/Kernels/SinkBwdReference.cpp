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
// Compiled for run-time shapes (varlen only), every buffer's size is the
// one it is given and the attention's parameters are arguments, as for the
// forward's reference: one module then serves every problem of its dtype
// and head dim.
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
/// order with the same values). The scalars after the buffers (heads,
/// kvHeads, window and causal as i32, scale as f32) are null without
/// run-time shapes.
struct KernelArgs {
  Value q, k, v, sinks, dO, storedO, dq, dk, dv, dsinks, refO, lse, delta,
      terms, cuQ, cuK, heads, kvHeads, window, causal, scale;
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
  if (args.size() > 16) {
    a.heads = args[16];
    a.kvHeads = args[17];
    a.window = args[18];
    a.causal = args[19];
    a.scale = args[20];
  }
  return a;
}

/// What kernelConstants reads at run time: the rows and the offsets count
/// from the sizes of lse and cu_seqlens_q, then the scalar arguments.
RunTimeSizes runTimeSizes(ImplicitLocOpBuilder &b, const KernelArgs &a) {
  Value c0 = constantIndex(b, 0);
  auto index = [&](Value i32) -> Value {
    return arith::IndexCastUIOp::create(b, b.getIndexType(), i32);
  };
  Value zero32 = arith::ConstantIntOp::create(b, b.getI32Type(), 0);
  Value causal =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ne, a.causal, zero32);
  return RunTimeSizes{memref::DimOp::create(b, a.lse, c0),
                      memref::DimOp::create(b, a.cuQ, c0),
                      index(a.heads),
                      index(a.kvHeads),
                      index(a.window),
                      causal,
                      a.scale};
}

/// The key rows (kv heads x key tokens): k's size over D with run-time
/// shapes.
Value keyRowCount(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                  const KernelConstants &k, const KernelArgs &a) {
  if (!k.kvHeads)
    return constantIndex(b, shape.kvHeads * shape.tokensKv());
  Value kElements = memref::DimOp::create(b, a.k, k.c0);
  return arith::DivUIOp::create(b, kElements, k.dim);
}

/// Calls of the module's private functions (defined by buildHelpers).
Value call(ImplicitLocOpBuilder &b, StringRef callee, ValueRange operands) {
  return func::CallOp::create(b, callee, b.getF32Type(), operands).getResult(0);
}
/// scale * (qRow . k_j) for the key j of a kv head at kBase (the helper
/// takes the run-time scale where the module has one).
Value score(ImplicitLocOpBuilder &b, const KernelArgs &a, Value qRow,
            const QueryRow &r, Value j) {
  SmallVector<Value> operands = {qRow, a.k, r.kBase, r.kStride, j};
  if (a.scale)
    operands.push_back(a.scale);
  return call(b, "score", operands);
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

/// The private functions the kernels call: score, dotRow, dotAt and exp;
/// score takes the scale as its last argument where `runTimeScale`.
void buildHelpers(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                  const BufferTypes &types, bool runTimeScale) {
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
  SmallVector<Type> scoreArgs = {types.row, types.kv, index, index, index};
  if (runTimeScale)
    scoreArgs.push_back(f32);
  function("score", scoreArgs, [&](ValueRange args) -> Value {
    Value scale =
        runTimeScale ? args.back() : constantF32(b, float(shape.scale));
    Value dot = call(b, "dotRow", args.take_front(5));
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
    Value s = score(b, a, qRow, r, j);
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
        Value s = score(b, a, qRow, r, j);
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
    Value s = score(b, a, qRow, r, j);
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
  // cu_seqlens_kv[1..B] at or below t. With run-time shapes the token
  // count and the strides come from k's size and the heads arguments.
  Value tokens =
      k.kvHeads
          ? DivUIOp::create(b, keyRowCount(b, s, k, a), k.kvHeads).getResult()
          : constantIndex(b, s.tokensKv());
  Value token = RemUIOp::create(b, keyRow, tokens);
  r.hk = DivUIOp::create(b, keyRow, tokens);
  Value offsetCount =
      k.offsetCount ? k.offsetCount : constantIndex(b, s.batch + 1);
  Value batch = sequenceOfToken(b, a.cuK, token, offsetCount, k.c0, k.c1);
  SequenceBounds bounds = sequenceBounds(b, a.cuQ, a.cuK, batch, k.c1);
  r.seqQ = bounds.seqQ;
  r.skv = bounds.skv;
  r.j = arith::SubIOp::create(b, token, bounds.kStart);
  Value dim = constantIndex(b, s.headDim);
  Value kvPos = k.kvHeads ? MulIOp::create(b, k.kvHeads, dim).getResult()
                          : constantIndex(b, s.kvHeads * s.headDim);
  Value kt = MulIOp::create(b, token, kvPos);
  Value kh = MulIOp::create(b, r.hk, dim);
  r.kvAt = AddIOp::create(b, kt, kh);
  r.qHeadStride = constantIndex(b, s.headDim);
  r.qPosStride = k.kvHeads ? MulIOp::create(b, k.heads, dim).getResult()
                           : constantIndex(b, s.heads * s.headDim);
  r.qBatchBase = MulIOp::create(b, bounds.qStart, r.qPosStride);
  r.lseBatchBase = AddIOp::create(b, bounds.qStart, k.c0);
  r.lseHeadStride = k.tokensQ ? k.tokensQ : constantIndex(b, s.tokensQ());
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
  // Without the causal mask (and so without a window) every query row of
  // the sequence attends the key.
  if (k.causal) {
    iFirst = arith::SelectOp::create(b, k.causal, iFirst, k.c0);
    iEnd = arith::SelectOp::create(b, k.causal, iEnd, r.seqQ);
  }
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
/// TQ (varlen's [H, TQ]; with run-time shapes TQ is k.tokensQ).
void buildHeadSink(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                   const KernelConstants &k, const KernelArgs &a, Value h) {
  int64_t runRows = shape.varlen() ? shape.tokensQ() : shape.seqQ;
  Value batches = constantIndex(b, shape.varlen() ? 1 : shape.batch);
  Value run = k.tokensQ ? k.tokensQ : constantIndex(b, runRows);
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
  if (config.runTimeShapes && !shape.varlen())
    return fail() << "run-time shapes need --layout varlen";

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

  // With run-time shapes every buffer's size is the one it is given and the
  // attention's parameters follow the buffers, as for the forward's
  // reference: heads, kv_heads, window, causal (i32) and scale (f32).
  Type t = getElementType(&context, config.dtype);
  Type f32 = b.getF32Type();
  auto sized = [&](int64_t elements) {
    return config.runTimeShapes ? ShapedType::kDynamic : elements;
  };
  BufferTypes types;
  types.q = flatBuffer(sized(shape.qElements()), t);
  types.kv = flatBuffer(sized(shape.kvElements()), t);
  types.sinks = flatBuffer(sized(shape.heads),
                           getElementType(&context, config.sinkDtype));
  types.dq = flatBuffer(sized(shape.qElements()), f32);
  types.dkv = flatBuffer(sized(shape.kvElements()), f32);
  types.dsinks = flatBuffer(sized(shape.heads), f32);
  types.rows = flatBuffer(sized(shape.rows()), f32);
  types.row = flatBuffer(shape.headDim, f32);
  types.offsets = flatBuffer(sized(shape.batch + 1), b.getI32Type());
  SmallVector<Type> argTypes = {types.q,    types.kv,     types.kv, types.sinks,
                                types.q,    types.q,      types.dq, types.dkv,
                                types.dkv,  types.dsinks, types.dq, types.rows,
                                types.rows, types.rows};
  if (shape.varlen())
    argTypes.append(2, types.offsets);
  if (config.runTimeShapes)
    argTypes.append(
        {b.getI32Type(), b.getI32Type(), b.getI32Type(), b.getI32Type(), f32});

  // Each kernel: the shared constants, then the thread's item (its index
  // `first + tid` below `count`) built by `body`.
  using ItemCount =
      function_ref<Value(const KernelConstants &, const KernelArgs &)>;
  using KernelBody =
      function_ref<void(const KernelConstants &, const KernelArgs &, Value)>;
  auto kernel = [&](StringRef name, ItemCount count, KernelBody body) {
    auto func =
        gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}));
    func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&func.getBody().front());
    KernelArgs args = kernelArgs(func.getArguments());
    std::optional<RunTimeSizes> runTime;
    if (config.runTimeShapes)
      runTime = runTimeSizes(b, args);
    KernelConstants k = kernelConstants(b, shape, /*withLog2e=*/false, runTime);
    Value items = count(k, args);
    Value item = arith::AddIOp::create(b, k.first, k.tid);
    Value inside =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, item, items);
    buildIfThen(b, inside, [&] { body(k, args, item); });
    gpu::ReturnOp::create(b);
  };
  kernel(
      rt::kSinkBwdReferenceRowsEntry,
      [](const KernelConstants &k, const KernelArgs &) { return k.rows; },
      [&](const KernelConstants &k, const KernelArgs &args, Value row) {
        buildQueryRow(b, shape, types, k, args, row);
      });
  kernel(
      rt::kSinkBwdReferenceKeysEntry,
      [&](const KernelConstants &k, const KernelArgs &args) {
        return keyRowCount(b, shape, k, args);
      },
      [&](const KernelConstants &k, const KernelArgs &args, Value keyRow) {
        buildKeyRow(b, shape, types, k, args, keyRow);
      });
  kernel(
      rt::kSinkBwdReferenceSinksEntry,
      [](const KernelConstants &k, const KernelArgs &) { return k.heads; },
      [&](const KernelConstants &k, const KernelArgs &args, Value h) {
        buildHeadSink(b, shape, k, args, h);
      });
  buildHelpers(b, shape, types, config.runTimeShapes);

  if (failed(verify(*module)))
    return failure();
  return module;
}

FailureOr<std::string> kernels::compileSinkBwdReferencePTX(
    MLIRContext &context, const KernelConfig &config, PTXTargetOptions target) {
  return compileReferencePTX(context, buildSinkBwdReference(context, config),
                             config, target, "sink-bwd");
}
