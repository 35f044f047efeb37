//===- TensorMapArgPositions.cpp - Tensor maps in the LLVM signature ------===//
//
// convert-gpu-to-nvvm expands memref arguments into their descriptors'
// fields unless kernels use bare pointers, so a tensor map's position in
// the gpu.func is not its position in the llvm.func (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace sinkattn {
#define GEN_PASS_DEF_TENSORMAPARGPOSITIONSPASS
#include "SinkAttn/Pipelines/Passes.h.inc"
} // namespace sinkattn

namespace {
struct TensorMapArgPositionsPass
    : public sinkattn::impl::TensorMapArgPositionsPassBase<
          TensorMapArgPositionsPass> {
  using Base::Base;

  void runOnOperation() override {
    auto result = getOperation().walk([&](gpu::GPUFuncOp func) {
      if (failed(renumber(func)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }

  /// The arguments `type` becomes in the LLVM signature: upstream's memref
  /// descriptor is (allocated, aligned, offset, sizes[rank], strides[rank]).
  FailureOr<int64_t> loweredWidth(gpu::GPUFuncOp func, unsigned position) {
    Type type = func.getArgumentTypes()[position];
    if (isa<UnrankedMemRefType>(type))
      return func.emitOpError()
             << "argument " << position
             << " is an unranked memref, whose lowered width is not known "
                "here; a tensor-map argument follows it";
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || barePointers)
      return 1;
    return 3 + 2 * memref.getRank();
  }

  LogicalResult renumber(gpu::GPUFuncOp func) {
    auto positions = func->getAttrOfType<DenseI64ArrayAttr>(
        sinkattn::kTensorMapArgsAttrName);
    if (!positions) {
      if (func->hasAttr(sinkattn::kTensorMapArgsAttrName))
        return func.emitOpError() << "'" << sinkattn::kTensorMapArgsAttrName
                                  << "' must be a DenseI64ArrayAttr";
      return success();
    }
    if (!func.isKernel())
      return func.emitOpError() << "'" << sinkattn::kTensorMapArgsAttrName
                                << "' is only valid on kernels";
    SmallVector<int64_t> renumbered;
    for (int64_t position : positions.asArrayRef()) {
      if (position < 0 || position >= int64_t(func.getNumArguments()))
        return func.emitOpError()
               << "tensor map argument " << position << " does not exist ("
               << func.getNumArguments() << " arguments)";
      Type type = func.getArgumentTypes()[position];
      if (!isa<LLVM::LLVMPointerType>(type))
        return func.emitOpError() << "tensor map argument " << position
                                  << " must be !llvm.ptr, got " << type;
      int64_t lowered = 0;
      for (unsigned before = 0; before < position; ++before) {
        FailureOr<int64_t> width = loweredWidth(func, before);
        if (failed(width))
          return failure();
        lowered += *width;
      }
      renumbered.push_back(lowered);
    }
    func->setAttr(sinkattn::kTensorMapArgsAttrName,
                  Builder(func.getContext()).getDenseI64ArrayAttr(renumbered));
    return success();
  }
};
} // namespace
