//===- TileSchedule.h - A persistent kernel's tiles per block ---*- C++ -*-===//
//
// The persistent attention forward runs one block per SM, each over its own
// list of tiles. The compiler builds the lists into a kernel compiled for
// one problem; a kernel for run-time shapes takes them as an argument, which
// the launcher builds here for the call's sizes. Both use the same lists.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_TILESCHEDULE_H
#define SINKATTN_RUNTIME_TILESCHEDULE_H

#include "SinkAttn/Runtime/AttentionReference.h"

#include <cstdint>
#include <vector>

namespace sinkattn::rt {

/// A persistent kernel's tiles split into `blocks` lists, one per block, so
/// that the blocks' sums of `costs` (one per tile, positive, in any unit)
/// stay level: longest-processing-time-first, then moves and swaps off the
/// longest list while they shorten it. Every tile is in exactly one list;
/// each list runs its tiles by `groups` (one per tile; empty: one group),
/// then costliest first (ties: lower index first). Deterministic.
std::vector<std::vector<int64_t>>
balancedTileLists(const std::vector<int64_t> &costs, int64_t blocks,
                  const std::vector<int64_t> &groups = {});

/// Rows of a persistent forward see at most this many key blocks: past it
/// the tiles are long enough that one block per tile was level or ahead
/// (docs/PERF.md).
inline constexpr int64_t kPersistentMaxKeyBlocks = 32;

/// The persistent sink-fwd's tile table for `blocks` blocks of `blockM`
/// query rows: [blocks + 1] offsets into the table, then each block's list
/// (balancedTileLists). Tile t is row block t / (H B) of head t mod H of
/// sequence (t mod H B) / H. A tile costs the key blocks its rows see plus
/// a fixed overhead; a list runs the tiles of one sequence and kv head
/// together, so the blocks running at a time share K/V in L2. `shape` gives
/// batch, heads, kv heads, lengths (a varlen call's longest: its shorter
/// sequences' extra tiles find no rows), window and causality; its layout
/// is not read.
std::vector<int32_t> sinkFwdTileTable(const SinkAttentionShape &shape,
                                      int64_t blockM, int64_t blocks);

/// The tiles of that table: row blocks x heads x batch.
int64_t sinkFwdTileCount(const SinkAttentionShape &shape, int64_t blockM);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_TILESCHEDULE_H
