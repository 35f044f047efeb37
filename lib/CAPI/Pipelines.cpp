//===- Pipelines.cpp - C API of SinkAttn's passes and pipelines -----------===//

#include "SinkAttn-c/Pipelines.h"

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"
#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Support.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"


using namespace mlir;

void sinkattnRegisterPasses(void) { sinkattn::registerAllSinkAttnPasses(); }

void sinkattnRegisterDialects(MlirDialectRegistry registry) {
  DialectRegistry &r = *unwrap(registry);
  registerAllDialects(r);
  registerAllExtensions(r);
  // gpu-module-to-binary translates gpu.modules to LLVM IR in-process.
  registerBuiltinDialectTranslation(r);
  registerGPUDialectTranslation(r);
  registerLLVMDialectTranslation(r);
  registerNVVMDialectTranslation(r);
  r.insert<sinkattn::tile::TileDialect>();
}

SinkattnPTXTargetOptions sinkattnPTXTargetOptionsGetDefault(void) {
  // The C++ defaults, which the C struct must not copy by hand. The strings
  // are static: the C struct holds references.
  static const sinkattn::PTXTargetOptions defaults;
  return {wrap(llvm::StringRef(defaults.chip)),
          wrap(llvm::StringRef(defaults.features)), defaults.optLevel,
          defaults.barePointers};
}

MlirLogicalResult sinkattnCompileTileToPTX(MlirModule module,
                                           SinkattnPTXTargetOptions options,
                                           SinkattnPTXCallback callback,
                                           void *userData) {
  ModuleOp op = unwrap(module);
  if (options.optLevel < 0 || options.optLevel > 3) {
    op.emitError() << "sinkattnCompileTileToPTX: optLevel " << options.optLevel
                   << " is not 0 to 3";
    return mlirLogicalResultFailure();
  }
  sinkattn::PTXTargetOptions target;
  target.chip = unwrap(options.chip).str();
  target.features = unwrap(options.features).str();
  target.optLevel = options.optLevel;
  target.barePointers = options.barePointers;

  PassManager pm = PassManager::on<ModuleOp>(op.getContext());
  sinkattn::buildTileToNVGPUPipeline(pm);
  if (failed(pm.run(op)))
    return mlirLogicalResultFailure();
  FailureOr<std::map<std::string, std::string>> ptx =
      sinkattn::compileToPTX(op, target);
  if (failed(ptx))
    return mlirLogicalResultFailure();
  for (const auto &[name, text] : *ptx)
    callback(wrap(llvm::StringRef(name)), wrap(llvm::StringRef(text)),
             userData);
  return mlirLogicalResultSuccess();
}
