//===- SinkBwdKernel.cpp - Attention-sink backward in tile IR -------------===//
//
// The gradients of O = softmax([Q Kᵀ · scale, sink]) V (the forward in
// SinkFwdKernel.cpp) with respect to Q, K, V and the per-head sink logits,
// as one bundle of up to six kernels in one module, launched in order
// except that sink_bwd_dkdv and sink_bwd_dq run side by side (the dK/dV
// launch's `overlaps_next`: neither reads what the other writes)
// (`--dq separate`, the default):
//
//   sink_fwd              (setup) the forward: O and the LSE the others read.
//   sink_bwd_preprocess   per block of 64 query rows: Delta = rowsum(dO ⊙ O),
//                         from the forward's O as stored (rounded to bf16 or
//                         fp16), as every FlashAttention backward does.
//                         It also writes each block's -LSE·log2(e) and
//                         Delta as one record (see kSinkBwdTemplate).
//   sink_bwd_dkdv         per block of 64 keys (64·N with --dkdv-warpgroups
//                         N: N consumer warpgroups sharing the Q/dO tiles,
//                         a TMA producer) and one query head: loops over
//                         the query blocks that see those keys, in the
//                         transposed form
//                           Sᵀ = K Qᵀ, Pᵀ = exp(Sᵀ·scale - LSE) (masked),
//                           dV += Pᵀ dO, dPᵀ = V dOᵀ, dSᵀ = Pᵀ ⊙ (dPᵀ - Delta),
//                           dK += dSᵀ Q · scale,
//                         so K, V, dK and dV stay in registers/shared memory
//                         (Sᵀ and dPᵀ issued together, dPᵀ's wgmma under
//                         the exponentials; SinkBwdDkdvKernel.cpp).
//                         LSE and Delta are per column here: the map bodies
//                         read them from the query block's record in shared
//                         memory, loaded (and pipelined) with Q and dO.
//                         With GQA each query
//                         head writes its fp32 share of its kv head's dK/dV,
//                         and the group's last block for those keys (an
//                         atomic counter, sumSharesOfGroup) adds the
//                         shares in head order: K/V are never repeated, and
//                         blocks per query head (not per kv head) keep the
//                         causal triangle's work balanced over the SMs.
//   sink_bwd_dkdv_sum     (--dkdv-warpgroups 2) adds the
//                         shares instead (the split below: rounds the
//                         fp32 sums its dK/dV kernel adds per kv head).
//   sink_bwd_dq           per block of 64 query rows (64·N with
//                         --dq-warpgroups N: N consumer warpgroups sharing
//                         the K/V tiles, a TMA producer): loops over the key
//                         blocks its rows see, S = Q Kᵀ, P, dP = dO Vᵀ
//                         (issued with S, as in the dK/dV loop), dS,
//                         dQ += dS K · scale, accumulated in fp32 registers
//                         and converted once at the end. It also sums the
//                         row's P ⊙ dP, which is dO · O for the exact O
//                         (O = Σ_j P_j v_j), and writes the row's sink term
//                         -exp(sink - LSE) · Σ_j P_j dP_j: dsinks do not
//                         carry the stored O's rounding, which cancellation
//                         in the sum over rows can make a large part of a
//                         small dsink (28% in a measured case). The last
//                         of a head's blocks (a counter per head) then sums
//                         the head's terms into dsink_h with one warp, in a
//                         fixed order and a butterfly (kSinkSumInDq).
//   sink_bwd_sinks        (--dq-warpgroups 2) that sum, one warp per head,
//                         as a kernel of its own.
//
// Every output element has exactly one writer and every sum a fixed order
// (the share sum's counter only elects which block adds, not the order):
// the gradients are bit-identical from run to run.
//
// `--dq atomic` drops sink_bwd_dq: the dK/dV kernel also computes dQ's
// share of its keys and adds it to an fp32 dQ with a TMA reduce-add, and
// sums the keys' sink terms; preprocess zeros that dQ and writes the rows'
// sink weights into the blocks' records; sink_bwd_dq_convert rounds dQ
// and sums dsinks from the key terms (kDqConvertKernel). Fewer GEMMs, but
// not bit-reproducible. It takes --dkdv-warpgroups 2: the block's two
// warpgroups split dQ's share by panels of D / 2 columns (dkAndDqShare):
// FlashAttention 3's split, level with the default at S 2048 and 6-15%
// faster from 4096 (PERF.md, session 28); with GQA it adds dK and dV into
// fp32 sums per kv head (storeKvAccumulators), which sink_bwd_dkdv_sum
// rounds.
// --dq-split deferred keeps the columns' panels but computes each
// iteration's dQ share from the previous query block's dSᵀ (a double
// buffer the warpgroups hand over through mbarriers, dkAndDeferredDqShare),
// each warpgroup adding its own panel: no barrier between the warpgroups
// inside the loop, the columns' reduce traffic.
// docs/design.md, "Backward forms kept (issue 44)", lists the forms and
// why each stays.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"
#include "SinkBwdBuilding.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>

using namespace mlir;
using namespace sinkattn;

namespace {
/// Query rows, and keys, per block (one warpgroup: wgmma's M).
constexpr int64_t kBlock = 64;
/// A dQ or dK/dV kernel whose `warpgroups` consumer warpgroups share their
/// block's tiles: 128 threads each, which tile-warp-specialize gives a TMA
/// producer and a register split (setmaxnreg). `.minnctapersm 1` tells
/// ptxas the registers at entry: with `.maxntid` alone it ignored every
/// setmaxnreg in these kernels (warning C7508), held the consumers to the
/// launch's 65536 / T registers and spilled. The forward's kernels do not need it and keep their
/// schedule (ptxas schedules differently with it).
std::string sharedBlockAttributes(int64_t warpgroups) {
  return "attributes {known_block_size = array<i32: " +
         std::to_string(128 * warpgroups) +
         ", 1, 1>, nvvm.minctasm = 1 : i32}";
}

/// The row groups of the preprocess and dQ-convert kernels (128 threads, a
/// block of 64 query rows): warp w takes rows 16w .. 16w + 15, a row is a
/// group of D / 8 lanes (%rowOfLane: the lane's row within a load of
/// 32 / (D / 8) rows), each lane 8 columns from %j (%col = %hD + %j), so a
/// warp's load or store covers whole rows.
constexpr llvm::StringLiteral kRowGroups = R"mlir(
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %tid = gpu.thread_id x
      %warp = arith.divui %tid, %c32 : index
      %lane = arith.remui %tid, %c32 : index
      %rowLanes = arith.constant @ROW_LANES@ : index
      %rowOfLane = arith.divui %lane, %rowLanes : index
      %chunk = arith.remui %lane, %rowLanes : index
      %firstLane = arith.cmpi eq, %chunk, %c0 : index
      %c8 = arith.constant 8 : index
      %j = arith.muli %chunk, %c8 : index
      %col = arith.addi %hD, %j : index
      %warpRow = arith.muli %warp, %c16 : index)mlir";

/// The kernels of the backward. How the dK/dV kernel gets each column's
/// -LSE·log2(e) and Delta: the preprocess kernel writes them per query
/// block, side by side ([B, H, query blocks, 2, 64] fp32), and the dK/dV
/// loop loads that record as a third TMA tile with its Q and dO tiles (software-pipelined or from the
/// producer like them), reading it with memref.load. Per-element loads of
/// LSE and Delta from global memory instead cost 32 loads per iteration
/// and registers: 168+ with a spill at D 64, 255 with a spill at D 128;
/// the records take 156 and 235 and ran the backward 8-10% (D 64) and
/// 3% (D 128) faster (PERF.md, 2026-12-01).
constexpr llvm::StringLiteral kSinkBwdTemplate = R"mlir(
!tileT = memref<64x@D@x@T@, #gpu.address_space<workgroup>>
!S = !tile.fragment<64x64xf32>
!P = !tile.fragment<64x64x@T@>
!acc = !tile.fragment<64x@D@xf32>
!acc16 = !tile.fragment<64x@D@x@T@>
!row = !tile.fragment<64xf32>
!q = @Q_TYPE@
!kv = @KV_TYPE@
!lse = @LSE_TYPE@
!terms = memref<@ROWS@xf32>
!qacc = @QACC_TYPE@
!tileS = memref<64x64x@T@, #gpu.address_space<workgroup>>
!tileDqQ = memref<@DQ_BLOCK_ROWS_N@x@D@x@T@, #gpu.address_space<workgroup>>
!tileQw = memref<64x@D@x@T@, strided<[@D@, 1], offset: ?>, #gpu.address_space<workgroup>>
!rowParts = !tile.fragment<64x8xf32>
!stats = memref<@B@x@H@x@QB@x@STATS_ROWS@x64xf32>
module attributes {gpu.container_module} {
  gpu.module @sink_bwd {
    gpu.func @sink_bwd_preprocess(%O: !q, %dO: !q, %Delta: !lse, %LSE: !lse, %Stats: !stats@PRE_ATOMIC_ARGS@@PRE_KV_ACC_ARGS@@PRE_COUNTS_ARG@@PRE_SINK_COUNTS_ARG@@SEQUENCE_ARGS@)
        kernel {
@QUERY_BLOCK_PROLOGUE@
      // 16 rows per warp, @ROWS_PER_STEP@ at a time (preprocessRowsText):
      // each row is a group of D / 8 lanes, each lane reading 8 columns (16
      // bytes) of O and dO, every load of the step issued before the first
      // multiply; a butterfly in the group sums its lanes. The group's first
      // lane writes the row's -LSE·log2(e) and Delta side by side into the
      // block's record for the dK/dV kernel to load with its Q and dO
      // tiles, and Delta itself for rows inside the sequence. Rows past the
      // sequence's end read a clamped row (the last one, or varlen's next
      // sequence's): they go into the record, where the dK/dV kernel masks
      // them, but not into Delta.
@ROW_GROUPS@
      %width = arith.constant 32 : i32
      %rowsPerStep = arith.constant @ROWS_PER_STEP@ : index@PRE_DQ_ZEROS@
      scf.for %k = %c0 to %c16 step %rowsPerStep {
@PRE_ROWS@
      }
@PRE_ATOMIC@
@PRE_THREAD_INDEX@
@PRE_ZERO_COUNTS@
@PRE_ZERO_KV_ACCS@
@PRE_ZERO_SINK_COUNTS@
      gpu.return
    }

@DQ_KERNEL@
@SINKS_KERNEL@
  }
}
)mlir";

/// dsink_h from the sink terms (the dsinks kernel, or the dQ kernel's last
/// block of the head: kSinkSumInDq). One warp per head; lane l sums rows l,
/// l + 32, ... of each run of the head's rows into kSinkPartialSums partial
/// sums (rows l + 32u + 256m, m = 0, 1, ..., into sum u, so that many loads
/// are in flight: one chain of dependent loads took 31 us at S 8192), adds
/// them in order, then the lanes combine in a fixed butterfly. Needs %c0,
/// %c1, %zero, %h, %lane and the terms as a flat memref (headSinkSumText's
/// `terms`).
constexpr llvm::StringLiteral kHeadSinkSum = R"mlir(
      %width = arith.constant 32 : i32
      %run = arith.constant @RUN@ : index
      %runs = arith.constant @RUN_BATCHES@ : index
      %batchRows = arith.constant @BATCH_ROWS@ : index
      %headBase = arith.muli %h, %run : index
@SINK_SUM@
@BUTTERFLY@
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        memref.store %total, %dsinks[%h] : memref<@H@xf32>
      })mlir";

/// The dsinks kernel (--dq-warpgroups 2, whose block-wide barriers would
/// have to leave the producer out; the one-warpgroup dQ kernel sums dsinks
/// itself, kSinkSumInDq, and --dq atomic's convert kernel,
/// kDqConvertKernel).
constexpr llvm::StringLiteral kSinksKernel = R"mlir(
    gpu.func @sink_bwd_sinks(%Terms: !terms, %dsinks: memref<@H@xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %h = gpu.block_id x
      %lane = gpu.thread_id x
@HEAD_SINK_SUM@
      gpu.return
    })mlir";

/// The deterministic mode's dQ kernel (`--dq separate`).
constexpr llvm::StringLiteral kDqKernel = R"mlir(
    gpu.func @sink_bwd_dq(%Q: !q, %K: !kv, %V: !kv, %dO: !q, %LSE: !lse,
                          %Delta: !lse, %sinks: memref<@H@x@ST@>, %dQ: !q,
                          %Terms: !lse@DQ_SINKS_ARGS@@SEQUENCE_ARGS@) kernel
        @DQ_ATTRIBUTES@ {
@CONSTANTS@
@DQ_BLOCK_IDS@
      %hk = arith.divui %h, %group : index
@SEQUENCE@
@DQ_ROWS@
      %qRow = arith.addi %qStart, %m0 : index
      %sQ = memref.alloc() : !tileDqQ
      %sdO = memref.alloc() : !tileDqQ
      %sK = memref.alloc() : !tileT
      %sV = memref.alloc() : !tileT
      tile.copy %Q[@DQ_Q_TILE@], %sQ : !q, !tileDqQ
      tile.copy %dO[@DQ_Q_TILE@], %sdO : !q, !tileDqQ@DQ_SUBVIEWS@@DQ_PINGPONG_INIT@
      %lse2 = tile.map () : () -> !row {
      ^bb0(%i: index):
@CLAMPED_ROW@
        %lse = memref.load %LSE[@LSE_AT@] : !lse
        %v = arith.mulf %lse, %log2e : f32
        tile.yield %v : f32
      }
      %deltaRow = tile.map () : () -> !row {
      ^bb0(%i: index):
@CLAMPED_ROW@
        %v = memref.load %Delta[@LSE_AT@] : !lse
        tile.yield %v : f32
      }
      // Key blocks the rows see: up to the last row's position (causal),
      // from the first row's window start.
      %pFirst = arith.addi @DQ_BLOCK_FIRST_ROW@, %past : index
      %lastKey = arith.addi %pFirst, @DQ_BLOCK_ROWS@ : index
      %hiKey = arith.minsi %lastKey, %skv : index
      %hi = arith.maxsi %hiKey, %c0 : index
      %hiCausal = arith.ceildivui %hi, %c64 : index
      %firstKey = arith.subi %pFirst, %window : index
      %firstKey1 = arith.addi %firstKey, %c1 : index
      %firstKeyPos = arith.maxsi %firstKey1, %c0 : index
      %windowLo = arith.divui %firstKeyPos, %c64 : index
      %lo = arith.select %hasWindow, %windowLo, %c0 : index
      // Blocks past the end of their sequence (varlen) do no work.
      %live = arith.cmpi slt, @DQ_BLOCK_FIRST_ROW@, %seqQ : index
      %hiLive = arith.select %live, %hiCausal, %lo : index
      %hiBlocks = arith.maxsi %hiLive, %lo : index
      %accZero = tile.fill %zero : !acc
      %sZero = tile.fill %zero : !S
      // P ⊙ dP summed over the key blocks in registers (elementwise, one
      // FMA per element, or as partial columns: kDqPdpFull/kDqPdpPartial),
      // reduced to rows once after the loop: a row reduction per block
      // (shuffles) cost 3-4% of the backward at D = 64.
@DQ_PDP_ZERO@
      %res:2 = scf.for %kb = %lo to %hiBlocks step %c1
          iter_args(%acc = %accZero, %pdpSum = @DQ_PDP_INIT@) -> (!acc, @DQ_PDP_TYPE@) {
        %n0 = arith.muli %kb, %c64 : index
        %kRow = arith.addi %kStart, %n0 : index
        tile.copy %K[@KV_TILE@], %sK : !kv, !tileT
        tile.copy %V[@KV_TILE@], %sV : !kv, !tileT@DQ_PINGPONG_SYNC@
        // S and dP issued together: dP's wgmma runs under P's exponentials.
        %sAsync = tile.gemm @DQ_QW@, %sK, %sZero {transpose_b, async} : @DQ_QW_TYPE@, !tileT, !S
        %dpAsync = tile.gemm @DQ_DOW@, %sV, %sZero {transpose_b, async} : @DQ_QW_TYPE@, !tileT, !S@DQ_PINGPONG_ARRIVE@
        %s = tile.gemm_wait %sAsync pending 1 : !S
        // Only blocks on the diagonal or at the window's edge need the
        // per-element mask (blockMaskText).
        %rowsFirstPos = arith.addi %m0, %past : index
@BLOCK_MASK@
        %distanceBase = arith.subi %rowsFirstPos, %n0 : index
        // P = exp2(S·scale·log2(e) - LSE·log2(e)) (dqProbabilities).
@DQ_P_MAP@
        %dp = tile.gemm_wait %dpAsync pending 0 : !S
        %ds = tile.map (%p, %dp, %deltaRow) : (!S, !S, !row) -> !S {
        ^bb0(%ii: index, %jj: index, %pv: f32, %dpv: f32, %d: f32):
          %x = arith.subf %dpv, %d : f32
          %v = arith.mulf %pv, %x : f32
          tile.yield %v : f32
        }
@DQ_PDP_UPDATE@
        %ds16 = tile.cast %ds : !S to !P
        %accNew = tile.gemm %ds16, %sK, %acc : !P, !tileT, !acc
        scf.yield %accNew, %pdpNew : !acc, @DQ_PDP_TYPE@
      } {tile.num_stages = @STAGES@}
      %pdpRows = tile.reduce sum %res#1 along 1 : @DQ_PDP_TYPE@ -> !row
      @SINK_LOAD@
      // The row's sink term: the sink's probability exp(sink - LSE) times
      // Σ_j P_j dP_j; 0 for a row with neither keys nor a finite sink
      // (LSE = -inf).
      %term = tile.map (%pdpRows, %lse2) : (!row, !row) -> !row {
      ^bb0(%i: index, %pdpRow: f32, %l: f32):
        %noKey = arith.cmpf oeq, %l, %ninf : f32
        %negL = arith.negf %l : f32
        %x2 = math.fma %sink, %log2e, %negL : f32
        %e = math.exp2 %x2 : f32
        %t = arith.mulf %e, %pdpRow : f32
        %nt = arith.negf %t : f32
        %v = arith.select %noKey, %zero, %nt : f32
        tile.yield %v : f32
      }
@STORE_TERMS@
@DQ_SINK_SUM@
      %dq16 = tile.map (%res#0) : (!acc) -> !acc16 {
      ^bb0(%i: index, %j: index, %x: f32):
        %y = arith.mulf %x, %scale : f32
        %v = arith.truncf %y : f32 to @T@
        tile.yield %v : @T@
      }
@DQ_STORE@
      gpu.return
    }
)mlir";

/// The election of the last block to arrive (kSinkSumInDq; the typed
/// buildLastArrival of SinkBwdDkdvKernel.cpp for the dK/dV share sum): each block makes its global writes visible (a GPU-scope
/// fence, then a block barrier), its first thread adds 1 to
/// `counter`[`index`] (a memref of type `counterType`) and passes the count
/// it saw on through shared memory, and %<prefix>IsLast holds in the block
/// that saw `lastCount`. Defines %<prefix>Tid (the thread). The elected
/// block fences again before it reads the others' writes.
std::string lastArrivalText(const std::string &prefix,
                            const std::string &counter,
                            const std::string &counterType,
                            const std::string &index,
                            const std::string &lastCount) {
  const std::string slotType = "memref<1xi32, #gpu.address_space<workgroup>>";
  const std::string p = "%" + prefix;
  return "      nvvm.memory.barrier #nvvm.mem_scope<gpu>\n"
         "      gpu.barrier\n"
         "      " + p + "Tid = gpu.thread_id x\n"
         "      " + p + "IsFirstThread = arith.cmpi eq, " + p + "Tid, %c0 : index\n"
         "      " + p + "Slot = memref.alloc() : " + slotType + "\n"
         "      scf.if " + p + "IsFirstThread {\n"
         "        " + p + "One = arith.constant 1 : i32\n"
         "        " + p + "Before = memref.atomic_rmw addi " + p + "One, " +
         counter + "[" + index + "] : (i32, " + counterType + ") -> i32\n"
         "        memref.store " + p + "Before, " + p + "Slot[%c0] : " + slotType + "\n"
         "      }\n"
         "      gpu.barrier\n"
         "      " + p + "Ticket = memref.load " + p + "Slot[%c0] : " + slotType + "\n"
         "      " + p + "LastTicket = arith.constant " + lastCount + " : i32\n"
         "      " + p + "IsLast = arith.cmpi eq, " + p + "Ticket, " + p +
         "LastTicket : i32";
}

/// The plain schedule's dQ kernel sums dsinks itself: the last of a head's
/// B x QB blocks to store its rows' sink terms (a counter per head, which the
/// preprocess kernel zeroes; a GPU-scope fence before the count and one
/// after, as in the dK/dV kernel's share sum) adds the head's terms with its first
/// warp, in the dsinks kernel's order (kHeadSinkSum: bit-identical dsinks).
/// The dQ kernel ends before the dK/dV kernel beside it, so the sum leaves
/// the backward's critical path, and one launch goes.
constexpr llvm::StringLiteral kSinkSumInDq = R"mlir(
@SINK_LAST_ARRIVAL@
      %warpSize = arith.constant 32 : index
      %inFirstWarp = arith.cmpi ult, %sinkTid, %warpSize : index
      %sumSinkHere = arith.andi %sinkIsLast, %inFirstWarp : i1
      scf.if %sumSinkHere {
        nvvm.memory.barrier #nvvm.mem_scope<gpu>
        %lane = gpu.thread_id x
        %termsFlat = @TERMS_FLAT@
@HEAD_SINK_SUM@
      })mlir";

/// Zeroes kSinkSumInDq's counters: one per head, by the head's first
/// preprocess block.
constexpr llvm::StringLiteral kZeroSinkCounts = R"mlir(
      %firstOfHead0 = arith.cmpi eq, %qb, %c0 : index
      %firstOfHead1 = arith.cmpi eq, %b, %c0 : index
      %sinkZeroTid = gpu.thread_id x
      %firstOfHead2 = arith.cmpi eq, %sinkZeroTid, %c0 : index
      %firstOfHead01 = arith.andi %firstOfHead0, %firstOfHead1 : i1
      %firstOfHead = arith.andi %firstOfHead01, %firstOfHead2 : i1
      scf.if %firstOfHead {
        %sinkZero32 = arith.constant 0 : i32
        memref.store %sinkZero32, %SinkCounts[%h] : memref<@H@xi32>
      })mlir";

/// `--dq atomic`: the dK/dV kernel also computes dQ's share of its keys,
/// dS K, from dSᵀ in shared memory (a transposed-A wgmma) and adds it to
/// an fp32 dQ (zeroed by the preprocess kernel) by TMA reduce-add; this kernel
/// scales and converts it, in the preprocess kernel's row groups: D / 8
/// lanes per row, each reading 32 contiguous bytes of the fp32 dQ and
/// writing 16 of dQ (dqConvertRowsText). In the accumulator's fragment
/// layout (a tile.map's per-element loads, a register store of 4 bytes
/// per row and column pair) it took 2.6 times cuDNN's conversion of the
/// same tensors (PERF.md, session 28).
constexpr llvm::StringLiteral kDqConvertKernel = R"mlir(
    gpu.func @sink_bwd_dq_convert(%dQacc: !qacc, %dQ: !q, %Terms: !terms,
                                  %dsinks: memref<@H@xf32>@SEQUENCE_ARGS@) kernel {
@QUERY_BLOCK_PROLOGUE@
@ROW_GROUPS@
      // dsink_h from the keys' sink terms (which the dK/dV kernel wrote),
      // by the first warp of the head's first block: one launch fewer than
      // a dsinks kernel of its own after this one (session 29).
      %firstBlock0 = arith.cmpi eq, %qb, %c0 : index
      %firstBlock1 = arith.cmpi eq, %b, %c0 : index
      %firstBlock = arith.andi %firstBlock0, %firstBlock1 : i1
      %inFirstWarp = arith.cmpi ult, %tid, %c32 : index
      %sumSinkHere = arith.andi %firstBlock, %inFirstWarp : i1
      scf.if %sumSinkHere {
@HEAD_SINK_SUM@
      }
      %scales = vector.broadcast %scale : f32 to vector<8xf32>
      %rowsPerStep = arith.constant @ROWS_PER_STEP@ : index
      scf.for %k = %c0 to %c16 step %rowsPerStep {
@CONVERT_ROWS@
      }
      gpu.return
    }
)mlir";

/// `--dq atomic`, preprocess: each row's sink weight exp(sink - LSE) (0 for
/// a row with neither keys nor a finite sink), which the dK/dV kernel's
/// sink terms need per column, as the third row of the block's record
/// (beside -LSE·log2(e) and Delta, loaded with them). (Read per element
/// from global memory instead, the weights' loads held registers: the dK/dV
/// kernel with two warpgroups at D 128 spilled 732 bytes, 376 with the
/// record.) The fp32 dQ's zeros are stored by the row loop
/// (preprocessRowsText), 32 contiguous bytes per lane.
constexpr llvm::StringLiteral kPreAtomic = R"mlir(
      @SINK_LOAD@
      %w = tile.map () : () -> !row {
      ^bb0(%i: index):
@CLAMPED_ROW@
        %lse = memref.load %LSE[@LSE_AT@] : !lse
        %noKey = arith.cmpf oeq, %lse, %ninf : f32
        %x = arith.subf %sink, %lse : f32
        %x2 = arith.mulf %x, %log2e : f32
        %e = math.exp2 %x2 : f32
        %v = arith.select %noKey, %zero, %e : f32
        tile.yield %v : f32
      }
      %cWeightRow = arith.constant 2 : index
      tile.store %w, %Stats[%b, %h, %qb, %cWeightRow, %c0] : !row, !stats)mlir";

// Row %i of the query block at %m0, as the token %r it reads from LSE-shaped
// buffers: clamped to the last row (rows past the end read it and are
// masked or never stored).
constexpr llvm::StringLiteral kClampedRow = R"mlir(
        %row = arith.addi %m0, %i : index
        %token = arith.addi %qStart, %row : index
        %r = arith.minui %token, %lastRow : index)mlir";

/// The dQ kernel's running Σ_j P ⊙ dP (see @DQ_PDP_UPDATE@).
constexpr llvm::StringLiteral kDqPdpFull = R"mlir(        %pdpNew = tile.map (%pdpSum, %p, %dp) : (!S, !S, !S) -> !S {
        ^bb0(%ii: index, %jj: index, %a: f32, %pv: f32, %dpv: f32):
          %v = math.fma %pv, %dpv, %a : f32
          tile.yield %v : f32
        })mlir";
constexpr llvm::StringLiteral kDqPdpPartial = R"mlir(        %pdpBlock = tile.map (%p, %dp) : (!S, !S) -> !S {
        ^bb0(%ii: index, %jj: index, %pv: f32, %dpv: f32):
          %v = arith.mulf %pv, %dpv : f32
          tile.yield %v : f32
        }
        %pdpPart = tile.partial_reduce sum %pdpBlock : !S -> !rowParts
        %pdpNew = tile.map (%pdpSum, %pdpPart) : (!rowParts, !rowParts) -> !rowParts {
        ^bb0(%ii: index, %jj: index, %a: f32, %part: f32):
          %v = arith.addf %a, %part : f32
          tile.yield %v : f32
        })mlir";

/// The start of the kernels with one block per 64 query rows of a head
/// (grid x: block, y: head, z: sequence): preprocess and dq_convert.
constexpr llvm::StringLiteral kQueryBlockPrologue = R"mlir(@CONSTANTS@
      %qb = gpu.block_id x
      %h = gpu.block_id y
      %b = gpu.block_id z
      %hk = arith.divui %h, %group : index
@SEQUENCE@
      %m0 = arith.muli %qb, %c64 : index)mlir";

/// The constants and sequence bounds every tile kernel of the module uses.
constexpr llvm::StringLiteral kConstants = R"mlir(
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c63 = arith.constant 63 : index
      %c64 = arith.constant 64 : index
      %group = arith.constant @GROUP@ : index
      %window = arith.constant @WINDOW@ : index
      %window32 = arith.constant @WINDOW32@ : i32
      %hasWindow = arith.constant @HAS_WINDOW@
      %zero = arith.constant 0.0 : f32
      %ninf = arith.constant 0xFF800000 : f32
      %log2e = arith.constant 1.44269504088896340736 : f32
      %scale = arith.constant @SCALE@ : f32
      %scaleLog2 = arith.constant @SCALE_LOG2@ : f32)mlir";

/// Whether a 64 x 64 block of query rows %m0.. and keys %n0.. needs the
/// per-element causal/window mask (%needsMaskAt; %rowsFirstPos = %m0 +
/// %past): blockMaskDecisionText, also true for every block with keys past
/// the sequence's end, since live rows' positions stay below it. Every
/// other block keeps every element of its rows inside the sequence
/// (without a window, dQ rows past the end may keep keys the stand-in
/// window seqKv + 1 cut; those rows are never stored, and dK/dV masks such
/// blocks by their rows), and its map skips the index math: about 40% of
/// the dQ loop's instructions at D 64 were the mask's (SASS of the seed
/// bundle).
std::string blockMaskText() {
  return kernels::blockMaskDecisionText(
      "%c63", "%rowsFirstPos", "%rowsLastPos",
      "%rowsLastPos = arith.addi %rowsFirstPos, %c63 : index",
      "%needsMaskAt");
}

/// `%<result> = scf.if %<decision>`: the block's probabilities, from a
/// tile.map whose first line and block arguments are `head` and whose `exp`
/// lines compute %e: with the per-element mask (`keep` computes %keep from
/// the map's indices; masked elements are 0) where the block needs it
/// (blockMaskText), the exp2 alone where it keeps every element.
std::string blockMaskedMap(llvm::StringRef result, llvm::StringRef decision,
                           llvm::StringRef head, llvm::StringRef keep,
                           llvm::StringRef exp) {
  return ("        %" + result + " = scf.if %" + decision +
          " -> (!S) {\n          %masked = " + head + "\n" + keep + "\n" +
          exp +
          "\n            %v = arith.select %keep, %e, %zero : f32\n"
          "            tile.yield %v : f32\n          }\n"
          "          scf.yield %masked : !S\n        } else {\n"
          "          %unmasked = " +
          head + "\n" + exp +
          "\n            tile.yield %e : f32\n          }\n"
          "          scf.yield %unmasked : !S\n        }")
      .str();
}

/// The backward's per-element mask: whether key j is kept for query position
/// p = i + past (causal: p - j >= 0; the window: p - j < %window, seqKv + 1
/// without one), from the distance p - j = %distanceBase + `offset`
/// (%distanceBase = %m0 + %past - %n0 per block, `offset` = ii - jj per
/// element) in one unsigned 32-bit compare: a negative distance wraps past
/// every window, so it also decides causality. In 64 bits (index) the
/// mask took two compares of two halves each plus the carries per element:
/// the split's loop 852 -> 718 SASS instructions, spill 40 -> 4 bytes
/// (docs/PERF.md, session 30). Needs %distanceBase and %window32 (the window,
/// at most seqKv + 1). Distances fit in 31 bits: the forward's checks keep Q
/// and K below 2^31 elements, so seq-q + seq-kv < 2^26 at D 64 and beyond.
std::string keepByDistanceText(const std::string &offset,
                               const std::string &result) {
  return "            %distance = arith.addi %distanceBase, " + offset +
         " : index\n"
         "            %distance32 = arith.index_cast %distance : index to "
         "i32\n"
         "            " + result +
         " = arith.cmpi ult, %distance32, %window32 : i32";
}

/// The dQ kernel's P (LSE·log2(e) per row).
std::string dqProbabilities() {
  return blockMaskedMap("p", "needsMaskAt",
                        R"mlir(tile.map (%s, %lse2) : (!S, !row) -> !S {
          ^bb0(%ii: index, %jj: index, %x: f32, %l: f32):)mlir",
                        R"mlir(            %offset = arith.subi %ii, %jj : index
)mlir" + keepByDistanceText("%offset", "%keep"),
                        R"mlir(            %negL = arith.negf %l : f32
            %y = math.fma %x, %scaleLog2, %negL : f32
            %e = math.exp2 %y : f32)mlir");
}

std::string butterflyText() {
  std::string text;
  std::string value = "%sum";
  int step = 0;
  for (int offset : {16, 8, 4, 2, 1}) {
    std::string s = std::to_string(step++);
    text += "      %offset" + s + " = arith.constant " + std::to_string(offset) +
            " : i32\n      %other" + s + ", %valid" + s +
            " = gpu.shuffle xor " + value + ", %offset" + s +
            ", %width : f32\n      %sum" + s + " = arith.addf " + value +
            ", %other" + s + " : f32\n";
    value = "%sum" + s;
  }
  text += "      %total = arith.addf " + value + ", %zero : f32";
  return text;
}

/// The preprocess kernel's rows: one load instruction of a warp covers
/// 256 / D rows (D / 8 lanes per row, 16 bytes per lane), and a step of its
/// row loop issues kPreprocessLoads of them. Returns the step's text: every
/// row's clamped row and its loads of O, dO and LSE first (one dependent
/// latency per step instead of one per row), then per row the dot product,
/// the butterfly over its lanes and the group's first lane's record and
/// Delta stores. `oAt` and
/// `lseAt` index O/dO and LSE/Delta at row %r and column %j (%col = %hD +
/// %j).
constexpr int64_t kPreprocessLoads = 4;

/// The row of load `n` (a suffix) of a kRowGroups step %k: %i<n> in the
/// block, %row<n> in the sequence, %r<n> clamped to the last row
/// (kClampedRow), for the lanes' loads `rowOffset` rows into the step.
std::string rowGroupRowText(const std::string &n, int64_t rowOffset) {
  return "        %rowOffset" + n + " = arith.constant " +
         std::to_string(rowOffset) + " : index\n"
         "        %kRow" + n + " = arith.addi %k, %rowOffset" + n + " : index\n"
         "        %kLane" + n + " = arith.addi %kRow" + n + ", %rowOfLane : index\n"
         "        %i" + n + " = arith.addi %warpRow, %kLane" + n + " : index\n" +
         kernels::withSuffix(kClampedRow.drop_front().str(),
                             {"%i", "%row", "%token", "%r"}, n) +
         "\n";
}

std::string preprocessRowsText(const std::string &oAt, const std::string &lseAt,
                               int64_t headDim, const std::string &type,
                               bool zeroDqAccum) {
  const int64_t rowLanes = headDim / 8, rowsPerLoad = 32 / rowLanes;
  const std::string vec = "vector<8x" + type + ">";
  std::string loads, rows;
  for (int64_t u = 0; u < kPreprocessLoads; ++u) {
    std::string n = std::to_string(u), oAtU = kernels::withSuffix(oAt, {"%r"}, n),
                lseAtU = kernels::withSuffix(lseAt, {"%r"}, n);
    loads += rowGroupRowText(n, u * rowsPerLoad) +
             "        %o" + n + " = vector.load %O[" + oAtU + "] {alignment = 16 : i64} : !q, " + vec + "\n"
             "        %d" + n + " = vector.load %dO[" + oAtU + "] {alignment = 16 : i64} : !q, " + vec + "\n"
             "        %lse" + n + " = memref.load %LSE[" + lseAtU + "] : !lse\n";
    // --dq atomic: the row's fp32 dQ, which the dK/dV kernel adds to,
    // zeroed by the same lanes at the same (clamped) row and columns: O's
    // index serves, since dQacc has q's shape in fp32.
    if (zeroDqAccum)
      rows += "        vector.store %dqZeros, %dQacc[" + oAtU +
              "] {alignment = 16 : i64} : !qacc, vector<8xf32>\n";
    rows += "        %of" + n + " = arith.extf %o" + n + " : " + vec + " to vector<8xf32>\n"
            "        %df" + n + " = arith.extf %d" + n + " : " + vec + " to vector<8xf32>\n"
            "        %x" + n + " = arith.mulf %of" + n + ", %df" + n + " : vector<8xf32>\n"
            "        %sum" + n + " = vector.reduction <add>, %x" + n + " : vector<8xf32> into f32\n";
    std::string value = "%sum" + n;
    for (int64_t offset = rowLanes / 2, step = 0; offset >= 1; offset /= 2, ++step) {
      std::string s = n + "_" + std::to_string(step);
      rows += "        %offset" + s + " = arith.constant " + std::to_string(offset) +
              " : i32\n        %other" + s + ", %valid" + s + " = gpu.shuffle xor " +
              value + ", %offset" + s + ", %width : f32\n        %sum" + s +
              " = arith.addf " + value + ", %other" + s + " : f32\n";
      value = "%sum" + s;
    }
    rows += "        scf.if %firstLane {\n"
            "          %lse2" + n + " = arith.mulf %lse" + n + ", %log2e : f32\n"
            "          %negLse2" + n + " = arith.negf %lse2" + n + " : f32\n"
            "          memref.store %negLse2" + n + ", %Stats[%b, %h, %qb, %c0, %i" + n + "] : !stats\n"
            "          memref.store " + value + ", %Stats[%b, %h, %qb, %c1, %i" + n + "] : !stats\n"
            "          %inside" + n + " = arith.cmpi ult, %row" + n + ", %seqQ : index\n"
            "          scf.if %inside" + n + " {\n"
            "            memref.store " + value + ", %Delta[" + lseAtU + "] : !lse\n"
            "          }\n"
            "        }\n";
  }
  std::string text = loads + rows;
  text.pop_back();
  return text;
}

/// One step of the dQ-convert kernel's row loop (kDqConvertKernel): the
/// fp32 dQ of kPreprocessLoads rows per lane group (clamped rows, every
/// load first), then each row scaled, rounded and stored if it lies inside
/// the sequence. `oAt` indexes q-shaped buffers at row %r, column %j or
/// %col.
std::string dqConvertRowsText(const std::string &oAt, int64_t headDim,
                              const std::string &type) {
  const int64_t rowsPerLoad = 32 / (headDim / 8);
  const std::string vec = "vector<8x" + type + ">";
  std::string loads, stores;
  for (int64_t u = 0; u < kPreprocessLoads; ++u) {
    std::string n = std::to_string(u),
                oAtU = kernels::withSuffix(oAt, {"%r"}, n);
    loads += rowGroupRowText(n, u * rowsPerLoad) + "        %acc" + n +
             " = vector.load %dQacc[" + oAtU +
             "] {alignment = 16 : i64} : !qacc, vector<8xf32>\n";
    stores += "        %scaled" + n + " = arith.mulf %acc" + n +
              ", %scales : vector<8xf32>\n"
              "        %rounded" + n + " = arith.truncf %scaled" + n +
              " : vector<8xf32> to " + vec + "\n"
              "        %inside" + n + " = arith.cmpi ult, %row" + n +
              ", %seqQ : index\n"
              "        scf.if %inside" + n + " {\n"
              "          vector.store %rounded" + n + ", %dQ[" + oAtU +
              "] {alignment = 16 : i64} : !q, " + vec + "\n"
              "        }\n";
  }
  std::string text = loads + stores;
  text.pop_back();
  return text;
}

/// Partial sums per lane of the dsinks kernel.
constexpr int64_t kSinkPartialSums = 8;
static_assert(kSinkPartialSums >= 2, "sinkSumText combines two or more sums");

/// The dsinks kernel's sum of lane %lane's rows of `terms` (a flat memref)
/// into %sum: over the runs (outer loop, partial sums %partU), rows %k + 32u
/// into sum u (inner loop, %accU; rows past the run read row %k and add 0),
/// then the outer loop's results %sums#U added in order.
std::string sinkSumText(const std::string &terms) {
  std::string outerIter, innerIter, types, loads, adds, yields, results,
      combine;
  for (int64_t u = 0; u < kSinkPartialSums; ++u) {
    std::string n = std::to_string(u), sep = u ? ", " : "";
    outerIter += sep + "%part" + n + " = %zero";
    innerIter += sep + "%acc" + n + " = %part" + n;
    types += sep + "f32";
    yields += sep + "%a" + n;
    results += sep + "%s#" + n;
    loads += "          %offset" + n + "Row = arith.constant " +
             std::to_string(32 * u) + " : index\n          %k" + n +
             " = arith.addi %k, %offset" + n + "Row : index\n          %in" +
             n + " = arith.cmpi ult, %k" + n + ", %run : index\n          %kIn" +
             n + " = arith.select %in" + n + ", %k" + n +
             ", %k : index\n          %at" + n +
             " = arith.addi %base, %kIn" + n + " : index\n          %v" + n +
             " = memref.load " + terms + "[%at" + n + "] : !terms\n";
    adds += "          %w" + n + " = arith.select %in" + n + ", %v" + n +
            ", %zero : f32\n          %a" + n + " = arith.addf %acc" + n +
            ", %w" + n + " : f32\n";
    if (u > 0)
      combine += "\n      " +
                 (u + 1 == kSinkPartialSums ? std::string("%sum")
                                            : "%sumTo" + n) +
                 " = arith.addf " +
                 (u == 1 ? std::string("%sums#0") : "%sumTo" + std::to_string(u - 1)) +
                 ", %sums#" + n + " : f32";
  }
  const std::string count = std::to_string(kSinkPartialSums);
  return "      %cStride = arith.constant " +
         std::to_string(32 * kSinkPartialSums) + " : index\n      %sums:" +
         count + " = scf.for %r = %c0 to %runs step %c1 iter_args(" +
         outerIter + ") -> (" + types +
         ") {\n        %runBase = arith.muli %r, %batchRows : index\n"
         "        %base = arith.addi %runBase, %headBase : index\n        %s:" +
         count + " = scf.for %k = %lane to %run step %cStride iter_args(" +
         innerIter + ") -> (" + types + ") {\n" + loads + adds +
         "          scf.yield " + yields + " : " + types +
         "\n        }\n        scf.yield " + results + " : " + types +
         "\n      }" + combine;
}

/// kHeadSinkSum with its pieces, summing `terms`.
std::string headSinkSumText(const std::string &terms) {
  std::string text = kHeadSinkSum.str();
  kernels::replaceAll(text, "@SINK_SUM@", sinkSumText(terms));
  kernels::replaceAll(text, "@BUTTERFLY@", butterflyText());
  return text;
}

/// Zeroes the dK/dV kernel's share-sum counters (sumSharesOfGroup): every preprocess block a strided
/// part of them.
constexpr llvm::StringLiteral kZeroShareCounts = R"mlir(
      %zero32 = arith.constant 0 : i32
      %countTotal = arith.constant @COUNTS@ : index
      scf.for %ci = %preFirst to %countTotal step %preStride {
        memref.store %zero32, %Counts[%ci] : memref<@COUNTS@xi32>
      })mlir";

/// The preprocess thread's index in the whole grid (%preFirst) and the
/// grid's thread count (%preStride), for the loops that zero scratch a
/// strided part per thread (kZeroShareCounts, kZeroKvAccums).
constexpr llvm::StringLiteral kPreprocessThreadIndex = R"mlir(
      %headsPre = arith.constant @H@ : index
      %qbCount = arith.constant @QB@ : index
      %preThreads = arith.constant 128 : index
      %preStride = arith.constant @PRE_COUNT_STRIDE@ : index
      %bH = arith.muli %b, %headsPre : index
      %bHh = arith.addi %bH, %h : index
      %preBlockRow = arith.muli %bHh, %qbCount : index
      %preBlock = arith.addi %preBlockRow, %qb : index
      %preBase = arith.muli %preBlock, %preThreads : index
      %preTid = gpu.thread_id x
      %preFirst = arith.addi %preBase, %preTid : index)mlir";

/// Zeroes the split's fp32 dK/dV accumulators (kvAccumulate), flat
/// [HK * tokens * D]: every preprocess thread a strided part of them, 16
/// bytes at a time (D is a multiple of 4).
constexpr llvm::StringLiteral kZeroKvAccums = R"mlir(
      %accVectors = arith.constant @KV_ACC_VECTORS@ : index
      %accZeros = arith.constant dense<0.0> : vector<4xf32>
      %accVector = arith.constant 4 : index
      scf.for %av = %preFirst to %accVectors step %preStride {
        %ae = arith.muli %av, %accVector : index
        vector.store %accZeros, %dKacc[%ae] {alignment = 16 : i64} : memref<@KV_ACC@xf32>, vector<4xf32>
        vector.store %accZeros, %dVacc[%ae] {alignment = 16 : i64} : memref<@KV_ACC@xf32>, vector<4xf32>
      })mlir";

/// The parts of the template that depend on the memory layout (as in
/// SinkFwdKernel.cpp: BHSD, BSHD viewed as [B, S, H * D], varlen packed
/// [T, H * D] with the sequence offsets as arguments).
struct LayoutText {
  std::string qType, kvType, lseType;
  std::string sequenceArgs;
  /// After %b, %h and %hk: %seqQ, %skv (this sequence's lengths), %qStart,
  /// %kStart (its first rows in the q and kv row coordinates of the
  /// buffers), %hD, %hkD (head columns), %lastRow (the last row of LSE's
  /// row coordinate) and %past.
  std::string sequence;
  /// Indices: LSE/Delta at clamped row %r; O/dO element at row %r, column
  /// %j (or %col = %hD + %j); q-side tile at row %qRow; kv-side at %kRow.
  std::string lseAt, oAt, qTile, kvTile;
  std::string storeTerms, storeDq;
  /// The dQ kernel's dQ store: where a tensor map of dQ clips the tile
  /// (BHSD, BSHD), through the kernel's Q tile, which no GEMM reads after
  /// the loop, and one TMA store — whole lines instead of 2-byte elements 8
  /// rows apart (the forward's O gained 3-18% this way). Varlen: the
  /// register stores (storeDq, used by the dQ conversion kernel too).
  std::string storeDqFromQTile;
  /// dsinks: a head's rows come in RUN_BATCHES runs of RUN rows, BATCH_ROWS
  /// apart.
  int64_t run = 0, runBatches = 0, batchRows = 0;
  /// Rows of the shares' token coordinate.
  int64_t shareTokens = 0;
  /// --dq atomic: the fp32 dQ (q's layout).
  std::string qAccType;
  /// dsinks over the key terms: runs as above, over keys.
  int64_t keyRun = 0, keyRunBatches = 0, keyBatchRows = 0;
};

LayoutText layoutText(const rt::SinkAttentionShape &shape,
                      const std::string &type) {
  auto str = [](int64_t v) { return std::to_string(v); };
  const std::string d = str(shape.headDim);
  const std::string hd = str(shape.heads * shape.headDim);
  const std::string hkd = str(shape.kvHeads * shape.headDim);
  const std::string heads = str(shape.heads);
  LayoutText text;
  std::string columns = R"mlir(
      %cD = arith.constant )mlir" + d + R"mlir( : index
      %hD = arith.muli %h, %cD : index
      %hkD = arith.muli %hk, %cD : index)mlir";
  std::string fixedLengths =
      "      %seqQ = arith.constant " + str(shape.seqQ) +
      " : index\n      %skv = arith.constant " + str(shape.seqKv) +
      " : index\n      %qStart = arith.constant 0 : index\n      %kStart = "
      "arith.constant 0 : index\n      %lastRow = arith.constant " +
      str(shape.seqQ - 1) + " : index";
  std::string past = "\n      // Right-aligned causal: query row i sits at "
                     "key position i + past.\n      %past = arith.subi %skv, "
                     "%seqQ : index";
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
  case rt::AttentionLayout::BSHD: {
    bool bhsd = shape.layout == rt::AttentionLayout::BHSD;
    if (bhsd) {
      text.qType = "memref<" + str(shape.batch) + "x" + heads + "x" +
                   str(shape.seqQ) + "x" + d + "x" + type + ">";
      text.kvType = "memref<" + str(shape.batch) + "x" + str(shape.kvHeads) +
                    "x" + str(shape.seqKv) + "x" + d + "x" + type + ">";
      text.oAt = "%b, %h, %r, %j";
      text.qTile = "%b, %h, %qRow, %c0";
      text.kvTile = "%b, %hk, %kRow, %c0";
    } else {
      text.qType = "memref<" + str(shape.batch) + "x" + str(shape.seqQ) +
                   "x" + hd + "x" + type + ">";
      text.kvType = "memref<" + str(shape.batch) + "x" + str(shape.seqKv) +
                    "x" + hkd + "x" + type + ">";
      text.oAt = "%b, %r, %col";
      text.qTile = "%b, %qRow, %hD";
      text.kvTile = "%b, %kRow, %hkD";
    }
    text.lseType = "memref<" + str(shape.batch) + "x" + heads + "x" +
                   str(shape.seqQ) + "xf32>";
    text.sequence = fixedLengths + columns + past;
    // Stores at the tiles' own indices: the rows start at 0 (%qRow = %m0,
    // %kRow = %n0).
    text.storeDq = "      tile.store %dq16, %dQ[" + text.qTile + "] : !acc16, !q";
    text.storeDqFromQTile =
        "      tile.store %dq16, %sQ[%c0, %c0] : !acc16, !tileT\n"
        "      tile.copy %sQ, %dQ[" + text.qTile + "] : !tileT, !q";
    text.lseAt = "%b, %h, %r";
    text.storeTerms = "      tile.store %term, %Terms[%b, %h, %m0] : !row, !lse";
    text.run = shape.seqQ;
    text.runBatches = shape.batch;
    text.batchRows = shape.heads * shape.seqQ;
    text.shareTokens = shape.batch * shape.seqKv;
    text.qAccType = bhsd ? "memref<" + str(shape.batch) + "x" + heads + "x" +
                               str(shape.seqQ) + "x" + d + "xf32>"
                         : "memref<" + str(shape.batch) + "x" +
                               str(shape.seqQ) + "x" + hd + "xf32>";
    text.keyRun = shape.seqKv;
    text.keyRunBatches = shape.batch;
    text.keyBatchRows = shape.heads * shape.seqKv;
    break;
  }
  case rt::AttentionLayout::Varlen: {
    const std::string tq = str(shape.tokensQ()), tk = str(shape.tokensKv());
    const std::string offsets = "memref<" + str(shape.batch + 1) + "xi32>";
    text.qType = "memref<" + tq + "x" + hd + "x" + type + ">";
    text.kvType = "memref<" + tk + "x" + hkd + "x" + type + ">";
    text.lseType = "memref<" + heads + "x" + tq + "xf32>";
    text.sequenceArgs = ", %cuQ: " + offsets + ", %cuK: " + offsets;
    text.sequence = kernels::sequenceBoundsText(offsets) + columns +
                    "\n      %lastRow = arith.constant " +
                    str(shape.tokensQ() - 1) + " : index" + past;
    text.lseAt = "%h, %r";
    text.oAt = "%r, %col";
    text.qTile = "%qRow, %hD";
    text.kvTile = "%kRow, %hkD";
    // Stores go through views that end with the sequence.
    const std::string qView = "memref<?x" + hd + "x" + type + ", strided<[" +
                              hd + ", 1], offset: ?>>";
    const std::string rowsView = "memref<" + heads + "x?xf32, strided<[" + tq +
                                 ", 1], offset: ?>>";
    text.storeTerms =
        "      %termsSeq = memref.subview %Terms[0, %qStart] [" + heads +
        ", %seqQ] [1, 1] : !lse to " + rowsView +
        "\n      tile.store %term, %termsSeq[%h, %m0] : !row, " + rowsView;
    text.storeDq = "      %dqSeq = memref.subview %dQ[%qStart, 0] [%seqQ, " + hd +
                   "] [1, 1] : !q to " + qView +
                   "\n      tile.store %dq16, %dqSeq[%m0, %hD] : !acc16, " + qView;
    text.storeDqFromQTile = text.storeDq;
    text.run = shape.tokensQ();
    text.runBatches = 1;
    text.batchRows = 0;
    text.shareTokens = shape.tokensKv();
    text.qAccType = "memref<" + tq + "x" + hd + "xf32>";
    text.keyRun = shape.tokensKv();
    text.keyRunBatches = 1;
    text.keyBatchRows = 0;
    break;
  }
  }
  return text;
}

std::string f32Text(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9e", double(float(value)));
  return text;
}
} // namespace

FailureOr<KernelModule> kernels::buildSinkBwd(MLIRContext &context,
                                              const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "sink-bwd: ";
  };
  if (config.schedule == "overlap")
    return fail() << "--schedule overlap applies to sink-fwd only (sink-bwd: "
                     "auto or plain)";
  // Forms removed because they never won a measured cell (docs/design.md,
  // "Backward forms kept (issue 44)"): each refusal names what to use.
  if (config.schedule == "ws")
    return fail() << "--schedule ws was removed from sink-bwd (a TMA producer "
                     "for one consumer warpgroup: slower than plain in every "
                     "measured cell); use --schedule auto or plain, and "
                     "--dq-warpgroups 2 --dkdv-warpgroups 2 (--head-dim 128) "
                     "for a producer feeding shared tiles";
  // The forward's checks (dtype, head dim, shapes, window, stages) apply,
  // reported as sink-bwd's.
  FailureOr<KernelModule> forward = buildSinkFwd(context, config);
  if (failed(forward))
    return failure();
  rt::SinkAttentionShape shape = sinkAttentionShape(config);

  auto str = [](int64_t v) { return std::to_string(v); };
  std::string type = mlirTypeName(config.dtype);
  const std::string d = str(shape.headDim);
  bool hasWindow = config.window > 0;
  FailureOr<SinkBwdForm> resolved =
      SinkBwdForm::resolve(context, config, shape);
  if (failed(resolved))
    return failure();
  const SinkBwdForm &form = *resolved;
  const bool atomicDq = form.atomicDq;
  const bool dqSplitDeferred = form.dqSplitDeferred;
  const int64_t dqWarpgroups = form.dqWarpgroups;
  const int64_t dkdvWarpgroups = form.dkdvWarpgroups;
  const int64_t dkdvBlockKeys = kBlock * dkdvWarpgroups;
  const uint32_t dkdvBlocks =
      uint32_t((shape.seqKv + dkdvBlockKeys - 1) / dkdvBlockKeys);
  const int64_t dqBlockRows = kBlock * dqWarpgroups;
  const uint32_t dqBlocks =
      uint32_t((shape.seqQ + dqBlockRows - 1) / dqBlockRows);
  const uint32_t queryBlocks = uint32_t((shape.seqQ + kBlock - 1) / kBlock);
  const uint32_t keyBlocks = uint32_t((shape.seqKv + kBlock - 1) / kBlock);
  // The sink terms: per query row (separate) or per key row (atomic).
  const std::vector<uint64_t> termDims =
      atomicDq ? shape.keyRowDims() : shape.lseDims();
  const int64_t statsRows = form.statsRows;
  const int64_t group = form.group;
  const bool shares = form.shares;
  const bool dkdvShared = form.dkdvShared();
  const bool sumInKernel = form.sumInKernel;
  const bool kvAccumulate = form.kvAccumulate;
  const int64_t shareCounts = shape.batch * shape.kvHeads * int64_t(keyBlocks);
  LayoutText layout = layoutText(shape, type);
  const int64_t kvAccElements =
      shape.kvHeads * layout.shareTokens * shape.headDim;
  const bool sinksInDq = form.sinksInDq;
  const int64_t dqBlocksPerHead = shape.batch * int64_t(dqBlocks);
  // The dQ kernel's rows: one warpgroup's 64 from %m0, or a block of
  // dqBlockRows from %mBlock shared by its warpgroups, each reading its 64
  // rows of the Q and dO tiles through subviews.
  const bool dqShared = form.dqShared();
  std::string dqRows = "      %m0 = arith.muli %qb, %c64 : index";
  std::string dqQTile = "@Q_TILE@", dqSubviews, dqAttributes;
  if (dqShared) {
    dqRows = "      %cBlockRows = arith.constant " + str(dqBlockRows) +
             " : index\n"
             "      %mBlock = arith.muli %qb, %cBlockRows : index\n" +
             kernels::kWarpgroupIndex +
             "      %wgRow = arith.muli %wg, %c64 : index\n"
             "      %m0 = arith.addi %mBlock, %wgRow : index\n"
             "      %qRowBlock = arith.addi %qStart, %mBlock : index";
    dqQTile = layout.qTile;
    replaceAll(dqQTile, "%qRow", "%qRowBlock");
    dqSubviews = "\n      %sQw = memref.subview %sQ[%wgRow, 0] [64, " + d +
                 "] [1, 1] : !tileDqQ to !tileQw\n      %sdOw = memref.subview "
                 "%sdO[%wgRow, 0] [64, " + d + "] [1, 1] : !tileDqQ to !tileQw";
    dqAttributes = sharedBlockAttributes(dqWarpgroups);
  }
  const bool kvInRegisters = form.kvInRegisters;
  // Substituted in two rounds: the shared pieces first (they hold
  // placeholders of their own).
  std::string text = kSinkBwdTemplate.str();
  for (auto [key, value] :
       {std::pair<std::string, std::string>{
            "@DQ_KERNEL@", atomicDq ? kDqConvertKernel.str() : kDqKernel.str()},
        {"@PRE_ATOMIC@", atomicDq ? kPreAtomic.str() : ""},
        {"@PRE_ATOMIC_ARGS@",
         atomicDq ? ", %sinks: memref<@H@x@ST@>, %dQacc: !qacc"
                  : ""},
        {"@DQ_ROWS@", dqRows},
        {"@DQ_Q_TILE@", dqQTile},
        {"@DQ_SUBVIEWS@", dqSubviews},
        // Shared-tile kernels take turns for their first GEMM of an
        // iteration (kernels::pingPongInit), so that their warpgroups do
        // not run their maps and GEMMs in step.
        {"@DQ_PINGPONG_INIT@",
         dqShared ? kernels::pingPongInit(dqWarpgroups) : ""},
        {"@DQ_PINGPONG_SYNC@", dqShared ? kernels::kPingPongSync : ""},
        {"@DQ_PINGPONG_ARRIVE@", dqShared ? kernels::kPingPongArrive : ""},
        {"@DQ_QW@", dqShared ? "%sQw" : "%sQ"},
        {"@DQ_DOW@", dqShared ? "%sdOw" : "%sdO"},
        {"@DQ_QW_TYPE@", dqShared ? "!tileQw" : "!tileT"},
        {"@DQ_BLOCK_FIRST_ROW@", dqShared ? "%mBlock" : "%m0"},
        {"@DQ_BLOCK_ROWS@", dqShared ? "%cBlockRows" : "%c64"},
        // One warpgroup stores dQ through its Q tile and TMA; shared
        // tiles take the register store (a fragment's store into a
        // swizzled tile must cover it).
        {"@DQ_STORE@", dqShared ? "@STORE_DQ@" : "@STORE_DQ_FROM_Q_TILE@"},
        {"@DQ_ATTRIBUTES@", dqAttributes},
        // Σ_j P ⊙ dP: elementwise over the key blocks (one FMA per element,
        // a 64x64 fragment), or, with shared tiles, as eight partial
        // columns per row (tile.partial_reduce: 4 registers a thread
        // instead of 32, which the shared-tile kernels' registers need).
        {"@DQ_PDP_ZERO@",
         dqShared ? "      %pdpZero = tile.fill %zero : !rowParts" : ""},
        {"@DQ_PDP_INIT@", dqShared ? "%pdpZero" : "%sZero"},
        {"@DQ_PDP_TYPE@", dqShared ? "!rowParts" : "!S"},
        {"@DQ_PDP_UPDATE@", dqShared ? kDqPdpPartial.str() : kDqPdpFull.str()},
        {"@QUERY_BLOCK_PROLOGUE@", kQueryBlockPrologue.str()},
        {"@CONSTANTS@", kConstants.str()},
        {"@BLOCK_MASK@", blockMaskText()},
        {"@DQ_P_MAP@", dqProbabilities()},
        {"@SEQUENCE@", layout.sequence},
        // --dq atomic sums dsinks in its convert kernel (kDqConvertKernel).
        {"@SINKS_KERNEL@", sinksInDq || atomicDq ? "" : kSinksKernel.str()},
        {"@DQ_SINK_SUM@", sinksInDq ? kSinkSumInDq.str() : ""},
        {"@SINK_LAST_ARRIVAL@",
         lastArrivalText("sink", "%SinkCounts", "memref<@H@xi32>", "%h",
                         "@DQ_BLOCKS_PER_HEAD_MINUS_1@")},
        {"@DQ_SINKS_ARGS@",
         sinksInDq ? ", %dsinks: memref<@H@xf32>, %SinkCounts: memref<@H@xi32>"
                   : ""},
        {"@PRE_SINK_COUNTS_ARG@",
         sinksInDq ? ", %SinkCounts: memref<@H@xi32>" : ""},
        {"@PRE_ZERO_SINK_COUNTS@", sinksInDq ? kZeroSinkCounts.str() : ""},
        // After the two above that hold it.
        {"@HEAD_SINK_SUM@",
         headSinkSumText(sinksInDq ? "%termsFlat" : "%Terms")},
        {"@PRE_ROWS@", preprocessRowsText(layout.oAt, layout.lseAt,
                                          shape.headDim, type, atomicDq)},
        {"@PRE_DQ_ZEROS@",
         atomicDq ? "\n      %dqZeros = arith.constant dense<0.0> : vector<8xf32>"
                  : ""},
        {"@CONVERT_ROWS@", dqConvertRowsText(layout.oAt, shape.headDim, type)},
        {"@ROW_GROUPS@", kRowGroups.str()},
        {"@ROW_LANES@", std::to_string(shape.headDim / 8)},
        {"@ROWS_PER_STEP@",
         std::to_string(256 / shape.headDim * kPreprocessLoads)},
        {"@PRE_KV_ACC_ARGS@",
         kvAccumulate
             ? ", %dKacc: memref<@KV_ACC@xf32>, %dVacc: memref<@KV_ACC@xf32>"
             : ""},
        {"@PRE_ZERO_KV_ACCS@", kvAccumulate ? kZeroKvAccums.str() : ""},
        {"@PRE_THREAD_INDEX@",
         sumInKernel || kvAccumulate ? kPreprocessThreadIndex.str() : ""},
        {"@PRE_COUNTS_ARG@", sumInKernel ? ", %Counts: memref<@COUNTS@xi32>" : ""},
        {"@PRE_ZERO_COUNTS@", sumInKernel ? kZeroShareCounts.str() : ""},
        // Last: the pieces above use it too.
        {"@CLAMPED_ROW@", kClampedRow.drop_front().str()}})
    replaceAll(text, key, value);
  OwningOpRef<ModuleOp> module = parseKernelTemplate(
      context, "sink-bwd", text,
      {{"T", type},
       {"ST", mlirTypeName(config.sinkDtype)},
       {"SINK_LOAD", sinkLoad("%sink", "%sinks", "%h", shape.heads,
                              config.sinkDtype)},
       {"H", str(shape.heads)},
       {"D", d},
       {"SQ", str(shape.seqQ)},
       {"B", str(shape.batch)},
       {"QB", str(queryBlocks)},
       {"GROUP", str(group)},
       {"KV_ACC", str(kvAccElements)},
       {"KV_ACC_VECTORS", str(kvAccElements / 4)},
       {"COUNTS", str(shareCounts)},
       {"DQ_BLOCKS_PER_HEAD_MINUS_1", str(dqBlocksPerHead - 1)},
       {"TERMS_FLAT", "memref.collapse_shape %Terms [[" +
                          std::string(termDims.size() == 3 ? "0, 1, 2" : "0, 1") +
                          "]] : !lse into !terms"},
       {"PRE_COUNT_STRIDE", str(int64_t(queryBlocks) * shape.heads * shape.batch * 128)},
       {"ROWS", str(std::accumulate(termDims.begin(), termDims.end(),
                                    int64_t(1), std::multiplies<int64_t>()))},
       {"Q_TYPE", layout.qType},
       {"KV_TYPE", layout.kvType},
       {"LSE_TYPE", layout.lseType},
       {"SEQUENCE_ARGS", layout.sequenceArgs},
       {"LSE_AT", layout.lseAt},
       {"Q_TILE", layout.qTile},
       {"KV_TILE", layout.kvTile},
       {"STORE_TERMS", layout.storeTerms},
       {"STORE_DQ", layout.storeDq},
       {"STORE_DQ_FROM_Q_TILE", layout.storeDqFromQTile},
       {"QACC_TYPE", layout.qAccType},
       {"STATS_ROWS", str(statsRows)},
       {"WINDOW", str(hasWindow ? config.window : shape.seqKv + 1)},
       // The 32-bit mask's window (keepByDistanceText): no distance reaches
       // seqKv, so a longer window is the same as seqKv + 1, which fits.
       {"WINDOW32", str(std::min<int64_t>(hasWindow ? config.window
                                                    : shape.seqKv + 1,
                                          shape.seqKv + 1))},
       {"HAS_WINDOW", hasWindow ? "true" : "false"},
       {"SCALE", f32Text(shape.scale)},
       {"SCALE_LOG2", f32Text(shape.scale * 1.4426950408889634)},
       {"STAGES", str(config.stages)},
       {"DQ_BLOCK_IDS", blockIdsText("%qb", /*heaviestLast=*/true, shape)},
       {"DQ_BLOCK_ROWS_N", str(dqBlockRows)},
       {"RUN", str(atomicDq ? layout.keyRun : layout.run)},
       {"RUN_BATCHES", str(atomicDq ? layout.keyRunBatches : layout.runBatches)},
       {"BATCH_ROWS", str(atomicDq ? layout.keyBatchRows : layout.batchRows)}});
  if (!module)
    return failure();

  // The kernels built as typed IR join the parsed ones at their place in
  // the launch order: after the kernel before them, or first.
  gpu::GPUModuleOp gpuModule = *module->getOps<gpu::GPUModuleOp>().begin();
  const SinkBwdProblem problem{config, shape, form,
                               getElementType(&context, config.dtype),
                               getElementType(&context, config.sinkDtype)};
  ImplicitLocOpBuilder builder(
      NameLoc::get(StringAttr::get(&context, "sink_bwd")), &context);
  auto buildAfter = [&](StringRef previous) {
    if (Operation *op = gpuModule.lookupSymbol(previous))
      builder.setInsertionPointAfter(op);
    else
      builder.setInsertionPointToStart(gpuModule.getBody());
  };
  buildAfter("sink_bwd_preprocess");
  buildSinkBwdDkdv(builder, problem);
  if (shares && !sumInKernel)
    buildSinkBwdDkdvSum(builder, problem);

  // The forward joins the module as the setup launch, with what its
  // kernel refers to (a persistent forward's tile lists, @sink_fwd_tiles).
  auto forwardModules = forward->module->getOps<gpu::GPUModuleOp>();
  if (forwardModules.empty() ||
      (*forwardModules.begin()).getOps<gpu::GPUFuncOp>().empty())
    return fail() << "internal error: the forward module has no kernel";
  Operation *firstOfBackward = &gpuModule.getBody()->front();
  for (Operation &op : llvm::make_early_inc_range(
           (*forwardModules.begin()).getBody()->getOperations()))
    op.moveBefore(firstOfBackward);

  rt::Bundle bundle;
  bundle.formatVersion = rt::kBundleLaunchesFormatVersion;
  bundle.kernel = "sink-bwd";
  // The forward's config, but the schedule is the backward's own (the
  // forward's, which auto may resolve differently, is kept beside it).
  bundle.config = forward->bundle.config;
  bundle.config["forward_schedule"] = bundle.config["schedule"];
  bundle.config["schedule"] = std::string("plain");
  bundle.config["dq"] = std::string(atomicDq ? "atomic" : "separate");
  if (dqShared)
    bundle.config["dq_warpgroups"] = dqWarpgroups;
  if (dkdvShared)
    bundle.config["dkdv_warpgroups"] = dkdvWarpgroups;
  if (dqSplitDeferred)
    bundle.config["dq_split"] = std::string("deferred");
  if (kvInRegisters)
    bundle.config["kv_operands"] = "registers";
  bundle.params = forward->bundle.params;
  auto u = [](int64_t v) { return uint64_t(v); };
  std::vector<uint64_t> qShape = shape.qDims(), kvShape = shape.kvDims();
  bundle.params.push_back(inputBuffer("do", config.dtype, qShape));
  bundle.params.push_back(outputBuffer("dq", config.dtype, qShape));
  bundle.params.push_back(outputBuffer("dk", config.dtype, kvShape));
  bundle.params.push_back(outputBuffer("dv", config.dtype, kvShape));
  bundle.params.push_back(outputBuffer("dsinks", rt::DType::F32, {u(shape.heads)}));
  // Scratch the kernels hand each other (outputs: the runner poisons them).
  bundle.params.push_back(outputBuffer("delta", rt::DType::F32, shape.lseDims()));
  // Each query block's -LSE·log2(e), Delta (and with --dq atomic the sink
  // weights), [B, H, query blocks, 2 or 3, 64].
  bundle.params.push_back(outputBuffer(
      "row_stats", rt::DType::F32,
      {u(shape.batch), u(shape.heads), queryBlocks, u(statsRows), u(kBlock)}));
  // Separate: a sink term per query row; atomic: per key row.
  bundle.params.push_back(outputBuffer("sink_terms", rt::DType::F32, termDims));
  if (atomicDq)
    bundle.params.push_back(outputBuffer("dq_accum", rt::DType::F32, qShape));
  std::vector<uint64_t> sharesShape = {u(shape.heads), u(layout.shareTokens),
                                       u(shape.headDim)};
  if (kvAccumulate) {
    std::vector<uint64_t> accShape = {u(shape.kvHeads), u(layout.shareTokens),
                                      u(shape.headDim)};
    bundle.params.push_back(outputBuffer("dk_accum", rt::DType::F32, accShape));
    bundle.params.push_back(outputBuffer("dv_accum", rt::DType::F32, accShape));
  } else if (shares) {
    bundle.params.push_back(outputBuffer("dk_shares", rt::DType::F32, sharesShape));
    bundle.params.push_back(outputBuffer("dv_shares", rt::DType::F32, sharesShape));
  }
  // The dK/dV kernel's share-sum counters (the preprocess kernel zeroes
  // them).
  if (sumInKernel)
    bundle.params.push_back(outputBuffer("share_counts", rt::DType::I32,
                                         {uint64_t(shareCounts)}));
  // kSinkSumInDq's counters, one per head (zeroed by the preprocess kernel).
  if (sinksInDq)
    bundle.params.push_back(
        outputBuffer("sink_counts", rt::DType::I32, {u(shape.heads)}));

  auto launch = [](std::string entry, rt::Dim3 grid, uint32_t threads,
                   std::vector<std::string> args) {
    rt::BundleLaunch l;
    l.entry = std::move(entry);
    l.grid = grid;
    l.block = {threads, 1, 1};
    l.args = std::move(args);
    return l;
  };
  rt::BundleLaunch forwardLaunch = launch(
      forward->bundle.entry, forward->bundle.grid, forward->bundle.block.x,
      rt::launchesOf(forward->bundle).front().args);
  forwardLaunch.setup = true;
  uint32_t heads = uint32_t(shape.heads), batch = uint32_t(shape.batch);
  // Varlen kernels also take the sequence offsets.
  auto withSequences = [&](std::vector<std::string> args) {
    if (shape.varlen()) {
      args.push_back("cu_seqlens_q");
      args.push_back("cu_seqlens_kv");
    }
    return args;
  };
  // In the order of the kernels' parameters.
  std::vector<std::string> preprocessArgs = {"o", "do", "delta", "lse",
                                             "row_stats"};
  if (atomicDq)
    preprocessArgs.insert(preprocessArgs.end(),
                          {"sinks", "dq_accum"});
  if (kvAccumulate)
    preprocessArgs.insert(preprocessArgs.end(), {"dk_accum", "dv_accum"});
  if (sumInKernel)
    preprocessArgs.push_back("share_counts");
  if (sinksInDq)
    preprocessArgs.push_back("sink_counts");
  bundle.launches = {
      forwardLaunch,
      launch("sink_bwd_preprocess", {queryBlocks, heads, batch}, 128,
             withSequences(preprocessArgs))};
  std::vector<std::string> dkdvArgs = {"q", "k", "v", "do", "row_stats"};
  const char *dkOut = kvAccumulate ? "dk_accum" : shares ? "dk_shares" : "dk";
  const char *dvOut = kvAccumulate ? "dv_accum" : shares ? "dv_shares" : "dv";
  dkdvArgs.insert(dkdvArgs.end(), {dkOut, dvOut});
  if (atomicDq)
    dkdvArgs.insert(dkdvArgs.end(), {"dq_accum", "sink_terms"});
  if (sumInKernel)
    dkdvArgs.insert(dkdvArgs.end(), {"dk", "dv", "share_counts"});
  bundle.launches.push_back(launch("sink_bwd_dkdv", blockGrid(dkdvBlocks, shape),
                                   uint32_t(128 * dkdvWarpgroups),
                                   withSequences(dkdvArgs)));
  rt::BundleLaunch shareSum = launch(
      "sink_bwd_dkdv_sum", {uint32_t((shape.kvElements() + 255) / 256), 1, 1},
      256, {dkOut, dvOut, "dk", "dv"});
  const bool sumAfterDq = form.sumAfterDq;
  if (atomicDq)
    bundle.launches.push_back(launch(
        "sink_bwd_dq_convert", {queryBlocks, heads, batch}, 128,
        withSequences({"dq_accum", "dq", "sink_terms", "dsinks"})));
  else {
    std::vector<std::string> dqArgs = {
        "q", "k", "v", "do", "lse", "delta", "sinks", "dq", "sink_terms"};
    if (sinksInDq)
      dqArgs.insert(dqArgs.end(), {"dsinks", "sink_counts"});
    bundle.launches.push_back(launch("sink_bwd_dq", blockGrid(dqBlocks, shape),
                                     uint32_t(128 * dqWarpgroups),
                                     withSequences(dqArgs)));
  }
  // The dK/dV and dQ kernels read only what the preprocess kernel and the
  // inputs hold and write disjoint buffers: they may run together, each
  // filling the tail of the other (−0.7 to −4.8% at the seed's S 2048 and
  // 4096, PERF.md). With --dq atomic the convert kernel reads dK/dV's dQ.
  auto overlapWithNext = [&](rt::BundleLaunch &first) {
    first.overlapsNext = true;
    bundle.formatVersion = rt::kBundleOverlapFormatVersion;
  };
  rt::BundleLaunch &beforeDq = bundle.launches[bundle.launches.size() - 2];
  if (bundle.launches.back().entry == "sink_bwd_dq" &&
      beforeDq.entry == "sink_bwd_dkdv")
    overlapWithNext(beforeDq);
  if (sumAfterDq) {
    // The split's convert kernel (dq_accum -> dq) and the share sum
    // (shares -> dK, dV) are independent too: both memory-bound, side by
    // side they share one tail and one launch gap.
    if (bundle.launches.back().entry == "sink_bwd_dq_convert")
      overlapWithNext(bundle.launches.back());
    bundle.launches.push_back(shareSum);
  }
  if (!sinksInDq && !atomicDq)
    bundle.launches.push_back(
        launch("sink_bwd_sinks", {heads, 1, 1}, 32, {"sink_terms", "dsinks"}));
  KernelModule kernel{std::move(module), std::move(bundle)};
  kernel.tileIR = true;
  return kernel;
}

// The text pieces only the backward's template still uses.
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
