//===- AttentionBuilding.h - Typed building blocks of attention --*- C++ -*-===//
//
// The pieces of the attention kernels that read like the algorithm: the
// grid's block indices, the causal/window masks, the consumer warpgroups'
// ping-pong, the sink logits, varlen sequence bounds and one step of the
// online softmax, shared by the forward's and the backward's builders.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_ATTENTIONBUILDING_H
#define SINKATTN_LIB_KERNELS_ATTENTIONBUILDING_H

#include "IRBuilding.h"

#include "SinkAttn/Runtime/AttentionReference.h"

namespace sinkattn::kernels {

/// A block's tile of a causal attention grid (rt::attentionBlockGrid): the row
/// or key block and the query head and sequence it belongs to.
struct AttentionBlockIds {
  mlir::Value block, head, batch;
  /// The head's kv head where the grid has it (without a window); null
  /// otherwise.
  mlir::Value kvHead;
};

/// The block indices of a causal attention kernel's grid
/// (rt::attentionBlockGrid). Heaviest blocks first (`heaviestLast`: block i
/// does more work than block i - 1, so the blocks are counted down), each block
/// index over the query heads of one kv head before the next (x: head in the
/// group, y: block, z: kv head and sequence): the SMs end on light blocks, and
/// concurrent blocks share K/V. With a window the blocks of one head go in
/// order (x: block, y: head): they all do about the same work. `group` is the
/// query heads per kv head, `kvHeadCount` the kv heads (null: the
/// shape's, as a constant).
AttentionBlockIds buildBlockIds(mlir::ImplicitLocOpBuilder &b,
                                bool heaviestLast,
                                const rt::SinkAttentionShape &shape,
                                mlir::Value c1, mlir::Value group,
                                mlir::Value kvHeadCount = {});

/// Whether key `key` is kept for the query
/// at key position `position` (causal: key <= position; within the window:
/// position - key < window, which is seqKv + 1 without one).
mlir::Value buildKeepKey(mlir::ImplicitLocOpBuilder &b, mlir::Value key,
                         mlir::Value position, mlir::Value window);

/// Whether the keys firstKey .. firstKey + lastKeyOffset seen by the rows at
/// key positions firstPosition .. lastPosition() need the per-element
/// causal/window mask (keep key j for position p when j <= p and p - j <
/// W): the block crosses the first row's diagonal, or (with a window) the
/// last row is a window or more past its first key. Every other block keeps
/// all of those rows' keys. `lastPosition` is built after the diagonal
/// test.
mlir::Value
buildBlockMaskDecision(mlir::ImplicitLocOpBuilder &b, mlir::Value firstKey,
                       mlir::Value lastKeyOffset, mlir::Value firstPosition,
                       llvm::function_ref<mlir::Value()> lastPosition,
                       mlir::Value window, mlir::Value hasWindow);

/// The consumer warpgroups' ping-pong (FlashAttention 3's warp scheduler
/// barriers): warpgroup w issues its first GEMM of an iteration only in its
/// turn (named barrier 3 + w; the 256 threads of w and of the warpgroup
/// before it) and then hands the turn to the next one, so that one
/// warpgroup's GEMM runs while the others compute their elementwise maps
/// instead of all contending for the tensor cores at once. The last
/// warpgroup gives the first turn away; the last hand-over has no taker,
/// which is harmless at exit.
struct PingPong {
  mlir::Value threads, myTurn, nextTurn;

  /// Defines the turns of warpgroup `wg` (an index) of `warpgroups`.
  static PingPong build(mlir::ImplicitLocOpBuilder &b, mlir::Value wg,
                        int64_t warpgroups);
  /// Waits for this warpgroup's turn (before its GEMM).
  void waitTurn(mlir::ImplicitLocOpBuilder &b) const;
  /// Hands the turn to the next warpgroup (after it).
  void passTurn(mlir::ImplicitLocOpBuilder &b) const;
};

/// sinks[head] as f32 (bf16 sinks extended).
mlir::Value buildSinkLoad(mlir::ImplicitLocOpBuilder &b, mlir::Value sinks,
                          mlir::Value head);

/// Varlen: sequence `batch`'s first tokens and lengths, loaded from the
/// offsets cuQ and cuK; with `unitQ` and `unitK` (index values) the offsets
/// count tokens in those units (a batch of equal lengths S passes the
/// offsets 0, 1, ..., B and the unit S).
struct SequenceBounds {
  mlir::Value qStart, kStart, seqQ, seqKv;
};
SequenceBounds buildSequenceBounds(mlir::ImplicitLocOpBuilder &b,
                                   mlir::Value batch, mlir::Value cuQ,
                                   mlir::Value cuK, mlir::Value c1,
                                   mlir::Value unitQ = {},
                                   mlir::Value unitK = {});

/// The constants of the online softmax in the log2 domain.
struct OnlineSoftmax {
  /// softmax scale * log2(e).
  mlir::Value scaleLog2;
  mlir::Value zero, negInf;
  /// When set, the running max moves only when a block's max exceeds it by
  /// more than this margin (conditional rescaling); else it is the max.
  mlir::Value rescaleMargin;
  /// Whether the row sum is kept as per-thread partial columns
  /// (tile.partial_reduce) instead of being reduced in every step.
  bool partialRowSum;

  struct Step {
    /// The new running max and sum, the block's probabilities (f32) and
    /// the factor that rescales the accumulator.
    mlir::Value max, sum, probabilities, rescale;
  };
  /// One key block's update of the running max `max` and sum `sum` from
  /// the block's raw scores.
  Step step(mlir::ImplicitLocOpBuilder &b, mlir::Value scores, mlir::Value max,
            mlir::Value sum) const;
};

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_ATTENTIONBUILDING_H
