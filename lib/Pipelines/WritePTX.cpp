//===- WritePTX.cpp - Write the PTX of gpu.binary ops to files ------------===//

#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace sinkattn {
#define GEN_PASS_DEF_WRITEPTXPASS
#include "SinkAttn/Pipelines/Passes.h.inc"
} // namespace sinkattn

namespace {
struct WritePTXPass : public sinkattn::impl::WritePTXPassBase<WritePTXPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<std::map<std::string, std::string>> ptx =
        sinkattn::extractPTX(module);
    if (failed(ptx))
      return signalPassFailure();
    if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
      module.emitError() << "cannot create directory '" << outputDir
                         << "': " << ec.message();
      return signalPassFailure();
    }
    for (const auto &[name, text] : *ptx) {
      llvm::SmallString<256> path(outputDir);
      llvm::sys::path::append(path, name + ".ptx");
      std::error_code ec;
      llvm::raw_fd_ostream os(path, ec);
      if (ec) {
        module.emitError() << "cannot write '" << path << "': " << ec.message();
        return signalPassFailure();
      }
      os << text;
    }
    markAllAnalysesPreserved();
  }
};
} // namespace
