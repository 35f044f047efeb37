//===- Compile.h - The compiler side of sinkattn-runner ---------*- C++ -*-===//
//
// Only in full builds (SINKATTN_RUNNER_HAS_COMPILER): building kernels
// in-process through lib/Kernels and the PTX pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_TOOLS_RUNNER_COMPILE_H
#define SINKATTN_TOOLS_RUNNER_COMPILE_H

#include "Options.h"

#include "SinkAttn/Runtime/Bundle.h"

namespace sinkattn::runner {

/// `sinkattn-runner compile`: returns the process exit code.
int runCompile(const Options &options);

/// Compiles the kernel the flags describe into a bundle (with PTX).
rt::Expected<rt::Bundle> compileFromOptions(const Options &options);

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_COMPILE_H
