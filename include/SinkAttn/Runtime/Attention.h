//===- Attention.h - Attention with sinks on device tensors ------*- C++ -*-===//
//
// The library's entry point for the attention kernels (issue 45): a call
// takes device tensors with their sizes and strides, as FlashAttention's
// flash_attn_varlen_func does, validates every argument (an error names the
// argument and what was expected), finds the kernel compiled for the call's
// variant in a kernel library (a directory of bundles compiled for run-time
// shapes), and launches it for the call's sizes without compiling: the
// kernels are JIT-compiled once per process and variant.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_ATTENTION_H
#define SINKATTN_RUNTIME_ATTENTION_H

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/DType.h"
#include "SinkAttn/Runtime/DeviceBuffer.h"
#include "SinkAttn/Runtime/KernelGrids.h"
#include "SinkAttn/Runtime/LoadedBundle.h"
#include "SinkAttn/Runtime/Status.h"

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sinkattn::rt {

/// A tensor in GPU memory: its address, element type, sizes and element
/// strides (outermost first; strides empty: dense row-major).
struct DeviceTensor {
  CUdeviceptr data = 0;
  DType dtype = DType::BF16;
  std::vector<int64_t> sizes, strides;
};

/// The attention-sink forward over packed sequences (GPT-OSS sinks: O =
/// softmax([Q Kᵀ · scale, sink]) V without the sink's column), causal
/// (right-aligned per sequence, optionally within a sliding window) or
/// not.
struct VarlenForwardArgs {
  /// [Tq, H, D] and [Tkv, HK, D], bf16 or fp16; tokens at any stride
  /// (views of a fused QKV tensor), each token's heads dense.
  DeviceTensor q, k, v;
  DeviceTensor out;     ///< [Tq, H, D], q's dtype, strided like q: written.
  DeviceTensor lse;     ///< [H, Tq] f32: written (natural log, sink included).
  /// [H] f32 or bf16 sink logits; none: no sink.
  std::optional<DeviceTensor> sinks;
  DeviceTensor cuSeqlensQ, cuSeqlensKv; ///< [B + 1] i32 offsets.
  /// The longest query sequence (the launch grid covers it) and key
  /// sequence; at least 1 and at most the token counts.
  int64_t maxSeqlenQ = 0, maxSeqlenKv = 0;
  bool causal = true;
  int64_t window = 0; ///< Keys per row at most (0: no window; causal only).
  /// Default 1 / sqrt(D).
  std::optional<double> softmaxScale;
};

/// The attention-sink forward over a batch of sequences of one length, as
/// flash_attn_func takes it (BSHD). It runs as the varlen forward over the
/// batch's tokens, so a batch's tokens must be evenly spaced (the batch
/// stride is the length times the token stride, as in a contiguous tensor
/// or a view of a fused [B, S, H + 2 HK, D] QKV tensor).
struct ForwardArgs {
  /// [B, SQ, H, D] and [B, SKV, HK, D], bf16 or fp16; tokens any multiple
  /// of 16 bytes apart (at least a token's elements), each token's heads
  /// dense.
  DeviceTensor q, k, v;
  DeviceTensor out; ///< [B, SQ, H, D], q's dtype: written.
  /// [B, H, SQ] f32, written (natural log, sink included): a view of an
  /// [H, B * SQ] tensor, strides [SQ, B * SQ, 1], which is the varlen
  /// forward's LSE (torch.empty(H, B * SQ).view(H, B, SQ).permute(1, 0, 2)).
  DeviceTensor lse;
  /// [H] f32 or bf16 sink logits; none: no sink.
  std::optional<DeviceTensor> sinks;
  bool causal = true; ///< Right-aligned when SQ < SKV.
  int64_t window = 0; ///< Keys per row at most (0: no window; causal only).
  /// Default 1 / sqrt(D).
  std::optional<double> softmaxScale;
};

/// What a kernel is compiled for: everything a call does not give at run
/// time (its sizes, heads, window size and softmax scale).
struct SinkFwdVariant {
  DType dtype = DType::BF16, sinkDtype = DType::F32;
  int64_t headDim = 0;
  bool causal = true;
  /// Causal within a sliding window (its size is the call's).
  bool windowed = false;
  bool operator==(const SinkFwdVariant &o) const;
  /// "bf16 D=64 causal f32 sinks", "... causal sliding-window ...",
  /// "... non-causal ...".
  std::string describe() const;
};

/// A validated call: its variant and what it gives at run time.
struct VarlenForwardProblem {
  SinkFwdVariant variant;
  int64_t heads = 0, kvHeads = 0, window = 0;
  double softmaxScale = 0;
  int64_t tokensQ = 0, tokensKv = 0, batch = 0, maxSeqlenQ = 0, maxSeqlenKv = 0;
  VarlenTokenStrides tokenStrides;
  /// The offsets' units: a BSHD call passes 0, 1, ..., B in units of its
  /// lengths.
  SequenceOffsetUnits offsetUnits;
};

/// Checks every argument of a call; errors name the argument ("q", "lse",
/// "cu_seqlens_q", "softmax_scale", ...) and what was expected. Needs no
/// GPU.
Expected<VarlenForwardProblem> validateVarlenForward(const VarlenForwardArgs &args);

/// The largest batch a BSHD call may have (the kernels' grids put the
/// batch, times the kv heads without a window, in one dimension of 65535).
inline constexpr int64_t kMaxBatch = 65535;

/// A BSHD call as the varlen call it runs as: q, k, v and out as [B * S, H,
/// D] token rows, lse as [H, B * SQ], the offsets 0, 1, ..., B from the
/// table of kMaxBatch + 1 of them at `offsetTable`, to be taken in units of
/// SQ and SKV (VarlenForwardProblem::offsetUnits). Checks what is BSHD's
/// (ranks, one batch, evenly spaced tokens, lse's view, the batch's limit);
/// validateVarlenForward checks the rest. Errors name the argument.
Expected<VarlenForwardArgs> bshdAsVarlen(const ForwardArgs &args,
                                         CUdeviceptr offsetTable);
/// Checks every argument of a BSHD call; needs no GPU. The problem is the
/// varlen call's, with the offsets' units.
Expected<VarlenForwardProblem> validateForward(const ForwardArgs &args);

/// The gradients of the varlen forward (VarlenForwardArgs: the same q, k,
/// v, sinks, offsets, lengths, window and scale, and its out and lse) for
/// the upstream gradient dout. Causal only so far. Tokens past the last
/// offset (a buffer longer than its sequences) must hold finite values:
/// the kernels read them into products they mask to 0, and leave their
/// gradients unwritten.
struct VarlenBackwardArgs {
  DeviceTensor q, k, v;
  DeviceTensor out; ///< The forward's output, [Tq, H, D].
  DeviceTensor lse; ///< The forward's [H, Tq] f32.
  /// [Tq, H, D], q's dtype; tokens at any 16-byte multiple stride.
  DeviceTensor dout;
  /// Written: [Tq, H, D] and [Tkv, HK, D] like q and k (tokens at any
  /// 16-byte multiple stride: views of a fused dQKV tensor).
  DeviceTensor dq, dk, dv;
  /// [H] f32 or bf16 sink logits; none: no sink.
  std::optional<DeviceTensor> sinks;
  /// [H] f32, written: the sinks' gradient (with sinks only).
  std::optional<DeviceTensor> dsinks;
  DeviceTensor cuSeqlensQ, cuSeqlensKv; ///< [B + 1] i32 offsets.
  int64_t maxSeqlenQ = 0, maxSeqlenKv = 0;
  bool causal = true;
  int64_t window = 0; ///< As the forward's.
  std::optional<double> softmaxScale;
  /// Scratch of AttentionLibrary::backwardWorkspaceBytes() bytes (or more),
  /// 256-byte aligned, which the call may overwrite; it must stay allocated
  /// until the call's kernels are done on its stream (a framework's
  /// stream-ordered allocation is).
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
};

/// The backward of the BSHD forward (ForwardArgs: the same q, k, v, sinks,
/// window and scale, its out and its lse view), as flash_attn_func's
/// backward takes it: dout, dq, dk and dv [B, S, heads, D] like q and k,
/// evenly spaced like them. It runs as the varlen backward over the
/// batch's tokens.
struct BackwardArgs {
  DeviceTensor q, k, v, out, lse;
  DeviceTensor dout, dq, dk, dv;
  std::optional<DeviceTensor> sinks, dsinks;
  bool causal = true;
  int64_t window = 0;
  std::optional<double> softmaxScale;
  CUdeviceptr workspace = 0;
  size_t workspaceBytes = 0;
};

/// A validated backward call: the forward's problem and the gradients'
/// token strides.
struct VarlenBackwardProblem {
  VarlenForwardProblem forward;
  VarlenGradientStrides gradientStrides;
};

/// Checks every argument of a backward call (the forward's, dout, dq, dk,
/// dv, dsinks, causality; the workspace is checked against the kernel's
/// needs at launch); errors name the argument. Needs no GPU.
Expected<VarlenBackwardProblem>
validateVarlenBackward(const VarlenBackwardArgs &args);

/// A BSHD backward call as the varlen call it runs as (bshdAsVarlen's
/// views, and dout, dq, dk and dv as token rows); checks what is BSHD's.
Expected<VarlenBackwardArgs> bshdBackwardAsVarlen(const BackwardArgs &args,
                                                  CUdeviceptr offsetTable);
/// Checks every argument of a BSHD backward call; needs no GPU.
Expected<VarlenBackwardProblem> validateBackward(const BackwardArgs &args);

/// The variant a kernel library's bundle serves: a varlen sink-fwd bundle
/// compiled for run-time shapes; an error says why another one does not.
Expected<SinkFwdVariant> sinkFwdVariantOf(const Bundle &bundle);
/// The same of a varlen sink-bwd bundle compiled for run-time shapes.
Expected<SinkFwdVariant> sinkBwdVariantOf(const Bundle &bundle);

/// The bundle for a call: tensors, tensor maps, scalars (scale, window) and
/// grid (sinkFwdForSizes, a persistent kernel on at most `smCount` blocks;
/// the compiled lengths in its config are left as they are).
Expected<Bundle> sinkFwdForProblem(const Bundle &bundle,
                                   const VarlenForwardProblem &problem,
                                   int64_t smCount = 0);

/// A bundle of a kernel library: its directory, the variant it serves and
/// its form (config `schedule`: plain, ws or overlap; persistent: its
/// blocks loop over tile lists the launch builds, its `tiles` buffer; a
/// backward's schedule is how it sums dQ: separate, atomic or
/// atomic-deferred).
struct KernelLibraryEntry {
  std::string directory;
  /// "sink-fwd" or "sink-bwd".
  std::string kernel = "sink-fwd";
  SinkFwdVariant variant;
  /// A backward compiled for GQA (its query heads' shares of dK and dV):
  /// it serves any group; one compiled without only one query head per kv
  /// head.
  bool gqa = false;
  std::string schedule;
  bool persistent = false;
  Bundle bundle;
};

/// The bundles directly under `directory` that a call can use (varlen
/// sink-fwd and sink-bwd bundles compiled for run-time shapes), in name
/// order; errors:
/// a directory that cannot be listed or holds none of them (saying why it
/// passed over the sink-fwd bundles it holds), a bundle that cannot be
/// read, two bundles of one variant and form (schedule and persistence).
/// Needs no GPU.
Expected<std::vector<KernelLibraryEntry>>
scanKernelLibrary(const std::string &directory);

/// Compiles the kernel of a variant in a form (`schedule`, persistent or
/// not) on demand, as scripts/make-kernel-library.sh compiles the kernel
/// library's: a bundle for run-time shapes. The compiler library
/// (SinkAttnKernels, which needs MLIR) provides one:
/// kernels::libraryKernelCompiler() (SinkAttn/Kernels/Kernels.h).
using KernelCompiler = std::function<Expected<Bundle>(
    const SinkFwdVariant &variant, const std::string &schedule,
    bool persistent)>;

/// The kernels of a directory of bundles (`sinkattn-runner compile
/// --run-time-shapes --emit bundle`), launched for calls of any size. A
/// variant may come in several forms: a call takes the one `auto` would
/// compile for its longest rows (rt::sinkFwdAutoSchedule), or another of
/// the variant's where the library lacks it. Calls whose sequences have one
/// length (BSHD calls, or one sequence) run persistent where the compiler's
/// auto would for that problem (rt::sinkFwdRunsPersistent) and the library
/// has the persistent form: one block per SM, over tile lists built for the
/// call's sizes (rt::sinkFwdTileTable) and kept per sizes on the GPU.
class AttentionLibrary {
public:
  /// The library of scanKernelLibrary(directory) (its errors too). `ctx`
  /// must outlive the library.
  static Expected<AttentionLibrary> open(const Context &ctx,
                                         const std::string &directory);
  /// A library of one kernel loaded already (a varlen sink-fwd bundle for
  /// run-time shapes): how sinkattn-runner's check and bench call it.
  static Expected<AttentionLibrary>
  ofLoaded(const Context &ctx, std::shared_ptr<LoadedBundle> loaded);

  /// The variants of the forward kernels it holds.
  std::vector<SinkFwdVariant> variants() const;
  /// How many of its kernels have been loaded (once each, on their first
  /// call: their SASS where the bundle has it for this GPU, else
  /// JIT-compiled from PTX).
  size_t compiledKernels() const;
  /// Whether it holds a kernel for `variant` (a call without sinks takes a
  /// kernel of either sink dtype).
  bool serves(const SinkFwdVariant &variant, bool withSinks) const;
  /// The error of a call whose variant it does not serve and cannot
  /// compile: which variant, that the program has no compiler for it, and
  /// the command that compiles a kernel for it.
  static std::string noKernelMessage(const SinkFwdVariant &variant);
  /// Compile the kernels of variants it lacks with `compiler` on their
  /// first call, in the form the call takes, instead of refusing them; each
  /// once per library, like a kernel loaded from the directory.
  void setCompiler(KernelCompiler compiler) { compiler_ = std::move(compiler); }

  /// Validates `args`, finds the kernel of their variant (compiling it with
  /// the compiler given, if any, where the library has none; else an error
  /// names the variant and how to compile it), loads it on its first use,
  /// and launches it on `stream` (asynchronously).
  Status forwardVarlen(const VarlenForwardArgs &args, CUstream stream);
  /// forwardVarlen for `args` validated already: `problem` is
  /// validateVarlenForward(args) (a caller that looks at the problem first
  /// need not validate twice).
  Status forwardVarlen(const VarlenForwardArgs &args,
                       VarlenForwardProblem problem, CUstream stream);
  /// The BSHD forward: validates `args` (validateForward) and runs them as
  /// the varlen forward, with offsets from offsetTable().
  Status forward(const ForwardArgs &args, CUstream stream);
  /// forward for `args` validated already (`problem`: validateForward's).
  Status forward(const ForwardArgs &args, VarlenForwardProblem problem,
                 CUstream stream);
  /// The device address of the offsets 0, 1, ..., kMaxBatch of BSHD calls,
  /// uploaded on first use.
  Expected<CUdeviceptr> offsetTable();

  /// The workspace bytes backwardVarlen needs for `args` (validated here;
  /// its workspace fields are not read): the kernels' scratch, sized for
  /// the call. Errors: validateVarlenBackward's, no backward kernel for the
  /// call's variant.
  Expected<size_t> backwardWorkspaceBytes(const VarlenBackwardArgs &args);
  /// Validates `args`, finds the backward kernel of their variant (one
  /// compiled for GQA where the call has more query heads than kv heads),
  /// loads it on its first use, and launches it on `stream`
  /// (asynchronously), its scratch carved from `args.workspace`.
  Status backwardVarlen(const VarlenBackwardArgs &args, CUstream stream);
  /// backwardVarlen for `args` validated already (`problem`:
  /// validateVarlenBackward's, or for a BSHD call validateBackward's).
  Status backwardVarlen(const VarlenBackwardArgs &args,
                        VarlenBackwardProblem problem, CUstream stream);
  /// backwardWorkspaceBytes and backwardVarlen of a BSHD call (offsets from
  /// offsetTable()).
  Expected<size_t> backwardWorkspaceBytes(const BackwardArgs &args);
  Status backward(const BackwardArgs &args, CUstream stream);
  /// Whether it holds a backward kernel for `problem` (validated): ok, or
  /// the error that names the variant and how to compile a kernel for it.
  Status servesBackward(const VarlenBackwardProblem &problem,
                        bool withSinks) const {
    return findBackwardKernel(problem, withSinks).status();
  }

private:
  struct Kernel {
    KernelLibraryEntry entry;
    std::shared_ptr<LoadedBundle> loaded;
  };
  explicit AttentionLibrary(const Context &ctx) : ctx_(&ctx) {}
  /// The index in kernels_ of a kernel for `variant`: the one of form
  /// `schedule` where there is one, then persistent or not as asked.
  std::optional<size_t> findKernel(const SinkFwdVariant &variant,
                                   bool withSinks,
                                   const std::string &schedule = "",
                                   bool persistent = false) const;
  /// The device address of the tile table of a persistent kernel's call
  /// (`shaped`: its bundle for the call; `longest`: the problem at its
  /// longest sequences), built and uploaded on the first call of its sizes.
  Expected<CUdeviceptr> tileTable(const Bundle &shaped,
                                  const SinkAttentionShape &longest);
  /// The index in kernels_ of the backward kernel for `problem` (GQA's where
  /// it has more query heads than kv heads), or an error naming the
  /// variant and how to compile a kernel for it.
  Expected<size_t> findBackwardKernel(const VarlenBackwardProblem &problem,
                                      bool withSinks) const;
  /// backwardWorkspaceBytes of a validated call.
  Expected<size_t> backwardWorkspaceBytes(const VarlenBackwardArgs &args,
                                          VarlenBackwardProblem problem);
  /// The backward kernel's bundle shaped for `problem`, its kernel loaded.
  Expected<Bundle> shapeBackward(size_t kernel,
                                 const VarlenBackwardProblem &problem);
  /// Loads `kernel` on its first use (its SASS for this GPU where it has
  /// it, else PTX).
  Status load(Kernel &kernel);
  /// -inf sink logits of `heads` heads in `dtype` (a call without sinks).
  Expected<CUdeviceptr> noSinks(int64_t heads, DType dtype);

  const Context *ctx_;
  std::vector<Kernel> kernels_;
  KernelCompiler compiler_;
  /// -inf sink logits per (heads, sink dtype), for calls without sinks.
  std::map<std::pair<int64_t, DType>, std::shared_ptr<DeviceBuffer>> noSinks_;
  /// The offsets 0, 1, ..., kMaxBatch (i32) of BSHD calls.
  std::shared_ptr<DeviceBuffer> offsetTable_;
  /// Persistent calls' tile tables by (batch, heads, kv heads, longest
  /// lengths, window, causal, rows per tile, blocks), and their bytes.
  std::map<std::vector<int64_t>, std::shared_ptr<DeviceBuffer>> tileTables_;
  size_t tileTableBytes_ = 0;
};

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_ATTENTION_H
