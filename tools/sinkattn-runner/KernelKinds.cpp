//===- KernelKinds.cpp - What the runner knows about each kernel kind -----===//

#include "KernelKinds.h"

#include "Harness.h"
#include "Options.h"

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/KernelGrids.h"
#include "SinkAttn/Runtime/Random.h"

#include <algorithm>
#include <cmath>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {

/// `flags` and the attention shape's flags.
std::vector<std::string_view> withAttentionFlags(
    std::vector<std::string_view> flags) {
  std::vector<std::string_view> attention = attentionFlags();
  flags.insert(flags.end(), attention.begin(), attention.end());
  return flags;
}

/// An integer of the bundle's config, 0 when absent (the builders always
/// write the ones the kinds read).
int64_t configInt(const rt::Bundle &bundle, const std::string &key) {
  auto it = bundle.config.find(key);
  if (it == bundle.config.end())
    return 0;
  if (const int64_t *value = std::get_if<int64_t>(&it->second))
    return *value;
  return 0;
}

std::vector<float> uniformInput(std::string_view, size_t count,
                                uint64_t stream) {
  return rt::randomUniform(count, stream, -1.f, 1.f);
}

std::vector<float> attentionInput(std::string_view buffer, size_t count,
                                  uint64_t stream) {
  if (buffer == "q" || buffer == "k") {
    // Logits s = q.k/sqrt(D) with standard deviation 1.5^2 = 2.25: the
    // softmax's effective number of keys is about SKV/150 (26 at 4096), so
    // outputs stay far from 0 (an all-zero or mis-masked output breaks the
    // tolerance) instead of averaging to noise.
    return rt::randomNormal(count, stream, 0.f, 1.5f);
  }
  if (buffer == "sinks") {
    // Sink logits comparable to the scores: the sink takes a visible share
    // of the short (early causal, windowed) rows.
    return rt::randomUniform(count, stream, -1.f, 3.f);
  }
  return rt::randomUniform(count, stream, -1.f, 1.f);
}

/// tma-stream sums tiles in f32 and is checked bit-exactly: multiples of
/// 1/64 in [-1, 1] are exact in bf16/fp16 and their sums in f32.
std::vector<float> streamInput(std::string_view buffer, size_t count,
                               uint64_t stream) {
  std::vector<float> values = uniformInput(buffer, count, stream);
  for (float &value : values)
    value = std::round(value * 64.f) / 64.f;
  return values;
}

/// The sequence offsets of a varlen attention bundle, from its config.
rt::Expected<std::vector<int32_t>> attentionIntegerInput(
    const rt::Bundle &bundle, const std::string &buffer) {
  if (buffer != "cu_seqlens_q" && buffer != "cu_seqlens_kv" &&
      buffer != "tiles")
    return rt::Status::error("the harness cannot fill the integer buffer '" +
                             buffer + "' of a " + bundle.kernel + " bundle");
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkAttentionShape shape,
                               sinkFwdShape(bundle));
  if (buffer == "tiles") {
    // A persistent forward's tile table, with every sequence at the
    // longest lengths (as the library builds it).
    std::vector<int64_t> lengthsQ = rt::lengthsOf(shape.cuSeqlensQ),
                         lengthsKv = rt::lengthsOf(shape.cuSeqlensKv);
    if (!lengthsQ.empty()) {
      shape.seqQ = *std::max_element(lengthsQ.begin(), lengthsQ.end());
      shape.seqKv = *std::max_element(lengthsKv.begin(), lengthsKv.end());
    }
    return rt::sinkFwdTileTableFor(bundle, shape);
  }
  const std::vector<int64_t> &offsets =
      buffer == "cu_seqlens_q" ? shape.cuSeqlensQ : shape.cuSeqlensKv;
  return std::vector<int32_t>(offsets.begin(), offsets.end());
}

rt::Status countGemm(const rt::Bundle &bundle, double seconds,
                     BenchReport &report) {
  double flops = 2.0 * configInt(bundle, "m") * configInt(bundle, "n") *
                 configInt(bundle, "k");
  report.tflops = flops / seconds / 1e12;
  return rt::Status::success();
}

rt::Status countCopy(const rt::Bundle &bundle, double seconds,
                     BenchReport &report) {
  // Bytes read plus bytes written.
  const rt::BundleParam *in = rt::findParam(bundle, "in");
  report.gbps = 2.0 * rt::bufferBytes(*in) / seconds / 1e9;
  return rt::Status::success();
}

rt::Status countStream(const rt::Bundle &bundle, double seconds,
                       BenchReport &report) {
  // Bytes streamed in (the small output is not counted).
  double bytes = double(rt::bufferBytes(*rt::findParam(bundle, "a"))) +
                 double(rt::bufferBytes(*rt::findParam(bundle, "b")));
  report.gbps = bytes / seconds / 1e9;
  return rt::Status::success();
}

/// tma-im2col is checked, not timed for throughput.
rt::Status countNothing(const rt::Bundle &, double, BenchReport &) {
  return rt::Status::success();
}

/// Two GEMMs (QK^T and PV) of 2 * D flops per attended (i, j) pair,
/// counted exactly (causal and window masks included), times `forwards`:
/// the backward counts 2.5 forwards (FlashAttention's convention: five
/// GEMMs, one of them the recomputed S).
rt::Status countAttention(const rt::Bundle &bundle, double seconds,
                          BenchReport &report, double forwards) {
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkAttentionShape shape,
                               sinkFwdShape(bundle));
  double pairs = double(rt::attendedPairs(shape));
  double perPair =
      4.0 * double(shape.heads) * double(shape.headDim) * forwards;
  report.tflops = perPair * pairs / seconds / 1e12;
  // The seed's formula, 4*B*H*SQ*SKV*D/2 without a window or varlen
  // (attended pairs with them), so numbers compare with the seed's tables.
  double seedPairs = shape.window == 0 && !shape.varlen()
                         ? 0.5 * double(shape.batch) * double(shape.seqQ) *
                               double(shape.seqKv)
                         : pairs;
  report.metrics.emplace_back("tflops_seed_formula",
                              perPair * seedPairs / seconds / 1e12);
  report.metrics.emplace_back("attended_pairs_per_head", pairs);
  return rt::Status::success();
}

/// The backward's form: how dQ is summed, the warpgroups and the split.
std::string describeSinkBwdForm(const rt::Bundle &bundle) {
  // Bundles from before --dq computed dQ separately.
  rt::Expected<std::string> dq = rt::configTextOr(bundle, "dq", "separate");
  std::string label = " dq=" + (dq.ok() ? *dq : "-");
  // Shared-tile forms (the manifest names their warpgroups only when more
  // than one): "dkdv-wg=2" for the split.
  for (auto [key, name] : {std::pair<const char *, const char *>{
                               "dq_warpgroups", "dq-wg"},
                           {"dkdv_warpgroups", "dkdv-wg"}}) {
    rt::Expected<int64_t> warpgroups = rt::configInteger(bundle, key);
    if (warpgroups.ok() && *warpgroups > 1)
      label += std::string(" ") + name + "=" + std::to_string(*warpgroups);
  }
  // The split's division of dQ's share, where it is not the columns.
  rt::Expected<std::string> split = rt::configTextOr(bundle, "dq_split", "");
  if (split.ok() && !split->empty())
    label += " dq-split=" + *split;
  return label;
}

/// A sink-fwd or sink-bwd bundle compiled for run-time shapes, for the
/// shape flags given (the bundle's own instance where a flag is not).
rt::Expected<rt::Bundle> reshapeAttention(const rt::Bundle &bundle,
                                          const Options &options) {
  for (const char *flag : {"m", "n"})
    if (options.wasGiven(flag))
      return rt::Status::error(std::string("--") + flag +
                               " does not apply to a " + bundle.kernel +
                               " bundle (its shape flags are --seqlens-q, "
                               "--seqlens-kv, --heads, --kv-heads, --window "
                               "and --softmax-scale)");
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkAttentionShape shape,
                               sinkFwdShape(bundle));
  // The flags given replace the bundle's default instance.
  if (options.wasGiven("heads"))
    shape.heads = options.heads;
  if (options.wasGiven("kv-heads"))
    shape.kvHeads = options.kvHeads;
  if (options.wasGiven("window"))
    shape.window = options.window;
  if (options.wasGiven("softmax-scale"))
    shape.scale = options.softmaxScale;
  std::vector<int64_t> seqlensQ = rt::lengthsOf(shape.cuSeqlensQ),
                       seqlensKv = rt::lengthsOf(shape.cuSeqlensKv);
  if (options.wasGiven("seqlens-q")) {
    seqlensQ = options.seqlensQ;
    seqlensKv = options.seqlensKv;
  }
  return rt::sinkFwdForLengths(bundle, shape, seqlensQ, seqlensKv);
}

KernelKind gemm() {
  KernelKind kind;
  kind.name = "gemm";
  kind.flags = {"schedule", "persistent", "copy-engine"};
  kind.randomInput = uniformInput;
  kind.check = &Session::checkGemm;
  kind.countWork = countGemm;
  return kind;
}

KernelKind sinkFwd() {
  KernelKind kind;
  kind.name = "sink-fwd";
  kind.flags =
      withAttentionFlags({"schedule", "persistent", "pack-gqa", "tune-cache",
                          "run-time-shapes", "non-causal", "softmax-scale"});
  kind.decidesPersistence = true;
  kind.reshape = reshapeAttention;
  kind.randomInput = attentionInput;
  kind.integerInput = attentionIntegerInput;
  kind.validate = [](const rt::Bundle &bundle) {
    return sinkFwdShape(bundle).status();
  };
  kind.check = &Session::checkSinkFwd;
  kind.countWork = [](const rt::Bundle &bundle, double seconds,
                      BenchReport &report) {
    return countAttention(bundle, seconds, report, 1.0);
  };
  kind.seedWindows = {0, 128};
  kind.seedFormula = "TFLOP/s (seed) = 4*B*H*S*S*D/2 / median time; (exact) "
                     "counts the attended (query, key) pairs.";
  return kind;
}

KernelKind sinkBwd() {
  KernelKind kind;
  kind.name = "sink-bwd";
  kind.flags = withAttentionFlags(
      {"schedule", "dq", "dq-split", "dq-warpgroups", "dkdv-warpgroups",
       "deterministic", "run-time-shapes", "softmax-scale"});
  kind.reshape = reshapeAttention;
  kind.randomInput = attentionInput;
  kind.integerInput = attentionIntegerInput;
  kind.validate = [](const rt::Bundle &bundle) {
    return sinkBwdShape(bundle).status();
  };
  kind.check = &Session::checkSinkBwd;
  kind.countWork = [](const rt::Bundle &bundle, double seconds,
                      BenchReport &report) {
    return countAttention(bundle, seconds, report, 2.5);
  };
  kind.describeForm = describeSinkBwdForm;
  // The causal table only: its comparison, cuDNN's causal backward, has no
  // window.
  kind.seedWindows = {0};
  kind.seedFormula =
      "TFLOP/s (seed) = 2.5 * 4*B*H*S*S*D/2 / median time (the backward "
      "counts 2.5 forwards); (exact) counts the attended (query, key) pairs.";
  return kind;
}

KernelKind tmaCopy() {
  KernelKind kind;
  kind.name = "tma-copy";
  kind.flags = {"run-time-shapes"};
  kind.reshape = [](const rt::Bundle &bundle,
                    const Options &options) -> rt::Expected<rt::Bundle> {
    int64_t m = options.wasGiven("m") ? options.m : configInt(bundle, "m");
    int64_t n = options.wasGiven("n") ? options.n : configInt(bundle, "n");
    rt::Expected<rt::Bundle> shaped =
        rt::tmaCopyForShape(bundle, uint64_t(m), uint64_t(n));
    if (!shaped.ok())
      return shaped.status().withContext("--m " + std::to_string(m) + " --n " +
                                         std::to_string(n) + ": ");
    return shaped;
  };
  kind.randomInput = uniformInput;
  kind.check = &Session::checkTmaCopy;
  kind.countWork = countCopy;
  return kind;
}

KernelKind tmaStream() {
  KernelKind kind;
  kind.name = "tma-stream";
  kind.randomInput = streamInput;
  kind.check = &Session::checkTmaStream;
  kind.countWork = countStream;
  return kind;
}

KernelKind tmaIm2col() {
  KernelKind kind;
  kind.name = "tma-im2col";
  kind.randomInput = uniformInput;
  kind.check = &Session::checkTmaIm2col;
  kind.countWork = countNothing;
  return kind;
}

} // namespace

bool KernelKind::takes(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

const std::vector<KernelKind> &runner::kernelKinds() {
  // The order of lib/Kernels' kernelNames(), which error messages list.
  static const std::vector<KernelKind> kinds = {
      gemm(), sinkFwd(), sinkBwd(), tmaCopy(), tmaStream(), tmaIm2col()};
  return kinds;
}

const KernelKind *runner::findKernelKind(std::string_view name) {
  for (const KernelKind &kind : kernelKinds())
    if (kind.name == name)
      return &kind;
  return nullptr;
}

rt::Expected<const KernelKind *> runner::kernelKind(const std::string &name) {
  if (const KernelKind *kind = findKernelKind(name))
    return kind;
  return rt::Status::error("unknown kernel '" + name + "' (known: " +
                           kindNames([](const KernelKind &) { return true; }) +
                           ")");
}
