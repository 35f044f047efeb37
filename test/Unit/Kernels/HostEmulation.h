//===- HostEmulation.h - Run reference kernels' code on the CPU -*- C++ -*-===//
//
// The reference kernels are plain gpu/scf/arith/memref code; the tests run
// that code on the CPU (JIT-compiled for the host) against the float64
// references of SinkAttn/Runtime/AttentionReference.h.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_TEST_UNIT_KERNELS_HOSTEMULATION_H
#define SINKATTN_TEST_UNIT_KERNELS_HOSTEMULATION_H

#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>
#include <utility>

namespace sinkattn::test {

/// Moves each listed kernel (name, grid blocks; `blockSize` threads, by
/// default rt::kSinkFwdReferenceBlockSize; one-dimensional launches) into a
/// host function @host_<name> with
/// the same arguments that runs every (block, thread) of the launch in
/// loops. The gpu.module's other functions move to the top level, the
/// ex2/lg2 approximations become math.exp2/math.log2, and the gpu.module
/// is dropped.
mlir::LogicalResult
emulateOnHost(mlir::ModuleOp module,
              llvm::ArrayRef<std::pair<std::string, int64_t>> kernels,
              int64_t blockSize = rt::kSinkFwdReferenceBlockSize);

/// Lowers an emulated module to LLVM and JIT-compiles it. Memrefs are passed
/// as the kernels' ABI has them: bare pointers (one per memref), or without
/// `barePointers` (the kernels for run-time shapes) memref descriptors
/// expanded into their fields, which ExecutionEngine::invokePacked takes
/// from the rt::KernelArgs a launch would pass.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
jitForHost(mlir::ModuleOp module, bool barePointers = true);

} // namespace sinkattn::test

#endif // SINKATTN_TEST_UNIT_KERNELS_HOSTEMULATION_H
