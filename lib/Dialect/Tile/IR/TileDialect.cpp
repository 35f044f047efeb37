//===- TileDialect.cpp - The tile dialect and its types -------------------===//

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/InterleavedRange.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace sinkattn::tile;

#include "SinkAttn/Dialect/Tile/IR/TileOpsDialect.cpp.inc"
#include "SinkAttn/Dialect/Tile/IR/TileEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileOpsTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileAttrs.cpp.inc"

void TileDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "SinkAttn/Dialect/Tile/IR/TileOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "SinkAttn/Dialect/Tile/IR/TileAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "SinkAttn/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
}

/// Checks `tile.num_stages`: an integer in [1, kMaxNumStages], since the
/// passes build per-stage barriers, buffers and prologue steps from it.
static LogicalResult verifyNumStages(Operation *op, Attribute value) {
  auto stages = dyn_cast<IntegerAttr>(value);
  if (!stages || !isa<IntegerType, IndexType>(stages.getType()))
    return op->emitOpError() << "'" << TileDialect::kNumStagesAttrName
                             << "' must be an integer attribute, got " << value;
  bool isUnsigned = stages.getType().isUnsignedInteger();
  const APInt &count = stages.getValue();
  bool inRange =
      isUnsigned ? count.getActiveBits() <= 63 && count.getZExtValue() >= 1 &&
                       count.getZExtValue() <= uint64_t(kMaxNumStages)
                 : count.getSignificantBits() <= 64 && count.getSExtValue() >= 1 &&
                       count.getSExtValue() <= kMaxNumStages;
  if (inRange)
    return success();
  SmallString<24> text;
  count.toString(text, /*Radix=*/10, /*Signed=*/!isUnsigned);
  return op->emitOpError() << "'" << TileDialect::kNumStagesAttrName
                           << "' must be in [1, " << kMaxNumStages << "], got "
                           << text;
}

LogicalResult TileDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attribute) {
  // The other `tile.` attributes (swizzle, roles) are checked by the passes
  // that read them.
  if (attribute.getName() == kNumStagesAttrName)
    return verifyNumStages(op, attribute.getValue());
  if (attribute.getName() != kMbarrierOrderedAttrName)
    return success();
  if (!isa<UnitAttr>(attribute.getValue()))
    return op->emitOpError()
           << "'" << kMbarrierOrderedAttrName << "' must be a unit attribute";
  auto alloc = dyn_cast<memref::AllocOp>(op);
  if (!alloc || !isSharedMemory(alloc.getType()))
    return op->emitOpError()
           << "'" << kMbarrierOrderedAttrName
           << "' marks a shared-memory memref.alloc (one in "
              "#gpu.address_space<workgroup>), not this op";
  return success();
}

LogicalResult TileDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attribute) {
  if (attribute.getName() != kStrideMultipleAttrName)
    return success();
  auto multiple = dyn_cast<IntegerAttr>(attribute.getValue());
  if (!multiple || !isa<IntegerType, IndexType>(multiple.getType()) ||
      multiple.getValue().getSignificantBits() > 63 ||
      multiple.getValue().getSExtValue() < 1)
    return op->emitOpError()
           << "'" << kStrideMultipleAttrName
           << "' must be a positive integer, got " << attribute.getValue();
  auto function = dyn_cast<FunctionOpInterface>(op);
  auto type =
      function && regionIndex == 0 && argIndex < function.getNumArguments()
          ? dyn_cast<MemRefType>(function.getArgumentTypes()[argIndex])
          : MemRefType();
  if (!type)
    return op->emitOpError()
           << "'" << kStrideMultipleAttrName
           << "' marks a memref argument of a function, not argument "
           << argIndex << " of this op";
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return op->emitOpError() << "'" << kStrideMultipleAttrName
                             << "' marks a strided memref; argument "
                             << argIndex << " is " << type;
  const int64_t n = multiple.getValue().getSExtValue();
  for (auto [dim, stride] : llvm::enumerate(ArrayRef(strides).drop_back()))
    if (!ShapedType::isDynamic(stride) && stride % n != 0 &&
        type.getDimSize(dim) != 1)
      return op->emitOpError()
             << "'" << kStrideMultipleAttrName << "' of " << n
             << " does not divide the stride " << stride << " of dimension "
             << dim << " of argument " << argIndex << " (" << type << ")";
  if (!ShapedType::isDynamic(offset) && offset % n != 0)
    return op->emitOpError()
           << "'" << kStrideMultipleAttrName << "' of " << n
           << " does not divide the offset " << offset << " of argument "
           << argIndex << " (" << type << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// Memory spaces
//===----------------------------------------------------------------------===//

bool sinkattn::tile::isSharedMemory(MemRefType type) {
  // Upstream nvgpu already knows both spellings of the shared space.
  return nvgpu::NVGPUDialect::hasSharedMemoryAddressSpace(type);
}

bool sinkattn::tile::isGlobalMemory(MemRefType type) {
  Attribute space = type.getMemorySpace();
  if (!space)
    return true;
  if (auto integer = dyn_cast<IntegerAttr>(space))
    return integer.getInt() == 0 || integer.getInt() == 1;
  if (auto gpuSpace = dyn_cast<gpu::AddressSpaceAttr>(space))
    return gpuSpace.getValue() == gpu::AddressSpace::Global;
  return false;
}

std::optional<int64_t> sinkattn::tile::getStaticByteSize(MemRefType type) {
  Type element = type.getElementType();
  if (!type.hasStaticShape() || !(element.isIntOrIndexOrFloat()))
    return std::nullopt;
  // The NVVM lowering's index is 64 bits wide.
  int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  for (int64_t dim : type.getShape())
    if (llvm::MulOverflow(bits, dim, bits))
      return std::nullopt;
  return llvm::divideCeil(bits, 8);
}

Value sinkattn::tile::getViewRoot(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

memref::AllocOp sinkattn::tile::getSharedAllocation(Value tile) {
  return getViewRoot(tile).getDefiningOp<memref::AllocOp>();
}

Operation *sinkattn::tile::getRoleRegion(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp())
    if (parent->hasAttr(kThreadBaseAttrName) &&
        parent->hasAttr(kThreadCountAttrName))
      return parent;
  return nullptr;
}

sinkattn::tile::ThreadRole sinkattn::tile::getThreadRole(Operation *op) {
  Operation *region = getRoleRegion(op);
  if (!region)
    return ThreadRole();
  ThreadRole role;
  role.base = region->getAttrOfType<IntegerAttr>(kThreadBaseAttrName).getInt();
  role.count =
      region->getAttrOfType<IntegerAttr>(kThreadCountAttrName).getInt();
  // Barrier 0 is the block's; roles get 1 + their first warpgroup.
  role.barrierId = 1 + role.base / 128;
  return role;
}

std::optional<sinkattn::tile::WarpgroupSlice>
sinkattn::tile::getWarpgroupSlice(Value tile) {
  while (auto view = tile.getDefiningOp<ViewLikeOpInterface>()) {
    if (auto subview = dyn_cast<memref::SubViewOp>(view.getOperation())) {
      auto offset = dyn_cast<Value>(subview.getMixedOffsets().front());
      int64_t rows = subview.getStaticSizes().front();
      int64_t stride = 0;
      if (offset && offset.getDefiningOp<WarpgroupIdOp>()) {
        stride = 1;
      } else if (auto product =
                     offset ? offset.getDefiningOp<arith::MulIOp>() : nullptr) {
        for (auto [id, factor] : {std::pair(product.getLhs(), product.getRhs()),
                                  std::pair(product.getRhs(), product.getLhs())})
          if (id.getDefiningOp<WarpgroupIdOp>())
            if (std::optional<int64_t> constant = getConstantIntValue(factor))
              stride = *constant;
      }
      if (stride > 0 && !ShapedType::isDynamic(rows) && rows <= stride)
        return WarpgroupSlice{subview.getSource(), stride, rows};
    }
    tile = view.getViewSource();
  }
  return std::nullopt;
}

/// The `tile.stride_multiple` that function argument `root` declares; 1
/// for anything else.
static int64_t getDeclaredStrideMultiple(Value root) {
  auto argument = dyn_cast<BlockArgument>(root);
  if (!argument || !argument.getOwner()->isEntryBlock())
    return 1;
  auto function =
      dyn_cast<FunctionOpInterface>(argument.getOwner()->getParentOp());
  // Entry-block arguments past the function's are gpu.func attributions.
  if (!function || argument.getArgNumber() >= function.getNumArguments())
    return 1;
  auto multiple = function.getArgAttrOfType<IntegerAttr>(
      argument.getArgNumber(), TileDialect::kStrideMultipleAttrName);
  return multiple ? multiple.getInt() : 1;
}

bool sinkattn::tile::hasAlignedRows(Value memref, int64_t multiple) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() != 1)
    return false;
  auto isStaticMultiple = [&](int64_t value) {
    return !ShapedType::isDynamic(value) && value % multiple == 0;
  };
  // A static layout says it all.
  if (isStaticMultiple(offset) &&
      llvm::all_of(ArrayRef(strides).drop_back(), isStaticMultiple))
    return true;
  // Else through casts and subviews that keep every dimension at unit
  // strides (the view's strides are then its root's) whose innermost
  // offsets are multiples (the others scale strides that are), down to a
  // root whose layout is aligned, statically or by declaration.
  Value root = memref;
  while (Operation *view = root.getDefiningOp()) {
    if (auto cast = dyn_cast<memref::CastOp>(view)) {
      root = cast.getSource();
      continue;
    }
    auto subview = dyn_cast<memref::SubViewOp>(view);
    if (!subview ||
        subview.getSourceType().getRank() != subview.getType().getRank() ||
        !llvm::all_of(subview.getStaticStrides(),
                      [](int64_t stride) { return stride == 1; }) ||
        !isProvableMultipleOf(subview.getMixedOffsets().back(), multiple))
      return false;
    root = subview.getSource();
  }
  const bool declared = getDeclaredStrideMultiple(root) % multiple == 0;
  auto isMultiple = [&](int64_t value) {
    return ShapedType::isDynamic(value) ? declared : value % multiple == 0;
  };
  int64_t rootOffset;
  SmallVector<int64_t> rootStrides;
  return succeeded(cast<MemRefType>(root.getType())
                       .getStridesAndOffset(rootStrides, rootOffset)) &&
         isMultiple(rootOffset) &&
         llvm::all_of(ArrayRef(rootStrides).drop_back(), isMultiple);
}

bool sinkattn::tile::isProvableMultipleOf(OpFoldResult value,
                                          int64_t multiple) {
  if (std::optional<int64_t> constant = getConstantIntValue(value))
    return *constant % multiple == 0;
  Value v = dyn_cast<Value>(value);
  if (!v)
    return false;
  if (auto product = v.getDefiningOp<arith::MulIOp>())
    return isProvableMultipleOf(product.getLhs(), multiple) ||
           isProvableMultipleOf(product.getRhs(), multiple);
  if (auto sum = v.getDefiningOp<arith::AddIOp>())
    return isProvableMultipleOf(sum.getLhs(), multiple) &&
           isProvableMultipleOf(sum.getRhs(), multiple);
  return false;
}

bool sinkattn::tile::hasAlignedViewOffsets(Value tile, unsigned fromBack,
                                           int64_t multiple) {
  while (auto view = tile.getDefiningOp<ViewLikeOpInterface>()) {
    auto subview = dyn_cast<memref::SubViewOp>(view.getOperation());
    if (!subview)
      return false;
    SmallVector<OpFoldResult> offsets = subview.getMixedOffsets();
    if (offsets.size() <= fromBack ||
        !isProvableMultipleOf(offsets[offsets.size() - 1 - fromBack], multiple))
      return false;
    tile = subview.getSource();
  }
  return true;
}

int64_t sinkattn::tile::getSwizzleBytes(Value tile) {
  memref::AllocOp alloc = getSharedAllocation(tile);
  if (!alloc)
    return 0;
  auto swizzle = alloc->getAttrOfType<IntegerAttr>(TileDialect::kSwizzleAttrName);
  return swizzle ? swizzle.getInt() : 0;
}

int64_t sinkattn::tile::getSwizzlePanelColumns(int64_t elementBits) {
  return 128 * 8 / elementBits;
}

Value sinkattn::tile::createSwizzled128Offset(OpBuilder &builder, Location loc,
                                              Value row, Value col,
                                              int64_t rows,
                                              int64_t elementBits) {
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(builder, loc, v);
  };
  int64_t panelColumns = getSwizzlePanelColumns(elementBits);
  int64_t chunkElements = panelColumns / 8; // 16-byte chunks
  Value panel = arith::DivUIOp::create(builder, loc, col, c(panelColumns));
  Value inPanel = arith::RemUIOp::create(builder, loc, col, c(panelColumns));
  Value chunk = arith::DivUIOp::create(builder, loc, inPanel, c(chunkElements));
  Value inChunk = arith::RemUIOp::create(builder, loc, inPanel, c(chunkElements));
  Value swizzled = arith::XOrIOp::create(
      builder, loc, chunk, arith::RemUIOp::create(builder, loc, row, c(8)));
  Value offset =
      arith::MulIOp::create(builder, loc, panel, c(rows * panelColumns));
  offset = arith::AddIOp::create(
      builder, loc, offset,
      arith::MulIOp::create(builder, loc, row, c(panelColumns)));
  offset = arith::AddIOp::create(
      builder, loc, offset,
      arith::MulIOp::create(builder, loc, swizzled, c(chunkElements)));
  return arith::AddIOp::create(builder, loc, offset, inChunk);
}

std::string sinkattn::tile::checkSwizzledStore(StoreOp store) {
  std::string reason;
  llvm::raw_string_ostream os(reason);
  FragmentType type = store.getValue().getType();
  MemRefType viewType = store.getDest().getType();
  // The store verifier keeps `add` out of shared memory and the
  // destination's rank at least the fragment's.
  memref::AllocOp alloc = getSharedAllocation(store.getDest());
  assert(alloc && isSharedMemory(viewType) &&
         "checkSwizzledStore: a store into a shared allocation");
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  if (type.getRank() != 2 || (bits != 16 && bits != 32)) {
    os << "the fragment '" << type << "' is not 2-D of 16- or 32-bit elements";
    return reason;
  }
  ArrayRef<int64_t> view = viewType.getShape().take_back(2);
  ArrayRef<int64_t> tile = alloc.getType().getShape().take_back(2);
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(viewType.getStridesAndOffset(strides, offset)) ||
      strides.back() != 1 || strides[strides.size() - 2] != view[1])
    return "its destination view is not row-major with contiguous rows";
  // The swizzle is periodic from the tile's start: the tile must be whole
  // panels of whole 8-row periods, and the view a whole tile (stage views
  // offset only leading dimensions) or rows of a one-panel tile starting on
  // a multiple of 8 rows.
  int64_t panelColumns = getSwizzlePanelColumns(bits);
  if (tile[0] % 8 != 0 || tile[1] % panelColumns != 0) {
    os << "its tile (" << tile[0] << "x" << tile[1]
       << ") is not whole 8-row periods of " << panelColumns
       << "-column panels";
    return reason;
  }
  bool wholeTile = view == tile &&
                   hasAlignedViewOffsets(store.getDest(), 0, tile[1]) &&
                   hasAlignedViewOffsets(store.getDest(), 1, tile[0]);
  bool panelRows = tile[1] == panelColumns && view[1] == panelColumns &&
                   hasAlignedViewOffsets(store.getDest(), 1, 8);
  if (!wholeTile && !panelRows) {
    os << "its destination is neither a whole tile of its allocation nor "
          "rows of a one-panel ("
       << panelColumns
       << "-column) tile starting at a provable multiple of 8";
    return reason;
  }
  ValueRange indices = store.getIndices().take_back(2);
  if (!isProvableMultipleOf(indices[0], 8) ||
      !isProvableMultipleOf(indices[1], panelColumns)) {
    os << "its trailing indices are not provable multiples of 8 (row) and "
       << panelColumns << " (column: a panel)";
    return reason;
  }
  for (int64_t d = 0; d < 2; ++d) {
    int64_t start = getConstantIntValue(indices[d]).value_or(0);
    if (start + type.getShape()[d] > view[d]) {
      os << "the fragment '" << type << "' does not fit the view at its indices";
      return reason;
    }
  }
  return reason;
}

//===----------------------------------------------------------------------===//
// BarrierArrayType
//===----------------------------------------------------------------------===//

LogicalResult
BarrierArrayType::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t size) {
  if (size < 1 || size > kMaxBarrierSlots)
    return emitError() << "a barrier array has 1 to " << kMaxBarrierSlots
                       << " slots (" << kMBarrierBytes
                       << " bytes each in a block's " << kMaxSharedMemoryBytes
                       << " bytes of shared memory), got " << size;
  return success();
}

//===----------------------------------------------------------------------===//
// FragmentType
//===----------------------------------------------------------------------===//

LogicalResult
FragmentType::verify(function_ref<InFlightDiagnostic()> emitError,
                     ArrayRef<int64_t> shape, Type elementType,
                     Attribute layout) {
  if (shape.empty() || shape.size() > 2)
    return emitError() << "fragments have rank 1 or 2, got rank "
                       << shape.size();
  int64_t elements = 1;
  for (int64_t dim : shape) {
    if (dim <= 0)
      return emitError() << "fragment dimensions must be static and positive";
    if (llvm::MulOverflow(elements, dim, elements) ||
        elements > kMaxFragmentElements)
      return emitError() << "a fragment has at most " << kMaxFragmentElements
                         << " elements (512 per thread of a warpgroup), got "
                         << llvm::interleaved(shape, "x");
  }
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16() &&
      !elementType.isInteger(32) && !elementType.isInteger(1))
    return emitError()
           << "fragment element type must be f32, f16, bf16, i32 or i1, got "
           << elementType;
  if (!layout)
    return success();
  auto layoutAttr = dyn_cast<LayoutAttr>(layout);
  if (!layoutAttr)
    return emitError() << "a fragment layout must be a #tile.layout, got "
                       << layout;
  std::string reason = checkLayout(layoutAttr.getValue(), shape, elementType);
  if (!reason.empty())
    return emitError() << reason;
  return success();
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

std::optional<LayoutKind> sinkattn::tile::getLayoutKind(FragmentType type) {
  if (auto layout = dyn_cast_or_null<LayoutAttr>(type.getLayout()))
    return layout.getValue();
  return std::nullopt;
}

int64_t sinkattn::tile::getRegistersPerThread(FragmentType type) {
  std::optional<LayoutKind> kind = getLayoutKind(type);
  assert(kind && "fragment has no layout");
  if (*kind == LayoutKind::rows)
    return type.getShape()[0] / 32;
  return type.getNumElements() / 128;
}

std::string sinkattn::tile::checkLayout(LayoutKind kind, ArrayRef<int64_t> shape,
                                        Type elementType) {
  std::string reason;
  llvm::raw_string_ostream os(reason);
  std::string name = "#tile.layout<" + stringifyLayoutKind(kind).str() + ">";
  size_t rank = kind == LayoutKind::rows ? 1 : 2;
  if (shape.size() != rank) {
    os << name << " distributes rank-" << rank << " fragments, got rank "
       << shape.size();
    return reason;
  }
  if (shape[0] % 64 != 0) {
    os << name << " needs a multiple of 64 rows (wgmma works on 64-row "
       << "blocks), got " << shape[0];
    return reason;
  }
  if (kind == LayoutKind::accumulator && shape[1] % 8 != 0)
    os << name << " needs a multiple of 8 columns (wgmma n), got " << shape[1];
  if (kind == LayoutKind::operand_a) {
    if (!elementType.isBF16() && !elementType.isF16())
      os << name << " holds bf16 or f16 elements (wgmma A), got "
         << elementType;
    else if (shape[1] % 16 != 0)
      os << name << " needs a multiple of 16 columns (wgmma k), got "
         << shape[1];
  }
  return reason;
}

Type FragmentType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> shape;
  Type elementType;
  Attribute layout;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false,
                                /*withTrailingX=*/true) ||
      parser.parseType(elementType))
    return {};
  if (succeeded(parser.parseOptionalComma()) && parser.parseAttribute(layout))
    return {};
  if (parser.parseGreater())
    return {};
  return parser.getChecked<FragmentType>(loc, parser.getContext(), shape,
                                         elementType, layout);
}

void FragmentType::print(AsmPrinter &printer) const {
  printer << '<';
  for (int64_t dim : getShape())
    printer << dim << 'x';
  printer << getElementType();
  if (getLayout())
    printer << ", " << getLayout();
  printer << '>';
}

ShapedType FragmentType::cloneWith(std::optional<ArrayRef<int64_t>> shape,
                                   Type elementType) const {
  return FragmentType::get(shape ? *shape : getShape(), elementType);
}

int64_t FragmentType::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : getShape())
    count *= dim;
  return count;
}
