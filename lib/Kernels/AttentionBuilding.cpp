//===- AttentionBuilding.cpp - Typed building blocks of attention ---------===//

#include "AttentionBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

AttentionBlockIds
sinkattn::kernels::buildBlockIds(ImplicitLocOpBuilder &b, bool heaviestLast,
                                 const rt::SinkAttentionShape &shape, Value c1,
                                 Value group, Value kvHeadCount) {
  // Windowed blocks all do about the same work, and neighbouring blocks of
  // one head share most of their keys: one head's blocks in order.
  if (shape.window > 0) {
    Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    return {block, head, batch, Value()};
  }
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  if (heaviestLast) {
    // Counted down, so that the SMs end on the light blocks.
    Value blockCount = gpu::GridDimOp::create(b, gpu::Dimension::y);
    Value lastBlock = arith::SubIOp::create(b, blockCount, c1);
    block = arith::SubIOp::create(b, lastBlock, block);
  }
  Value inGroup = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value kvAndBatch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
  if (!kvHeadCount)
    kvHeadCount = constantIndex(b, shape.kvHeads);
  Value batch = arith::DivUIOp::create(b, kvAndBatch, kvHeadCount);
  Value kvHead = arith::RemUIOp::create(b, kvAndBatch, kvHeadCount);
  Value groupBase = arith::MulIOp::create(b, kvHead, group);
  Value head = arith::AddIOp::create(b, groupBase, inGroup);
  return {block, head, batch, kvHead};
}

Value sinkattn::kernels::buildKeepKey(ImplicitLocOpBuilder &b, Value key,
                                      Value position, Value window) {
  Value causal =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sle, key, position);
  Value distance = arith::SubIOp::create(b, position, key);
  Value near =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, distance, window);
  return arith::AndIOp::create(b, causal, near);
}

Value sinkattn::kernels::buildBlockMaskDecision(
    ImplicitLocOpBuilder &b, Value firstKey, Value lastKeyOffset,
    Value firstPosition, function_ref<Value()> lastPosition, Value window,
    Value hasWindow) {
  Value lastKey = arith::AddIOp::create(b, firstKey, lastKeyOffset);
  Value crossesDiagonal = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                                lastKey, firstPosition);
  Value span = arith::SubIOp::create(b, lastPosition(), firstKey);
  Value outOfWindow =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sge, span, window);
  Value windowEdge = arith::AndIOp::create(b, hasWindow, outOfWindow);
  return arith::OrIOp::create(b, crossesDiagonal, windowEdge);
}

PingPong PingPong::build(ImplicitLocOpBuilder &b, Value wg,
                         int64_t warpgroups) {
  auto i32 = [&](int64_t value) -> Value {
    return arith::ConstantIntOp::create(b, b.getI32Type(), value);
  };
  PingPong turns;
  turns.threads = i32(256);
  Value wg32 = arith::IndexCastOp::create(b, b.getI32Type(), wg);
  Value turnBase = i32(3);
  Value one = i32(1);
  turns.myTurn = arith::AddIOp::create(b, turnBase, wg32);
  Value nextWg, lastWg;
  if (warpgroups == 2) {
    nextWg = arith::SubIOp::create(b, one, wg32);
    lastWg = one;
  } else {
    Value wgPlus1 = arith::AddIOp::create(b, wg32, one);
    Value wraps = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wgPlus1,
                                        i32(warpgroups));
    nextWg = arith::SelectOp::create(b, wraps, i32(0), wgPlus1);
    lastWg = i32(warpgroups - 1);
  }
  turns.nextTurn = arith::AddIOp::create(b, turnBase, nextWg);
  Value isLast =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg32, lastWg);
  buildIfThen(b, isLast, [&] { turns.passTurn(b); });
  return turns;
}

void PingPong::waitTurn(ImplicitLocOpBuilder &b) const {
  NVVM::BarrierOp::create(b, TypeRange(), myTurn, threads,
                          /*reductionOp=*/nullptr,
                          /*reductionPredicate=*/nullptr);
}

void PingPong::passTurn(ImplicitLocOpBuilder &b) const {
  NVVM::BarrierArriveOp::create(b, nextTurn, threads);
}

Value sinkattn::kernels::buildSinkLoad(ImplicitLocOpBuilder &b, Value sinks,
                                       Value head) {
  Value sink = memref::LoadOp::create(b, sinks, head);
  if (sink.getType().isF32())
    return sink;
  return arith::ExtFOp::create(b, b.getF32Type(), sink);
}

SequenceBounds sinkattn::kernels::buildSequenceBounds(
    ImplicitLocOpBuilder &b, Value batch, Value cuQ, Value cuK, Value c1,
    Value unitQ, Value unitK) {
  Value next = arith::AddIOp::create(b, batch, c1);
  Value qStart32 = memref::LoadOp::create(b, cuQ, batch);
  Value qEnd32 = memref::LoadOp::create(b, cuQ, next);
  Value kStart32 = memref::LoadOp::create(b, cuK, batch);
  Value kEnd32 = memref::LoadOp::create(b, cuK, next);
  auto toIndex = [&](Value v, Value unit) -> Value {
    Value offset = arith::IndexCastUIOp::create(b, b.getIndexType(), v);
    return unit ? arith::MulIOp::create(b, offset, unit) : offset;
  };
  SequenceBounds bounds;
  bounds.qStart = toIndex(qStart32, unitQ);
  Value qEnd = toIndex(qEnd32, unitQ);
  bounds.kStart = toIndex(kStart32, unitK);
  Value kEnd = toIndex(kEnd32, unitK);
  bounds.seqQ = arith::SubIOp::create(b, qEnd, bounds.qStart);
  bounds.seqKv = arith::SubIOp::create(b, kEnd, bounds.kStart);
  return bounds;
}

OnlineSoftmax::Step OnlineSoftmax::step(ImplicitLocOpBuilder &b, Value scores,
                                        Value max, Value sum) const {
  Type rowType = max.getType();
  Type sumType = sum.getType();
  Value blockMax =
      tile::ReduceOp::create(b, rowType, tile::ReduceKind::max, scores, 1);
  Value newMax = buildMap(
      b, rowType, {max, blockMax}, [&](ValueRange, ValueRange x) -> Value {
        Value scaled = arith::MulFOp::create(b, x[1], scaleLog2);
        if (!rescaleMargin)
          return arith::MaxNumFOp::create(b, x[0], scaled);
        Value limit = arith::AddFOp::create(b, x[0], rescaleMargin);
        Value grows = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                            scaled, limit);
        return arith::SelectOp::create(b, grows, scaled, x[0]);
      });
  // The offset subtracted before exp2: the new max, or 0 while the row has
  // seen nothing but -inf (avoids -inf - -inf).
  Value offset =
      buildMap(b, rowType, {newMax}, [&](ValueRange, ValueRange x) -> Value {
        Value isInf =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x[0], negInf);
        return arith::SelectOp::create(b, isInf, zero, x[0]);
      });
  Value p = buildMap(b, scores.getType(), {scores, offset},
                     [&](ValueRange, ValueRange x) -> Value {
                       Value negOffset = arith::NegFOp::create(b, x[1]);
                       Value t =
                           math::FmaOp::create(b, x[0], scaleLog2, negOffset);
                       return math::Exp2Op::create(b, t);
                     });
  Value blockSum =
      partialRowSum
          ? Value(tile::PartialReduceOp::create(b, sumType,
                                                tile::ReduceKind::sum, p))
          : Value(tile::ReduceOp::create(b, sumType, tile::ReduceKind::sum, p,
                                         1));
  Value rescale = buildMap(b, rowType, {max, offset},
                           [&](ValueRange, ValueRange x) -> Value {
                             Value d = arith::SubFOp::create(b, x[0], x[1]);
                             return math::Exp2Op::create(b, d);
                           });
  Value newSum = buildMap(b, sumType, {sum, rescale, blockSum},
                          [&](ValueRange, ValueRange x) -> Value {
                            return math::FmaOp::create(b, x[0], x[1], x[2]);
                          });
  return {newMax, newSum, p, rescale};
}
