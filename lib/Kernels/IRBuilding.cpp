//===- IRBuilding.cpp - Helpers for building kernels as typed IR ----------===//

#include "IRBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

Type sinkattn::kernels::getElementType(MLIRContext *context, rt::DType type) {
  switch (type) {
  case rt::DType::BF16:
    return BFloat16Type::get(context);
  case rt::DType::F16:
    return Float16Type::get(context);
  case rt::DType::F32:
    return Float32Type::get(context);
  default:
    llvm_unreachable("kernels are built for bf16, f16 or f32 elements");
  }
}

MemRefType sinkattn::kernels::getSharedMemRefType(ArrayRef<int64_t> shape,
                                                  Type elementType) {
  MLIRContext *context = elementType.getContext();
  return MemRefType::get(
      shape, elementType, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
}

Value sinkattn::kernels::constantIndex(ImplicitLocOpBuilder &b, int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}

Value sinkattn::kernels::divUI32(ImplicitLocOpBuilder &b, Value lhs,
                                 Value rhs) {
  // Folded as built: a constant divisor stays visible, which makes the
  // division speculatable (warp specialization repeats such ops).
  Type i32 = b.getI32Type();
  Value quotient = b.createOrFold<arith::DivUIOp>(
      b.createOrFold<arith::IndexCastUIOp>(i32, lhs),
      b.createOrFold<arith::IndexCastUIOp>(i32, rhs));
  return b.createOrFold<arith::IndexCastUIOp>(b.getIndexType(), quotient);
}

Value sinkattn::kernels::constantF32(ImplicitLocOpBuilder &b, float value) {
  return arith::ConstantFloatOp::create(b, b.getF32Type(),
                                        llvm::APFloat(value));
}

Value sinkattn::kernels::allocShared(ImplicitLocOpBuilder &b, MemRefType type,
                                     std::optional<int64_t> alignment) {
  return memref::AllocOp::create(
      b, type, alignment ? b.getI64IntegerAttr(*alignment) : IntegerAttr());
}

sinkattn::kernels::KernelSkeleton
sinkattn::kernels::createKernel(ImplicitLocOpBuilder &b, StringRef name,
                                TypeRange argTypes,
                                ArrayRef<int32_t> knownBlockSize) {
  // Builders, unlike the parser, need the dialects of the ops they create
  // loaded.
  b.getContext()
      ->loadDialect<arith::ArithDialect, gpu::GPUDialect, memref::MemRefDialect,
                    scf::SCFDialect, tile::TileDialect>();
  KernelSkeleton kernel;
  kernel.module = ModuleOp::create(b.getLoc());
  (*kernel.module)
      ->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
  b.setInsertionPointToStart(kernel.module->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, name);
  b.setInsertionPointToStart(gpuModule.getBody());
  kernel.func =
      gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}));
  kernel.func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                       b.getUnitAttr());
  if (!knownBlockSize.empty())
    kernel.func.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(knownBlockSize));
  b.setInsertionPointToStart(&kernel.func.front());
  return kernel;
}

LogicalResult sinkattn::kernels::verifyKernel(KernelSkeleton &kernel,
                                              StringRef name) {
  if (succeeded(verify(*kernel.module)))
    return success();
  return emitError(kernel.module->getLoc())
         << "internal error: the built " << name << " kernel does not verify";
}

scf::ForOp sinkattn::kernels::buildForLoop(ImplicitLocOpBuilder &b, Value lower,
                                           Value upper, Value step,
                                           function_ref<void(Value iv)> body) {
  // Without iteration arguments the loop comes with its scf.yield.
  auto loop = scf::ForOp::create(b, lower, upper, step);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  body(loop.getInductionVar());
  return loop;
}

scf::ForOp sinkattn::kernels::buildForLoop(
    ImplicitLocOpBuilder &b, Value lower, Value upper, Value step,
    ValueRange inits,
    function_ref<SmallVector<Value>(Value iv, ValueRange iterArgs)> body) {
  auto loop = scf::ForOp::create(b, lower, upper, step, inits);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(loop.getBody());
  SmallVector<Value> yielded =
      body(loop.getInductionVar(), loop.getRegionIterArgs());
  scf::YieldOp::create(b, yielded);
  return loop;
}

scf::ForOp
sinkattn::kernels::buildPipelinedLoop(ImplicitLocOpBuilder &b, Value lower,
                                      Value upper, Value step, int64_t stages,
                                      function_ref<void(Value iv)> body) {
  scf::ForOp loop = buildForLoop(b, lower, upper, step, body);
  loop->setAttr(tile::TileDialect::kNumStagesAttrName,
                b.getI64IntegerAttr(stages));
  return loop;
}

scf::ForOp sinkattn::kernels::buildPipelinedLoop(
    ImplicitLocOpBuilder &b, Value lower, Value upper, Value step,
    int64_t stages, ValueRange inits,
    function_ref<SmallVector<Value>(Value iv, ValueRange iterArgs)> body) {
  scf::ForOp loop = buildForLoop(b, lower, upper, step, inits, body);
  loop->setAttr(tile::TileDialect::kNumStagesAttrName,
                b.getI64IntegerAttr(stages));
  return loop;
}

scf::IfOp sinkattn::kernels::buildIfThen(ImplicitLocOpBuilder &b,
                                         Value condition,
                                         function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  body();
  return ifOp;
}

scf::IfOp sinkattn::kernels::buildIfThenElse(
    ImplicitLocOpBuilder &b, TypeRange resultTypes, Value condition,
    function_ref<SmallVector<Value>()> thenBody,
    function_ref<SmallVector<Value>()> elseBody) {
  auto ifOp = scf::IfOp::create(b, resultTypes, condition,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  auto buildBranch = [&](Block *block,
                         function_ref<SmallVector<Value>()> body) {
    // Without results the branches come with their scf.yield.
    if (resultTypes.empty()) {
      b.setInsertionPoint(block->getTerminator());
      body();
      return;
    }
    b.setInsertionPointToEnd(block);
    SmallVector<Value> yielded = body();
    scf::YieldOp::create(b, yielded);
  };
  buildBranch(ifOp.thenBlock(), thenBody);
  buildBranch(ifOp.elseBlock(), elseBody);
  return ifOp;
}

Value sinkattn::kernels::buildMap(
    ImplicitLocOpBuilder &b, Type resultType, ValueRange inputs,
    function_ref<Value(ValueRange indices, ValueRange elements)> body) {
  auto map = tile::MapOp::create(b, resultType, inputs);
  auto rank = cast<tile::FragmentType>(resultType).getRank();
  SmallVector<Type> argTypes(rank, b.getIndexType());
  for (Value input : inputs)
    argTypes.push_back(cast<tile::FragmentType>(input.getType()).getElementType());
  SmallVector<Location> argLocs(argTypes.size(), b.getLoc());
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(&map.getBody(), {}, argTypes, argLocs);
  Value element = body(block->getArguments().take_front(rank),
                       block->getArguments().drop_front(rank));
  tile::YieldOp::create(b, element);
  return map.getResult();
}

/// tile.copy's `engine` attribute: none for the default (TMA).
static sinkattn::tile::CopyEngineAttr
getEngineAttr(ImplicitLocOpBuilder &b,
              std::optional<sinkattn::tile::CopyEngine> engine) {
  return engine ? sinkattn::tile::CopyEngineAttr::get(b.getContext(), *engine)
                : nullptr;
}

Operation *
sinkattn::kernels::buildLoadTile(ImplicitLocOpBuilder &b, Value global,
                                 ValueRange indices, Value shared,
                                 std::optional<tile::CopyEngine> engine) {
  return tile::CopyOp::create(b, global, indices, shared, ValueRange(),
                              getEngineAttr(b, engine), /*add=*/false,
                              /*pending=*/nullptr);
}

Operation *
sinkattn::kernels::buildStoreTile(ImplicitLocOpBuilder &b, Value shared,
                                  Value global, ValueRange indices,
                                  std::optional<tile::CopyEngine> engine) {
  return tile::CopyOp::create(b, shared, ValueRange(), global, indices,
                              getEngineAttr(b, engine), /*add=*/false,
                              /*pending=*/nullptr);
}

Value sinkattn::kernels::buildSubView(ImplicitLocOpBuilder &b, Value source,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<int64_t> sizes) {
  SmallVector<OpFoldResult> sizeValues =
      getAsIndexOpFoldResult(b.getContext(), sizes);
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  return memref::SubViewOp::create(b, source, offsets, sizeValues, strides);
}

Value sinkattn::kernels::buildSubView(ImplicitLocOpBuilder &b, Value source,
                                      ArrayRef<OpFoldResult> offsets,
                                      ArrayRef<OpFoldResult> sizes,
                                      MemRefType resultType) {
  SmallVector<OpFoldResult> strides(sizes.size(), b.getIndexAttr(1));
  if (resultType)
    return memref::SubViewOp::create(b, resultType, source, offsets, sizes,
                                     strides);
  return memref::SubViewOp::create(b, source, offsets, sizes, strides);
}

MemRefType sinkattn::kernels::getSharedViewType(ArrayRef<int64_t> shape,
                                                Type elementType,
                                                ArrayRef<int64_t> strides) {
  MLIRContext *context = elementType.getContext();
  return MemRefType::get(
      shape, elementType,
      StridedLayoutAttr::get(context, ShapedType::kDynamic, strides),
      gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
}

Value sinkattn::kernels::buildGemmWait(ImplicitLocOpBuilder &b, Value async,
                                       int64_t pending) {
  return tile::GemmWaitOp::create(b, TypeRange{async.getType()},
                                  ValueRange{async}, pending)
      .getResult(0);
}

Value sinkattn::kernels::buildWarpgroupIndex(ImplicitLocOpBuilder &b) {
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value threadsPerWarpgroup = constantIndex(b, 128);
  Value warpgroupOfLane = arith::DivUIOp::create(b, tid, threadsPerWarpgroup);
  Value warpgroupOfLane32 =
      arith::IndexCastUIOp::create(b, b.getI32Type(), warpgroupOfLane);
  Value lane0 = arith::ConstantIntOp::create(b, b.getI32Type(), 0);
  Value warpSize = arith::ConstantIntOp::create(b, b.getI32Type(), 32);
  auto shuffle = gpu::ShuffleOp::create(b, warpgroupOfLane32, lane0, warpSize,
                                        gpu::ShuffleMode::IDX);
  return arith::IndexCastUIOp::create(b, b.getIndexType(),
                                      shuffle.getShuffleResult());
}
