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
//                         the exponentials: kDkdvFirstGemmsEarlyDp).
//                         LSE and Delta are per column here: the map bodies
//                         read them from the query block's record in shared
//                         memory, loaded (and pipelined) with Q and dO.
//                         With GQA each query
//                         head writes its fp32 share of its kv head's dK/dV,
//                         and the group's last block for those keys (an
//                         atomic counter, kSumSharesInKernel) adds the
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
//                         fixed order and a butterfly
//                         (SinkBwdDqKernel.cpp).
//   sink_bwd_sinks        (--dq-warpgroups 2) that sum, one warp per head,
//                         as a kernel of its own.
//
// preprocess, dq, dq_convert and sinks are built as typed IR
// (SinkBwdRowKernels.cpp, SinkBwdDqKernel.cpp, their layout in
// SinkBwdLayout.h); the dK/dV kernels still come from the template text
// below, parsed, and the typed kernels join them in launch order.
//
// Every output element has exactly one writer and every sum a fixed order
// (the share sum's counter only elects which block adds, not the order):
// the gradients are bit-identical from run to run.
//
// `--dq atomic` drops sink_bwd_dq: the dK/dV kernel also computes dQ's
// share of its keys and adds it to an fp32 dQ with a TMA reduce-add, and
// sums the keys' sink terms; preprocess zeros that dQ and writes the rows'
// sink weights into the blocks' records; sink_bwd_dq_convert rounds dQ
// and sums dsinks from the key terms (buildSinkBwdDqConvert). Fewer GEMMs, but
// not bit-reproducible. It takes --dkdv-warpgroups 2: the block's two
// warpgroups split dQ's share by panels of D / 2 columns (kDkdvDkDq):
// FlashAttention 3's split, level with the default at S 2048 and 6-15%
// faster from 4096 (PERF.md, session 28); with GQA it adds dK and dV into
// fp32 sums per kv head (kStoreKvAccums), which sink_bwd_dkdv_sum rounds.
// --dq-split deferred keeps the columns' panels but computes each
// iteration's dQ share from the previous query block's dSᵀ (a double
// buffer the warpgroups hand over through mbarriers, kDkdvDkDqDeferred),
// each warpgroup adding its own panel: no barrier between the warpgroups
// inside the loop, the columns' reduce traffic.
// docs/design.md, "Backward forms kept (issue 44)", lists the forms and
// why each stays.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"
#include "SinkBwdForm.h"
#include "SinkBwdLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

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
!dkv = @DKV_TYPE@
!qacc = @QACC_TYPE@
!kterms = @KTERMS_TYPE@
!tileS = memref<64x64x@T@, #gpu.address_space<workgroup>>
!tileDkdvKV = memref<@DKDV_BLOCK_KEYS_N@x@D@x@T@, #gpu.address_space<workgroup>>
!tileQw = memref<64x@D@x@T@, strided<[@D@, 1], offset: ?>, #gpu.address_space<workgroup>>
!rowParts = !tile.fragment<64x8xf32>
!tileQacc = memref<64x@D@xf32, strided<[@D@, 1], offset: ?>, #gpu.address_space<workgroup>>
!tileQacc2 = memref<2x64x@D@xf32, #gpu.address_space<workgroup>>
!tileSBlock = memref<@DKDV_BLOCK_KEYS_N@x64x@T@, #gpu.address_space<workgroup>>
!tileSw = memref<64x64x@T@, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
!tileSRing = memref<2x@DKDV_BLOCK_KEYS_N@x64x@T@, #gpu.address_space<workgroup>>
!tileSBlockView = memref<@DKDV_BLOCK_KEYS_N@x64x@T@, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
!tileQaccPanels = memref<2x2x64x@DQ_PANEL@xf32, #gpu.address_space<workgroup>>
!tileQaccPanelPair = memref<2x64x@DQ_PANEL@xf32, strided<[@DQ_PANEL_SLOT_ELEMENTS@, @DQ_PANEL@, 1], offset: ?>, #gpu.address_space<workgroup>>
!tileQaccPanel = memref<64x@DQ_PANEL@xf32, strided<[@DQ_PANEL@, 1], offset: ?>, #gpu.address_space<workgroup>>
!tileKd = memref<@DKDV_BLOCK_KEYS_N@x@DQ_PANEL@x@T@, strided<[@D@, 1], offset: ?>, #gpu.address_space<workgroup>>
!Sp = !tile.fragment<64x@DQ_PANEL@xf32>
!stats = memref<@B@x@H@x@QB@x@STATS_ROWS@x64xf32>
!tileStats = memref<@STATS_ROWS@x64xf32, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @sink_bwd {
    gpu.func @sink_bwd_dkdv(%Q: !q, %K: !kv, %V: !kv, %dO: !q, %Stats: !stats,
                            %dK: !dkv, %dV: !dkv@DKDV_ATOMIC_ARGS@@DKDV_SUM_ARGS@@SEQUENCE_ARGS@) kernel
        @DKDV_ATTRIBUTES@ {
@CONSTANTS@
@DKDV_BLOCK_IDS@
      %hk = arith.divui %h, %group : index
@SEQUENCE@
@DKDV_KEYS@
      %sK = memref.alloc() : !tileDkdvKV
      %sV = memref.alloc() : !tileDkdvKV
      %sQ = memref.alloc() : !tileT
      %sdO = memref.alloc() : !tileT
      %sStats = memref.alloc() : !tileStats
      %kRow = arith.addi %kStart, %n0 : index
      tile.copy %K[@DKDV_KV_TILE@], %sK : !kv, !tileDkdvKV
      tile.copy %V[@DKDV_KV_TILE@], %sV : !kv, !tileDkdvKV@DKDV_SUBVIEWS@@DKDV_PINGPONG_INIT@
      // Query rows that attend a key of the block: i + past >= n0 (causal)
      // and, with a window, i + past < n0 + 63 + W (n0 and 63: the
      // block's first key and its last's offset).
      %firstRowRaw = arith.subi @DKDV_BLOCK_FIRST_KEY@, %past : index
      %firstRow = arith.maxsi %firstRowRaw, %c0 : index
      %loQ = arith.divui %firstRow, %c64 : index
      %endRowBlock = arith.addi %firstRowRaw, @DKDV_BLOCK_LAST_KEY_OFFSET@ : index
      %endRowWindow = arith.addi %endRowBlock, %window : index
      %endRowPos = arith.maxsi %endRowWindow, %c0 : index
      %endRowIn = arith.minsi %endRowPos, %seqQ : index
      %endRow = arith.select %hasWindow, %endRowIn, %seqQ : index
      %hiQ = arith.ceildivui %endRow, %c64 : index
      %hiQLo = arith.maxsi %hiQ, %loQ : index
      // Blocks past the end of their sequence (varlen) do no work.
      %live = arith.cmpi slt, @DKDV_BLOCK_FIRST_KEY@, %skv : index
      %hiBlocks = arith.select %live, %hiQLo, %loQ : index
      %accZero = tile.fill %zero : !acc
      %sZero = tile.fill %zero : !S
@DKDV_ATOMIC_PRE@
      %res:@DKDV_RESULTS@ = scf.for %qBlock = %loQ to %hiBlocks step %c1
          iter_args(%dk = %accZero, %dv = %accZero@DKDV_ITER_ARGS@) -> (!acc, !acc@DKDV_ITER_TYPES@) {
        %m0 = arith.muli %qBlock, %c64 : index
        %qRow = arith.addi %qStart, %m0 : index
        tile.copy %Q[@Q_TILE@], %sQ : !q, !tileT
        tile.copy %dO[@Q_TILE@], %sdO : !q, !tileT
        tile.copy %Stats[%b, %h, %qBlock, %c0, %c0], %sStats : !stats, !tileStats@DKDV_PINGPONG_SYNC@
@DKDV_FIRST_GEMMS@
        // Only blocks on the diagonal, at the window's edge or with rows
        // past the sequence's end need the per-element mask (blockMaskText).
        %rowsFirstPos = arith.addi %m0, %past : index
        %blockLastRow = arith.addi %m0, %c63 : index
        %rowsPastEnd = arith.cmpi sge, %blockLastRow, %seqQ : index
@BLOCK_MASK@
        %needsMask = arith.ori %needsMaskAt, %rowsPastEnd : i1
        %distanceBase = arith.subi %rowsFirstPos, %n0 : index
        %rowsLeft = arith.subi %seqQ, %m0 : index
        %rowsLeft32 = arith.index_cast %rowsLeft : index to i32
        // Pᵀ = exp2(Sᵀ·scale·log2(e) - LSE·log2(e)) (dkdvProbabilities).
@DKDV_P_MAP@
        %pT16 = tile.cast %pT : !S to !P
@DKDV_SECOND_GEMMS@
@DKDV_DS_MAP@
        %dsT16 = tile.cast %dsT : !S to !P
@DKDV_DK_AND_DQ@
        scf.yield %dkNew, %dvNew@DKDV_YIELD@
      } {tile.num_stages = @STAGES@}@DKDV_AFTER_LOOP@
@DKDV_STORE@
@DKDV_SUM_IN_KERNEL@
@DKDV_ATOMIC_POST@
      gpu.return
    }
@DKDV_SUM@
  }
}
)mlir";

/// The dK/dV loop's GEMMs around Pᵀ's exponentials (kSinkBwdTemplate's
/// @DKDV_FIRST_GEMMS@ and @DKDV_SECOND_GEMMS@; kDvWait waits for dV
/// in @DKDV_DK_AND_DQ@). Early dPᵀ:
/// Sᵀ and dPᵀ are issued together, so dPᵀ's wgmma runs under the
/// exponentials and dV's under dSᵀ's map (the dQ loop issues S and dP the
/// same way): 1.2-5.3% off every seed cell's backward (docs/PERF.md,
/// session 23). It keeps dPᵀ's 32 accumulator
/// registers live across the exponentials, so the kernels that were near
/// the limit take the late order: FlashAttention 3's split (--dq atomic
/// --dkdv-warpgroups 2: ptxas spilled 144 bytes against 12, and it ran
/// 19-23% slower; in session 27 60 bytes and 0.8-1.7% slower; in session
/// 30, with the 32-bit mask, 36 bytes and 1.8-6.5% slower).
constexpr llvm::StringLiteral kDkdvFirstGemmsEarlyDp = R"mlir(
        %sTAsync = tile.gemm @DKDV_KW@, %sQ, %sZero {transpose_b, async} : @DKDV_KW_TYPE@, !tileT, !S
        %dpTAsync = tile.gemm @DKDV_VW@, %sdO, %sZero {transpose_b, async} : @DKDV_KW_TYPE@, !tileT, !S@DKDV_PINGPONG_ARRIVE@
        %sT = tile.gemm_wait %sTAsync pending 1 : !S)mlir";
constexpr llvm::StringLiteral kDkdvSecondGemmsEarlyDp = R"mlir(
        %dvAsync = tile.gemm %pT16, %sdO, %dv {async} : !P, !tileT, !acc
        %dpT = tile.gemm_wait %dpTAsync pending 1 : !S)mlir";
/// dV's wait after the default's synchronous dK (kDkdvDk) under early dPᵀ
/// (the atomic forms wait for it before dQ's share, kDkdvDkDq).
constexpr llvm::StringLiteral kDvWait = R"mlir(
        %dvNew = tile.gemm_wait %dvAsync pending 0 : !acc)mlir";
constexpr llvm::StringLiteral kDkdvFirstGemmsLateDp = R"mlir(
        %sT = tile.gemm @DKDV_KW@, %sQ, %sZero {transpose_b} : @DKDV_KW_TYPE@, !tileT, !S@DKDV_PINGPONG_ARRIVE@)mlir";
/// The split at D 128 (late dPᵀ): dPᵀ issued before dV, both async, so that
/// dV's wgmma runs under dSᵀ's map as under early dPᵀ, and is waited for
/// before dQ's share (kDkdvDkDq): 0.8-1.7% off the
/// split at S 2k-16k (then with a 40-byte spill of loop invariants; 4 since
/// the mask is computed in 32 bits, keepByDistanceText). dV first and one
/// wait for both was 0.8-3.5% slower: dPᵀ's wait then covers dV's wgmma
/// too (docs/PERF.md, session 30, call A).
constexpr llvm::StringLiteral kDkdvSecondGemmsLateDpAsyncDv = R"mlir(
        %dpTAsync = tile.gemm @DKDV_VW@, %sdO, %sZero {transpose_b, async} : @DKDV_KW_TYPE@, !tileT, !S
        %dvAsync = tile.gemm %pT16, %sdO, %dv {async} : !P, !tileT, !acc
        %dpT = tile.gemm_wait %dpTAsync pending 1 : !S)mlir";

/// The election of the last block to arrive (kSumSharesInKernel; the
/// typed form is buildLastArrival): each block makes its global writes visible (a GPU-scope
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

/// dSᵀ = Pᵀ ⊙ (dPᵀ - Delta) (kSinkBwdTemplate's @DKDV_DS_MAP@; with --dq
/// atomic after the keys' sink terms).
constexpr llvm::StringLiteral kDkdvDsMap = R"mlir(
        %dsT = tile.map (%pT, %dpT) : (!S, !S) -> !S {
        ^bb0(%jj: index, %ii: index, %pv: f32, %dp: f32):
          %delta = memref.load %sStats[%c1, %ii] : !tileStats
          %d = arith.subf %dp, %delta : f32
          %v = arith.mulf %pv, %d : f32
          tile.yield %v : f32
        })mlir";

/// `--dq atomic`, in the dK/dV loop once Pᵀ and dPᵀ are known: the keys'
/// sink terms: for key j,
/// -Σ_i w_i P_ij dP_ij over the block's query rows i (w_i = exp(sink -
/// LSE_i)); dsink_h is their sum over the head's keys, which equals the
/// separate mode's sum over rows of -w_i Σ_j P_ij dP_ij. Each thread
/// keeps its partial sums across the loop (%term: !rowParts, reduced to
/// the keys once, after it: kDkdvTermsByKey) and dSᵀ comes from the same
/// P ⊙ dP, Pᵀ ⊙ dPᵀ - Pᵀ · Delta in one FMA (docs/PERF.md, session 26).
constexpr llvm::StringLiteral kDkdvAtomicTermsPartial = R"mlir(
        %pdpT = tile.map (%pT, %dpT) : (!S, !S) -> !S {
        ^bb0(%jj: index, %ii: index, %pv: f32, %dp: f32):
          %x = arith.mulf %pv, %dp : f32
          tile.yield %x : f32
        }
        %tT = tile.map (%pdpT) : (!S) -> !S {
        ^bb0(%jj: index, %ii: index, %x: f32):
          %w = memref.load %sStats[%cWeightRow, %ii] : !tileStats
          %v = arith.mulf %x, %w : f32
          tile.yield %v : f32
        }
        %tPart = tile.partial_reduce sum %tT : !S -> !rowParts
        %termNew = tile.map (%term, %tPart) : (!rowParts, !rowParts) -> !rowParts {
        ^bb0(%jj: index, %c: index, %a: f32, %t: f32):
          %v = arith.subf %a, %t : f32
          tile.yield %v : f32
        }
        %dsT = tile.map (%pT, %pdpT) : (!S, !S) -> !S {
        ^bb0(%jj: index, %ii: index, %pv: f32, %x: f32):
          %delta = memref.load %sStats[%c1, %ii] : !tileStats
          %negDelta = arith.negf %delta : f32
          %v = math.fma %pv, %negDelta, %x : f32
          tile.yield %v : f32
        })mlir";
/// After the split's loop: its keys' terms from the partial sums.
constexpr llvm::StringLiteral kDkdvTermsByKey = R"mlir(
      %keyTerms = tile.reduce sum %res#2 along 1 : !rowParts -> !row
)mlir";

/// The split's K and V rows as wgmma A fragments (SinkBwdForm::kvInRegisters),
/// read from global memory before the loop (their TMA tiles stay for dQ's
/// share), so that Sᵀ = K_w Qᵀ and dPᵀ = V_w dOᵀ read only Q and dO from
/// shared memory: half those GEMMs' shared-memory operand traffic. Rows are
/// clamped to the buffer's last (`lastRow`): keys past the sequence's end
/// read some other key, which the mask removes (blockMaskText masks every
/// block with keys past the end). `elementAt` indexes K/V at token %kr,
/// column %dd (%col = %hkD + %dd).
std::string kvRegistersText(const std::string &elementAt, int64_t lastRow) {
  std::string text = "\n      %kvLastRow = arith.constant " +
                     std::to_string(lastRow) +
                     " : index\n      %kRowW = arith.addi %kStart, %n0 : index";
  for (auto [name, buffer] : {std::pair<std::string, std::string>{"kA", "%K"},
                              {"vA", "%V"}}) {
    std::string at = elementAt;
    kernels::replaceAll(at, "%kr", "%" + name + "Row");
    kernels::replaceAll(at, "%col", "%" + name + "Col");
    kernels::replaceAll(at, "%dd", "%" + name + "Dd");
    text += "\n      %" + name + " = tile.map () : () -> !acc16 {\n"
            "      ^bb0(%" + name + "I: index, %" + name + "Dd: index):\n"
            "        %" + name + "Raw = arith.addi %kRowW, %" + name + "I : index\n"
            "        %" + name + "Row = arith.minui %" + name + "Raw, %kvLastRow : index\n"
            "        %" + name + "Col = arith.addi %hkD, %" + name + "Dd : index\n"
            "        %" + name + "V = memref.load " + buffer + "[" + at + "] : !kv\n"
            "        tile.yield %" + name + "V : @T@\n"
            "      }";
  }
  return text;
}

/// The end of the dK/dV loop body: dK += dSᵀ Q (kSinkBwdTemplate's
/// @DKDV_DK_AND_DQ@), with --dq separate synchronous (then dV's wait under
/// early dPᵀ: kDvWait).
constexpr llvm::StringLiteral kDkdvDk = R"mlir(
        %dkNew = tile.gemm %dsT16, %sQ, %dk : !P, !tileT, !acc)mlir";

/// `--dq atomic`: dK and dQ's share of the block's keys, dS K. dSᵀ goes to
/// shared memory first (dQ's GEMM reads it transposed); dQ's GEMM is
/// issued before dK's and waited for alone (`pending 1`), so the fp32
/// share's stores into shared memory and its TMA reduce-add
/// (@STORE_DQ_ADD@) run while dK's wgmma does: 1.3-3.8% off the split at
/// S 2k-16k against dK, then dQ, then the store (docs/PERF.md, session
/// 24; issuing dK first and waiting for both gained nothing: +0.2-0.8%).
/// Each of the block's two warpgroups (FlashAttention 3's split) stores
/// its rows of the block's dSᵀ tile of 128 keys and computes one panel of
/// D / 2 columns of the share over all of them, dS (64 x 128) times its
/// panel of K (128 x D / 2), into its half of the fp32 dQ tile, which the
/// block adds once (one reduce-add per 128 keys). dV's group, issued
/// before both (early dPᵀ at D 64, kDkdvSecondGemmsLateDpAsyncDv at
/// D 128), runs under dSᵀ's map and is waited for first.
constexpr llvm::StringLiteral kDkdvDkDq = R"mlir(
        tile.store %dsT16, %sdSw[%c0, %c0] : !P, !tileSw
        %dqAsync = tile.gemm %sdS, %sKd, %sZeroPanel {transpose_a, async} : !tileSBlock, !tileKd, !Sp
        %dkAsync = tile.gemm %dsT16, %sQ, %dk {async} : !P, !tileT, !acc
        %dvNew = tile.gemm_wait %dvAsync pending 2 : !acc
        %dqPart = tile.gemm_wait %dqAsync pending 1 : !Sp
@STORE_DQ_ADD@
        %dkNew = tile.gemm_wait %dkAsync pending 0 : !acc)mlir";

/// `--dq atomic`, before the dK/dV loop: the two fp32 dQ tiles the query
/// blocks alternate (@STORE_DQ_ADD@; --dq-split deferred has its own,
/// kDkdvAtomicPreDeferred, and these only for the GQA sums after the
/// loop) ...
constexpr llvm::StringLiteral kDkdvAtomicPreDqTiles = R"mlir(
      %sdQ2 = memref.alloc() : !tileQacc2)mlir";
/// ... the record's row of sink weights, the keys' sink terms.
constexpr llvm::StringLiteral kDkdvAtomicPre = R"mlir(
      %cTwo = arith.constant 2 : index
      %cWeightRow = arith.constant 2 : index
      %termZero = tile.fill %zero : !rowParts)mlir";
/// ... and the block's dSᵀ tile with each warpgroup's rows a view %sdSw,
/// and the warpgroup's panel of K %sKd (kDkdvDkDq).
constexpr llvm::StringLiteral kDkdvAtomicPreShared = R"mlir(
      %sdS = memref.alloc() : !tileSBlock
      %sdSw = memref.subview %sdS[%wgKey, 0] [64, 64] [1, 1] : !tileSBlock to !tileSw
      %cPanel = arith.constant @DQ_PANEL@ : index
      %wgCol = arith.muli %wg, %cPanel : index
      %sZeroPanel = tile.fill %zero : !Sp
      %sKd = memref.subview %sK[0, %wgCol] [@DKDV_BLOCK_KEYS_N@, @DQ_PANEL@] [1, 1] : !tileDkdvKV to !tileKd)mlir";

/// --dq-split deferred, before the loop. dSᵀ goes to a ring of two slots
/// (query block `loQ + it` in slot it % 2, both warpgroups' rows), which
/// the kernel orders itself (tile.mbarrier_ordered) with four mbarriers of
/// 256 arrivals, every thread of the two warpgroups: FULL[s] (s = 0, 1),
/// the rows are in slot s; EMPTY[s] (2 + s), both warpgroups' dQ GEMMs
/// have read them. Slot 1 starts zeroed and full (a virtual block before
/// the first) and slot 0 empty, so that both waits of iteration `it` take
/// parity (it / 2) % 2. Each warpgroup's two fp32 tiles for its panel of
/// dQ's share (%sdQpw) are its slice (tile.warpgroup_id): it stores and
/// adds them by itself.
constexpr llvm::StringLiteral kDkdvAtomicPreDeferred = R"mlir(
      %sdS2 = memref.alloc() {tile.mbarrier_ordered} : !tileSRing
      %dsBars = tile.alloc_barrier [256, 256, 256, 256] : !tile.barriers<4>
      %dsZero16 = tile.cast %sZero : !S to !P
      %sdSVirtual = memref.subview %sdS2[1, %wgKey, 0] [1, 64, 64] [1, 1, 1] : !tileSRing to !tileSw
      tile.store %dsZero16, %sdSVirtual[%c0, %c0] : !P, !tileSw
      tile.mbarrier_arrive %dsBars[%c1] : !tile.barriers<4>
      tile.mbarrier_arrive %dsBars[%cTwo] : !tile.barriers<4>
      %cPanel = arith.constant @DQ_PANEL@ : index
      %wgCol = arith.muli %wg, %cPanel : index
      %dqPanelColumn = arith.addi @DQ_FIRST_COLUMN@, %wgCol : index
      %sZeroPanel = tile.fill %zero : !Sp
      %sKd = memref.subview %sK[0, %wgCol] [@DKDV_BLOCK_KEYS_N@, @DQ_PANEL@] [1, 1] : !tileDkdvKV to !tileKd
      %sdQp = memref.alloc() : !tileQaccPanels
      %sdQpw = memref.subview %sdQp[%wg, 0, 0, 0] [1, 2, 64, @DQ_PANEL@] [1, 1, 1, 1] : !tileQaccPanels to !tileQaccPanelPair)mlir";

/// --dq-split deferred, the end of the loop body: dK, and the warpgroup's
/// panel of the previous query block's dQ share (as the columns split's,
/// dS K over all 128 keys). It waits for the other warpgroup's rows of the
/// previous block (FULL[1 − slot], stored at the end of that warpgroup's
/// previous iteration) and issues that GEMM first, then waits until slot
/// `it % 2` is free (both warpgroups' GEMMs of the last iteration have
/// read it), stores its rows of this block's dSᵀ there and arrives on
/// FULL, and issues dK; once the dQ GEMM is done it arrives on EMPTY, and
/// its fp32 panel's store and reduce-add (@STORE_DQ_ADD@,
/// deferredDqAddText; none for the virtual block) run under dK's wgmma.
/// The warpgroups never wait at a common barrier, each only for the
/// other's previous iteration: 4.4-4.9% faster than the columns split at
/// S 16k (2.4% with the dSᵀ store before the dQ GEMM; PERF.md, session 33).
constexpr llvm::StringLiteral kDkdvDkDqDeferred = R"mlir(
        %it = arith.subi %qBlock, %loQ : index
        %itPair = arith.divui %it, %cTwo : index
        %dsParity = arith.remui %itPair, %cTwo : index
        %slot = arith.remui %it, %cTwo : index
        %prevSlot = arith.subi %c1, %slot : index
        tile.mbarrier_wait_parity %dsBars[%prevSlot], %dsParity : !tile.barriers<4>
        %sdSPrev = memref.subview %sdS2[%prevSlot, 0, 0] [1, @DKDV_BLOCK_KEYS_N@, 64] [1, 1, 1] : !tileSRing to !tileSBlockView
        %dqAsync = tile.gemm %sdSPrev, %sKd, %sZeroPanel {transpose_a, async} : !tileSBlockView, !tileKd, !Sp
        %emptySlot = arith.addi %slot, %cTwo : index
        tile.mbarrier_wait_parity %dsBars[%emptySlot], %dsParity : !tile.barriers<4>
        %sdSw = memref.subview %sdS2[%slot, %wgKey, 0] [1, 64, 64] [1, 1, 1] : !tileSRing to !tileSw
        tile.store %dsT16, %sdSw[%c0, %c0] : !P, !tileSw
        tile.mbarrier_arrive %dsBars[%slot] : !tile.barriers<4>
        %dkAsync = tile.gemm %dsT16, %sQ, %dk {async} : !P, !tileT, !acc
        %dvNew = tile.gemm_wait %dvAsync pending 2 : !acc
        %dqPart = tile.gemm_wait %dqAsync pending 1 : !Sp
        %emptyPrev = arith.addi %prevSlot, %cTwo : index
        tile.mbarrier_arrive %dsBars[%emptyPrev] : !tile.barriers<4>
        %mPrev = arith.subi %m0, %c64 : index
        %hasPrev = arith.cmpi ne, %qBlock, %loQ : index
@STORE_DQ_ADD@
        %dkNew = tile.gemm_wait %dkAsync pending 0 : !acc)mlir";

/// --dq-split deferred, after the loop: the last query block's share (in
/// slot (n + 1) % 2 after n iterations, full at parity (n / 2) % 2),
/// added like the loop's (@DEFERRED_DQ_ADD@; none after a loop of no
/// iterations).
constexpr llvm::StringLiteral kDkdvDeferredDqTail = R"mlir(
      %nIt = arith.subi %hiBlocks, %loQ : index
      %nItPair = arith.divui %nIt, %cTwo : index
      %lastParity = arith.remui %nItPair, %cTwo : index
      %dqSlotLast = arith.remui %nIt, %cTwo : index
      %lastSlot = arith.subi %c1, %dqSlotLast : index
      tile.mbarrier_wait_parity %dsBars[%lastSlot], %lastParity : !tile.barriers<4>
      %sdSLast = memref.subview %sdS2[%lastSlot, 0, 0] [1, @DKDV_BLOCK_KEYS_N@, 64] [1, 1, 1] : !tileSRing to !tileSBlockView
      %dqPartLast = tile.gemm %sdSLast, %sKd, %sZeroPanel {transpose_a} : !tileSBlockView, !tileKd, !Sp
      %lastBlock = arith.subi %hiBlocks, %c1 : index
      %mLast = arith.muli %lastBlock, %c64 : index
      %hasLast = arith.cmpi ne, %nIt, %c0 : index
@DEFERRED_DQ_ADD@)mlir";

/// The index of the first column in a layout's `qTile` (its last).
llvm::StringRef qTileFirstColumn(llvm::StringRef qTile) {
  return qTile.rsplit(", ").second;
}

/// --dq-split deferred: a warpgroup's store of its panel `part` of dQ's
/// share into its fp32 tile `slot` and the tile's reduce-add into the rows
/// of the query block at offset `rowOffset` and the warpgroup's columns
/// (%dqPanelColumn, kDkdvAtomicPreDeferred), indexing dQ's fp32
/// accumulator as the layout's `qTile` does (its rows at %qRow, its first
/// column last), when `condition` holds: not for the
/// virtual block before the first (its share is 0, and its rows may lie
/// before the tensor, where a TMA reduce-add faults), nor after a loop of
/// no iterations. `pending`: the loop's stores go on reading (tile.copy's
/// `pending = 1`, two tiles alternating).
std::string deferredDqAddText(const std::string &qTile, int64_t panel,
                              const std::string &suffix,
                              const std::string &part, const std::string &slot,
                              const std::string &rowOffset,
                              const std::string &condition, bool pending) {
  const std::string tile = "%sdQPanel" + suffix, row = "%qRowDeferred" + suffix;
  std::string at = llvm::StringRef(qTile).rsplit(", ").first.str();
  kernels::replaceAll(at, "%qRow", row);
  const std::string indent = "\n        ";
  return indent.substr(1) + tile + " = memref.subview %sdQpw[" + slot +
         ", 0, 0] [1, 64, " + std::to_string(panel) +
         "] [1, 1, 1] : !tileQaccPanelPair to !tileQaccPanel" + indent + row +
         " = arith.addi %qStart, " + rowOffset + " : index" + indent +
         "scf.if " + condition + " {" + indent + "  tile.store " + part + ", " +
         tile + "[%c0, %c0] : !Sp, !tileQaccPanel" + indent + "  tile.copy " +
         tile + ", %dQacc[" + at + ", %dqPanelColumn] " +
         (pending ? "{add, pending = 1}" : "{add}") +
         " : !tileQaccPanel, !qacc" + indent + "}";
}

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

/// The dK/dV kernel's Pᵀ (transposed: key jj, query ii; -LSE·log2(e) per
/// column from the query block's record; rows past the end masked too:
/// ii < %rowsLeft32 = seqQ - m0, positive in every block the loop visits).
std::string dkdvProbabilities() {
  return blockMaskedMap("pT", "needsMask",
                        R"mlir(tile.map (%sT) : (!S) -> !S {
          ^bb0(%jj: index, %ii: index, %x: f32):)mlir",
                        R"mlir(            %offset = arith.subi %ii, %jj : index
)mlir" + keepByDistanceText("%offset", "%keepNear") + R"mlir(
            %ii32 = arith.index_cast %ii : index to i32
            %inside = arith.cmpi ult, %ii32, %rowsLeft32 : i32
            %keep = arith.andi %keepNear, %inside : i1)mlir",
                        R"mlir(            %negLse2 = memref.load %sStats[%c0, %ii] : !tileStats
            %y = math.fma %x, %scaleLog2, %negLse2 : f32
            %e = math.exp2 %y : f32)mlir");
}

/// dK/dV's sum over a GQA group: one thread per element of dK in its layout
/// (@DECODE@ finds the element's %token (b * SKV + position, or the packed
/// token), %hk and %d); the shares are [H, tokens, D] in fp32.
constexpr llvm::StringLiteral kSumShares = R"mlir(
    // dK and dV of a kv head: its query heads' shares added in head order,
    // one thread per element (@SUM_GROUP@ slabs per kv head; the split's
    // per kv head sums are one slab: kStoreKvAccums).
    gpu.func @sink_bwd_dkdv_sum(%dKp: memref<@SUM_SHARES@xf32>,
                                %dVp: memref<@SUM_SHARES@xf32>,
                                %dK: memref<@KV_ELEMENTS@x@T@>,
                                %dV: memref<@KV_ELEMENTS@x@T@>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %count = arith.constant @KV_ELEMENTS@ : index
      %cD = arith.constant @D@ : index
      %kvHeads = arith.constant @HK@ : index
      %seqKv = arith.constant @SKV@ : index
      %group = arith.constant @SUM_GROUP@ : index
      // Elements of one query head's share.
      %slab = arith.constant @SLAB@ : index
      %block = gpu.block_id x
      %tid = gpu.thread_id x
      %base = arith.muli %block, %c256 : index
      %e = arith.addi %base, %tid : index
      %inside = arith.cmpi ult, %e, %count : index
      scf.if %inside {
        %d = arith.remui %e, %cD : index
        %rows = arith.divui %e, %cD : index
@DECODE@
        %hFirst = arith.muli %hk, %group : index
        %headStart = arith.muli %hFirst, %slab : index
        %tokenStart = arith.muli %token, %cD : index
        %at0 = arith.addi %headStart, %tokenStart : index
        %first = arith.addi %at0, %d : index
        %sums:2 = scf.for %g = %c0 to %group step %c1
            iter_args(%sk = %zero, %sv = %zero) -> (f32, f32) {
          %offset = arith.muli %g, %slab : index
          %at = arith.addi %first, %offset : index
          %k = memref.load %dKp[%at] : memref<@SUM_SHARES@xf32>
          %v = memref.load %dVp[%at] : memref<@SUM_SHARES@xf32>
          %sk1 = arith.addf %sk, %k : f32
          %sv1 = arith.addf %sv, %v : f32
          scf.yield %sk1, %sv1 : f32, f32
        }
        %k16 = arith.truncf %sums#0 : f32 to @T@
        %v16 = arith.truncf %sums#1 : f32 to @T@
        memref.store %k16, %dK[%e] : memref<@KV_ELEMENTS@x@T@>
        memref.store %v16, %dV[%e] : memref<@KV_ELEMENTS@x@T@>
      }
      gpu.return
    })mlir";

/// GQA with the plain schedule: the dK/dV kernel sums the group's shares
/// itself. The last of the group's blocks for one kv head and key block to
/// finish — a counter per (sequence, kv head, key block), which the
/// preprocess kernel zeroes — adds the shares in head order (the order of
/// sink_bwd_dkdv_sum: bit-identical results). Without a window those
/// blocks run side by side (grid x: head in the group, blockGrid), so it
/// finds the shares in L2; with one (grid y: head) they are further apart
/// and may read some from HBM, as sink_bwd_dkdv_sum did. Writes are made
/// visible with a GPU-scope fence before the count (release) and read
/// after one (acquire).
constexpr llvm::StringLiteral kSumSharesInKernel = R"mlir(
      %kvHeadCountSum = arith.constant @HK@ : index
      %keyBlockCount = arith.constant @DKDV_BLOCKS@ : index
      %bHk = arith.muli %b, %kvHeadCountSum : index
      %bHkHk = arith.addi %bHk, %hk : index
      %countRow = arith.muli %bHkHk, %keyBlockCount : index
      %countAt = arith.addi %countRow, %kb : index
@SHARES_LAST_ARRIVAL@
      %sumHere = arith.andi %sumIsLast, %live : i1
      scf.if %sumHere {
        nvvm.memory.barrier #nvvm.mem_scope<gpu>
        %sumStep = arith.constant @SUM_STEP@ : index
        %tileElements = arith.constant @TILE_ELEMENTS@ : index
        %hFirst = arith.muli %hk, %group : index
        %sumVector = arith.constant @SUM_VECTOR@ : index
        %sumStart = arith.muli %sumTid, %sumVector : index
        scf.for %e = %sumStart to %tileElements step %sumStep {
@SUM_ELEMENTS@
        }
      })mlir";

/// kSumSharesInKernel's loop body: kSumVector contiguous elements of one
/// row per thread (16-byte loads of every share, all issued before the
/// first add; rows past the sequence read row %n0 and are not stored).
/// Each element's shares are added in head order, as before: with four
/// elements 128 apart per thread, its 64 loads were 4 bytes each.
/// `sharesAt` indexes a share (query head %gh, token %kr, column %dd),
/// `kvElementAt` a dK/dV element (token %kr, column %dd or %col = %hkD +
/// %dd).
constexpr int64_t kSumVector = 4;
std::string sumSharesElementsText(const std::string &sharesAt,
                                  const std::string &kvElementAt) {
  const std::string vec = "vector<" + std::to_string(kSumVector) + "xf32>";
  const std::string vec16 = "vector<" + std::to_string(kSumVector) + "x@T@>";
  return "          %rowInTile = arith.divui %e, %cD : index\n"
         "          %dd = arith.remui %e, %cD : index\n"
         "          %nRaw = arith.addi %n0, %rowInTile : index\n"
         "          %inSequence = arith.cmpi slt, %nRaw, %skv : index\n"
         "          %nSum = arith.select %inSequence, %nRaw, %n0 : index\n"
         "          %kr = arith.addi %kStart, %nSum : index\n"
         "          %col = arith.addi %hkD, %dd : index\n"
         "          %sumZeros = arith.constant dense<0.0> : " + vec + "\n"
         "          %sums:2 = scf.for %g = %c0 to %group step %c1\n"
         "              iter_args(%sk = %sumZeros, %sv = %sumZeros) -> (" + vec + ", " + vec + ") {\n"
         "            %gh = arith.addi %hFirst, %g : index\n"
         "            %k = vector.load %dK[" + sharesAt + "] {alignment = 16 : i64} : !dkv, " + vec + "\n"
         "            %v = vector.load %dV[" + sharesAt + "] {alignment = 16 : i64} : !dkv, " + vec + "\n"
         "            %skNext = arith.addf %sk, %k : " + vec + "\n"
         "            %svNext = arith.addf %sv, %v : " + vec + "\n"
         "            scf.yield %skNext, %svNext : " + vec + ", " + vec + "\n"
         "          }\n"
         "          scf.if %inSequence {\n"
         "            %k16 = arith.truncf %sums#0 : " + vec + " to " + vec16 + "\n"
         "            %v16 = arith.truncf %sums#1 : " + vec + " to " + vec16 + "\n"
         "            vector.store %k16, %dKout[" + kvElementAt + "] {alignment = 8 : i64} : !kv, " + vec16 + "\n"
         "            vector.store %v16, %dVout[" + kvElementAt + "] {alignment = 8 : i64} : !kv, " + vec16 + "\n"
         "          }";
}

/// dK's fp32 accumulator scaled (dK = scale · Σ dSᵀ Q), for GQA's fp32
/// shares and sums.
constexpr llvm::StringLiteral kDkScaled = R"mlir(
      %dkScaled = tile.map (%res#0) : (!acc) -> !acc {
      ^bb0(%i: index, %j: index, %x: f32):
        %y = arith.mulf %x, %scale : f32
        tile.yield %y : f32
      })mlir";

/// The split with GQA (kvAccumulate): after the loop each warpgroup stores
/// its 64 keys' scaled dK into its half of the block's fp32 dQ tiles (free
/// once the loop's reduce-adds have read them), and the block adds both
/// halves into the kv head's fp32 dK by TMA reduce-add; then dV the same.
/// sink_bwd_dkdv_sum rounds the sums. Writing per query head shares
/// instead (128 KB per block at D 128) and summing the group's eight in
/// that kernel took 34 us of the seed's S 2048 for 134 MB read; this
/// costs the zeroing (5 us) and four synchronous reduce-adds per block
/// (the dK/dV kernel 11 us longer), and runs the backward 0.3-1.8% faster
/// (docs/PERF.md, session 29). Adding the fragments element by element
/// (`tile.store {add}`) ran it 1-10% slower.
constexpr llvm::StringLiteral kStoreKvAccums = R"mlir(
      %sdKVw = memref.subview %sdQ2[%wg, 0, 0] [1, 64, @D@] [1, 1, 1] : !tileQacc2 to !tileQacc
      %sdKV0 = memref.subview %sdQ2[%c0, 0, 0] [1, 64, @D@] [1, 1, 1] : !tileQacc2 to !tileQacc
      %sdKV1 = memref.subview %sdQ2[%c1, 0, 0] [1, 64, @D@] [1, 1, 1] : !tileQacc2 to !tileQacc
      %accRowSecond = arith.addi @KV_ACC_ROW@, %c64 : index
      tile.store %dkScaled, %sdKVw[%c0, %c0] : !acc, !tileQacc
      tile.copy %sdKV0, %dK[@KV_ACC_AT@] {add} : !tileQacc, !dkv
      tile.copy %sdKV1, %dK[@KV_ACC_AT2@] {add} : !tileQacc, !dkv
      tile.store %res#1, %sdKVw[%c0, %c0] : !acc, !tileQacc
      tile.copy %sdKV0, %dV[@KV_ACC_AT@] {add} : !tileQacc, !dkv
      tile.copy %sdKV1, %dV[@KV_ACC_AT2@] {add} : !tileQacc, !dkv)mlir";

/// The parts of the template that depend on the memory layout (as in
/// SinkFwdKernel.cpp: BHSD, BSHD viewed as [B, S, H * D], varlen packed
/// [T, H * D] with the sequence offsets as arguments).
struct LayoutText {
  std::string qType, kvType, sharesType;
  std::string sequenceArgs;
  /// After %b, %h and %hk: %seqQ, %skv (this sequence's lengths), %qStart,
  /// %kStart (its first rows in the q and kv row coordinates of the
  /// buffers), %hD, %hkD (head columns), %lastRow (the last row of LSE's
  /// row coordinate) and %past.
  std::string sequence;
  /// Indices: q-side tile at row %qRow; kv-side at %kRow.
  std::string qTile, kvTile;
  std::string storeDkdv, storeShares;
  /// The split with GQA (kvAccumulate, kStoreKvAccums): dK/dV's fp32 sums
  /// per kv head, [HK, tokens, D] (tokens as in the shares), indexed at the
  /// block's first key (kvAccAt, whose row is kvAccRow; kStoreKvAccums
  /// indexes the second warpgroup's keys with that row 64 further).
  std::string kvAccType, kvAccRow, kvAccAt;
  /// MHA's dK/dV by register stores (--dkdv-warpgroups > 1: the K and V
  /// tiles hold more keys than one warpgroup's fragment covers).
  std::string storeDkdvFromRegisters;
  /// kSumSharesInKernel: a share element (query head %gh, token %kr,
  /// column %dd) and a dK/dV element (token %kr, column %col = %hkD + %dd).
  std::string sharesAt, kvElementAt;
  /// dkdv_sum: %token and %hk from %rows (element index / D).
  std::string decode;
  /// Rows of the shares' token coordinate.
  int64_t shareTokens = 0;
  /// --dq atomic: the fp32 dQ (q's layout) and the per-key sink terms
  /// ([B, H, SKV], varlen [H, T]); the dK/dV kernel's atomic add of its
  /// warpgroup's panel of dQ, and its store of the key terms.
  std::string qAccType, keyTermsType;
  std::string storeDqAdd, storeKeyTerms;
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
  // GQA shares of dK and dV, fp32 [H, tokens, D].
  const std::string dkShare = kDkScaled.str();
  std::string dkGradient = R"mlir(
      %dk16 = tile.map (%res#0) : (!acc) -> !acc16 {
      ^bb0(%i: index, %j: index, %x: f32):
        %y = arith.mulf %x, %scale : f32
        %v = arith.truncf %y : f32 to @T@
        tile.yield %v : @T@
      }
      %dv16 = tile.cast %res#1 : !acc to !acc16)mlir";
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
  case rt::AttentionLayout::BSHD: {
    bool bhsd = shape.layout == rt::AttentionLayout::BHSD;
    if (bhsd) {
      text.qType = "memref<" + str(shape.batch) + "x" + heads + "x" +
                   str(shape.seqQ) + "x" + d + "x" + type + ">";
      text.kvType = "memref<" + str(shape.batch) + "x" + str(shape.kvHeads) +
                    "x" + str(shape.seqKv) + "x" + d + "x" + type + ">";
      text.kvElementAt = "%b, %hk, %kr, %dd";
      text.qTile = "%b, %h, %qRow, %c0";
      text.kvTile = "%b, %hk, %kRow, %c0";
      // dK element ((b * HK + hk) * SKV + n) * D + d.
      text.decode = R"mlir(
        %n = arith.remui %rows, %seqKv : index
        %bhk = arith.divui %rows, %seqKv : index
        %hk = arith.remui %bhk, %kvHeads : index
        %b = arith.divui %bhk, %kvHeads : index
        %bTokens = arith.muli %b, %seqKv : index
        %token = arith.addi %bTokens, %n : index)mlir";
    } else {
      text.qType = "memref<" + str(shape.batch) + "x" + str(shape.seqQ) +
                   "x" + hd + "x" + type + ">";
      text.kvType = "memref<" + str(shape.batch) + "x" + str(shape.seqKv) +
                    "x" + hkd + "x" + type + ">";
      text.kvElementAt = "%b, %kr, %col";
      text.qTile = "%b, %qRow, %hD";
      text.kvTile = "%b, %kRow, %hkD";
      // dK element ((b * SKV + n) * HK + hk) * D + d.
      text.decode = R"mlir(
        %hk = arith.remui %rows, %kvHeads : index
        %token = arith.divui %rows, %kvHeads : index)mlir";
    }
    text.sequence = fixedLengths + columns + past;
    // Stores at the tiles' own indices: the rows start at 0 (%qRow = %m0,
    // %kRow = %n0).
    text.storeDkdv =
        dkGradient +
        "\n      tile.store %dk16, %sK[%c0, %c0] : !acc16, !tileT"
        "\n      tile.copy %sK, %dK[" + text.kvTile + "] : !tileT, !dkv"
        "\n      tile.store %dv16, %sV[%c0, %c0] : !acc16, !tileT"
        "\n      tile.copy %sV, %dV[" + text.kvTile + "] : !tileT, !dkv";
    text.storeDkdvFromRegisters =
        dkGradient + "\n      tile.store %dk16, %dK[" + text.kvTile +
        "] : !acc16, !dkv\n      tile.store %dv16, %dV[" + text.kvTile +
        "] : !acc16, !dkv";
    // The shares as [H, B, SKV, D]: a tile overhanging its sequence is cut
    // at SKV instead of running into the next batch's rows.
    text.sharesAt = "%gh, %b, %kr, %dd";
    text.sharesType = "memref<" + heads + "x" + str(shape.batch) + "x" +
                      str(shape.seqKv) + "x" + d + "xf32>";
    text.storeShares = dkShare +
                       "\n      tile.store %dkScaled, %dK[%h, %b, %n0, %c0] "
                       ": !acc, !dkv\n      tile.store %res#1, %dV[%h, %b, "
                       "%n0, %c0] : !acc, !dkv";
    text.kvAccType = "memref<" + str(shape.kvHeads) + "x" + str(shape.batch) +
                     "x" + str(shape.seqKv) + "x" + d + "xf32>";
    text.kvAccRow = "%nBlock";
    text.kvAccAt = "%hk, %b, %nBlock, %c0";
    text.shareTokens = shape.batch * shape.seqKv;
    text.qAccType = bhsd ? "memref<" + str(shape.batch) + "x" + heads + "x" +
                               str(shape.seqQ) + "x" + d + "xf32>"
                         : "memref<" + str(shape.batch) + "x" +
                               str(shape.seqQ) + "x" + hd + "xf32>";
    text.keyTermsType = "memref<" + str(shape.batch) + "x" + heads + "x" +
                        str(shape.seqKv) + "xf32>";
    text.storeDqAdd = "        tile.store %dqPart, %sdQ[%c0, %wgCol] : !Sp, !tileQacc\n"
                      "        tile.copy %sdQ, %dQacc[" + text.qTile +
                      "] {add, pending = 1} : !tileQacc, !qacc";
    text.storeKeyTerms =
        "      tile.store %keyTerms, %TermsK[%b, %h, %n0] : !row, !kterms";
    break;
  }
  case rt::AttentionLayout::Varlen: {
    const std::string tq = str(shape.tokensQ()), tk = str(shape.tokensKv());
    const std::string offsets = "memref<" + str(shape.batch + 1) + "xi32>";
    text.qType = "memref<" + tq + "x" + hd + "x" + type + ">";
    text.kvType = "memref<" + tk + "x" + hkd + "x" + type + ">";
    text.sequenceArgs = ", %cuQ: " + offsets + ", %cuK: " + offsets;
    text.sequence = kernels::sequenceBoundsText(offsets) + columns +
                    "\n      %lastRow = arith.constant " +
                    str(shape.tokensQ() - 1) + " : index" + past;
    text.kvElementAt = "%kr, %col";
    text.sharesAt = "%gh, %kr, %dd";
    text.qTile = "%qRow, %hD";
    text.kvTile = "%kRow, %hkD";
    // Stores go through views that end with the sequence.
    const std::string kvView = "memref<?x" + hkd + "x" + type + ", strided<[" +
                               hkd + ", 1], offset: ?>>";
    const std::string sharesView = "memref<" + heads + "x?x" + d +
                                   "xf32, strided<[" + str(shape.tokensKv() * shape.headDim) +
                                   ", " + d + ", 1], offset: ?>>";
    text.storeDkdv =
        dkGradient + "\n      %dkSeq = memref.subview %dK[%kStart, 0] [%skv, " +
        hkd + "] [1, 1] : !dkv to " + kvView +
        "\n      tile.store %dk16, %dkSeq[%n0, %hkD] : !acc16, " + kvView +
        "\n      %dvSeq = memref.subview %dV[%kStart, 0] [%skv, " + hkd +
        "] [1, 1] : !dkv to " + kvView +
        "\n      tile.store %dv16, %dvSeq[%n0, %hkD] : !acc16, " + kvView;
    text.storeDkdvFromRegisters = text.storeDkdv;
    text.sharesType = "memref<" + heads + "x" + tk + "x" + d + "xf32>";
    text.storeShares =
        dkShare + "\n      %dkSeq = memref.subview %dK[0, %kStart, 0] [" +
        heads + ", %skv, " + d + "] [1, 1, 1] : !dkv to " + sharesView +
        "\n      tile.store %dkScaled, %dkSeq[%h, %n0, %c0] : !acc, " +
        sharesView + "\n      %dvSeq = memref.subview %dV[0, %kStart, 0] [" +
        heads + ", %skv, " + d + "] [1, 1, 1] : !dkv to " + sharesView +
        "\n      tile.store %res#1, %dvSeq[%h, %n0, %c0] : !acc, " + sharesView;
    text.kvAccType = "memref<" + str(shape.kvHeads) + "x" + tk + "x" + d + "xf32>";
    text.kvAccRow = "%kRowBlock";
    text.kvAccAt = "%hk, %kRowBlock, %c0";
    // dK element (t * HK + hk) * D + d.
    text.decode = R"mlir(
        %hk = arith.remui %rows, %kvHeads : index
        %token = arith.divui %rows, %kvHeads : index)mlir";
    text.shareTokens = shape.tokensKv();
    text.qAccType = "memref<" + tq + "x" + hd + "xf32>";
    text.keyTermsType = "memref<" + heads + "x" + tk + "xf32>";
    // TMA adds into the whole buffer (a kernel argument): the rows of a
    // block past its sequence's end add zeros (their dS is 0) to the next
    // sequence's, and TMA clips the buffer's end.
    text.storeDqAdd = "        tile.store %dqPart, %sdQ[%c0, %wgCol] : !Sp, !tileQacc\n"
                      "        tile.copy %sdQ, %dQacc[%qRow, %hD] {add, pending = 1} : !tileQacc, !qacc";
    const std::string keyRowsView = "memref<" + heads + "x?xf32, strided<[" +
                                    tk + ", 1], offset: ?>>";
    text.storeKeyTerms =
        "      %keyTermsSeq = memref.subview %TermsK[0, %kStart] [" + heads +
        ", %skv] [1, 1] : !kterms to " + keyRowsView +
        "\n      tile.store %keyTerms, %keyTermsSeq[%h, %n0] : !row, " + keyRowsView;
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
                     "--dq-warpgroups 2 / --dkdv-warpgroups 2 for a producer "
                     "feeding shared tiles";
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
  const bool threeBlocksPerSm = form.threeBlocksPerSm;
  const bool sinksInDq = form.sinksInDq;
  const bool dqShared = form.dqShared();
  // The dK/dV kernel's keys: one warpgroup's 64 from %n0, or a block of
  // dkdvBlockKeys from %nBlock shared by its warpgroups, each reading its
  // 64 keys of the K and V tiles through subviews (as the dQ kernel's
  // warpgroups read Q and dO). Everything per key (the mask, the stores)
  // is the warpgroup's, from %n0; the query range and the liveness test
  // are the block's: a warpgroup's keys may see fewer query blocks than
  // the block loops over, and there its probabilities are all masked to
  // 0, which adds exact zeros to its dK and dV.
  std::string dkdvKeys = "      %n0 = arith.muli %kb, %c64 : index";
  std::string dkdvKvTile = "@KV_TILE@", dkdvSubviews;
  std::string dkdvStore = kvAccumulate ? kDkScaled.str() + kStoreKvAccums.str()
                          : shares     ? layout.storeShares
                                       : layout.storeDkdv;
  if (dkdvShared) {
    dkdvKeys = "      %cBlockKeys = arith.constant " + str(dkdvBlockKeys) +
               " : index\n"
               "      %nBlock = arith.muli %kb, %cBlockKeys : index\n" +
               // --dq-split deferred slices tiles by the warpgroup: the op
               // is what tile-thread-sync recognises such slices by.
               (dqSplitDeferred
                    ? std::string("      %wg = tile.warpgroup_id : index\n")
                            : std::string(kernels::kWarpgroupIndex)) +
               "      %wgKey = arith.muli %wg, %c64 : index\n"
               "      %n0 = arith.addi %nBlock, %wgKey : index\n"
               "      %blockLastKeyOffset = arith.constant " +
               str(dkdvBlockKeys - 1) +
               " : index\n"
               "      %kRowBlock = arith.addi %kStart, %nBlock : index";
    dkdvKvTile = layout.kvTile;
    replaceAll(dkdvKvTile, "%kRow", "%kRowBlock");
    dkdvSubviews = "\n      %sKw = memref.subview %sK[%wgKey, 0] [64, " + d +
                   "] [1, 1] : !tileDkdvKV to !tileQw\n      %sVw = "
                   "memref.subview %sV[%wgKey, 0] [64, " + d +
                   "] [1, 1] : !tileDkdvKV to !tileQw";
    // A fragment's store into a swizzled tile must cover it: the block's
    // K/V tiles hold 64·N keys, so MHA's dK/dV leave by register stores.
    if (!shares)
      dkdvStore = layout.storeDkdvFromRegisters;
  }
  const bool kvInRegisters = form.kvInRegisters;
  if (kvInRegisters) {
    dkdvKeys += kvRegistersText(
        layout.kvElementAt,
        (shape.varlen() ? shape.tokensKv() : shape.seqKv) - 1);
  }
  // --dq atomic: the fp32 dQ tiles alternate between query blocks, so that
  // a store does not wait for its own TMA reduce-add to read its tile
  // (`pending = 1`: it waits for the previous block's, long done). Each
  // warpgroup stores its panel (D / 2 columns) of dQ's share into the
  // block's tile (layout.storeDqAdd).
  std::string dqAddText =
      "        %dqParity = arith.remui %qBlock, %cTwo : index\n"
      "        %sdQ = memref.subview %sdQ2[%dqParity, 0, 0] [1, 64, " +
      d + "] [1, 1, 1] : !tileQacc2 to !tileQacc\n" +
      layout.storeDqAdd;
  // --dq-split deferred: each warpgroup adds its panel of the previous
  // block's share in the loop, and of the last block's after it.
  std::string deferredTail;
  if (dqSplitDeferred) {
    const int64_t panel = shape.headDim / 2;
    dqAddText = deferredDqAddText(layout.qTile, panel, "", "%dqPart", "%slot",
                                  "%mPrev", "%hasPrev", /*pending=*/true);
    deferredTail = "\n" + kDkdvDeferredDqTail.str();
    replaceAll(deferredTail, "@DEFERRED_DQ_ADD@",
               deferredDqAddText(layout.qTile, panel, "Last", "%dqPartLast",
                                 "%dqSlotLast", "%mLast", "%hasLast",
                                 /*pending=*/false));
  }
  const bool earlyDp = form.earlyDp;
  const bool dkdvPingPong = form.dkdvPingPong;
  // Substituted in two rounds: the shared pieces first (they hold
  // placeholders of their own).
  std::string text = kSinkBwdTemplate.str();
  for (auto [key, value] :
       {std::pair<std::string, std::string>{
            "@DKDV_FIRST_GEMMS@", earlyDp ? kDkdvFirstGemmsEarlyDp.str()
                                          : kDkdvFirstGemmsLateDp.str()},
        {"@DKDV_SECOND_GEMMS@", earlyDp
                                    ? kDkdvSecondGemmsEarlyDp.str()
                                    : kDkdvSecondGemmsLateDpAsyncDv.str()},
        {"@DKDV_ATOMIC_ARGS@",
         atomicDq ? ", %dQacc: !qacc, %TermsK: !kterms" : ""},
        {"@DKDV_ATOMIC_PRE@",
         !atomicDq ? ""
         : dqSplitDeferred
             // (The GQA sums' stores after the loop use the columns' fp32
             // tiles, kStoreKvAccums: 32 KB more at D 64, still one block
             // per SM.)
             ? (kvAccumulate ? kDkdvAtomicPreDqTiles.str() : "") +
                   kDkdvAtomicPre.str() + kDkdvAtomicPreDeferred.str()
             : kDkdvAtomicPreShared.str() + kDkdvAtomicPreDqTiles.str() +
                   kDkdvAtomicPre.str()},
        {"@DKDV_RESULTS@", atomicDq ? "3" : "2"},
        {"@DKDV_ITER_ARGS@", atomicDq ? ", %term = %termZero" : ""},
        {"@DKDV_ITER_TYPES@", atomicDq ? ", !rowParts" : ""},
        {"@DKDV_DS_MAP@",
         atomicDq ? kDkdvAtomicTermsPartial.str() : kDkdvDsMap.str()},
        {"@DKDV_DK_AND_DQ@",
         dqSplitDeferred ? kDkdvDkDqDeferred.str()
         : atomicDq      ? kDkdvDkDq.str()
                         : kDkdvDk.str() + (earlyDp ? kDvWait.str() : "")},
        {"@DKDV_AFTER_LOOP@", deferredTail},
        {"@DQ_FIRST_COLUMN@", qTileFirstColumn(layout.qTile).str()},
        {"@DKDV_YIELD@",
         atomicDq ? ", %termNew : !acc, !acc, !rowParts" : " : !acc, !acc"},
        {"@DKDV_ATOMIC_POST@",
         atomicDq ? kDkdvTermsByKey.str() + layout.storeKeyTerms : ""},
        // Shared-tile kernels take turns for their first GEMM of an
        // iteration (kernels::pingPongInit), so that their warpgroups do
        // not run their maps and GEMMs in step; not the split's
        // (dkdvPingPong).
        {"@DKDV_PINGPONG_INIT@",
         dkdvPingPong ? kernels::pingPongInit(dkdvWarpgroups) : ""},
        {"@DKDV_PINGPONG_SYNC@", dkdvPingPong ? kernels::kPingPongSync : ""},
        {"@DKDV_PINGPONG_ARRIVE@",
         dkdvPingPong ? kernels::kPingPongArrive : ""},
        {"@CONSTANTS@", kConstants.str()},
        {"@BLOCK_MASK@", blockMaskText()},
        {"@DKDV_P_MAP@", dkdvProbabilities()},
        {"@SEQUENCE@", layout.sequence},
        {"@DKDV_STORE@", dkdvStore},
        {"@DKDV_KEYS@", dkdvKeys},
        {"@DKDV_KV_TILE@", dkdvKvTile},
        {"@DKDV_SUBVIEWS@", dkdvSubviews},
        {"@DKDV_KW@", kvInRegisters ? "%kA" : dkdvShared ? "%sKw" : "%sK"},
        {"@DKDV_VW@", kvInRegisters ? "%vA" : dkdvShared ? "%sVw" : "%sV"},
        {"@DKDV_KW_TYPE@", kvInRegisters ? "!acc16" : dkdvShared ? "!tileQw" : "!tileT"},
        {"@DKDV_BLOCK_FIRST_KEY@", dkdvShared ? "%nBlock" : "%n0"},
        {"@DKDV_BLOCK_LAST_KEY_OFFSET@",
         dkdvShared ? "%blockLastKeyOffset" : "%c63"},
        {"@DKDV_SUM@", shares && !sumInKernel ? kSumShares.str() : ""},
        {"@DKDV_SUM_IN_KERNEL@", sumInKernel ? kSumSharesInKernel.str() : ""},
        {"@SHARES_LAST_ARRIVAL@",
         lastArrivalText("sum", "%Counts", "memref<@COUNTS@xi32>", "%countAt",
                         "@GROUP_MINUS_1@")},
        {"@SUM_ELEMENTS@",
         sumSharesElementsText(layout.sharesAt, layout.kvElementAt)},
        {"@DKDV_SUM_ARGS@",
         sumInKernel ? ", %dKout: !kv, %dVout: !kv, %Counts: memref<@COUNTS@xi32>"
                     : ""},
       })
    replaceAll(text, key, value);
  OwningOpRef<ModuleOp> module = parseKernelTemplate(
      context, "sink-bwd", text,
      {{"T", type},
       {"H", str(shape.heads)},
       {"D", d},
       {"B", str(shape.batch)},
       {"QB", str(queryBlocks)},
       {"SKV", str(shape.seqKv)},
       {"GROUP", str(group)},
       {"HK", str(shape.kvHeads)},
       {"KV_ELEMENTS", str(shape.kvElements())},
       {"SLAB", str(layout.shareTokens * shape.headDim)},
       {"DKV_TYPE", kvAccumulate ? layout.kvAccType
                    : shares     ? layout.sharesType
                                 : "!kv"},
       {"KV_ACC", str(kvAccElements)},
       {"KV_ACC_ROW", layout.kvAccRow},
       {"KV_ACC_AT", layout.kvAccAt},
       {"KV_ACC_AT2", [&] {
          std::string at = layout.kvAccAt;
          replaceAll(at, layout.kvAccRow, "%accRowSecond");
          return at;
        }()},
       {"KV_ACC_VECTORS", str(kvAccElements / 4)},
       {"SUM_GROUP", str(kvAccumulate ? 1 : group)},
       {"SUM_SHARES", str(kvAccumulate ? kvAccElements
                                       : shape.heads * layout.shareTokens *
                                             shape.headDim)},
       {"COUNTS", str(shareCounts)},
       {"DKDV_BLOCKS", str(keyBlocks)},
       {"GROUP_MINUS_1", str(group - 1)},
       {"TILE_ELEMENTS", str(kBlock * shape.headDim)},
       {"SUM_STEP", str(128 * kSumVector)},
       {"SUM_VECTOR", str(kSumVector)},
       {"Q_TYPE", layout.qType},
       {"KV_TYPE", layout.kvType},
       {"SEQUENCE_ARGS", layout.sequenceArgs},
       {"Q_TILE", layout.qTile},
       {"KV_TILE", layout.kvTile},
       {"QACC_TYPE", layout.qAccType},
       {"KTERMS_TYPE", layout.keyTermsType},
       {"STATS_ROWS", str(statsRows)},
       {"STORE_DQ_ADD", dqAddText},
       {"DECODE", layout.decode},
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
       {"DKDV_BLOCK_IDS", blockIdsText("%kb", /*heaviestLast=*/false, shape)},
       {"DKDV_BLOCK_KEYS_N", str(dkdvBlockKeys)},
       {"DQ_PANEL", str(shape.headDim / 2)},
       {"DQ_PANEL_SLOT_ELEMENTS", str(64 * shape.headDim / 2)},
       {"DKDV_ATTRIBUTES", dkdvShared ? sharedBlockAttributes(dkdvWarpgroups)
                           : threeBlocksPerSm
                               ? "attributes {nvvm.maxntid = array<i32: 128, 1, 1>, "
                                 "nvvm.minctasm = 3 : i32}"
                               : ""}});
  if (!module)
    return failure();

  // The kernels built as typed IR join the parsed ones in the module's
  // launch order: preprocess, dkdv, [dkdv_sum], [dq | dq_convert], [sinks].
  gpu::GPUModuleOp gpuModule = *module->getOps<gpu::GPUModuleOp>().begin();
  ImplicitLocOpBuilder b(NameLoc::get(StringAttr::get(&context, "sink_bwd")),
                         &context);
  context.loadDialect<arith::ArithDialect, gpu::GPUDialect,
                      math::MathDialect, memref::MemRefDialect,
                      NVVM::NVVMDialect, scf::SCFDialect, tile::TileDialect,
                      vector::VectorDialect>();
  SinkBwdProblem problem{config, shape, form,
                         getElementType(&context, config.dtype),
                         getElementType(&context, config.sinkDtype)};
  SinkBwdLayout typedLayout = SinkBwdLayout::get(&context, problem);
  // After kernel `previous`, or at the start of the module without one.
  auto buildAfter = [&](llvm::ArrayRef<llvm::StringRef> previous) {
    for (llvm::StringRef name : previous)
      if (auto func = gpuModule.lookupSymbol<gpu::GPUFuncOp>(name)) {
        b.setInsertionPointAfter(func);
        return;
      }
    b.setInsertionPointToStart(gpuModule.getBody());
  };
  buildAfter({});
  buildSinkBwdPreprocess(b, problem, typedLayout);
  // --dq atomic sums dsinks in its convert kernel, the one-warpgroup dQ
  // kernel in its last block of each head.
  if (atomicDq) {
    buildAfter({"sink_bwd_dkdv_sum", "sink_bwd_dkdv"});
    buildSinkBwdDqConvert(b, problem, typedLayout);
  }
  if (!atomicDq) {
    buildAfter({"sink_bwd_dkdv_sum", "sink_bwd_dkdv"});
    buildSinkBwdDq(b, problem, typedLayout);
  }
  if (!sinksInDq && !atomicDq) {
    buildAfter({"sink_bwd_dq"});
    buildSinkBwdSinks(b, problem, typedLayout);
  }
  if (failed(verify(*module)))
    return fail() << "internal error: the built kernels do not verify";

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
  bundle.config["dq"] = config.dq;
  if (dqShared)
    bundle.config["dq_warpgroups"] = dqWarpgroups;
  if (dkdvShared)
    bundle.config["dkdv_warpgroups"] = dkdvWarpgroups;
  if (dqSplitDeferred)
    bundle.config["dq_split"] = config.dqSplit;
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
  // kSumSharesInKernel's counters (the preprocess kernel zeroes them).
  if (sumInKernel)
    bundle.params.push_back(outputBuffer("share_counts", rt::DType::I32,
                                         {uint64_t(shareCounts)}));
  // The dQ kernel's dsink counters, one per head (zeroed by the preprocess
  // kernel).
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
