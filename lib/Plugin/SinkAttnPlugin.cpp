//===- SinkAttnPlugin.cpp - The tile dialect and passes as an opt plugin --===//
//
// libSinkAttnPlugin.so: the `tile` dialect, SinkAttn's passes and its named
// pipelines for an mlir-opt that links the shared libMLIR.so (Debian's
// mlir-opt-22):
//
//   mlir-opt-22 --load-dialect-plugin=libSinkAttnPlugin.so \
//       --load-pass-plugin=libSinkAttnPlugin.so kernel.mlir \
//       --pass-pipeline="builtin.module(sinkattn-tile-to-nvgpu)"
//
// (mlir-opt-22 builds its --<pass> flags before it loads plugins, so the
// pipelines are named in --pass-pipeline.)
//
// Upstream's mlir/examples/standalone/standalone-plugin is the model.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"
#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

using namespace mlir;

extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "SinkAttn", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            registry->insert<sinkattn::tile::TileDialect>();
            // A dialect plugin alone brings its passes too, as upstream's
            // example does; registration happens once.
            sinkattn::registerAllSinkAttnPasses();
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "SinkAttnPasses", LLVM_VERSION_STRING,
          [] { sinkattn::registerAllSinkAttnPasses(); }};
}
