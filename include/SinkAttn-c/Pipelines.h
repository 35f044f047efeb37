//===- Pipelines.h - C API of SinkAttn's passes and pipelines -----*- C -*-===//
//
// Registration of SinkAttn's passes and named pipelines, the dialects a tile
// kernel needs, and tile IR to PTX compilation, for the MLIR C API
// (libSinkAttnCAPI.so, which also carries MLIR's core C API, mlir-c/IR.h and
// mlir-c/Pass.h). A program that compiles a kernel:
//
//   MlirDialectRegistry registry = mlirDialectRegistryCreate();
//   sinkattnRegisterDialects(registry);
//   MlirContext context = mlirContextCreateWithRegistry(registry, false);
//   MlirModule module = mlirModuleCreateParse(context, text);
//   if (mlirModuleIsNull(module)) ...            // diagnostics were emitted
//   MlirLogicalResult r = sinkattnCompileTileToPTX(
//       module, sinkattnPTXTargetOptionsGetDefault(), onPTX, userData);
//   if (mlirLogicalResultIsFailure(r)) ...       // diagnostics were emitted
//
// Errors are reported as MLIR diagnostics on the module's context (attach a
// handler with mlirContextAttachDiagnosticHandler to collect them).
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_C_PIPELINES_H
#define SINKATTN_C_PIPELINES_H

#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers SinkAttn's passes (`tile-*`, `convert-tile-*`, `sinkattn-*`) and
/// named pipelines (`sinkattn-tile-to-nvgpu`, `sinkattn-tile-to-ptx`,
/// `sinkattn-gpu-to-ptx`) with MLIR's global pass registry, so that
/// mlirParsePassPipeline and mlirOpPassManagerAddPipeline accept them.
/// Calling it again does nothing.
MLIR_CAPI_EXPORTED void sinkattnRegisterPasses(void);

/// Inserts into `registry` what compiling a tile kernel needs: the tile
/// dialect, every upstream dialect and extension (the NVVM target among
/// them) and the translations of the GPU, LLVM and NVVM dialects to LLVM IR.
MLIR_CAPI_EXPORTED void sinkattnRegisterDialects(MlirDialectRegistry registry);

/// The code-generation target of PTX compilation.
typedef struct {
  /// The GPU (PTX `.target`), "sm_90a" by default.
  MlirStringRef chip;
  /// LLVM NVPTX features, the PTX ISA version: "+ptx80" by default.
  MlirStringRef features;
  /// LLVM's optimization level, 0 to 3 (default 3).
  int optLevel;
  /// Pass each statically shaped memref kernel argument as one pointer
  /// instead of a memref descriptor (default false).
  bool barePointers;
} SinkattnPTXTargetOptions;

/// The defaults above (the `sinkattn-tile-to-ptx` pipeline's).
MLIR_CAPI_EXPORTED SinkattnPTXTargetOptions
sinkattnPTXTargetOptionsGetDefault(void);

/// Receives the PTX of one kernel module: the name of its `gpu.binary` and
/// the PTX text, valid only during the call.
typedef void (*SinkattnPTXCallback)(MlirStringRef name, MlirStringRef ptx,
                                    void *userData);

/// Runs `sinkattn-tile-to-ptx` on `module` (in place: afterwards it holds
/// `gpu.binary` ops) and calls `callback` once per kernel module, in the
/// order of their names. Returns failure, and calls no callback, when a pass
/// fails, when an option is out of range or when the module holds no kernel;
/// the reasons are emitted as diagnostics on the module's context.
MLIR_CAPI_EXPORTED MlirLogicalResult sinkattnCompileTileToPTX(
    MlirModule module, SinkattnPTXTargetOptions options,
    SinkattnPTXCallback callback, void *userData);

#ifdef __cplusplus
}
#endif

#endif // SINKATTN_C_PIPELINES_H
