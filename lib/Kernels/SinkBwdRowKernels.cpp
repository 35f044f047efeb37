//===- SinkBwdRowKernels.cpp - The backward's row kernels -----------------===//
//
// The attention-sink backward's kernels that work on rows rather than
// tiles: sink_bwd_preprocess (Delta and each query block's record),
// sink_bwd_dq_convert (--dq atomic: the fp32 dQ rounded, and dsinks) and
// sink_bwd_sinks (dsinks from the rows' sink terms), and the pieces they
// share with the dQ kernel (the head's dsink sum and its butterfly).
//
//===----------------------------------------------------------------------===//

#include "SinkBwdLayout.h"

#include "AttentionBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Partial sums per lane of the head's dsink sum: rows l + 32u + 256m,
/// m = 0, 1, ..., go into sum u, so that many loads are in flight (one
/// chain of dependent loads was far slower; docs/PERF.md).
constexpr int64_t kSinkPartialSums = 8;
static_assert(kSinkPartialSums >= 2, "the partial sums are added in order");

/// The sum of `value` over the 32 lanes of a warp in a fixed butterfly
/// (xor 16, 8, ..., 1), then + 0, which turns a sum of -0 into +0.
Value buildWarpSum(ImplicitLocOpBuilder &b, Value value, Value width,
                   Value zero) {
  for (int32_t offset : {16, 8, 4, 2, 1}) {
    Value offsetValue = arith::ConstantIntOp::create(b, b.getI32Type(), offset);
    auto shuffle = gpu::ShuffleOp::create(b, value, offsetValue, width,
                                          gpu::ShuffleMode::XOR);
    value = arith::AddFOp::create(b, value, shuffle.getShuffleResult());
  }
  return arith::AddFOp::create(b, value, zero);
}
} // namespace

void sinkattn::kernels::buildHeadSinkSum(ImplicitLocOpBuilder &b,
                                         const SinkBwdLayout &layout,
                                         Value terms, Value dsinks, Value head,
                                         Value lane, Value c0, Value c1,
                                         Value zero, Value run, Value rowsBegin,
                                         Value rowsEnd) {
  Value width = arith::ConstantIntOp::create(b, b.getI32Type(), 32);
  if (!run)
    run = constantIndex(b, layout.run);
  Value end = rowsEnd ? rowsEnd : run;
  Value start =
      rowsBegin ? Value(arith::AddIOp::create(b, rowsBegin, lane)) : lane;
  Value runs = constantIndex(b, layout.runBatches);
  Value batchRows = constantIndex(b, layout.batchRows);
  Value headBase = arith::MulIOp::create(b, head, run);
  Value stride = constantIndex(b, 32 * kSinkPartialSums);
  SmallVector<Value> zeros(kSinkPartialSums, zero);
  // Over the runs, lane `lane`'s rows k + 32u of each into sum u; rows past
  // the run read row k and add 0.
  scf::ForOp runLoop = buildForLoop(
      b, c0, runs, c1, zeros,
      [&](Value r, ValueRange parts) -> SmallVector<Value> {
        Value runBase = arith::MulIOp::create(b, r, batchRows);
        Value base = arith::AddIOp::create(b, runBase, headBase);
        scf::ForOp rowLoop = buildForLoop(
            b, start, end, stride, parts,
            [&](Value k, ValueRange sums) -> SmallVector<Value> {
              SmallVector<Value> inside, values;
              for (int64_t u = 0; u < kSinkPartialSums; ++u) {
                Value offset = constantIndex(b, 32 * u);
                Value row = arith::AddIOp::create(b, k, offset);
                inside.push_back(arith::CmpIOp::create(
                    b, arith::CmpIPredicate::ult, row, end));
                Value clamped =
                    arith::SelectOp::create(b, inside.back(), row, k);
                Value at = arith::AddIOp::create(b, base, clamped);
                values.push_back(memref::LoadOp::create(b, terms, at));
              }
              SmallVector<Value> next;
              for (int64_t u = 0; u < kSinkPartialSums; ++u) {
                Value term =
                    arith::SelectOp::create(b, inside[u], values[u], zero);
                next.push_back(arith::AddFOp::create(b, sums[u], term));
              }
              return next;
            });
        return rowLoop.getResults();
      });
  Value sum = runLoop.getResult(0);
  for (int64_t u = 1; u < kSinkPartialSums; ++u)
    sum = arith::AddFOp::create(b, sum, runLoop.getResult(u));
  Value total = buildWarpSum(b, sum, width, zero);
  Value firstLane =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0);
  buildIfThen(b, firstLane,
              [&] { memref::StoreOp::create(b, total, dsinks, head); });
}

gpu::GPUFuncOp
sinkattn::kernels::buildSinkBwdSinks(ImplicitLocOpBuilder &b,
                                     const SinkBwdProblem &problem,
                                     const SinkBwdLayout &layout) {
  assert(!layout.runTimeShapes && "the shaped form sums dsinks in its dQ "
                                  "kernel");
  Type dsinksType = MemRefType::get({problem.shape.heads}, b.getF32Type());
  gpu::GPUFuncOp func =
      createBackwardKernel(b, "sink_bwd_sinks", {layout.terms, dsinksType});
  Value terms = func.getArgument(0), dsinks = func.getArgument(1);
  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value zero = constantF32(b, 0.0f);
  // One warp per head.
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  buildHeadSinkSum(b, layout, terms, dsinks, head, lane, c0, c1, zero);
  finishBackwardKernel(b, func);
  return func;
}

namespace {
/// Rows of a row-group step that each lane group loads before the first
/// one's arithmetic: one dependent latency per step instead of one per
/// row.
constexpr int64_t kRowGroupLoads = 4;

/// The start of the kernels with one block per 64 query rows of a head
/// (grid x: block, y: head, z: sequence): the constants, the block's
/// sequence and its first row.
struct QueryBlock {
  SinkBwdConstants constants;
  Value block;
  SinkBwdSequence sequence;
  /// The block's first row in its sequence.
  Value firstRow;

  /// `qSide`: a q-shaped buffer of the kernel (run-time shapes read the
  /// token count from it).
  static QueryBlock build(ImplicitLocOpBuilder &b,
                          const SinkBwdProblem &problem,
                          const SinkBwdLayout &layout,
                          const SinkBwdTrailingArgs &trailing, Value qSide) {
    QueryBlock q;
    q.constants = SinkBwdConstants::build(b, problem, trailing, qSide);
    q.block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    Value batch = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    q.sequence = layout.buildSequence(b, q.constants, batch, head, trailing.cuQ,
                                      trailing.cuK);
    q.firstRow = arith::MulIOp::create(b, q.block, q.constants.c64);
    return q;
  }
};

/// The row groups of the preprocess and dQ-convert kernels (128 threads, a
/// block of 64 query rows): warp w takes rows 16w .. 16w + 15, a row is a
/// group of D / 8 lanes (rowOfLane: the lane's row within a load of
/// 32 / (D / 8) rows), each lane 8 columns from `column` (`headColumn` in
/// a [.., H * D] row), so a warp's load or store covers whole rows.
struct RowGroups {
  Value c16, c32, thread, lane, rowOfLane, firstLane, column, headColumn,
      warpRow;
  int64_t rowLanes;

  static RowGroups build(ImplicitLocOpBuilder &b, const QueryBlock &block,
                         int64_t headDim) {
    RowGroups g;
    g.rowLanes = headDim / 8;
    g.c16 = constantIndex(b, 16);
    g.c32 = constantIndex(b, 32);
    g.thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value warp = arith::DivUIOp::create(b, g.thread, g.c32);
    g.lane = arith::RemUIOp::create(b, g.thread, g.c32);
    Value rowLanes = constantIndex(b, g.rowLanes);
    g.rowOfLane = arith::DivUIOp::create(b, g.lane, rowLanes);
    Value chunk = arith::RemUIOp::create(b, g.lane, rowLanes);
    g.firstLane = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, chunk,
                                        block.constants.c0);
    Value c8 = constantIndex(b, 8);
    g.column = arith::MulIOp::create(b, chunk, c8);
    g.headColumn =
        arith::AddIOp::create(b, block.sequence.headColumn, g.column);
    g.warpRow = arith::MulIOp::create(b, warp, g.c16);
    return g;
  }

  /// Rows per step of the row loop: kRowGroupLoads loads of 32 / (D / 8)
  /// rows each.
  int64_t rowsPerStep() const { return 32 / rowLanes * kRowGroupLoads; }

  struct Row {
    /// The row in the block, in the sequence, and the token read (clamped
    /// to the last row: rows past the end read it and are masked or never
    /// stored).
    Value inBlock, inSequence, token;
  };
  /// The row of load `load` of the step at `step`.
  Row row(ImplicitLocOpBuilder &b, const QueryBlock &block, Value step,
          int64_t load) const {
    Value rowOffset = constantIndex(b, load * (32 / rowLanes));
    Value stepRow = arith::AddIOp::create(b, step, rowOffset);
    Value laneRow = arith::AddIOp::create(b, stepRow, rowOfLane);
    Row r;
    r.inBlock = arith::AddIOp::create(b, warpRow, laneRow);
    r.inSequence = arith::AddIOp::create(b, block.firstRow, r.inBlock);
    Value token = arith::AddIOp::create(b, block.sequence.qStart, r.inSequence);
    r.token = arith::MinUIOp::create(b, token, block.sequence.lastRow);
    return r;
  }

  /// The row loop: `body(step)` handles rows step .. step + rowsPerStep()
  /// of each warp's 16 (`stepValue`: rowsPerStep() as an index).
  void buildRowLoop(ImplicitLocOpBuilder &b, const QueryBlock &block,
                    Value stepValue,
                    function_ref<void(Value step)> body) const {
    buildForLoop(b, block.constants.c0, c16, stepValue, body);
  }
};

/// The preprocess kernel's rows: for each of a step's rows its loads of O,
/// dO and LSE first, then per row the dot product, the butterfly over its
/// lanes and the group's first lane's record and Delta stores. With --dq
/// atomic the row's fp32 dQ, which the dK/dV kernel adds to, is zeroed by
/// the same lanes at the same (clamped) row and columns.
void buildPreprocessRows(ImplicitLocOpBuilder &b, const SinkBwdLayout &layout,
                         const QueryBlock &block, const RowGroups &groups,
                         Value step, Value O, Value dO, Value LSE, Value Delta,
                         Value Stats, Value dQacc, Value dqZeros, Value width) {
  const SinkBwdConstants &c = block.constants;
  const SinkBwdSequence &sequence = block.sequence;
  auto vectorType = VectorType::get({8}, layout.q.getElementType());
  auto vectorF32 = VectorType::get({8}, b.getF32Type());
  struct Loaded {
    RowGroups::Row row;
    SmallVector<Value> at;
    Value o, dO, lse;
  };
  SmallVector<Loaded> rows;
  for (int64_t u = 0; u < kRowGroupLoads; ++u) {
    Loaded row;
    row.row = groups.row(b, block, step, u);
    row.at = layout.elementAt(sequence, row.row.token, groups.column,
                              groups.headColumn);
    row.o = vector::LoadOp::create(b, vectorType, O, row.at,
                                   /*nontemporal=*/false, llvm::Align(16));
    row.dO = vector::LoadOp::create(b, vectorType, dO, row.at,
                                    /*nontemporal=*/false, llvm::Align(16));
    row.lse =
        memref::LoadOp::create(b, LSE, layout.rowAt(sequence, row.row.token));
    rows.push_back(row);
  }
  for (const Loaded &row : rows) {
    if (dQacc)
      vector::StoreOp::create(b, dqZeros, dQacc, row.at,
                              /*nontemporal=*/false, llvm::Align(16));
    Value o = arith::ExtFOp::create(b, vectorF32, row.o);
    Value dOf = arith::ExtFOp::create(b, vectorF32, row.dO);
    Value product = arith::MulFOp::create(b, o, dOf);
    Value sum =
        vector::ReductionOp::create(b, vector::CombiningKind::ADD, product);
    for (int64_t offset = groups.rowLanes / 2; offset >= 1; offset /= 2) {
      Value offsetValue =
          arith::ConstantIntOp::create(b, b.getI32Type(), offset);
      auto shuffle = gpu::ShuffleOp::create(b, sum, offsetValue, width,
                                            gpu::ShuffleMode::XOR);
      sum = arith::AddFOp::create(b, sum, shuffle.getShuffleResult());
    }
    buildIfThen(b, groups.firstLane, [&] {
      Value lse2 = arith::MulFOp::create(b, row.lse, c.log2e);
      Value negLse2 = arith::NegFOp::create(b, lse2);
      memref::StoreOp::create(b, negLse2, Stats,
                              ValueRange{sequence.batch, sequence.head,
                                         block.block, c.c0, row.row.inBlock});
      memref::StoreOp::create(b, sum, Stats,
                              ValueRange{sequence.batch, sequence.head,
                                         block.block, c.c1, row.row.inBlock});
      Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           row.row.inSequence, sequence.seqQ);
      buildIfThen(b, inside, [&] {
        memref::StoreOp::create(b, sum, Delta,
                                layout.rowAt(sequence, row.row.token));
      });
    });
  }
}

/// `--dq atomic`, preprocess: each row's sink weight exp(sink - LSE) (0 for
/// a row with neither keys nor a finite sink), which the dK/dV kernel's
/// sink terms need per column, as the third row of the block's record
/// (beside -LSE·log2(e) and Delta, loaded with them). (Read per element
/// from global memory instead, the weights' loads held registers and the
/// two-warpgroup dK/dV kernel at D 128 spilled.)
void buildSinkWeights(ImplicitLocOpBuilder &b, const SinkBwdLayout &layout,
                      const QueryBlock &block, Value sinks, Value LSE,
                      Value Stats) {
  const SinkBwdConstants &c = block.constants;
  const SinkBwdSequence &sequence = block.sequence;
  Value sink = buildSinkLoad(b, sinks, sequence.head);
  Type rowType = tile::FragmentType::get({kSinkBwdBlock}, b.getF32Type());
  Value weights =
      buildMap(b, rowType, {}, [&](ValueRange idx, ValueRange) -> Value {
        Value row = arith::AddIOp::create(b, block.firstRow, idx[0]);
        Value token = arith::AddIOp::create(b, sequence.qStart, row);
        Value clamped = arith::MinUIOp::create(b, token, sequence.lastRow);
        Value lse =
            memref::LoadOp::create(b, LSE, layout.rowAt(sequence, clamped));
        Value noKey =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lse, c.negInf);
        Value logit = arith::SubFOp::create(b, sink, lse);
        Value logit2 = arith::MulFOp::create(b, logit, c.log2e);
        Value weight = math::Exp2Op::create(b, logit2);
        return arith::SelectOp::create(b, noKey, c.zero, weight);
      });
  Value weightRow = constantIndex(b, 2);
  tile::StoreOp::create(
      b, weights, Stats,
      ValueRange{sequence.batch, sequence.head, block.block, weightRow, c.c0});
}
} // namespace

gpu::GPUFuncOp
sinkattn::kernels::buildSinkBwdPreprocess(ImplicitLocOpBuilder &b,
                                          const SinkBwdProblem &problem,
                                          const SinkBwdLayout &layout) {
  const rt::SinkAttentionShape &shape = problem.shape;
  const SinkBwdForm &form = problem.form;
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  const int64_t queryBlocks = layout.stats.getShape()[2];
  // The split's fp32 dK/dV sums, flat; with run-time shapes the kernel takes
  // them as the bundle declares them, [HK, TKV, D], and flattens them.
  MemRefType kvAccType =
      layout.runTimeShapes
          ? layout.kvAcc
          : MemRefType::get({layout.kvAcc.getNumElements()}, f32);
  const int64_t heads =
      layout.runTimeShapes ? ShapedType::kDynamic : shape.heads;
  auto sinkCountsType = MemRefType::get({heads}, i32);
  SmallVector<Type> argTypes = {layout.q, layout.q, layout.lse, layout.lse,
                                layout.stats};
  if (form.atomicDq)
    argTypes.append(
        {MemRefType::get({heads}, problem.sinkElement), layout.qAcc});
  if (form.kvAccumulate)
    argTypes.append({kvAccType, kvAccType});
  if (form.sumInKernel)
    argTypes.push_back(layout.shareCounts);
  if (form.sinksInDq)
    argTypes.push_back(sinkCountsType);
  layout.appendSequenceArgs(argTypes);
  gpu::GPUFuncOp func =
      createBackwardKernel(b, "sink_bwd_preprocess", argTypes);
  ArrayRef<BlockArgument> args = func.getArguments();
  Value O = args[0], dO = args[1], Delta = args[2], LSE = args[3],
        Stats = args[4];
  size_t next = 5;
  Value sinks, dQacc, dKacc, dVacc, counts, sinkCounts;
  if (form.atomicDq)
    sinks = args[next++], dQacc = args[next++];
  if (form.kvAccumulate)
    dKacc = args[next++], dVacc = args[next++];
  if (form.sumInKernel)
    counts = args[next++];
  if (form.sinksInDq)
    sinkCounts = args[next++];
  SinkBwdTrailingArgs trailing = layout.trailingArgs(args, next);

  QueryBlock block = QueryBlock::build(b, problem, layout, trailing, O);
  const SinkBwdConstants &c = block.constants;
  const SinkBwdSequence &sequence = block.sequence;
  // 16 rows per warp, rowsPerStep() at a time: each row is a group of D / 8
  // lanes, each lane reading 8 columns (16 bytes) of O and dO, every load
  // of the step issued before the first multiply; a butterfly in the group
  // sums its lanes. The group's first lane writes the row's -LSE·log2(e)
  // and Delta side by side into the block's record for the dK/dV kernel to
  // load with its Q and dO tiles, and Delta itself for rows inside the
  // sequence. Rows past the sequence's end read a clamped row (the last
  // one, or varlen's next sequence's): they go into the record, where the
  // dK/dV kernel masks them, but not into Delta.
  RowGroups groups = RowGroups::build(b, block, shape.headDim);
  Value width = arith::ConstantIntOp::create(b, i32, 32);
  Value rowsPerStep = constantIndex(b, groups.rowsPerStep());
  Value dqZeros;
  if (form.atomicDq)
    dqZeros = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({8}, f32), 0.0f));
  groups.buildRowLoop(b, block, rowsPerStep, [&](Value step) {
    buildPreprocessRows(b, layout, block, groups, step, O, dO, LSE, Delta,
                        Stats, dQacc, dqZeros, width);
  });
  if (form.atomicDq)
    buildSinkWeights(b, layout, block, sinks, LSE, Stats);

  // The loops that zero scratch take a strided part per thread of the
  // whole grid.
  Value first, stride;
  if (form.sumInKernel || form.kvAccumulate) {
    Value heads, blocksPerHead, threadsPerBlock = constantIndex(b, 128);
    if (layout.runTimeShapes) {
      // The grid is {query blocks, H, B}.
      blocksPerHead = gpu::GridDimOp::create(b, gpu::Dimension::x);
      heads = gpu::GridDimOp::create(b, gpu::Dimension::y);
      Value sequences = gpu::GridDimOp::create(b, gpu::Dimension::z);
      Value blocks = arith::MulIOp::create(b, blocksPerHead, heads);
      blocks = arith::MulIOp::create(b, blocks, sequences);
      stride = arith::MulIOp::create(b, blocks, threadsPerBlock);
    } else {
      heads = constantIndex(b, shape.heads);
      blocksPerHead = constantIndex(b, queryBlocks);
      stride = constantIndex(b, queryBlocks * shape.heads * shape.batch * 128);
    }
    Value batchHeads = arith::MulIOp::create(b, sequence.batch, heads);
    Value head = arith::AddIOp::create(b, batchHeads, sequence.head);
    Value headBlocks = arith::MulIOp::create(b, head, blocksPerHead);
    Value blockIndex = arith::AddIOp::create(b, headBlocks, block.block);
    Value base = arith::MulIOp::create(b, blockIndex, threadsPerBlock);
    Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    first = arith::AddIOp::create(b, base, thread);
  }
  // The dK/dV kernel's share-sum counters (its last-arrival election).
  if (form.sumInKernel) {
    Value zero32 = arith::ConstantIntOp::create(b, i32, 0);
    Value total = layout.runTimeShapes
                      ? Value(memref::DimOp::create(b, counts, c.c0))
                      : constantIndex(b, layout.shareCounts.getNumElements());
    buildForLoop(b, first, total, stride, [&](Value i) {
      memref::StoreOp::create(b, zero32, counts, i);
    });
  }
  // The split's fp32 dK/dV sums, 16 bytes at a time (D is a multiple of 4).
  if (form.kvAccumulate) {
    Value vectorElements = constantIndex(b, 4);
    Value vectors;
    if (layout.runTimeShapes) {
      ReassociationIndices all = {0, 1, 2};
      dKacc = memref::CollapseShapeOp::create(
          b, dKacc, ArrayRef<ReassociationIndices>{all});
      dVacc = memref::CollapseShapeOp::create(
          b, dVacc, ArrayRef<ReassociationIndices>{all});
      Value elements = memref::DimOp::create(b, dKacc, c.c0);
      vectors = arith::DivUIOp::create(b, elements, vectorElements);
    } else {
      vectors = constantIndex(b, kvAccType.getNumElements() / 4);
    }
    auto vectorType = VectorType::get({4}, f32);
    Value zeros =
        arith::ConstantOp::create(b, DenseElementsAttr::get(vectorType, 0.0f));
    buildForLoop(b, first, vectors, stride, [&](Value v) {
      Value element = arith::MulIOp::create(b, v, vectorElements);
      vector::StoreOp::create(b, zeros, dKacc, element, /*nontemporal=*/false,
                              llvm::Align(16));
      vector::StoreOp::create(b, zeros, dVacc, element, /*nontemporal=*/false,
                              llvm::Align(16));
    });
  }
  // The dQ kernel's dsink counters, one per head, by the head's first
  // block.
  if (form.sinksInDq) {
    Value firstBlock =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, block.block, c.c0);
    Value firstSequence = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                sequence.batch, c.c0);
    Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value firstThread =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, thread, c.c0);
    Value firstOfHead = arith::AndIOp::create(b, firstBlock, firstSequence);
    firstOfHead = arith::AndIOp::create(b, firstOfHead, firstThread);
    buildIfThen(b, firstOfHead, [&] {
      Value zero32 = arith::ConstantIntOp::create(b, i32, 0);
      memref::StoreOp::create(b, zero32, sinkCounts, sequence.head);
    });
  }
  finishBackwardKernel(b, func);
  return func;
}

gpu::GPUFuncOp
sinkattn::kernels::buildSinkBwdDqConvert(ImplicitLocOpBuilder &b,
                                         const SinkBwdProblem &problem,
                                         const SinkBwdLayout &layout) {
  const rt::SinkAttentionShape &shape = problem.shape;
  Type f32 = b.getF32Type();
  // With run-time shapes the keys' terms come as the bundle declares them,
  // [H, TKV], and the kernel flattens them.
  SmallVector<Type> argTypes = {
      layout.qAcc, layout.q,
      layout.runTimeShapes ? layout.keyTerms : layout.terms,
      MemRefType::get(
          {layout.runTimeShapes ? ShapedType::kDynamic : shape.heads}, f32)};
  layout.appendSequenceArgs(argTypes);
  gpu::GPUFuncOp func =
      createBackwardKernel(b, "sink_bwd_dq_convert", argTypes);
  ArrayRef<BlockArgument> args = func.getArguments();
  Value dQacc = args[0], dQ = args[1], terms = args[2], dsinks = args[3];
  SinkBwdTrailingArgs trailing = layout.trailingArgs(args, 4);

  QueryBlock block = QueryBlock::build(b, problem, layout, trailing, dQ);
  const SinkBwdConstants &c = block.constants;
  const SinkBwdSequence &sequence = block.sequence;
  RowGroups groups = RowGroups::build(b, block, shape.headDim);
  // dsink_h from the keys' sink terms (which the dK/dV kernel wrote), by
  // the first warp of the head's first block: one launch fewer than a
  // dsinks kernel of its own after this one.
  Value firstBlock =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, block.block, c.c0);
  Value firstSequence =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, sequence.batch, c.c0);
  Value firstOfHead = arith::AndIOp::create(b, firstBlock, firstSequence);
  Value inFirstWarp = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                            groups.thread, groups.c32);
  Value sumHere = arith::AndIOp::create(b, firstOfHead, inFirstWarp);
  buildIfThen(b, sumHere, [&] {
    // Run-time shapes: the terms of the keys the sequences cover (as the dQ
    // kernel sums the rows').
    Value flat = terms, run, rowsBegin, rowsEnd;
    if (layout.runTimeShapes) {
      run = memref::DimOp::create(b, terms, c.c1);
      ReassociationIndices all = {0, 1};
      flat = memref::CollapseShapeOp::create(
          b, terms, ArrayRef<ReassociationIndices>{all});
      Value offsets = memref::DimOp::create(b, trailing.cuK, c.c0);
      Value lastOffset = arith::SubIOp::create(b, offsets, c.c1);
      auto tokenAt = [&](Value offset) -> Value {
        Value entry = memref::LoadOp::create(b, trailing.cuK, offset);
        Value index = arith::IndexCastUIOp::create(b, b.getIndexType(), entry);
        return arith::MulIOp::create(b, index, c.unitK);
      };
      rowsBegin = tokenAt(c.c0);
      rowsEnd = tokenAt(lastOffset);
    }
    buildHeadSinkSum(b, layout, flat, dsinks, sequence.head, groups.lane, c.c0,
                     c.c1, c.zero, run, rowsBegin, rowsEnd);
  });
  // D / 8 lanes per row, each reading 32 contiguous bytes of the fp32 dQ
  // and writing 16 of dQ (in the accumulator's fragment layout the
  // conversion was far slower; docs/PERF.md).
  auto vectorF32 = VectorType::get({8}, f32);
  auto vectorType = VectorType::get({8}, problem.element);
  Value scales = vector::BroadcastOp::create(b, vectorF32, c.scale);
  Value rowsPerStep = constantIndex(b, groups.rowsPerStep());
  groups.buildRowLoop(b, block, rowsPerStep, [&](Value step) {
    SmallVector<RowGroups::Row> rows;
    SmallVector<SmallVector<Value>> at;
    SmallVector<Value> sums;
    for (int64_t u = 0; u < kRowGroupLoads; ++u) {
      rows.push_back(groups.row(b, block, step, u));
      at.push_back(layout.elementAt(sequence, rows.back().token, groups.column,
                                    groups.headColumn));
      sums.push_back(vector::LoadOp::create(b, vectorF32, dQacc, at.back(),
                                            /*nontemporal=*/false,
                                            llvm::Align(16)));
    }
    for (int64_t u = 0; u < kRowGroupLoads; ++u) {
      Value scaled = arith::MulFOp::create(b, sums[u], scales);
      Value rounded = arith::TruncFOp::create(b, vectorType, scaled);
      Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                           rows[u].inSequence, sequence.seqQ);
      buildIfThen(b, inside, [&] {
        vector::StoreOp::create(b, rounded, dQ, at[u], /*nontemporal=*/false,
                                llvm::Align(16));
      });
    }
  });
  finishBackwardKernel(b, func);
  return func;
}
