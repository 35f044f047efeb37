//===- TensorMapsByValue.cpp - Tensor maps as grid-constant params --------===//

#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace sinkattn {
#define GEN_PASS_DEF_TENSORMAPSBYVALUEPASS
#include "SinkAttn/Pipelines/Passes.h.inc"
} // namespace sinkattn

namespace {
/// Size and alignment of CUtensorMap (cuda.h: CU_TENSOR_MAP_NUM_QWORDS = 16,
/// aligned to 64 bytes).
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlign = 64;

struct TensorMapsByValuePass
    : public sinkattn::impl::TensorMapsByValuePassBase<TensorMapsByValuePass> {
  using Base::Base;

  void runOnOperation() override {
    auto result = getOperation().walk([](LLVM::LLVMFuncOp func) {
      if (failed(markTensorMapArgs(func)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  static LogicalResult markTensorMapArgs(LLVM::LLVMFuncOp func) {
    auto positions = func->getAttrOfType<DenseI64ArrayAttr>(
        sinkattn::kTensorMapArgsAttrName);
    if (!positions) {
      if (func->hasAttr(sinkattn::kTensorMapArgsAttrName))
        return func.emitError() << "'" << sinkattn::kTensorMapArgsAttrName
                                << "' must be a DenseI64ArrayAttr";
      return success();
    }
    if (!func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
      return func.emitError() << "'" << sinkattn::kTensorMapArgsAttrName
                              << "' is only valid on kernels";
    Builder builder(func.getContext());
    Type mapType =
        LLVM::LLVMArrayType::get(builder.getI8Type(), kTensorMapBytes);
    for (int64_t position : positions.asArrayRef()) {
      if (position < 0 || position >= func.getNumArguments())
        return func.emitError()
               << "tensor map argument " << position << " does not exist ("
               << func.getNumArguments() << " arguments)";
      Type type = func.getArgument(position).getType();
      if (!isa<LLVM::LLVMPointerType>(type))
        return func.emitError()
               << "tensor map argument " << position
               << " must be !llvm.ptr, got " << type
               << " (positions are the lowered function's: "
                  "sinkattn-tensor-map-arg-positions renumbers a gpu.func's "
                  "before convert-gpu-to-nvvm)";
      func.setArgAttr(position, LLVM::LLVMDialect::getByValAttrName(),
                      TypeAttr::get(mapType));
      func.setArgAttr(position, LLVM::LLVMDialect::getAlignAttrName(),
                      builder.getI64IntegerAttr(kTensorMapAlign));
      func.setArgAttr(position, NVVM::NVVMDialect::getGridConstantAttrName(),
                      builder.getUnitAttr());
    }
    func->removeAttr(sinkattn::kTensorMapArgsAttrName);
    return success();
  }
};
} // namespace
