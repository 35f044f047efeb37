//===- TileOps.cpp - Operations of the tile dialect -----------------------===//

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace sinkattn::tile;

/// The mbarrier arrive count and the pending transaction count are 20-bit
/// hardware counters (PTX ISA, "Contents of the mbarrier object").
static constexpr int64_t kMaxArriveCount = (1 << 20) - 1;
static constexpr int64_t kMaxTxBytes = (1 << 20) - 1;
/// cp.async moves 16-byte chunks (the .cg form, which bypasses L1).
static constexpr int64_t kCpAsyncChunkBytes = 16;

/// "64x128" for a shape.
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os,
      [&](int64_t dim) {
        if (ShapedType::isDynamic(dim))
          os << '?';
        else
          os << dim;
      },
      "x");
  return text;
}

/// A word for where a memref lives, for diagnostics.
static std::string describeSpace(MemRefType type) {
  if (isGlobalMemory(type))
    return "global";
  if (isSharedMemory(type))
    return "shared";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "memory space " << type.getMemorySpace();
  return text;
}

/// A slot index that is a known constant must name an existing slot.
static LogicalResult verifyBarrierSlot(Operation *op, BarrierArrayType type,
                                       Value index) {
  std::optional<int64_t> slot = getConstantIntValue(index);
  if (slot && (*slot < 0 || *slot >= type.getSize()))
    return op->emitOpError()
           << "barrier index " << *slot << " is out of range for " << type
           << " (slots 0.." << type.getSize() - 1 << ")";
  return success();
}

/// A statically shaped shared tile must fit in a block's shared memory: the
/// lowerings emit one TMA box, cp.async round or wgmma step per slice of it.
static LogicalResult verifySharedTileSize(Operation *op, MemRefType shared) {
  std::optional<int64_t> bytes = getStaticByteSize(shared);
  if (bytes && *bytes <= kMaxSharedMemoryBytes)
    return success();
  InFlightDiagnostic diag = op->emitOpError() << "the shared tile " << shared
                                              << " takes ";
  if (bytes)
    diag << *bytes;
  else
    diag << "more than 2^63";
  diag << " bytes, more than the " << kMaxSharedMemoryBytes
       << " bytes of shared memory a block may use";
  return diag;
}

/// Shared rules of tile.copy and tile.tma_copy for the (global, shared) pair:
/// the global side is indexed per dimension, the shared side is a static
/// tile that lines up with the global tensor's trailing dimensions.
static LogicalResult verifyGlobalSharedTile(Operation *op, MemRefType global,
                                            ValueRange globalIndices,
                                            MemRefType shared,
                                            ValueRange sharedIndices) {
  if (global.getElementType() != shared.getElementType())
    return op->emitOpError()
           << "element type mismatch: the global memref holds "
           << global.getElementType() << " but the shared tile holds "
           << shared.getElementType();
  if (static_cast<int64_t>(globalIndices.size()) != global.getRank())
    return op->emitOpError()
           << "the global memref has rank " << global.getRank() << " and needs "
           << global.getRank() << " indices, got " << globalIndices.size();
  if (!sharedIndices.empty())
    return op->emitOpError() << "the shared tile takes no indices; select a "
                                "sub-tile with memref.subview";
  if (!shared.hasStaticShape())
    return op->emitOpError() << "the shared tile must have a static shape, got "
                             << shared;
  if (shared.getRank() == 0)
    return op->emitOpError() << "the shared tile must have at least one "
                                "dimension, got "
                             << shared;
  if (shared.getRank() > global.getRank())
    return op->emitOpError()
           << "shape mismatch: the shared tile " << formatShape(shared.getShape())
           << " has rank " << shared.getRank()
           << " but the global memref only rank " << global.getRank();
  return verifySharedTileSize(op, shared);
}

//===----------------------------------------------------------------------===//
// Barrier ops
//===----------------------------------------------------------------------===//

LogicalResult AllocBarrierOp::verify() {
  ArrayRef<int64_t> counts = getArriveCounts();
  int64_t slots = getBarriers().getType().getSize();
  if (static_cast<int64_t>(counts.size()) != slots)
    return emitOpError() << "has " << counts.size()
                         << " arrive counts but the result has " << slots
                         << " barrier slots";
  for (auto [slot, count] : llvm::enumerate(counts))
    if (count < 1 || count > kMaxArriveCount)
      return emitOpError() << "slot " << slot << " has arrive count " << count
                           << "; mbarrier arrive counts must be in [1, "
                           << kMaxArriveCount << "]";
  return success();
}

/// mbarrier_arrive and mbarrier_init: an arrive count the 20-bit counter
/// holds, on an existing slot.
template <typename SlotOp>
static LogicalResult verifyArriveCount(SlotOp op, int64_t count) {
  if (count < 1 || count > kMaxArriveCount)
    return op.emitOpError() << "arrive count " << count << " must be in [1, "
                            << kMaxArriveCount << "]";
  return verifyBarrierSlot(op, op.getBarriers().getType(), op.getIndex());
}

/// mbarrier_expect_tx and mbarrier_arrive_expect_tx: a byte count one phase
/// can expect, on an existing slot.
template <typename SlotOp>
static LogicalResult verifyTxBytes(SlotOp op, int64_t bytes) {
  if (bytes < 1 || bytes > kMaxTxBytes)
    return op.emitOpError()
           << "expects " << bytes
           << " transaction bytes; an mbarrier phase can expect 1 to "
           << kMaxTxBytes << " bytes";
  return verifyBarrierSlot(op, op.getBarriers().getType(), op.getIndex());
}

LogicalResult MBarrierArriveOp::verify() {
  return verifyArriveCount(*this, getCount());
}

LogicalResult MBarrierExpectTxOp::verify() {
  return verifyTxBytes(*this, getBytes());
}

LogicalResult MBarrierWaitParityOp::verify() {
  std::optional<int64_t> parity = getConstantIntValue(getParity());
  if (parity && *parity != 0 && *parity != 1)
    return emitOpError() << "parity must be 0 or 1, got " << *parity;
  return verifyBarrierSlot(*this, getBarriers().getType(), getIndex());
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

/// A cp.async destination: 16-byte chunks tile the innermost dimension.
static LogicalResult verifyCpAsyncTile(Operation *op, MemRefType shared) {
  int64_t rowBytes =
      shared.getShape().back() * shared.getElementTypeBitWidth() / 8;
  if (rowBytes % kCpAsyncChunkBytes != 0)
    return op->emitOpError()
           << "cannot use cp.async: the tile's innermost dimension spans "
           << rowBytes << " bytes, not a multiple of the " << kCpAsyncChunkBytes
           << "-byte copy chunk";
  return success();
}

/// A store by 16-byte vectors: whole chunks in the tile's rows and in the
/// global view's (so that a chunk is inside or outside it as a whole), read
/// by the role as a whole, plain (TMA adds; pending waits on TMA).
static LogicalResult verifyVectorStore(CopyOp op, MemRefType shared,
                                       MemRefType global) {
  Type element = shared.getElementType();
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
  if (bits < 8 || bits > 128 || !llvm::isPowerOf2_32(bits))
    return op.emitOpError() << "cannot use engine vector: elements of "
                            << element << " do not tile a 16-byte chunk";
  int64_t chunkElements = kCpAsyncChunkBytes * 8 / bits;
  if (shared.getShape().back() % chunkElements != 0)
    return op.emitOpError()
           << "cannot use engine vector: the tile's innermost dimension of "
           << shared.getShape().back() << " elements is not whole "
           << kCpAsyncChunkBytes << "-byte chunks";
  int64_t columns = global.getShape().back();
  if (ShapedType::isDynamic(columns) || columns % chunkElements != 0)
    return op.emitOpError()
           << "cannot use engine vector: the global view's innermost "
              "dimension must be static and whole "
           << kCpAsyncChunkBytes << "-byte chunks, got " << global;
  if (op.getAdd() || op.getPending())
    return op.emitOpError() << "with engine vector takes neither add nor "
                               "pending (TMA's)";
  if (getWarpgroupSlice(op.getSource()))
    return op.emitOpError() << "with engine vector stores a whole tile, not "
                               "a warpgroup's slice";
  return success();
}

/// `add` (tile.copy, tile.tma_store): a store of f32 elements.
static LogicalResult verifyReduceAdd(Operation *op, bool add,
                                     MemRefType source, MemRefType dest) {
  if (!add)
    return success();
  if (!isSharedMemory(source) || !isGlobalMemory(dest))
    return op->emitOpError() << "adds only a shared tile into global memory, "
                                "got "
                             << describeSpace(source) << " -> "
                             << describeSpace(dest);
  if (!source.getElementType().isF32())
    return op->emitOpError() << "adds f32 tiles only (TMA reduce-add), got "
                             << source.getElementType();
  return success();
}

LogicalResult CopyOp::verify() {
  MemRefType source = getSource().getType();
  MemRefType dest = getDest().getType();
  if (failed(verifyReduceAdd(*this, getAdd(), source, dest)))
    return failure();
  if (getPending()) {
    if (!isSharedMemory(source) || !isGlobalMemory(dest))
      return emitOpError() << "pending applies to stores (shared -> global) "
                              "only, got "
                           << describeSpace(source) << " -> "
                           << describeSpace(dest);
    if (!(*this)->getParentOfType<scf::ForOp>())
      return emitOpError()
             << "with pending must be inside an scf.for (the stores still "
                "reading their tiles are awaited after the loop)";
  }
  if (isGlobalMemory(source) && isSharedMemory(dest)) {
    // One thread of the role (or the producer) issues a load and every
    // thread waits for it: each warpgroup would need its own issuing thread
    // and barrier.
    if (getWarpgroupSlice(getDest()))
      return emitOpError() << "loads into a warpgroup's slice of a tile (a "
                              "subview at tile.warpgroup_id), which is not "
                              "supported: load the whole tile, or store "
                              "from the slice";
    if (failed(verifyGlobalSharedTile(*this, source, getSourceIndices(), dest,
                                      getDestIndices())))
      return failure();
    if (getCopyEngine() == CopyEngine::vector)
      return emitOpError() << "engine vector only stores from shared memory; "
                              "loads use tma or cp_async";
    if (getCopyEngine() == CopyEngine::cp_async)
      return verifyCpAsyncTile(*this, dest);
    return success();
  }
  if (isSharedMemory(source) && isGlobalMemory(dest)) {
    if (getCopyEngine() == CopyEngine::cp_async)
      return emitOpError() << "engine cp_async only loads into shared memory; "
                              "stores use tma or vector";
    if (failed(verifyGlobalSharedTile(*this, dest, getDestIndices(), source,
                                      getSourceIndices())))
      return failure();
    if (getCopyEngine() == CopyEngine::vector)
      return verifyVectorStore(*this, source, dest);
    return success();
  }
  return emitOpError() << "copies between global and shared memory, got "
                       << describeSpace(source) << " -> "
                       << describeSpace(dest);
}

/// Loads of a global tile into a shared tile (tile.tma_copy, tile.tma_load,
/// tile.cp_async): the memory spaces and the tile rules.
template <typename LoadOp> static LogicalResult verifyGlobalToShared(LoadOp op) {
  MemRefType source = op.getSource().getType();
  MemRefType dest = op.getDest().getType();
  if (!isGlobalMemory(source))
    return op.emitOpError() << "loads global -> shared, but the source is in "
                            << describeSpace(source) << " memory";
  if (!isSharedMemory(dest))
    return op.emitOpError()
           << "loads global -> shared, but the destination is in "
           << describeSpace(dest) << " memory";
  return verifyGlobalSharedTile(op, source, op.getSourceIndices(), dest,
                                /*sharedIndices=*/{});
}

/// tile.tma_copy and tile.tma_load: global -> shared, an existing barrier
/// slot. (A tile that fits in shared memory is fewer bytes than one mbarrier
/// phase can expect.)
static_assert(kMaxSharedMemoryBytes <= kMaxTxBytes,
              "a shared tile's bytes must fit one mbarrier phase");
template <typename TmaOp> static LogicalResult verifyTmaLoad(TmaOp op) {
  if (failed(verifyGlobalToShared(op)))
    return failure();
  return verifyBarrierSlot(op, op.getBarriers().getType(),
                           op.getBarrierIndex());
}

LogicalResult TmaCopyOp::verify() { return verifyTmaLoad(*this); }

LogicalResult CpAsyncOp::verify() {
  if (failed(verifyGlobalToShared(*this)))
    return failure();
  return verifyCpAsyncTile(*this, getDest().getType());
}

LogicalResult CpAsyncArriveOp::verify() {
  return verifyBarrierSlot(*this, getBarriers().getType(), getIndex());
}

LogicalResult TmaLoadOp::verify() { return verifyTmaLoad(*this); }

LogicalResult TmaStoreOp::verify() {
  MemRefType source = getSource().getType();
  MemRefType dest = getDest().getType();
  if (failed(verifyReduceAdd(*this, getAdd(), source, dest)))
    return failure();
  if (!isSharedMemory(source))
    return emitOpError() << "stores shared -> global, but the source is in "
                         << describeSpace(source) << " memory";
  if (!isGlobalMemory(dest))
    return emitOpError()
           << "stores shared -> global, but the destination is in "
           << describeSpace(dest) << " memory";
  return verifyGlobalSharedTile(*this, dest, getDestIndices(), source,
                                /*sharedIndices=*/{});
}

/// Rules shared by tile.im2col_copy and tile.tma_im2col_load: a rank-4
/// (NHWC) global source with four indices, a PxC shared tile of its element
/// type, one offset and one corner per spatial dimension, and the TMA im2col
/// limits (C * bytes a multiple of 16 and at most 256 channels, at most 1024
/// pixels, corners in [-128, 127] for 2-D convolutions).
template <typename Im2colOp> static LogicalResult verifyIm2col(Im2colOp op) {
  MemRefType source = op.getSource().getType();
  MemRefType dest = op.getDest().getType();
  if (!isGlobalMemory(source) || source.getRank() != 4)
    return op.emitOpError()
           << "loads from a rank-4 (NHWC) global tensor, got " << source;
  if (op.getSourceIndices().size() != 4)
    return op.emitOpError() << "needs 4 source indices (n, h, w, c), got "
                            << op.getSourceIndices().size();
  if (!isSharedMemory(dest) || dest.getRank() != 2 || !dest.hasStaticShape())
    return op.emitOpError()
           << "loads into a static 2-D (pixels x channels) shared tile, got "
           << dest;
  if (source.getElementType() != dest.getElementType())
    return op.emitOpError() << "element type mismatch: the source holds "
                            << source.getElementType()
                            << " but the tile holds " << dest.getElementType();
  int64_t pixels = dest.getShape()[0], channels = dest.getShape()[1];
  if (pixels > 1024 || channels > 256 ||
      channels * dest.getElementTypeBitWidth() / 8 % 16 != 0)
    return op.emitOpError()
           << "an im2col tile has at most 1024 pixels and 256 channels whose "
              "bytes are a multiple of 16, got "
           << pixels << " x " << channels;
  if (op.getOffsets().size() != 2 || op.getLower().size() != 2 ||
      op.getUpper().size() != 2)
    return op.emitOpError()
           << "needs 2 offsets and 2-entry lower/upper corners (h, w)";
  for (int64_t corner : llvm::concat<const int64_t>(op.getLower(), op.getUpper()))
    if (corner < -128 || corner > 127)
      return op.emitOpError() << "corner offset " << corner
                              << " is outside [-128, 127]";
  return success();
}

LogicalResult Im2colCopyOp::verify() { return verifyIm2col(*this); }

LogicalResult TmaIm2colLoadOp::verify() {
  if (failed(verifyIm2col(*this)))
    return failure();
  return verifyBarrierSlot(*this, getBarriers().getType(), getBarrierIndex());
}

LogicalResult MBarrierInitOp::verify() {
  return verifyArriveCount(*this, getCount());
}

LogicalResult MBarrierArriveExpectTxOp::verify() {
  return verifyTxBytes(*this, getBytes());
}

//===----------------------------------------------------------------------===//
// Register tiles
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  Type aType = getA().getType();
  MemRefType bType = getB().getType();
  FragmentType accType = getAcc().getType();

  ArrayRef<int64_t> aShape;
  Type aElement;
  if (getTransposeA() && !isa<MemRefType>(aType))
    return emitOpError() << "transpose_a needs operand A in shared memory "
                            "(wgmma reads a transposed A only from there), "
                            "got a register fragment";
  if (auto aMem = dyn_cast<MemRefType>(aType)) {
    if (!isSharedMemory(aMem))
      return emitOpError() << "operand A must be a register fragment or a "
                              "shared-memory tile, got "
                           << describeSpace(aMem) << " memory";
    if (!aMem.hasStaticShape())
      return emitOpError() << "operand A must have a static shape";
    if (failed(verifySharedTileSize(*this, aMem)))
      return failure();
    aShape = aMem.getShape();
    aElement = aMem.getElementType();
  } else {
    auto aFrag = cast<FragmentType>(aType);
    aShape = aFrag.getShape();
    aElement = aFrag.getElementType();
  }
  if (!isSharedMemory(bType))
    return emitOpError() << "operand B must be a shared-memory tile, got "
                         << describeSpace(bType) << " memory";
  if (!bType.hasStaticShape())
    return emitOpError() << "operand B must have a static shape";
  if (failed(verifySharedTileSize(*this, bType)))
    return failure();
  if (aShape.size() != 2 || bType.getRank() != 2 ||
      accType.getRank() != 2)
    return emitOpError() << "operands must be 2-D, got A rank "
                         << aShape.size() << ", B rank " << bType.getRank()
                         << ", accumulator rank " << accType.getRank();
  if (aElement != bType.getElementType())
    return emitOpError() << "element type mismatch: A holds " << aElement
                         << " but B holds " << bType.getElementType();
  if (!aElement.isBF16() && !aElement.isF16())
    return emitOpError() << "A and B must hold bf16 or f16, got " << aElement;
  Type accElement = accType.getElementType();
  if (!accElement.isF32() && !accElement.isF16())
    return emitOpError() << "the accumulator must hold f32 or f16, got "
                         << accElement;

  ArrayRef<int64_t> bShape = bType.getShape();
  int64_t m = getTransposeA() ? aShape[1] : aShape[0];
  int64_t k = getTransposeA() ? aShape[0] : aShape[1];
  int64_t bK = getTransposeB() ? bShape[1] : bShape[0];
  int64_t n = getTransposeB() ? bShape[0] : bShape[1];
  if (k != bK)
    return emitOpError() << "shape mismatch: A is " << formatShape(aShape)
                         << (getTransposeA() ? " (transposed)" : "")
                         << " and B is " << formatShape(bShape)
                         << (getTransposeB() ? " (transposed)" : "")
                         << ", so the reduction dimensions differ (" << k
                         << " vs " << bK << ")";
  // (A fragment's and a K-major tile's K are checked with their layouts.)
  if (getTransposeA() && k % 16 != 0)
    return emitOpError() << "the reduction dimension (transposed A's rows) is "
                         << k << "; wgmma needs a multiple of 16 (its k16 steps)";
  if (accType.getShape()[0] != m || accType.getShape()[1] != n)
    return emitOpError() << "shape mismatch: A·B is " << m << "x" << n
                         << " but the accumulator is "
                         << formatShape(accType.getShape());
  return success();
}

LogicalResult ReduceOp::verify() {
  FragmentType source = getSource().getType();
  FragmentType result = getResult().getType();
  int64_t dim = getDim();
  if (dim >= source.getRank())
    return emitOpError() << "reduces along dimension " << dim
                         << ", which a rank-" << source.getRank()
                         << " fragment does not have";
  if (source.getRank() != 2)
    return emitOpError() << "reduces a 2-D fragment to a row or column vector, "
                            "got rank "
                         << source.getRank();
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "element type mismatch: source holds "
                         << source.getElementType() << " but result holds "
                         << result.getElementType();
  SmallVector<int64_t> expected(source.getShape());
  expected.erase(expected.begin() + dim);
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "shape mismatch: reducing "
                         << formatShape(source.getShape())
                         << " along dimension " << dim << " gives "
                         << formatShape(expected) << ", not "
                         << formatShape(result.getShape());
  return success();
}

LogicalResult PartialReduceOp::verify() {
  FragmentType source = getSource().getType();
  FragmentType result = getResult().getType();
  if (source.getRank() != 2 || result.getRank() != 2)
    return emitOpError() << "combines the columns of a 2-D fragment into a "
                            "2-D fragment, got ranks "
                         << source.getRank() << " and " << result.getRank();
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "element type mismatch: source holds "
                         << source.getElementType() << " but result holds "
                         << result.getElementType();
  int64_t rows = source.getShape()[0], columns = source.getShape()[1];
  int64_t width = result.getShape()[1];
  if (result.getShape()[0] != rows)
    return emitOpError() << "shape mismatch: the result has "
                         << result.getShape()[0] << " rows, the source "
                         << rows;
  if (width % 8 != 0)
    return emitOpError() << "result has " << width
                         << " columns; it needs a multiple of 8 so that each "
                            "thread combines only its own registers";
  if (columns % width != 0)
    return emitOpError() << "result has " << width
                         << " columns, which do not divide the source's "
                         << columns;
  return success();
}

LogicalResult ScaleRowsOp::verify() {
  FragmentType source = getSource().getType();
  FragmentType factors = getFactors().getType();
  if (source.getRank() != 2 || factors.getRank() != 1)
    return emitOpError() << "scales the rows of a 2-D fragment by a row "
                            "vector, got ranks "
                         << source.getRank() << " and " << factors.getRank();
  if (!isa<FloatType>(source.getElementType()) ||
      source.getElementType() != factors.getElementType())
    return emitOpError() << "needs floating-point elements of one type: "
                            "source holds "
                         << source.getElementType() << ", factors "
                         << factors.getElementType();
  if (factors.getShape()[0] != source.getShape()[0])
    return emitOpError() << "has " << factors.getShape()[0]
                         << " factors for " << source.getShape()[0]
                         << " rows";
  return success();
}

LogicalResult MapOp::verify() {
  ArrayRef<int64_t> resultShape = getResult().getType().getShape();
  for (auto [position, input] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> shape = cast<FragmentType>(input.getType()).getShape();
    if (shape.size() > resultShape.size() ||
        shape != resultShape.take_front(shape.size()))
      return emitOpError() << "shape mismatch: input " << position
                           << " is " << formatShape(shape)
                           << ", which is neither the result shape "
                           << formatShape(resultShape)
                           << " nor a leading prefix of it to broadcast";
  }
  return success();
}

LogicalResult MapOp::verifyRegions() {
  FragmentType resultType = getResult().getType();
  Block &body = getBody().front();
  size_t rank = resultType.getRank();
  size_t expectedArgs = rank + getInputs().size();
  if (body.getNumArguments() != expectedArgs)
    return emitOpError() << "body must take " << expectedArgs
                         << " arguments (" << rank
                         << " indices, then one element per input), got "
                         << body.getNumArguments();
  for (size_t i = 0; i < rank; ++i)
    if (!body.getArgument(i).getType().isIndex())
      return emitOpError() << "body argument " << i
                           << " is an element index and must be 'index', got "
                           << body.getArgument(i).getType();
  for (auto [position, input] : llvm::enumerate(getInputs())) {
    Type element = cast<FragmentType>(input.getType()).getElementType();
    Type argType = body.getArgument(rank + position).getType();
    if (argType != element)
      return emitOpError() << "body argument " << rank + position
                           << " must have input " << position
                           << "'s element type " << element << ", got "
                           << argType;
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != resultType.getElementType())
    return emitOpError() << "body must yield one "
                         << resultType.getElementType()
                         << " (the result element type)";
  return success();
}

LogicalResult CastOp::verify() {
  FragmentType source = getSource().getType();
  FragmentType result = getResult().getType();
  if (source.getShape() != result.getShape())
    return emitOpError() << "shape mismatch: cast changes "
                         << formatShape(source.getShape()) << " into "
                         << formatShape(result.getShape())
                         << "; only the element type may change";
  if (!isa<FloatType>(source.getElementType()) ||
      !isa<FloatType>(result.getElementType()))
    return emitOpError() << "converts between float element types, got "
                         << source.getElementType() << " to "
                         << result.getElementType();
  return success();
}

LogicalResult GemmWaitOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  for (Value operand : operands)
    inferredReturnTypes.push_back(operand.getType());
  return success();
}

LogicalResult StoreOp::verify() {
  FragmentType value = getValue().getType();
  MemRefType dest = getDest().getType();
  if (!isSharedMemory(dest) && !isGlobalMemory(dest))
    return emitOpError() << "stores into shared or global memory, got "
                         << describeSpace(dest) << " memory";
  if (value.getElementType() != dest.getElementType())
    return emitOpError() << "element type mismatch: the fragment holds "
                         << value.getElementType() << " but the destination "
                         << "holds " << dest.getElementType();
  if (value.getRank() > dest.getRank())
    return emitOpError() << "a rank-" << value.getRank()
                         << " fragment does not fit a rank-" << dest.getRank()
                         << " destination";
  if (static_cast<int64_t>(getIndices().size()) != dest.getRank())
    return emitOpError() << "the destination has rank " << dest.getRank()
                         << " and needs " << dest.getRank()
                         << " indices, got " << getIndices().size();
  if (getAdd()) {
    if (!isGlobalMemory(dest))
      return emitOpError() << "adds atomically into global memory only, got "
                           << describeSpace(dest) << " memory";
    if (!value.getElementType().isF32())
      return emitOpError() << "adds f32 elements only, got "
                           << value.getElementType();
  }
  return success();
}

#define GET_OP_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileOps.cpp.inc"
