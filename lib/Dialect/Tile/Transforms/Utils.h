//===- Utils.h - Helpers shared by the tile transformations -----*- C++ -*-===//

#ifndef SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H
#define SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace sinkattn::tile {

/// Unit attribute tile-lower-copies puts on the barrier of a synchronous
/// load whose parity counts the load's executions (nested loops, under a
/// condition): tile-multi-version-buffers leaves such barriers alone.
inline constexpr llvm::StringLiteral kCountedPhasesAttrName =
    "tile.counted_phases";

/// `thread_id.x == base`: the thread of `anchor`'s role that issues
/// single-thread work (TMA, barrier initialization).
mlir::Value createLeaderPredicate(mlir::OpBuilder &builder, mlir::Location loc,
                                  mlir::Operation *anchor = nullptr);

/// A barrier over the threads of `anchor`'s role: gpu.barrier for the whole
/// block, a named barrier (`bar.sync id, count`) inside a role region.
void createRoleSync(mlir::OpBuilder &builder, mlir::Location loc,
                    mlir::Operation *anchor);

/// The first named barrier of the warpgroup syncs (createWarpgroupSync):
/// warpgroup w of the block (thread_id.x / 128) uses this + w. Below it:
/// the block (0), the roles (1 + their first warpgroup) and the kernels'
/// ping-pong turns (3 + w).
inline constexpr int64_t kFirstWarpgroupBarrier = 8;

/// A barrier over the 128 threads of the executing warpgroup (named barrier
/// kFirstWarpgroupBarrier + thread_id.x / 128): orders accesses to a
/// warpgroup's slice of a tile (getWarpgroupSlice).
void createWarpgroupSync(mlir::OpBuilder &builder, mlir::Location loc);

/// `thread_id.x % 128 == 0`: the warpgroup's first thread, which issues the
/// warpgroup's single-thread work (the TMA store of its slice).
mlir::Value createWarpgroupLeaderPredicate(mlir::OpBuilder &builder,
                                           mlir::Location loc);

/// The iteration number `(iv - lb) / step` of `loop`, built at the start of
/// its body: counting from the loop's start, so a loop beginning at an odd
/// offset still begins at iteration 0.
mlir::Value createIterationIndex(mlir::OpBuilder &builder, mlir::scf::ForOp loop);

/// How many times the executing thread has run `op` before, as an index
/// value right before `op`: a counter carried through every scf.for (an
/// iteration argument) and scf.if (a result) between `op` and the
/// function's body, incremented after `op`. Rebuilds those ops. Fails,
/// changing nothing, when another region op (scf.while, ...) encloses
/// `op`; `why` names it.
mlir::FailureOr<mlir::Value> createExecutionCount(mlir::RewriterBase &rewriter,
                                                  mlir::Operation *op,
                                                  std::string &why);

/// Bytes of a statically shaped memref.
int64_t memrefBytes(mlir::MemRefType type);

/// True when (barriers, index) pairs name the same slot: the same array and
/// the same index value (or equal constants).
bool isSameSlot(mlir::Value barriers, mlir::Value index,
                mlir::Value otherBarriers, mlir::Value otherIndex);

} // namespace sinkattn::tile

#endif // SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H
