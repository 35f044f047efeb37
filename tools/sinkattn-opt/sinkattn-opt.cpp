//===- sinkattn-opt.cpp - SinkAttn's optimizer driver ---------------------===//
//
// mlir-opt with every upstream dialect, pass and GPU-to-LLVM-IR translation,
// plus the tile dialect and SinkAttn's passes and pipelines.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"
#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  sinkattn::registerAllSinkAttnPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates gpu.modules to LLVM IR in-process.
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  registry.insert<sinkattn::tile::TileDialect>();

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "SinkAttn optimizer driver\n", registry));
}
