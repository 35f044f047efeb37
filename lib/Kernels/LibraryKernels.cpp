//===- LibraryKernels.cpp - The kernel library's kernels on demand --------===//
//
// A kernel of the attention library (rt::AttentionLibrary) for a variant and
// form, compiled in the process: what scripts/make-kernel-library.sh
// compiles with sinkattn-runner, for a library that lacks the variant.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Kernels/Kernels.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;
using namespace sinkattn;

rt::Expected<rt::Bundle>
kernels::compileLibraryKernel(const rt::SinkFwdVariant &variant,
                              const std::string &schedule, bool persistent) {
  DialectRegistry registry;
  registerKernelDialects(registry);
  MLIRContext context(registry);
  // The builders and the pipeline report through diagnostics: collect them
  // into the error.
  std::string messages;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    messages += (messages.empty() ? "" : "\n") + diagnostic.str();
    return success();
  });
  // The default instance make-kernel-library.sh compiles (any shape runs).
  KernelConfig config;
  config.kernel = "sink-fwd";
  config.runTimeShapes = true;
  config.layout = rt::AttentionLayout::Varlen;
  config.seqlensQ = config.seqlensKv = {128};
  config.batch = 1;
  config.seqQ = config.seqKv = 128;
  config.heads = config.kvHeads = 8;
  config.headDim = variant.headDim;
  config.dtype = variant.dtype;
  config.sinkDtype = variant.sinkDtype;
  config.causal = variant.causal;
  config.window = variant.windowed ? 128 : 0;
  config.schedule = schedule;
  config.persistentBlocks = persistent ? kPersistentSMs : 0;
  FailureOr<rt::Bundle> bundle = compileKernel(context, config);
  if (failed(bundle))
    return rt::Status::error(messages.empty() ? "the compiler failed"
                                              : messages);
  return std::move(*bundle);
}

rt::KernelCompiler kernels::libraryKernelCompiler() {
  return [](const rt::SinkFwdVariant &variant, const std::string &schedule,
            bool persistent) {
    return compileLibraryKernel(variant, schedule, persistent);
  };
}
