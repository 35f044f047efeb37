//===- SinkBwdForm.h - The attention-sink backward's form ------*- C++ -*-===//
//
// How the backward's kernels divide the work for one problem: the knobs a
// user may set (KernelConfig's dq, dqSplit, dqWarpgroups, dkdvWarpgroups),
// resolved for the problem where they say auto, checked together once, and
// what follows from them. Every kernel builder of the family reads this
// struct; SinkBwdForm::resolve is the one place that refuses a combination
// and says why (as FlashAttention 4's flash_bwd_sm90 `can_implement`).
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_SINKBWDFORM_H
#define SINKATTN_LIB_KERNELS_SINKBWDFORM_H

#include "SinkAttn/Kernels/Kernels.h"
#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

namespace sinkattn::kernels {

/// Query rows, and keys, per warpgroup of the backward's kernels (wgmma's M).
inline constexpr int64_t kSinkBwdBlock = 64;

struct SinkBwdForm {
  /// dQ accumulated by the dK/dV kernel (fp32 TMA reduce-add, --dq atomic)
  /// instead of a dQ kernel of its own: fewer GEMMs, not bit-reproducible.
  bool atomicDq = false;
  /// --dq-split deferred: each dK/dV warpgroup adds its panel of the
  /// previous query block's dQ share (else the columns' panels in step).
  bool dqSplitDeferred = false;
  /// Consumer warpgroups of the dQ and dK/dV kernels (1 or 2): with 2 they
  /// share each tile a TMA producer loads.
  int64_t dqWarpgroups = 1, dkdvWarpgroups = 1;
  /// GQA: each query head writes an fp32 share of its kv head's dK/dV.
  bool shares = false;
  /// The one-warpgroup dK/dV kernel sums the shares itself (the last block
  /// of a kv head's keys); the shared-tile kernels leave it to
  /// sink_bwd_dkdv_sum.
  bool sumInKernel = false;
  /// The split with GQA adds dK/dV into fp32 sums per kv head instead.
  bool kvAccumulate = false;
  /// The split at D 64 over long query ranges keeps its K and V rows in
  /// registers as the first GEMMs' A operands.
  bool kvInRegisters = false;
  /// dPᵀ issued with Sᵀ (its wgmma under the exponentials) where that does
  /// not spill; else after them.
  bool earlyDp = true;
  /// The shared-tile dK/dV warpgroups take turns for their first GEMM.
  bool dkdvPingPong = false;
  /// At D 64 the one-warpgroup dK/dV kernel asks for three blocks per SM.
  bool threeBlocksPerSm = false;
  /// The one-warpgroup dQ kernel sums dsinks itself (the last block of a
  /// head); else sink_bwd_sinks, or --dq atomic's convert kernel.
  bool sinksInDq = false;
  /// The share sum launches after the dQ kernel, so that dK/dV and dQ run
  /// side by side.
  bool sumAfterDq = false;
  /// Rows of each query block's record: -LSE·log2(e), Delta and with
  /// --dq atomic the rows' sink weights.
  int64_t statsRows = 2;
  /// Query heads per kv head.
  int64_t group = 1;

  bool dqShared() const { return dqWarpgroups > 1; }
  bool dkdvShared() const { return dkdvWarpgroups > 1; }
  int64_t dqBlockRows() const { return kSinkBwdBlock * dqWarpgroups; }
  int64_t dkdvBlockKeys() const { return kSinkBwdBlock * dkdvWarpgroups; }

  /// The form of `config` for `shape`, its auto choices made; a refused
  /// combination is reported through `context`'s diagnostics, naming the
  /// flag and what to use instead.
  static mlir::FailureOr<SinkBwdForm>
  resolve(mlir::MLIRContext &context, const KernelConfig &config,
          const rt::SinkAttentionShape &shape);
};

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_SINKBWDFORM_H
