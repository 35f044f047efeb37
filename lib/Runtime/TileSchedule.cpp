//===- TileSchedule.cpp - A persistent kernel's tiles per block ----------===//
//
// The persistent attention forward's tile lists (TileSchedule.h). The
// causal tiles' costs differ (a tile of query block i sees about i + 1 key
// blocks), so the split decides how long the last block runs. Round-robin
// in a snake order left the longest block above the best possible; the
// lists below reach it on the seed's cells (docs/design.md).
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Runtime/TileSchedule.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <queue>

namespace sinkattn::rt {

namespace {
/// Improvement steps after the greedy split, at most this many per list
/// (each shortens the longest list or ends the search).
constexpr int64_t kImprovementsPerList = 8;

/// Key blocks (columns of a tile's scores) of the attention forward.
constexpr int64_t kSinkFwdBlockN = 128;

/// What a persistent tile costs beyond its key blocks, in key blocks (its
/// Q load, first GEMM and epilogue, less when the next tile's Q arrives
/// during the epilogue). Only the balance of the lists depends on it.
constexpr int64_t kTileOverheadBlocks = 2;

/// A list's tiles by cost (a tile of each cost is all a move or swap needs).
using TilesByCost = std::map<int64_t, std::vector<int64_t>>;

/// The move or swap between the longest list and `other` that leaves the
/// longer of the two shortest, if it is shorter than the longest list was:
/// a tile of cost `give` goes from the longest list to `other`, and one of
/// cost `take` (0: none) comes back.
struct Exchange {
  int64_t give = 0, take = 0, result = 0;
};

std::optional<Exchange> bestExchange(const TilesByCost &longest,
                                     int64_t longestLoad,
                                     const TilesByCost &other,
                                     int64_t otherLoad) {
  std::optional<Exchange> best;
  auto consider = [&](int64_t give, int64_t take) {
    int64_t delta = give - take;
    if (delta <= 0)
      return;
    int64_t result = std::max(longestLoad - delta, otherLoad + delta);
    if (result >= longestLoad || (best && result >= best->result))
      return;
    best = Exchange{give, take, result};
  };
  for (const auto &given : longest) {
    consider(given.first, 0);
    for (const auto &taken : other)
      consider(given.first, taken.first);
  }
  return best;
}
} // namespace

std::vector<std::vector<int64_t>>
balancedTileLists(const std::vector<int64_t> &costs, int64_t blocks,
                  const std::vector<int64_t> &groups) {
  assert(blocks > 0 && "a schedule needs a block");
  assert(std::all_of(costs.begin(), costs.end(),
                     [](int64_t c) { return c > 0; }) &&
         "costs are positive (0 stands for no tile in an exchange)");
  assert((groups.empty() || groups.size() == costs.size()) &&
         "a group per tile, or none");
  const int64_t tiles = int64_t(costs.size());
  std::vector<int64_t> order(tiles);
  std::iota(order.begin(), order.end(), int64_t(0));
  auto costlierFirst = [&](int64_t a, int64_t b) {
    return costs[a] != costs[b] ? costs[a] > costs[b] : a < b;
  };
  std::sort(order.begin(), order.end(), costlierFirst);

  // Longest processing time first: each tile to the shortest list so far
  // (the lowest-numbered on ties).
  std::vector<TilesByCost> lists(blocks);
  std::vector<int64_t> load(blocks, 0);
  using Entry = std::pair<int64_t, int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> shortest;
  for (int64_t b = 0; b < blocks; ++b)
    shortest.push({0, b});
  for (int64_t tile : order) {
    int64_t b = shortest.top().second;
    shortest.pop();
    lists[b][costs[tile]].push_back(tile);
    load[b] += costs[tile];
    shortest.push({load[b], b});
  }

  // Then moves and swaps off the longest list, each to the list that ends
  // shortest, while one shortens it.
  for (int64_t step = 0; step < kImprovementsPerList * blocks; ++step) {
    int64_t longest = int64_t(
        std::max_element(load.begin(), load.end()) - load.begin());
    std::optional<Exchange> best;
    int64_t bestOther = -1;
    for (int64_t other = 0; other < blocks; ++other) {
      if (load[other] >= load[longest])
        continue;
      std::optional<Exchange> exchange =
          bestExchange(lists[longest], load[longest], lists[other], load[other]);
      if (exchange && (!best || exchange->result < best->result)) {
        best = exchange;
        bestOther = other;
      }
    }
    if (!best)
      break;
    auto moveTile = [&](int64_t from, int64_t to, int64_t cost) {
      std::vector<int64_t> &ofCost = lists[from][cost];
      lists[to][cost].push_back(ofCost.back());
      ofCost.pop_back();
      if (ofCost.empty())
        lists[from].erase(cost);
      load[from] -= cost;
      load[to] += cost;
    };
    moveTile(longest, bestOther, best->give);
    if (best->take)
      moveTile(bestOther, longest, best->take);
  }

  // Each list by group, then costliest first: blocks that run at the same
  // pace then work on the same groups at the same time.
  auto runOrder = [&](int64_t a, int64_t b) {
    if (!groups.empty() && groups[a] != groups[b])
      return groups[a] < groups[b];
    return costlierFirst(a, b);
  };
  std::vector<std::vector<int64_t>> result(blocks);
  for (int64_t b = 0; b < blocks; ++b) {
    for (const auto &[cost, ofCost] : lists[b])
      result[b].insert(result[b].end(), ofCost.begin(), ofCost.end());
    std::sort(result[b].begin(), result[b].end(), runOrder);
  }
  return result;
}

int64_t sinkFwdTileCount(const SinkAttentionShape &shape, int64_t blockM) {
  const int64_t rowBlocks =
      std::max<int64_t>(1, (shape.seqQ + blockM - 1) / blockM);
  return rowBlocks * shape.heads * shape.batch;
}

std::vector<int32_t> sinkFwdTileTable(const SinkAttentionShape &shape,
                                      int64_t blockM, int64_t blocks) {
  // Every sequence at the given lengths: the costs do not read offsets.
  SinkAttentionShape lengths = shape;
  lengths.layout = AttentionLayout::BSHD;
  const int64_t tilesPerLevel = shape.heads * shape.batch;
  const int64_t tiles = sinkFwdTileCount(shape, blockM);
  const int64_t levels = tiles / tilesPerLevel;
  const int64_t group = shape.heads / shape.kvHeads;
  // balancedTileLists sees the tiles heaviest first (causal row blocks from
  // the last), which decides the order of equal costs; the table holds each
  // tile's number in the kernel's order.
  std::vector<int64_t> costs(tiles), kvGroups(tiles);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t level = t / tilesPerLevel, inLevel = t % tilesPerLevel;
    const int64_t firstRow = (levels - 1 - level) * blockM;
    const int64_t lastRow =
        std::max<int64_t>(std::min(firstRow + blockM, shape.seqQ) - 1, 0);
    const int64_t lo =
        attendedKeys(lengths, 0, firstRow).begin / kSinkFwdBlockN;
    const int64_t hi =
        (attendedKeys(lengths, 0, lastRow).end + kSinkFwdBlockN - 1) /
        kSinkFwdBlockN;
    costs[t] = std::max<int64_t>(hi - lo, 0) + kTileOverheadBlocks;
    kvGroups[t] = (inLevel / shape.heads) * shape.kvHeads +
                  (inLevel % shape.heads) / group;
  }
  auto kernelTile = [&](int64_t t) {
    const int64_t level = t / tilesPerLevel;
    return int32_t((levels - 1 - level) * tilesPerLevel + t % tilesPerLevel);
  };
  std::vector<int32_t> table, lists;
  int64_t next = blocks + 1;
  for (const std::vector<int64_t> &list :
       balancedTileLists(costs, blocks, kvGroups)) {
    table.push_back(int32_t(next));
    next += int64_t(list.size());
    for (int64_t tile : list)
      lists.push_back(kernelTile(tile));
  }
  table.push_back(int32_t(next));
  table.insert(table.end(), lists.begin(), lists.end());
  return table;
}

} // namespace sinkattn::rt
