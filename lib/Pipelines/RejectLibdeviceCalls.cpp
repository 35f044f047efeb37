//===- RejectLibdeviceCalls.cpp - Kernels must not call libdevice ---------===//
//
// SinkAttn links no libdevice; upstream's gpu-module-to-binary would link it
// only where CUDA_ROOT/CUDA_HOME/CUDA_PATH name a toolkit. A libdevice call
// is therefore an error here, in every environment (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace sinkattn {
#define GEN_PASS_DEF_REJECTLIBDEVICECALLSPASS
#include "SinkAttn/Pipelines/Passes.h.inc"
} // namespace sinkattn

namespace {
/// libdevice's functions are all named __nv_<name>.
constexpr llvm::StringLiteral kLibdevicePrefix = "__nv_";

struct RejectLibdeviceCallsPass
    : public sinkattn::impl::RejectLibdeviceCallsPassBase<
          RejectLibdeviceCallsPass> {
  using Base::Base;

  void runOnOperation() override {
    gpu::GPUModuleOp module = getOperation();
    SymbolTable symbols(module);
    bool failed = false;
    module.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (!callee || !callee->starts_with(kLibdevicePrefix))
        return;
      auto function = symbols.lookup<LLVM::LLVMFuncOp>(*callee);
      // A definition in the module is the module's own code.
      if (function && !function.isExternal())
        return;
      auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
      call.emitError() << "'" << (caller ? caller.getName() : StringRef("?"))
                       << "' calls libdevice function '" << *callee
                       << "', but SinkAttn links no libdevice (ptxas and the "
                          "JIT would reject the unresolved call): lower the "
                          "op inside a tile.map, or use arith ops with "
                          "fastmath<contract> or an NVVM intrinsic";
      failed = true;
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
