//===- Pipelines.h - Named pass pipelines and PTX compilation ---*- C++ -*-===//

#ifndef SINKATTN_PIPELINES_PIPELINES_H
#define SINKATTN_PIPELINES_PIPELINES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <memory>
#include <string>

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace sinkattn {

/// Function attribute of a kernel listing the `!llvm.ptr` arguments that
/// carry a CUtensorMap by value (see `sinkattn-tensor-maps-by-value`).
inline constexpr llvm::StringLiteral kTensorMapArgsAttrName =
    "sinkattn.tensor_map_args";

/// Code-generation target of the PTX pipeline.
struct PTXTargetOptions {
  /// The `wgmma` and `setmaxnreg` instructions need the arch-specific target.
  std::string chip = "sm_90a";
  /// PTX ISA 8.0 is the first with every Hopper instruction we emit.
  std::string features = "+ptx80";
  int optLevel = 3;
  /// Pass each memref kernel argument as one pointer (static shapes only)
  /// instead of an expanded memref descriptor.
  bool barePointers = false;
};

/// Appends the passes that take tile IR kernels to nvgpu/nvvm
/// (`sinkattn-tile-to-nvgpu`).
void buildTileToNVGPUPipeline(mlir::OpPassManager &pm);

/// Appends the part of that pipeline that stops once gpu.modules hold
/// LLVM/NVVM dialect IR (before serialization).
void buildGpuToNVVMPipeline(mlir::OpPassManager &pm,
                            const PTXTargetOptions &options);

/// Appends the pipeline that lowers `gpu`/`nvgpu`/`nvvm` IR (kernels in
/// `gpu.module`s) to `gpu.binary` ops holding PTX text.
void buildGpuToPTXPipeline(mlir::OpPassManager &pm,
                           const PTXTargetOptions &options);

/// Runs that pipeline on `module` (in place) and returns the PTX of every
/// `gpu.binary`, keyed by binary name. Diagnostics go to the context's
/// handlers; failure means they have been reported.
mlir::FailureOr<std::map<std::string, std::string>>
compileToPTX(mlir::ModuleOp module, const PTXTargetOptions &options = {});

/// Runs buildGpuToNVVMPipeline on `module` (in place) and returns the LLVM
/// IR of its gpu.modules as text.
mlir::FailureOr<std::string> compileToLLVMIR(mlir::ModuleOp module,
                                             const PTXTargetOptions &options = {});

/// Returns the PTX held by the `gpu.binary` ops of `module`, keyed by binary
/// name (with `.<i>` appended when a binary has several objects). Emits an
/// error on an object that is not PTX assembly.
mlir::FailureOr<std::map<std::string, std::string>>
extractPTX(mlir::ModuleOp module);

#define GEN_PASS_DECL
#include "SinkAttn/Pipelines/Passes.h.inc"

/// Registers `sinkattn-gpu-to-ptx` and the passes of this library with the
/// global registry (for `sinkattn-opt` and other opt tools).
void registerSinkAttnPipelines();

/// Registers every SinkAttn pass (the tile dialect's, the conversions', this
/// library's) and the named pipelines, once: later calls do nothing, since
/// the registry refuses a pipeline registered twice.
void registerAllSinkAttnPasses();

} // namespace sinkattn

#endif // SINKATTN_PIPELINES_PIPELINES_H
