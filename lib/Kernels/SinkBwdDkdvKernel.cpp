//===- SinkBwdDkdvKernel.cpp - The backward's key-side kernels ------------===//
//
// sink_bwd_dkdv: per block of 64 keys (64·N with --dkdv-warpgroups N, the
// warpgroups sharing the Q/dO tiles a TMA producer loads) and one query
// head, a loop over the query blocks that see those keys in the transposed
// form
//   Sᵀ = K Qᵀ, Pᵀ = exp(Sᵀ·scale - LSE) (masked), dV += Pᵀ dO,
//   dPᵀ = V dOᵀ, dSᵀ = Pᵀ ⊙ (dPᵀ - Delta), dK += dSᵀ Q · scale,
// so K, V, dK and dV stay in registers and shared memory. LSE and Delta are
// per column here: the maps read them from the query block's record in
// shared memory, loaded (and pipelined) with Q and dO. With GQA each query
// head writes an fp32 share of its kv head's dK/dV, which the group's last
// block for those keys adds (one warpgroup, sumSharesOfGroup) or
// sink_bwd_dkdv_sum does. --dq atomic (FlashAttention 3's split, two
// warpgroups) also computes dQ's share of the block's keys, dS K, from dSᵀ
// in shared memory and adds it into an fp32 dQ by TMA reduce-add, and sums
// the keys' sink terms. SinkBwdKernel.cpp describes the whole backward.
//
//===----------------------------------------------------------------------===//

#include "SinkBwdLayout.h"

#include "AttentionBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>
#include <tuple>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
constexpr int64_t kBlock = kSinkBwdBlock;
/// Elements of one row each thread adds in the in-kernel share sum
/// (16-byte loads of every share, all issued before the first add).
constexpr int64_t kSumVector = 4;
/// Threads of the one-warpgroup dK/dV kernel, which sum the shares.
constexpr int64_t kSumThreads = 128;

Type f32Type(ImplicitLocOpBuilder &b) { return b.getF32Type(); }

/// Builds sink_bwd_dkdv: the keys' block, the query blocks that see them,
/// and per query block the loop body below; then dK and dV (or their
/// shares and sums) and, with --dq atomic, the keys' sink terms.
class SinkBwdDkdvBuilder {
public:
  SinkBwdDkdvBuilder(ImplicitLocOpBuilder &b, const SinkBwdProblem &problem,
                     const SinkBwdLayout &layout)
      : b(b), problem(problem), shape(problem.shape), form(problem.form),
        element(problem.element), layout(layout) {}

  gpu::GPUFuncOp build();

private:
  Type fragment(ArrayRef<int64_t> shape, Type type) {
    return tile::FragmentType::get(shape, type);
  }
  Type scoresType() { return fragment({kBlock, kBlock}, f32Type(b)); }
  Type probabilitiesType() { return fragment({kBlock, kBlock}, element); }
  Type accType() { return fragment({kBlock, shape.headDim}, f32Type(b)); }
  Type gradientType() { return fragment({kBlock, shape.headDim}, element); }
  Type rowType() { return fragment({kBlock}, f32Type(b)); }
  Type rowPartsType() { return fragment({kBlock, 8}, f32Type(b)); }
  Type panelType() { return fragment({kBlock, panel()}, f32Type(b)); }
  /// dQ's share is split between the two warpgroups by panels of D / 2
  /// columns.
  int64_t panel() { return shape.headDim / 2; }
  int64_t blockKeys() { return form.dkdvBlockKeys(); }

  gpu::GPUFuncOp createFunction();
  void buildKeys();
  void loadKeysAndValuesIntoRegisters();
  void allocateTiles();
  void buildQueryBlockRange();
  void allocateDqTiles();
  void defineSinkTermValues();
  void prepareDsTile();
  void prepareDsRing();
  scf::ForOp buildLoop();

  // The loop body.
  void loadQueryBlock(Value qBlock);
  Value issueFirstGemms();
  void decideMask();
  Value probabilities(Value sT);
  Value issueSecondGemms(Value pT16, Value dv);
  Value dsOf(Value pT, Value dpT);
  std::pair<Value, Value> sinkTermsAndDs(Value pT, Value dpT, Value term);
  std::pair<Value, Value> dkOnly(Value dsT16, Value dk);
  std::pair<Value, Value> dkAndDqShare(Value dsT16, Value dk, Value qBlock);
  std::pair<Value, Value> dkAndDeferredDqShare(Value dsT16, Value dk,
                                               Value qBlock);
  void addDqPanel(Value part, Value slot, Value rowOffset, Value condition,
                  bool pending);
  struct DsRingPosition {
    Value parity, slot, otherSlot;
  };
  DsRingPosition dsRingPosition(Value count);
  Value waitForDsSlot(Value slot, Value parity);

  // After the loop.
  void addLastDeferredDqShare();
  Value scaledDk(Value dkSum);
  void storeGradients(Value dkSum, Value dvSum);
  void storeShares(Value dkSum, Value dvSum);
  void storeKvAccumulators(Value dkSum, Value dvSum);
  void sumSharesOfGroup();
  void sumShareElements(Value e, Value hFirst);
  void storeKeyTerms(Value terms);

  SmallVector<Value> shareAt(Value head, Value row, Value column);

  ImplicitLocOpBuilder &b;
  const SinkBwdProblem &problem;
  const rt::SinkAttentionShape &shape;
  const SinkBwdForm &form;
  Type element;
  const SinkBwdLayout &layout;
  SinkBwdConstants c;
  SinkBwdSequence sequence;

  SinkBwdTrailingArgs trailing;
  Value Q, K, V, dO, Stats, dK, dV, dQaccum, keyTermsOut, dKout, dVout, counts;
  /// Run-time shapes: the kv heads.
  Value kvHeadCount;
  /// The block of keys.
  Value kb;
  /// The warpgroup's keys from n0; the block's from nBlock (shared tiles).
  Value n0, nBlock, wg, wgKey, blockLastKeyOffset, kRowBlock, kRow;
  /// SinkBwdForm::kvInRegisters: the warpgroup's K and V rows as A
  /// fragments.
  Value kRegisters, vRegisters;
  Value sK, sV, sQ, sdO, sStats, sKw, sVw;
  std::optional<PingPong> pingPong;
  Value loQ, hiBlocks, live, accZero, sZero;
  // --dq atomic.
  Value sdQ2, cTwo, cWeightRow, termZero, sdS, sdSw, wgCol, sZeroPanel, sKd;
  Value dsBars, sdS2, dqPanelColumn, sdQpw;
  // The iteration's query block.
  Value m0, qRow, needsMask, distanceBase, rowsLeft32, dpTAsync, dvAsync;
};

gpu::GPUFuncOp SinkBwdDkdvBuilder::build() {
  gpu::GPUFuncOp func = createFunction();
  c = SinkBwdConstants::build(b, problem, trailing, Q, K,
                              /*groupFromGrid=*/true);
  if (layout.runTimeShapes) {
    Value kvColumns = memref::DimOp::create(b, K, c.c1);
    Value headDim = constantIndex(b, layout.headDim);
    kvHeadCount = arith::DivUIOp::create(b, kvColumns, headDim);
  }
  AttentionBlockIds ids = buildBlockIds(b, /*heaviestLast=*/false, shape, c.c1,
                                        c.group, kvHeadCount);
  kb = ids.block;
  sequence = layout.buildSequence(b, c, ids.batch, ids.head, trailing.cuQ,
                                  trailing.cuK, ids.kvHead);
  buildKeys();
  allocateTiles();
  buildQueryBlockRange();
  accZero = tile::FillOp::create(b, accType(), c.zero);
  sZero = tile::FillOp::create(b, scoresType(), c.zero);
  if (form.dqSplitDeferred) {
    // (The GQA sums' stores after the loop use the columns' fp32 tiles.)
    if (form.kvAccumulate)
      allocateDqTiles();
    defineSinkTermValues();
    prepareDsRing();
  } else if (form.atomicDq) {
    prepareDsTile();
    allocateDqTiles();
    defineSinkTermValues();
  }
  scf::ForOp loop = buildLoop();
  if (form.dqSplitDeferred)
    addLastDeferredDqShare();
  storeGradients(loop.getResult(0), loop.getResult(1));
  if (form.sumInKernel)
    sumSharesOfGroup();
  if (form.atomicDq)
    storeKeyTerms(loop.getResult(2));
  finishBackwardKernel(b, func);
  return func;
}

gpu::GPUFuncOp SinkBwdDkdvBuilder::createFunction() {
  MemRefType gradients = form.kvAccumulate ? layout.kvAcc
                         : form.shares     ? layout.shares
                                           : layout.kv;
  SmallVector<Type> argTypes = {layout.q,     layout.kv, layout.kv, layout.q,
                                layout.stats, gradients, gradients};
  if (form.atomicDq)
    argTypes.append({layout.qAcc, layout.keyTerms});
  if (form.sumInKernel)
    argTypes.append({layout.kv, layout.kv, layout.shareCounts});
  layout.appendSequenceArgs(argTypes);
  gpu::GPUFuncOp func = createBackwardKernel(b, "sink_bwd_dkdv", argTypes);
  if (form.dkdvShared()) {
    setSharedTileBounds(func, form.dkdvWarpgroups);
  } else if (form.threeBlocksPerSm) {
    func->setAttr("nvvm.maxntid", b.getDenseI32ArrayAttr({128, 1, 1}));
    func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(3));
  }
  auto args = func.getArguments();
  Q = args[0], K = args[1], V = args[2], dO = args[3], Stats = args[4],
  dK = args[5], dV = args[6];
  unsigned next = 7;
  if (form.atomicDq)
    dQaccum = args[next++], keyTermsOut = args[next++];
  if (form.sumInKernel)
    dKout = args[next++], dVout = args[next++], counts = args[next++];
  trailing = layout.trailingArgs(args, next);
  return func;
}

/// The warpgroup's 64 keys from n0, or (shared tiles) a block of 64·N keys
/// from nBlock whose warpgroups read their 64 keys of the K and V tiles
/// through views. Everything per key (the mask, the stores) is the
/// warpgroup's; the query range and the liveness test are the block's: a
/// warpgroup's keys may see fewer query blocks than the block loops over,
/// and there its probabilities are all masked to 0, which adds exact zeros
/// to its dK and dV.
void SinkBwdDkdvBuilder::buildKeys() {
  if (!form.dkdvShared()) {
    n0 = arith::MulIOp::create(b, kb, c.c64);
  } else {
    Value blockKeyCount = constantIndex(b, blockKeys());
    nBlock = arith::MulIOp::create(b, kb, blockKeyCount);
    // --dq-split deferred slices tiles by the warpgroup: the op is what
    // tile-thread-sync recognises such slices by.
    wg = form.dqSplitDeferred ? Value(tile::WarpgroupIdOp::create(b))
                              : buildWarpgroupIndex(b);
    wgKey = arith::MulIOp::create(b, wg, c.c64);
    n0 = arith::AddIOp::create(b, nBlock, wgKey);
    blockLastKeyOffset = constantIndex(b, blockKeys() - 1);
    kRowBlock = arith::AddIOp::create(b, sequence.kStart, nBlock);
  }
  if (form.kvInRegisters)
    loadKeysAndValuesIntoRegisters();
}

/// The split's K and V rows as wgmma A fragments (SinkBwdForm::
/// kvInRegisters), read from global memory before the loop (their TMA
/// tiles stay for dQ's share), so that Sᵀ = K_w Qᵀ and dPᵀ = V_w dOᵀ read
/// only Q and dO from shared memory. Rows are clamped to the buffer's
/// last: keys past the sequence's end read some other key, which the mask
/// removes (every block with keys past the end is masked).
void SinkBwdDkdvBuilder::loadKeysAndValuesIntoRegisters() {
  Value lastRow =
      layout.runTimeShapes
          ? Value(arith::SubIOp::create(b, memref::DimOp::create(b, K, c.c0),
                                        c.c1))
          : constantIndex(b, (shape.varlen() ? shape.tokensKv() : shape.seqKv) -
                                 1);
  Value firstRow = arith::AddIOp::create(b, sequence.kStart, n0);
  auto rowsOf = [&](Value buffer) {
    return buildMap(
        b, gradientType(), {}, [&](ValueRange idx, ValueRange) -> Value {
          Value raw = arith::AddIOp::create(b, firstRow, idx[0]);
          Value kr = arith::MinUIOp::create(b, raw, lastRow);
          Value col = arith::AddIOp::create(b, sequence.kvHeadColumn, idx[1]);
          return memref::LoadOp::create(
              b, buffer, layout.kvElementAt(sequence, kr, idx[1], col));
        });
  };
  kRegisters = rowsOf(K);
  vRegisters = rowsOf(V);
}

void SinkBwdDkdvBuilder::allocateTiles() {
  const int64_t d = shape.headDim;
  sK = allocShared(b, getSharedMemRefType({blockKeys(), d}, element));
  sV = allocShared(b, getSharedMemRefType({blockKeys(), d}, element));
  sQ = allocShared(b, getSharedMemRefType({kBlock, d}, element));
  sdO = allocShared(b, getSharedMemRefType({kBlock, d}, element));
  sStats =
      allocShared(b, getSharedMemRefType({form.statsRows, kBlock}, f32Type(b)));
  kRow = arith::AddIOp::create(b, sequence.kStart, n0);
  Value blockRow = form.dkdvShared() ? kRowBlock : kRow;
  buildLoadTile(b, K, layout.kvTile(sequence, blockRow, c.c0), sK);
  buildLoadTile(b, V, layout.kvTile(sequence, blockRow, c.c0), sV);
  if (form.dkdvShared()) {
    sKw = buildSubView(b, sK, {wgKey, b.getIndexAttr(0)}, {kBlock, d});
    sVw = buildSubView(b, sV, {wgKey, b.getIndexAttr(0)}, {kBlock, d});
  }
  // The shared-tile warpgroups take turns for their first GEMM of an
  // iteration, so that they do not run their maps and GEMMs in step (not
  // the split's: its warpgroups meet at dQ's barrier or never wait).
  if (form.dkdvPingPong)
    pingPong = PingPong::build(b, wg, form.dkdvWarpgroups);
}

/// The query blocks [loQ, hiBlocks) whose rows attend a key of the block:
/// i + past >= first key (causal) and, with a window, i + past < last key
/// + W; none for blocks past the end of their sequence (varlen).
void SinkBwdDkdvBuilder::buildQueryBlockRange() {
  Value firstKey = form.dkdvShared() ? nBlock : n0;
  Value lastKeyOffset = form.dkdvShared() ? blockLastKeyOffset : c.c63;
  Value firstRowRaw = arith::SubIOp::create(b, firstKey, sequence.past);
  Value firstRow = arith::MaxSIOp::create(b, firstRowRaw, c.c0);
  loQ = arith::DivUIOp::create(b, firstRow, c.c64);
  Value endRowBlock = arith::AddIOp::create(b, firstRowRaw, lastKeyOffset);
  Value endRowWindow = arith::AddIOp::create(b, endRowBlock, c.window);
  Value endRowPos = arith::MaxSIOp::create(b, endRowWindow, c.c0);
  Value endRowIn = arith::MinSIOp::create(b, endRowPos, sequence.seqQ);
  Value endRow =
      arith::SelectOp::create(b, c.hasWindow, endRowIn, sequence.seqQ);
  Value hiQ = arith::CeilDivUIOp::create(b, endRow, c.c64);
  Value hiQLo = arith::MaxSIOp::create(b, hiQ, loQ);
  live = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, firstKey,
                               sequence.seqKv);
  hiBlocks = arith::SelectOp::create(b, live, hiQLo, loQ);
}

/// --dq atomic: the two fp32 dQ tiles the query blocks alternate, so that a
/// store does not wait for its own TMA reduce-add to read its tile
/// (`pending = 1`: it waits for the previous block's, long done).
void SinkBwdDkdvBuilder::allocateDqTiles() {
  sdQ2 = allocShared(
      b, getSharedMemRefType({2, kBlock, shape.headDim}, f32Type(b)));
}

/// --dq atomic: the record's row of sink weights and the keys' sink terms.
void SinkBwdDkdvBuilder::defineSinkTermValues() {
  cTwo = constantIndex(b, 2);
  cWeightRow = constantIndex(b, 2);
  termZero = tile::FillOp::create(b, rowPartsType(), c.zero);
}

/// The columns split: the block's dSᵀ tile with each warpgroup's rows a
/// view, and the warpgroup's panel of K.
void SinkBwdDkdvBuilder::prepareDsTile() {
  sdS = allocShared(b, getSharedMemRefType({blockKeys(), kBlock}, element));
  sdSw = buildSubView(b, sdS, {wgKey, b.getIndexAttr(0)}, {kBlock, kBlock});
  Value panelColumns = constantIndex(b, panel());
  wgCol = arith::MulIOp::create(b, wg, panelColumns);
  sZeroPanel = tile::FillOp::create(b, panelType(), c.zero);
  sKd = buildSubView(b, sK, {b.getIndexAttr(0), wgCol}, {blockKeys(), panel()});
}

/// --dq-split deferred: dSᵀ goes to a ring of two slots (query block
/// `loQ + it` in slot it % 2, both warpgroups' rows), which the kernel
/// orders itself (tile.mbarrier_ordered) with four mbarriers of 256
/// arrivals: FULL[s] (s = 0, 1), the rows are in slot s; EMPTY[s] (2 + s),
/// both warpgroups' dQ GEMMs have read them. Slot 1 starts zeroed and full
/// (a virtual block before the first) and slot 0 empty, so that both waits
/// of iteration `it` take parity (it / 2) % 2. Each warpgroup's two fp32
/// tiles for its panel of dQ's share are its slice (tile.warpgroup_id): it
/// stores and adds them by itself.
void SinkBwdDkdvBuilder::prepareDsRing() {
  sdS2 = allocShared(b, getSharedMemRefType({2, blockKeys(), kBlock}, element));
  sdS2.getDefiningOp()->setAttr(tile::TileDialect::kMbarrierOrderedAttrName,
                                b.getUnitAttr());
  dsBars = tile::AllocBarrierOp::create(
      b, tile::BarrierArrayType::get(b.getContext(), 4),
      ArrayRef<int64_t>{256, 256, 256, 256});
  Value dsZero = tile::CastOp::create(b, probabilitiesType(), sZero);
  Value virtualSlot = buildSubView(
      b, sdS2, {b.getIndexAttr(1), wgKey, b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(kBlock), b.getIndexAttr(kBlock)},
      getSharedViewType({kBlock, kBlock}, element, {kBlock, 1}));
  tile::StoreOp::create(b, dsZero, virtualSlot, ValueRange{c.c0, c.c0});
  tile::MBarrierArriveOp::create(b, dsBars, c.c1);
  tile::MBarrierArriveOp::create(b, dsBars, cTwo);
  Value panelColumns = constantIndex(b, panel());
  wgCol = arith::MulIOp::create(b, wg, panelColumns);
  Value firstColumn =
      shape.layout == rt::AttentionLayout::BHSD ? c.c0 : sequence.headColumn;
  dqPanelColumn = arith::AddIOp::create(b, firstColumn, wgCol);
  sZeroPanel = tile::FillOp::create(b, panelType(), c.zero);
  sKd = buildSubView(b, sK, {b.getIndexAttr(0), wgCol}, {blockKeys(), panel()});
  Value sdQp =
      allocShared(b, getSharedMemRefType({2, 2, kBlock, panel()}, f32Type(b)));
  sdQpw = buildSubView(
      b, sdQp, {wg, b.getIndexAttr(0), b.getIndexAttr(0), b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(2), b.getIndexAttr(kBlock),
       b.getIndexAttr(panel())},
      getSharedViewType({2, kBlock, panel()}, f32Type(b),
                        {kBlock * panel(), panel(), 1}));
}

scf::ForOp SinkBwdDkdvBuilder::buildLoop() {
  SmallVector<Value> inits = {accZero, accZero};
  if (form.atomicDq)
    inits.push_back(termZero);
  return buildPipelinedLoop(
      b, loQ, hiBlocks, c.c1, problem.config.stages, inits,
      [&](Value qBlock, ValueRange iter) -> SmallVector<Value> {
        Value dk = iter[0], dv = iter[1];
        loadQueryBlock(qBlock);
        if (pingPong)
          pingPong->waitTurn(b);
        Value sT = issueFirstGemms();
        decideMask();
        Value pT = probabilities(sT);
        Value pT16 = tile::CastOp::create(b, probabilitiesType(), pT);
        Value dpT = issueSecondGemms(pT16, dv);
        Value dsT, termNew;
        if (form.atomicDq)
          std::tie(termNew, dsT) = sinkTermsAndDs(pT, dpT, iter[2]);
        else
          dsT = dsOf(pT, dpT);
        Value dsT16 = tile::CastOp::create(b, probabilitiesType(), dsT);
        auto [dkNew, dvNew] = form.dqSplitDeferred
                                  ? dkAndDeferredDqShare(dsT16, dk, qBlock)
                              : form.atomicDq ? dkAndDqShare(dsT16, dk, qBlock)
                                              : dkOnly(dsT16, dk);
        if (form.atomicDq)
          return {dkNew, dvNew, termNew};
        return {dkNew, dvNew};
      });
}

/// The query block's Q and dO tiles and its record of -LSE·log2(e), Delta
/// (and the sink weights) per row.
void SinkBwdDkdvBuilder::loadQueryBlock(Value qBlock) {
  m0 = arith::MulIOp::create(b, qBlock, c.c64);
  qRow = arith::AddIOp::create(b, sequence.qStart, m0);
  buildLoadTile(b, Q, layout.qTile(sequence, qRow, c.c0), sQ);
  buildLoadTile(b, dO, layout.qTile(sequence, qRow, c.c0), sdO);
  buildLoadTile(b, Stats, {sequence.batch, sequence.head, qBlock, c.c0, c.c0},
                sStats);
}

/// Sᵀ = K Qᵀ, with early dPᵀ also dPᵀ = V dOᵀ issued with it, so that
/// dPᵀ's wgmma runs under the exponentials and dV's under dSᵀ's map. Early
/// dPᵀ keeps its accumulator live across the exponentials, so the split at
/// D 128, near the register limit, issues dPᵀ after them.
Value SinkBwdDkdvBuilder::issueFirstGemms() {
  Value keys = form.kvInRegisters ? kRegisters : form.dkdvShared() ? sKw : sK;
  Value values = form.kvInRegisters ? vRegisters : form.dkdvShared() ? sVw : sV;
  if (!form.earlyDp) {
    Value sT = tile::GemmOp::create(b, keys, sQ, sZero, /*transpose_a=*/false,
                                    /*transpose_b=*/true);
    if (pingPong)
      pingPong->passTurn(b);
    return sT;
  }
  Value sTAsync =
      tile::GemmOp::create(b, keys, sQ, sZero, /*transpose_a=*/false,
                           /*transpose_b=*/true, /*async=*/true);
  dpTAsync = tile::GemmOp::create(b, values, sdO, sZero, /*transpose_a=*/false,
                                  /*transpose_b=*/true, /*async=*/true);
  if (pingPong)
    pingPong->passTurn(b);
  return buildGemmWait(b, sTAsync, 1);
}

/// Only blocks on the diagonal, at the window's edge or with rows past the
/// sequence's end need the per-element mask: every other block keeps every
/// element of its rows.
void SinkBwdDkdvBuilder::decideMask() {
  Value rowsFirstPos = arith::AddIOp::create(b, m0, sequence.past);
  Value blockLastRow = arith::AddIOp::create(b, m0, c.c63);
  Value rowsPastEnd = arith::CmpIOp::create(b, arith::CmpIPredicate::sge,
                                            blockLastRow, sequence.seqQ);
  Value crossesOrEdge = buildBlockMaskDecision(
      b, n0, c.c63, rowsFirstPos,
      [&]() -> Value { return arith::AddIOp::create(b, rowsFirstPos, c.c63); },
      c.window, c.hasWindow);
  needsMask = arith::OrIOp::create(b, crossesOrEdge, rowsPastEnd);
  distanceBase = arith::SubIOp::create(b, rowsFirstPos, n0);
  Value rowsLeft = arith::SubIOp::create(b, sequence.seqQ, m0);
  rowsLeft32 = arith::IndexCastOp::create(b, b.getI32Type(), rowsLeft);
}

/// Pᵀ = exp2(Sᵀ·scale·log2(e) - LSE·log2(e)), transposed (key jj, query
/// ii; -LSE·log2(e) per column from the record); rows past the end are
/// masked too: ii < seqQ - m0, positive in every block the loop visits.
Value SinkBwdDkdvBuilder::probabilities(Value sT) {
  return buildBlockMaskedMap(
      b, scoresType(), needsMask, {sT}, c.zero,
      [&](ValueRange idx, ValueRange) -> Value {
        Value jj = idx[0], ii = idx[1];
        Value offset = arith::SubIOp::create(b, ii, jj);
        Value keepNear =
            buildKeepByDistance(b, distanceBase, offset, c.window32);
        Value ii32 = arith::IndexCastOp::create(b, b.getI32Type(), ii);
        Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, ii32,
                                             rowsLeft32);
        return arith::AndIOp::create(b, keepNear, inside);
      },
      [&](ValueRange idx, ValueRange x) -> Value {
        Value negLse2 = memref::LoadOp::create(b, sStats, {c.c0, idx[1]});
        Value y = math::FmaOp::create(b, x[0], c.scaleLog2, negLse2);
        return math::Exp2Op::create(b, y);
      });
}

/// dV += Pᵀ dO (async) and dPᵀ: with late dPᵀ issued before dV, so that
/// dV's wgmma still runs under dSᵀ's map.
Value SinkBwdDkdvBuilder::issueSecondGemms(Value pT16, Value dv) {
  if (!form.earlyDp) {
    Value values = form.kvInRegisters  ? vRegisters
                   : form.dkdvShared() ? sVw
                                       : sV;
    dpTAsync = tile::GemmOp::create(b, values, sdO, sZero,
                                    /*transpose_a=*/false,
                                    /*transpose_b=*/true, /*async=*/true);
  }
  dvAsync = tile::GemmOp::create(b, pT16, sdO, dv, /*transpose_a=*/false,
                                 /*transpose_b=*/false, /*async=*/true);
  return buildGemmWait(b, dpTAsync, 1);
}

/// dSᵀ = Pᵀ ⊙ (dPᵀ - Delta), Delta per column from the record.
Value SinkBwdDkdvBuilder::dsOf(Value pT, Value dpT) {
  return buildMap(
      b, scoresType(), {pT, dpT}, [&](ValueRange idx, ValueRange x) -> Value {
        Value delta = memref::LoadOp::create(b, sStats, {c.c1, idx[1]});
        Value d = arith::SubFOp::create(b, x[1], delta);
        return arith::MulFOp::create(b, x[0], d);
      });
}

/// --dq atomic: the keys' sink terms, for key j -Σ_i w_i P_ij dP_ij over
/// the block's query rows (w_i = exp(sink - LSE_i), the record's third
/// row), kept as per-thread partial sums across the loop and reduced to the
/// keys after it; dSᵀ from the same P ⊙ dP, Pᵀ ⊙ dPᵀ - Pᵀ · Delta in one
/// FMA. Returns the new partial sums and dSᵀ.
std::pair<Value, Value> SinkBwdDkdvBuilder::sinkTermsAndDs(Value pT, Value dpT,
                                                           Value term) {
  Value pdpT = buildMap(b, scoresType(), {pT, dpT},
                        [&](ValueRange, ValueRange x) -> Value {
                          return arith::MulFOp::create(b, x[0], x[1]);
                        });
  Value weighted = buildMap(
      b, scoresType(), {pdpT}, [&](ValueRange idx, ValueRange x) -> Value {
        Value w = memref::LoadOp::create(b, sStats, {cWeightRow, idx[1]});
        return arith::MulFOp::create(b, x[0], w);
      });
  Value part = tile::PartialReduceOp::create(b, rowPartsType(),
                                             tile::ReduceKind::sum, weighted);
  Value termNew = buildMap(b, rowPartsType(), {term, part},
                           [&](ValueRange, ValueRange x) -> Value {
                             return arith::SubFOp::create(b, x[0], x[1]);
                           });
  Value dsT = buildMap(
      b, scoresType(), {pT, pdpT}, [&](ValueRange idx, ValueRange x) -> Value {
        Value delta = memref::LoadOp::create(b, sStats, {c.c1, idx[1]});
        Value negDelta = arith::NegFOp::create(b, delta);
        return math::FmaOp::create(b, x[0], negDelta, x[1]);
      });
  return {termNew, dsT};
}

/// --dq separate: dK += dSᵀ Q, then dV's wait.
std::pair<Value, Value> SinkBwdDkdvBuilder::dkOnly(Value dsT16, Value dk) {
  Value dkNew = tile::GemmOp::create(b, dsT16, sQ, dk);
  return {dkNew, buildGemmWait(b, dvAsync, 0)};
}

/// The columns split: dK and dQ's share of the block's keys, dS K. Each
/// warpgroup stores its rows of the block's dSᵀ and computes one panel of
/// D / 2 columns of the share over all the block's keys (dQ's GEMM reads
/// dSᵀ transposed), into its half of the block's fp32 dQ tile, which the
/// block adds once. dQ's GEMM is issued before dK's and waited for alone,
/// so that the share's store and reduce-add run under dK's wgmma.
std::pair<Value, Value> SinkBwdDkdvBuilder::dkAndDqShare(Value dsT16, Value dk,
                                                         Value qBlock) {
  tile::StoreOp::create(b, dsT16, sdSw, ValueRange{c.c0, c.c0});
  Value dqAsync =
      tile::GemmOp::create(b, sdS, sKd, sZeroPanel, /*transpose_a=*/true,
                           /*transpose_b=*/false, /*async=*/true);
  Value dkAsync = tile::GemmOp::create(b, dsT16, sQ, dk, /*transpose_a=*/false,
                                       /*transpose_b=*/false, /*async=*/true);
  Value dvNew = buildGemmWait(b, dvAsync, 2);
  Value dqPart = buildGemmWait(b, dqAsync, 1);
  Value parity = arith::RemUIOp::create(b, qBlock, cTwo);
  Value sdQ = buildSubView(b, sdQ2, {parity, b.getIndexAttr(0), b.getIndexAttr(0)},
                        {b.getIndexAttr(1), b.getIndexAttr(kBlock),
                         b.getIndexAttr(shape.headDim)},
                        getSharedViewType({kBlock, shape.headDim}, f32Type(b),
                                          {shape.headDim, 1}));
  tile::StoreOp::create(b, dqPart, sdQ, ValueRange{c.c0, wgCol});
  // Varlen: TMA adds into the whole buffer; the rows of a block past its
  // sequence's end add zeros (their dS is 0) to the next sequence's.
  tile::CopyOp::create(
      b, sdQ, ValueRange(), dQaccum, layout.qTile(sequence, qRow, c.c0),
      /*engine=*/nullptr, /*add=*/true, b.getI64IntegerAttr(1));
  return {buildGemmWait(b, dkAsync, 0), dvNew};
}

/// --dq-split deferred: dK, and the warpgroup's panel of the previous
/// query block's dQ share. It waits for the other warpgroup's rows of the
/// previous block (FULL[1 - slot]) and issues that GEMM first, then waits
/// until slot `it % 2` is free, stores its rows of this block's dSᵀ there
/// and arrives on FULL, and issues dK; once the dQ GEMM is done it arrives
/// on EMPTY, and its fp32 panel's store and reduce-add (none for the
/// virtual block) run under dK's wgmma. The warpgroups never wait at a
/// common barrier, each only for the other's previous iteration.
std::pair<Value, Value>
SinkBwdDkdvBuilder::dkAndDeferredDqShare(Value dsT16, Value dk, Value qBlock) {
  Value it = arith::SubIOp::create(b, qBlock, loQ);
  auto [parity, slot, prevSlot] = dsRingPosition(it);
  Value sdSPrev = waitForDsSlot(prevSlot, parity);
  Value dqAsync =
      tile::GemmOp::create(b, sdSPrev, sKd, sZeroPanel, /*transpose_a=*/true,
                           /*transpose_b=*/false, /*async=*/true);
  Value emptySlot = arith::AddIOp::create(b, slot, cTwo);
  tile::MBarrierWaitParityOp::create(b, dsBars, emptySlot, parity);
  Value rows = buildSubView(
      b, sdS2, {slot, wgKey, b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(kBlock), b.getIndexAttr(kBlock)},
      getSharedViewType({kBlock, kBlock}, element, {kBlock, 1}));
  tile::StoreOp::create(b, dsT16, rows, ValueRange{c.c0, c.c0});
  tile::MBarrierArriveOp::create(b, dsBars, slot);
  Value dkAsync = tile::GemmOp::create(b, dsT16, sQ, dk, /*transpose_a=*/false,
                                       /*transpose_b=*/false, /*async=*/true);
  Value dvNew = buildGemmWait(b, dvAsync, 2);
  Value dqPart = buildGemmWait(b, dqAsync, 1);
  Value emptyPrev = arith::AddIOp::create(b, prevSlot, cTwo);
  tile::MBarrierArriveOp::create(b, dsBars, emptyPrev);
  Value mPrev = arith::SubIOp::create(b, m0, c.c64);
  Value hasPrev =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ne, qBlock, loQ);
  addDqPanel(dqPart, slot, mPrev, hasPrev, /*pending=*/true);
  return {buildGemmWait(b, dkAsync, 0), dvNew};
}

/// --dq-split deferred: the ring after `count` query blocks: the slot the
/// next block's rows go to, the other (the previous block's), and the
/// parity of both slots' next waits.
SinkBwdDkdvBuilder::DsRingPosition
SinkBwdDkdvBuilder::dsRingPosition(Value count) {
  Value pairs = arith::DivUIOp::create(b, count, cTwo);
  Value parity = arith::RemUIOp::create(b, pairs, cTwo);
  Value slot = arith::RemUIOp::create(b, count, cTwo);
  Value otherSlot = arith::SubIOp::create(b, c.c1, slot);
  return {parity, slot, otherSlot};
}

/// --dq-split deferred: ring slot `slot` (both warpgroups' rows) once it
/// is full at `parity`.
Value SinkBwdDkdvBuilder::waitForDsSlot(Value slot, Value parity) {
  tile::MBarrierWaitParityOp::create(b, dsBars, slot, parity);
  return buildSubView(
      b, sdS2, {slot, b.getIndexAttr(0), b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(blockKeys()), b.getIndexAttr(kBlock)},
      getSharedViewType({blockKeys(), kBlock}, element, {kBlock, 1}));
}

/// --dq-split deferred: the warpgroup's store of its panel `part` of dQ's
/// share into its fp32 tile `slot` and the tile's reduce-add into the rows
/// of the query block at `rowOffset` and the warpgroup's columns, when
/// `condition` holds: not for the virtual block before the first (its
/// share is 0, and its rows may lie before the tensor, where a TMA
/// reduce-add faults), nor after a loop of no iterations. `pending`: the
/// loop's stores go on reading (two tiles alternating).
void SinkBwdDkdvBuilder::addDqPanel(Value part, Value slot, Value rowOffset,
                                    Value condition, bool pending) {
  Value tilePanel = buildSubView(
      b, sdQpw, {slot, b.getIndexAttr(0), b.getIndexAttr(0)},
      {b.getIndexAttr(1), b.getIndexAttr(kBlock), b.getIndexAttr(panel())},
      getSharedViewType({kBlock, panel()}, f32Type(b), {panel(), 1}));
  Value row = arith::AddIOp::create(b, sequence.qStart, rowOffset);
  buildIfThen(b, condition, [&] {
    tile::StoreOp::create(b, part, tilePanel, ValueRange{c.c0, c.c0});
    tile::CopyOp::create(
        b, tilePanel, ValueRange(), dQaccum,
        layout.elementAt(sequence, row, dqPanelColumn, dqPanelColumn),
        /*engine=*/nullptr, /*add=*/true,
        pending ? b.getI64IntegerAttr(1) : IntegerAttr());
  });
}

/// --dq-split deferred, after the loop: the last query block's share (in
/// slot (n + 1) % 2 after n iterations, full at parity (n / 2) % 2), added
/// like the loop's (none after a loop of no iterations).
void SinkBwdDkdvBuilder::addLastDeferredDqShare() {
  Value iterations = arith::SubIOp::create(b, hiBlocks, loQ);
  auto [parity, tileSlot, lastSlot] = dsRingPosition(iterations);
  Value sdSLast = waitForDsSlot(lastSlot, parity);
  Value part =
      tile::GemmOp::create(b, sdSLast, sKd, sZeroPanel, /*transpose_a=*/true);
  Value lastBlock = arith::SubIOp::create(b, hiBlocks, c.c1);
  Value mLast = arith::MulIOp::create(b, lastBlock, c.c64);
  Value hasLast =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ne, iterations, c.c0);
  addDqPanel(part, tileSlot, mLast, hasLast, /*pending=*/false);
}

/// dK = scale · Σ dSᵀ Q in fp32, for GQA's shares and sums.
Value SinkBwdDkdvBuilder::scaledDk(Value dkSum) {
  return buildMap(b, accType(), {dkSum},
                  [&](ValueRange, ValueRange x) -> Value {
                    return arith::MulFOp::create(b, x[0], c.scale);
                  });
}

/// MHA's dK and dV, rounded: where a tensor map clips the tile (BHSD, BSHD)
/// through the K and V tiles and one TMA store each, whole lines instead of
/// 2-byte elements 8 rows apart; from registers where the K/V tiles hold
/// more keys than one warpgroup's fragment covers (a fragment's store into
/// a swizzled tile must cover it), and through views that end with the
/// sequence (varlen).
void SinkBwdDkdvBuilder::storeGradients(Value dkSum, Value dvSum) {
  if (form.kvAccumulate)
    return storeKvAccumulators(scaledDk(dkSum), dvSum);
  if (form.shares)
    return storeShares(scaledDk(dkSum), dvSum);
  Value dk = buildMap(b, gradientType(), {dkSum},
                      [&](ValueRange, ValueRange x) -> Value {
                        Value y = arith::MulFOp::create(b, x[0], c.scale);
                        return arith::TruncFOp::create(b, element, y);
                      });
  Value dv = tile::CastOp::create(b, gradientType(), dvSum);
  if (layout.varlen()) {
    for (auto [gradient, out] : {std::pair{dk, dK}, std::pair{dv, dV}}) {
      Value inSequence =
          buildSequenceView(b, out, 0, sequence.kStart, sequence.seqKv);
      tile::StoreOp::create(b, gradient, inSequence,
                            ValueRange{n0, sequence.kvHeadColumn});
    }
    return;
  }
  if (form.dkdvShared()) {
    tile::StoreOp::create(b, dk, dK, layout.kvTile(sequence, kRow, c.c0));
    tile::StoreOp::create(b, dv, dV, layout.kvTile(sequence, kRow, c.c0));
    return;
  }
  tile::StoreOp::create(b, dk, sK, ValueRange{c.c0, c.c0});
  buildStoreTile(b, sK, dK, layout.kvTile(sequence, kRow, c.c0));
  tile::StoreOp::create(b, dv, sV, ValueRange{c.c0, c.c0});
  buildStoreTile(b, sV, dV, layout.kvTile(sequence, kRow, c.c0));
}

/// GQA: the query head's fp32 shares of dK and dV, [H, tokens, D].
void SinkBwdDkdvBuilder::storeShares(Value dkSum, Value dvSum) {
  for (auto [share, out] : {std::pair{dkSum, dK}, std::pair{dvSum, dV}}) {
    Value target =
        layout.varlen()
            ? buildSequenceView(b, out, 1, sequence.kStart, sequence.seqKv)
            : out;
    tile::StoreOp::create(b, share, target, shareAt(sequence.head, n0, c.c0));
  }
}

/// The split with GQA (SinkBwdForm::kvAccumulate): each warpgroup stores
/// its 64 keys' dK into its half of the block's fp32 dQ tiles (free once
/// the loop's reduce-adds have read them), and the block adds both halves
/// into the kv head's fp32 dK by TMA reduce-add; then dV the same.
/// sink_bwd_dkdv_sum rounds the sums. (Adding the fragments element by
/// element, `tile.store {add}`, was slower.)
void SinkBwdDkdvBuilder::storeKvAccumulators(Value dkSum, Value dvSum) {
  const int64_t d = shape.headDim;
  MemRefType halfType = getSharedViewType({kBlock, d}, f32Type(b), {d, 1});
  auto half = [&](Value index) {
    return buildSubView(
        b, sdQ2, {index, b.getIndexAttr(0), b.getIndexAttr(0)},
        {b.getIndexAttr(1), b.getIndexAttr(kBlock), b.getIndexAttr(d)},
        halfType);
  };
  Value mine = half(wg);
  Value first = half(c.c0);
  Value second = half(c.c1);
  Value firstRow = layout.varlen() ? kRowBlock : nBlock;
  Value secondRow = arith::AddIOp::create(b, firstRow, c.c64);
  auto rowsAt = [&](Value row) { return shareAt(sequence.kvHead, row, c.c0); };
  for (auto [sum, out] : {std::pair{dkSum, dK}, std::pair{dvSum, dV}}) {
    tile::StoreOp::create(b, sum, mine, ValueRange{c.c0, c.c0});
    tile::CopyOp::create(b, first, ValueRange(), out, rowsAt(firstRow),
                         /*engine=*/nullptr, /*add=*/true,
                         /*pending=*/nullptr);
    tile::CopyOp::create(b, second, ValueRange(), out, rowsAt(secondRow),
                         /*engine=*/nullptr, /*add=*/true,
                         /*pending=*/nullptr);
  }
}

/// GQA with one warpgroup: the dK/dV kernel sums the group's shares
/// itself. The last of the group's blocks for one kv head and key block to
/// finish (a counter per sequence, kv head and key block, which the
/// preprocess kernel zeroes) adds the shares in head order, the order of
/// sink_bwd_dkdv_sum: bit-identical results. Without a window those blocks
/// run side by side (grid x: head in the group), so it finds the shares in
/// L2.
void SinkBwdDkdvBuilder::sumSharesOfGroup() {
  Value kvHeads, keyBlockCount, lastShare;
  if (layout.runTimeShapes) {
    kvHeads = kvHeadCount;
    // The grid's key blocks: x with a window, else y.
    keyBlockCount = gpu::GridDimOp::create(
        b, layout.windowed ? gpu::Dimension::x : gpu::Dimension::y);
    Value group32 = arith::IndexCastUIOp::create(b, b.getI32Type(), c.group);
    Value one32 = arith::ConstantIntOp::create(b, b.getI32Type(), 1);
    lastShare = arith::SubIOp::create(b, group32, one32);
  } else {
    kvHeads = constantIndex(b, shape.kvHeads);
    keyBlockCount = constantIndex(b, (shape.seqKv + kBlock - 1) / kBlock);
  }
  Value sequenceHeads = arith::MulIOp::create(b, sequence.batch, kvHeads);
  Value kvHeadIndex = arith::AddIOp::create(b, sequenceHeads, sequence.kvHead);
  Value countRow = arith::MulIOp::create(b, kvHeadIndex, keyBlockCount);
  Value countAt = arith::AddIOp::create(b, countRow, kb);
  if (!lastShare)
    lastShare = arith::ConstantIntOp::create(b, b.getI32Type(), form.group - 1);
  LastArrival arrival = buildLastArrival(b, counts, countAt, lastShare, c.c0);
  Value sumHere = arith::AndIOp::create(b, arrival.isLast, live);
  buildIfThen(b, sumHere, [&] {
    NVVM::MembarOp::create(b, NVVM::MemScopeKindAttr::get(
                                  b.getContext(), NVVM::MemScopeKind::GPU));
    Value step = constantIndex(b, kSumThreads * kSumVector);
    Value tileElements = constantIndex(b, kBlock * shape.headDim);
    Value hFirst = arith::MulIOp::create(b, sequence.kvHead, c.group);
    Value vectorElements = constantIndex(b, kSumVector);
    Value start = arith::MulIOp::create(b, arrival.thread, vectorElements);
    buildForLoop(b, start, tileElements, step,
                 [&](Value e) { sumShareElements(e, hFirst); });
  });
}

/// kSumVector contiguous elements `e` .. of one row of the block's dK and
/// dV: every share's 16 bytes loaded before the first add, added in head
/// order; rows past the sequence read row n0 and are not stored.
void SinkBwdDkdvBuilder::sumShareElements(Value e, Value hFirst) {
  auto vectorType = VectorType::get({kSumVector}, f32Type(b));
  auto roundedType = VectorType::get({kSumVector}, element);
  Value rowInTile = arith::DivUIOp::create(b, e, sequence.headDim);
  Value dd = arith::RemUIOp::create(b, e, sequence.headDim);
  Value nRaw = arith::AddIOp::create(b, n0, rowInTile);
  Value inSequence =
      arith::CmpIOp::create(b, arith::CmpIPredicate::slt, nRaw, sequence.seqKv);
  Value key = arith::SelectOp::create(b, inSequence, nRaw, n0);
  Value kr = arith::AddIOp::create(b, sequence.kStart, key);
  Value col = arith::AddIOp::create(b, sequence.kvHeadColumn, dd);
  Value zeros =
      arith::ConstantOp::create(b, DenseElementsAttr::get(vectorType, 0.0f));
  scf::ForOp sums =
      buildForLoop(b, c.c0, c.group, c.c1, {zeros, zeros},
                   [&](Value g, ValueRange iter) -> SmallVector<Value> {
                     Value gh = arith::AddIOp::create(b, hFirst, g);
                     auto load = [&](Value shares) -> Value {
                       return vector::LoadOp::create(
                           b, Type(vectorType), shares, shareAt(gh, kr, dd),
                           /*nontemporal=*/BoolAttr(), b.getI64IntegerAttr(16));
                     };
                     Value k = load(dK);
                     Value v = load(dV);
                     Value kNext = arith::AddFOp::create(b, iter[0], k);
                     Value vNext = arith::AddFOp::create(b, iter[1], v);
                     return {kNext, vNext};
                   });
  buildIfThen(b, inSequence, [&] {
    Value k16 = arith::TruncFOp::create(b, roundedType, sums.getResult(0));
    Value v16 = arith::TruncFOp::create(b, roundedType, sums.getResult(1));
    for (auto [value, out] : {std::pair{k16, dKout}, std::pair{v16, dVout}})
      vector::StoreOp::create(
          b, value, out, layout.kvElementAt(sequence, kr, dd, col),
          /*nontemporal=*/BoolAttr(), b.getI64IntegerAttr(8));
  });
}

/// --dq atomic: the keys' sink terms from the loop's partial sums.
void SinkBwdDkdvBuilder::storeKeyTerms(Value terms) {
  Value keyTerms =
      tile::ReduceOp::create(b, rowType(), tile::ReduceKind::sum, terms, 1);
  Value target = layout.varlen()
                     ? buildSequenceView(b, keyTermsOut, 1, sequence.kStart,
                                         sequence.seqKv)
                     : keyTermsOut;
  tile::StoreOp::create(b, keyTerms, target, layout.rowAt(sequence, n0));
}

/// An element of the shares (or the split's sums per kv head) of head
/// `head` at token `row`, column `column`.
SmallVector<Value> SinkBwdDkdvBuilder::shareAt(Value head, Value row,
                                               Value column) {
  if (layout.varlen())
    return {head, row, column};
  return {head, sequence.batch, row, column};
}
} // namespace

gpu::GPUFuncOp
sinkattn::kernels::buildSinkBwdDkdv(ImplicitLocOpBuilder &b,
                                    const SinkBwdProblem &problem,
                                    const SinkBwdLayout &layout) {
  return SinkBwdDkdvBuilder(b, problem, layout).build();
}

namespace {
/// sink_bwd_dkdv_sum with run-time shapes (varlen): the shares (or the
/// split's sums) as [heads, TKV, D], dK and dV as [TKV, HK * D] token rows;
/// one thread per element of dK, in the static kernel's order of the sum.
gpu::GPUFuncOp buildDkdvSumForRunTimeShapes(ImplicitLocOpBuilder &b,
                                            const SinkBwdProblem &problem,
                                            const SinkBwdLayout &layout) {
  const SinkBwdForm &form = problem.form;
  MemRefType sharesType = form.kvAccumulate ? layout.kvAcc : layout.shares;
  gpu::GPUFuncOp func = createBackwardKernel(
      b, "sink_bwd_dkdv_sum", {sharesType, sharesType, layout.kv, layout.kv});
  Value dKShares = func.getArgument(0), dVShares = func.getArgument(1);
  Value dK = func.getArgument(2), dV = func.getArgument(3);
  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value threads = constantIndex(b, 256);
  Value zero = constantF32(b, 0.0f);
  Value cD = constantIndex(b, layout.headDim);
  Value tokens = memref::DimOp::create(b, dK, c0);
  Value columns = memref::DimOp::create(b, dK, c1);
  Value count = arith::MulIOp::create(b, tokens, columns);
  Value kvHeads = arith::DivUIOp::create(b, columns, cD);
  // Query heads per kv head in the shares (1 for the split's sums).
  Value sharedHeads = memref::DimOp::create(b, dKShares, c0);
  Value group = form.kvAccumulate
                    ? c1
                    : Value(arith::DivUIOp::create(b, sharedHeads, kvHeads));
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value base = arith::MulIOp::create(b, block, threads);
  Value e = arith::AddIOp::create(b, base, thread);
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e, count);
  buildIfThen(b, inside, [&] {
    // Element e of [TKV, HK, D]: (token·HK + hk)·D + d.
    Value d = arith::RemUIOp::create(b, e, cD);
    Value rows = arith::DivUIOp::create(b, e, cD);
    Value hk = arith::RemUIOp::create(b, rows, kvHeads);
    Value token = arith::DivUIOp::create(b, rows, kvHeads);
    Value hFirst = arith::MulIOp::create(b, hk, group);
    scf::ForOp sums =
        buildForLoop(b, c0, group, c1, {zero, zero},
                     [&](Value g, ValueRange iter) -> SmallVector<Value> {
                       Value head = arith::AddIOp::create(b, hFirst, g);
                       SmallVector<Value, 3> at = {head, token, d};
                       Value k = memref::LoadOp::create(b, dKShares, at);
                       Value v = memref::LoadOp::create(b, dVShares, at);
                       Value kNext = arith::AddFOp::create(b, iter[0], k);
                       Value vNext = arith::AddFOp::create(b, iter[1], v);
                       return {kNext, vNext};
                     });
    Value k16 = arith::TruncFOp::create(b, problem.element, sums.getResult(0));
    Value v16 = arith::TruncFOp::create(b, problem.element, sums.getResult(1));
    Value headColumn = arith::MulIOp::create(b, hk, cD);
    Value column = arith::AddIOp::create(b, headColumn, d);
    memref::StoreOp::create(b, k16, dK, ValueRange{token, column});
    memref::StoreOp::create(b, v16, dV, ValueRange{token, column});
  });
  finishBackwardKernel(b, func);
  return func;
}
} // namespace

/// dK and dV of a kv head from its query heads' fp32 shares, added in head
/// order, one thread per element (the split's sums per kv head are one
/// share: SinkBwdForm::kvAccumulate).
gpu::GPUFuncOp
sinkattn::kernels::buildSinkBwdDkdvSum(ImplicitLocOpBuilder &b,
                                       const SinkBwdProblem &problem,
                                       const SinkBwdLayout &layout) {
  const rt::SinkAttentionShape &shape = problem.shape;
  const SinkBwdForm &form = problem.form;
  if (layout.runTimeShapes)
    return buildDkdvSumForRunTimeShapes(b, problem, layout);
  // The shares' token coordinate: B · SKV, or varlen's packed keys.
  const int64_t tokens = shape.tokensKv();
  const int64_t sharedHeads = form.kvAccumulate ? shape.kvHeads : shape.heads;
  const int64_t sharesPerKvHead = form.kvAccumulate ? 1 : form.group;
  auto sharesType =
      MemRefType::get({sharedHeads * tokens * shape.headDim}, b.getF32Type());
  auto gradientType =
      MemRefType::get({int64_t(shape.kvElements())}, problem.element);
  gpu::GPUFuncOp func = createBackwardKernel(
      b, "sink_bwd_dkdv_sum",
      {sharesType, sharesType, gradientType, gradientType});
  Value dKShares = func.getArgument(0), dVShares = func.getArgument(1);
  Value dK = func.getArgument(2), dV = func.getArgument(3);
  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value threads = constantIndex(b, 256);
  Value zero = constantF32(b, 0.0f);
  Value count = constantIndex(b, shape.kvElements());
  Value cD = constantIndex(b, shape.headDim);
  Value kvHeads = constantIndex(b, shape.kvHeads);
  Value seqKv = constantIndex(b, shape.seqKv);
  Value group = constantIndex(b, sharesPerKvHead);
  // Elements of one query head's share.
  Value slab = constantIndex(b, tokens * shape.headDim);
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value base = arith::MulIOp::create(b, block, threads);
  Value e = arith::AddIOp::create(b, base, thread);
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, e, count);
  buildIfThen(b, inside, [&] {
    Value d = arith::RemUIOp::create(b, e, cD);
    Value rows = arith::DivUIOp::create(b, e, cD);
    // The element's token (b·SKV + position, or the packed token) and kv
    // head: BHSD's element ((b·HK + hk)·SKV + n)·D + d, the others'
    // (token·HK + hk)·D + d.
    Value token, hk;
    if (shape.layout == rt::AttentionLayout::BHSD) {
      Value n = arith::RemUIOp::create(b, rows, seqKv);
      Value bhk = arith::DivUIOp::create(b, rows, seqKv);
      hk = arith::RemUIOp::create(b, bhk, kvHeads);
      Value batch = arith::DivUIOp::create(b, bhk, kvHeads);
      Value batchTokens = arith::MulIOp::create(b, batch, seqKv);
      token = arith::AddIOp::create(b, batchTokens, n);
    } else {
      hk = arith::RemUIOp::create(b, rows, kvHeads);
      token = arith::DivUIOp::create(b, rows, kvHeads);
    }
    Value hFirst = arith::MulIOp::create(b, hk, group);
    Value headStart = arith::MulIOp::create(b, hFirst, slab);
    Value tokenStart = arith::MulIOp::create(b, token, cD);
    Value at0 = arith::AddIOp::create(b, headStart, tokenStart);
    Value first = arith::AddIOp::create(b, at0, d);
    scf::ForOp sums =
        buildForLoop(b, c0, group, c1, {zero, zero},
                     [&](Value g, ValueRange iter) -> SmallVector<Value> {
                       Value offset = arith::MulIOp::create(b, g, slab);
                       Value at = arith::AddIOp::create(b, first, offset);
                       Value k = memref::LoadOp::create(b, dKShares, at);
                       Value v = memref::LoadOp::create(b, dVShares, at);
                       Value kNext = arith::AddFOp::create(b, iter[0], k);
                       Value vNext = arith::AddFOp::create(b, iter[1], v);
                       return {kNext, vNext};
                     });
    Value k16 = arith::TruncFOp::create(b, problem.element, sums.getResult(0));
    Value v16 = arith::TruncFOp::create(b, problem.element, sums.getResult(1));
    memref::StoreOp::create(b, k16, dK, e);
    memref::StoreOp::create(b, v16, dV, e);
  });
  finishBackwardKernel(b, func);
  return func;
}
