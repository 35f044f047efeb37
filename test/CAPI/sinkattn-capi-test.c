// The C API (include/SinkAttn-c) from a plain C program: the tile dialect
// through its handle, the passes through MLIR's pass-pipeline parser, and a
// tile kernel compiled to PTX; every failure a diagnostic and exit status 1.
//
// RUN: sinkattn-capi-test dialect | FileCheck %s --check-prefix=DIALECT
// RUN: sinkattn-capi-test ptx %S/../Pipelines/tile-to-ptx.mlir | FileCheck %s --check-prefix=PTX
// RUN: sinkattn-capi-test pipeline "builtin.module(sinkattn-tile-to-nvgpu)" %S/../Pipelines/tile-to-ptx.mlir | FileCheck %s --check-prefix=NVGPU
//
// RUN: not sinkattn-capi-test ptx %S/Inputs/bad-syntax.mlir 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not sinkattn-capi-test ptx %S/Inputs/no-kernel.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not sinkattn-capi-test ptx %S/Inputs/shared-memory.mlir 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not sinkattn-capi-test ptx %S/Inputs/libdevice.mlir 2>&1 | FileCheck %s --check-prefix=LIBDEVICE
// RUN: not sinkattn-capi-test ptx-O7 %S/../Pipelines/tile-to-ptx.mlir 2>&1 | FileCheck %s --check-prefix=OPTLEVEL
// RUN: not sinkattn-capi-test pipeline "builtin.module(sinkattn-no-such-pass)" %S/../Pipelines/tile-to-ptx.mlir 2>&1 | FileCheck %s --check-prefix=NOPASS
// RUN: not sinkattn-capi-test ptx %S/Inputs/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: not sinkattn-capi-test 2>&1 | FileCheck %s --check-prefix=USAGE

// DIALECT: dialect handle: tile
// DIALECT-NEXT: loaded: tile

// PTX: // kernel stream
// PTX: .version 8.0
// PTX-NEXT: .target sm_90a
// PTX: .entry stream(
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared.b64

// NVGPU: gpu.func @stream
// NVGPU: nvgpu.mbarrier.arrive.expect_tx
// NVGPU-NOT: tile.tma_copy

// SYNTAX: bad-syntax.mlir":3:3): error: unregistered operation 'tile.no_such_op' found in dialect ('tile')
// SYNTAX-NEXT: error: the input is not a valid module
// EMPTY: no-kernel.mlir":0:0): error: no gpu.module to compile: the module holds no kernels
// EMPTY-NEXT: error: compiling to PTX failed
// SMEM: error: 'gpu.func' op kernel needs more than 262144 bytes of shared memory
// SMEM: error: compiling to PTX failed
// LIBDEVICE: error: 'k' calls libdevice function '__nv_fmaf'
// LIBDEVICE: error: compiling to PTX failed
// OPTLEVEL: tile-to-ptx.mlir":{{[0-9]+}}:1): error: sinkattnCompileTileToPTX: optLevel 7 is not 0 to 3
// NOPASS: Parser:1:1: error: 'sinkattn-no-such-pass' does not refer to a registered pass or pass pipeline
// NOFILE: error: {{.*}}does-not-exist.mlir
// USAGE: usage: sinkattn-capi-test dialect | ptx FILE | ptx-O<N> FILE | pipeline PIPELINE FILE

#include "SinkAttn-c/Dialects.h"
#include "SinkAttn-c/Pipelines.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void printToFile(MlirStringRef text, void *file) {
  fwrite(text.data, 1, text.length, (FILE *)file);
}

static MlirLogicalResult printDiagnostic(MlirDiagnostic diagnostic,
                                         void *userData) {
  (void)userData;
  mlirLocationPrint(mlirDiagnosticGetLocation(diagnostic), printToFile, stderr);
  fputs(": ", stderr);
  switch (mlirDiagnosticGetSeverity(diagnostic)) {
  case MlirDiagnosticError:
    fputs("error: ", stderr);
    break;
  case MlirDiagnosticWarning:
    fputs("warning: ", stderr);
    break;
  case MlirDiagnosticNote:
    fputs("note: ", stderr);
    break;
  case MlirDiagnosticRemark:
    fputs("remark: ", stderr);
    break;
  }
  mlirDiagnosticPrint(diagnostic, printToFile, stderr);
  fputc('\n', stderr);
  return mlirLogicalResultSuccess();
}

static void printPTX(MlirStringRef name, MlirStringRef ptx, void *userData) {
  (void)userData;
  printf("// kernel %.*s\n%.*s", (int)name.length, name.data,
         (int)ptx.length, ptx.data);
}

static int dialect(void) {
  // A bare context: the tile dialect comes through its handle alone.
  MlirContext context = mlirContextCreate();
  MlirDialectHandle handle = mlirGetDialectHandle__tile__();
  MlirStringRef name = mlirDialectHandleGetNamespace(handle);
  printf("dialect handle: %.*s\n", (int)name.length, name.data);
  MlirDialect tile = mlirDialectHandleLoadDialect(handle, context);
  MlirStringRef loaded = mlirDialectGetNamespace(tile);
  printf("loaded: %.*s\n", (int)loaded.length, loaded.data);
  int status = mlirDialectIsNull(tile) ? 1 : 0;
  mlirContextDestroy(context);
  return status;
}

/// Parses `path` in a context holding what tile kernels need, then compiles
/// it to PTX (pipeline NULL) or runs `pipeline` on it and prints the result.
static int compile(const char *path, int optLevel, const char *pipeline) {
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  sinkattnRegisterDialects(registry);
  MlirContext context = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirContextAttachDiagnosticHandler(context, printDiagnostic, NULL, NULL);

  int status = 1;
  MlirModule module =
      mlirModuleCreateParseFromFile(context, mlirStringRefCreateFromCString(path));
  if (mlirModuleIsNull(module)) {
    fprintf(stderr, "error: the input is not a valid module\n");
    goto done;
  }
  if (pipeline) {
    sinkattnRegisterPasses();
    MlirPassManager pm = mlirPassManagerCreate(context);
    MlirLogicalResult parsed = mlirParsePassPipeline(
        mlirPassManagerGetAsOpPassManager(pm),
        mlirStringRefCreateFromCString(pipeline), printToFile, stderr);
    if (mlirLogicalResultIsFailure(parsed)) {
      fputc('\n', stderr);
    } else if (mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(
                   pm, mlirModuleGetOperation(module)))) {
      mlirOperationPrint(mlirModuleGetOperation(module), printToFile, stdout);
      status = 0;
    }
    mlirPassManagerDestroy(pm);
  } else {
    SinkattnPTXTargetOptions options = sinkattnPTXTargetOptionsGetDefault();
    options.optLevel = optLevel;
    // Kernels with TMA take their tensor maps as extra pointer arguments,
    // which the bare-pointer convention keeps at known positions.
    options.barePointers = true;
    if (mlirLogicalResultIsSuccess(
            sinkattnCompileTileToPTX(module, options, printPTX, NULL)))
      status = 0;
    else
      fprintf(stderr, "error: compiling to PTX failed\n");
  }
  mlirModuleDestroy(module);
done:
  mlirContextDestroy(context);
  return status;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "dialect"))
    return dialect();
  if (argc == 3 && !strcmp(argv[1], "ptx"))
    return compile(argv[2], sinkattnPTXTargetOptionsGetDefault().optLevel, NULL);
  if (argc == 3 && !strncmp(argv[1], "ptx-O", 5))
    return compile(argv[2], atoi(argv[1] + 5), NULL);
  if (argc == 4 && !strcmp(argv[1], "pipeline"))
    return compile(argv[3], 0, argv[2]);
  fprintf(stderr, "usage: sinkattn-capi-test dialect | ptx FILE | "
                  "ptx-O<N> FILE | pipeline PIPELINE FILE\n");
  return 2;
}
