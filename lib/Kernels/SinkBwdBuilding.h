//===- SinkBwdBuilding.h - Building the backward's kernels ------*- C++ -*-===//
//
// What every kernel builder of the attention-sink backward reads (the
// problem, its resolved form) and the builders themselves: each builds one
// gpu.func of the backward's module at the builder's insertion point.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_SINKBWDBUILDING_H
#define SINKATTN_LIB_KERNELS_SINKBWDBUILDING_H

#include "IRBuilding.h"
#include "SinkBwdForm.h"

namespace sinkattn::kernels {

/// One backward problem as its kernel builders see it.
struct SinkBwdProblem {
  const KernelConfig &config;
  const rt::SinkAttentionShape &shape;
  const SinkBwdForm &form;
  /// Q, K, V, O and the gradients' element type (bf16 or f16).
  mlir::Type element;
  /// The sink logits' element type (f32 or bf16).
  mlir::Type sinkElement;
};

struct SinkBwdLayout;

// The kernel builders. Each creates its gpu.func at `b`'s insertion point
// (inside the backward's gpu.module) and leaves `b` after it.

/// sink_bwd_sinks (--dq-warpgroups 2): dsink_h from the rows' sink terms,
/// one warp per head (buildHeadSinkSum).
mlir::gpu::GPUFuncOp buildSinkBwdSinks(mlir::ImplicitLocOpBuilder &b,
                                       const SinkBwdProblem &problem,
                                       const SinkBwdLayout &layout);

/// sink_bwd_preprocess, one block per 64 query rows of a head: Delta =
/// rowsum(dO ⊙ O) and the block's record (-LSE·log2(e), Delta and with
/// --dq atomic the rows' sink weights); it also zeroes the scratch the
/// later kernels count or add into.
mlir::gpu::GPUFuncOp buildSinkBwdPreprocess(mlir::ImplicitLocOpBuilder &b,
                                            const SinkBwdProblem &problem,
                                            const SinkBwdLayout &layout);

/// sink_bwd_dkdv (SinkBwdDkdvKernel.cpp): per block of keys and query head,
/// dK and dV (with GQA the query head's fp32 shares, or with --dq atomic
/// their sums per kv head), with --dq atomic also dQ's share of its keys and
/// their sink terms.
mlir::gpu::GPUFuncOp buildSinkBwdDkdv(mlir::ImplicitLocOpBuilder &b,
                                      const SinkBwdProblem &problem,
                                      const SinkBwdLayout &layout);

/// sink_bwd_dkdv_sum (SinkBwdDkdvKernel.cpp): GQA's dK and dV from the
/// shares (or the split's sums per kv head) where the dK/dV kernel does
/// not add them itself.
mlir::gpu::GPUFuncOp buildSinkBwdDkdvSum(mlir::ImplicitLocOpBuilder &b,
                                         const SinkBwdProblem &problem,
                                         const SinkBwdLayout &layout);

/// sink_bwd_dq_convert (--dq atomic), one block per 64 query rows of a
/// head: the fp32 dQ scaled and rounded, and dsinks from the keys' sink
/// terms.
mlir::gpu::GPUFuncOp buildSinkBwdDqConvert(mlir::ImplicitLocOpBuilder &b,
                                           const SinkBwdProblem &problem,
                                           const SinkBwdLayout &layout);

/// sink_bwd_dq (`--dq separate`): per block of 64 query rows (64·N with
/// --dq-warpgroups N sharing the K/V tiles) dQ, the rows' sink terms and,
/// with one warpgroup, dsinks in the last block of each head.
mlir::gpu::GPUFuncOp buildSinkBwdDq(mlir::ImplicitLocOpBuilder &b,
                                    const SinkBwdProblem &problem,
                                    const SinkBwdLayout &layout);

/// The backward's per-element mask: whether a key is kept for a query
/// position whose distance to it is `distanceBase` + `offset` (causal: the
/// distance is not negative; the window: it is below `window32`, seqKv + 1
/// without one), in one unsigned 32-bit compare: a negative distance wraps
/// past every window, so it also decides causality. In 64 bits the mask
/// took two compares of two halves each plus the carries per element.
/// Distances fit in 31 bits: the forward's checks keep Q and K below 2^31
/// elements.
mlir::Value buildKeepByDistance(mlir::ImplicitLocOpBuilder &b,
                                mlir::Value distanceBase, mlir::Value offset,
                                mlir::Value window32);

/// A block's probabilities: a tile.map of `inputs` computing `value`, with
/// the per-element mask (`keep`; masked elements are 0) where the block
/// needs it (`needsMask`), without where it keeps every element: the
/// mask's index math is a large part of a loop's instructions.
mlir::Value
buildBlockMaskedMap(mlir::ImplicitLocOpBuilder &b, mlir::Type type,
                    mlir::Value needsMask, mlir::ValueRange inputs,
                    mlir::Value zero,
                    llvm::function_ref<mlir::Value(mlir::ValueRange indices,
                                                   mlir::ValueRange elements)>
                        keep,
                    llvm::function_ref<mlir::Value(mlir::ValueRange indices,
                                                   mlir::ValueRange elements)>
                        value);

/// The election of the last block to arrive: each block makes its global
/// writes visible (a GPU-scope fence, then a block barrier), its first
/// thread adds 1 to `counter`[`index`] (i32) and passes the count it saw on
/// through shared memory, and `isLast` holds in the block that saw
/// `lastCount` (i32: a constant, or a count known at run time). The caller
/// fences again in the elected block before it reads the others' writes.
struct LastArrival {
  /// The thread's index in the block, and whether the block came last.
  mlir::Value thread, isLast;
};
LastArrival buildLastArrival(mlir::ImplicitLocOpBuilder &b, mlir::Value counter,
                             mlir::Value index, mlir::Value lastCount,
                             mlir::Value c0);

/// dsink_h of head `head` from `terms` (a flat memref, the layout's
/// `terms` type) by the warp whose lane index is `lane`: lane l sums rows
/// l, l + 32, ... of each run of the head's rows into kSinkPartialSums
/// partial sums, adds them in order, then the lanes combine in a fixed
/// butterfly, and lane 0 stores the sum into `dsinks`[`head`]. The same
/// order wherever it runs: dsinks are bit-identical between the dsinks
/// kernel and the dQ kernel's last block. `run`: the rows of a run where
/// the layout's is not a constant (run-time shapes); `rowsBegin` and
/// `rowsEnd`: the rows of the run that sequences cover, where the buffer
/// may hold rows past them (run-time shapes: tokens before the first
/// offset or after the last).
void buildHeadSinkSum(mlir::ImplicitLocOpBuilder &b,
                      const SinkBwdLayout &layout, mlir::Value terms,
                      mlir::Value dsinks, mlir::Value head, mlir::Value lane,
                      mlir::Value c0, mlir::Value c1, mlir::Value zero,
                      mlir::Value run = {}, mlir::Value rowsBegin = {},
                      mlir::Value rowsEnd = {});

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_SINKBWDBUILDING_H
