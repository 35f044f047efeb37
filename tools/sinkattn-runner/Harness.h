//===- Harness.h - Run, check and time a kernel bundle ----------*- C++ -*-===//
//
// The part of sinkattn-runner that needs no compiler: given a bundle, it
// allocates the buffers the manifest describes, fills inputs with seeded
// random data, poisons outputs (NaN), launches, compares against an
// independent reference for the bundle's kernel kind, and times launches.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_TOOLS_RUNNER_HARNESS_H
#define SINKATTN_TOOLS_RUNNER_HARNESS_H

#include "SinkAttn/Runtime/Attention.h"
#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/DeviceBuffer.h"
#include "SinkAttn/Runtime/Json.h"
#include "SinkAttn/Runtime/LoadedBundle.h"
#include "SinkAttn/Runtime/Module.h"
#include "SinkAttn/Runtime/Status.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sinkattn::runner {

struct CheckReport {
  bool passed = false;
  double relL2 = 0;    ///< ||out - ref|| / ||ref|| over the checked elements
  double maxAbs = 0;   ///< max |out - ref|
  uint64_t checked = 0;    ///< elements compared
  uint64_t mismatches = 0; ///< elements outside tolerance (or not bit-equal)
  uint64_t nonFinite = 0;  ///< NaN/inf outputs (unwritten outputs are NaN)
  std::string criterion;   ///< what "pass" meant
  /// Further lines for the user: statistics of secondary outputs, how the
  /// reference was validated, why a check failed beyond the numbers.
  std::vector<std::string> notes;
};

struct BenchReport {
  double medianMs = 0, minMs = 0;
  double tflops = 0; ///< 0 when the kernel is not arithmetic-bound
  double gbps = 0;   ///< bytes moved / time, for copies
  int iterations = 0;
  /// Every timed iteration, in launch order (a median far above the
  /// minimum shows whether the slow ones cluster, e.g. late in the run).
  std::vector<double> timesMs;
  /// Kernel-specific numbers, by name (also the JSON key), e.g. sink-fwd's
  /// TFLOP/s by the seed's formula next to the exact count in `tflops`.
  std::vector<std::pair<std::string, double>> metrics;
};

class Session;
struct KernelKind;

/// One timed kernel as a row of `bench --json`: kernel, config, times
/// (median, minimum and every iteration's), throughput, the kernel's own
/// metrics and whether L2 was flushed.
rt::JsonValue benchJsonRow(const Session &session, const BenchReport &report,
                           bool flushL2);

/// One bundle loaded on one GPU, with its buffers.
class Session {
public:
  /// Loads the driver, checks the GPU is Hopper, JIT-compiles the PTX (the
  /// ptxas log is in the error on failure; with `verbose` the info log is
  /// printed).
  static rt::Expected<std::unique_ptr<Session>>
  open(rt::Bundle bundle, int device, bool verbose);

  /// Allocates every buffer, fills inputs from `seed` (fresh data for each
  /// seed, never all zeros), poisons outputs.
  rt::Status prepare(uint64_t seed);
  /// Sink logits for the next prepare() instead of random ones: one value
  /// for every head or one per head (`--sinks`). An error when the bundle
  /// has no sinks input.
  rt::Status fixSinks(std::vector<float> values);
  /// The sink logits fixSinks() set, one per head (empty: random).
  const std::vector<float> &fixedSinks() const { return fixedSinks_; }
  /// The bundle's kernels, except setup launches, on `stream`
  /// (asynchronous): what bench times. A varlen sink-fwd bundle for
  /// run-time shapes is one call of rt::AttentionLibrary::forwardVarlen
  /// (validation, the kernel's re-shaping and launch: a program's call).
  rt::Status launch(CUstream stream);
  /// The setup launches (they compute inputs of the kernels, such as the
  /// forward's O and LSE that a backward reads), then synchronizes.
  rt::Status setup();
  /// Poisons outputs, runs the setup launches and the kernels once,
  /// synchronizes and compares.
  rt::Expected<CheckReport> check();
  rt::Expected<BenchReport> bench(int warmup, int iterations, bool flushL2);
  /// Writes each buffer as <dir>/<name>.npy (outputs as last computed), and
  /// the GPU reference's outputs of the last check as ref_<name>.npy.
  rt::Status saveIo(const std::string &directory) const;

  const rt::Bundle &bundle() const { return loaded_->bundle(); }
  const rt::DeviceInfo &device() const { return context_->info(); }
  /// "m=4096 n=4096 k=4096 dtype=bf16" from the bundle's config.
  std::string describeConfig() const;
  /// The blocks a launch of the bundle's kernel gets on this GPU
  /// (rt::launchedBlocks: at most one per SM for a persistent kernel that
  /// strides by its grid; all of them for one with tile lists).
  uint32_t launchedBlocks() const { return loaded_->launchedBlocks(); }

  /// The kinds' checks (KernelKind::check): each compares the outputs of
  /// the launch check() just ran with its reference.
  rt::Expected<CheckReport> checkGemm();
  /// tma-copy: out is in, bit for bit.
  rt::Expected<CheckReport> checkTmaCopy();
  /// tma-im2col: out bit-equal to a host im2col of x.
  rt::Expected<CheckReport> checkTmaIm2col();
  /// tma-stream: the row sums, exact.
  rt::Expected<CheckReport> checkTmaStream();
  /// sink-fwd: runs the bundle's reference kernel on the same inputs and
  /// compares (after check() launched the kernel).
  rt::Expected<CheckReport> checkSinkFwd();
  /// sink-bwd: the same with the backward's reference (three kernels; it
  /// also checks the setup forward's stored O), and on small problems the
  /// float64 CPU backward, the exact gradient and finite differences
  /// (compareSinkBwd).
  rt::Expected<CheckReport> checkSinkBwd();

private:
  Session() = default;
  int64_t configInt(const std::string &key) const;
  rt::Expected<std::vector<float>> downloadAsFloat(const std::string &name) const;
  /// JIT-compiles the bundle's reference kernel on first use.
  rt::Status loadReference();
  /// The attention library's call on this session's buffers (library_).
  rt::Status prepareLibraryCall();

  std::unique_ptr<rt::Context> context_;
  /// The bundle, its kernels JIT-compiled and their launch sequence.
  std::shared_ptr<rt::LoadedBundle> loaded_;
  /// A varlen sink-fwd bundle for run-time shapes runs through the
  /// attention library's API, as a program calls it: the library of that
  /// kernel, and the call on this session's buffers (set by prepare()).
  std::unique_ptr<rt::AttentionLibrary> library_;
  rt::VarlenForwardArgs libraryCall_;
  rt::VarlenForwardProblem libraryProblem_;
  std::map<std::string, rt::DeviceBuffer> buffers_;
  /// buffers_' device addresses by name, for the launches (set by
  /// prepare(), not rebuilt for every timed launch).
  std::map<std::string, CUdeviceptr> addresses_;
  /// Input values as float (after rounding to the buffer's dtype).
  std::map<std::string, std::vector<float>> inputs_;
  /// Input bytes exactly as uploaded.
  std::map<std::string, std::vector<uint8_t>> inputBytes_;
  uint64_t seed_ = 0;
  std::vector<float> fixedSinks_;
  bool verbose_ = false;
  /// The bundle's kind, looked up once by open().
  const KernelKind *kind_ = nullptr;
  /// The reference kernel (kinds that carry one), loaded by the first check.
  std::unique_ptr<rt::Module> referenceModule_;
  std::unique_ptr<rt::Function> referenceFunction_;
  /// Outputs of the reference in the last check, by output name, with
  /// their shapes (for saveIo).
  std::map<std::string, std::pair<std::vector<uint64_t>, std::vector<float>>>
      referenceOutputs_;
};

/// The kernel kinds this harness can check and time.
bool harnessSupports(const std::string &kernel);

/// The kind of `bundle`, after its own checks of the manifest (needs no
/// GPU); an error for a kind the runner does not know.
rt::Expected<const KernelKind *> harnessKind(const rt::Bundle &bundle);

/// `--sinks`' logits for `bundle`'s sinks input: `values` itself (one per
/// head) or its one value repeated for every head; an error when the
/// bundle has no sinks or the count is neither.
rt::Expected<std::vector<float>> sinkLogitsFor(const rt::Bundle &bundle,
                                               std::vector<float> values);

/// Sink logits as text ("-inf,0.5"), for titles and JSON (which has no
/// infinities).
std::string formatSinkLogits(const std::vector<float> &values);

/// The values prepare() fills input `buffer` of a `kernel` bundle with
/// (before rounding to the buffer's type), from random stream `stream`:
/// uniform in [-1, 1] unless the kernel's check needs another distribution.
std::vector<float> randomInput(const std::string &kernel,
                               const std::string &buffer, size_t count,
                               uint64_t stream);

/// sink-fwd: the problem described by the bundle's config (batch, heads,
/// kv_heads, seq_q, seq_kv, head_dim, window, scale (1/sqrt(head_dim) when
/// absent), layout (bhsd when absent) and, with varlen, seqlens_q and
/// seqlens_kv), after checking that the buffers q, k, v, sinks, o and lse
/// (and cu_seqlens_q/kv) have the shapes, types and roles it implies.
/// Needs no GPU.
rt::Expected<rt::SinkAttentionShape> sinkFwdShape(const rt::Bundle &bundle);
/// sink-bwd: sinkFwdShape, after also checking the backward's buffers (do,
/// the gradients and the kernels' scratch).
rt::Expected<rt::SinkAttentionShape> sinkBwdShape(const rt::Bundle &bundle);
/// The values of an integer input buffer: the sequence offsets of a varlen
/// sink-fwd bundle (from its config); an error for any other.
rt::Expected<std::vector<int32_t>> integerInput(const rt::Bundle &bundle,
                                                const std::string &buffer);

/// sink-fwd's inputs as float (after rounding to the kernel's input type).
struct SinkFwdInputs {
  const std::vector<float> &q, &k, &v, &sinks;
};

/// The host half of sink-fwd's check: passes iff every element of the
/// kernel's `o` is finite and within 1e-2 + 1e-2*|ref| of the GPU
/// reference's `refO`, every element of its `lse` within 1e-3 of `refLse`,
/// and the GPU reference is itself finite and
/// within 1e-4 + 1e-4*|ref| of the float64 CPU reference on every row when
/// rows * seq_kv * head_dim <= `fullCrossCheckWork`, else on 512 rows (the
/// first, the last and random ones drawn from `seed`). Needs no GPU.
CheckReport compareSinkFwd(const rt::SinkAttentionShape &shape,
                           const SinkFwdInputs &inputs,
                           const std::vector<float> &o,
                           const std::vector<float> &lse,
                           const std::vector<float> &refO,
                           const std::vector<float> &refLse, uint64_t seed,
                           double fullCrossCheckWork = double(1 << 28));

/// The backward's inputs; `o` is the forward's output as the setup launch
/// stored it (its delta = dO . o is what dQ, dK and dV are specified with).
struct SinkBwdInputs {
  const std::vector<float> &q, &k, &v, &sinks, &dO, &o;
};
/// dq, dk, dv (in the layouts of q and k) and dsinks, as floats; for the
/// reference also its own fp32 O (q's layout; empty: not checked).
struct SinkBwdGradients {
  std::vector<float> dq, dk, dv, dsinks, o;
};

/// The host half of sink-bwd's check: passes iff every gradient element of
/// the kernels' `out` is finite and within 2e-2 (|ref| + max|ref|) of the
/// GPU reference's `refs` (max over that gradient), each gradient's rel-L2
/// is at most 1e-2, every dq/dk/dv row is within 30% of its norm, the
/// stored O is within 1e-2 + 1e-2*|ref| of `refs.o` (when given), the
/// reference is finite and within 1e-3 + 1e-3*|ref| of the float64 CPU
/// backward of the same specification (dS from `inputs.o`), and the kernels
/// within 2e-2 (|exact| + max|exact|) of the exact float64 gradient: at
/// every element when rows * seq_kv * head_dim <= `fullCrossCheckWork`,
/// else at sampled ones of `seed` (512 dq rows, 256 dk/dv rows of one kv
/// head and the dsinks of its query heads); up to `finiteDifferenceWork`,
/// also the kernels' and the float64 dsinks against central differences of
/// sum(O . dO). Needs no GPU; errors only when the sizes disagree.
rt::Expected<CheckReport>
compareSinkBwd(const rt::SinkAttentionShape &shape, const SinkBwdInputs &inputs,
               const SinkBwdGradients &out, const SinkBwdGradients &refs,
               uint64_t seed, double fullCrossCheckWork = double(1 << 28),
               double finiteDifferenceWork = double(1 << 22));

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_HARNESS_H
