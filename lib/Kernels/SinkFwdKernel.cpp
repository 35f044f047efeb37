//===- SinkFwdKernel.cpp - Attention-sink forward in tile IR --------------===//
//
// O = softmax([Q Kᵀ · scale, sink]) V without the sink's column, per head
// (GPT-OSS attention sinks): the sink logit only enlarges the softmax
// denominator. Causal, right-aligned (query row i sits at key position
// i + SKV - SQ), optionally limited to a sliding window of W keys; GQA maps
// query head h to key/value head h / (H / HK). Also writes the natural-log
// LSE of each row including the sink, which the backward pass needs.
//
// The schedule: two consumer warpgroups per block of 128 query rows (three,
// 192 rows, at D = 64; 64 each, sharing the K and V tiles); for each
// block of BN keys it reads K and V from shared memory, computes
// S = Q Kᵀ (wgmma SS), masks, updates the online softmax in the log2
// domain, and accumulates O += P V (wgmma RS, P from registers). The loads
// are tile.copy in a `tile.num_stages` loop: tile-warp-specialize gives
// them to a TMA producer warpgroup (K and V are two groups, each with its
// own full/empty barriers per stage). The overlap schedule (auto's for
// D = 128 with rows of more than 16 key blocks) also overlaps each
// warpgroup's softmax with its own GEMMs (kOverlapLoopHead). The running
// max starts at the sink (in log2 units) and the running sum at 1,
// so the sink is in the softmax from the start and rows never see -inf as
// their max (unless the sink itself is -inf, which is guarded).
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilding.h"
#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Query rows per warpgroup.
constexpr int64_t kRowsPerWarpgroup = 64;
constexpr int64_t kBlockN = 128;
/// Auto's overlapped schedule needs rows that see this many key blocks to
/// repay its extra iteration (measured: ws 1.7% ahead at 16 blocks, causal
/// S 2048, once O went through TMA; overlap ahead at 32 and more).
constexpr int64_t kOverlapMinKeyBlocks = 17;
/// Auto runs D = 64 warp-specialized (three consumer warpgroups) when the
/// longest row sees at least this many key blocks, else plain. At S 16384
/// (128 blocks) ws was 3.3% ahead of plain in `tune` and 5% in a sustained
/// run, where the GPU sits at its power limit and ws, reading a third of
/// plain's K/V bytes from L2 per row, keeps higher clocks; at S 8192 plain
/// was 4% ahead in `tune` and ws 2.5% in the sustained run; at S 4096
/// plain led in both (docs/PERF.md, session 19).
constexpr int64_t kWarpSpecializedD64MinKeyBlocks = 128;
/// Auto makes the forward persistent while its longest row sees at most
/// this many key blocks: with the tile lists the persistent form was 1.6%
/// ahead of one block per tile at 32 (D 128 S 4096, overlap), even at 64
/// (S 8192, within the noise) and 2.2% behind at 128 (docs/PERF.md,
/// session 17).
constexpr int64_t kPersistentMaxKeyBlocks = 32;

// The kernel's text: kSinkFwdHead, then the main loop — serial or
// overlapped: its head, the mask decision (blockMaskDecisionText), the
// mask (kMaskMap) and the softmax (kSoftmaxCore) arranged as buildSinkFwd
// says, its tail — then kSinkFwdTail.
constexpr llvm::StringLiteral kSinkFwdHead = R"mlir(
!sQ = memref<@BM@x@D@x@T@, #gpu.address_space<workgroup>>
!sQw = memref<64x@D@x@T@, strided<[@D@, 1], offset: ?>, #gpu.address_space<workgroup>>
!sKV = memref<@BN@x@D@x@T@, #gpu.address_space<workgroup>>
!sOw = memref<64x@D@x@T@, #gpu.address_space<workgroup>>
!S = !tile.fragment<64x@BN@xf32>
!P = !tile.fragment<64x@BN@x@T@>
!O = !tile.fragment<64x@D@xf32>
!O16 = !tile.fragment<64x@D@x@T@>
!row = !tile.fragment<64xf32>
!rowParts = !tile.fragment<64x8xf32>
!q = @Q_TYPE@
!kv = @KV_TYPE@
!lse = @LSE_TYPE@
module attributes {gpu.container_module} {
  gpu.module @sink_fwd {
@TILE_TABLE@
    gpu.func @sink_fwd(%Q: !q, %K: !kv, %V: !kv, %sinks: memref<@H@x@ST@>,
                       %O: !q, %LSE: !lse@SEQUENCE_ARGS@) kernel
        @ATTRIBUTES@ {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %cBM = arith.constant @BM@ : index
      %cBN = arith.constant @BN@ : index
      %cBNm1 = arith.constant @BN_MINUS_1@ : index
      %c63 = arith.constant 63 : index
      %group = arith.constant @GROUP@ : index
      %window = arith.constant @WINDOW@ : index
      %hasWindow = arith.constant @HAS_WINDOW@
      %zero = arith.constant 0.0 : f32
      %one = arith.constant 1.0 : f32
      %ninf = arith.constant 0xFF800000 : f32
      %log2e = arith.constant 1.44269504088896340736 : f32
      %ln2 = arith.constant 0.693147180559945309417 : f32
      // softmax scale in log2 units: exp(x * scale) = exp2(x * scaleLog2).
      %scaleLog2 = arith.constant @SCALE_LOG2@ : f32
@RESCALE_MARGIN@
@TILE_LOOP_BEGIN@
@BLOCK_IDS@
      %hk = arith.divui %h, %group : index
@SEQUENCE@
      // Right-aligned causal: query row i sits at key position i + past
      // (negative when the sequence has more queries than keys).
      %past = arith.subi %skv, %seqQ : index
      // The block's BM query rows; this warpgroup's 64 of them.
      %mBlock = arith.muli %qb, %cBM : index
      @WARPGROUP_INDEX@
      %wgRow = arith.muli %wg, %c64 : index
      %m0 = arith.addi %mBlock, %wgRow : index
@POSITIONS@
@ALLOCS@
@LOAD_Q@
      %sQw = memref.subview %sQ[%wgRow, 0] [64, @D@] [1, 1] : !sQ to !sQw

      // Key blocks the block's rows can see: up to its last row's position
      // (causal), from its first row's window start. (One warpgroup may
      // find a block fully masked; it then leaves its rows unchanged.)
      @LAST_KEY@
      %hiKey = arith.minsi %lastKey, %skv : index
      %hi = arith.maxsi %hiKey, %c0 : index
      %hiCausal = arith.ceildivui %hi, %cBN : index
      %firstKey = arith.subi %pBlock, %window : index
      %firstKey1 = arith.addi %firstKey, %c1 : index
      %firstKeyPos = arith.maxsi %firstKey1, %c0 : index
      %windowLo = arith.divui %firstKeyPos, %cBN : index
      %loBlocks = arith.select %hasWindow, %windowLo, %c0 : index
      // Blocks past the end of their sequence (varlen) do no work.
      %live = arith.cmpi slt, %mBlock, @ROWS_LIMIT@ : index
      %hiLive = arith.select %live, %hiCausal, %loBlocks : index
      %hiBlocks = arith.maxsi %hiLive, %loBlocks : index

@SINK_INIT@
@L_INIT@
      %oInit = tile.fill %zero : !O
      %sZero = tile.fill %zero : !S
@PINGPONG_INIT@
)mlir";
// The serial loop: S = Q K_jᵀ, softmax, O += P V, one block after another.
constexpr llvm::StringLiteral kSerialLoopHead = R"mlir(
      %res:3 = scf.for %kb = %loBlocks to %hiBlocks step %c1
          iter_args(%m = %mInit, %l = %lInit, %o = %oInit) -> (!row, @L@, !O) {
        %n0 = arith.muli %kb, %cBN : index
@LOAD_KV@
@PINGPONG_SYNC@
        %s = tile.gemm %sQw, %sK, %sZero {transpose_b} : !sQw, !sKV, !S
@PINGPONG_ARRIVE@
)mlir";
// S with masked keys set to -inf (%maskedS).
constexpr llvm::StringLiteral kMaskMap = R"mlir(
        %maskedS = tile.map (%s) : (!S) -> !S {
        ^bb0(%i: index, %jj: index, %x: f32):
          %j = arith.addi %n0, %jj : index
          @ROW_POSITION@
@KEEP_KEY@
          %r = arith.select %keep, %x, %ninf : f32
          tile.yield %r : f32
        }
)mlir";
// Updates the running max and sum from the block's scores %scores;
// defines %mNew, %lNew, %p (the block's probabilities, f32) and %alpha
// (the rescale of O).
constexpr llvm::StringLiteral kSoftmaxCore = R"mlir(
        %blockMax = tile.reduce max %scores along 1 : !S -> !row
        %mNew = tile.map (%m, %blockMax) : (!row, !row) -> !row {
        ^bb0(%i: index, %mOld: f32, %x: f32):
          %t = arith.mulf %x, %scaleLog2 : f32
@MAX_UPDATE@
          tile.yield %r : f32
        }
        // The offset subtracted before exp2: the new max, or 0 while the
        // row has seen nothing but -inf (avoids -inf - -inf).
        %mUse = tile.map (%mNew) : (!row) -> !row {
        ^bb0(%i: index, %x: f32):
          %isInf = arith.cmpf oeq, %x, %ninf : f32
          %r = arith.select %isInf, %zero, %x : f32
          tile.yield %r : f32
        }
        %p = tile.map (%scores, %mUse) : (!S, !row) -> !S {
        ^bb0(%i: index, %j: index, %x: f32, %mu: f32):
          %negM = arith.negf %mu : f32
          %t = math.fma %x, %scaleLog2, %negM : f32
          %e = math.exp2 %t : f32
          tile.yield %e : f32
        }
        @BLOCK_SUM@
        %alpha = tile.map (%m, %mUse) : (!row, !row) -> !row {
        ^bb0(%i: index, %mOld: f32, %mu: f32):
          %d = arith.subf %mOld, %mu : f32
          %e = math.exp2 %d : f32
          tile.yield %e : f32
        }
        %lNew = tile.map (%l, %alpha, %blockSum) : (@L@, !row, @L@) -> @L@ {
        ^bb0(@L_INDICES@, %lOld: f32, %a: f32, %sum: f32):
          %r = math.fma %lOld, %a, %sum : f32
          tile.yield %r : f32
        }
)mlir";
constexpr llvm::StringLiteral kSerialLoopTail = R"mlir(
        %oScaled = tile.map (%o, %alpha) : (!O, !row) -> !O {
        ^bb0(%i: index, %j: index, %x: f32, %a: f32):
          %r = arith.mulf %x, %a : f32
          tile.yield %r : f32
        }
        %p16 = tile.cast %p : !S to !P
        %oNew = tile.gemm %p16, %sV, %oScaled : !P, !sKV, !O
        scf.yield %mNew, %lNew, %oNew : !row, @L@, !O
      } {tile.num_stages = @STAGES@}
)mlir";
constexpr llvm::StringLiteral kOverlapLoopHead = R"mlir(
      // Order A (FA3's intra-warpgroup overlap): iteration j issues
      // S_j = Q K_jᵀ and O += P_{j-1} V_{j-1} together and computes the
      // softmax of S_j while P V runs. V is loaded one block behind K, so
      // the loop runs once more than there are key blocks: the first
      // iteration adds P V with P = 0 (O is 0), and the last one's S sits
      // past every stored row's last key (%n0 = hiBlocks * BN), where the
      // mask removes all of it (rows past the sequence may keep some of
      // the repeated K block's scores; they are never stored). The
      // copies' block indices are clamped to the key range (the repeated
      // tiles come from L2).
      %hasBlocks = arith.cmpi sgt, %hiBlocks, %loBlocks : index
      %hiBlocksP1 = arith.addi %hiBlocks, %c1 : index
      %hiIterations = arith.select %hasBlocks, %hiBlocksP1, %loBlocks : index
      %lastKeyBlock = arith.subi %hiBlocks, %c1 : index
      %zeroT = arith.constant 0.0 : @T@
      %pInit = tile.fill %zeroT : !P
      %res:4 = scf.for %kb = %loBlocks to %hiIterations step %c1
          iter_args(%m = %mInit, %l = %lInit, %o = %oInit, %pPrev = %pInit)
          -> (!row, @L@, !O, !P) {
        %n0 = arith.muli %kb, %cBN : index
        %kbK = arith.minsi %kb, %lastKeyBlock : index
        %nK = arith.muli %kbK, %cBN : index
        %kbPrev = arith.subi %kb, %c1 : index
        %kbV = arith.maxsi %kbPrev, %loBlocks : index
        %nV = arith.muli %kbV, %cBN : index
@LOAD_KV@
@PINGPONG_SYNC@
        %sAsync = tile.gemm %sQw, %sK, %sZero {transpose_b, async} : !sQw, !sKV, !S
        %oAsync = tile.gemm %pPrev, %sV, %o {async} : !P, !sKV, !O
@PINGPONG_ARRIVE@
        %s = tile.gemm_wait %sAsync pending 1 : !S
)mlir";
constexpr llvm::StringLiteral kOverlapLoopTail = R"mlir(
        // P is converted and O rescaled only once P V is complete: P's
        // registers are the ones the in-flight wgmma reads, and ptxas
        // serializes the two GEMMs (C7513) when they are redefined earlier
        // (docs/experiments/c7513-order-a.cu).
        %oDone = tile.gemm_wait %oAsync pending 0 : !O
        %oScaled = tile.scale_rows %oDone by %soft#3 : !O, !row
        %p16 = tile.cast %soft#2 : !S to !P
        scf.yield %soft#0, %soft#1, %oScaled, %p16 : !row, @L@, !O, !P
      } {tile.num_stages = @STAGES@}
)mlir";
constexpr llvm::StringLiteral kSinkFwdTail = R"mlir(
      // O = o / l (0 when l is 0: a -inf sink and no key); LSE in natural
      // log units: (m + log2 l) * ln 2.
@ROW_SUM@
      %inverse = tile.map (@ROW_SUM_VALUE@) : (!row) -> !row {
      ^bb0(%i: index, %x: f32):
        %isZero = arith.cmpf oeq, %x, %zero : f32
        %inv = arith.divf %one, %x : f32
        %r = arith.select %isZero, %zero, %inv : f32
        tile.yield %r : f32
      }
      %out = tile.map (%res#2, %inverse) : (!O, !row) -> !O16 {
      ^bb0(%i: index, %j: index, %x: f32, %inv: f32):
        %y = arith.mulf %x, %inv : f32
        %r = arith.truncf %y : f32 to @T@
        tile.yield %r : @T@
      }
      %lse = tile.map (%res#0, @ROW_SUM_VALUE@) : (!row, !row) -> !row {
      ^bb0(%i: index, %mx: f32, %sum: f32):
        %lg = math.log2 %sum : f32
        %t = arith.addf %mx, %lg : f32
        %r = arith.mulf %t, %ln2 : f32
        tile.yield %r : f32
      }
@STORE@
@TILE_LOOP_END@
      gpu.return
    }
  }
}
)mlir";

constexpr const char *kAllocs = R"mlir(
      %sQ = memref.alloc() : !sQ
      %sK = memref.alloc() : !sKV
      %sV = memref.alloc() : !sKV)mlir";
/// storeThroughSharedMemory's tiles for `warpgroups` (two or more)
/// warpgroups: %sO0, %sO1, ...
std::string stagingAllocs(int64_t warpgroups) {
  std::string text;
  for (int64_t w = 0; w < warpgroups; ++w)
    text += "\n      %sO" + std::to_string(w) + " = memref.alloc() : !sOw";
  return text;
}

/// What a persistent tile costs beyond its key blocks, in key blocks (its
/// Q load, first GEMM and epilogue; about 4.7 for one block per tile at
/// D 128, PERF.md session 17, less when the next tile's Q arrives during
/// the epilogue). Only the balance of the lists depends on it.
constexpr int64_t kTileOverheadBlocks = 2;

/// --persistent's module table @sink_fwd_tiles: the `blocks` blocks' tile
/// lists (balancedTileLists) as [G + 1] offsets into the table, then the
/// lists; tile t as numbered in persistentLoopBegin (`rowBlocks` blocks of
/// `blockM` rows per head and sequence, heaviest first). A tile costs the
/// key blocks its rows see (from its first row's first key to its last
/// row's last, rt::attendedKeys) plus kTileOverheadBlocks; a list runs the
/// tiles of one sequence and kv head together, so the blocks running at a
/// time share K/V in L2 as one block per tile does (blockIdsText).
struct TileTable {
  std::string text;
  int64_t size = 0;
  /// The [G + 1] offsets, then the lists.
  std::vector<int32_t> entries;
};
TileTable tileTable(const rt::SinkAttentionShape &shape, int64_t rowBlocks,
                    int64_t blockM, int64_t blocks) {
  const int64_t tilesPerLevel = shape.heads * shape.batch;
  const int64_t tiles = rowBlocks * tilesPerLevel;
  const int64_t group = shape.heads / shape.kvHeads;
  std::vector<int64_t> costs(tiles), kvGroups(tiles);
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t firstRow = (rowBlocks - 1 - t / tilesPerLevel) * blockM;
    int64_t lastRow = std::min(firstRow + blockM, shape.seqQ) - 1;
    int64_t lo = rt::attendedKeys(shape, 0, firstRow).begin / kBlockN;
    int64_t hi =
        (rt::attendedKeys(shape, 0, lastRow).end + kBlockN - 1) / kBlockN;
    costs[t] = std::max<int64_t>(hi - lo, 0) + kTileOverheadBlocks;
    int64_t inLevel = t % tilesPerLevel;
    kvGroups[t] = (inLevel / shape.heads) * shape.kvHeads +
                  (inLevel % shape.heads) / group;
  }
  TileTable table;
  table.size = blocks + 1 + tiles;
  std::string offsets, entries;
  std::vector<int32_t> lists;
  int64_t next = blocks + 1;
  for (const std::vector<int64_t> &list :
       kernels::balancedTileLists(costs, blocks, kvGroups)) {
    table.entries.push_back(int32_t(next));
    offsets += std::to_string(next) + ", ";
    next += int64_t(list.size());
    for (int64_t tile : list) {
      lists.push_back(int32_t(tile));
      entries += ", " + std::to_string(tile);
    }
  }
  table.entries.push_back(int32_t(next));
  llvm::append_range(table.entries, lists);
  offsets += std::to_string(next);
  table.text = "    memref.global \"private\" constant @sink_fwd_tiles : memref<" +
               std::to_string(table.size) + "xi32> = dense<[" + offsets +
               entries + "]>";
  return table;
}

// --persistent: each block loops over tiles (blocks of BM query rows of one
// head). The tiles are numbered heaviest first over all heads (tile t is
// block level t / (H·B) counted from the last, head t mod H, sequence
// (t mod H·B) / H). Which block takes which tiles is decided here, when
// the kernel is built (balancedTileLists): block c runs the tiles of its
// list in the module's constant table @sink_fwd_tiles ([G + 1] list
// offsets, then the lists), so the launch must have the table's G blocks.
// The warpgroup index, the shared tiles and the ping-pong's first
// hand-over come before the loop: the turns run on from one tile to the
// next, since all warpgroups iterate over the same key blocks.
std::string persistentLoopBegin(int64_t tableSize, int64_t tilesPerLevel,
                                int64_t levels, int64_t heads,
                                const std::string &allocs,
                                const std::string &pingPong) {
  auto str = [](int64_t v) { return std::to_string(v); };
  std::string table = "memref<" + str(tableSize) + "xi32>";
  return std::string(kernels::kWarpgroupIndex) + allocs.substr(1) +
         pingPong + R"mlir(
      %tilesPerLevel = arith.constant )mlir" + str(tilesPerLevel) + R"mlir( : index
      %lastLevel = arith.constant )mlir" + str(levels - 1) + R"mlir( : index
      %headCount = arith.constant )mlir" + str(heads) + R"mlir( : index
      %tileTable = memref.get_global @sink_fwd_tiles : )mlir" + table + R"mlir(
      %blockOfGrid = gpu.block_id x
      %nextBlock = arith.addi %blockOfGrid, %c1 : index
      %listBegin32 = memref.load %tileTable[%blockOfGrid] : )mlir" + table + R"mlir(
      %listEnd32 = memref.load %tileTable[%nextBlock] : )mlir" + table + R"mlir(
      %listBegin = arith.index_castui %listBegin32 : i32 to index
      %listEnd = arith.index_castui %listEnd32 : i32 to index
      scf.for %slot = %listBegin to %listEnd step %c1 {
      %tile32 = memref.load %tileTable[%slot] : )mlir" + table + R"mlir(
      %tile = arith.index_castui %tile32 : i32 to index
      %level = arith.divui %tile, %tilesPerLevel : index
      %qb = arith.subi %lastLevel, %level : index
      %inLevel = arith.remui %tile, %tilesPerLevel : index
      %h = arith.remui %inLevel, %headCount : index
      %b = arith.divui %inLevel, %headCount : index)mlir";
}

/// Row positions: key positions of the block's first row (%pBlock) and of
/// this warpgroup's (%p0); row i of the block is position %mBlock + i.
constexpr const char *kPositions = R"mlir(
      // Key positions of the block's first row and of this warpgroup's.
      %pBlock = arith.addi %mBlock, %past : index
      %p0 = arith.addi %m0, %past : index)mlir";

/// --pack-gqa: %minPos<suffix> and %maxPos<suffix>, the query positions of
/// the group's rows firstRow .. min(lastRowUnclamped, the group's last):
/// row R is position R mod Sq, and rows that run into the next head cover
/// all of [0, Sq).
std::string packedPositionRange(const std::string &suffix,
                                const std::string &firstRow,
                                const std::string &lastRowUnclamped) {
  std::string text;
  auto line = [&](const std::string &name, const std::string &op) {
    text += "\n      %" + name + suffix + " = " + op + " : index";
  };
  line("rowLast", "arith.minui " + lastRowUnclamped + ", %lastGroupRow");
  line("headFirst", "arith.divui " + firstRow + ", %seqQ");
  line("headLast", "arith.divui %rowLast" + suffix + ", %seqQ");
  line("wraps", "arith.cmpi ne, %headFirst" + suffix + ", %headLast" + suffix);
  line("posFirst", "arith.remui " + firstRow + ", %seqQ");
  line("posLast", "arith.remui %rowLast" + suffix + ", %seqQ");
  line("minPos", "arith.select %wraps" + suffix + ", %c0, %posFirst" + suffix);
  line("maxPos",
       "arith.select %wraps" + suffix + ", %seqQm1, %posLast" + suffix);
  return text;
}

/// --pack-gqa: a block's rows are rows of its kv head's group, the G query
/// heads' Sq rows one head after another; row R is query position R mod Sq
/// of the group's head R / Sq. %pBlock/%pBlockLast and %p0/%pLast bound
/// the key positions of the block's and the warpgroup's rows, which the
/// key-block range and the decision to mask need; the mask itself takes
/// each row's own position.
std::string packedPositions(int64_t groupRows) {
  return "\n      %groupRows = arith.constant " + std::to_string(groupRows) +
         " : index"
         "\n      %lastGroupRow = arith.constant " +
         std::to_string(groupRows - 1) +
         " : index"
         "\n      %seqQm1 = arith.subi %seqQ, %c1 : index"
         "\n      %blockEnd = arith.addi %mBlock, %cBM : index"
         "\n      %blockEndM1 = arith.subi %blockEnd, %c1 : index" +
         packedPositionRange("B", "%mBlock", "%blockEndM1") +
         "\n      %pBlock = arith.addi %minPosB, %past : index"
         "\n      %pBlockLast = arith.addi %maxPosB, %past : index"
         "\n      %wgEndM1 = arith.addi %m0, %c63 : index" +
         packedPositionRange("W", "%m0", "%wgEndM1") +
         "\n      %p0 = arith.addi %minPosW, %past : index"
         "\n      %pLast = arith.addi %maxPosW, %past : index"
         "\n      // The group's first row in the [B, H * Sq] view of Q, O "
         "and LSE."
         "\n      %groupRow0 = arith.muli %hk, %groupRows : index";
}

/// The running row sum l of the softmax. Deferred (the default): eight
/// partial columns per row, each thread adding only its own registers
/// (tile.partial_reduce), reduced across the quad once after the loop, as
/// FA3 does: the per-iteration butterfly's shuffles are gone from the
/// loop. Not deferred (ws, persistent): one value per row, reduced in every
/// iteration; there the four partial registers made ptxas spill and the
/// kernel 6% slower at D 128 S 2048 (docs/PERF.md, session 15).
struct RowSumText {
  std::string type, init, blockSum, updateIndices, finish, value;
};

RowSumText rowSumText(bool deferred) {
  if (!deferred)
    return {"!row", "      %lInit = tile.fill %one : !row",
            "%blockSum = tile.reduce sum %p along 1 : !S -> !row",
            "%i: index", "", "%res#1"};
  return {"!rowParts",
          R"mlir(      // The sink's exp2(sink - m) = 1 starts in column 0.
      %lInit = tile.map () : () -> !rowParts {
      ^bb0(%i: index, %j: index):
        %first = arith.cmpi eq, %j, %c0 : index
        %r = arith.select %first, %one, %zero : f32
        tile.yield %r : f32
      })mlir",
          "%blockSum = tile.partial_reduce sum %p : !S -> !rowParts",
          "%i: index, %j: index",
          "      %rowSum = tile.reduce sum %res#1 along 1 : !rowParts -> !row",
          "%rowSum"};
}

/// --pack-gqa: the running max of each row starts at its own head's sink
/// (rows past the group's end, which are never stored, take the last
/// head's); `rowSinkLoad` loads %sink of head %rowHead.
std::string packedSinkInit(const std::string &rowSinkLoad) {
  return R"mlir(
      %lastInGroup = arith.subi %group, %c1 : index
      %mInit = tile.map () : () -> !row {
      ^bb0(%i: index):
        %row = arith.addi %m0, %i : index
        %headInGroup = arith.divui %row, %seqQ : index
        %headInGroupC = arith.minui %headInGroup, %lastInGroup : index
        %rowHead = arith.addi %h, %headInGroupC : index
        )mlir" + rowSinkLoad + R"mlir(
        %sinkLog2 = arith.mulf %sink, %log2e : f32
        tile.yield %sinkLog2 : f32
      })mlir";
}

/// The parts of the template that depend on the memory layout.
struct LayoutText {
  std::string qType, kvType, lseType;
  /// Extra kernel arguments (varlen: the sequence offsets).
  std::string sequenceArgs;
  /// Defines %seqQ and %skv (this sequence's lengths) and, for the layouts
  /// that view [.., S, H * D], %hD and %hkD (the head's first column); for
  /// varlen also %qStart and %kStart (the sequence's first tokens).
  std::string sequence;
  std::string loadQ, loadKV, store;
  /// BHSD and BSHD: the indices of O at query row %oRow (the O tile's TMA
  /// store, storeThroughSharedMemory); empty where O is stored through a
  /// view that ends with the sequence (varlen, --pack-gqa), which a tensor
  /// map of the whole O would not clip.
  std::string oTile;
  /// With oTile: the LSE store that goes with it.
  std::string storeLse;
};

/// `kOffset` and `vOffset` name K's and V's first key: %n0 for both in the
/// serial loop, %nK and %nV (V one block behind K) in the overlapped one.
LayoutText layoutText(const rt::SinkAttentionShape &shape,
                      const std::string &type, bool packGqa,
                      const std::string &kOffset, const std::string &vOffset) {
  auto str = [](int64_t v) { return std::to_string(v); };
  const std::string d = str(shape.headDim);
  const std::string hd = str(shape.heads * shape.headDim);
  const std::string hkd = str(shape.kvHeads * shape.headDim);
  const std::string headColumns = R"mlir(
      %cD = arith.constant )mlir" + d + R"mlir( : index
      %hD = arith.muli %h, %cD : index
      %hkD = arith.muli %hk, %cD : index)mlir";
  LayoutText text;
  // BHSD and BSHD store LSE [B, H, SQ] alike.
  const std::string lseStore =
      "      tile.store %lse, %LSE[%b, %h, %m0] : !row, !lse";
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    text.qType = "memref<" + str(shape.batch) + "x" + str(shape.heads) + "x" +
                 str(shape.seqQ) + "x" + d + "x" + type + ">";
    text.kvType = "memref<" + str(shape.batch) + "x" + str(shape.kvHeads) +
                  "x" + str(shape.seqKv) + "x" + d + "x" + type + ">";
    text.sequence = "      %seqQ = arith.constant " + str(shape.seqQ) +
                    " : index\n      %skv = arith.constant " +
                    str(shape.seqKv) + " : index";
    text.loadQ = "      tile.copy %Q[%b, %h, %mBlock, %c0], %sQ : !q, !sQ";
    text.loadKV = "        tile.copy %K[%b, %hk, " + kOffset +
                  ", %c0], %sK : !kv, !sKV\n"
                  "        tile.copy %V[%b, %hk, " + vOffset +
                  ", %c0], %sV : !kv, !sKV";
    text.oTile = "%b, %h, %oRow, %c0";
    text.storeLse = lseStore;
    text.store =
        "      tile.store %out, %O[%b, %h, %m0, %c0] : !O16, !q\n" + lseStore;
    break;
  case rt::AttentionLayout::BSHD:
    // [B, S, H * D]: a head's rows are a 2-D box at column h * D.
    text.qType = "memref<" + str(shape.batch) + "x" + str(shape.seqQ) + "x" +
                 hd + "x" + type + ">";
    text.kvType = "memref<" + str(shape.batch) + "x" + str(shape.seqKv) +
                  "x" + hkd + "x" + type + ">";
    text.sequence = "      %seqQ = arith.constant " + str(shape.seqQ) +
                    " : index\n      %skv = arith.constant " +
                    str(shape.seqKv) + " : index" + headColumns;
    text.loadQ = "      tile.copy %Q[%b, %mBlock, %hD], %sQ : !q, !sQ";
    text.loadKV = "        tile.copy %K[%b, " + kOffset +
                  ", %hkD], %sK : !kv, !sKV\n"
                  "        tile.copy %V[%b, " + vOffset +
                  ", %hkD], %sV : !kv, !sKV";
    text.oTile = "%b, %oRow, %hD";
    text.storeLse = lseStore;
    text.store = "      tile.store %out, %O[%b, %m0, %hD] : !O16, !q\n" + lseStore;
    break;
  case rt::AttentionLayout::Varlen: {
    // [T, H * D] over all sequences. Loads may run past the sequence into
    // the next one (rows that are never stored, keys that the causal mask
    // hides); stores go through views that end with the sequence.
    const std::string tq = str(shape.tokensQ());
    const std::string offsets = "memref<" + str(shape.batch + 1) + "xi32>";
    text.qType = "memref<" + tq + "x" + hd + "x" + type + ">";
    text.kvType = "memref<" + str(shape.tokensKv()) + "x" + hkd + "x" + type + ">";
    text.sequenceArgs = ", %cuQ: " + offsets + ", %cuK: " + offsets;
    text.sequence = kernels::sequenceBoundsText(offsets) + headColumns;
    text.loadQ = "      %qRow = arith.addi %qStart, %mBlock : index\n"
                 "      tile.copy %Q[%qRow, %hD], %sQ : !q, !sQ";
    text.loadKV = "        %kRow = arith.addi %kStart, " + kOffset +
                  " : index\n"
                  "        tile.copy %K[%kRow, %hkD], %sK : !kv, !sKV\n"
                  "        %vRow = arith.addi %kStart, " + vOffset +
                  " : index\n"
                  "        tile.copy %V[%vRow, %hkD], %sV : !kv, !sKV";
    const std::string oView = "memref<?x" + hd + "x" + type + ", strided<[" +
                              hd + ", 1], offset: ?>>";
    const std::string lseView = "memref<" + str(shape.heads) +
                                "x?xf32, strided<[" + tq + ", 1], offset: ?>>";
    text.store = "      %oSeq = memref.subview %O[%qStart, 0] [%seqQ, " + hd +
                 "] [1, 1] : !q to " + oView +
                 "\n      tile.store %out, %oSeq[%m0, %hD] : !O16, " + oView +
                 "\n      %lseSeq = memref.subview %LSE[0, %qStart] [" +
                 str(shape.heads) + ", %seqQ] [1, 1] : !lse to " + lseView +
                 "\n      tile.store %lse, %lseSeq[%h, %m0] : !row, " + lseView;
    break;
  }
  }
  if (packGqa) {
    // BHSD seen as [B, H * Sq, D] (and LSE as [B, H * Sq]): a kv head's
    // group of query heads is one run of G * Sq rows (packedPositions).
    const std::string rows = str(shape.heads * shape.seqQ);
    const std::string groupRows =
        str(shape.heads / shape.kvHeads * shape.seqQ);
    text.qType = "memref<" + str(shape.batch) + "x" + rows + "x" + d + "x" +
                 type + ">";
    text.lseType = "memref<" + str(shape.batch) + "x" + rows + "xf32>";
    text.oTile.clear();
    text.loadQ = "      %qRow = arith.addi %groupRow0, %mBlock : index\n"
                 "      tile.copy %Q[%b, %qRow, %c0], %sQ : !q, !sQ";
    const std::string oView = "memref<1x" + groupRows + "x" + d + "x" + type +
                              ", strided<[" + str(shape.heads * shape.seqQ *
                                                  shape.headDim) +
                              ", " + d + ", 1], offset: ?>>";
    const std::string lseView = "memref<1x" + groupRows + "xf32, strided<[" +
                                rows + ", 1], offset: ?>>";
    // Stores through views that end with the group: its last block's rows
    // past the end are the next group's.
    text.store = "      %oGroup = memref.subview %O[%b, %groupRow0, 0] [1, " +
                 groupRows + ", " + d + "] [1, 1, 1] : !q to " + oView +
                 "\n      tile.store %out, %oGroup[%c0, %m0, %c0] : !O16, " +
                 oView + "\n      %lseGroup = memref.subview %LSE[%b, "
                 "%groupRow0] [1, " + groupRows + "] [1, 1] : !lse to " +
                 lseView + "\n      tile.store %lse, %lseGroup[%c0, %m0] : "
                 "!row, " + lseView;
    return text;
  }
  if (shape.layout != rt::AttentionLayout::Varlen)
    text.lseType = "memref<" + str(shape.batch) + "x" + str(shape.heads) +
                   "x" + str(shape.seqQ) + "xf32>";
  else
    text.lseType = "memref<" + str(shape.heads) + "x" +
                   str(shape.tokensQ()) + "xf32>";
  return text;
}
/// O through shared memory: each warpgroup writes its 64 rows of O into a
/// 64 x D tile of its own (a register fragment's store into a swizzled tile
/// must cover the tile; one warpgroup reuses its Q tile, more have %sO0,
/// %sO1, ...), and the block stores the tiles with TMA at
/// `oTile` — whole 128-byte lines, rows past the tensor's end clipped by the
/// tensor map — where register stores wrote 2-byte elements 8 rows apart
/// (measured: the O stores were 20% of the D 128 S 2048 forward, PERF.md).
std::string storeThroughSharedMemory(const std::string &oTile,
                                     int64_t warpgroups) {
  auto at = [&](const std::string &row) {
    std::string tile = oTile;
    kernels::replaceAll(tile, "%oRow", row);
    return tile;
  };
  // One warpgroup: its Q tile (64 x D, read by no GEMM any more).
  if (warpgroups == 1)
    return "      tile.store %out, %sQ[%c0, %c0] : !O16, !sQ\n"
           "      tile.copy %sQ, %O[" + at("%mBlock") + "] : !sQ, !q\n";
  // Two warpgroups keep the form they had before three existed, so the
  // D 128 kernels' PTX stayed byte-identical (measured as it is); the loop
  // below is the general form.
  if (warpgroups == 2)
    return "      %isFirstWarpgroup = arith.cmpi eq, %wg, %c0 : index\n"
           "      scf.if %isFirstWarpgroup {\n"
           "        tile.store %out, %sO0[%c0, %c0] : !O16, !sOw\n"
           "      } else {\n"
           "        tile.store %out, %sO1[%c0, %c0] : !O16, !sOw\n"
           "      }\n"
           "      tile.copy %sO0, %O[" + at("%mBlock") + "] : !sOw, !q\n"
           "      %oRow1 = arith.addi %mBlock, %c64 : index\n"
           "      tile.copy %sO1, %O[" + at("%oRow1") + "] : !sOw, !q\n";
  // More: warpgroup w stores into %sO<w> (nested scf.if: w = 0, 1, ...,
  // the last in the innermost else), then a TMA store per tile.
  std::string text, closing;
  for (int64_t w = 0; w < warpgroups; ++w) {
    std::string n = std::to_string(w), indent(6 + 2 * w, ' ');
    std::string store =
        "tile.store %out, %sO" + n + "[%c0, %c0] : !O16, !sOw\n";
    if (w + 1 == warpgroups) {
      text += indent + store;
      break;
    }
    text += indent + "%wgIndex" + n + " = arith.constant " + n +
            " : index\n" + indent + "%isWarpgroup" + n +
            " = arith.cmpi eq, %wg, %wgIndex" + n + " : index\n" + indent +
            "scf.if %isWarpgroup" + n + " {\n" + indent + "  " + store +
            indent + "} else {\n";
    closing = indent + "}\n" + closing;
  }
  text += closing;
  for (int64_t w = 0; w < warpgroups; ++w) {
    std::string n = std::to_string(w);
    text += "      %oRowOffset" + n + " = arith.constant " +
            std::to_string(w * kRowsPerWarpgroup) + " : index\n"
            "      %oRow" + n + " = arith.addi %mBlock, %oRowOffset" + n +
            " : index\n"
            "      tile.copy %sO" + n + ", %O[" + at("%oRow" + n) +
            "] : !sOw, !q\n";
  }
  return text;
}
/// The forward's form, decided by buildSinkFwd.
struct SinkFwdForm {
  rt::SinkAttentionShape shape;
  rt::DType dtype, sinkDtype;
  int64_t stages;
  /// Consumer warpgroups of 64 rows each; more than one share each K/V tile.
  int64_t warpgroups;
  /// Declare the block size, so that tile-warp-specialize adds a producer.
  bool warpSpecialized;
  /// Overlap each block's softmax with the GEMMs (kOverlapLoopHead).
  bool overlap;
  /// O through shared memory and a TMA store (storeThroughSharedMemory).
  bool oThroughShared;
  /// Keep the row sum as partial columns until after the loop (rowSumText).
  bool deferredRowSum;
  /// The softmax scale in log2 units.
  float scaleLog2;
  /// --persistent: the blocks' tile lists (tileTable), empty otherwise.
  std::vector<int32_t> tileTable;
  /// --persistent: tiles per block level (heads x batch) and the levels.
  int64_t tilesPerLevel = 0, levels = 0;
  /// --pack-gqa: a block's rows are rows of its kv head's group, the G
  /// query heads' Sq rows one head after another (buildPackedPositions).
  bool packGqa = false;
};

/// --pack-gqa: the query positions of a run of a group's rows (row R is
/// position R mod Sq; rows that run into the next head cover all of
/// [0, Sq)).
struct PackedPositionRange {
  Value minPos, maxPos;
};

/// Builds the typed forward: per block of warpgroups x 64 query rows, a
/// loop over the key blocks the rows see (S = Q Kᵀ, mask, online softmax,
/// O += P V), then O / l and the LSE.
class SinkFwdBuilder {
public:
  SinkFwdBuilder(MLIRContext &context, const SinkFwdForm &form)
      : b(NameLoc::get(StringAttr::get(&context, "sink_fwd")), &context),
        form(form), shape(form.shape) {}

  OwningOpRef<ModuleOp> build();

private:
  Type rowType() { return tile::FragmentType::get({kRowsPerWarpgroup}, f32()); }
  Type sumType() {
    return form.deferredRowSum
               ? tile::FragmentType::get({kRowsPerWarpgroup, 8}, f32())
               : rowType();
  }
  Type scoresType() {
    return tile::FragmentType::get({kRowsPerWarpgroup, kBlockN}, f32());
  }
  Type probabilitiesType() {
    return tile::FragmentType::get({kRowsPerWarpgroup, kBlockN}, element);
  }
  Type accType(Type type) {
    return tile::FragmentType::get({kRowsPerWarpgroup, shape.headDim}, type);
  }
  Type f32() { return b.getF32Type(); }

  void buildTileListLoop(KernelSkeleton &kernel);
  void allocateTiles();
  void buildTile();
  void buildSequence();
  void buildPackedPositions();
  PackedPositionRange buildPackedPositionRange(Value firstRow,
                                               Value lastRowUnclamped);
  void buildRowSinks();
  void buildKeyBlockRange();
  void loadKeysAndValues(Value keyOffset, Value valueOffset);
  Value maskScores(Value scores);
  Value needsMask();
  scf::ForOp buildSerialLoop();
  scf::ForOp buildOverlapLoop();
  void buildEpilogue(scf::ForOp loop);
  void storeOutput(Value out, Value lse);

  ImplicitLocOpBuilder b;
  const SinkFwdForm &form;
  const rt::SinkAttentionShape &shape;
  Type element;
  Value Q, K, V, sinks, O, LSE, cuQ, cuK;
  Value c0, c1, c64, c128, cBM, cBN, cBNm1, c63, group, window, hasWindow;
  Value zero, one, negInf, log2e, ln2, scaleLog2, rescaleMargin;
  Value qb, h, bIdx, hk, seqQ, skv, hD, hkD, qStart, kStart, past, mBlock;
  Value wg, wgRow, m0, pBlock, p0, sQ, sK, sV, sQw, n0;
  /// --pack-gqa: the group's rows, its first row in the [B, H * Sq] views,
  /// the last key positions of the block's and the warpgroup's rows.
  Value groupRows, lastGroupRow, seqQm1, groupRow0, pBlockLast, pLast;
  SmallVector<Value> sO;
  Value loBlocks, hiBlocks, mInit, lInit, oInit, sZero;
  std::optional<PingPong> pingPong;
  OnlineSoftmax softmax;
};

OwningOpRef<ModuleOp> SinkFwdBuilder::build() {
  MLIRContext *context = b.getContext();
  context->loadDialect<math::MathDialect, NVVM::NVVMDialect>();
  element = getElementType(context, form.dtype);
  // The layouts that view [.., S, H * D] see a head's rows as a 2-D box
  // at column h * D.
  const int64_t d = shape.headDim;
  SmallVector<int64_t> qShape, kvShape, lseShape;
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    qShape = {shape.batch, shape.heads, shape.seqQ, d};
    kvShape = {shape.batch, shape.kvHeads, shape.seqKv, d};
    lseShape = {shape.batch, shape.heads, shape.seqQ};
    // --pack-gqa sees Q, O and LSE as [B, H * Sq, D] and [B, H * Sq]: a kv
    // head's group of query heads is one run of G * Sq rows.
    if (form.packGqa) {
      qShape = {shape.batch, shape.heads * shape.seqQ, d};
      lseShape = {shape.batch, shape.heads * shape.seqQ};
    }
    break;
  case rt::AttentionLayout::BSHD:
    qShape = {shape.batch, shape.seqQ, shape.heads * d};
    kvShape = {shape.batch, shape.seqKv, shape.kvHeads * d};
    lseShape = {shape.batch, shape.heads, shape.seqQ};
    break;
  case rt::AttentionLayout::Varlen:
    qShape = {shape.tokensQ(), shape.heads * d};
    kvShape = {shape.tokensKv(), shape.kvHeads * d};
    lseShape = {shape.heads, shape.tokensQ()};
    break;
  }
  SmallVector<Type> argTypes = {
      MemRefType::get(qShape, element),
      MemRefType::get(kvShape, element),
      MemRefType::get(kvShape, element),
      MemRefType::get({shape.heads}, getElementType(context, form.sinkDtype)),
      MemRefType::get(qShape, element),
      MemRefType::get(lseShape, f32())};
  if (shape.varlen()) {
    auto offsets = MemRefType::get({shape.batch + 1}, b.getI32Type());
    argTypes.append({offsets, offsets});
  }
  SmallVector<int32_t> knownBlockSize;
  if (form.warpSpecialized)
    knownBlockSize = {int32_t(form.warpgroups * 128), 1, 1};
  KernelSkeleton kernel = createKernel(b, "sink_fwd", argTypes, knownBlockSize);
  auto args = kernel.func.getArguments();
  Q = args[0], K = args[1], V = args[2], sinks = args[3], O = args[4],
  LSE = args[5];
  if (shape.varlen())
    cuQ = args[6], cuK = args[7];

  const int64_t blockM = form.warpgroups * kRowsPerWarpgroup;
  const bool windowed = shape.window > 0;
  c0 = constantIndex(b, 0);
  c1 = constantIndex(b, 1);
  c64 = constantIndex(b, 64);
  c128 = constantIndex(b, 128);
  cBM = constantIndex(b, blockM);
  cBN = constantIndex(b, kBlockN);
  cBNm1 = constantIndex(b, kBlockN - 1);
  c63 = constantIndex(b, 63);
  group = constantIndex(b, shape.heads / shape.kvHeads);
  // Without a window the distance test must always pass.
  window = constantIndex(b, windowed ? shape.window : shape.seqKv + 1);
  hasWindow = arith::ConstantIntOp::create(b, b.getI1Type(), windowed);
  zero = constantF32(b, 0.0f);
  one = constantF32(b, 1.0f);
  negInf = constantF32(b, -std::numeric_limits<float>::infinity());
  log2e = constantF32(b, float(1.44269504088896340736));
  ln2 = constantF32(b, float(0.693147180559945309417));
  scaleLog2 = constantF32(b, form.scaleLog2);
  // The overlapped loop rescales O conditionally (FA4): most blocks leave
  // the running max, hence alpha = 1, and tile.scale_rows skips them.
  if (form.overlap)
    rescaleMargin = constantF32(b, 8.0f);

  if (form.packGqa) {
    // x: block of the group's rows, y: kv head (its first query head is
    // h), z: sequence.
    qb = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value hkOfBlock = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    bIdx = gpu::BlockIdOp::create(b, gpu::Dimension::z);
    h = arith::MulIOp::create(b, hkOfBlock, group);
    buildTile();
  } else if (form.tileTable.empty()) {
    AttentionBlockIds ids =
        buildBlockIds(b, /*heaviestLast=*/true, shape, c1, group);
    qb = ids.block, h = ids.head, bIdx = ids.batch;
    buildTile();
  } else {
    // The warpgroup index, the shared tiles and the ping-pong's first
    // hand-over come before the tile loop: the turns run on from one tile
    // to the next, since all warpgroups see the same key blocks.
    wg = buildWarpgroupIndex(b);
    allocateTiles();
    pingPong = PingPong::build(b, wg, form.warpgroups);
    buildTileListLoop(kernel);
  }
  gpu::ReturnOp::create(b);
  if (failed(verifyKernel(kernel, "sink-fwd")))
    return nullptr;
  return std::move(kernel.module);
}

/// --persistent: block c runs the tiles of its list in @sink_fwd_tiles;
/// tile t is block level t / (H B) counted from the last, head t mod H and
/// sequence (t mod H B) / H (heaviest first).
void SinkFwdBuilder::buildTileListLoop(KernelSkeleton &kernel) {
  auto tableType = MemRefType::get({int64_t(form.tileTable.size())},
                                   b.getI32Type());
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(kernel.func);
    auto values = DenseIntElementsAttr::get(
        RankedTensorType::get(tableType.getShape(), b.getI32Type()),
        ArrayRef<int32_t>(form.tileTable));
    memref::GlobalOp::create(b, "sink_fwd_tiles", b.getStringAttr("private"),
                             tableType, values, /*constant=*/true,
                             /*alignment=*/IntegerAttr());
  }
  Value tilesPerLevel = constantIndex(b, form.tilesPerLevel);
  Value lastLevel = constantIndex(b, form.levels - 1);
  Value headCount = constantIndex(b, shape.heads);
  Value table = memref::GetGlobalOp::create(b, tableType, "sink_fwd_tiles");
  auto loadIndex = [&](Value position) -> Value {
    Value entry = memref::LoadOp::create(b, table, position);
    return arith::IndexCastUIOp::create(b, b.getIndexType(), entry);
  };
  Value block = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value nextBlock = arith::AddIOp::create(b, block, c1);
  Value begin32 = memref::LoadOp::create(b, table, block);
  Value end32 = memref::LoadOp::create(b, table, nextBlock);
  Value begin = arith::IndexCastUIOp::create(b, b.getIndexType(), begin32);
  Value end = arith::IndexCastUIOp::create(b, b.getIndexType(), end32);
  buildForLoop(b, begin, end, c1, [&](Value slot) {
    Value tile = loadIndex(slot);
    Value level = arith::DivUIOp::create(b, tile, tilesPerLevel);
    qb = arith::SubIOp::create(b, lastLevel, level);
    Value inLevel = arith::RemUIOp::create(b, tile, tilesPerLevel);
    h = arith::RemUIOp::create(b, inLevel, headCount);
    bIdx = arith::DivUIOp::create(b, inLevel, headCount);
    buildTile();
  });
}

void SinkFwdBuilder::allocateTiles() {
  const int64_t d = shape.headDim;
  sQ = allocShared(
      b, getSharedMemRefType({form.warpgroups * kRowsPerWarpgroup, d}, element));
  sK = allocShared(b, getSharedMemRefType({kBlockN, d}, element));
  sV = allocShared(b, getSharedMemRefType({kBlockN, d}, element));
  if (form.oThroughShared && form.warpgroups > 1)
    for (int64_t w = 0; w < form.warpgroups; ++w)
      sO.push_back(
          allocShared(b, getSharedMemRefType({kRowsPerWarpgroup, d}, element)));
}

/// One tile: the block's query rows qb of head h of sequence bIdx.
void SinkFwdBuilder::buildTile() {
  const bool persistent = !form.tileTable.empty();
  const int64_t d = shape.headDim;
  hk = arith::DivUIOp::create(b, h, group);
  buildSequence();
  // Right-aligned causal: query row i sits at key position i + past.
  past = arith::SubIOp::create(b, skv, seqQ);
  mBlock = arith::MulIOp::create(b, qb, cBM);
  // With one warpgroup its index is a constant (the compiler cannot know
  // that thread ids stay below 128 without a declared block size).
  if (!persistent)
    wg = form.warpgroups == 1 ? constantIndex(b, 0) : buildWarpgroupIndex(b);
  wgRow = arith::MulIOp::create(b, wg, c64);
  m0 = arith::AddIOp::create(b, mBlock, wgRow);
  if (form.packGqa) {
    buildPackedPositions();
  } else {
    pBlock = arith::AddIOp::create(b, mBlock, past);
    p0 = arith::AddIOp::create(b, m0, past);
  }

  if (!persistent)
    allocateTiles();
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    if (form.packGqa) {
      Value qRow = arith::AddIOp::create(b, groupRow0, mBlock);
      buildLoadTile(b, Q, {bIdx, qRow, c0}, sQ);
      break;
    }
    buildLoadTile(b, Q, {bIdx, h, mBlock, c0}, sQ);
    break;
  case rt::AttentionLayout::BSHD:
    buildLoadTile(b, Q, {bIdx, mBlock, hD}, sQ);
    break;
  case rt::AttentionLayout::Varlen: {
    Value qRow = arith::AddIOp::create(b, qStart, mBlock);
    buildLoadTile(b, Q, {qRow, hD}, sQ);
    break;
  }
  }
  sQw = buildSubView(b, sQ, {wgRow, b.getIndexAttr(0)},
                     {kRowsPerWarpgroup, d});
  buildKeyBlockRange();

  // The running max starts at the sink (log2 units) and the sum at 1, so
  // the sink is in the softmax from the start.
  if (form.packGqa) {
    buildRowSinks();
  } else {
    Value sink = buildSinkLoad(b, sinks, h);
    Value sinkLog2 = arith::MulFOp::create(b, sink, log2e);
    mInit = tile::FillOp::create(b, rowType(), sinkLog2);
  }
  if (form.deferredRowSum) {
    // The sink's exp2(sink - m) = 1 starts in column 0.
    lInit = buildMap(b, sumType(), {}, [&](ValueRange idx, ValueRange) {
      Value first =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, idx[1], c0);
      return Value(arith::SelectOp::create(b, first, one, zero));
    });
  } else {
    lInit = tile::FillOp::create(b, rowType(), one);
  }
  oInit = tile::FillOp::create(b, accType(f32()), zero);
  sZero = tile::FillOp::create(b, scoresType(), zero);
  if (form.warpgroups > 1 && !persistent)
    pingPong = PingPong::build(b, wg, form.warpgroups);
  softmax = {scaleLog2, zero, negInf, rescaleMargin, form.deferredRowSum};

  scf::ForOp loop = form.overlap ? buildOverlapLoop() : buildSerialLoop();
  buildEpilogue(loop);
}

/// This sequence's lengths and, for the layouts that view [.., S, H * D],
/// the first columns of the query and the kv head.
void SinkFwdBuilder::buildSequence() {
  if (shape.varlen()) {
    SequenceBounds bounds = buildSequenceBounds(b, bIdx, cuQ, cuK, c1);
    qStart = bounds.qStart, kStart = bounds.kStart;
    seqQ = bounds.seqQ, skv = bounds.seqKv;
  } else {
    seqQ = constantIndex(b, shape.seqQ);
    skv = constantIndex(b, shape.seqKv);
  }
  if (shape.layout == rt::AttentionLayout::BHSD)
    return;
  Value cD = constantIndex(b, shape.headDim);
  hD = arith::MulIOp::create(b, h, cD);
  hkD = arith::MulIOp::create(b, hk, cD);
}

/// --pack-gqa: the query positions of the group's rows firstRow ..
/// min(lastRowUnclamped, the group's last).
PackedPositionRange
SinkFwdBuilder::buildPackedPositionRange(Value firstRow,
                                         Value lastRowUnclamped) {
  Value rowLast = arith::MinUIOp::create(b, lastRowUnclamped, lastGroupRow);
  Value headFirst = arith::DivUIOp::create(b, firstRow, seqQ);
  Value headLast = arith::DivUIOp::create(b, rowLast, seqQ);
  Value wraps = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, headFirst,
                                      headLast);
  Value posFirst = arith::RemUIOp::create(b, firstRow, seqQ);
  Value posLast = arith::RemUIOp::create(b, rowLast, seqQ);
  Value minPos = arith::SelectOp::create(b, wraps, c0, posFirst);
  Value maxPos = arith::SelectOp::create(b, wraps, seqQm1, posLast);
  return {minPos, maxPos};
}

/// --pack-gqa: pBlock .. pBlockLast and p0 .. pLast bound the key positions
/// of the block's and the warpgroup's rows, which the key-block range and
/// the decision to mask need; the mask itself takes each row's own.
void SinkFwdBuilder::buildPackedPositions() {
  const int64_t rows = shape.heads / shape.kvHeads * shape.seqQ;
  groupRows = constantIndex(b, rows);
  lastGroupRow = constantIndex(b, rows - 1);
  seqQm1 = arith::SubIOp::create(b, seqQ, c1);
  Value blockEnd = arith::AddIOp::create(b, mBlock, cBM);
  Value blockEndM1 = arith::SubIOp::create(b, blockEnd, c1);
  PackedPositionRange block = buildPackedPositionRange(mBlock, blockEndM1);
  pBlock = arith::AddIOp::create(b, block.minPos, past);
  pBlockLast = arith::AddIOp::create(b, block.maxPos, past);
  Value wgEndM1 = arith::AddIOp::create(b, m0, c63);
  PackedPositionRange rows64 = buildPackedPositionRange(m0, wgEndM1);
  p0 = arith::AddIOp::create(b, rows64.minPos, past);
  pLast = arith::AddIOp::create(b, rows64.maxPos, past);
  groupRow0 = arith::MulIOp::create(b, hk, groupRows);
}

/// --pack-gqa: the running max of each row starts at its own head's sink
/// (rows past the group's end, which are never stored, take the last
/// head's).
void SinkFwdBuilder::buildRowSinks() {
  Value lastInGroup = arith::SubIOp::create(b, group, c1);
  mInit = buildMap(b, rowType(), {}, [&](ValueRange idx, ValueRange) -> Value {
    Value row = arith::AddIOp::create(b, m0, idx[0]);
    Value headInGroup = arith::DivUIOp::create(b, row, seqQ);
    Value headInGroupC = arith::MinUIOp::create(b, headInGroup, lastInGroup);
    Value rowHead = arith::AddIOp::create(b, h, headInGroupC);
    Value sink = buildSinkLoad(b, sinks, rowHead);
    return arith::MulFOp::create(b, sink, log2e);
  });
}

/// Key blocks the block's rows can see, [loBlocks, hiBlocks): up to its last
/// row's position (causal), from its first row's window start; none for
/// blocks past the end of their sequence.
void SinkFwdBuilder::buildKeyBlockRange() {
  // --pack-gqa knows its rows' last key position; otherwise the block's
  // rows are consecutive positions.
  Value lastKey = form.packGqa ? arith::AddIOp::create(b, pBlockLast, c1)
                               : arith::AddIOp::create(b, pBlock, cBM);
  Value hiKey = arith::MinSIOp::create(b, lastKey, skv);
  Value hi = arith::MaxSIOp::create(b, hiKey, c0);
  Value hiCausal = arith::CeilDivUIOp::create(b, hi, cBN);
  Value firstKey = arith::SubIOp::create(b, pBlock, window);
  Value firstKey1 = arith::AddIOp::create(b, firstKey, c1);
  Value firstKeyPos = arith::MaxSIOp::create(b, firstKey1, c0);
  Value windowLo = arith::DivUIOp::create(b, firstKeyPos, cBN);
  loBlocks = arith::SelectOp::create(b, hasWindow, windowLo, c0);
  Value live = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, mBlock,
                                     form.packGqa ? groupRows : seqQ);
  Value hiLive = arith::SelectOp::create(b, live, hiCausal, loBlocks);
  hiBlocks = arith::MaxSIOp::create(b, hiLive, loBlocks);
}

void SinkFwdBuilder::loadKeysAndValues(Value keyOffset, Value valueOffset) {
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    buildLoadTile(b, K, {bIdx, hk, keyOffset, c0}, sK);
    buildLoadTile(b, V, {bIdx, hk, valueOffset, c0}, sV);
    return;
  case rt::AttentionLayout::BSHD:
    buildLoadTile(b, K, {bIdx, keyOffset, hkD}, sK);
    buildLoadTile(b, V, {bIdx, valueOffset, hkD}, sV);
    return;
  case rt::AttentionLayout::Varlen: {
    // Loads may run into the next sequence (keys the causal mask hides).
    Value kRow = arith::AddIOp::create(b, kStart, keyOffset);
    buildLoadTile(b, K, {kRow, hkD}, sK);
    Value vRow = arith::AddIOp::create(b, kStart, valueOffset);
    buildLoadTile(b, V, {vRow, hkD}, sV);
    return;
  }
  }
}

/// Whether this warpgroup's rows need the per-element mask in the key
/// block at n0.
Value SinkFwdBuilder::needsMask() {
  return buildBlockMaskDecision(
      b, n0, cBNm1, p0,
      [&]() -> Value {
        return form.packGqa ? pLast
                            : Value(arith::AddIOp::create(b, p0, c63));
      },
      window,
      hasWindow);
}

/// The scores with the keys that are masked for their row set to -inf.
Value SinkFwdBuilder::maskScores(Value scores) {
  return buildMap(b, scoresType(), {scores}, [&](ValueRange idx,
                                                 ValueRange x) -> Value {
    Value key = arith::AddIOp::create(b, n0, idx[1]);
    Value position;
    if (form.packGqa) {
      // Row R of the group is query position R mod Sq.
      Value packedRow = arith::AddIOp::create(b, m0, idx[0]);
      Value inHead = arith::RemUIOp::create(b, packedRow, seqQ);
      position = arith::AddIOp::create(b, inHead, past);
    } else {
      position = arith::AddIOp::create(b, p0, idx[0]);
    }
    Value keep = buildKeepKey(b, key, position, window);
    return arith::SelectOp::create(b, keep, x[0], negInf);
  });
}

/// S = Q K_jᵀ, softmax, O += P V, one key block after another.
scf::ForOp SinkFwdBuilder::buildSerialLoop() {
  // Without warp specialization tile-software-pipeline prefetches K and V
  // stages - 1 blocks ahead.
  return buildPipelinedLoop(
      b, loBlocks, hiBlocks, c1, form.stages, {mInit, lInit, oInit},
      [&](Value kb, ValueRange iter) -> SmallVector<Value> {
        Value m = iter[0], l = iter[1], o = iter[2];
        n0 = arith::MulIOp::create(b, kb, cBN);
        loadKeysAndValues(n0, n0);
        if (pingPong)
          pingPong->waitTurn(b);
        Value s = tile::GemmOp::create(b, sQw, sK, sZero,
                                       /*transpose_a=*/false,
                                       /*transpose_b=*/true);
        if (pingPong)
          pingPong->passTurn(b);
        Value masked =
            buildIfThenElse(
                b, scoresType(), needsMask(),
                [&]() -> SmallVector<Value> { return {maskScores(s)}; },
                [&]() -> SmallVector<Value> { return {s}; })
                .getResult(0);
        OnlineSoftmax::Step step = softmax.step(b, masked, m, l);
        Value oScaled = buildMap(b, accType(f32()), {o, step.rescale},
                                 [&](ValueRange, ValueRange x) -> Value {
                                   return arith::MulFOp::create(b, x[0], x[1]);
                                 });
        Value p16 = tile::CastOp::create(b, probabilitiesType(),
                                         step.probabilities);
        Value oNew = tile::GemmOp::create(b, p16, sV, oScaled);
        return {step.max, step.sum, oNew};
      });
}

/// FA3's intra-warpgroup overlap: iteration j issues S_j = Q K_jᵀ and
/// O += P_{j-1} V_{j-1} together and computes the softmax of S_j while P V
/// runs. V is loaded one block behind K, so the loop runs once more than
/// there are key blocks (the first P V adds P = 0; the last S is masked
/// away); the copies' block indices are clamped to the key range.
scf::ForOp SinkFwdBuilder::buildOverlapLoop() {
  Value hasBlocks = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                          hiBlocks, loBlocks);
  Value hiBlocksP1 = arith::AddIOp::create(b, hiBlocks, c1);
  Value hiIterations =
      arith::SelectOp::create(b, hasBlocks, hiBlocksP1, loBlocks);
  Value lastKeyBlock = arith::SubIOp::create(b, hiBlocks, c1);
  Value zeroT = arith::ConstantFloatOp::create(
      b, cast<FloatType>(element),
      APFloat::getZero(cast<FloatType>(element).getFloatSemantics()));
  Value pInit = tile::FillOp::create(b, probabilitiesType(), zeroT);
  Type types[] = {rowType(), sumType(), scoresType(), rowType()};
  return buildPipelinedLoop(
      b, loBlocks, hiIterations, c1, form.stages, {mInit, lInit, oInit, pInit},
      [&](Value kb, ValueRange iter) -> SmallVector<Value> {
        Value m = iter[0], l = iter[1], o = iter[2], pPrev = iter[3];
        n0 = arith::MulIOp::create(b, kb, cBN);
        Value kbK = arith::MinSIOp::create(b, kb, lastKeyBlock);
        Value nK = arith::MulIOp::create(b, kbK, cBN);
        Value kbPrev = arith::SubIOp::create(b, kb, c1);
        Value kbV = arith::MaxSIOp::create(b, kbPrev, loBlocks);
        Value nV = arith::MulIOp::create(b, kbV, cBN);
        loadKeysAndValues(nK, nV);
        if (pingPong)
          pingPong->waitTurn(b);
        Value sAsync = tile::GemmOp::create(b, sQw, sK, sZero,
                                            /*transpose_a=*/false,
                                            /*transpose_b=*/true,
                                            /*async=*/true);
        Value oAsync = tile::GemmOp::create(b, pPrev, sV, o,
                                            /*transpose_a=*/false,
                                            /*transpose_b=*/false,
                                            /*async=*/true);
        if (pingPong)
          pingPong->passTurn(b);
        Value s = tile::GemmWaitOp::create(b, TypeRange{scoresType()},
                                           ValueRange{sAsync}, 1)
                      .getResult(0);
        // The softmax in both branches: ptxas hoists a wgmma wait to the top
        // of its basic block, so P V's wait must start a block of its own.
        auto softmaxOf = [&](Value scores) -> SmallVector<Value> {
          OnlineSoftmax::Step step = softmax.step(b, scores, m, l);
          return {step.max, step.sum, step.probabilities, step.rescale};
        };
        scf::IfOp soft = buildIfThenElse(
            b, types, needsMask(),
            [&]() { return softmaxOf(maskScores(s)); },
            [&]() { return softmaxOf(s); });
        // P is converted and O rescaled only once P V is complete: P's
        // registers are the ones the in-flight wgmma reads.
        Value oDone = tile::GemmWaitOp::create(b, TypeRange{accType(f32())},
                                               ValueRange{oAsync}, 0)
                          .getResult(0);
        Value oScaled = tile::ScaleRowsOp::create(b, oDone, soft.getResult(3));
        Value p16 =
            tile::CastOp::create(b, probabilitiesType(), soft.getResult(2));
        return {soft.getResult(0), soft.getResult(1), oScaled, p16};
      });
}

/// O = o / l (0 when l is 0: a -inf sink and no key); LSE in natural log
/// units: (m + log2 l) * ln 2.
void SinkFwdBuilder::buildEpilogue(scf::ForOp loop) {
  Value rowSum = loop.getResult(1);
  if (form.deferredRowSum)
    rowSum = tile::ReduceOp::create(b, rowType(), tile::ReduceKind::sum,
                                    rowSum, 1);
  Value inverse =
      buildMap(b, rowType(), {rowSum}, [&](ValueRange, ValueRange x) -> Value {
        Value isZero =
            arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x[0], zero);
        Value inv = arith::DivFOp::create(b, one, x[0]);
        return arith::SelectOp::create(b, isZero, zero, inv);
      });
  Value out = buildMap(b, accType(element), {loop.getResult(2), inverse},
                       [&](ValueRange, ValueRange x) -> Value {
                         Value y = arith::MulFOp::create(b, x[0], x[1]);
                         return arith::TruncFOp::create(b, element, y);
                       });
  Value lse = buildMap(b, rowType(), {loop.getResult(0), rowSum},
                       [&](ValueRange, ValueRange x) -> Value {
                         Value lg = math::Log2Op::create(b, x[1]);
                         Value t = arith::AddFOp::create(b, x[0], lg);
                         return arith::MulFOp::create(b, t, ln2);
                       });
  storeOutput(out, lse);
}

void SinkFwdBuilder::storeOutput(Value out, Value lse) {
  if (form.packGqa) {
    // Stores through views that end with the group: its last block's rows
    // past the end are the next group's.
    const int64_t rows = shape.heads / shape.kvHeads * shape.seqQ;
    Value oGroup = memref::SubViewOp::create(
        b, O, ArrayRef<OpFoldResult>{bIdx, groupRow0, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows),
                               b.getIndexAttr(shape.headDim)},
        SmallVector<OpFoldResult>(3, b.getIndexAttr(1)));
    tile::StoreOp::create(b, out, oGroup, ValueRange{c0, m0, c0});
    Value lseGroup = memref::SubViewOp::create(
        b, LSE, ArrayRef<OpFoldResult>{bIdx, groupRow0},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(rows)},
        SmallVector<OpFoldResult>(2, b.getIndexAttr(1)));
    tile::StoreOp::create(b, lse, lseGroup, ValueRange{c0, m0});
    return;
  }
  if (shape.varlen()) {
    // Stores go through views that end with the sequence.
    const int64_t hd = shape.heads * shape.headDim;
    SmallVector<OpFoldResult> unit(2, b.getIndexAttr(1));
    Value oSeq = memref::SubViewOp::create(
        b, O, ArrayRef<OpFoldResult>{qStart, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{seqQ, b.getIndexAttr(hd)}, unit);
    tile::StoreOp::create(b, out, oSeq, ValueRange{m0, hD});
    Value lseSeq = memref::SubViewOp::create(
        b, LSE, ArrayRef<OpFoldResult>{b.getIndexAttr(0), qStart},
        ArrayRef<OpFoldResult>{b.getIndexAttr(shape.heads), seqQ}, unit);
    tile::StoreOp::create(b, lse, lseSeq, ValueRange{h, m0});
    return;
  }
  // BHSD and BSHD: O's tile at query row `row`; LSE [B, H, SQ] alike.
  auto oTile = [&](Value row) -> SmallVector<Value> {
    if (shape.layout == rt::AttentionLayout::BHSD)
      return {bIdx, h, row, c0};
    return {bIdx, row, hD};
  };
  if (!form.oThroughShared) {
    tile::StoreOp::create(b, out, O, oTile(m0));
  } else if (form.warpgroups == 1) {
    // One warpgroup stages O in its Q tile, read by no GEMM any more.
    tile::StoreOp::create(b, out, sQ, ValueRange{c0, c0});
    buildStoreTile(b, sQ, O, oTile(mBlock));
  } else {
    // Each warpgroup writes its rows into its own staging tile, then the
    // block stores the tiles with TMA (whole lines, clipped at the end).
    auto stageInto = [&](int64_t w) {
      tile::StoreOp::create(b, out, sO[w], ValueRange{c0, c0});
    };
    if (form.warpgroups == 2) {
      Value isFirst =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg, c0);
      buildIfThenElse(
          b, {}, isFirst,
          [&]() -> SmallVector<Value> {
            stageInto(0);
            return {};
          },
          [&]() -> SmallVector<Value> {
            stageInto(1);
            return {};
          });
      buildStoreTile(b, sO[0], O, oTile(mBlock));
      Value oRow1 = arith::AddIOp::create(b, mBlock, c64);
      buildStoreTile(b, sO[1], O, oTile(oRow1));
    } else {
      std::function<void(int64_t)> stageFrom = [&](int64_t w) {
        if (w + 1 == form.warpgroups)
          return stageInto(w);
        Value isW = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg,
                                          constantIndex(b, w));
        buildIfThenElse(
            b, {}, isW,
            [&]() -> SmallVector<Value> {
              stageInto(w);
              return {};
            },
            [&]() -> SmallVector<Value> {
              stageFrom(w + 1);
              return {};
            });
      };
      stageFrom(0);
      for (int64_t w = 0; w < form.warpgroups; ++w) {
        Value offset = constantIndex(b, w * kRowsPerWarpgroup);
        Value row = arith::AddIOp::create(b, mBlock, offset);
        buildStoreTile(b, sO[w], O, oTile(row));
      }
    }
  }
  tile::StoreOp::create(b, lse, LSE, ValueRange{bIdx, h, m0});
}
} // namespace

FailureOr<KernelModule> kernels::buildSinkFwd(MLIRContext &context,
                                              const KernelConfig &config) {
  // The backward builds its forward through here: its errors name it.
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context))
           << (config.kernel == "sink-bwd" ? "sink-bwd: " : "sink-fwd: ");
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or fp16";
  if (config.headDim != 64 && config.headDim != 128)
    return fail() << "--head-dim " << config.headDim
                  << " is not compiled; use 64 or 128";
  if (config.batch < 1 || config.heads < 1 || config.kvHeads < 1 ||
      config.seqQ < 1 || config.seqKv < 1)
    return fail() << "batch, heads, kv-heads, seq-q and seq-kv must be "
                     "positive, got B="
                  << config.batch << " H=" << config.heads
                  << " HK=" << config.kvHeads << " SQ=" << config.seqQ
                  << " SKV=" << config.seqKv;
  if (config.heads % config.kvHeads != 0)
    return fail() << "--kv-heads " << config.kvHeads << " must divide --heads "
                  << config.heads;
  if (config.stages < 1 || config.stages > 3)
    return fail() << "--stages " << config.stages
                  << " is not supported: 1 to 3 (tiles of the main loop per "
                     "stage)";
  if (config.sinkDtype != rt::DType::F32 && config.sinkDtype != rt::DType::BF16)
    return fail() << "--sink-dtype " << rt::dtypeName(config.sinkDtype)
                  << " is not supported; use f32 or bf16";
  if (config.window < 0)
    return fail() << "--window " << config.window
                  << " must be positive (0: no window)";
  // Grid dimensions y and z (blockGrid) hold heads or 64-row blocks, and
  // kv heads times batch; CUDA allows at most 65535 in each.
  constexpr int64_t kMaxGridYZ = 65535;
  if (config.heads > kMaxGridYZ)
    return fail() << "--heads " << config.heads
                  << " is not supported: at most 65535 (a grid dimension)";
  for (auto [flag, length] : {std::pair<const char *, int64_t>{"--seq-q", config.seqQ},
                              {"--seq-kv", config.seqKv}})
    if ((length + 63) / 64 > kMaxGridYZ)
      return fail() << flag << " " << length
                    << " is not supported: at most 65535 blocks of 64 rows "
                       "(4194240 rows; a grid dimension)";
  if (int64_t(config.kvHeads) * config.batch > kMaxGridYZ)
    return fail() << "--kv-heads x --batch = "
                  << int64_t(config.kvHeads) * config.batch
                  << " is not supported: at most 65535 (a grid dimension)";
  if (config.packGqa) {
    if (config.kernel != "sink-fwd")
      return fail() << "--pack-gqa applies to sink-fwd only";
    if (config.layout != rt::AttentionLayout::BHSD)
      return fail() << "--pack-gqa supports the bhsd layout only, not "
                    << rt::layoutName(config.layout)
                    << " (it views a kv head's query heads as one run of "
                       "rows)";
    if (config.heads == config.kvHeads)
      return fail() << "--pack-gqa needs GQA (--heads " << config.heads
                    << " > --kv-heads " << config.kvHeads
                    << "): with one query head per kv head there is nothing "
                       "to pack";
  }
  rt::SinkAttentionShape shape = kernels::sinkAttentionShape(config);
  if (rt::Status valid = rt::validate(shape); !valid.ok())
    return fail() << valid.message();
  // TMA coordinates and our index math are 32-bit.
  if (double(shape.qElements()) > double(INT32_MAX) ||
      double(shape.kvElements()) > double(INT32_MAX))
    return fail() << "the tensors have more than 2^31-1 elements";

  if (config.schedule != "auto" && config.schedule != "ws" &&
      config.schedule != "plain" && config.schedule != "overlap")
    return fail() << "unknown schedule '" << config.schedule
                  << (config.kernel == "sink-bwd" ? "' (auto, ws or plain)"
                                                  : "' (auto, ws, overlap or plain)");
  // ws: two consumer warpgroups (128 rows; three, 192 rows, at D = 64)
  // share each K/V tile and a TMA producer feeds them. plain: one
  // warpgroup of 64 rows per block, which with its few registers and
  // little shared memory runs three blocks per SM — faster for D = 64 up
  // to rows of kWarpSpecializedD64MinKeyBlocks key blocks (measured,
  // docs/PERF.md).
  // overlap: ws whose warpgroups also overlap each block's softmax with
  // their own GEMMs (kOverlapLoopHead), at the cost of one more iteration
  // (an S GEMM and a P V GEMM with P = 0). Auto picks it for D = 128 when
  // the longest row sees at least kOverlapMinKeyBlocks key blocks: at 16
  // (S 2048, causal) ws is 1.7% ahead since O goes through TMA, at 32 and
  // more overlap is ahead, at 2 (window 128) 12% behind (docs/PERF.md).
  int64_t rowKeyBlocks = (config.seqKv + kBlockN - 1) / kBlockN;
  if (config.window > 0)
    rowKeyBlocks = std::min(rowKeyBlocks,
                            (config.window + kBlockN - 1) / kBlockN + 1);
  bool overlap = config.schedule == "overlap" ||
                 (config.schedule == "auto" && config.headDim == 128 &&
                  rowKeyBlocks >= kOverlapMinKeyBlocks);
  bool warpSpecialized =
      config.schedule == "ws" || overlap ||
      (config.schedule == "auto" &&
       (config.headDim == 128 ||
        rowKeyBlocks >= kWarpSpecializedD64MinKeyBlocks));
  // Three at D = 64, as FA3 has it: tile-warp-specialize gives each of
  // them 160 registers (two would take 240 each and leave the SM's third
  // warpgroup slot empty: 168 registers x 384 threads fill the register
  // file, one block per SM), and each K/V tile then serves 192 rows —
  // with 64-row blocks (plain) the SMs read twice cuDNN's bytes from L2
  // and, power-capped, ran at ~6% lower clocks (docs/PERF.md, session 19).
  int64_t warpgroups =
      !warpSpecialized ? 1 : config.headDim == 64 ? 3 : 2;
  int64_t blockM = warpgroups * kRowsPerWarpgroup;
  const int64_t rowBlocks = (config.seqQ + blockM - 1) / blockM;
  const int64_t tiles = rowBlocks * config.heads * config.batch;
  // --persistent: min(N, tiles) blocks loop over the tiles
  // (persistentLoopBegin); the two consumer warpgroups' ping-pong and the
  // producer's pipeline run on from one tile to the next. Auto's choice
  // (kAutoPersistentBlocks): one block per SM where auto runs ws or
  // overlap with 2 stages for a BHSD/BSHD forward without a window, rows
  // of at most kPersistentMaxKeyBlocks key blocks and more tiles than SMs:
  // the producer then loads the next tile's Q during the consumers'
  // epilogue (a tile load, tile-warp-specialize), and the tile lists keep
  // the blocks level: 4.8% faster than one block per tile at D 128 S 2048
  // (ws), 1.6% at S 4096 (overlap); at S 16384 the persistent form lost
  // 2.2% (docs/PERF.md, session 17).
  int64_t requestedBlocks = config.persistentBlocks;
  if (requestedBlocks == kAutoPersistentBlocks) {
    // Measured with 2 stages only: with 1 (ptxas spills) and 3 (no room
    // for O's staging tiles) persistence was slower (docs/PERF.md).
    bool autoPersistent = config.kernel == "sink-fwd" &&
                          config.schedule == "auto" && warpSpecialized &&
                          rowKeyBlocks <= kPersistentMaxKeyBlocks &&
                          config.stages == 2 &&
                          config.window == 0 && !shape.varlen() &&
                          !config.packGqa && tiles > kPersistentSMs;
    requestedBlocks = autoPersistent ? kPersistentSMs : 0;
  }
  const bool persistent = requestedBlocks != 0;
  if (persistent) {
    if (requestedBlocks < 0 || requestedBlocks > 65535)
      return fail() << "--persistent " << requestedBlocks
                    << " is not supported: 1 to 65535 blocks (0 for one "
                       "block per tile)";
    if (!warpSpecialized)
      return fail() << "--persistent needs a warp-specialized schedule (ws "
                       "or overlap), not plain"
                    << (config.schedule == "auto"
                            ? " (auto's choice for --head-dim 64; give "
                              "--schedule ws or overlap)"
                            : "");
    if (shape.varlen())
      return fail() << "--persistent supports the bhsd and bshd layouts, "
                       "not varlen (its tiles' sequences are only known on "
                       "the GPU)";
    if (config.packGqa)
      return fail() << "--persistent and --pack-gqa do not combine (a "
                       "packed block's rows span query heads)";
  }
  // O goes through shared memory and TMA where a tensor map of O clips
  // the tile (BHSD, BSHD) and the staging tiles fit beside Q and the K/V
  // stages in the 227 KiB a block may have (not: ws/overlap at D 128 with
  // 3 stages; one warpgroup stages O in its Q tile and needs no room).
  const int64_t elementBytes = 2;
  const int64_t tileBytes =
      (blockM + 2 * config.stages * kBlockN) * config.headDim * elementBytes;
  const int64_t stagingBytes =
      warpgroups > 1 ? blockM * config.headDim * elementBytes : 0;
  constexpr int64_t kSharedMemoryPerBlock = 227 * 1024;
  // The runtime aligns dynamic shared memory to 1 KiB (the swizzled
  // tiles'); the mbarriers are static shared memory, at most 128 bytes.
  constexpr int64_t kAlignmentSlackBytes = 1024, kStaticBytes = 128;
  const bool oThroughShared =
      !shape.varlen() && !config.packGqa &&
      tileBytes + stagingBytes + kAlignmentSlackBytes + kStaticBytes <=
          kSharedMemoryPerBlock;
  const std::string allocs =
      std::string(kAllocs) +
      (oThroughShared && warpgroups > 1 ? stagingAllocs(warpgroups) : "");
  const int64_t persistentBlocks =
      persistent ? std::min(requestedBlocks, tiles) : 0;
  const TileTable tileLists =
      persistent ? tileTable(shape, rowBlocks, blockM, persistentBlocks)
                 : TileTable();
  std::string attributes =
      warpSpecialized ? "attributes {known_block_size = array<i32: " +
                            std::to_string(warpgroups * 128) + ", 1, 1>}"
                      : "";
  double scale = 1.0 / std::sqrt(double(config.headDim));
  std::string type = kernels::mlirTypeName(config.dtype);
  auto str = [](int64_t v) { return std::to_string(v); };
  char scaleLog2[64];
  std::snprintf(scaleLog2, sizeof(scaleLog2), "%.9e", scale * 1.4426950408889634);
  bool hasWindow = config.window > 0;
  LayoutText layout = layoutText(shape, type, config.packGqa, overlap ? "%nK" : "%n0",
                                 overlap ? "%nV" : "%n0");
  const int64_t group = config.heads / config.kvHeads;
  const int64_t groupRows = group * config.seqQ;
  // The pieces that differ with --pack-gqa (packedPositions).
  std::string positions = kPositions;
  std::string lastKey = "%lastKey = arith.addi %pBlock, %cBM : index";
  std::string wgLastPosition = "%pLast = arith.addi %p0, %c63 : index";
  std::string rowsLimit = "%seqQ";
  std::string sinkInit = "      " +
                         kernels::sinkLoad("%sink", "%sinks", "%h",
                                           config.heads, config.sinkDtype) +
                         "\n      %sinkLog2 = arith.mulf %sink, %log2e : f32"
                         "\n      %mInit = tile.fill %sinkLog2 : !row";
  std::string rowPosition = "%p = arith.addi %p0, %i : index";
  std::string blockIds =
      kernels::blockIdsText("%qb", /*heaviestLast=*/true, shape);
  if (config.packGqa) {
    positions = packedPositions(groupRows);
    lastKey = "%lastKey = arith.addi %pBlockLast, %c1 : index";
    wgLastPosition = ""; // %pLast comes with the positions
    rowsLimit = "%groupRows";
    sinkInit = packedSinkInit(kernels::sinkLoad(
        "%sink", "%sinks", "%rowHead", config.heads, config.sinkDtype));
    rowPosition = "%packedRow = arith.addi %m0, %i : index\n"
                  "          %position = arith.remui %packedRow, %seqQ : index\n"
                  "          %p = arith.addi %position, %past : index";
    // x: block of the group's rows, y: kv head (its first query head is
    // %h), z: sequence.
    blockIds = "      %qb = gpu.block_id x\n"
               "      %hkOfBlock = gpu.block_id y\n"
               "      %b = gpu.block_id z\n"
               "      %h = arith.muli %hkOfBlock, %group : index\n";
  }
  const RowSumText rowSum = rowSumText(/*deferred=*/overlap || !persistent);
  // The pieces after the first start with the newline after R"mlir(.
  std::string kernelText = kSinkFwdHead.str();
  auto text = [](llvm::StringRef piece) { return piece.drop_front().str(); };
  // kSoftmaxCore reading the scores `name` (its two uses of %scores).
  auto softmaxOf = [&](llvm::StringRef name) {
    std::string core = text(kSoftmaxCore);
    [[maybe_unused]] int uses = kernels::replaceAll(core, "%scores", name);
    assert(uses == 2 && "kSoftmaxCore reads %scores twice");
    return core;
  };
  kernelText += text(overlap ? kOverlapLoopHead : kSerialLoopHead);
  // Whether this warpgroup's rows need the per-element mask in this key
  // block (%needsMask).
  kernelText += kernels::blockMaskDecisionText("%cBNm1", "%p0", "%pLast",
                                               wgLastPosition, "%needsMask") +
                "\n";
  if (!overlap) {
    kernelText += "        %masked = scf.if %needsMask -> (!S) {\n" +
                  text(kMaskMap) +
                  "        scf.yield %maskedS : !S\n        } else {\n"
                  "        scf.yield %s : !S\n        }\n" +
                  softmaxOf("%masked");
  } else {
    // The softmax in both branches: ptxas hoists a wgmma wait to the top
    // of its basic block (no overlap left), so P V's wait must start a
    // block of its own, after the softmax.
    const std::string yield =
        "        scf.yield %mNew, %lNew, %p, %alpha : !row, @L@, !S, !row\n";
    kernelText += "        %soft:4 = scf.if %needsMask -> (!row, @L@, !S, "
                  "!row) {\n" +
                  text(kMaskMap) + softmaxOf("%maskedS") + yield +
                  "        } else {\n" + softmaxOf("%s") + yield +
                  "        }\n";
  }
  kernelText += text(overlap ? kOverlapLoopTail : kSerialLoopTail);
  kernelText += text(kSinkFwdTail);
  // The forms built as typed IR; the others still from the template text.
  const bool typed = true;
  OwningOpRef<ModuleOp> module;
  if (typed) {
    SinkFwdForm form{shape,
                     config.dtype,
                     config.sinkDtype,
                     config.stages,
                     warpgroups,
                     warpSpecialized,
                     overlap,
                     oThroughShared,
                     // Per-iteration reduction where the partial columns
                     // made ptxas spill (rowSumText).
                     /*deferredRowSum=*/overlap || !persistent,
                     // Rounded to 10 digits, as the template text had it.
                     float(std::strtod(scaleLog2, nullptr)),
                     tileLists.entries,
                     config.heads * config.batch,
                     rowBlocks,
                     config.packGqa};
    module = SinkFwdBuilder(context, form).build();
  } else
  module = kernels::parseKernelTemplate(
      context, "sink-fwd", kernelText,
      {{"T", type},
       {"ST", kernels::mlirTypeName(config.sinkDtype)},
       {"B", str(config.batch)},
       {"H", str(config.heads)},
       {"HK", str(config.kvHeads)},
       {"SQ", str(config.seqQ)},
       {"SKV", str(config.seqKv)},
       {"D", str(config.headDim)},
       {"BN", str(kBlockN)},
       {"BN_MINUS_1", str(kBlockN - 1)},
       {"GROUP", str(group)},
       {"TILE_TABLE", tileLists.text},
       {"TILE_LOOP_BEGIN",
        persistent ? persistentLoopBegin(tileLists.size, config.heads * config.batch,
                                         rowBlocks, config.heads, allocs,
                                         kernels::pingPongInit(warpgroups))
                   : ""},
       {"BLOCK_IDS", persistent ? "" : blockIds},
       {"ALLOCS", persistent ? "" : allocs},
       {"TILE_LOOP_END", persistent ? "      }" : ""},
       {"POSITIONS", positions},
       {"LAST_KEY", lastKey},
       {"ROWS_LIMIT", rowsLimit},
       {"SINK_INIT", sinkInit},
       {"ROW_POSITION", rowPosition},
       {"KEEP_KEY", kernels::keepKeyText("%p", "%keep")},
       {"Q_TYPE", layout.qType},
       {"KV_TYPE", layout.kvType},
       {"LSE_TYPE", layout.lseType},
       {"SEQUENCE_ARGS", layout.sequenceArgs},
       {"SEQUENCE", layout.sequence},
       {"LOAD_Q", layout.loadQ},
       {"LOAD_KV", layout.loadKV},
       {"STORE", oThroughShared
                     ? storeThroughSharedMemory(layout.oTile, warpgroups) +
                           layout.storeLse
                     : layout.store},
       // Without a window the distance test must always pass.
       {"L", rowSum.type},
       {"L_INIT", rowSum.init},
       {"BLOCK_SUM", rowSum.blockSum},
       {"L_INDICES", rowSum.updateIndices},
       {"ROW_SUM", rowSum.finish},
       {"ROW_SUM_VALUE", rowSum.value},
       {"WINDOW", str(hasWindow ? config.window : config.seqKv + 1)},
       {"HAS_WINDOW", hasWindow ? "true" : "false"},
       {"SCALE_LOG2", scaleLog2},
       // The overlapped loop rescales O conditionally (FA4): the running max
       // m moves only when a block's max exceeds it by more than a margin
       // (log2 units; p = exp2(s - m) then stays at most 2^8), so most blocks
       // leave m, hence alpha = 1, and tile.scale_rows lets a thread skip
       // O's multiplies. Measured for overlap only: the other forms rescale
       // O before their P V GEMM, where the skip's branch did not pay
       // (docs/PERF.md).
       {"RESCALE_MARGIN",
        overlap ? "      %rescaleMargin = arith.constant 8.0 : f32" : ""},
       {"MAX_UPDATE",
        overlap ? "          %limit = arith.addf %mOld, %rescaleMargin : f32\n"
                  "          %grows = arith.cmpf ogt, %t, %limit : f32\n"
                  "          %r = arith.select %grows, %t, %mOld : f32"
                : "          %r = arith.maxnumf %mOld, %t : f32"},
       // Without warp specialization tile-software-pipeline prefetches
       // K and V S - 1 blocks ahead.
       {"STAGES", str(config.stages)},
       {"BM", str(blockM)},
       {"ATTRIBUTES", attributes},
       {"PINGPONG_INIT",
        warpgroups > 1 && !persistent ? kernels::pingPongInit(warpgroups) : ""},
       {"PINGPONG_SYNC", warpgroups > 1 ? kernels::kPingPongSync : ""},
       {"PINGPONG_ARRIVE", warpgroups > 1 ? kernels::kPingPongArrive : ""},
       // With one warpgroup its index is a constant (the compiler cannot
       // know that thread ids stay below 128 without a declared block size).
       {"WARPGROUP_INDEX", persistent       ? ""
                           : warpgroups == 1 ? "%wg = arith.constant 0 : index"
                                             : std::string(kernels::kWarpgroupIndex)}});
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "sink-fwd";
  bundle.entry = "sink_fwd";
  bundle.grid =
      persistent ? rt::Dim3{uint32_t(persistentBlocks), 1, 1}
      : config.packGqa
          ? rt::Dim3{uint32_t((groupRows + blockM - 1) / blockM),
                     uint32_t(config.kvHeads), uint32_t(config.batch)}
          : kernels::blockGrid(rowBlocks, shape);
  // The consumers; warp specialization adds its producer warpgroup.
  bundle.block = {uint32_t(warpgroups * 128), 1, 1};
  bundle.config = {{"layout", std::string(rt::layoutName(shape.layout))},
                   {"batch", config.batch},
                   {"heads", config.heads},
                   {"kv_heads", config.kvHeads},
                   {"seq_q", config.seqQ},
                   {"seq_kv", config.seqKv},
                   {"head_dim", config.headDim},
                   {"window", config.window},
                   {"schedule", std::string(overlap ? "overlap"
                                            : warpSpecialized ? "ws"
                                                              : "plain")},
                   {"stages", config.stages},
                   {"scale", scale},
                   {"dtype", std::string(rt::dtypeName(config.dtype))},
                   {"sink_dtype", std::string(rt::dtypeName(config.sinkDtype))}};
  if (config.packGqa)
    bundle.config["pack_gqa"] = int64_t(1);
  if (persistent) {
    bundle.config["persistent_blocks"] = persistentBlocks;
    // Each block has its list in @sink_fwd_tiles: launch them all.
    bundle.config["tile_lists"] = int64_t(1);
  }
  if (shape.varlen()) {
    bundle.config["seqlens_q"] = rt::formatLengths(config.seqlensQ);
    bundle.config["seqlens_kv"] = rt::formatLengths(config.seqlensKv);
  }
  auto u = [](int64_t v) { return uint64_t(v); };
  std::vector<uint64_t> qShape = shape.qDims(), kvShape = shape.kvDims();
  bundle.params.push_back(kernels::inputBuffer("q", config.dtype, qShape));
  bundle.params.push_back(kernels::inputBuffer("k", config.dtype, kvShape));
  bundle.params.push_back(kernels::inputBuffer("v", config.dtype, kvShape));
  bundle.params.push_back(
      kernels::inputBuffer("sinks", config.sinkDtype, {u(config.heads)}));
  bundle.params.push_back(kernels::outputBuffer("o", config.dtype, qShape));
  bundle.params.push_back(
      kernels::outputBuffer("lse", rt::DType::F32, shape.lseDims()));
  if (shape.varlen()) {
    bundle.params.push_back(kernels::inputBuffer("cu_seqlens_q", rt::DType::I32,
                                                 {u(config.batch + 1)}));
    bundle.params.push_back(kernels::inputBuffer(
        "cu_seqlens_kv", rt::DType::I32, {u(config.batch + 1)}));
  }
  KernelModule kernel{std::move(module), std::move(bundle)};
  kernel.tileIR = true;
  return kernel;
}

std::string kernels::pingPongInit(int64_t warpgroups) {
  // %nextWg: 1 - w for two warpgroups (their text before three existed:
  // the D 128 kernels' PTX stayed byte-identical), (w + 1) mod N for more.
  std::string next =
      warpgroups == 2
          ? "      %nextWg = arith.subi %one32, %wg32 : i32\n"
          : "      %wgPlus1 = arith.addi %wg32, %one32 : i32\n"
            "      %wgCount = arith.constant " + std::to_string(warpgroups) +
                " : i32\n"
                "      %wraps = arith.cmpi eq, %wgPlus1, %wgCount : i32\n"
                "      %firstWg = arith.constant 0 : i32\n"
                "      %nextWg = arith.select %wraps, %firstWg, %wgPlus1 : i32\n"
                "      %lastWg = arith.constant " +
                std::to_string(warpgroups - 1) + " : i32\n";
  return "\n      %threads = arith.constant 256 : i32\n"
         "      %wg32 = arith.index_cast %wg : index to i32\n"
         "      %turnBase = arith.constant 3 : i32\n"
         "      %one32 = arith.constant 1 : i32\n"
         "      %myTurn = arith.addi %turnBase, %wg32 : i32\n" +
         next +
         "      %nextTurn = arith.addi %turnBase, %nextWg : i32\n"
         "      %isLast = arith.cmpi eq, %wg32, " +
         (warpgroups == 2 ? "%one32" : "%lastWg") +
         " : i32\n"
         "      scf.if %isLast {\n"
         "        nvvm.barrier.arrive id = %nextTurn number_of_threads = %threads\n"
         "      }";
}
std::string kernels::blockMaskDecisionText(const std::string &lastKeyOffset,
                                           const std::string &firstPosition,
                                           const std::string &lastPosition,
                                           const std::string &lastPositionDef,
                                           const std::string &result) {
  std::string text =
      "        %lastKeyOfBlock = arith.addi %n0, " + lastKeyOffset +
      " : index\n"
      "        %crossesDiagonal = arith.cmpi sgt, %lastKeyOfBlock, " +
      firstPosition + " : index\n";
  if (!lastPositionDef.empty())
    text += "        " + lastPositionDef + "\n";
  return text + "        %span = arith.subi " + lastPosition +
         ", %n0 : index\n"
         "        %outOfWindow = arith.cmpi sge, %span, %window : index\n"
         "        %windowEdge = arith.andi %hasWindow, %outOfWindow : i1\n"
         "        " + result + " = arith.ori %crossesDiagonal, %windowEdge : i1";
}

std::string kernels::keepKeyText(const std::string &position,
                                 const std::string &result) {
  return "            %causal = arith.cmpi sle, %j, " + position +
         " : index\n"
         "            %distance = arith.subi " + position + ", %j : index\n"
         "            %near = arith.cmpi ult, %distance, %window : index\n"
         "            " + result + " = arith.andi %causal, %near : i1";
}

std::string kernels::blockIdsText(const std::string &blockVar, bool heaviestLast,
                                  const rt::SinkAttentionShape &shape) {
  // Windowed blocks all do about the same work, and neighbouring blocks of
  // one head share most of their keys: one head's blocks in order, as
  // they come (the grouped order measured 3% slower there).
  if (shape.window > 0)
    return "      " + blockVar +
           " = gpu.block_id x\n      %h = gpu.block_id y\n"
           "      %b = gpu.block_id z\n";
  std::string text;
  std::string raw = heaviestLast ? "%blockFromLast" : blockVar;
  text += "      " + raw + " = gpu.block_id y\n";
  if (heaviestLast)
    text += "      %blockCount = gpu.grid_dim y\n"
            "      %lastBlock = arith.subi %blockCount, %c1 : index\n      " +
            blockVar + " = arith.subi %lastBlock, %blockFromLast : index\n";
  text += "      %inGroup = gpu.block_id x\n"
          "      %kvAndBatch = gpu.block_id z\n"
          "      %kvHeadCount = arith.constant " +
          std::to_string(shape.kvHeads) +
          " : index\n"
          "      %b = arith.divui %kvAndBatch, %kvHeadCount : index\n"
          "      %hkOfBlock = arith.remui %kvAndBatch, %kvHeadCount : index\n"
          "      %groupBase = arith.muli %hkOfBlock, %group : index\n"
          "      %h = arith.addi %groupBase, %inGroup : index\n";
  return text;
}

rt::Dim3 kernels::blockGrid(int64_t blocks,
                            const rt::SinkAttentionShape &shape) {
  if (shape.window > 0)
    return {uint32_t(blocks), uint32_t(shape.heads), uint32_t(shape.batch)};
  return {uint32_t(shape.heads / shape.kvHeads), uint32_t(blocks),
          uint32_t(shape.kvHeads * shape.batch)};
}
