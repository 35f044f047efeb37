//===- Kernels.h - Kernel builders ------------------------------*- C++ -*-===//
//
// Builders that turn a kernel configuration into an MLIR module (a
// gpu.module holding one kernel) plus the kernel's launch configuration and
// parameter ABI, as a bundle (see docs/bundle.md). compileKernel() runs the
// PTX pipeline on top and fills in the bundle's PTX.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_KERNELS_KERNELS_H
#define SINKATTN_KERNELS_KERNELS_H

#include "SinkAttn/Pipelines/Pipelines.h"
#include "SinkAttn/Runtime/Attention.h"
#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Bundle.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace sinkattn {

/// KernelConfig::persistentBlocks: let the kernel decide.
constexpr int64_t kAutoPersistentBlocks = -1;
/// The blocks of auto's persistent kernels: the SMs of an H100 SXM or an
/// H200 (one block per SM).
constexpr int64_t kPersistentSMs = 132;
/// KernelConfig::dqWarpgroups and dkdvWarpgroups: let sink-bwd decide.
constexpr int64_t kAutoWarpgroups = 0;

/// What to build. Fields a kernel does not use are ignored by it.
struct KernelConfig {
  /// Kernel kind: one of kernelNames().
  std::string kernel;
  /// Problem size: gemm computes [m x k] * [k x n]; tma-copy copies [m x n].
  int64_t m = 4096, n = 4096, k = 4096;
  /// Element type of the inputs.
  rt::DType dtype = rt::DType::BF16;
  /// Pipeline stages of the main loop (tile.num_stages).
  int64_t stages = 2;
  /// tma-stream: first K tile the loop visits (a loop that does not start
  /// at 0 exercises parity normalization).
  int64_t startTile = 0;
  /// gemm, sink-fwd: "ws" (the kernel declares its block size, so
  /// tile-warp-specialize adds a TMA producer warpgroup), "plain" (it does
  /// not: every thread loads and computes), or "auto" (the faster one).
  /// sink-bwd: "plain" or "auto" (which may pick shared tiles, below).
  std::string schedule = "auto";
  /// gemm: "tma", "cp-async" (both operands loaded with cp.async: a SIMT
  /// producer) or "mixed" (A with cp.async, B with TMA).
  std::string copyEngine = "tma";
  /// gemm and sink-fwd (ws, overlap): 0 = one block per tile (gemm's
  /// 128x256 tiles, sink-fwd's blocks of 128 query rows of one head, 192
  /// at D 64);
  /// N > 0 = a persistent kernel of min(N, tiles) blocks, each looping over
  /// tiles (the K or key loop nested in a loop over tiles);
  /// kAutoPersistentBlocks (sink-fwd) = auto's choice: persistent with
  /// kPersistentSMs blocks where it was measured faster (buildSinkFwd),
  /// else one block per tile. The GEMM strides over its tiles by the grid
  /// it is launched with, so fewer blocks stay correct (rt::launchedBlocks
  /// gives it at most the GPU's SM count); sink-fwd's blocks each run
  /// their own list of tiles and are all launched (with run-time shapes,
  /// N is at most the blocks, and the launch takes at most one per SM).
  int64_t persistentBlocks = 0;
  /// sink-fwd: how the per-head sink logits are stored (f32 or bf16).
  rt::DType sinkDtype = rt::DType::F32;
  /// Attention (sink-fwd): Q is [batch, heads, seqQ, headDim], K and V are
  /// [batch, kvHeads, seqKv, headDim]; window 0 means no sliding window.
  int64_t batch = 1, heads = 1, kvHeads = 1, seqQ = 128, seqKv = 128,
          headDim = 128, window = 0;
  /// sink-fwd: memory layout (rt::AttentionLayout: BHSD as above, BSHD,
  /// or varlen: packed sequences with these lengths; batch, seqQ and seqKv
  /// are then their count and maxima).
  rt::AttentionLayout layout = rt::AttentionLayout::BHSD;
  std::vector<int64_t> seqlensQ, seqlensKv;
  /// sink-fwd with runTimeShapes: false compiles the kernel without the
  /// causal mask (every query attends every key of its sequence).
  bool causal = true;
  /// sink-bwd: "separate" (deterministic: a dQ kernel of its own, which
  /// recomputes S and dP), "atomic" (the dK/dV kernel adds dQ's shares
  /// to an fp32 dQ by TMA reduce-add: fewer GEMMs, not bit-reproducible;
  /// needs dkdvWarpgroups 2) or "auto" (the fastest measured form for the
  /// problem, only deterministic ones with `deterministic`: SinkBwdForm).
  std::string dq = "auto";
  /// sink-bwd: bit-reproducible gradients: auto picks only deterministic
  /// forms, and --dq atomic is refused.
  bool deterministic = false;
  /// sink-bwd, --dq separate: consumer warpgroups of the dQ kernel. 1: one
  /// warpgroup of 64 query rows per block (the schedule's); 2: a
  /// warp-specialized block of 64 rows per warpgroup that share each K/V
  /// tile (a TMA producer feeds them), so K/V cross L2 once per 128 rows
  /// instead of once per 64. kAutoWarpgroups: 2 where SinkBwdForm's
  /// rule measured it faster (long causal rows at D 128), else 1.
  int64_t dqWarpgroups = kAutoWarpgroups;
  /// sink-bwd: consumer warpgroups of the dK/dV kernel. 1: one warpgroup of
  /// 64 keys per block (the schedule's); 2: a warp-specialized block of 64
  /// keys per warpgroup that share each Q, dO and row-record tile, so Q/dO
  /// cross L2 once per 128 keys instead of once per 64 (and --dq atomic's
  /// 128-key blocks). GQA shares are then summed by
  /// sink_bwd_dkdv_sum (the in-kernel sum's barriers would hold the
  /// producer too). kAutoWarpgroups: as for dqWarpgroups.
  int64_t dkdvWarpgroups = kAutoWarpgroups;
  /// sink-bwd, --dq atomic --dkdv-warpgroups 2: how the two warpgroups
  /// divide dQ's share of the block's 128 keys. "columns" (FlashAttention
  /// 3's split): each a panel of D / 2 columns over all 128 keys, one
  /// reduce-add per block and query block, the warpgroups meeting at a
  /// barrier each iteration (dQ's GEMM reads both warpgroups' dSᵀ).
  /// "deferred" (D 64): the columns' panels, but of the previous query block's
  /// share, from a double-buffered dSᵀ tile the warpgroups hand over
  /// through mbarriers; each adds its own panel (one reduce-add's traffic
  /// per block, like columns), and the warpgroups never meet in the loop.
  /// "auto": deferred where auto chose the deferred split, else columns.
  std::string dqSplit = "auto";
  /// sink-fwd, BHSD, GQA: one block computes rows of all the query heads
  /// of a kv head (the group's rows packed head after head), so the K/V
  /// tiles it loads serve the whole group: for short query lengths
  /// (decoding), where a block per head would be mostly empty rows.
  bool packGqa = false;
  /// tma-copy, sink-fwd (varlen): the kernel reads its tensors' sizes at
  /// launch (memref descriptors, bundle format 5), so one bundle serves any
  /// M x N with 16-byte rows (tma-copy) or any batch of sequence lengths,
  /// heads, window size and softmax scale (sink-fwd, which compiles in
  /// only whether it masks causally and whether it has a window); the
  /// shape fields are then the bundle's default instance.
  bool runTimeShapes = false;
  PTXTargetOptions target;
};

/// The kernel kinds the builders know, with a one-line description each.
std::vector<std::pair<std::string, std::string>> kernelNames();

/// A kernel at the `gpu` level (before the PTX pipeline) with its launch
/// configuration and ABI. `bundle.ptx` is empty.
struct KernelModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  rt::Bundle bundle;
  /// The module is tile IR: lowerKernelToNVGPU() runs the tile passes and
  /// adds the tensor maps and shared memory they decide to the bundle.
  bool tileIR = false;
};

/// Builds the kernel. An unknown kernel or an unsupported configuration is
/// reported through the context's diagnostics (saying which value is
/// unsupported and why) and returns failure.
mlir::FailureOr<KernelModule> buildKernel(mlir::MLIRContext &context,
                                          const KernelConfig &config);

/// For tile IR kernels: runs sinkattn-tile-to-nvgpu on the module and
/// completes the bundle from the kernel's attributes (tensor-map params,
/// dynamic shared memory). A no-op for kernels written in nvgpu ops.
mlir::LogicalResult lowerKernelToNVGPU(KernelModule &kernel);

/// The calling convention `bundle` describes: bare pointers (one per
/// memref), unless a buffer is passed as a memref descriptor.
bool passesBarePointers(const rt::Bundle &bundle);

/// buildKernel() followed by the PTX pipeline: the bundle has its PTX.
mlir::FailureOr<rt::Bundle> compileKernel(mlir::MLIRContext &context,
                                          const KernelConfig &config);

/// Registers every dialect, extension and translation the builders and the
/// PTX pipeline need.
void registerKernelDialects(mlir::DialectRegistry &registry);

namespace kernels {
/// The attention library's kernel for `variant` in a form (`schedule`:
/// plain, ws or overlap; `persistent`: kPersistentSMs blocks over tile
/// lists built at launch), compiled for run-time shapes as
/// scripts/make-kernel-library.sh compiles the library's (PTX, no SASS: the
/// driver compiles it on load and keeps it in its compute cache). Errors
/// are the compiler's (a head dim or form it does not support).
rt::Expected<rt::Bundle> compileLibraryKernel(const rt::SinkFwdVariant &variant,
                                              const std::string &schedule,
                                              bool persistent);
/// compileLibraryKernel as an rt::AttentionLibrary's on-demand compiler
/// (AttentionLibrary::setCompiler).
rt::KernelCompiler libraryKernelCompiler();
} // namespace kernels

} // namespace sinkattn

#endif // SINKATTN_KERNELS_KERNELS_H
