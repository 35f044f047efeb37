//===- LoopLoads.h - The loads of a pipelined loop --------------*- C++ -*-===//
//
// Analysis shared by tile-warp-specialize and tile-software-pipeline: which
// tile.copy loads a kernel's pipelined loop issues, which buffers they fill,
// how they group by reader, and what the index computations need; plus the
// IR helpers both use to stage buffers.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_LOOPLOADS_H
#define SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_LOOPLOADS_H

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include <string>

namespace sinkattn::tile {

/// Loads that share their first reader and last user: one full and one
/// empty barrier per stage.
struct ProducerGroup {
  llvm::SmallVector<CopyOp> copies;
  mlir::Operation *firstReader = nullptr;
  mlir::Operation *lastUser = nullptr;
  /// The `scf.if` (at the top of the loop body) the copies and their
  /// readers are under, or null: a guarded group uses a stage only on the
  /// iterations that take the guard.
  mlir::scf::IfOp guard;
};

/// A load at the top of the one loop around the pipelined loop, before it
/// (a persistent kernel's Q tile): the producer issues it once per
/// iteration of that loop, into its one buffer, after the consumers
/// released the buffer past its last user there.
struct TileLoad {
  CopyOp copy;
  /// The ops of the outer loop's body that read the buffer first and use
  /// it last (the pipelined loop itself, when only it reads the tile).
  mlir::Operation *firstReader = nullptr;
  mlir::Operation *lastUser = nullptr;
};

struct LoopLoads {
  mlir::scf::ForOp loop;
  int64_t stages = 0;
  llvm::SmallVector<ProducerGroup> groups;
  /// Copies before the loop (a Q tile).
  llvm::SmallVector<CopyOp> preLoopCopies;
  /// Buffers the loop's copies fill, in order of first copy.
  llvm::SmallVector<mlir::memref::AllocOp> buffers;
  /// Top-level ops before the loop that the copies' indices and the loop
  /// bounds need, in program order; all pure.
  llvm::SmallVector<mlir::Operation *> prologue;
  /// Ops of the loop body the copies' indices and guards need, in order;
  /// all pure.
  llvm::SmallVector<mlir::Operation *> loopOps;
  /// The distinct guards of the groups, in program order.
  llvm::SmallVector<mlir::scf::IfOp> guards;
  /// The scf.for loops around the pipelined loop, outermost first (a
  /// persistent kernel's loop over tiles); empty when it is at the top
  /// level.
  llvm::SmallVector<mlir::scf::ForOp> outerLoops;
  /// Per outer loop: the pure ops of its body the copies' indices and the
  /// inner loops' bounds need, in order.
  llvm::SmallVector<llvm::SmallVector<mlir::Operation *>> outerOps;
  /// Loads at the top of the outer loop's body when there is exactly one
  /// outer loop (TileLoad); copies there that do not qualify stay with the
  /// consumers (synchronous).
  llvm::SmallVector<TileLoad> tileLoads;
};

/// The loads of `func`'s one pipelined loop (`scf.for` with
/// `tile.num_stages` at the top level of the kernel, or nested in scf.for
/// loops that are): global -> shared
/// `tile.copy`s at the top of its body filling whole allocations that only
/// tile.gemm and memref.load read (directly or through subviews), with
/// indices computed by pure ops from the induction variable and values
/// defined before the loop; with `withTileLoads`, also the tile loads
/// (tile-warp-specialize issues them). `why` says what does not fit.
mlir::FailureOr<LoopLoads> analyzeLoopLoads(mlir::gpu::GPUFuncOp func,
                                            std::string &why,
                                            bool withTileLoads = false);

mlir::Value constantIndex(mlir::OpBuilder &builder, mlir::Location loc,
                          int64_t value);

/// `stage = it % S` and `parity = (it / S) % 2` of the loop's iteration
/// `it` counted from its start, at the start of its body.
std::pair<mlir::Value, mlir::Value>
stageAndParity(mlir::OpBuilder &builder, mlir::scf::ForOp loop, int64_t stages);

/// `stage = count % S` and `parity = (count / S) % 2` of a count of uses.
std::pair<mlir::Value, mlir::Value> stageAndParityOf(mlir::OpBuilder &builder,
                                                     mlir::Location loc,
                                                     mlir::Value count,
                                                     int64_t stages);

/// Threads `inits.size()` counters through `loops` (outermost first, each
/// directly in the body of the one before): the outermost loop starts them
/// at `inits`, every inner loop starts from its parent's current values and
/// hands its final values back to it, and the innermost loop advances them
/// with `next` (given its current values, at the end of its body). Returns
/// the rebuilt loops in the same order; the innermost's last `inits.size()`
/// region iter args are the counters in its body.
llvm::SmallVector<mlir::scf::ForOp> carryCounters(
    mlir::RewriterBase &rewriter, llvm::ArrayRef<mlir::scf::ForOp> loops,
    mlir::ValueRange inits,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(
        mlir::OpBuilder &, mlir::Location, llvm::ArrayRef<mlir::BlockArgument>)>
        next);

/// `count + (condition ? 1 : 0)`.
mlir::Value countIf(mlir::OpBuilder &builder, mlir::Location loc,
                    mlir::Value count, mlir::Value condition);

/// `buffer[stage]` of a staged buffer.
mlir::Value stageView(mlir::OpBuilder &builder, mlir::Location loc,
                      mlir::Value staged, mlir::Value stage);

/// Replaces `alloc`'s uses inside `loop` by `view` (one stage of a staged
/// buffer), rebuilding the subviews of it so their types follow.
void replaceInLoop(mlir::OpBuilder &builder, mlir::memref::AllocOp alloc,
                   mlir::scf::ForOp loop, mlir::Value view);

/// A buffer with a leading dimension `stages`, allocated before `alloc`
/// with its attributes (alignment, swizzle).
mlir::Value createStagedBuffer(mlir::OpBuilder &builder,
                               mlir::memref::AllocOp alloc, int64_t stages);

/// Whether any of `copies` loads with cp.async.
bool anyCpAsync(llvm::ArrayRef<CopyOp> copies);

/// Arrivals that complete one phase of the barrier slot `copies` load on:
/// one per thread of the issuing role (`roleThreads`) when any copy uses
/// cp.async (each thread's `cp.async.mbarrier.arrive.noinc`), else one (the
/// role's first thread; the TMA bytes complete the phase).
int64_t arrivalsPerPhase(llvm::ArrayRef<CopyOp> copies, int64_t roleThreads);

/// Issues `copies` on slot `slot` of `barriers`, with their indices through
/// `mapping`, each into `destinationOf(copy)`: TMA copies as
/// `tile.tma_copy` (expected bytes on the slot), cp.async copies as
/// `tile.cp_async`. Then the role arrives as arrivalsPerPhase counts: every
/// thread with `tile.cp_async_arrive` when there are cp.async copies (the
/// TMA bytes are only expected then, so the slot is not over-arrived), else
/// the role's first thread.
void issueCopiesAndArrive(
    mlir::OpBuilder &builder, mlir::Location loc, llvm::ArrayRef<CopyOp> copies,
    const mlir::IRMapping &mapping, mlir::Value barriers, mlir::Value slot,
    llvm::function_ref<mlir::Value(CopyOp)> destinationOf);

} // namespace sinkattn::tile

#endif // SINKATTN_LIB_DIALECT_TILE_TRANSFORMS_LOOPLOADS_H
