//===- Options.h - sinkattn-runner command line -----------------*- C++ -*-===//

#ifndef SINKATTN_TOOLS_RUNNER_OPTIONS_H
#define SINKATTN_TOOLS_RUNNER_OPTIONS_H

#include "SinkAttn/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace sinkattn::runner {

struct KernelKind;

/// Parsed command line. Integer flags are validated (range) while parsing.
struct Options {
  std::string command; ///< devices | compile | check | bench | help
  std::string kernel;
  int64_t m = 4096, n = 4096, k = 4096;
  std::string dtype = "bf16";
  std::string schedule = "auto"; ///< auto | ws | plain
  std::string copyEngine = "tma"; ///< gemm: tma | cp-async | mixed
  std::string dq = "auto";       ///< sink-bwd: auto | separate | atomic
  std::string dqSplit = "auto";  ///< sink-bwd split: auto | columns | keys | deferred
  bool deterministic = false;    ///< sink-bwd: --deterministic
  int64_t dqWarpgroups = 1;       ///< sink-bwd: the dQ kernel's consumer warpgroups (1 or 2)
  int64_t dkdvWarpgroups = 1;     ///< sink-bwd: the dK/dV kernel's consumer warpgroups (1 or 2)
  bool packGqa = false;           ///< sink-fwd: --pack-gqa
  bool runTimeShapes = false;     ///< tma-copy, sink-fwd: --run-time-shapes
  bool causal = true;             ///< sink-fwd: false with --non-causal
  /// sink-fwd with --bundle of a run-time-shapes bundle: --softmax-scale
  /// (0: the default, 1/sqrt(D)).
  double softmaxScale = 0;
  int64_t persistent = 0;         ///< gemm, sink-fwd: persistent blocks (0: off)
  int64_t stages = 2;
  int64_t startTile = 0;
  /// Attention shape (the sink-attention kernels; validated here, rejected
  /// by kernels that are not attention kernels).
  int64_t batch = 1, heads = 64, kvHeads = 8, seqQ = 4096, seqKV = 4096;
  int64_t headDim = 128, window = 0; ///< window 0: no sliding window
  std::string sinkDtype = "f32";     ///< f32 | bf16
  std::string layout = "bhsd";       ///< bhsd | bshd | varlen
  /// Varlen: each sequence's query and key lengths (layout varlen; batch,
  /// seqQ and seqKV then hold their count and maxima).
  std::vector<int64_t> seqlensQ, seqlensKv;
  /// check/bench of sink-fwd and sink-bwd: the per-head sink logits (one
  /// value for every head, or one per head; -inf allowed) instead of random
  /// ones. Empty: random.
  std::vector<float> sinks;
  std::string emit;   ///< tile | gpu | llvm | ptx | bundle
  std::string output; ///< -o
  std::string chip = "sm_90a";
  /// compile --emit bundle: the ptxas that assembles the kernel's SASS.
  std::string ptxas;
  std::string bundleDir;
  std::string preset;     ///< bench --preset NAME
  std::string bundlesDir; ///< bench --preset, tune: where bundles are
  std::string tuneCache;  ///< tune writes it; --schedule auto reads it
  std::string saveIoDir;
  std::string jsonFile;
  uint64_t seed = 0;
  int64_t iters = 50;
  int64_t warmup = 5;
  int64_t device = 0;
  bool flushL2 = true;
  /// bench --preset: the caller checked the bundles (no check per cell).
  bool checked = false;
  bool verbose = false;
  /// Flags given explicitly (so a bundle's config is not contradicted).
  std::vector<std::string> given;
  bool wasGiven(const std::string &flag) const;
  /// The attention-shape flags given on the command line, spelled "--x".
  std::vector<std::string> attentionFlagsGiven() const;
};

/// Parses argv. Errors (unknown flag, missing or malformed value, value out
/// of range) come back as a message; the caller prints usage and exits 2.
rt::Expected<Options> parseOptions(int argc, char **argv, bool hasCompiler);

/// `--sinks`' value: comma-separated sink logits, each finite or -inf.
rt::Expected<std::vector<float>> parseSinkLogits(const std::string &text);

/// An error for the first kind-specific flag given that `kind` does not
/// take ("--copy-engine does not apply to kernel 'sink-fwd': ...").
rt::Status checkFlagsApply(const Options &options, const KernelKind &kind);

/// The flags of the attention shape (--batch, ..., spelled without "--"):
/// the attention kernels take them, other kinds refuse them.
std::vector<std::string_view> attentionFlags();

/// The usage text.
std::string usage(bool hasCompiler);

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_OPTIONS_H
