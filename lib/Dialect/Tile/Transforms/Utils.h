//===- Utils.h - Helpers shared by the tile transformations -----*- C++ -*-===//

#ifndef SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H
#define SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace sinkattn::tile {

/// `thread_id.x == 0`: the thread that issues single-thread work (TMA,
/// barrier initialization).
mlir::Value createLeaderPredicate(mlir::OpBuilder &builder, mlir::Location loc);

/// The iteration number `(iv - lb) / step` of `loop`, built at the start of
/// its body: counting from the loop's start, so a loop beginning at an odd
/// offset still begins at iteration 0.
mlir::Value createIterationIndex(mlir::OpBuilder &builder, mlir::scf::ForOp loop);

/// Bytes of a statically shaped memref.
int64_t memrefBytes(mlir::MemRefType type);

/// True when (barriers, index) pairs name the same slot: the same array and
/// the same index value (or equal constants).
bool isSameSlot(mlir::Value barriers, mlir::Value index,
                mlir::Value otherBarriers, mlir::Value otherIndex);

} // namespace sinkattn::tile

#endif // SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H
