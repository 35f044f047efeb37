//===- SinkBwdDqKernel.cpp - The backward's dQ kernel ---------------------===//
//
// sink_bwd_dq (`--dq separate`, the default): per block of 64 query rows
// (64·N with --dq-warpgroups N: N consumer warpgroups sharing the K/V
// tiles, a TMA producer) a loop over the key blocks its rows see:
// S = Q Kᵀ, P, dP = dO Vᵀ (issued with S), dS = P ⊙ (dP - Delta),
// dQ += dS K · scale, accumulated in fp32 registers and converted once at
// the end. It also sums the row's P ⊙ dP, which is dO · O for the exact O,
// and writes the row's sink term -exp(sink - LSE) · Σ_j P_j dP_j: dsinks
// then do not carry the stored O's rounding, which cancellation in the sum
// over rows can make a large part of a small dsink. With one warpgroup the
// last of a head's blocks sums the head's terms into dsink_h itself.
//
//===----------------------------------------------------------------------===//

#include "SinkBwdLayout.h"

#include "AttentionBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Builds sink_bwd_dq.
class SinkBwdDqBuilder {
public:
  SinkBwdDqBuilder(ImplicitLocOpBuilder &b, const SinkBwdProblem &problem,
                   const SinkBwdLayout &layout)
      : b(b), problem(problem), form(problem.form), layout(layout) {}

  gpu::GPUFuncOp build();

private:
  Type f32() { return b.getF32Type(); }
  Type rowType() { return tile::FragmentType::get({kSinkBwdBlock}, f32()); }
  Type rowPartsType() {
    return tile::FragmentType::get({kSinkBwdBlock, 8}, f32());
  }
  Type scoresType() {
    return tile::FragmentType::get({kSinkBwdBlock, kSinkBwdBlock}, f32());
  }
  Type probabilitiesType() {
    return tile::FragmentType::get({kSinkBwdBlock, kSinkBwdBlock},
                                   problem.element);
  }
  Type accType(Type element) {
    return tile::FragmentType::get({kSinkBwdBlock, layout.headDim}, element);
  }

  void buildRows();
  Value buildRowValues(Value buffer, bool timesLog2e);
  void buildKeyBlockRange();
  scf::ForOp buildKeyLoop();
  Value buildProbabilities(Value scores);
  Value buildPdpUpdate(Value sum, Value p, Value dp);
  void buildSinkTerms(scf::ForOp loop);
  void buildSinkSum();

  ImplicitLocOpBuilder &b;
  const SinkBwdProblem &problem;
  const SinkBwdForm &form;
  const SinkBwdLayout &layout;
  SinkBwdConstants c;
  SinkBwdTrailingArgs trailing;
  SinkBwdSequence sequence;
  Value Q, K, V, dO, LSE, Delta, sinks, dQ, terms, dsinks, sinkCounts;
  /// The block, its first row, the warpgroup's first row (m0), its token.
  Value block, blockRow, blockRows, wg, wgRow, m0, qRow, blockQRow;
  Value sQ, sdO, sK, sV, sQw, sdOw;
  std::optional<PingPong> pingPong;
  Value lse2, deltaRow, lo, hiBlocks, accZero, sZero, pdpInit;
  Value n0, distanceBase;
};

gpu::GPUFuncOp SinkBwdDqBuilder::build() {
  const rt::SinkAttentionShape &shape = problem.shape;
  const int64_t heads =
      layout.runTimeShapes ? ShapedType::kDynamic : shape.heads;
  SmallVector<Type> argTypes = {layout.q,
                                layout.kv,
                                layout.kv,
                                layout.q,
                                layout.lse,
                                layout.lse,
                                MemRefType::get({heads}, problem.sinkElement),
                                layout.q,
                                layout.lse};
  if (form.sinksInDq)
    argTypes.append({MemRefType::get({heads}, f32()),
                     MemRefType::get({heads}, b.getI32Type())});
  layout.appendSequenceArgs(argTypes);
  gpu::GPUFuncOp func = createBackwardKernel(b, "sink_bwd_dq", argTypes);
  if (form.dqShared())
    setSharedTileBounds(func, form.dqWarpgroups);
  ArrayRef<BlockArgument> args = func.getArguments();
  Q = args[0], K = args[1], V = args[2], dO = args[3], LSE = args[4],
  Delta = args[5], sinks = args[6], dQ = args[7], terms = args[8];
  size_t next = 9;
  if (form.sinksInDq)
    dsinks = args[next++], sinkCounts = args[next++];
  trailing = layout.trailingArgs(args, next);

  c = SinkBwdConstants::build(b, problem, trailing, Q, K,
                              /*groupFromGrid=*/true);
  Value kvHeadCount;
  if (layout.runTimeShapes) {
    Value kvColumns = memref::DimOp::create(b, K, c.c1);
    Value headDim = constantIndex(b, layout.headDim);
    kvHeadCount = arith::DivUIOp::create(b, kvColumns, headDim);
  }
  AttentionBlockIds ids = buildBlockIds(b, /*heaviestLast=*/true, shape, c.c1,
                                        c.group, kvHeadCount);
  block = ids.block;
  sequence = layout.buildSequence(b, c, ids.batch, ids.head, trailing.cuQ,
                                  trailing.cuK, ids.kvHead);
  buildRows();

  const int64_t d = layout.headDim;
  auto qTileType =
      getSharedMemRefType({form.dqBlockRows(), d}, problem.element);
  auto kvTileType = getSharedMemRefType({kSinkBwdBlock, d}, problem.element);
  sQ = allocShared(b, qTileType);
  sdO = allocShared(b, qTileType);
  sK = allocShared(b, kvTileType);
  sV = allocShared(b, kvTileType);
  buildLoadTile(b, Q, layout.qTile(sequence, blockQRow, c.c0), sQ);
  buildLoadTile(b, dO, layout.qTile(sequence, blockQRow, c.c0), sdO);
  sQw = sQ, sdOw = sdO;
  if (form.dqShared()) {
    // Each warpgroup reads its 64 rows of the shared Q and dO tiles.
    sQw = buildSubView(b, sQ, {wgRow, b.getIndexAttr(0)}, {kSinkBwdBlock, d});
    sdOw = buildSubView(b, sdO, {wgRow, b.getIndexAttr(0)}, {kSinkBwdBlock, d});
    // The warpgroups take turns for their first GEMMs of an iteration, so
    // that they do not run their maps and GEMMs in step.
    pingPong = PingPong::build(b, wg, form.dqWarpgroups);
  }
  lse2 = buildRowValues(LSE, /*timesLog2e=*/true);
  deltaRow = buildRowValues(Delta, /*timesLog2e=*/false);
  buildKeyBlockRange();
  accZero = tile::FillOp::create(b, accType(f32()), c.zero);
  sZero = tile::FillOp::create(b, scoresType(), c.zero);
  // P ⊙ dP summed over the key blocks in registers (elementwise, one FMA
  // per element, or with shared tiles as eight partial columns per row:
  // 4 registers a thread instead of 32), reduced to rows once after the
  // loop: a row reduction per block (shuffles) was slower.
  pdpInit = form.dqShared()
                ? Value(tile::FillOp::create(b, rowPartsType(), c.zero))
                : sZero;
  scf::ForOp loop = buildKeyLoop();
  buildSinkTerms(loop);
  if (form.sinksInDq)
    buildSinkSum();
  Value dq16 = buildMap(b, accType(problem.element), {loop.getResult(0)},
                        [&](ValueRange, ValueRange x) -> Value {
                          Value y = arith::MulFOp::create(b, x[0], c.scale);
                          return arith::TruncFOp::create(b, problem.element, y);
                        });
  // One warpgroup stores dQ through its Q tile, which no GEMM reads after
  // the loop, and TMA; shared tiles take the register stores (a fragment's
  // store into a swizzled tile must cover it).
  if (form.dqShared())
    layout.storeQTile(b, sequence, dq16, dQ, qRow, m0, c.c0);
  else
    layout.storeQTileThroughShared(b, sequence, dq16, sQ, dQ, qRow, m0, c.c0);
  finishBackwardKernel(b, func);
  return func;
}

/// The block's rows: one warpgroup's 64 from m0, or a block of
/// dqBlockRows() from blockRow shared by its warpgroups, warpgroup w's from
/// m0 = blockRow + 64 w.
void SinkBwdDqBuilder::buildRows() {
  if (!form.dqShared()) {
    m0 = arith::MulIOp::create(b, block, c.c64);
    blockRow = m0;
    blockRows = c.c64;
    qRow = arith::AddIOp::create(b, sequence.qStart, m0);
    blockQRow = qRow;
    return;
  }
  blockRows = constantIndex(b, form.dqBlockRows());
  blockRow = arith::MulIOp::create(b, block, blockRows);
  wg = buildWarpgroupIndex(b);
  wgRow = arith::MulIOp::create(b, wg, c.c64);
  m0 = arith::AddIOp::create(b, blockRow, wgRow);
  blockQRow = arith::AddIOp::create(b, sequence.qStart, blockRow);
  qRow = arith::AddIOp::create(b, sequence.qStart, m0);
}

/// The warpgroup's rows of an LSE-shaped buffer (LSE·log2(e) with
/// `timesLog2e`), rows past the end reading the last row.
Value SinkBwdDqBuilder::buildRowValues(Value buffer, bool timesLog2e) {
  return buildMap(b, rowType(), {}, [&](ValueRange idx, ValueRange) -> Value {
    Value row = arith::AddIOp::create(b, m0, idx[0]);
    Value token = arith::AddIOp::create(b, sequence.qStart, row);
    Value clamped = arith::MinUIOp::create(b, token, sequence.lastRow);
    Value value =
        memref::LoadOp::create(b, buffer, layout.rowAt(sequence, clamped));
    return timesLog2e ? Value(arith::MulFOp::create(b, value, c.log2e)) : value;
  });
}

/// Key blocks the block's rows see, [lo, hiBlocks): up to the last row's
/// position (causal), from the first row's window start; none for blocks
/// past the end of their sequence (varlen).
void SinkBwdDqBuilder::buildKeyBlockRange() {
  Value firstPosition = arith::AddIOp::create(b, blockRow, sequence.past);
  Value lastKey = arith::AddIOp::create(b, firstPosition, blockRows);
  Value hiKey = arith::MinSIOp::create(b, lastKey, sequence.seqKv);
  Value hi = arith::MaxSIOp::create(b, hiKey, c.c0);
  Value hiCausal = arith::CeilDivUIOp::create(b, hi, c.c64);
  Value firstKey = arith::SubIOp::create(b, firstPosition, c.window);
  Value firstKey1 = arith::AddIOp::create(b, firstKey, c.c1);
  Value firstKeyPosition = arith::MaxSIOp::create(b, firstKey1, c.c0);
  Value windowLo = arith::DivUIOp::create(b, firstKeyPosition, c.c64);
  lo = arith::SelectOp::create(b, c.hasWindow, windowLo, c.c0);
  Value live = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, blockRow,
                                     sequence.seqQ);
  Value hiLive = arith::SelectOp::create(b, live, hiCausal, lo);
  hiBlocks = arith::MaxSIOp::create(b, hiLive, lo);
}

scf::ForOp SinkBwdDqBuilder::buildKeyLoop() {
  return buildPipelinedLoop(
      b, lo, hiBlocks, c.c1, problem.config.stages, {accZero, pdpInit},
      [&](Value kb, ValueRange iter) -> SmallVector<Value> {
        Value acc = iter[0], pdpSum = iter[1];
        n0 = arith::MulIOp::create(b, kb, c.c64);
        Value kRow = arith::AddIOp::create(b, sequence.kStart, n0);
        buildLoadTile(b, K, layout.kvTile(sequence, kRow, c.c0), sK);
        buildLoadTile(b, V, layout.kvTile(sequence, kRow, c.c0), sV);
        if (pingPong)
          pingPong->waitTurn(b);
        // S and dP issued together: dP's wgmma runs under P's
        // exponentials.
        Value sAsync = tile::GemmOp::create(b, sQw, sK, sZero,
                                            /*transpose_a=*/false,
                                            /*transpose_b=*/true,
                                            /*async=*/true);
        Value dpAsync = tile::GemmOp::create(b, sdOw, sV, sZero,
                                             /*transpose_a=*/false,
                                             /*transpose_b=*/true,
                                             /*async=*/true);
        if (pingPong)
          pingPong->passTurn(b);
        Value s = buildGemmWait(b, sAsync, 1);
        Value p = buildProbabilities(s);
        Value dp = buildGemmWait(b, dpAsync, 0);
        Value ds = buildMap(b, scoresType(), {p, dp, deltaRow},
                            [&](ValueRange, ValueRange x) -> Value {
                              Value t = arith::SubFOp::create(b, x[1], x[2]);
                              return arith::MulFOp::create(b, x[0], t);
                            });
        Value pdpNew = buildPdpUpdate(pdpSum, p, dp);
        Value ds16 = tile::CastOp::create(b, probabilitiesType(), ds);
        Value accNew = tile::GemmOp::create(b, ds16, sK, acc);
        return {accNew, pdpNew};
      });
}

/// P = exp2(S·scale·log2(e) - LSE·log2(e)), with the per-element causal/
/// window mask only in blocks on the diagonal or at the window's edge
/// (buildBlockMaskDecision): every other block keeps all its elements, and
/// its map skips the index math, a large part of the loop's instructions.
Value SinkBwdDqBuilder::buildProbabilities(Value scores) {
  Value rowsFirstPosition = arith::AddIOp::create(b, m0, sequence.past);
  Value needsMask = buildBlockMaskDecision(
      b, n0, c.c63, rowsFirstPosition,
      [&]() -> Value {
        return arith::AddIOp::create(b, rowsFirstPosition, c.c63);
      },
      c.window, c.hasWindow);
  distanceBase = arith::SubIOp::create(b, rowsFirstPosition, n0);
  return buildBlockMaskedMap(
      b, scoresType(), needsMask, {scores, lse2}, c.zero,
      [&](ValueRange idx, ValueRange) -> Value {
        Value offset = arith::SubIOp::create(b, idx[0], idx[1]);
        return buildKeepByDistance(b, distanceBase, offset, c.window32);
      },
      [&](ValueRange, ValueRange x) -> Value {
        Value negLse = arith::NegFOp::create(b, x[1]);
        Value y = math::FmaOp::create(b, x[0], c.scaleLog2, negLse);
        return math::Exp2Op::create(b, y);
      });
}

/// The running Σ_j P ⊙ dP: elementwise (one FMA per element), or with
/// shared tiles as partial columns (tile.partial_reduce).
Value SinkBwdDqBuilder::buildPdpUpdate(Value sum, Value p, Value dp) {
  if (!form.dqShared())
    return buildMap(b, scoresType(), {sum, p, dp},
                    [&](ValueRange, ValueRange x) -> Value {
                      return math::FmaOp::create(b, x[1], x[2], x[0]);
                    });
  Value block = buildMap(b, scoresType(), {p, dp},
                         [&](ValueRange, ValueRange x) -> Value {
                           return arith::MulFOp::create(b, x[0], x[1]);
                         });
  Value part = tile::PartialReduceOp::create(b, rowPartsType(),
                                             tile::ReduceKind::sum, block);
  return buildMap(b, rowPartsType(), {sum, part},
                  [&](ValueRange, ValueRange x) -> Value {
                    return arith::AddFOp::create(b, x[0], x[1]);
                  });
}

/// The row's sink term: the sink's probability exp(sink - LSE) times
/// Σ_j P_j dP_j; 0 for a row with neither keys nor a finite sink
/// (LSE = -inf).
void SinkBwdDqBuilder::buildSinkTerms(scf::ForOp loop) {
  Value pdpRows = tile::ReduceOp::create(b, rowType(), tile::ReduceKind::sum,
                                         loop.getResult(1), 1);
  Value sink = buildSinkLoad(b, sinks, sequence.head);
  Value term = buildMap(
      b, rowType(), {pdpRows, lse2}, [&](ValueRange, ValueRange x) -> Value {
        Value noKey =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x[1], c.negInf);
        Value negLse = arith::NegFOp::create(b, x[1]);
        Value logit = math::FmaOp::create(b, sink, c.log2e, negLse);
        Value weight = math::Exp2Op::create(b, logit);
        Value t = arith::MulFOp::create(b, weight, x[0]);
        Value negTerm = arith::NegFOp::create(b, t);
        return arith::SelectOp::create(b, noKey, c.zero, negTerm);
      });
  layout.storeRows(b, sequence, term, terms, m0);
}

/// The one-warpgroup dQ kernel sums dsinks itself: the last of a head's
/// blocks to store its rows' sink terms (a counter per head, which the
/// preprocess kernel zeroes) adds the head's terms with its first warp, in
/// the dsinks kernel's order (buildHeadSinkSum: bit-identical dsinks). The
/// dQ kernel ends before the dK/dV kernel beside it, so the sum leaves the
/// backward's critical path, and one launch goes.
void SinkBwdDqBuilder::buildSinkSum() {
  const rt::SinkAttentionShape &shape = problem.shape;
  Value lastBlock;
  if (layout.runTimeShapes) {
    // A head's blocks: the grid's row blocks (x with a window, else y) of
    // every sequence.
    Value rowBlocks = gpu::GridDimOp::create(
        b, layout.windowed ? gpu::Dimension::x : gpu::Dimension::y);
    Value offsets = memref::DimOp::create(b, trailing.cuQ, c.c0);
    Value sequences = arith::SubIOp::create(b, offsets, c.c1);
    Value blocks = arith::MulIOp::create(b, rowBlocks, sequences);
    Value last = arith::SubIOp::create(b, blocks, c.c1);
    lastBlock = arith::IndexCastUIOp::create(b, b.getI32Type(), last);
  } else {
    const int64_t blocksPerHead =
        shape.batch *
        ((shape.seqQ + form.dqBlockRows() - 1) / form.dqBlockRows());
    lastBlock =
        arith::ConstantIntOp::create(b, b.getI32Type(), blocksPerHead - 1);
  }
  LastArrival arrival =
      buildLastArrival(b, sinkCounts, sequence.head, lastBlock, c.c0);
  Value warpSize = constantIndex(b, 32);
  Value inFirstWarp = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            arrival.thread, warpSize);
  Value sumHere = arith::AndIOp::create(b, arrival.isLast, inFirstWarp);
  buildIfThen(b, sumHere, [&] {
    // Acquire: the other blocks' terms.
    NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
    Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    ReassociationIndices all(layout.lse.getRank());
    for (int64_t dim = 0; dim < layout.lse.getRank(); ++dim)
      all[dim] = dim;
    Value flat = memref::CollapseShapeOp::create(
        b, terms, ArrayRef<ReassociationIndices>{all});
    // Run-time shapes: the terms of the tokens the sequences cover, from
    // the first offset to the last (a buffer may have tokens past them,
    // which no kernel writes).
    Value run, rowsBegin, rowsEnd;
    if (layout.runTimeShapes) {
      run = memref::DimOp::create(b, terms, c.c1);
      Value offsets = memref::DimOp::create(b, trailing.cuQ, c.c0);
      Value lastOffset = arith::SubIOp::create(b, offsets, c.c1);
      auto tokenAt = [&](Value offset) -> Value {
        Value entry = memref::LoadOp::create(b, trailing.cuQ, offset);
        Value index = arith::IndexCastUIOp::create(b, b.getIndexType(), entry);
        return arith::MulIOp::create(b, index, c.unitQ);
      };
      rowsBegin = tokenAt(c.c0);
      rowsEnd = tokenAt(lastOffset);
    }
    buildHeadSinkSum(b, layout, flat, dsinks, sequence.head, lane, c.c0, c.c1,
                     c.zero, run, rowsBegin, rowsEnd);
  });
}
} // namespace

gpu::GPUFuncOp sinkattn::kernels::buildSinkBwdDq(ImplicitLocOpBuilder &b,
                                                 const SinkBwdProblem &problem,
                                                 const SinkBwdLayout &layout) {
  return SinkBwdDqBuilder(b, problem, layout).build();
}
