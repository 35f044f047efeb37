//===- TileDialect.cpp - The tile dialect and its types -------------------===//

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace sinkattn::tile;

#include "SinkAttn/Dialect/Tile/IR/TileOpsDialect.cpp.inc"
#include "SinkAttn/Dialect/Tile/IR/TileEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileOpsTypes.cpp.inc"

void TileDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "SinkAttn/Dialect/Tile/IR/TileOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "SinkAttn/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
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

//===----------------------------------------------------------------------===//
// BarrierArrayType
//===----------------------------------------------------------------------===//

LogicalResult
BarrierArrayType::verify(function_ref<InFlightDiagnostic()> emitError,
                         int64_t size) {
  if (size < 1)
    return emitError() << "a barrier array needs at least one slot, got "
                       << size;
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
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << "fragment dimensions must be static and positive";
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16() &&
      !elementType.isInteger(32) && !elementType.isInteger(1))
    return emitError()
           << "fragment element type must be f32, f16, bf16, i32 or i1, got "
           << elementType;
  return success();
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
