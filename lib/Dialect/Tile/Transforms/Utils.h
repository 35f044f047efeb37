//===- Utils.h - Helpers shared by the tile transformations -----*- C++ -*-===//

#ifndef SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H
#define SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_UTILS_H

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace sinkattn::tile {

/// Attributes of the `scf.if` regions tile-warp-specialize creates: the
/// role's name, its first thread and its thread count.
inline constexpr llvm::StringLiteral kThreadRoleAttrName = "tile.role";
inline constexpr llvm::StringLiteral kThreadBaseAttrName = "tile.thread_base";
inline constexpr llvm::StringLiteral kThreadCountAttrName = "tile.thread_count";

/// Unit attribute tile-lower-copies puts on the barrier of a synchronous
/// load whose parity counts the load's executions (nested loops, under a
/// condition): tile-multi-version-buffers leaves such barriers alone.
inline constexpr llvm::StringLiteral kCountedPhasesAttrName =
    "tile.counted_phases";

/// The threads that execute `op`: the innermost enclosing role region of a
/// warp-specialized kernel, or the whole block (base 0, count 0).
struct ThreadRole {
  int64_t base = 0;
  int64_t count = 0; ///< 0: every thread of the block
  /// Named barrier of the role (bar.sync id, count); 0 for the block.
  int64_t barrierId = 0;
};
ThreadRole getThreadRole(mlir::Operation *op);

/// The innermost role region (tile-warp-specialize's scf.if carrying the
/// role's thread base and count) around `op`, or null outside roles.
mlir::Operation *getRoleRegion(mlir::Operation *op);

/// `thread_id.x == base`: the thread of `anchor`'s role that issues
/// single-thread work (TMA, barrier initialization).
mlir::Value createLeaderPredicate(mlir::OpBuilder &builder, mlir::Location loc,
                                  mlir::Operation *anchor = nullptr);

/// A barrier over the threads of `anchor`'s role: gpu.barrier for the whole
/// block, a named barrier (`bar.sync id, count`) inside a role region.
void createRoleSync(mlir::OpBuilder &builder, mlir::Location loc,
                    mlir::Operation *anchor);

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
