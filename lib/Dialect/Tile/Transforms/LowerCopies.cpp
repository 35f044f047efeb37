//===- LowerCopies.cpp - tile.copy / tile.tma_copy to TMA -----------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "Utils.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILELOWERCOPIES
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
/// TMA limits (PTX ISA, cp.async.bulk.tensor; cuTensorMapEncodeTiled).
constexpr int64_t kMaxBoxDim = 256;
constexpr int64_t kBoxInnerBytesMultiple = 16;

/// One TMA transfer of a tile that may need splitting: the shared sub-tile
/// and the global coordinates of its first element.
struct TmaChunk {
  Value shared;
  SmallVector<Value> globalIndices;
};

/// Whether `tile` can be moved by TMA boxes split along its leading
/// dimension; emits the reason on `op` when not.
LogicalResult checkTmaTile(Operation *op, MemRefType tile) {
  ArrayRef<int64_t> shape = tile.getShape();
  int64_t innerBytes = shape.back() * tile.getElementTypeBitWidth() / 8;
  if (innerBytes % kBoxInnerBytesMultiple != 0)
    return op->emitOpError()
           << "cannot use TMA: the tile's innermost dimension spans "
           << innerBytes << " bytes, not a multiple of "
           << kBoxInnerBytesMultiple;
  for (size_t dim = 1; dim < shape.size(); ++dim)
    if (shape[dim] > kMaxBoxDim)
      return op->emitOpError()
             << "cannot use TMA: tile dimension " << dim << " is "
             << shape[dim] << " elements; TMA boxes are at most " << kMaxBoxDim
             << " per dimension and only the leading dimension is split";
  return success();
}

/// Splits `shared` (a row-major tile that passed checkTmaTile) into chunks
/// of at most 256 leading rows, each a contiguous block and one TMA box.
SmallVector<TmaChunk> splitIntoBoxes(RewriterBase &rewriter, Location loc,
                                     Value shared, ValueRange globalIndices) {
  ArrayRef<int64_t> shape = cast<MemRefType>(shared.getType()).getShape();
  if (shape[0] <= kMaxBoxDim)
    return {TmaChunk{shared, llvm::to_vector(globalIndices)}};
  SmallVector<TmaChunk> chunks;
  // The leading tile dimension lines up with this global dimension.
  size_t leading = globalIndices.size() - shape.size();
  for (int64_t row = 0; row < shape[0]; row += kMaxBoxDim) {
    int64_t rows = std::min(kMaxBoxDim, shape[0] - row);
    SmallVector<OpFoldResult> offsets(shape.size(), rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> strides(shape.size(), rewriter.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(rows)};
    offsets[0] = rewriter.getIndexAttr(row);
    for (int64_t dim : shape.drop_front())
      sizes.push_back(rewriter.getIndexAttr(dim));
    Value part = memref::SubViewOp::create(rewriter, loc, shared, offsets,
                                           sizes, strides);
    SmallVector<Value> indices(globalIndices);
    Value offset = arith::ConstantIndexOp::create(rewriter, loc, row);
    indices[leading] =
        arith::AddIOp::create(rewriter, loc, indices[leading], offset);
    chunks.push_back({part, indices});
  }
  return chunks;
}

/// Builds `scf.if (first thread of anchor's role) { body }` at the
/// rewriter's position; with `perWarpgroup`, the first thread of each
/// warpgroup runs the body.
void buildLeaderRegion(RewriterBase &rewriter, Location loc,
                       Operation *anchor, bool perWarpgroup,
                       function_ref<void()> body) {
  Value leader = perWarpgroup
                     ? createWarpgroupLeaderPredicate(rewriter, loc)
                     : createLeaderPredicate(rewriter, loc, anchor);
  auto ifOp = scf::IfOp::create(rewriter, loc, leader, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(&ifOp.getThenRegion().front());
  body();
}

/// Emits the TMA loads of `chunks` on one barrier slot.
void emitLoads(RewriterBase &rewriter, Location loc, Value source,
               ArrayRef<TmaChunk> chunks, Value barriers, Value slot) {
  for (const TmaChunk &chunk : chunks)
    TmaLoadOp::create(rewriter, loc, barriers, slot, source,
                      chunk.globalIndices, chunk.shared,
                      getSwizzleBytes(chunk.shared));
}

/// Whether a synchronous load's barrier phase is not simply the iteration
/// of one loop: it is nested in more than one scf.for, or under another
/// region op (an scf.if), role regions of warp specialization aside (each
/// thread runs those once).
bool needsExecutionCount(Operation *op) {
  int64_t loops = 0;
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<FunctionOpInterface>(parent))
      break;
    if (parent->hasAttr(kThreadBaseAttrName))
      continue;
    if (!isa<scf::ForOp>(parent) || ++loops > 1)
      return true;
  }
  return false;
}

/// The synchronous load protocol of `tile.copy` and `tile.im2col_copy`: a
/// barrier of the copy's own (at the function's start), a sync so earlier
/// readers of the tile are done, one thread arms it with `bytes`, issues the
/// load(s) and arrives, then every thread waits for parity
/// `iteration % 2` of the enclosing loop (0 outside loops), or, for a copy
/// in nested loops or under a condition, `executionCount % 2`).
LogicalResult
lowerSynchronousLoad(Operation *op, int64_t bytes, RewriterBase &rewriter,
                     Value executionCount,
                     function_ref<void(Value barriers, Value slot)> issue) {
  Location loc = op->getLoc();
  auto func = op->getParentOfType<FunctionOpInterface>();
  if (!func || func.isExternal())
    return rewriter.notifyMatchFailure(op, "not inside a function body");
  Value barriers;
  {
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(&func.getFunctionBody().front());
    auto array = AllocBarrierOp::create(
        rewriter, loc, BarrierArrayType::get(op->getContext(), 1),
        rewriter.getDenseI64ArrayAttr({1}));
    // Its phases are counted per execution: multi-versioning must not
    // replace the parity by a loop's iteration.
    if (executionCount)
      array->setAttr(kCountedPhasesAttrName, rewriter.getUnitAttr());
    barriers = array;
  }
  Value slot = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value parity;
  if (executionCount) {
    Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
    parity = arith::RemUIOp::create(rewriter, loc, executionCount, two);
  } else if (auto loop = op->getParentOfType<scf::ForOp>()) {
    Value iteration = createIterationIndex(rewriter, loop);
    Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
    parity = arith::RemUIOp::create(rewriter, loc, iteration, two);
  } else {
    parity = arith::ConstantIndexOp::create(rewriter, loc, 0);
  }
  createRoleSync(rewriter, loc, op);
  buildLeaderRegion(rewriter, loc, op, /*perWarpgroup=*/false, [&] {
    MBarrierExpectTxOp::create(rewriter, loc, barriers, slot, bytes);
    issue(barriers, slot);
    MBarrierArriveOp::create(rewriter, loc, barriers, slot, 1);
  });
  MBarrierWaitParityOp::create(rewriter, loc, barriers, slot, parity);
  rewriter.eraseOp(op);
  return success();
}

/// The threads that share a cp.async copy: how many (a constant when the
/// role or the kernel's known_block_size says, else `gpu.block_dim`) and
/// the executing thread's number among them (x fastest).
struct CopyingThreads {
  std::optional<int64_t> staticCount;
  Value count;
  Value thread;
};

CopyingThreads getCopyingThreads(PatternRewriter &rewriter, Operation *op) {
  Location loc = op->getLoc();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  auto tid = [&](gpu::Dimension dim) -> Value {
    return gpu::ThreadIdOp::create(rewriter, loc, dim);
  };
  ThreadRole role = getThreadRole(op);
  if (role.count != 0)
    return {role.count, c(role.count),
            arith::SubIOp::create(rewriter, loc, tid(gpu::Dimension::x),
                                  c(role.base))};
  auto func = op->getParentOfType<gpu::GPUFuncOp>();
  DenseI32ArrayAttr known = func ? func.getKnownBlockSizeAttr() : nullptr;
  if (known && known.size() == 3) {
    ArrayRef<int32_t> dims = known.asArrayRef();
    Value thread = tid(gpu::Dimension::x);
    if (dims[1] != 1 || dims[2] != 1) {
      // x + X * (y + Y * z)
      Value yz = arith::AddIOp::create(
          rewriter, loc, tid(gpu::Dimension::y),
          arith::MulIOp::create(rewriter, loc, c(dims[1]), tid(gpu::Dimension::z)));
      thread = arith::AddIOp::create(
          rewriter, loc, thread, arith::MulIOp::create(rewriter, loc, c(dims[0]), yz));
    }
    int64_t count = int64_t(dims[0]) * dims[1] * dims[2];
    return {count, c(count), thread};
  }
  auto dim = [&](gpu::Dimension d) -> Value {
    return gpu::BlockDimOp::create(rewriter, loc, d);
  };
  Value dimX = dim(gpu::Dimension::x), dimY = dim(gpu::Dimension::y);
  Value yz = arith::AddIOp::create(
      rewriter, loc, tid(gpu::Dimension::y),
      arith::MulIOp::create(rewriter, loc, dimY, tid(gpu::Dimension::z)));
  Value thread = arith::AddIOp::create(
      rewriter, loc, tid(gpu::Dimension::x),
      arith::MulIOp::create(rewriter, loc, dimX, yz));
  Value count = arith::MulIOp::create(
      rewriter, loc, arith::MulIOp::create(rewriter, loc, dimX, dimY),
      dim(gpu::Dimension::z));
  return {std::nullopt, count, thread};
}

/// The loop over a tile's `chunks` 16-byte chunks that `threads` share
/// (thread t takes chunks t, t + P, ...), with the insertion point left
/// inside it; returns the chunk's number.
Value buildChunkLoop(PatternRewriter &rewriter, Location loc,
                     const CopyingThreads &threads, int64_t chunks) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  if (threads.staticCount) {
    // A constant trip count (unrolled later): rounds of P chunks, the
    // last one guarded when P does not divide the chunk count.
    int64_t count = *threads.staticCount;
    auto loop = scf::ForOp::create(rewriter, loc, c(0),
                                   c(llvm::divideCeil(chunks, count)), c(1));
    rewriter.setInsertionPointToStart(loop.getBody());
    Value chunk = arith::AddIOp::create(
        rewriter, loc, threads.thread,
        arith::MulIOp::create(rewriter, loc, loop.getInductionVar(), c(count)));
    if (chunks % count != 0) {
      Value exists = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ult, chunk, c(chunks));
      auto ifOp = scf::IfOp::create(rewriter, loc, exists, /*withElse=*/false);
      rewriter.setInsertionPointToStart(&ifOp.getThenRegion().front());
    }
    return chunk;
  }
  // The block size is only known at run time: a block-stride loop.
  auto loop = scf::ForOp::create(rewriter, loc, threads.thread, c(chunks),
                                 threads.count);
  rewriter.setInsertionPointToStart(loop.getBody());
  return loop.getInductionVar();
}

/// The tile indices of the first element of chunk `chunk` (row-major).
SmallVector<Value> getChunkTileIndices(PatternRewriter &rewriter, Location loc,
                                       Value chunk, ArrayRef<int64_t> shape,
                                       int64_t chunkElements) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(rewriter, loc, v);
  };
  SmallVector<Value> indices(shape.size());
  Value linear = arith::MulIOp::create(rewriter, loc, chunk, c(chunkElements));
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    indices[d] = arith::RemUIOp::create(rewriter, loc, linear, c(shape[d]));
    linear = arith::DivUIOp::create(rewriter, loc, linear, c(shape[d]));
  }
  return indices;
}

/// Where a chunk at `tileIndices` of a tile copied at `tileStart` of a
/// global memref of sizes `dims` lies: its global indices, and whether
/// they are inside the sizes.
struct ChunkPlace {
  SmallVector<Value> indices;
  Value inside;
};

ChunkPlace placeChunk(PatternRewriter &rewriter, Location loc,
                      ValueRange tileStart, ValueRange tileIndices,
                      ArrayRef<Value> dims) {
  ChunkPlace place{llvm::to_vector(tileStart), Value()};
  size_t lead = tileStart.size() - tileIndices.size();
  for (auto [d, index] : llvm::enumerate(tileIndices))
    place.indices[lead + d] =
        arith::AddIOp::create(rewriter, loc, place.indices[lead + d], index);
  for (auto [index, dim] : llvm::zip(place.indices, dims)) {
    Value below = arith::CmpIOp::create(rewriter, loc,
                                        arith::CmpIPredicate::ult, index, dim);
    place.inside =
        place.inside ? arith::AndIOp::create(rewriter, loc, place.inside, below)
                           .getResult()
                     : below;
  }
  return place;
}

/// Where the element at `tileIndices` of shared tile `tile` lies in its
/// memref: there, or (a 128-byte swizzled 2-D tile) at its swizzled
/// position.
SmallVector<Value> getSwizzledIndices(PatternRewriter &rewriter, Location loc,
                                      Value tile, ValueRange tileIndices) {
  SmallVector<Value> indices(tileIndices);
  if (!getSwizzleBytes(tile))
    return indices;
  auto type = cast<MemRefType>(tile.getType());
  Value cols =
      arith::ConstantIndexOp::create(rewriter, loc, type.getShape()[1]);
  Value offset = createSwizzled128Offset(rewriter, loc, tileIndices[0],
                                         tileIndices[1], type.getShape()[0],
                                         type.getElementTypeBitWidth());
  indices[0] = arith::DivUIOp::create(rewriter, loc, offset, cols);
  indices[1] = arith::RemUIOp::create(rewriter, loc, offset, cols);
  return indices;
}

/// What the op verifier cannot see of a store by 16-byte vectors: that the
/// global view's rows and the column index start 16-byte aligned, and that
/// a swizzled tile is read as the whole tile its swizzle was laid out for.
LogicalResult checkVectorStore(CopyOp op) {
  auto tile = cast<MemRefType>(op.getSource().getType());
  int64_t chunkElements = 16 * 8 / tile.getElementTypeBitWidth();
  if (!hasAlignedRows(op.getDest(), chunkElements))
    return op.emitOpError()
           << "cannot use engine vector: the global view's rows are not "
              "provably "
           << chunkElements
           << "-element (16-byte) aligned (a static layout, or unit-stride "
              "subviews with aligned innermost offsets of an argument whose "
              "run-time strides tile.stride_multiple declares)";
  if (!isProvableMultipleOf(op.getDestIndices().back(), chunkElements))
    return op.emitOpError() << "cannot use engine vector: the column index is "
                               "not a provable multiple of "
                            << chunkElements << " elements (16 bytes)";
  if (!getSwizzleBytes(op.getSource()))
    return success();
  memref::AllocOp alloc = getSharedAllocation(op.getSource());
  if (tile.getRank() != 2 || tile.getElementTypeBitWidth() != 16 ||
      tile.getShape() != alloc.getType().getShape().take_back(2))
    return op.emitOpError()
           << "cannot use engine vector from " << tile
           << ", a view of the swizzled tile " << alloc.getType()
           << ": the 128-byte swizzle is laid out for whole 2-D tiles of "
              "16-bit elements";
  return success();
}

/// `tile.cp_async`: thread `t` of the `P` copying threads moves the 16-byte
/// chunks `t, t + P, ...` of the tile (row-major), each with one
/// `nvgpu.device_async_copy`. Chunks beyond the global tensor copy zero
/// source bytes (zero fill, as TMA) from a clamped, valid address.
struct LowerCpAsync : public OpRewritePattern<CpAsyncOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CpAsyncOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    CopyingThreads threads = getCopyingThreads(rewriter, op);
    MemRefType tile = op.getDest().getType();
    ArrayRef<int64_t> shape = tile.getShape();
    int64_t chunkElements = 16 * 8 / tile.getElementTypeBitWidth();
    int64_t chunks = tile.getNumElements() / chunkElements;
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIndexOp::create(rewriter, loc, v);
    };
    SmallVector<Value> dims = getValueOrCreateConstantIndexOp(
        rewriter, loc, memref::getMixedSizes(rewriter, loc, op.getSource()));

    OpBuilder::InsertionGuard guard(rewriter);
    Value chunk = buildChunkLoop(rewriter, loc, threads, chunks);
    SmallVector<Value> tileIndices =
        getChunkTileIndices(rewriter, loc, chunk, shape, chunkElements);
    // Its global coordinates, whether they are inside the tensor, and how
    // many of its elements are (the innermost dimension may end inside it).
    auto [globalIndices, inside] =
        placeChunk(rewriter, loc, op.getSourceIndices(), tileIndices, dims);
    Value remaining =
        arith::SubIOp::create(rewriter, loc, dims.back(), globalIndices.back());
    Value validElements = arith::SelectOp::create(
        rewriter, loc, inside,
        arith::MinUIOp::create(rewriter, loc, remaining, c(chunkElements)), c(0));
    SmallVector<Value> sourceIndices;
    for (Value index : globalIndices)
      sourceIndices.push_back(
          arith::SelectOp::create(rewriter, loc, inside, index, c(0)));
    SmallVector<Value> destIndices =
        getSwizzledIndices(rewriter, loc, op.getDest(), tileIndices);
    nvgpu::DeviceAsyncCopyOp::create(
        rewriter, loc, nvgpu::DeviceAsyncTokenType::get(op.getContext()),
        op.getDest(), destIndices, op.getSource(), sourceIndices,
        rewriter.getIndexAttr(chunkElements), validElements,
        rewriter.getUnitAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

/// A synchronous cp.async load: earlier readers are done, every thread
/// copies its chunks and waits for them, makes them visible to the async
/// proxy (wgmma, TMA stores read it), and the role syncs.
LogicalResult lowerSynchronousCpAsync(CopyOp op, PatternRewriter &rewriter) {
  Location loc = op.getLoc();
  createRoleSync(rewriter, loc, op);
  CpAsyncOp::create(rewriter, loc, op.getSource(), op.getSourceIndices(),
                    op.getDest());
  NVVM::CpAsyncCommitGroupOp::create(rewriter, loc);
  NVVM::CpAsyncWaitGroupOp::create(rewriter, loc, 0);
  NVVM::FenceProxyOp::create(
      rewriter, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(rewriter.getContext(),
                                 NVVM::SharedSpace::shared_cta));
  createRoleSync(rewriter, loc, op);
  rewriter.eraseOp(op);
  return success();
}

/// The synchronous lowering of an im2col load.
LogicalResult lowerIm2colLoad(Im2colCopyOp op, RewriterBase &rewriter,
                              Value executionCount) {
  return lowerSynchronousLoad(
      op, memrefBytes(op.getDest().getType()), rewriter, executionCount,
      [&](Value barriers, Value slot) {
        TmaIm2colLoadOp::create(rewriter, op.getLoc(), barriers, slot,
                                op.getSource(), op.getSourceIndices(),
                                op.getDest(), op.getOffsets(),
                                op.getLowerAttr(), op.getUpperAttr());
      });
}

/// The synchronous lowering of a TMA tile.copy load.
LogicalResult lowerCopyLoad(CopyOp op, RewriterBase &rewriter,
                            Value executionCount) {
  return lowerSynchronousLoad(
      op, memrefBytes(op.getDest().getType()), rewriter, executionCount,
      [&](Value barriers, Value slot) {
        emitLoads(rewriter, op.getLoc(), op.getSource(),
                  splitIntoBoxes(rewriter, op.getLoc(), op.getDest(),
                                 op.getSourceIndices()),
                  barriers, slot);
      });
}

struct LowerIm2colCopy : public OpRewritePattern<Im2colCopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(Im2colCopyOp op,
                                PatternRewriter &rewriter) const override {
    return lowerIm2colLoad(op, rewriter, Value());
  }
};

struct LowerTmaCopy : public OpRewritePattern<TmaCopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TmaCopyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t bytes = memrefBytes(op.getDest().getType());
    buildLeaderRegion(rewriter, loc, op, /*perWarpgroup=*/false, [&] {
      MBarrierExpectTxOp::create(rewriter, loc, op.getBarriers(),
                                 op.getBarrierIndex(), bytes);
      emitLoads(rewriter, loc, op.getSource(),
                splitIntoBoxes(rewriter, loc, op.getDest(), op.getSourceIndices()),
                op.getBarriers(), op.getBarrierIndex());
    });
    rewriter.eraseOp(op);
    return success();
  }
};

/// The outermost scf.for around `op` inside its warp-specialized role
/// region (a loop around the role regions is every role's: the role's sync
/// after it would count the wrong threads), or null: where a store with
/// `pending` is drained (LowerCopy::drainAfterOutermostLoop).
scf::ForOp outermostLoopInRole(Operation *op) {
  Operation *role = getRoleRegion(op);
  scf::ForOp outermost;
  for (auto loop = op->getParentOfType<scf::ForOp>();
       loop && (!role || role->isProperAncestor(loop));
       loop = loop->getParentOfType<scf::ForOp>())
    outermost = loop;
  return outermost;
}

/// Marks a loop after which stores with `pending` have been awaited
/// (LowerCopy::drainAfterOutermostLoop); removed when the pass ends.
constexpr llvm::StringLiteral kDrainedAttrName = "tile.stores_drained";

struct LowerCopy : public OpRewritePattern<CopyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto sourceType = cast<MemRefType>(op.getSource().getType());
    if (isSharedMemory(sourceType))
      return lowerStore(op, rewriter);
    if (op.getCopyEngine() == CopyEngine::cp_async)
      return lowerSynchronousCpAsync(op, rewriter);
    return lowerCopyLoad(op, rewriter, Value());
  }

  static LogicalResult lowerStore(CopyOp op, PatternRewriter &rewriter) {
    if (op.getCopyEngine() == CopyEngine::vector)
      return lowerVectorStore(op, rewriter);
    Location loc = op.getLoc();
    // A warpgroup's slice of a tile is written by that warpgroup alone and
    // stored by its first thread: the warpgroup syncs, not the role.
    bool warpgroupSlice = getWarpgroupSlice(op.getSource()).has_value();
    auto sync = [&] {
      if (warpgroupSlice)
        createWarpgroupSync(rewriter, loc);
      else
        createRoleSync(rewriter, loc, op);
    };
    // Every thread's writes to the tile are done ...
    sync();
    buildLeaderRegion(rewriter, loc, op, warpgroupSlice, [&] {
      // ... and visible to the copy engine (the async proxy).
      NVVM::FenceProxyOp::create(
          rewriter, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(rewriter.getContext(),
                                     NVVM::SharedSpace::shared_cta));
      for (const TmaChunk &chunk :
           splitIntoBoxes(rewriter, loc, op.getSource(), op.getDestIndices()))
        TmaStoreOp::create(rewriter, loc, chunk.shared, op.getDest(),
                           chunk.globalIndices, getSwizzleBytes(chunk.shared),
                           op.getAdd());
      NVVM::CpAsyncBulkCommitGroupOp::create(rewriter, loc);
      // With `pending = N` the last N stores may go on reading their tiles.
      NVVM::CpAsyncBulkWaitGroupOp::create(
          rewriter, loc,
          rewriter.getI32IntegerAttr(int32_t(op.getPending().value_or(0))),
          rewriter.getUnitAttr());
    });
    // Nobody overwrites a tile before its store has read it. For a store
    // with `pending` (the tiles of the stores the wait covered) that sync
    // is tile-thread-sync's, before the next write to the tile: a barrier
    // the loop has anyway (in the atomic backward, the one before dQ's
    // GEMM reads dSᵀ) then serves, instead of one per store.
    if (op.getPending())
      drainAfterOutermostLoop(op, rewriter);
    else
      sync();
    rewriter.eraseOp(op);
    return success();
  }

  /// A store by the role's threads (checkVectorStore passed): once every
  /// thread's writes to the tile are done, thread t moves chunks t, t + P,
  /// ... of it, each a 16-byte shared load and, where the chunk lies inside
  /// the global view, a 16-byte global store; the role syncs again before
  /// anyone overwrites the tile.
  static LogicalResult lowerVectorStore(CopyOp op, PatternRewriter &rewriter) {
    Location loc = op.getLoc();
    MemRefType tile = op.getSource().getType();
    ArrayRef<int64_t> shape = tile.getShape();
    int64_t chunkElements = 16 * 8 / tile.getElementTypeBitWidth();
    auto chunkType = VectorType::get({chunkElements}, tile.getElementType());
    createRoleSync(rewriter, loc, op);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      CopyingThreads threads = getCopyingThreads(rewriter, op);
      SmallVector<Value> dims = getValueOrCreateConstantIndexOp(
          rewriter, loc, memref::getMixedSizes(rewriter, loc, op.getDest()));
      Value chunk = buildChunkLoop(rewriter, loc, threads,
                                   tile.getNumElements() / chunkElements);
      SmallVector<Value> tileIndices =
          getChunkTileIndices(rewriter, loc, chunk, shape, chunkElements);
      // Whole chunks tile the view's rows (the verifier): a chunk is inside
      // or outside as a whole.
      auto [globalIndices, inside] =
          placeChunk(rewriter, loc, op.getDestIndices(), tileIndices, dims);
      auto guardIf =
          scf::IfOp::create(rewriter, loc, inside, /*withElse=*/false);
      rewriter.setInsertionPointToStart(&guardIf.getThenRegion().front());
      Value value = vector::LoadOp::create(
          rewriter, loc, chunkType, op.getSource(),
          getSwizzledIndices(rewriter, loc, op.getSource(), tileIndices),
          /*nontemporal=*/false, /*alignment=*/llvm::MaybeAlign(16));
      vector::StoreOp::create(rewriter, loc, value, op.getDest(), globalIndices,
                              /*nontemporal=*/false,
                              /*alignment=*/llvm::MaybeAlign(16));
    }
    createRoleSync(rewriter, loc, op);
    rewriter.eraseOp(op);
    return success();
  }

  /// After the outermost scf.for around a store with `pending` inside its
  /// role (outermostLoopInRole; the pass checked there is one), the role's
  /// leader waits until every store has read its tile, and the role syncs:
  /// the tiles may be written again, and the block does not exit (freeing
  /// its shared memory) under a store still reading it. One wait per loop,
  /// however many such stores it holds.
  static void drainAfterOutermostLoop(CopyOp op, PatternRewriter &rewriter) {
    scf::ForOp outermost = outermostLoopInRole(op);
    if (outermost->hasAttr(kDrainedAttrName))
      return;
    rewriter.modifyOpInPlace(outermost, [&] {
      outermost->setAttr(kDrainedAttrName, rewriter.getUnitAttr());
    });
    // Each warpgroup's first thread waits for the stores it issued where
    // the loop stores warpgroup slices; else the role's leader does.
    bool warpgroupStores = false;
    outermost.walk([&](CopyOp copy) {
      warpgroupStores |= copy.getPending() &&
                         getWarpgroupSlice(copy.getSource()).has_value();
    });
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(outermost);
    Location loc = op.getLoc();
    buildLeaderRegion(rewriter, loc, op, warpgroupStores, [&] {
      NVVM::CpAsyncBulkWaitGroupOp::create(rewriter, loc,
                                           rewriter.getI32IntegerAttr(0),
                                           rewriter.getUnitAttr());
    });
    createRoleSync(rewriter, loc, op);
  }
};

struct TileLowerCopiesPass
    : public sinkattn::tile::impl::TileLowerCopiesBase<TileLowerCopiesPass> {
  void runOnOperation() override {
    // Reject tiles TMA cannot move first, so the patterns always apply.
    bool invalid = false;
    getOperation()->walk([&](Operation *op) {
      // cp.async writes a swizzled tile through the 2-D, 16-bit 128B
      // pattern (as TMA and wgmma see it).
      Value cpAsyncTile;
      if (auto cpAsync = dyn_cast<CpAsyncOp>(op))
        cpAsyncTile = cpAsync.getDest();
      if (auto copy = dyn_cast<CopyOp>(op);
          copy && copy.getCopyEngine() == CopyEngine::cp_async)
        cpAsyncTile = copy.getDest();
      if (cpAsyncTile) {
        auto type = cast<MemRefType>(cpAsyncTile.getType());
        if (getSwizzleBytes(cpAsyncTile) &&
            (type.getRank() != 2 || type.getElementTypeBitWidth() != 16)) {
          op->emitOpError() << "cannot use cp.async into the swizzled tile "
                            << type
                            << ": the 128-byte swizzle is laid out for 2-D "
                               "tiles of 16-bit elements";
          invalid = true;
        }
        return;
      }
      if (auto copy = dyn_cast<CopyOp>(op);
          copy && copy.getCopyEngine() == CopyEngine::vector) {
        invalid |= failed(checkVectorStore(copy));
        return;
      }
      if (auto copy = dyn_cast<CopyOp>(op)) {
        auto source = cast<MemRefType>(copy.getSource().getType());
        Value tile = isSharedMemory(source) ? copy.getSource() : copy.getDest();
        invalid |= failed(checkTmaTile(op, cast<MemRefType>(tile.getType())));
        if (copy.getPending() && !outermostLoopInRole(copy)) {
          op->emitOpError()
              << "with pending needs an scf.for around it inside its "
                 "warp-specialized role, after which its role awaits the "
                 "stores";
          invalid = true;
        }
      } else if (auto tmaCopy = dyn_cast<TmaCopyOp>(op)) {
        invalid |= failed(checkTmaTile(op, tmaCopy.getDest().getType()));
      }
    });
    if (invalid)
      return signalPassFailure();
    // Synchronous TMA loads in nested loops or under a condition: their
    // barrier completes once per execution, not per iteration of one loop,
    // so the parity comes from a counter of executions. Each is lowered as
    // soon as it has its counter: threading the next counter rebuilds the
    // enclosing loops, which updates the uses the lowering created.
    SmallVector<Operation *> counted;
    getOperation()->walk([&](Operation *op) {
      auto copy = dyn_cast<CopyOp>(op);
      bool load = isa<Im2colCopyOp>(op) ||
                  (copy && copy.getCopyEngine() == CopyEngine::tma &&
                   isSharedMemory(cast<MemRefType>(copy.getDest().getType())));
      if (load && needsExecutionCount(op))
        counted.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (Operation *op : counted) {
      std::string why;
      FailureOr<Value> count = createExecutionCount(rewriter, op, why);
      if (failed(count)) {
        op->emitOpError() << "is a synchronous load inside " << why
                          << ", where its barrier's phase cannot be counted; "
                             "use scf.for and scf.if around it";
        return signalPassFailure();
      }
      rewriter.setInsertionPoint(op);
      LogicalResult lowered =
          isa<CopyOp>(op) ? lowerCopyLoad(cast<CopyOp>(op), rewriter, *count)
                          : lowerIm2colLoad(cast<Im2colCopyOp>(op), rewriter,
                                            *count);
      if (failed(lowered))
        return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerTmaCopy, LowerCpAsync, LowerCopy, LowerIm2colCopy>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    getOperation()->walk(
        [](scf::ForOp loop) { loop->removeAttr(kDrainedAttrName); });
  }
};
} // namespace
