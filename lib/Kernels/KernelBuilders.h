//===- KernelBuilders.h - The individual kernel builders --------*- C++ -*-===//

#ifndef SINKATTN_LIB_KERNELS_KERNELBUILDERS_H
#define SINKATTN_LIB_KERNELS_KERNELBUILDERS_H

#include "SinkAttn/Kernels/Kernels.h"

namespace sinkattn::kernels {

mlir::FailureOr<KernelModule> buildGemm(mlir::MLIRContext &context,
                                        const KernelConfig &config);
mlir::FailureOr<KernelModule> buildSinkFwd(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildSinkBwd(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaCopy(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaStream(mlir::MLIRContext &context,
                                             const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaIm2col(mlir::MLIRContext &context,
                                             const KernelConfig &config);

/// The fp32 SIMT reference of `sink-fwd` (gpu/scf/arith/memref only, no
/// tile ops; ABI and launch shape in SinkAttn/Runtime/AttentionReference.h)
/// for the config's batch, heads, kvHeads, seqQ, seqKv, headDim, window and
/// dtype, scale 1/sqrt(headDim). Unsupported values are reported through
/// the context's diagnostics.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildSinkFwdReference(mlir::MLIRContext &context, const KernelConfig &config);
/// buildSinkFwdReference() compiled to PTX for `target` (bare pointers
/// whatever `target` says): what goes into the bundle's reference with
/// entry rt::kSinkFwdReferenceEntry.
mlir::FailureOr<std::string>
compileSinkFwdReferencePTX(mlir::MLIRContext &context,
                           const KernelConfig &config,
                           PTXTargetOptions target);

/// The attention problem of a sink-fwd config (scale 1/sqrt(headDim); with
/// varlen the offsets of its lengths). Not validated.
rt::SinkAttentionShape sinkAttentionShape(const KernelConfig &config);

/// The block indices of a causal attention kernel's grid (blockGrid):
/// defines `blockVar` (the row or key block), %h and %b. Heaviest blocks
/// first (`heaviestLast`: block i does more work than block i - 1, so the
/// blocks are counted down), each block index over the query heads of one
/// kv head before the next (x: head in the group, y: block, z: kv head and
/// sequence): the SMs end on light blocks, and concurrent blocks share K/V.
/// With a window (shape.window > 0) the blocks of one head go in order
/// (x: block, y: head). Needs %c1 and %group.
std::string blockIdsText(const std::string &blockVar, bool heaviestLast,
                         const rt::SinkAttentionShape &shape);
/// Defines %wg, the index of the thread's warpgroup (thread id x / 128),
/// as lane 0's value broadcast over the warp (gpu.shuffle idx, as CUTLASS's
/// canonical_warp_group_idx does): ptxas then knows it is the same in every
/// lane and keeps what derives from it -- the wgmma descriptors of a
/// warpgroup's tile views -- in uniform registers. Computed per lane, the
/// split backward's descriptors were built in vector registers and moved to
/// uniform ones before each wgmma (60 R2UR in its loop; docs/design.md).
/// The other names it defines start with %wg.
inline constexpr const char *kWarpgroupIndex = R"mlir(      %wgTid = gpu.thread_id x
      %wgThreads = arith.constant 128 : index
      %wgOfLane = arith.divui %wgTid, %wgThreads : index
      %wgOfLane32 = arith.index_castui %wgOfLane : index to i32
      %wgLane0 = arith.constant 0 : i32
      %wgWarpSize = arith.constant 32 : i32
      %wgUniform32, %wgValid = gpu.shuffle idx %wgOfLane32, %wgLane0, %wgWarpSize : i32
      %wg = arith.index_castui %wgUniform32 : i32 to index
)mlir";
/// Ping-pong of the consumer warpgroups (FA3's warp scheduler barriers):
/// warpgroup w issues its first GEMM of an iteration only in its turn
/// (named barrier 3 + w; the 256 threads of w and of the warpgroup before
/// it) and then hands the turn to the next one (w + 1, the last to the
/// first), so one warpgroup's GEMM runs while the others compute their
/// elementwise maps instead of all contending for the tensor cores at
/// once. pingPongInit defines the turns from %wg (the warpgroup, an index)
/// and lets the last warpgroup give the first turn away; the last
/// hand-over has no taker, which is harmless at exit. kPingPongSync waits
/// for the turn (before the GEMM), kPingPongArrive hands it on (after).
std::string pingPongInit(int64_t warpgroups);
inline constexpr const char *kPingPongSync = R"mlir(
        nvvm.barrier id = %myTurn number_of_threads = %threads)mlir";
inline constexpr const char *kPingPongArrive = R"mlir(
        nvvm.barrier.arrive id = %nextTurn number_of_threads = %threads)mlir";

/// Whether a block of keys %n0 .. %n0 + `lastKeyOffset` seen by query rows
/// at key positions `firstPosition` .. `lastPosition` needs the
/// per-element causal/window mask (keep key j for position p when j <= p
/// and p - j < W): its last key lies after the first row's position (the
/// diagonal), or, with a window, its last row is a window or more past its
/// first key. Every other block keeps all of those rows' keys. Defines the
/// i1 `result`; `lastPositionDef` defines `lastPosition` (empty when it is
/// defined already). Needs %window and %hasWindow.
std::string blockMaskDecisionText(const std::string &lastKeyOffset,
                                  const std::string &firstPosition,
                                  const std::string &lastPosition,
                                  const std::string &lastPositionDef,
                                  const std::string &result);
/// The grid for blockIdsText: `blocks` per head and sequence.
rt::Dim3 blockGrid(int64_t blocks, const rt::SinkAttentionShape &shape);

/// A persistent kernel's tiles split into `blocks` lists, one per block, so
/// that the blocks' sums of `costs` (one per tile, positive, in any unit)
/// stay level:
/// longest-processing-time-first, then moves and swaps off the longest
/// list while they shorten it. Every tile is in exactly one list; each list
/// runs its tiles by `groups` (one per tile; none: one group), then
/// costliest first (ties: lower index first). Deterministic.
std::vector<std::vector<int64_t>>
balancedTileLists(llvm::ArrayRef<int64_t> costs, int64_t blocks,
                  llvm::ArrayRef<int64_t> groups = {});

/// Varlen: from the sequence index %b, %bNext and the sequence's first
/// tokens %qStart/%kStart, ends %qEnd/%kEnd and lengths %seqQ/%skv, loaded
/// from %cuQ and %cuK (of type `offsetsType`). Needs %c1.
std::string sequenceBoundsText(const std::string &offsetsType);

/// The fp32 SIMT reference of the attention-sink backward (three kernels,
/// ABI and launches in SinkAttn/Runtime/AttentionReference.h).
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildSinkBwdReference(mlir::MLIRContext &context, const KernelConfig &config);

/// Bundle parameters. Shapes are outermost first.
rt::BundleParam inputBuffer(std::string name, rt::DType dtype,
                            std::vector<uint64_t> shape, bool kernelArg = true);
rt::BundleParam outputBuffer(std::string name, rt::DType dtype,
                             std::vector<uint64_t> shape, bool kernelArg = true);
/// A zero-filling tiled map of a dense row-major buffer (128-byte swizzle
/// unless told otherwise).
rt::BundleParam tensorMap(std::string name, std::string buffer,
                          rt::DType dtype, std::vector<uint64_t> shape,
                          std::vector<uint32_t> box,
                          rt::TensorMapSwizzle swizzle = rt::TensorMapSwizzle::B128);

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_KERNELBUILDERS_H
