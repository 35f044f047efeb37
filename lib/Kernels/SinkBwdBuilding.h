//===- SinkBwdBuilding.h - Building the backward's kernels ------*- C++ -*-===//
//
// What every kernel builder of the attention-sink backward reads (the
// problem, its resolved form) and the builders themselves: each builds one
// gpu.func of the backward's module at the builder's insertion point, in
// the module's launch order.
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

/// sink_bwd_dkdv (SinkBwdDkdvKernel.cpp): per block of keys and query head,
/// dK and dV (with GQA the query head's fp32 shares, or with --dq atomic
/// their sums per kv head), with --dq atomic also dQ's share of its keys and
/// their sink terms. Leaves `b` after the function.
void buildSinkBwdDkdv(mlir::ImplicitLocOpBuilder &b,
                      const SinkBwdProblem &problem);

/// sink_bwd_dkdv_sum (SinkBwdDkdvKernel.cpp): GQA's dK and dV from the
/// shares (or the split's sums per kv head) where the dK/dV kernel does
/// not add them itself. Leaves `b` after the function.
void buildSinkBwdDkdvSum(mlir::ImplicitLocOpBuilder &b,
                         const SinkBwdProblem &problem);

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_SINKBWDBUILDING_H
