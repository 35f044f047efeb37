//===- KernelGrids.h - Launch grids of shape-generic kernels ----*- C++ -*-===//
//
// A kernel compiled for run-time shapes (bundle format 5) is launched with a
// grid that follows the shapes it is given. The builders and the launchers
// compute it here, so that both use the same formula.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_KERNELGRIDS_H
#define SINKATTN_RUNTIME_KERNELGRIDS_H

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Launch.h"

#include <cstdint>
#include <vector>

namespace sinkattn::rt {

/// The attention kernels' grid of `blocks` row (or key) blocks per head and
/// sequence: windowed, (blocks, H, B), a head's blocks in order; without a
/// window, (H / HK, blocks, HK * B), a kv head's query heads side by side
/// so that the blocks running together share K/V in L2.
Dim3 attentionBlockGrid(int64_t blocks, const SinkAttentionShape &shape);
/// Whether that grid fits CUDA's limits (y and z at most 65535, x below
/// 2^31); the error says which size is too large (`keyBlocks`: the blocks
/// cover the longest key sequence, not the query one).
Status attentionGridFits(int64_t blocks, const SinkAttentionShape &shape,
                         bool keyBlocks = false);
/// Whether the attention tensors of `tokensQ` and `tokensKv` tokens fit the
/// kernels' 32-bit index math (fewer than 2^31 elements each).
Status attentionTensorsFit(int64_t tokensQ, int64_t tokensKv,
                           const SinkAttentionShape &shape);

/// Blocks of 128 keys the longest row of a sink-fwd problem sees: its keys
/// (seqKv), with a window W at most ceil(W / 128) + 1.
int64_t sinkFwdRowKeyBlocks(int64_t seqKv, int64_t window);
/// The sink-fwd schedule `auto` picks for rows of `rowKeyBlocks` key
/// blocks: "overlap" at D 128 from kOverlapMinKeyBlocks, "ws" at D 128
/// below it and at D 64 from kWarpSpecializedD64MinKeyBlocks, "plain" at
/// D 64 below that. The compiler's auto and the kernel library's choice
/// among a variant's forms both ask here.
const char *sinkFwdAutoSchedule(int64_t headDim, int64_t rowKeyBlocks);
/// Rows that see this many key blocks repay the overlapped schedule's
/// extra iteration (below it ws was ahead; docs/PERF.md).
inline constexpr int64_t kOverlapMinKeyBlocks = 17;
/// D 64 runs warp-specialized (three consumer warpgroups) from this many
/// key blocks, else plain: on long rows the GPU sits at its power limit,
/// and ws, reading a third of plain's K/V bytes from L2 per row, keeps
/// higher clocks; on shorter ones plain's lower overhead wins
/// (docs/PERF.md).
inline constexpr int64_t kWarpSpecializedD64MinKeyBlocks = 128;

/// Whether a sink-fwd problem runs persistent where the form exists: as
/// the compiler's auto decides it (kernels::buildSinkFwd): a ws or overlap
/// schedule, no window, rows of at most kPersistentMaxKeyBlocks key blocks
/// (TileSchedule.h) and more tiles than `smCount`.
bool sinkFwdRunsPersistent(const std::string &schedule, int64_t rowKeyBlocks,
                           int64_t window, int64_t tiles, int64_t smCount);

/// tma-copy's tiles are 64 x 64 elements.
inline constexpr uint64_t kTmaCopyTile = 64;

/// tma-copy: one block per strip of 64 rows and `tilesPerBlock` 64-column
/// tiles (the last ones clipped by the tensor maps).
Dim3 tmaCopyGrid(uint64_t m, uint64_t n, uint64_t tilesPerBlock);

/// A tma-copy bundle compiled for run-time shapes, for an M x N matrix: its
/// tensors, tensor maps, grid and config follow. Errors: a bundle compiled
/// for one shape (naming it), rows that are not a multiple of 16 bytes (the
/// tensor maps' row stride), or more than 65535 strips of rows.
Expected<Bundle> tmaCopyForShape(const Bundle &bundle, uint64_t m, uint64_t n);

/// Element strides between consecutive tokens of q, k, v and o, views of
/// [T, H * D] rows (0: dense, the row's length).
struct VarlenTokenStrides {
  int64_t q = 0, k = 0, v = 0, out = 0;
};

/// The units of a varlen call's sequence offsets, in tokens: 1, or for a
/// batch of sequences of one length (BSHD) that length, with the offsets
/// 0, 1, ..., B (so that one table of them serves every such batch).
struct SequenceOffsetUnits {
  int64_t q = 1, kv = 1;
};

/// A varlen sink-fwd bundle for run-time shapes, for `tokensQ` query and
/// `tokensKv` key tokens in `shape.batch` sequences whose longest query
/// sequence has `maxSeqlenQ` rows (heads, head dim, window, scale and
/// causality from `shape`): its tensors, tensor maps, scalars (scale_log2,
/// window, the offsets' units), grid and config's heads, window and scale.
/// A persistent bundle (one with a "tiles" buffer) gets min(N, `smCount`,
/// tiles) blocks (N: its persistent_blocks; `smCount` <= 0: no limit) and a
/// tile table sized for them, which sinkFwdTileTableFor fills.
/// Errors: a bundle
/// from before these were arguments, a causality or window kind the kernel
/// did not compile, kv heads that do not divide the heads, a window past
/// 2^31-1, a non-finite scale, a grid past CUDA's limits (after
/// `gridContext`), tensors past 32-bit indexing, what withTensorShapes
/// refuses (token strides for a kernel that takes dense tensors among it).
Expected<Bundle>
sinkFwdForSizes(const Bundle &bundle, const SinkAttentionShape &shape,
                int64_t tokensQ, int64_t tokensKv, int64_t maxSeqlenQ,
                const std::string &gridContext = "",
                const VarlenTokenStrides &strides = {},
                const SequenceOffsetUnits &units = {}, int64_t smCount = 0);

/// Element strides between consecutive tokens of the backward's gradients
/// and dO, views of [T, H * D] rows (0: dense).
struct VarlenGradientStrides {
  int64_t dO = 0, dQ = 0, dK = 0, dV = 0;
};

/// A varlen sink-bwd bundle compiled for run-time shapes, for the problem
/// sinkFwdForSizes describes (its setup launch is that forward) whose
/// longest key sequence has `maxSeqlenKv` rows: every launch's tensors,
/// scalars and grid follow, the scratch buffers among them (sized for the
/// call: the caller allocates them by the shaped bundle's shapes). Errors:
/// sinkFwdForSizes's, a bundle that is not sink-bwd or not for run-time
/// shapes, GQA (kv heads below heads) for a bundle compiled for one query
/// head per kv head, a launch the shaped form does not know, grids or
/// scratch past CUDA's or 32-bit limits.
Expected<Bundle>
sinkBwdForSizes(const Bundle &bundle, const SinkAttentionShape &shape,
                int64_t tokensQ, int64_t tokensKv, int64_t maxSeqlenQ,
                int64_t maxSeqlenKv, const std::string &gridContext = "",
                const VarlenTokenStrides &strides = {},
                const VarlenGradientStrides &gradientStrides = {},
                const SequenceOffsetUnits &units = {});

/// The tile table (its "tiles" buffer) of a persistent sink-fwd bundle
/// shaped by sinkFwdForSizes, for its grid's blocks: `longest` is the call's
/// problem with every sequence at the longest lengths (batch, heads, kv
/// heads, window, causality, seqQ and seqKv the longest; rt::sinkFwdTileTable).
/// Errors: a bundle that takes no table, a table whose size is not the
/// shaped buffer's (a `longest` that is not the shaped problem).
Expected<std::vector<int32_t>>
sinkFwdTileTableFor(const Bundle &shaped, const SinkAttentionShape &longest);

/// A varlen sink-fwd or sink-bwd bundle compiled for run-time shapes
/// (`shape`: its config's problem), for the sequences of lengths `seqlensQ` and
/// `seqlensKv` (one each per sequence): tensors, cu_seqlens, grid (from the
/// longest query sequence and the config's block_m) and config follow.
/// Errors: a bundle compiled for its lengths only, length lists that differ
/// in count or are empty, a negative length, no query or no key token at
/// all, and what rt::validate says of the new problem.
Expected<Bundle> sinkFwdForLengths(const Bundle &bundle,
                                   const SinkAttentionShape &shape,
                                   const std::vector<int64_t> &seqlensQ,
                                   const std::vector<int64_t> &seqlensKv);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_KERNELGRIDS_H
