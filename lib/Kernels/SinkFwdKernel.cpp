//===- SinkFwdKernel.cpp - Attention-sink forward in tile IR --------------===//
//
// O = softmax([Q Kᵀ · scale, sink]) V without the sink's column, per head
// (GPT-OSS attention sinks): the sink logit only enlarges the softmax
// denominator. Causal, right-aligned (query row i sits at key position
// i + SKV - SQ), optionally limited to a sliding window of W keys, or
// (--non-causal, run-time shapes) over every key of the sequence; GQA maps
// query head h to key/value head h / (H / HK). Also writes the natural-log
// LSE of each row including the sink, which the backward pass needs.
//
// The schedule: two consumer warpgroups per block of 128 query rows (three,
// 192 rows, at D = 64; 64 each, sharing the K and V tiles); for each
// block of BN keys it reads K and V from shared memory, computes
// S = Q Kᵀ (wgmma SS), masks, updates the online softmax in the log2
// domain, and accumulates O += P V (wgmma RS, P from registers). The loads
// are tile.copy in a `tile.num_stages` loop: tile-warp-specialize gives
// them to a TMA producer warpgroup (K and V are two groups, each with its
// own full/empty barriers per stage). The overlap schedule (auto's for
// D = 128 with rows of more than 16 key blocks) also overlaps each
// warpgroup's softmax with its own GEMMs (buildOverlapLoop). The running
// max starts at the sink (in log2 units) and the running sum at 1,
// so the sink is in the softmax from the start and rows never see -inf as
// their max (unless the sink itself is -inf, which is guarded).
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilding.h"
#include "KernelBuilders.h"

#include "SinkAttn/Runtime/KernelGrids.h"
#include "SinkAttn/Runtime/TileSchedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Query rows per warpgroup.
constexpr int64_t kRowsPerWarpgroup = 64;
constexpr int64_t kBlockN = 128;
/// The forward's form, decided by buildSinkFwd.
struct SinkFwdForm {
  rt::SinkAttentionShape shape;
  rt::DType dtype, sinkDtype;
  int64_t stages;
  /// Consumer warpgroups of 64 rows each; more than one share each K/V tile.
  int64_t warpgroups;
  /// Declare the block size, so that tile-warp-specialize adds a producer.
  bool warpSpecialized;
  /// Overlap each block's softmax with the GEMMs (buildOverlapLoop).
  bool overlap;
  /// O through shared memory and a TMA store, or for varlen 16-byte vector
  /// stores (storeOutput): whole 128-byte lines, rows past the tensor's (the
  /// sequence's) end clipped, where register stores write 4-byte pairs 8
  /// rows apart.
  bool oThroughShared;
  /// Keep the row sum as eight partial columns per row until after the
  /// loop, as FA3 does (no shuffles in the loop); not where the partial
  /// registers make ptxas spill (ws, persistent; docs/design.md).
  bool deferredRowSum;
  /// The softmax scale in log2 units.
  float scaleLog2;
  /// --persistent: each block runs the tiles of its list
  /// (buildTileListLoop).
  bool persistent = false;
  /// --persistent without run-time shapes: the tile table
  /// (rt::sinkFwdTileTable), a module constant; with them the table is a
  /// kernel argument the launcher fills.
  std::vector<int32_t> tileTable;
  /// --pack-gqa: a block's rows are rows of its kv head's group, the G
  /// query heads' Sq rows one head after another (buildPackedPositions).
  bool packGqa = false;
  /// --run-time-shapes (varlen): the token counts, the batch and the heads
  /// are the tensors' run-time sizes (memref descriptors), the softmax
  /// scale and the window size kernel arguments; only whether it masks
  /// causally (shape.causal) and has a window (shape.window > 0) are
  /// compiled in.
  bool runTimeShapes = false;
};

/// --pack-gqa: the query positions of a run of a group's rows (row R is
/// position R mod Sq; rows that run into the next head cover all of
/// [0, Sq)).
struct PackedPositionRange {
  Value minPos, maxPos;
};

/// Builds the typed forward: per block of warpgroups x 64 query rows, a
/// loop over the key blocks the rows see (S = Q Kᵀ, mask, online softmax,
/// O += P V), then O / l and the LSE.
class SinkFwdBuilder {
public:
  SinkFwdBuilder(MLIRContext &context, const SinkFwdForm &form)
      : b(NameLoc::get(StringAttr::get(&context, "sink_fwd")), &context),
        form(form), shape(form.shape) {}

  OwningOpRef<ModuleOp> build();

private:
  Type rowType() { return tile::FragmentType::get({kRowsPerWarpgroup}, f32()); }
  Type sumType() {
    return form.deferredRowSum
               ? tile::FragmentType::get({kRowsPerWarpgroup, 8}, f32())
               : rowType();
  }
  Type scoresType() {
    return tile::FragmentType::get({kRowsPerWarpgroup, kBlockN}, f32());
  }
  Type probabilitiesType() {
    return tile::FragmentType::get({kRowsPerWarpgroup, kBlockN}, element);
  }
  Type accType(Type type) {
    return tile::FragmentType::get({kRowsPerWarpgroup, shape.headDim}, type);
  }
  Type f32() { return b.getF32Type(); }

  void buildTileListLoop(KernelSkeleton &kernel);
  void allocateTiles();
  void buildTile();
  void buildSequence();
  void buildPackedPositions();
  PackedPositionRange buildPackedPositionRange(Value firstRow,
                                               Value lastRowUnclamped);
  void buildRowSinks();
  void buildKeyBlockRange();
  void loadKeysAndValues(Value keyOffset, Value valueOffset);
  Value maskScores(Value scores);
  Value needsMask();
  scf::ForOp buildSerialLoop();
  scf::ForOp buildOverlapLoop();
  void buildEpilogue(scf::ForOp loop);
  void storeOutput(Value out, Value lse);

  ImplicitLocOpBuilder b;
  const SinkFwdForm &form;
  const rt::SinkAttentionShape &shape;
  Type element;
  Value Q, K, V, sinks, O, LSE, cuQ, cuK;
  /// --persistent with run-time shapes: the launcher's tile table.
  Value tileTable;
  /// Run-time shapes: the units of cuQ's and cuK's offsets, in tokens.
  Value offsetUnitQ, offsetUnitK;
  Value c0, c1, c64, c128, cBM, cBN, cBNm1, c63, group, window, hasWindow;
  /// The query and kv heads: constants, or with run-time shapes the views'
  /// columns / D.
  Value headCount, kvHeadCount;
  Value zero, one, negInf, log2e, ln2, scaleLog2, rescaleMargin;
  Value qb, h, bIdx, hk, seqQ, skv, hD, hkD, qStart, kStart, past, mBlock;
  Value wg, wgRow, m0, pBlock, p0, sQ, sK, sV, sQw, n0;
  /// --pack-gqa: the group's rows, its first row in the [B, H * Sq] views,
  /// the last key positions of the block's and the warpgroup's rows.
  Value groupRows, lastGroupRow, seqQm1, groupRow0, pBlockLast, pLast;
  SmallVector<Value> sO;
  Value loBlocks, hiBlocks, mInit, lInit, oInit, sZero;
  std::optional<PingPong> pingPong;
  OnlineSoftmax softmax;
};

OwningOpRef<ModuleOp> SinkFwdBuilder::build() {
  MLIRContext *context = b.getContext();
  context->loadDialect<math::MathDialect, NVVM::NVVMDialect>();
  element = getElementType(context, form.dtype);
  // The layouts that view [.., S, H * D] see a head's rows as a 2-D box
  // at column h * D.
  const int64_t d = shape.headDim;
  SmallVector<int64_t> qShape, kvShape, lseShape;
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    qShape = {shape.batch, shape.heads, shape.seqQ, d};
    kvShape = {shape.batch, shape.kvHeads, shape.seqKv, d};
    lseShape = {shape.batch, shape.heads, shape.seqQ};
    // --pack-gqa sees Q, O and LSE as [B, H * Sq, D] and [B, H * Sq]: a kv
    // head's group of query heads is one run of G * Sq rows.
    if (form.packGqa) {
      qShape = {shape.batch, shape.heads * shape.seqQ, d};
      lseShape = {shape.batch, shape.heads * shape.seqQ};
    }
    break;
  case rt::AttentionLayout::BSHD:
    qShape = {shape.batch, shape.seqQ, shape.heads * d};
    kvShape = {shape.batch, shape.seqKv, shape.kvHeads * d};
    lseShape = {shape.batch, shape.heads, shape.seqQ};
    break;
  case rt::AttentionLayout::Varlen: {
    auto sized = [&](int64_t size) {
      return form.runTimeShapes ? ShapedType::kDynamic : size;
    };
    qShape = {sized(shape.tokensQ()), sized(shape.heads * d)};
    kvShape = {sized(shape.tokensKv()), sized(shape.kvHeads * d)};
    lseShape = {sized(shape.heads), sized(shape.tokensQ())};
    break;
  }
  }
  const int64_t sinkCount =
      form.runTimeShapes ? ShapedType::kDynamic : shape.heads;
  // With run-time shapes Q, K, V and O are strided views (any token stride:
  // q, k and v may be views of one fused QKV tensor).
  MemRefLayoutAttrInterface tokenRows;
  if (form.runTimeShapes)
    tokenRows = StridedLayoutAttr::get(context, 0, {ShapedType::kDynamic, 1});
  SmallVector<Type> argTypes = {
      MemRefType::get(qShape, element, tokenRows),
      MemRefType::get(kvShape, element, tokenRows),
      MemRefType::get(kvShape, element, tokenRows),
      MemRefType::get({sinkCount}, getElementType(context, form.sinkDtype)),
      MemRefType::get(qShape, element, tokenRows),
      MemRefType::get(lseShape, f32())};
  if (shape.varlen()) {
    auto offsets = MemRefType::get(
        {form.runTimeShapes ? ShapedType::kDynamic : shape.batch + 1},
        b.getI32Type());
    argTypes.append({offsets, offsets});
  }
  if (form.runTimeShapes && form.persistent)
    argTypes.push_back(MemRefType::get({ShapedType::kDynamic}, b.getI32Type()));
  const bool windowed = shape.window > 0;
  // Run-time shapes: the softmax scale in log2 units, the window size, and
  // the units of the sequence offsets (query, key).
  if (form.runTimeShapes) {
    argTypes.push_back(f32());
    if (windowed)
      argTypes.push_back(b.getI32Type());
    argTypes.append({b.getI32Type(), b.getI32Type()});
  }
  SmallVector<int32_t> knownBlockSize;
  if (form.warpSpecialized)
    knownBlockSize = {int32_t(form.warpgroups * 128), 1, 1};
  KernelSkeleton kernel = createKernel(b, "sink_fwd", argTypes, knownBlockSize);
  auto args = kernel.func.getArguments();
  Q = args[0], K = args[1], V = args[2], sinks = args[3], O = args[4],
  LSE = args[5];
  if (shape.varlen())
    cuQ = args[6], cuK = args[7];
  // Run-time shapes: then the tile table (persistent), the scale, the
  // window (windowed) and the offsets' units.
  Value scaleArg, windowArg;
  if (form.runTimeShapes) {
    unsigned next = 8;
    if (form.persistent)
      tileTable = args[next++];
    scaleArg = args[next++];
    if (shape.window > 0)
      windowArg = args[next++];
  }
  if (form.runTimeShapes) {
    // The launcher takes token rows 16 bytes apart (the tensor maps need
    // it), which lets O's epilogue store column pairs.
    const int64_t rowMultiple = 16 / (element.getIntOrFloatBitWidth() / 8);
    for (Value rows : {Q, K, V, O})
      kernel.func.setArgAttr(cast<BlockArgument>(rows).getArgNumber(),
                             tile::TileDialect::kStrideMultipleAttrName,
                             b.getI64IntegerAttr(rowMultiple));
    offsetUnitQ = arith::IndexCastUIOp::create(b, b.getIndexType(),
                                               args[args.size() - 2]);
    offsetUnitK =
        arith::IndexCastUIOp::create(b, b.getIndexType(), args.back());
  }

  const int64_t blockM = form.warpgroups * kRowsPerWarpgroup;
  c0 = constantIndex(b, 0);
  c1 = constantIndex(b, 1);
  c64 = constantIndex(b, 64);
  c128 = constantIndex(b, 128);
  cBM = constantIndex(b, blockM);
  cBN = constantIndex(b, kBlockN);
  cBNm1 = constantIndex(b, kBlockN - 1);
  c63 = constantIndex(b, 63);
  if (form.runTimeShapes) {
    Value cD = constantIndex(b, shape.headDim);
    Value qColumns = memref::DimOp::create(b, Q, c1);
    Value kvColumns = memref::DimOp::create(b, K, c1);
    headCount = arith::DivUIOp::create(b, qColumns, cD);
    kvHeadCount = arith::DivUIOp::create(b, kvColumns, cD);
    // The causal grid's x is the group (rt::attentionBlockGrid): no
    // division.
    if (!windowed && !form.persistent && !form.packGqa)
      group = gpu::GridDimOp::create(b, gpu::Dimension::x);
    else
      group = divUI32(b, headCount, kvHeadCount);
  } else {
    group = constantIndex(b, shape.heads / shape.kvHeads);
  }
  // Without a window the distance test must always pass (with run-time
  // lengths, for any length a 32-bit position can have).
  if (form.runTimeShapes && windowed)
    window = arith::IndexCastUIOp::create(b, b.getIndexType(), windowArg);
  else
    window = constantIndex(b, windowed             ? shape.window
                              : form.runTimeShapes ? int64_t(INT32_MAX)
                                                   : shape.seqKv + 1);
  hasWindow = arith::ConstantIntOp::create(b, b.getI1Type(), windowed);
  zero = constantF32(b, 0.0f);
  one = constantF32(b, 1.0f);
  negInf = constantF32(b, -std::numeric_limits<float>::infinity());
  log2e = constantF32(b, float(1.44269504088896340736));
  ln2 = constantF32(b, float(0.693147180559945309417));
  scaleLog2 = form.runTimeShapes ? scaleArg : constantF32(b, form.scaleLog2);
  // The overlapped loop rescales O conditionally (FA4): most blocks leave
  // the running max, hence alpha = 1, and tile.scale_rows skips them.
  if (form.overlap)
    rescaleMargin = constantF32(b, 8.0f);

  if (form.packGqa) {
    // x: block of the group's rows, y: kv head (its first query head is
    // h), z: sequence.
    qb = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value hkOfBlock = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    bIdx = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    h = arith::MulIOp::create(b, hkOfBlock, group);
    hk = hkOfBlock;
    buildTile();
  } else if (!form.persistent) {
    AttentionBlockIds ids =
        buildBlockIds(b, /*heaviestLast=*/true, shape, c1, group, kvHeadCount);
    qb = ids.block, h = ids.head, bIdx = ids.batch, hk = ids.kvHead;
    buildTile();
  } else {
    // The warpgroup index, the shared tiles and the ping-pong's first
    // hand-over come before the tile loop: the turns run on from one tile
    // to the next, since all warpgroups see the same key blocks.
    wg = buildWarpgroupIndex(b);
    allocateTiles();
    pingPong = PingPong::build(b, wg, form.warpgroups);
    buildTileListLoop(kernel);
  }
  gpu::ReturnOp::create(b);
  if (failed(verifyKernel(kernel, "sink-fwd")))
    return nullptr;
  return std::move(kernel.module);
}

/// --persistent: block c runs the tiles of its list in the tile table
/// (rt::sinkFwdTileTable: @sink_fwd_tiles, or with run-time shapes the
/// launcher's); tile t is row block t / (H B) of head t mod H of sequence
/// (t mod H B) / H.
void SinkFwdBuilder::buildTileListLoop(KernelSkeleton &kernel) {
  Value table = tileTable;
  Value headCountOfTiles = headCount, sequences;
  // Run-time shapes: the sequences are the offsets less one.
  if (form.runTimeShapes) {
    Value offsets = memref::DimOp::create(b, cuQ, c0);
    sequences = arith::SubIOp::create(b, offsets, c1);
  } else {
    auto tableType =
        MemRefType::get({int64_t(form.tileTable.size())}, b.getI32Type());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(kernel.func);
      auto values = DenseIntElementsAttr::get(
          RankedTensorType::get(tableType.getShape(), b.getI32Type()),
          ArrayRef<int32_t>(form.tileTable));
      memref::GlobalOp::create(b, "sink_fwd_tiles", b.getStringAttr("private"),
                               tableType, values, /*constant=*/true,
                               /*alignment=*/IntegerAttr());
    }
    headCountOfTiles = constantIndex(b, shape.heads);
    table = memref::GetGlobalOp::create(b, tableType, "sink_fwd_tiles");
  }
  Value tilesPerLevel =
      form.runTimeShapes
          ? Value(arith::MulIOp::create(b, headCountOfTiles, sequences))
          : constantIndex(b, shape.heads * shape.batch);
  auto loadIndex = [&](Value position) -> Value {
    Value entry = memref::LoadOp::create(b, table, position);
    return arith::IndexCastUIOp::create(b, b.getIndexType(), entry);
  };
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value nextBlock = arith::AddIOp::create(b, block, c1);
  Value begin = loadIndex(block);
  Value end = loadIndex(nextBlock);
  buildForLoop(b, begin, end, c1, [&](Value slot) {
    Value tile = loadIndex(slot);
    qb = divUI32(b, tile, tilesPerLevel);
    Value levelStart = arith::MulIOp::create(b, qb, tilesPerLevel);
    Value inLevel = arith::SubIOp::create(b, tile, levelStart);
    bIdx = divUI32(b, inLevel, headCountOfTiles);
    Value sequenceStart = arith::MulIOp::create(b, bIdx, headCountOfTiles);
    h = arith::SubIOp::create(b, inLevel, sequenceStart);
    buildTile();
  });
}

void SinkFwdBuilder::allocateTiles() {
  const int64_t d = shape.headDim;
  sQ = allocShared(
      b, getSharedMemRefType({form.warpgroups * kRowsPerWarpgroup, d}, element));
  sK = allocShared(b, getSharedMemRefType({kBlockN, d}, element));
  sV = allocShared(b, getSharedMemRefType({kBlockN, d}, element));
  if (form.oThroughShared && form.warpgroups > 1)
    for (int64_t w = 0; w < form.warpgroups; ++w)
      sO.push_back(
          allocShared(b, getSharedMemRefType({kRowsPerWarpgroup, d}, element)));
}

/// One tile: the block's query rows qb of head h of sequence bIdx.
void SinkFwdBuilder::buildTile() {
  const bool persistent = form.persistent;
  const int64_t d = shape.headDim;
  // The grid gives the kv head where it has one; else a division.
  if (!hk)
    hk = divUI32(b, h, group);
  buildSequence();
  // Right-aligned causal: query row i sits at key position i + past.
  past = arith::SubIOp::create(b, skv, seqQ);
  mBlock = arith::MulIOp::create(b, qb, cBM);
  // With one warpgroup its index is a constant (the compiler cannot know
  // that thread ids stay below 128 without a declared block size).
  if (!persistent)
    wg = form.warpgroups == 1 ? constantIndex(b, 0) : buildWarpgroupIndex(b);
  wgRow = arith::MulIOp::create(b, wg, c64);
  m0 = arith::AddIOp::create(b, mBlock, wgRow);
  if (form.packGqa) {
    buildPackedPositions();
  } else if (!shape.causal) {
    // Without the causal mask every row sits at the sequence's last key:
    // the mask then hides only the keys past its end.
    pBlock = arith::SubIOp::create(b, skv, c1);
    p0 = pBlock;
  } else {
    pBlock = arith::AddIOp::create(b, mBlock, past);
    p0 = arith::AddIOp::create(b, m0, past);
  }

  if (!persistent)
    allocateTiles();
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    if (form.packGqa) {
      Value qRow = arith::AddIOp::create(b, groupRow0, mBlock);
      buildLoadTile(b, Q, {bIdx, qRow, c0}, sQ);
      break;
    }
    buildLoadTile(b, Q, {bIdx, h, mBlock, c0}, sQ);
    break;
  case rt::AttentionLayout::BSHD:
    buildLoadTile(b, Q, {bIdx, mBlock, hD}, sQ);
    break;
  case rt::AttentionLayout::Varlen: {
    Value qRow = arith::AddIOp::create(b, qStart, mBlock);
    buildLoadTile(b, Q, {qRow, hD}, sQ);
    break;
  }
  }
  sQw = buildSubView(b, sQ, {wgRow, b.getIndexAttr(0)},
                     {kRowsPerWarpgroup, d});
  buildKeyBlockRange();

  // The running max starts at the sink (log2 units) and the sum at 1, so
  // the sink is in the softmax from the start.
  if (form.packGqa) {
    buildRowSinks();
  } else {
    Value sink = buildSinkLoad(b, sinks, h);
    Value sinkLog2 = arith::MulFOp::create(b, sink, log2e);
    mInit = tile::FillOp::create(b, rowType(), sinkLog2);
  }
  if (form.deferredRowSum) {
    // The sink's exp2(sink - m) = 1 starts in column 0.
    lInit = buildMap(b, sumType(), {}, [&](ValueRange idx, ValueRange) {
      Value first =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, idx[1], c0);
      return Value(arith::SelectOp::create(b, first, one, zero));
    });
  } else {
    lInit = tile::FillOp::create(b, rowType(), one);
  }
  oInit = tile::FillOp::create(b, accType(f32()), zero);
  sZero = tile::FillOp::create(b, scoresType(), zero);
  if (form.warpgroups > 1 && !persistent)
    pingPong = PingPong::build(b, wg, form.warpgroups);
  softmax = {scaleLog2, zero, negInf, rescaleMargin, form.deferredRowSum};

  scf::ForOp loop = form.overlap ? buildOverlapLoop() : buildSerialLoop();
  buildEpilogue(loop);
}

/// This sequence's lengths and, for the layouts that view [.., S, H * D],
/// the first columns of the query and the kv head.
void SinkFwdBuilder::buildSequence() {
  if (shape.varlen()) {
    SequenceBounds bounds =
        buildSequenceBounds(b, bIdx, cuQ, cuK, c1, offsetUnitQ, offsetUnitK);
    qStart = bounds.qStart, kStart = bounds.kStart;
    seqQ = bounds.seqQ, skv = bounds.seqKv;
  } else {
    seqQ = constantIndex(b, shape.seqQ);
    skv = constantIndex(b, shape.seqKv);
  }
  if (shape.layout == rt::AttentionLayout::BHSD)
    return;
  Value cD = constantIndex(b, shape.headDim);
  hD = arith::MulIOp::create(b, h, cD);
  hkD = arith::MulIOp::create(b, hk, cD);
}

/// --pack-gqa: the query positions of the group's rows firstRow ..
/// min(lastRowUnclamped, the group's last).
PackedPositionRange
SinkFwdBuilder::buildPackedPositionRange(Value firstRow,
                                         Value lastRowUnclamped) {
  Value rowLast = arith::MinUIOp::create(b, lastRowUnclamped, lastGroupRow);
  Value headFirst = arith::DivUIOp::create(b, firstRow, seqQ);
  Value headLast = arith::DivUIOp::create(b, rowLast, seqQ);
  Value wraps = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, headFirst,
                                      headLast);
  Value posFirst = arith::RemUIOp::create(b, firstRow, seqQ);
  Value posLast = arith::RemUIOp::create(b, rowLast, seqQ);
  Value minPos = arith::SelectOp::create(b, wraps, c0, posFirst);
  Value maxPos = arith::SelectOp::create(b, wraps, seqQm1, posLast);
  return {minPos, maxPos};
}

/// --pack-gqa: pBlock .. pBlockLast and p0 .. pLast bound the key positions
/// of the block's and the warpgroup's rows, which the key-block range and
/// the decision to mask need; the mask itself takes each row's own.
void SinkFwdBuilder::buildPackedPositions() {
  const int64_t rows = shape.heads / shape.kvHeads * shape.seqQ;
  groupRows = constantIndex(b, rows);
  lastGroupRow = constantIndex(b, rows - 1);
  seqQm1 = arith::SubIOp::create(b, seqQ, c1);
  Value blockEnd = arith::AddIOp::create(b, mBlock, cBM);
  Value blockEndM1 = arith::SubIOp::create(b, blockEnd, c1);
  PackedPositionRange block = buildPackedPositionRange(mBlock, blockEndM1);
  pBlock = arith::AddIOp::create(b, block.minPos, past);
  pBlockLast = arith::AddIOp::create(b, block.maxPos, past);
  Value wgEndM1 = arith::AddIOp::create(b, m0, c63);
  PackedPositionRange rows64 = buildPackedPositionRange(m0, wgEndM1);
  p0 = arith::AddIOp::create(b, rows64.minPos, past);
  pLast = arith::AddIOp::create(b, rows64.maxPos, past);
  groupRow0 = arith::MulIOp::create(b, hk, groupRows);
}

/// --pack-gqa: the running max of each row starts at its own head's sink
/// (rows past the group's end, which are never stored, take the last
/// head's).
void SinkFwdBuilder::buildRowSinks() {
  Value lastInGroup = arith::SubIOp::create(b, group, c1);
  mInit = buildMap(b, rowType(), {}, [&](ValueRange idx, ValueRange) -> Value {
    Value row = arith::AddIOp::create(b, m0, idx[0]);
    Value headInGroup = arith::DivUIOp::create(b, row, seqQ);
    Value headInGroupC = arith::MinUIOp::create(b, headInGroup, lastInGroup);
    Value rowHead = arith::AddIOp::create(b, h, headInGroupC);
    Value sink = buildSinkLoad(b, sinks, rowHead);
    return arith::MulFOp::create(b, sink, log2e);
  });
}

/// Key blocks the block's rows can see, [loBlocks, hiBlocks): up to its last
/// row's position (causal), from its first row's window start; none for
/// blocks past the end of their sequence.
void SinkFwdBuilder::buildKeyBlockRange() {
  // --pack-gqa knows its rows' last key position; otherwise the block's
  // rows are consecutive positions.
  Value lastKey = form.packGqa ? arith::AddIOp::create(b, pBlockLast, c1)
                               : arith::AddIOp::create(b, pBlock, cBM);
  Value hiKey = arith::MinSIOp::create(b, lastKey, skv);
  Value hi = arith::MaxSIOp::create(b, hiKey, c0);
  Value hiCausal = arith::CeilDivUIOp::create(b, hi, cBN);
  Value firstKey = arith::SubIOp::create(b, pBlock, window);
  Value firstKey1 = arith::AddIOp::create(b, firstKey, c1);
  Value firstKeyPos = arith::MaxSIOp::create(b, firstKey1, c0);
  Value windowLo = arith::DivUIOp::create(b, firstKeyPos, cBN);
  loBlocks = arith::SelectOp::create(b, hasWindow, windowLo, c0);
  Value live = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, mBlock,
                                     form.packGqa ? groupRows : seqQ);
  Value hiLive = arith::SelectOp::create(b, live, hiCausal, loBlocks);
  hiBlocks = arith::MaxSIOp::create(b, hiLive, loBlocks);
}

void SinkFwdBuilder::loadKeysAndValues(Value keyOffset, Value valueOffset) {
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    buildLoadTile(b, K, {bIdx, hk, keyOffset, c0}, sK);
    buildLoadTile(b, V, {bIdx, hk, valueOffset, c0}, sV);
    return;
  case rt::AttentionLayout::BSHD:
    buildLoadTile(b, K, {bIdx, keyOffset, hkD}, sK);
    buildLoadTile(b, V, {bIdx, valueOffset, hkD}, sV);
    return;
  case rt::AttentionLayout::Varlen: {
    // Loads may run into the next sequence (keys the causal mask hides).
    Value kRow = arith::AddIOp::create(b, kStart, keyOffset);
    buildLoadTile(b, K, {kRow, hkD}, sK);
    Value vRow = arith::AddIOp::create(b, kStart, valueOffset);
    buildLoadTile(b, V, {vRow, hkD}, sV);
    return;
  }
  }
}

/// Whether this warpgroup's rows need the per-element mask in the key
/// block at n0.
Value SinkFwdBuilder::needsMask() {
  return buildBlockMaskDecision(
      b, n0, cBNm1, p0,
      [&]() -> Value {
        return form.packGqa ? pLast
                            : Value(arith::AddIOp::create(b, p0, c63));
      },
      window,
      hasWindow);
}

/// The scores with the keys that are masked for their row set to -inf.
Value SinkFwdBuilder::maskScores(Value scores) {
  return buildMap(b, scoresType(), {scores}, [&](ValueRange idx,
                                                 ValueRange x) -> Value {
    Value key = arith::AddIOp::create(b, n0, idx[1]);
    Value position;
    if (form.packGqa) {
      // Row R of the group is query position R mod Sq.
      Value packedRow = arith::AddIOp::create(b, m0, idx[0]);
      Value inHead = arith::RemUIOp::create(b, packedRow, seqQ);
      position = arith::AddIOp::create(b, inHead, past);
    } else if (!shape.causal) {
      position = p0;
    } else {
      position = arith::AddIOp::create(b, p0, idx[0]);
    }
    Value keep = buildKeepKey(b, key, position, window);
    return arith::SelectOp::create(b, keep, x[0], negInf);
  });
}

/// S = Q K_jᵀ, softmax, O += P V, one key block after another.
scf::ForOp SinkFwdBuilder::buildSerialLoop() {
  // Without warp specialization tile-software-pipeline prefetches K and V
  // stages - 1 blocks ahead.
  return buildPipelinedLoop(
      b, loBlocks, hiBlocks, c1, form.stages, {mInit, lInit, oInit},
      [&](Value kb, ValueRange iter) -> SmallVector<Value> {
        Value m = iter[0], l = iter[1], o = iter[2];
        n0 = arith::MulIOp::create(b, kb, cBN);
        loadKeysAndValues(n0, n0);
        if (pingPong)
          pingPong->waitTurn(b);
        Value s = tile::GemmOp::create(b, sQw, sK, sZero,
                                       /*transpose_a=*/false,
                                       /*transpose_b=*/true);
        if (pingPong)
          pingPong->passTurn(b);
        Value masked =
            buildIfThenElse(
                b, scoresType(), needsMask(),
                [&]() -> SmallVector<Value> { return {maskScores(s)}; },
                [&]() -> SmallVector<Value> { return {s}; })
                .getResult(0);
        OnlineSoftmax::Step step = softmax.step(b, masked, m, l);
        Value oScaled = buildMap(b, accType(f32()), {o, step.rescale},
                                 [&](ValueRange, ValueRange x) -> Value {
                                   return arith::MulFOp::create(b, x[0], x[1]);
                                 });
        Value p16 = tile::CastOp::create(b, probabilitiesType(),
                                         step.probabilities);
        Value oNew = tile::GemmOp::create(b, p16, sV, oScaled);
        return {step.max, step.sum, oNew};
      });
}

/// FA3's intra-warpgroup overlap: iteration j issues S_j = Q K_jᵀ and
/// O += P_{j-1} V_{j-1} together and computes the softmax of S_j while P V
/// runs. V is loaded one block behind K, so the loop runs once more than
/// there are key blocks (the first P V adds P = 0; the last S is masked
/// away); the copies' block indices are clamped to the key range.
scf::ForOp SinkFwdBuilder::buildOverlapLoop() {
  Value hasBlocks = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                          hiBlocks, loBlocks);
  Value hiBlocksP1 = arith::AddIOp::create(b, hiBlocks, c1);
  Value hiIterations =
      arith::SelectOp::create(b, hasBlocks, hiBlocksP1, loBlocks);
  Value lastKeyBlock = arith::SubIOp::create(b, hiBlocks, c1);
  Value zeroT = arith::ConstantFloatOp::create(
      b, cast<FloatType>(element),
      APFloat::getZero(cast<FloatType>(element).getFloatSemantics()));
  Value pInit = tile::FillOp::create(b, probabilitiesType(), zeroT);
  Type types[] = {rowType(), sumType(), scoresType(), rowType()};
  return buildPipelinedLoop(
      b, loBlocks, hiIterations, c1, form.stages, {mInit, lInit, oInit, pInit},
      [&](Value kb, ValueRange iter) -> SmallVector<Value> {
        Value m = iter[0], l = iter[1], o = iter[2], pPrev = iter[3];
        n0 = arith::MulIOp::create(b, kb, cBN);
        Value kbK = arith::MinSIOp::create(b, kb, lastKeyBlock);
        Value nK = arith::MulIOp::create(b, kbK, cBN);
        Value kbPrev = arith::SubIOp::create(b, kb, c1);
        Value kbV = arith::MaxSIOp::create(b, kbPrev, loBlocks);
        Value nV = arith::MulIOp::create(b, kbV, cBN);
        loadKeysAndValues(nK, nV);
        if (pingPong)
          pingPong->waitTurn(b);
        Value sAsync = tile::GemmOp::create(b, sQw, sK, sZero,
                                            /*transpose_a=*/false,
                                            /*transpose_b=*/true,
                                            /*async=*/true);
        Value oAsync = tile::GemmOp::create(b, pPrev, sV, o,
                                            /*transpose_a=*/false,
                                            /*transpose_b=*/false,
                                            /*async=*/true);
        if (pingPong)
          pingPong->passTurn(b);
        Value s = buildGemmWait(b, sAsync, 1);
        // The softmax in both branches: ptxas hoists a wgmma wait to the top
        // of its basic block, so P V's wait must start a block of its own.
        auto softmaxOf = [&](Value scores) -> SmallVector<Value> {
          OnlineSoftmax::Step step = softmax.step(b, scores, m, l);
          return {step.max, step.sum, step.probabilities, step.rescale};
        };
        scf::IfOp soft = buildIfThenElse(
            b, types, needsMask(),
            [&]() { return softmaxOf(maskScores(s)); },
            [&]() { return softmaxOf(s); });
        // P is converted and O rescaled only once P V is complete: P's
        // registers are the ones the in-flight wgmma reads.
        Value oDone = buildGemmWait(b, oAsync, 0);
        Value oScaled = tile::ScaleRowsOp::create(b, oDone, soft.getResult(3));
        Value p16 =
            tile::CastOp::create(b, probabilitiesType(), soft.getResult(2));
        return {soft.getResult(0), soft.getResult(1), oScaled, p16};
      });
}

/// O = o / l (0 when l is 0: a -inf sink and no key); LSE in natural log
/// units: (m + log2 l) * ln 2.
void SinkFwdBuilder::buildEpilogue(scf::ForOp loop) {
  Value rowSum = loop.getResult(1);
  if (form.deferredRowSum)
    rowSum = tile::ReduceOp::create(b, rowType(), tile::ReduceKind::sum,
                                    rowSum, 1);
  Value inverse =
      buildMap(b, rowType(), {rowSum}, [&](ValueRange, ValueRange x) -> Value {
        Value isZero =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x[0], zero);
        Value inv = arith::DivFOp::create(b, one, x[0]);
        return arith::SelectOp::create(b, isZero, zero, inv);
      });
  Value out = buildMap(b, accType(element), {loop.getResult(2), inverse},
                       [&](ValueRange, ValueRange x) -> Value {
                         Value y = arith::MulFOp::create(b, x[0], x[1]);
                         return arith::TruncFOp::create(b, element, y);
                       });
  Value lse = buildMap(b, rowType(), {loop.getResult(0), rowSum},
                       [&](ValueRange, ValueRange x) -> Value {
                         Value lg = math::Log2Op::create(b, x[1]);
                         Value t = arith::AddFOp::create(b, x[0], lg);
                         return arith::MulFOp::create(b, t, ln2);
                       });
  storeOutput(out, lse);
}

void SinkFwdBuilder::storeOutput(Value out, Value lse) {
  if (form.packGqa) {
    // Stores through views that end with the group: its last block's rows
    // past the end are the next group's.
    const int64_t rows = shape.heads / shape.kvHeads * shape.seqQ;
    Value oGroup = memref::SubViewOp::create(
        b, O, ArrayRef<OpFoldResult>{bIdx, groupRow0, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows),
                               b.getIndexAttr(shape.headDim)},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    tile::StoreOp::create(b, out, oGroup, ValueRange{c0, m0, c0});
    Value lseGroup = memref::SubViewOp::create(
        b, LSE, ArrayRef<OpFoldResult>{bIdx, groupRow0},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows)},
        SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
    tile::StoreOp::create(b, lse, lseGroup, ValueRange{c0, m0});
    return;
  }
  // O's destination and a tile's indices there. Varlen stores go through
  // views that end with the sequence (O's the head's [rows, D]); TMA
  // would clip only at the tensor's end, so staged tiles go out as 16-byte
  // vectors clipped at the view's.
  Value oDest = O, lseDest = LSE;
  SmallVector<Value> lseIndices = {bIdx, h, m0};
  std::function<SmallVector<Value>(Value)> oTile;
  std::optional<tile::CopyEngine> engine;
  if (shape.varlen()) {
    OpFoldResult heads = form.runTimeShapes ? OpFoldResult(headCount)
                                            : b.getIndexAttr(shape.heads);
    SmallVector<OpFoldResult> unit(2, b.getIndexAttr(1));
    oDest = memref::SubViewOp::create(
        b, O, ArrayRef<OpFoldResult>{qStart, hD},
        ArrayRef<OpFoldResult>{seqQ, b.getIndexAttr(shape.headDim)}, unit);
    oTile = [&](Value row) -> SmallVector<Value> { return {row, c0}; };
    engine = tile::CopyEngine::vector;
    lseDest = memref::SubViewOp::create(
        b, LSE, ArrayRef<OpFoldResult>{b.getIndexAttr(0), qStart},
        ArrayRef<OpFoldResult>{heads, seqQ}, unit);
    lseIndices = {h, m0};
  } else {
    // BHSD and BSHD: O's tile at query row `row`; LSE [B, H, SQ] alike.
    oTile = [&](Value row) -> SmallVector<Value> {
      if (shape.layout == rt::AttentionLayout::BHSD)
        return {bIdx, h, row, c0};
      return {bIdx, row, hD};
    };
  }
  if (!form.oThroughShared) {
    tile::StoreOp::create(b, out, oDest, oTile(m0));
  } else if (form.warpgroups == 1) {
    // One warpgroup stages O in its Q tile, read by no GEMM any more.
    tile::StoreOp::create(b, out, sQ, ValueRange{c0, c0});
    buildStoreTile(b, sQ, oDest, oTile(mBlock), engine);
  } else {
    // Each warpgroup writes its rows into its own staging tile, then the
    // block stores the tiles (whole lines, clipped at the end).
    auto stageInto = [&](int64_t w) {
      tile::StoreOp::create(b, out, sO[w], ValueRange{c0, c0});
    };
    if (form.warpgroups == 2) {
      Value isFirst =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg, c0);
      buildIfThenElse(
          b, {}, isFirst,
          [&]() -> SmallVector<Value> {
            stageInto(0);
            return {};
          },
          [&]() -> SmallVector<Value> {
            stageInto(1);
            return {};
          });
      buildStoreTile(b, sO[0], oDest, oTile(mBlock), engine);
      Value oRow1 = arith::AddIOp::create(b, mBlock, c64);
      buildStoreTile(b, sO[1], oDest, oTile(oRow1), engine);
    } else {
      std::function<void(int64_t)> stageFrom = [&](int64_t w) {
        if (w + 1 == form.warpgroups)
          return stageInto(w);
        Value isW = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg,
                                          constantIndex(b, w));
        buildIfThenElse(
            b, {}, isW,
            [&]() -> SmallVector<Value> {
              stageInto(w);
              return {};
            },
            [&]() -> SmallVector<Value> {
              stageFrom(w + 1);
              return {};
            });
      };
      stageFrom(0);
      for (int64_t w = 0; w < form.warpgroups; ++w) {
        Value offset = constantIndex(b, w * kRowsPerWarpgroup);
        Value row = arith::AddIOp::create(b, mBlock, offset);
        buildStoreTile(b, sO[w], oDest, oTile(row), engine);
      }
    }
  }
  tile::StoreOp::create(b, lse, lseDest, lseIndices);
}
} // namespace

FailureOr<KernelModule> kernels::buildSinkFwd(MLIRContext &context,
                                              const KernelConfig &config) {
  // The backward builds its forward through here: its errors name it.
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context))
           << (config.kernel == "sink-bwd" ? "sink-bwd: " : "sink-fwd: ");
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or fp16";
  if (config.headDim != 64 && config.headDim != 128)
    return fail() << "--head-dim " << config.headDim
                  << " is not compiled; use 64 or 128";
  if (config.batch < 1 || config.heads < 1 || config.kvHeads < 1 ||
      config.seqQ < 1 || config.seqKv < 1)
    return fail() << "batch, heads, kv-heads, seq-q and seq-kv must be "
                     "positive, got B="
                  << config.batch << " H=" << config.heads
                  << " HK=" << config.kvHeads << " SQ=" << config.seqQ
                  << " SKV=" << config.seqKv;
  if (config.heads % config.kvHeads != 0)
    return fail() << "--kv-heads " << config.kvHeads << " must divide --heads "
                  << config.heads;
  if (config.stages < 1 || config.stages > 3)
    return fail() << "--stages " << config.stages
                  << " is not supported: 1 to 3 (tiles of the main loop per "
                     "stage)";
  if (config.sinkDtype != rt::DType::F32 && config.sinkDtype != rt::DType::BF16)
    return fail() << "--sink-dtype " << rt::dtypeName(config.sinkDtype)
                  << " is not supported; use f32 or bf16";
  if (config.window < 0)
    return fail() << "--window " << config.window
                  << " must be positive (0: no window)";
  // Grid dimensions y and z (rt::attentionBlockGrid) hold heads or 64-row
  // blocks, and kv heads times batch; CUDA allows at most 65535 in each.
  constexpr int64_t kMaxGridYZ = 65535;
  if (config.heads > kMaxGridYZ)
    return fail() << "--heads " << config.heads
                  << " is not supported: at most 65535 (a grid dimension)";
  for (auto [flag, length] : {std::pair<const char *, int64_t>{"--seq-q", config.seqQ},
                              {"--seq-kv", config.seqKv}})
    if ((length + 63) / 64 > kMaxGridYZ)
      return fail() << flag << " " << length
                    << " is not supported: at most 65535 blocks of 64 rows "
                       "(4194240 rows; a grid dimension)";
  if (int64_t(config.kvHeads) * config.batch > kMaxGridYZ)
    return fail() << "--kv-heads x --batch = "
                  << int64_t(config.kvHeads) * config.batch
                  << " is not supported: at most 65535 (a grid dimension)";
  if (config.packGqa) {
    if (config.kernel != "sink-fwd")
      return fail() << "--pack-gqa applies to sink-fwd only";
    if (config.layout != rt::AttentionLayout::BHSD)
      return fail() << "--pack-gqa supports the bhsd layout only, not "
                    << rt::layoutName(config.layout)
                    << " (it views a kv head's query heads as one run of "
                       "rows)";
    if (config.heads == config.kvHeads)
      return fail() << "--pack-gqa needs GQA (--heads " << config.heads
                    << " > --kv-heads " << config.kvHeads
                    << "): with one query head per kv head there is nothing "
                       "to pack";
  }
  if (config.runTimeShapes &&
      ((config.kernel != "sink-fwd" && config.kernel != "sink-bwd") ||
       config.layout != rt::AttentionLayout::Varlen))
    return fail() << "--run-time-shapes supports sink-fwd and sink-bwd with "
                     "--layout varlen only so far (its lengths are read "
                     "from cu_seqlens at run time already)";
  if (!config.causal && !config.runTimeShapes)
    return fail() << "--non-causal needs --run-time-shapes (--layout varlen) "
                     "so far";
  rt::SinkAttentionShape shape = kernels::sinkAttentionShape(config);
  if (rt::Status valid = rt::validate(shape); !valid.ok())
    return fail() << valid.message();
  // TMA coordinates and our index math are 32-bit.
  if (double(shape.qElements()) > double(INT32_MAX) ||
      double(shape.kvElements()) > double(INT32_MAX))
    return fail() << "the tensors have more than 2^31-1 elements";

  if (config.schedule != "auto" && config.schedule != "ws" &&
      config.schedule != "plain" && config.schedule != "overlap")
    return fail() << "unknown schedule '" << config.schedule
                  << (config.kernel == "sink-bwd" ? "' (auto or plain)"
                                                  : "' (auto, ws, overlap or plain)");
  // ws: two consumer warpgroups (128 rows; three, 192 rows, at D = 64)
  // share each K/V tile and a TMA producer feeds them. plain: one
  // warpgroup of 64 rows per block, which with its few registers and
  // little shared memory runs three blocks per SM — faster for D = 64 up
  // to rows of rt::kWarpSpecializedD64MinKeyBlocks key blocks (measured,
  // docs/PERF.md).
  // overlap: ws whose warpgroups also overlap each block's softmax with
  // their own GEMMs (buildOverlapLoop), at the cost of one more iteration
  // (an S GEMM and a P V GEMM with P = 0). Auto picks it for D = 128 when
  // the longest row sees at least rt::kOverlapMinKeyBlocks key blocks,
  // where the extra iteration is repaid (docs/PERF.md).
  const int64_t rowKeyBlocks =
      rt::sinkFwdRowKeyBlocks(config.seqKv, config.window);
  const std::string autoSchedule =
      rt::sinkFwdAutoSchedule(config.headDim, rowKeyBlocks);
  bool overlap = config.schedule == "overlap" ||
                 (config.schedule == "auto" && autoSchedule == "overlap");
  bool warpSpecialized = config.schedule == "ws" || overlap ||
                         (config.schedule == "auto" && autoSchedule != "plain");
  // Three at D = 64, as FA3 has it: tile-warp-specialize gives each of
  // them 160 registers (two would take 240 each and leave the SM's third
  // warpgroup slot empty: 168 registers x 384 threads fill the register
  // file, one block per SM), and each K/V tile then serves 192 rows —
  // with 64-row blocks (plain) the SMs read twice cuDNN's bytes from L2
  // and, power-capped, ran at lower clocks (docs/PERF.md).
  int64_t warpgroups =
      !warpSpecialized ? 1 : config.headDim == 64 ? 3 : 2;
  int64_t blockM = warpgroups * kRowsPerWarpgroup;
  const int64_t rowBlocks = (config.seqQ + blockM - 1) / blockM;
  const int64_t tiles = rowBlocks * config.heads * config.batch;
  // --persistent: min(N, tiles) blocks loop over the tiles
  // (buildTileListLoop); the two consumer warpgroups' ping-pong and the
  // producer's pipeline run on from one tile to the next. Auto's choice
  // (kAutoPersistentBlocks): one block per SM where auto runs ws or
  // overlap with 2 stages for a BHSD/BSHD forward without a window, rows
  // of at most rt::kPersistentMaxKeyBlocks key blocks and more tiles than
  // SMs (rt::sinkFwdRunsPersistent, which the kernel library asks too):
  // the producer then loads the next tile's Q during the consumers'
  // epilogue (a tile load, tile-warp-specialize), and the tile lists keep
  // the blocks level (docs/PERF.md has the cells where it won and lost).
  int64_t requestedBlocks = config.persistentBlocks;
  if (requestedBlocks == kAutoPersistentBlocks) {
    // Measured with 2 stages only: with 1 (ptxas spills) and 3 (no room
    // for O's staging tiles) persistence was slower (docs/PERF.md).
    bool autoPersistent =
        config.kernel == "sink-fwd" && config.schedule == "auto" &&
        config.stages == 2 && !shape.varlen() && !config.packGqa &&
        rt::sinkFwdRunsPersistent(autoSchedule, rowKeyBlocks, config.window,
                                  tiles, kPersistentSMs);
    requestedBlocks = autoPersistent ? kPersistentSMs : 0;
  }
  const bool persistent = requestedBlocks != 0;
  if (persistent) {
    if (requestedBlocks < 0 || requestedBlocks > 65535)
      return fail() << "--persistent " << requestedBlocks
                    << " is not supported: 1 to 65535 blocks (0 for one "
                       "block per tile)";
    if (!warpSpecialized)
      return fail() << "--persistent needs a warp-specialized schedule (ws "
                       "or overlap), not plain"
                    << (config.schedule == "auto"
                            ? " (auto's choice for --head-dim 64; give "
                              "--schedule ws or overlap)"
                            : "");
    if (shape.varlen() && !config.runTimeShapes)
      return fail() << "--persistent supports the bhsd and bshd layouts, "
                       "and varlen only with --run-time-shapes (whose "
                       "launcher builds the tile lists for the call)";
    if (config.packGqa)
      return fail() << "--persistent and --pack-gqa do not combine (a "
                       "packed block's rows span query heads)";
  }
  // O goes through shared memory (then TMA, or for varlen 16-byte vector
  // stores clipped at the sequence) where the tile ends with its rows (not
  // --pack-gqa's, which span heads) and the staging tiles fit beside Q and
  // the K/V stages in the 227 KiB a block may have (not: ws/overlap at D 128
  // with 3 stages; one warpgroup stages O in its Q tile and needs no room).
  const int64_t elementBytes = 2;
  const int64_t tileBytes =
      (blockM + 2 * config.stages * kBlockN) * config.headDim * elementBytes;
  const int64_t stagingBytes =
      warpgroups > 1 ? blockM * config.headDim * elementBytes : 0;
  constexpr int64_t kSharedMemoryPerBlock = 227 * 1024;
  // The runtime aligns dynamic shared memory to 1 KiB (the swizzled
  // tiles'); the mbarriers are static shared memory, at most 128 bytes.
  constexpr int64_t kAlignmentSlackBytes = 1024, kStaticBytes = 128;
  const bool oThroughShared =
      !config.packGqa &&
      tileBytes + stagingBytes + kAlignmentSlackBytes + kStaticBytes <=
          kSharedMemoryPerBlock;
  const int64_t persistentBlocks =
      persistent ? std::min(requestedBlocks, tiles) : 0;
  double scale = 1.0 / std::sqrt(double(config.headDim));
  // The softmax scale in log2 units rounded to 10 digits, as the kernels'
  // text had it: their PTX stayed byte-identical.
  char scaleLog2[64];
  std::snprintf(scaleLog2, sizeof(scaleLog2), "%.9e", scale * 1.4426950408889634);
  const int64_t groupRows = config.heads / config.kvHeads * config.seqQ;
  SinkFwdForm form{shape, config.dtype, config.sinkDtype, config.stages,
                   warpgroups, warpSpecialized, overlap, oThroughShared,
                   // Per-iteration reduction where the partial columns
                   // made ptxas spill.
                   /*deferredRowSum=*/overlap || !persistent,
                   float(std::strtod(scaleLog2, nullptr)), persistent,
                   persistent && !config.runTimeShapes
                       ? rt::sinkFwdTileTable(shape, blockM, persistentBlocks)
                       : std::vector<int32_t>(),
                   config.packGqa, config.runTimeShapes};
  OwningOpRef<ModuleOp> module = SinkFwdBuilder(context, form).build();
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "sink-fwd";
  bundle.entry = "sink_fwd";
  bundle.grid = persistent ? rt::Dim3{uint32_t(persistentBlocks), 1, 1}
                : config.packGqa
                    ? rt::Dim3{uint32_t((groupRows + blockM - 1) / blockM),
                               uint32_t(config.kvHeads), uint32_t(config.batch)}
                    : rt::attentionBlockGrid(rowBlocks, shape);
  // The consumers; warp specialization adds its producer warpgroup.
  bundle.block = {uint32_t(warpgroups * 128), 1, 1};
  bundle.config = {{"layout", std::string(rt::layoutName(shape.layout))},
                   {"batch", config.batch},
                   {"heads", config.heads},
                   {"kv_heads", config.kvHeads},
                   {"seq_q", config.seqQ},
                   {"seq_kv", config.seqKv},
                   {"head_dim", config.headDim},
                   {"window", config.window},
                   {"schedule", std::string(overlap ? "overlap"
                                            : warpSpecialized ? "ws"
                                                              : "plain")},
                   {"stages", config.stages},
                   {"scale", scale},
                   {"dtype", std::string(rt::dtypeName(config.dtype))},
                   {"sink_dtype", std::string(rt::dtypeName(config.sinkDtype))}};
  if (config.packGqa)
    bundle.config["pack_gqa"] = int64_t(1);
  if (persistent) {
    // With run-time shapes, at most N blocks: the launch takes
    // min(N, tiles) (rt::sinkFwdForSizes).
    bundle.config["persistent_blocks"] =
        config.runTimeShapes ? requestedBlocks : persistentBlocks;
    // Each block has its list in the tile table: launch them all.
    bundle.config["tile_lists"] = int64_t(1);
  }
  if (shape.varlen()) {
    bundle.config["seqlens_q"] = rt::formatLengths(config.seqlensQ);
    bundle.config["seqlens_kv"] = rt::formatLengths(config.seqlensKv);
  }
  auto u = [](int64_t v) { return uint64_t(v); };
  std::vector<uint64_t> qShape = shape.qDims(), kvShape = shape.kvDims();
  bundle.params.push_back(kernels::inputBuffer("q", config.dtype, qShape));
  bundle.params.push_back(kernels::inputBuffer("k", config.dtype, kvShape));
  bundle.params.push_back(kernels::inputBuffer("v", config.dtype, kvShape));
  bundle.params.push_back(
      kernels::inputBuffer("sinks", config.sinkDtype, {u(config.heads)}));
  bundle.params.push_back(kernels::outputBuffer("o", config.dtype, qShape));
  bundle.params.push_back(
      kernels::outputBuffer("lse", rt::DType::F32, shape.lseDims()));
  if (shape.varlen()) {
    bundle.params.push_back(kernels::inputBuffer("cu_seqlens_q", rt::DType::I32,
                                                 {u(config.batch + 1)}));
    bundle.params.push_back(kernels::inputBuffer(
        "cu_seqlens_kv", rt::DType::I32, {u(config.batch + 1)}));
  }
  if (config.runTimeShapes && persistent)
    bundle.params.push_back(kernels::inputBuffer(
        "tiles", rt::DType::I32, {u(persistentBlocks + 1 + tiles)}));
  if (config.runTimeShapes) {
    // Every buffer a descriptor (the calling convention is the kernel's),
    // each the kernel's view, every size at run time: tokens, the sequence
    // count and the heads.
    bundle.formatVersion = rt::kBundleDescriptorFormatVersion;
    bundle.config["block_m"] = blockM;
    bundle.config["causal"] = int64_t(config.causal);
    for (rt::BundleParam &buffer : bundle.params) {
      buffer.descriptor = true;
      if (buffer.name == "q" || buffer.name == "o")
        buffer.shape = {u(shape.tokensQ()), u(config.heads * config.headDim)};
      else if (buffer.name == "k" || buffer.name == "v")
        buffer.shape = {u(shape.tokensKv()),
                        u(config.kvHeads * config.headDim)};
      for (uint64_t d = 0; d < buffer.shape.size(); ++d)
        buffer.dynamicDims.push_back(d);
      // Token rows at any stride.
      if (buffer.name == "q" || buffer.name == "k" || buffer.name == "v" ||
          buffer.name == "o")
        buffer.strides = {buffer.shape[1], 1};
    }
    bundle.params.push_back(rt::scalarParam("scale_log2", rt::DType::F32,
                                            std::strtod(scaleLog2, nullptr)));
    if (config.window > 0)
      bundle.params.push_back(
          rt::scalarParam("window", rt::DType::I32, config.window));
    // Offsets in tokens; the library passes 0, 1, ..., B with the length
    // as the unit for a batch of equal lengths.
    bundle.params.push_back(
        rt::scalarParam("cu_seqlens_q_unit", rt::DType::I32, 1));
    bundle.params.push_back(
        rt::scalarParam("cu_seqlens_kv_unit", rt::DType::I32, 1));
  }
  KernelModule kernel{std::move(module), std::move(bundle)};
  kernel.tileIR = true;
  return kernel;
}
