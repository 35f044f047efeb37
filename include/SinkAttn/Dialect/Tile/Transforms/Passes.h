//===- Passes.h - Transformations of the tile dialect -----------*- C++ -*-===//

#ifndef SINKATTN_DIALECT_TILE_TRANSFORMS_PASSES_H
#define SINKATTN_DIALECT_TILE_TRANSFORMS_PASSES_H

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace sinkattn::tile {

#define GEN_PASS_DECL
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"

} // namespace sinkattn::tile

#endif // SINKATTN_DIALECT_TILE_TRANSFORMS_PASSES_H
