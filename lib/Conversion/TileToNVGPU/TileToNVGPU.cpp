//===- TileToNVGPU.cpp - tile barriers, TMA, shared memory to nvgpu -------===//

#include "SinkAttn/Conversion/Passes.h"
#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"
#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::tile;

namespace sinkattn {
#define GEN_PASS_DEF_CONVERTTILETONVGPU
#include "SinkAttn/Conversion/Passes.h.inc"
} // namespace sinkattn

namespace {
/// The dynamic shared memory window is rounded up to this at run time.
constexpr int64_t kSharedBaseAlignment = 1024;
/// try_wait suspends for up to this many ticks before re-polling.
constexpr int64_t kWaitTicks = 10000000;

Attribute workgroupSpace(MLIRContext *context) {
  return gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup);
}

/// Symbol of the kernel's dynamic shared memory: a public, zero-sized
/// `memref.global` in shared memory, which the NVPTX backend emits as
/// `.extern .shared .align 16 .b8 <name>[]` (upstream's
/// gpu.dynamic_shared_memory uses an internal global, which the backend
/// demotes to a 1-byte static variable laid out among the other static
/// shared variables, so offsets from it can overlap them).
constexpr llvm::StringLiteral kDynamicSharedSymbol = "__sinkattn_dynamic_shared";
/// The alignment the driver guarantees for the dynamic window. Declaring
/// more would let LLVM fold the run-time rounding below away while the
/// window is not actually placed that way (seen: misaligned TMA addresses).
constexpr int64_t kDynamicSharedDeclaredAlignment = 16;

/// Replaces shared-memory `memref.alloc`s of `func` by views of its dynamic
/// shared memory and records the size to launch with.
LogicalResult planSharedMemory(gpu::GPUFuncOp func) {
  SmallVector<memref::AllocOp> allocs;
  int64_t barrierBytes = 0;
  func.walk([&](Operation *op) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op);
        alloc && isSharedMemory(alloc.getType()))
      allocs.push_back(alloc);
    // Each array has at most kMaxBarrierSlots slots, so the sum of a
    // function's arrays cannot overflow.
    if (auto barriers = dyn_cast<AllocBarrierOp>(op))
      barrierBytes +=
          barriers.getBarriers().getType().getSize() * kMBarrierBytes;
  });

  // Offsets first: the window's size is their end plus the alignment slack.
  // An allocation above the limit is refused on its own, so that the sum of
  // the others cannot overflow.
  SmallVector<int64_t> offsets;
  int64_t end = 0;
  memref::AllocOp largest;
  int64_t largestBytes = 0;
  for (memref::AllocOp alloc : allocs) {
    MemRefType type = alloc.getType();
    std::optional<int64_t> bytes = getStaticByteSize(type);
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return alloc.emitOpError()
             << "shared allocations need a static shape and the identity "
                "layout to be placed in dynamic shared memory, got "
             << type;
    int64_t align = std::max<int64_t>(16, alloc.getAlignment().value_or(16));
    if (align > kSharedBaseAlignment || !llvm::isPowerOf2_64(align))
      return alloc.emitOpError() << "alignment " << align
                                 << " must be a power of two up to "
                                 << kSharedBaseAlignment;
    if (!bytes || *bytes > kMaxSharedMemoryBytes) {
      InFlightDiagnostic diag = func.emitOpError() << "kernel needs ";
      if (bytes)
        diag << "more than " << *bytes;
      else
        diag << "more than 2^63";
      diag << " bytes of shared memory, the GPU allows at most "
           << kMaxSharedMemoryBytes;
      diag.attachNote(alloc.getLoc())
          << "this shared allocation alone takes "
          << (bytes ? std::to_string(*bytes) : "more than 2^63") << " bytes";
      return diag;
    }
    if (*bytes > largestBytes) {
      largest = alloc;
      largestBytes = *bytes;
    }
    offsets.push_back(llvm::alignTo(end, align));
    end = offsets.back() + *bytes;
  }
  int64_t windowBytes = allocs.empty() ? 0 : end + kSharedBaseAlignment;
  // The mbarriers are static shared memory, which counts against the same
  // per-block limit as the dynamic window.
  if (windowBytes + barrierBytes > kMaxSharedMemoryBytes) {
    InFlightDiagnostic diag = func.emitOpError()
                              << "kernel needs " << windowBytes + barrierBytes
                              << " bytes of shared memory, the GPU allows at "
                                 "most "
                              << kMaxSharedMemoryBytes;
    diag.attachNote() << end << " bytes of shared allocations"
                      << (allocs.empty() ? "" : " (aligned), ")
                      << (allocs.empty() ? 0 : kSharedBaseAlignment)
                      << " bytes of alignment slack and " << barrierBytes
                      << " bytes of mbarriers";
    if (largest)
      diag.attachNote(largest.getLoc())
          << "the largest shared allocation takes " << largestBytes
          << " bytes";
    return diag;
  }
  if (allocs.empty())
    return success();

  MLIRContext *context = func.getContext();
  Attribute space = workgroupSpace(context);
  OpBuilder builder(context);
  auto module = func->getParentOfType<gpu::GPUModuleOp>();
  auto symbolType =
      MemRefType::get({0}, builder.getI8Type(), MemRefLayoutAttrInterface(), space);
  if (!SymbolTable::lookupSymbolIn(module, kDynamicSharedSymbol)) {
    builder.setInsertionPointToStart(module.getBody());
    memref::GlobalOp::create(builder, func.getLoc(), kDynamicSharedSymbol,
                             builder.getStringAttr("public"), symbolType,
                             Attribute(), /*constant=*/false,
                             builder.getI64IntegerAttr(kDynamicSharedDeclaredAlignment));
  }

  builder.setInsertionPointToStart(&func.getBody().front());
  Location loc = func.getLoc();
  Value symbol = memref::GetGlobalOp::create(builder, loc, symbolType,
                                             kDynamicSharedSymbol);
  auto windowType = MemRefType::get({windowBytes}, builder.getI8Type(),
                                    MemRefLayoutAttrInterface(), space);
  Value window = memref::ReinterpretCastOp::create(
      builder, loc, windowType, symbol, /*offset=*/0, ArrayRef<int64_t>{windowBytes},
      ArrayRef<int64_t>{1});
  // pad = (1024 - base % 1024) % 1024 rounds the window's start up to 1024
  // bytes at run time, wherever the driver placed it.
  Value base =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, window);
  Value alignment =
      arith::ConstantIndexOp::create(builder, loc, kSharedBaseAlignment);
  Value misalignment = arith::RemUIOp::create(builder, loc, base, alignment);
  Value pad = arith::RemUIOp::create(
      builder, loc, arith::SubIOp::create(builder, loc, alignment, misalignment),
      alignment);

  for (auto [alloc, offset] : llvm::zip(allocs, offsets)) {
    MemRefType type = alloc.getType();
    builder.setInsertionPoint(alloc);
    Value shift = arith::AddIOp::create(
        builder, alloc.getLoc(), pad,
        arith::ConstantIndexOp::create(builder, alloc.getLoc(), offset));
    auto viewType = MemRefType::get(type.getShape(), type.getElementType(),
                                    MemRefLayoutAttrInterface(), space);
    Value view = memref::ViewOp::create(builder, alloc.getLoc(), viewType,
                                        window, shift, ValueRange());
    if (viewType != type)
      view = memref::MemorySpaceCastOp::create(builder, alloc.getLoc(), type,
                                               view);
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(view);
    alloc.erase();
  }
  func->setAttr(kDynamicSharedMemoryAttrName,
                builder.getI64IntegerAttr(windowBytes));
  return success();
}

/// Adds one tensor-map argument per distinct (global argument, box) that
/// TMA ops of `func` use, and maps each TMA op to its descriptor value.
LogicalResult assignTensorMaps(gpu::GPUFuncOp func,
                               DenseMap<Operation *, Value> &descriptors) {
  struct Use {
    Operation *op;
    unsigned source;
    /// Tiled: the box. Im2col: pixels, channels, lower corner, upper corner.
    SmallVector<int64_t> box;
    MemRefType global;
    bool im2col = false;
    int64_t swizzle = 0;
  };
  SmallVector<Use> uses;
  Block &entry = func.getBody().front();
  WalkResult walk = func.walk([&](Operation *op) {
    Value global, tile;
    SmallVector<int64_t> im2colKey;
    if (auto load = dyn_cast<TmaLoadOp>(op)) {
      global = load.getSource();
      tile = load.getDest();
    } else if (auto im2col = dyn_cast<TmaIm2colLoadOp>(op)) {
      global = im2col.getSource();
      tile = im2col.getDest();
      ArrayRef<int64_t> shape = im2col.getDest().getType().getShape();
      im2colKey = {shape[0], shape[1]};
      llvm::append_range(im2colKey, im2col.getLower());
      llvm::append_range(im2colKey, im2col.getUpper());
    } else if (auto store = dyn_cast<TmaStoreOp>(op)) {
      global = store.getDest();
      tile = store.getSource();
    } else {
      return WalkResult::advance();
    }
    auto arg = dyn_cast<BlockArgument>(global);
    if (!arg || arg.getOwner() != &entry ||
        arg.getArgNumber() >= func.getNumArguments()) {
      op->emitOpError() << "needs its global tensor to be a kernel argument "
                           "(its tensor map is passed to the kernel)";
      return WalkResult::interrupt();
    }
    auto globalType = cast<MemRefType>(global.getType());
    if (!globalType.getLayout().isIdentity()) {
      if (!globalType.isStrided()) {
        op->emitOpError() << "needs a global tensor with a strided layout "
                             "(its tensor map holds sizes and strides), got "
                          << globalType;
        return WalkResult::interrupt();
      }
      // TMA reads the innermost dimension as contiguous elements.
      if (globalType.getStridesAndOffset().first.back() != 1) {
        op->emitOpError() << "needs a global tensor whose innermost "
                             "dimension has stride 1, got "
                          << globalType;
        return WalkResult::interrupt();
      }
    }
    if (!im2colKey.empty()) {
      uses.push_back({op, arg.getArgNumber(), im2colKey, globalType, true});
      return WalkResult::advance();
    }
    SmallVector<int64_t> tileShape(cast<MemRefType>(tile.getType()).getShape());
    int64_t swizzle = 0;
    if (auto load = dyn_cast<TmaLoadOp>(op))
      swizzle = load.getSwizzle();
    else if (auto store = dyn_cast<TmaStoreOp>(op))
      swizzle = store.getSwizzle();
    if (swizzle) {
      // One box per panel of 128-byte rows.
      int64_t panelColumns =
          swizzle * 8 / cast<MemRefType>(tile.getType()).getElementTypeBitWidth();
      if (tileShape.size() != 2 || tileShape[1] % panelColumns != 0) {
        op->emitOpError() << "moves a swizzled tile that is not 2-D with a "
                             "multiple of "
                          << panelColumns << " columns";
        return WalkResult::interrupt();
      }
      tileShape[1] = panelColumns;
    }
    SmallVector<int64_t> box(globalType.getRank() - tileShape.size(), 1);
    llvm::append_range(box, tileShape);
    uses.push_back({op, arg.getArgNumber(), box, globalType, false, swizzle});
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  if (uses.empty())
    return success();
  if (func.getNumWorkgroupAttributions() || func.getNumPrivateAttributions())
    return func.emitOpError() << "with TMA cannot have workgroup or private "
                                 "attributions; allocate shared memory with "
                                 "memref.alloc";

  MLIRContext *context = func.getContext();
  Builder builder(context);
  auto pointerType = LLVM::LLVMPointerType::get(context);
  SmallVector<std::tuple<unsigned, bool, int64_t, SmallVector<int64_t>>> keys;
  SmallVector<Value> keyDescriptors;
  SmallVector<Attribute> mapInfo;
  SmallVector<int64_t> mapArgs;
  if (auto existing = func->getAttrOfType<DenseI64ArrayAttr>(kTensorMapArgsAttrName))
    llvm::append_range(mapArgs, existing.asArrayRef());
  OpBuilder entryBuilder(context);
  entryBuilder.setInsertionPointToStart(&entry);
  for (const Use &use : uses) {
    auto key = std::make_tuple(use.source, use.im2col, use.swizzle, use.box);
    auto found = llvm::find(keys, key);
    if (found != keys.end()) {
      descriptors[use.op] = keyDescriptors[found - keys.begin()];
      continue;
    }
    unsigned position = func.getNumArguments();
    if (failed(func.insertArgument(position, pointerType, DictionaryAttr(),
                                   func.getLoc())))
      return func.emitOpError() << "could not add a tensor-map argument";
    mapArgs.push_back(position);
    if (use.im2col) {
      // Lowered straight to NVVM, which takes the map's generic address.
      Value pointer = entry.getArgument(position);
      keys.push_back(key);
      keyDescriptors.push_back(pointer);
      descriptors[use.op] = pointer;
      ArrayRef<int64_t> info = use.box;
      mapInfo.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("source", builder.getI64IntegerAttr(use.source)),
           builder.getNamedAttr("mode", builder.getStringAttr("im2col")),
           builder.getNamedAttr("pixels", builder.getI64IntegerAttr(info[0])),
           builder.getNamedAttr("channels", builder.getI64IntegerAttr(info[1])),
           builder.getNamedAttr("lower", builder.getDenseI64ArrayAttr(info.slice(2, 2))),
           builder.getNamedAttr("upper", builder.getDenseI64ArrayAttr(info.slice(4, 2)))}));
      continue;
    }
    auto descriptorType = nvgpu::TensorMapDescriptorType::get(
        context,
        MemRefType::get(use.box, use.global.getElementType(),
                        MemRefLayoutAttrInterface(), workgroupSpace(context)),
        use.swizzle ? nvgpu::TensorMapSwizzleKind::SWIZZLE_128B
                    : nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE,
        nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
        nvgpu::TensorMapOOBKind::OOB_ZERO,
        nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
    Value descriptor =
        UnrealizedConversionCastOp::create(entryBuilder, func.getLoc(),
                                           descriptorType,
                                           entry.getArgument(position))
            .getResult(0);
    keys.push_back(key);
    keyDescriptors.push_back(descriptor);
    descriptors[use.op] = descriptor;
    // The map describes the tensor as the kernel indexes it, which may be
    // a view of the buffer with fewer dimensions ([B, S, H * D] of a
    // [B, S, H, D] buffer).
    SmallVector<NamedAttribute> info = {
        builder.getNamedAttr("source", builder.getI64IntegerAttr(use.source)),
        builder.getNamedAttr("box", builder.getDenseI64ArrayAttr(use.box)),
        builder.getNamedAttr("shape",
                             builder.getDenseI64ArrayAttr(use.global.getShape()))};
    // A tensor that is not dense row-major says how it is laid out (in
    // elements; run-time strides are ShapedType::kDynamic, as in the type).
    if (!use.global.getLayout().isIdentity()) {
      auto [strides, offset] = use.global.getStridesAndOffset();
      info.push_back(builder.getNamedAttr(
          "strides", builder.getDenseI64ArrayAttr(strides)));
    }
    if (use.swizzle)
      info.push_back(builder.getNamedAttr(
          "swizzle", builder.getI64IntegerAttr(use.swizzle)));
    mapInfo.push_back(builder.getDictionaryAttr(info));
  }
  func->setAttr(kTensorMapArgsAttrName, builder.getDenseI64ArrayAttr(mapArgs));
  func->setAttr(kTensorMapsAttrName, builder.getArrayAttr(mapInfo));
  return success();
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

Value indexConstant(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(builder, loc, value);
}

/// The mbarrier of one slot as a shared-memory pointer (for the nvvm ops
/// nvgpu has no counterpart of).
Value slotPointer(OpBuilder &builder, Location loc, Value group, Value index) {
  auto pointerType = LLVM::LLVMPointerType::get(
      builder.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  // nvgpu.mbarrier.get yields the shared-window address as an integer.
  Value address = nvgpu::MBarrierGetOp::create(builder, loc, builder.getI32Type(),
                                               group, index);
  return LLVM::IntToPtrOp::create(builder, loc, pointerType, address);
}

NVVM::MemScopeKindAttr ctaScope(MLIRContext *context) {
  return NVVM::MemScopeKindAttr::get(context, NVVM::MemScopeKind::CTA);
}

struct AllocBarrierLowering : public OpConversionPattern<AllocBarrierOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AllocBarrierOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type group = getTypeConverter()->convertType(op.getType());
    rewriter.replaceOpWithNewOp<nvgpu::MBarrierCreateOp>(op, group);
    return success();
  }
};

struct MBarrierInitLowering : public OpConversionPattern<MBarrierInitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierInitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value count = indexConstant(rewriter, op.getLoc(), op.getCount());
    rewriter.replaceOpWithNewOp<nvgpu::MBarrierInitOp>(
        op, adaptor.getBarriers(), count, adaptor.getIndex(), Value());
    return success();
  }
};

struct MBarrierArriveLowering : public OpConversionPattern<MBarrierArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (op.getCount() == 1) {
      nvgpu::MBarrierArriveOp::create(rewriter, loc, adaptor.getBarriers(),
                                      adaptor.getIndex());
    } else {
      Value pointer = slotPointer(rewriter, loc, adaptor.getBarriers(),
                                  adaptor.getIndex());
      Value count = arith::ConstantIntOp::create(rewriter, loc, op.getCount(),
                                                 /*width=*/32);
      NVVM::MBarrierArriveOp::create(rewriter, loc, Type(), pointer, count,
                                     ctaScope(op.getContext()));
    }
    rewriter.eraseOp(op);
    return success();
  }
};

/// Each thread's `cp.async.mbarrier.arrive.noinc`: the arrival is one of
/// the slot's expected ones.
struct CpAsyncArriveLowering : public OpConversionPattern<CpAsyncArriveOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CpAsyncArriveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value pointer = slotPointer(rewriter, op.getLoc(), adaptor.getBarriers(),
                                adaptor.getIndex());
    rewriter.replaceOpWithNewOp<NVVM::CpAsyncMBarrierArriveOp>(
        op, pointer, /*noinc=*/rewriter.getBoolAttr(true));
    return success();
  }
};

struct MBarrierExpectTxLowering
    : public OpConversionPattern<MBarrierExpectTxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierExpectTxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value pointer = slotPointer(rewriter, loc, adaptor.getBarriers(),
                                adaptor.getIndex());
    Value bytes =
        arith::ConstantIntOp::create(rewriter, loc, op.getBytes(), /*width=*/32);
    rewriter.replaceOpWithNewOp<NVVM::MBarrierExpectTxOp>(
        op, pointer, bytes, ctaScope(op.getContext()));
    return success();
  }
};

struct MBarrierArriveExpectTxLowering
    : public OpConversionPattern<MBarrierArriveExpectTxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierArriveExpectTxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value bytes = indexConstant(rewriter, op.getLoc(), op.getBytes());
    rewriter.replaceOpWithNewOp<nvgpu::MBarrierArriveExpectTxOp>(
        op, adaptor.getBarriers(), bytes, adaptor.getIndex(), Value());
    return success();
  }
};

struct MBarrierWaitParityLowering
    : public OpConversionPattern<MBarrierWaitParityOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MBarrierWaitParityOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value parity = arith::IndexCastOp::create(rewriter, loc, rewriter.getI1Type(),
                                              adaptor.getParity());
    Value ticks = indexConstant(rewriter, loc, kWaitTicks);
    rewriter.replaceOpWithNewOp<nvgpu::MBarrierTryWaitParityOp>(
        op, adaptor.getBarriers(), parity, ticks, adaptor.getIndex());
    return success();
  }
};

/// The tile as a memref of the descriptor's rank (leading unit dimensions
/// added when the tile has fewer dimensions than the global tensor).
Value matchDescriptorRank(OpBuilder &builder, Location loc, Value tile,
                          Value descriptor) {
  auto descriptorType = cast<nvgpu::TensorMapDescriptorType>(descriptor.getType());
  ArrayRef<int64_t> box = descriptorType.getTensor().getShape();
  auto tileType = cast<MemRefType>(tile.getType());
  if (tileType.getRank() == static_cast<int64_t>(box.size()))
    return tile;
  int64_t added = box.size() - tileType.getRank();
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices first;
  for (int64_t i = 0; i <= added; ++i)
    first.push_back(i);
  groups.push_back(first);
  for (int64_t i = added + 1; i < static_cast<int64_t>(box.size()); ++i)
    groups.push_back({i});
  return memref::ExpandShapeOp::create(builder, loc, box, tile, groups);
}

/// The shared-memory address of `tile`'s first element as an LLVM pointer:
/// aligned pointer + offset * element bytes.
Value sharedPointer(OpBuilder &builder, Location loc, Value tile) {
  auto tileType = cast<MemRefType>(tile.getType());
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, tile);
  Value aligned = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, tile);
  Value elementBytes =
      indexConstant(builder, loc, tileType.getElementTypeBitWidth() / 8);
  Value address = arith::AddIOp::create(
      builder, loc, aligned,
      arith::MulIOp::create(builder, loc, metadata.getOffset(), elementBytes));
  auto pointerType = LLVM::LLVMPointerType::get(
      builder.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
  Value address64 =
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), address);
  return LLVM::IntToPtrOp::create(builder, loc, pointerType, address64);
}

template <typename TmaOp>
struct TmaLowering : public OpConversionPattern<TmaOp> {
  TmaLowering(const TypeConverter &converter, MLIRContext *context,
              const DenseMap<Operation *, Value> &descriptors)
      : OpConversionPattern<TmaOp>(converter, context),
        descriptors(descriptors) {}

  LogicalResult
  matchAndRewrite(TmaOp op, typename TmaOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value descriptor = descriptors.lookup(op);
    if (!descriptor)
      return rewriter.notifyMatchFailure(op, "no tensor map assigned");
    Location loc = op.getLoc();
    constexpr bool isLoad = std::is_same_v<TmaOp, TmaLoadOp>;
    Value tile;
    ValueRange indices;
    if constexpr (isLoad) {
      tile = adaptor.getDest();
      indices = adaptor.getSourceIndices();
    } else {
      tile = adaptor.getSource();
      indices = adaptor.getDestIndices();
    }
    // A swizzled tile is stored as panels of 128-byte rows, one box each;
    // a plain tile is one box.
    SmallVector<std::pair<Value, SmallVector<Value>>> boxes;
    if (op.getSwizzle() == 0) {
      boxes.push_back({tile, SmallVector<Value>(indices)});
    } else {
      auto tileType = cast<MemRefType>(tile.getType());
      int64_t rows = tileType.getShape()[0];
      int64_t panelColumns =
          op.getSwizzle() * 8 / tileType.getElementTypeBitWidth();
      auto metadata = memref::ExtractStridedMetadataOp::create(rewriter, loc, tile);
      auto panelType = MemRefType::get(
          {rows, panelColumns}, tileType.getElementType(),
          StridedLayoutAttr::get(op.getContext(), ShapedType::kDynamic,
                                 {panelColumns, 1}),
          tileType.getMemorySpace());
      for (int64_t panel = 0; panel < tileType.getShape()[1] / panelColumns;
           ++panel) {
        Value offset = arith::AddIOp::create(
            rewriter, loc, metadata.getOffset(),
            indexConstant(rewriter, loc, panel * rows * panelColumns));
        Value panelTile = memref::ReinterpretCastOp::create(
            rewriter, loc, panelType, metadata.getBaseBuffer(), offset,
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(rows),
                                   rewriter.getIndexAttr(panelColumns)},
            ArrayRef<OpFoldResult>{rewriter.getIndexAttr(panelColumns),
                                   rewriter.getIndexAttr(1)});
        SmallVector<Value> panelIndices(indices);
        panelIndices.back() = arith::AddIOp::create(
            rewriter, loc, panelIndices.back(),
            indexConstant(rewriter, loc, panel * panelColumns));
        boxes.push_back({panelTile, panelIndices});
      }
    }
    for (auto &[box, boxIndices] : boxes) {
      // TMA coordinates are innermost first.
      SmallVector<Value> coordinates(llvm::reverse(boxIndices));
      Value boxTile = matchDescriptorRank(rewriter, loc, box, descriptor);
      if constexpr (isLoad) {
        nvgpu::TmaAsyncLoadOp::create(rewriter, loc, boxTile,
                                      adaptor.getBarriers(), descriptor,
                                      coordinates, adaptor.getBarrierIndex(),
                                      Value(), Value());
      } else if (op.getAdd()) {
        // nvgpu has no reduce: NVVM's, on the map's generic address (the
        // kernel argument behind the descriptor) and the box's shared one.
        auto cast = descriptor.getDefiningOp<UnrealizedConversionCastOp>();
        if (!cast || cast->getNumOperands() != 1)
          return rewriter.notifyMatchFailure(op, "tensor map without its pointer");
        SmallVector<Value> coordinates32;
        for (Value coordinate : coordinates)
          coordinates32.push_back(arith::IndexCastOp::create(
              rewriter, loc, rewriter.getI32Type(), coordinate));
        NVVM::CpAsyncBulkTensorReduceOp::create(
            rewriter, loc, cast->getOperand(0),
            sharedPointer(rewriter, loc, boxTile), NVVM::TMAReduxKind::ADD,
            NVVM::TMAStoreMode::TILE, coordinates32, /*l2CacheHint=*/Value());
      } else {
        nvgpu::TmaAsyncStoreOp::create(rewriter, loc, boxTile, descriptor,
                                       coordinates, Value());
      }
    }
    rewriter.eraseOp(op);
    return success();
  }

  const DenseMap<Operation *, Value> &descriptors;
};

/// tile.tma_im2col_load -> nvvm.cp.async.bulk.tensor (im2col mode); nvgpu
/// has no im2col load.
struct TmaIm2colLoadLowering : public OpConversionPattern<TmaIm2colLoadOp> {
  TmaIm2colLoadLowering(const TypeConverter &converter, MLIRContext *context,
                        const DenseMap<Operation *, Value> &descriptors)
      : OpConversionPattern<TmaIm2colLoadOp>(converter, context),
        descriptors(descriptors) {}

  LogicalResult
  matchAndRewrite(TmaIm2colLoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value map = descriptors.lookup(op);
    if (!map)
      return rewriter.notifyMatchFailure(op, "no tensor map assigned");
    Location loc = op.getLoc();
    MLIRContext *context = op.getContext();
    Value shared = sharedPointer(rewriter, loc, adaptor.getDest());
    // sm_90 has the shared::cluster form of the load only (the shared::cta
    // one does not select): address the CTA's own tile in the cluster window.
    auto clusterPointer = LLVM::LLVMPointerType::get(
        context, static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
    Value destination =
        LLVM::AddrSpaceCastOp::create(rewriter, loc, clusterPointer, shared);
    Value barrier = slotPointer(rewriter, loc, adaptor.getBarriers(),
                                adaptor.getBarrierIndex());
    // Coordinates and offsets innermost first: (c, w, h, n) and (w, h).
    SmallVector<Value> coordinates;
    for (Value index : llvm::reverse(adaptor.getSourceIndices()))
      coordinates.push_back(arith::IndexCastOp::create(
          rewriter, loc, rewriter.getI32Type(), index));
    SmallVector<Value> offsets;
    for (Value offset : llvm::reverse(adaptor.getOffsets()))
      offsets.push_back(arith::IndexCastOp::create(
          rewriter, loc, rewriter.getI16Type(), offset));
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        rewriter, loc, destination, map, coordinates, barrier, offsets,
        /*multicastMask=*/Value(), /*l2CacheHint=*/Value(),
        NVVM::TMALoadMode::IM2COL, /*isCTAOnly=*/false, /*group=*/nullptr,
        /*predicate=*/Value());
    rewriter.eraseOp(op);
    return success();
  }

  const DenseMap<Operation *, Value> &descriptors;
};

/// tile.warpgroup_id: (thread_id.x - the role's first thread) / 128, read
/// from lane 0 by a shuffle so that ptxas sees one value per warp (the
/// kernels' hand-written warpgroup index did the same).
struct WarpgroupIdLowering : public OpConversionPattern<WarpgroupIdOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WarpgroupIdOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i32 = rewriter.getI32Type();
    // One op per statement: argument evaluation order differs between
    // compilers, and the IR's order should not.
    Value tid = gpu::ThreadIdOp::create(rewriter, loc, gpu::Dimension::x);
    if (int64_t base = getThreadRole(op).base) {
      Value first = arith::ConstantIndexOp::create(rewriter, loc, base);
      tid = arith::SubIOp::create(rewriter, loc, tid, first);
    }
    Value threads = arith::ConstantIndexOp::create(rewriter, loc, 128);
    Value warpgroup = arith::DivUIOp::create(rewriter, loc, tid, threads);
    Value warpgroup32 = arith::IndexCastUIOp::create(rewriter, loc, i32, warpgroup);
    Value lane0 = arith::ConstantIntOp::create(rewriter, loc, i32, 0);
    Value width = arith::ConstantIntOp::create(rewriter, loc, i32, 32);
    auto shuffle = gpu::ShuffleOp::create(rewriter, loc, warpgroup32, lane0,
                                          width, gpu::ShuffleMode::IDX);
    rewriter.replaceOpWithNewOp<arith::IndexCastUIOp>(
        op, rewriter.getIndexType(), shuffle.getShuffleResult());
    return success();
  }
};

struct ConvertTileToNVGPUPass
    : public sinkattn::impl::ConvertTileToNVGPUBase<ConvertTileToNVGPUPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    DenseMap<Operation *, Value> descriptors;
    for (auto func : getOperation().getOps<gpu::GPUFuncOp>()) {
      if (failed(planSharedMemory(func)) ||
          failed(assignTensorMaps(func, descriptors)))
        return signalPassFailure();
    }

    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion([context](BarrierArrayType type) -> Type {
      return nvgpu::MBarrierGroupType::get(context, workgroupSpace(context),
                                           type.getSize());
    });

    ConversionTarget target(*context);
    target.addIllegalDialect<TileDialect>();
    target.addLegalDialect<arith::ArithDialect, gpu::GPUDialect,
                           memref::MemRefDialect, nvgpu::NVGPUDialect,
                           NVVM::NVVMDialect, LLVM::LLVMDialect>();
    RewritePatternSet patterns(context);
    patterns.add<AllocBarrierLowering, MBarrierInitLowering,
                 MBarrierArriveLowering, CpAsyncArriveLowering, MBarrierExpectTxLowering,
                 MBarrierArriveExpectTxLowering, MBarrierWaitParityLowering,
                 WarpgroupIdLowering>(converter, context);
    patterns.add<TmaLowering<TmaLoadOp>, TmaLowering<TmaStoreOp>,
                 TmaIm2colLoadLowering>(converter, context, descriptors);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
