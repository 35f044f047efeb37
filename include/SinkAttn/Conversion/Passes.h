//===- Passes.h - Conversions out of the tile dialect -----------*- C++ -*-===//

#ifndef SINKATTN_CONVERSION_PASSES_H
#define SINKATTN_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace sinkattn {

/// Attributes convert-tile-to-nvgpu leaves on kernels for the host side.
inline constexpr llvm::StringLiteral kTensorMapsAttrName = "sinkattn.tensor_maps";
inline constexpr llvm::StringLiteral kDynamicSharedMemoryAttrName =
    "sinkattn.dynamic_shared_memory_bytes";

#define GEN_PASS_DECL
#include "SinkAttn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "SinkAttn/Conversion/Passes.h.inc"

} // namespace sinkattn

#endif // SINKATTN_CONVERSION_PASSES_H
