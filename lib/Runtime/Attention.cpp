//===- Attention.cpp - Attention with sinks on device tensors -------------===//

#include "SinkAttn/Runtime/Attention.h"

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/KernelGrids.h"
#include "SinkAttn/Runtime/TileSchedule.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <tuple>

namespace sinkattn::rt {

bool SinkFwdVariant::operator==(const SinkFwdVariant &o) const {
  return dtype == o.dtype && sinkDtype == o.sinkDtype && headDim == o.headDim &&
         causal == o.causal && windowed == o.windowed;
}

std::string SinkFwdVariant::describe() const {
  return std::string(dtypeName(dtype)) + " D=" + std::to_string(headDim) +
         (causal ? " causal" : " non-causal") +
         (windowed ? " sliding-window " : " ") + dtypeName(sinkDtype) +
         " sinks";
}

namespace {
std::string formatSizes(const std::vector<int64_t> &sizes) {
  std::string text = "[";
  for (size_t d = 0; d < sizes.size(); ++d)
    text += (d ? ", " : "") + std::to_string(sizes[d]);
  return text + "]";
}

/// A tensor of `rank` sizes in [0, 2^31) (the offsets are i32, the
/// kernels' index math 32-bit) at a non-null address, of one of
/// `dtypes`, dense, or with `tokenRows` (q, k, v, out: [T, H, D]) whose
/// tokens may be any stride apart that keeps them from overlapping (views
/// of a fused QKV tensor) while each token's heads stay dense. Tensors the
/// kernels read or write by TMA rows need 16-byte aligned addresses and
/// token strides.
Status checkTensor(const char *name, const DeviceTensor &t, size_t rank,
                   std::initializer_list<DType> dtypes,
                   bool tokenRows = false) {
  std::string where = std::string(name) + ": ";
  if (t.data == 0)
    return Status::error(where + "the device address is null");
  if (t.sizes.size() != rank)
    return Status::error(where + "has " + std::to_string(t.sizes.size()) +
                         " dimensions " + formatSizes(t.sizes) + "; expected " +
                         std::to_string(rank));
  for (int64_t size : t.sizes)
    if (size < 0 || size > INT32_MAX)
      return Status::error(where + "has a size outside [0, 2^31-1] in " +
                           formatSizes(t.sizes));
  for (int64_t stride : t.strides)
    if (stride < 0 || stride > (int64_t(1) << 40))
      return Status::error(where + "has a stride outside [0, 2^40] in " +
                           formatSizes(t.strides));
  if (std::find(dtypes.begin(), dtypes.end(), t.dtype) == dtypes.end()) {
    std::string expected;
    for (DType d : dtypes)
      expected += (expected.empty() ? "" : " or ") + std::string(dtypeName(d));
    return Status::error(where + "has dtype " + dtypeName(t.dtype) +
                         "; expected " + expected);
  }
  if (tokenRows && t.data % 16 != 0)
    return Status::error(where + "the address is not 16-byte aligned (the "
                                 "kernels read and write it in 16-byte rows)");
  if (!t.strides.empty()) {
    if (t.strides.size() != rank)
      return Status::error(where + "has " + std::to_string(t.strides.size()) +
                           " strides for " + std::to_string(rank) +
                           " dimensions");
    // With token rows, the tokens' stride is checked apart; the rest must
    // be dense.
    size_t denseFrom = tokenRows ? 1 : 0;
    if (tokenRows && t.sizes[0] > 1) {
      const int64_t row = t.sizes[1] * t.sizes[2];
      if (t.strides[0] < row)
        return Status::error(where + "token stride " +
                             std::to_string(t.strides[0]) +
                             " is below a token's " + std::to_string(row) +
                             " elements (tokens would overlap)");
      if (t.strides[0] * int64_t(dtypeSize(t.dtype)) % 16 != 0)
        return Status::error(where + "token stride " +
                             std::to_string(t.strides[0]) +
                             " is not a multiple of 16 bytes (the kernels' "
                             "tensor maps need one)");
    }
    int64_t expected = 1;
    for (size_t d = rank; d-- > denseFrom;) {
      // Sizes past 2^31 were refused, strides past 2^40: an expected stride
      // past that cannot match.
      if (expected > (int64_t(1) << 40))
        expected = -1;
      if (t.strides[d] != expected && t.sizes[d] > 1)
        return Status::error(
            where + "strides " + formatSizes(t.strides) +
            (tokenRows ? " are not dense within a token (heads and "
                         "elements) for sizes "
                       : " are not those of a dense row-major tensor of "
                         "sizes ") +
            formatSizes(t.sizes) + "; copy it with .contiguous()");
      if (expected > 0)
        expected *= std::max<int64_t>(t.sizes[d], 1);
    }
  }
  return Status();
}

/// The bytes [begin, end) a checked tensor reaches.
std::pair<unsigned __int128, unsigned __int128>
byteRange(const DeviceTensor &t) {
  using Wide = unsigned __int128;
  Wide last = 0;
  for (size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] == 0)
      return {t.data, t.data};
    Wide stride = 1;
    if (!t.strides.empty()) {
      stride = Wide(t.strides[d]);
    } else {
      for (size_t e = d + 1; e < t.sizes.size(); ++e)
        stride *= Wide(t.sizes[e]);
    }
    last += Wide(t.sizes[d] - 1) * stride;
  }
  return {t.data, t.data + (last + 1) * dtypeSize(t.dtype)};
}

/// Whether two checked [T, heads, D] tensors whose tokens are one stride
/// apart are views of one fused tensor whose rows they split (dQ, dK and
/// dV of a packed dQKV): within every stride their tokens' bytes lie apart.
bool interleavedTokenRows(const DeviceTensor &t, const DeviceTensor &u) {
  if (t.sizes.size() != 3 || u.sizes.size() != 3 || t.strides.empty() ||
      u.strides.empty())
    return false;
  const uint64_t stride = uint64_t(t.strides[0]) * dtypeSize(t.dtype);
  if (stride == 0 || stride != uint64_t(u.strides[0]) * dtypeSize(u.dtype))
    return false;
  const uint64_t rowT = uint64_t(t.sizes[1] * t.sizes[2]) * dtypeSize(t.dtype),
                 rowU = uint64_t(u.sizes[1] * u.sizes[2]) * dtypeSize(u.dtype);
  // u's token starts this many bytes after t's, modulo the stride.
  const __int128 apart = __int128(u.data) - __int128(t.data);
  const uint64_t after = uint64_t(
      ((apart % __int128(stride)) + __int128(stride)) % __int128(stride));
  return after >= rowT && after + rowU <= stride;
}

/// An output must not share memory with another tensor of the call: the
/// kernel would read what it writes, or two outputs race.
Status disjoint(const char *name, const DeviceTensor &t, const char *other,
                const DeviceTensor &u) {
  auto [begin, end] = byteRange(t);
  auto [otherBegin, otherEnd] = byteRange(u);
  if (begin < otherEnd && otherBegin < end && !interleavedTokenRows(t, u))
    return Status::error(std::string(name) + ": overlaps " + other +
                         " in memory (an output needs memory of its own)");
  return Status();
}

Status sameSizes(const char *name, const DeviceTensor &t, const char *other,
                 const std::vector<int64_t> &sizes) {
  if (t.sizes != sizes)
    return Status::error(std::string(name) + ": sizes " +
                         formatSizes(t.sizes) + " differ from " + other +
                         "'s " + formatSizes(sizes));
  return Status();
}
} // namespace

Expected<VarlenForwardProblem>
validateVarlenForward(const VarlenForwardArgs &args) {
  SINKATTN_RT_TRY(checkTensor("q", args.q, 3, {DType::BF16, DType::F16}, true));
  SINKATTN_RT_TRY(checkTensor("k", args.k, 3, {args.q.dtype}, true));
  SINKATTN_RT_TRY(checkTensor("v", args.v, 3, {args.q.dtype}, true));
  SINKATTN_RT_TRY(checkTensor("out", args.out, 3, {args.q.dtype}, true));
  SINKATTN_RT_TRY(checkTensor("lse", args.lse, 2, {DType::F32}));
  SINKATTN_RT_TRY(checkTensor("cu_seqlens_q", args.cuSeqlensQ, 1, {DType::I32}));
  SINKATTN_RT_TRY(
      checkTensor("cu_seqlens_k", args.cuSeqlensKv, 1, {DType::I32}));
  const int64_t tokensQ = args.q.sizes[0], heads = args.q.sizes[1],
                headDim = args.q.sizes[2], tokensKv = args.k.sizes[0],
                kvHeads = args.k.sizes[1];
  if (headDim != 64 && headDim != 128)
    return Status::error("q: head dimension " + std::to_string(headDim) +
                         " is not compiled; the kernels take 64 or 128");
  if (heads < 1 || kvHeads < 1)
    return Status::error("q, k: need at least one head, got H=" +
                         std::to_string(heads) +
                         " HK=" + std::to_string(kvHeads));
  if (heads % kvHeads != 0)
    return Status::error("k: " + std::to_string(kvHeads) +
                         " kv heads do not divide q's " +
                         std::to_string(heads) + " heads");
  if (args.k.sizes[2] != headDim)
    return Status::error("k: head dimension " +
                         std::to_string(args.k.sizes[2]) + " differs from q's " +
                         std::to_string(headDim));
  SINKATTN_RT_TRY(sameSizes("v", args.v, "k", args.k.sizes));
  for (auto [name, input] : {std::pair{"q", &args.q},
                             {"k", &args.k},
                             {"v", &args.v},
                             {"cu_seqlens_q", &args.cuSeqlensQ},
                             {"cu_seqlens_k", &args.cuSeqlensKv}}) {
    SINKATTN_RT_TRY(disjoint("out", args.out, name, *input));
    SINKATTN_RT_TRY(disjoint("lse", args.lse, name, *input));
  }
  if (args.sinks) {
    SINKATTN_RT_TRY(disjoint("out", args.out, "sinks", *args.sinks));
    SINKATTN_RT_TRY(disjoint("lse", args.lse, "sinks", *args.sinks));
  }
  SINKATTN_RT_TRY(disjoint("lse", args.lse, "out", args.out));
  SINKATTN_RT_TRY(sameSizes("out", args.out, "q", args.q.sizes));
  SINKATTN_RT_TRY(sameSizes("lse", args.lse, "[H, Tq] of q", {heads, tokensQ}));
  if (tokensQ < 1 || tokensKv < 1)
    return Status::error("q, k: need at least one query and one key token, "
                         "got Tq=" +
                         std::to_string(tokensQ) +
                         " Tkv=" + std::to_string(tokensKv));
  {
    SinkAttentionShape sizes;
    sizes.heads = heads;
    sizes.kvHeads = kvHeads;
    sizes.headDim = headDim;
    SINKATTN_RT_TRY(
        attentionTensorsFit(tokensQ, tokensKv, sizes).withContext("q, k: "));
  }
  const int64_t offsets = args.cuSeqlensQ.sizes[0];
  if (offsets < 2)
    return Status::error("cu_seqlens_q: " + std::to_string(offsets) +
                         " offsets; B sequences need B + 1, at least 2");
  SINKATTN_RT_TRY(sameSizes("cu_seqlens_k", args.cuSeqlensKv, "cu_seqlens_q",
                            args.cuSeqlensQ.sizes));
  // The grid (rt::attentionBlockGrid): windowed, heads in y and sequences
  // in z; otherwise sequences x kv heads in z.
  if (args.window > 0 ? offsets - 1 > 65535 : offsets - 1 > 65535 / kvHeads)
    return Status::error(
        "cu_seqlens_q: " + std::to_string(offsets - 1) + " sequences" +
        (args.window > 0 ? std::string()
                         : " x " + std::to_string(kvHeads) + " kv heads") +
        " exceed the 65535 blocks of a grid dimension");
  if (args.window > 0 && heads > 65535)
    return Status::error("q: " + std::to_string(heads) +
                         " heads with a window exceed the 65535 blocks of a "
                         "grid dimension");
  VarlenForwardProblem problem;
  SinkFwdVariant &variant = problem.variant;
  variant.dtype = args.q.dtype;
  variant.headDim = headDim;
  if (args.sinks) {
    SINKATTN_RT_TRY(
        checkTensor("sinks", *args.sinks, 1, {DType::F32, DType::BF16}));
    SINKATTN_RT_TRY(sameSizes("sinks", *args.sinks, "[H] of q", {heads}));
    variant.sinkDtype = args.sinks->dtype;
  }
  if (args.maxSeqlenQ < 1 || args.maxSeqlenQ > tokensQ)
    return Status::error("max_seqlen_q: " + std::to_string(args.maxSeqlenQ) +
                         " is not in [1, Tq = " + std::to_string(tokensQ) +
                         "]");
  if (args.maxSeqlenKv < 1 || args.maxSeqlenKv > tokensKv)
    return Status::error("max_seqlen_k: " + std::to_string(args.maxSeqlenKv) +
                         " is not in [1, Tkv = " + std::to_string(tokensKv) +
                         "]");
  if (args.window < 0 || args.window > INT32_MAX)
    return Status::error("window: " + std::to_string(args.window) +
                         " is not in [0, 2^31-1] (0: no window)");
  if (args.window > 0 && !args.causal)
    return Status::error("window: a sliding window of " +
                         std::to_string(args.window) +
                         " keys needs causal=true (it ends at each query's "
                         "position)");
  variant.causal = args.causal;
  variant.windowed = args.window > 0;
  problem.softmaxScale = 1.0 / std::sqrt(double(headDim));
  if (args.softmaxScale) {
    if (!std::isfinite(*args.softmaxScale) || *args.softmaxScale <= 0)
      return Status::error(
          "softmax_scale: " + std::to_string(*args.softmaxScale) +
          " is not a positive finite number");
    // The kernels take it in log2 units, as an f32.
    if (*args.softmaxScale * 1.4426950408889634 >
        double(std::numeric_limits<float>::max()))
      return Status::error(
          "softmax_scale: " + std::to_string(*args.softmaxScale) +
          " is too large for the kernels' f32");
    problem.softmaxScale = *args.softmaxScale;
  }
  problem.heads = heads;
  problem.kvHeads = kvHeads;
  problem.window = args.window;
  problem.tokensQ = tokensQ;
  problem.tokensKv = tokensKv;
  auto tokenStride = [](const DeviceTensor &t) -> int64_t {
    return t.strides.empty() || t.sizes[0] <= 1 ? 0 : t.strides[0];
  };
  problem.tokenStrides = {tokenStride(args.q), tokenStride(args.k),
                          tokenStride(args.v), tokenStride(args.out)};
  problem.batch = offsets - 1;
  problem.maxSeqlenQ = args.maxSeqlenQ;
  problem.maxSeqlenKv = args.maxSeqlenKv;
  return problem;
}

namespace {
/// The forward call whose gradients a backward call asks for.
VarlenForwardArgs forwardOf(const VarlenBackwardArgs &args) {
  VarlenForwardArgs forward;
  forward.q = args.q;
  forward.k = args.k;
  forward.v = args.v;
  forward.out = args.out;
  forward.lse = args.lse;
  forward.sinks = args.sinks;
  forward.cuSeqlensQ = args.cuSeqlensQ;
  forward.cuSeqlensKv = args.cuSeqlensKv;
  forward.maxSeqlenQ = args.maxSeqlenQ;
  forward.maxSeqlenKv = args.maxSeqlenKv;
  forward.causal = args.causal;
  forward.window = args.window;
  forward.softmaxScale = args.softmaxScale;
  return forward;
}

/// A backward call's tensors by argument name.
using NamedTensors = std::vector<std::pair<const char *, const DeviceTensor *>>;
/// Those it reads.
NamedTensors backwardInputs(const VarlenBackwardArgs &args) {
  NamedTensors inputs = {{"q", &args.q},
                         {"k", &args.k},
                         {"v", &args.v},
                         {"out", &args.out},
                         {"lse", &args.lse},
                         {"dout", &args.dout},
                         {"cu_seqlens_q", &args.cuSeqlensQ},
                         {"cu_seqlens_k", &args.cuSeqlensKv}};
  if (args.sinks)
    inputs.push_back({"sinks", &*args.sinks});
  return inputs;
}
/// Those it writes.
NamedTensors backwardOutputs(const VarlenBackwardArgs &args) {
  NamedTensors outputs = {{"dq", &args.dq}, {"dk", &args.dk}, {"dv", &args.dv}};
  if (args.dsinks)
    outputs.push_back({"dsinks", &*args.dsinks});
  return outputs;
}
} // namespace

Expected<VarlenBackwardProblem>
validateVarlenBackward(const VarlenBackwardArgs &args) {
  if (!args.causal)
    return Status::error("causal: the backward is causal only so far");
  // The forward's arguments, as the forward checks them.
  VarlenBackwardProblem problem;
  SINKATTN_RT_ASSIGN_OR_RETURN(problem.forward,
                               validateVarlenForward(forwardOf(args)));
  SINKATTN_RT_TRY(
      checkTensor("dout", args.dout, 3, {args.q.dtype}, /*tokenRows=*/true));
  SINKATTN_RT_TRY(sameSizes("dout", args.dout, "q", args.q.sizes));
  // Each gradient with the input it is the gradient of.
  const std::tuple<const char *, const DeviceTensor *, const char *,
                   const DeviceTensor *>
      gradients[] = {{"dq", &args.dq, "q", &args.q},
                     {"dk", &args.dk, "k", &args.k},
                     {"dv", &args.dv, "v", &args.v}};
  for (auto [name, gradient, inputName, input] : gradients) {
    SINKATTN_RT_TRY(
        checkTensor(name, *gradient, 3, {args.q.dtype}, /*tokenRows=*/true));
    SINKATTN_RT_TRY(sameSizes(name, *gradient, inputName, input->sizes));
  }
  if (args.sinks && !args.dsinks)
    return Status::error("dsinks: a call with sinks needs their gradient's "
                         "[H] f32 tensor");
  if (!args.sinks && args.dsinks)
    return Status::error("dsinks: given without sinks (a call without sinks "
                         "has no sink gradient)");
  if (args.dsinks) {
    SINKATTN_RT_TRY(checkTensor("dsinks", *args.dsinks, 1, {DType::F32}));
    SINKATTN_RT_TRY(
        sameSizes("dsinks", *args.dsinks, "[H] of q", {problem.forward.heads}));
  }
  // Every output its own memory, apart from the inputs and each other.
  const NamedTensors inputs = backwardInputs(args),
                     outputs = backwardOutputs(args);
  for (size_t i = 0; i < outputs.size(); ++i) {
    for (auto [name, input] : inputs)
      SINKATTN_RT_TRY(
          disjoint(outputs[i].first, *outputs[i].second, name, *input));
    for (size_t j = 0; j < i; ++j)
      SINKATTN_RT_TRY(disjoint(outputs[i].first, *outputs[i].second,
                               outputs[j].first, *outputs[j].second));
  }
  auto tokenStride = [](const DeviceTensor &t) -> int64_t {
    return t.strides.empty() || t.sizes[0] <= 1 ? 0 : t.strides[0];
  };
  problem.gradientStrides = {tokenStride(args.dout), tokenStride(args.dq),
                             tokenStride(args.dk), tokenStride(args.dv)};
  return problem;
}

namespace {
/// The variant of a varlen `kernel` (sink-fwd or sink-bwd) bundle compiled
/// for run-time shapes.
Expected<SinkFwdVariant> attentionVariantOf(const Bundle &bundle,
                                            const std::string &kernel) {
  const BundleParam *q = findParam(bundle, "q");
  if (bundle.kernel != kernel)
    return Status::error("holds a " + bundle.kernel + " kernel, not " + kernel);
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string layout, configText(bundle, "layout"));
  if (layout != "varlen" || !q || !q->descriptor)
    return Status::error("is not a varlen " + kernel +
                         " bundle for run-time shapes (compile it with "
                         "--layout varlen --run-time-shapes)");
  SinkFwdVariant variant;
  variant.dtype = q->dtype;
  const BundleParam *sinks = findParam(bundle, "sinks");
  if (!sinks)
    return Status::error("has no sinks buffer");
  variant.sinkDtype = sinks->dtype;
  SINKATTN_RT_ASSIGN_OR_RETURN(variant.headDim, configInteger(bundle, "head_dim"));
  if (!findParam(bundle, "scale_log2"))
    return Status::error("takes no softmax scale: compiled by an older "
                         "SinkAttn (heads, window and scale were compiled "
                         "in); recompile it");
  if (!findParam(bundle, "cu_seqlens_q_unit") ||
      !findParam(bundle, "cu_seqlens_kv_unit"))
    return Status::error("takes no units for its sequence offsets: compiled "
                         "by an older SinkAttn; recompile it");
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t causal, configInteger(bundle, "causal"));
  variant.causal = causal != 0;
  variant.windowed = findParam(bundle, "window") != nullptr;
  return variant;
}
} // namespace

Expected<SinkFwdVariant> sinkFwdVariantOf(const Bundle &bundle) {
  return attentionVariantOf(bundle, "sink-fwd");
}

Expected<SinkFwdVariant> sinkBwdVariantOf(const Bundle &bundle) {
  SINKATTN_RT_ASSIGN_OR_RETURN(SinkFwdVariant variant,
                               attentionVariantOf(bundle, "sink-bwd"));
  if (!findParam(bundle, "scale"))
    return Status::error("takes no softmax scale for its gradients: compiled "
                         "by an older SinkAttn; recompile it");
  return variant;
}

namespace {
/// What a kernel for run-time shapes takes of a validated call: batch,
/// heads, head dim, window, scale and causality (the lengths go apart).
SinkAttentionShape runTimeSizesOf(const VarlenForwardProblem &problem) {
  SinkAttentionShape sizes;
  sizes.layout = AttentionLayout::Varlen;
  sizes.batch = problem.batch;
  sizes.heads = problem.heads;
  sizes.kvHeads = problem.kvHeads;
  sizes.headDim = problem.variant.headDim;
  sizes.window = problem.window;
  sizes.scale = problem.softmaxScale;
  sizes.causal = problem.variant.causal;
  return sizes;
}
} // namespace

Expected<Bundle> sinkFwdForProblem(const Bundle &bundle,
                                   const VarlenForwardProblem &problem,
                                   int64_t smCount) {
  SINKATTN_RT_ASSIGN_OR_RETURN(SinkFwdVariant variant,
                               sinkFwdVariantOf(bundle));
  if (!(variant == problem.variant))
    return Status::error("the bundle serves " + variant.describe() +
                         ", the call needs " + problem.variant.describe());
  return sinkFwdForSizes(bundle, runTimeSizesOf(problem), problem.tokensQ,
                         problem.tokensKv, problem.maxSeqlenQ,
                         "max_seqlen_q " + std::to_string(problem.maxSeqlenQ) +
                             ": ",
                         problem.tokenStrides, problem.offsetUnits, smCount);
}

namespace {
/// A BSHD tensor ([B, S, heads, D]) as [B * S, heads, D] token rows: its
/// tokens must be evenly spaced across the batch.
Expected<DeviceTensor> asTokenRows(const char *name, const DeviceTensor &t) {
  std::string where = std::string(name) + ": ";
  if (t.sizes.size() != 4)
    return Status::error(where + "has " + std::to_string(t.sizes.size()) +
                         " dimensions " + formatSizes(t.sizes) +
                         "; expected 4 ([B, S, heads, D])");
  for (int64_t size : t.sizes)
    if (size < 0 || size > INT32_MAX)
      return Status::error(where + "has a size outside [0, 2^31-1] in " +
                           formatSizes(t.sizes));
  DeviceTensor rows = t;
  rows.sizes = {t.sizes[0] * t.sizes[1], t.sizes[2], t.sizes[3]};
  if (t.strides.empty())
    return rows;
  if (t.strides.size() != 4)
    return Status::error(where + "has " + std::to_string(t.strides.size()) +
                         " strides for 4 dimensions");
  for (int64_t stride : t.strides)
    if (stride < 0 || stride > (int64_t(1) << 40))
      return Status::error(where + "has a stride outside [0, 2^40] in " +
                           formatSizes(t.strides));
  const int64_t batch = t.sizes[0], length = t.sizes[1];
  // One token per sequence: the batch stride is the token stride.
  const int64_t tokenStride = length > 1 ? t.strides[1] : t.strides[0];
  // Divided rather than multiplied: the product could overflow.
  if (batch > 1 && length > 1 &&
      (t.strides[0] % length != 0 || t.strides[0] / length != t.strides[1]))
    return Status::error(
        where + "batch stride " + std::to_string(t.strides[0]) +
        " is not the length " + std::to_string(length) +
        " times the token stride " + std::to_string(t.strides[1]) +
        " (the kernels take the batch's tokens evenly spaced); copy it with "
        ".contiguous()");
  rows.strides = {tokenStride, t.strides[2], t.strides[3]};
  return rows;
}
} // namespace

Expected<VarlenForwardArgs> bshdAsVarlen(const ForwardArgs &args,
                                         CUdeviceptr offsetTable) {
  VarlenForwardArgs varlen;
  SINKATTN_RT_ASSIGN_OR_RETURN(varlen.q, asTokenRows("q", args.q));
  SINKATTN_RT_ASSIGN_OR_RETURN(varlen.k, asTokenRows("k", args.k));
  SINKATTN_RT_ASSIGN_OR_RETURN(varlen.v, asTokenRows("v", args.v));
  SINKATTN_RT_ASSIGN_OR_RETURN(varlen.out, asTokenRows("out", args.out));
  const int64_t batch = args.q.sizes[0], seqQ = args.q.sizes[1],
                heads = args.q.sizes[2], seqKv = args.k.sizes[1],
                kvHeads = args.k.sizes[2];
  for (auto [name, t] : {std::pair{"k", &args.k}, {"v", &args.v},
                         {"out", &args.out}})
    if (t->sizes[0] != batch)
      return Status::error(std::string(name) + ": batch " +
                           std::to_string(t->sizes[0]) + " differs from q's " +
                           std::to_string(batch));
  if (batch < 1 || seqQ < 1 || seqKv < 1)
    return Status::error("q, k: need at least one sequence of at least one "
                         "query and one key, got B=" +
                         std::to_string(batch) + " SQ=" + std::to_string(seqQ) +
                         " SKV=" + std::to_string(seqKv));
  if (batch > kMaxBatch ||
      (args.window == 0 && kvHeads > 0 && batch > kMaxBatch / kvHeads))
    return Status::error(
        "q: batch " + std::to_string(batch) +
        (args.window > 0 ? std::string()
                         : " x " + std::to_string(kvHeads) + " kv heads") +
        " exceed the 65535 blocks of a grid dimension");
  // LSE: [B, H, SQ] over the memory of [H, B * SQ].
  const DeviceTensor &lse = args.lse;
  if (lse.sizes != std::vector<int64_t>{batch, heads, seqQ})
    return Status::error("lse: sizes " + formatSizes(lse.sizes) +
                         " differ from [B, H, SQ] of q, " +
                         formatSizes({batch, heads, seqQ}));
  const std::vector<int64_t> lseStrides = {seqQ, batch * seqQ, 1};
  for (size_t d = 0; d < 3 && !lse.strides.empty(); ++d)
    if (lse.sizes[d] > 1 &&
        (lse.strides.size() != 3 || lse.strides[d] != lseStrides[d]))
      return Status::error(
          "lse: strides " + formatSizes(lse.strides) +
          " are not those of a [B, H, SQ] view of an [H, B * SQ] tensor, " +
          formatSizes(lseStrides) +
          " (torch.empty(H, B * SQ).view(H, B, SQ).permute(1, 0, 2))");
  // Dense [B, H, SQ] is that view only for one sequence or one head.
  if (lse.strides.empty() && batch > 1 && heads > 1)
    return Status::error("lse: a dense [B, H, SQ] tensor is not the [H, B * "
                         "SQ] memory the kernels write; pass the view " +
                         formatSizes(lseStrides) +
                         " (torch.empty(H, B * SQ).view(H, B, SQ).permute(1, "
                         "0, 2))");
  varlen.lse = {lse.data, lse.dtype, {heads, batch * seqQ}, {}};
  varlen.sinks = args.sinks;
  varlen.cuSeqlensQ = {offsetTable, DType::I32, {batch + 1}, {}};
  varlen.cuSeqlensKv = varlen.cuSeqlensQ;
  varlen.maxSeqlenQ = seqQ;
  varlen.maxSeqlenKv = seqKv;
  varlen.causal = args.causal;
  varlen.window = args.window;
  varlen.softmaxScale = args.softmaxScale;
  return varlen;
}

Expected<VarlenBackwardArgs> bshdBackwardAsVarlen(const BackwardArgs &args,
                                                  CUdeviceptr offsetTable) {
  ForwardArgs forward;
  forward.q = args.q;
  forward.k = args.k;
  forward.v = args.v;
  forward.out = args.out;
  forward.lse = args.lse;
  forward.sinks = args.sinks;
  forward.causal = args.causal;
  forward.window = args.window;
  forward.softmaxScale = args.softmaxScale;
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardArgs varlen,
                               bshdAsVarlen(forward, offsetTable));
  VarlenBackwardArgs backward;
  backward.q = varlen.q, backward.k = varlen.k, backward.v = varlen.v;
  backward.out = varlen.out, backward.lse = varlen.lse;
  backward.sinks = varlen.sinks;
  backward.cuSeqlensQ = varlen.cuSeqlensQ;
  backward.cuSeqlensKv = varlen.cuSeqlensKv;
  backward.maxSeqlenQ = varlen.maxSeqlenQ;
  backward.maxSeqlenKv = varlen.maxSeqlenKv;
  backward.causal = varlen.causal;
  backward.window = varlen.window;
  backward.softmaxScale = varlen.softmaxScale;
  // Each gradient with the input whose batch and length it has.
  for (auto [name, gradient, rows, like] :
       {std::tuple{"dout", &args.dout, &backward.dout, &args.q},
        std::tuple{"dq", &args.dq, &backward.dq, &args.q},
        std::tuple{"dk", &args.dk, &backward.dk, &args.k},
        std::tuple{"dv", &args.dv, &backward.dv, &args.v}}) {
    SINKATTN_RT_ASSIGN_OR_RETURN(*rows, asTokenRows(name, *gradient));
    if (gradient->sizes[0] != like->sizes[0] ||
        gradient->sizes[1] != like->sizes[1])
      return Status::error(
          std::string(name) + ": sizes " + formatSizes(gradient->sizes) +
          " differ in batch or length from " + formatSizes(like->sizes));
  }
  backward.dsinks = args.dsinks;
  backward.workspace = args.workspace;
  backward.workspaceBytes = args.workspaceBytes;
  return backward;
}

Expected<VarlenBackwardProblem> validateBackward(const BackwardArgs &args) {
  // Where the library's table will be: an address no tensor reaches.
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardArgs varlen,
                               bshdBackwardAsVarlen(args, CUdeviceptr(16)));
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardProblem problem,
                               validateVarlenBackward(varlen));
  problem.forward.offsetUnits = {varlen.maxSeqlenQ, varlen.maxSeqlenKv};
  return problem;
}

Expected<VarlenForwardProblem> validateForward(const ForwardArgs &args) {
  // Where the library's table will be: an address no tensor reaches.
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardArgs varlen,
                               bshdAsVarlen(args, CUdeviceptr(16)));
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardProblem problem,
                               validateVarlenForward(varlen));
  problem.offsetUnits = {varlen.maxSeqlenQ, varlen.maxSeqlenKv};
  return problem;
}

namespace {
/// Whether a library's bundle is persistent: it takes the launch's tile
/// table.
bool isPersistent(const Bundle &bundle) {
  return findParam(bundle, "tiles") != nullptr;
}
} // namespace

Expected<std::vector<KernelLibraryEntry>>
scanKernelLibrary(const std::string &directory) {
  std::error_code ec;
  std::vector<std::filesystem::path> entries;
  // Incremented with an error code: a range-for's increment would throw.
  for (std::filesystem::directory_iterator it(directory, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code statError;
    if (it->is_directory(statError) &&
        std::filesystem::exists(it->path() / kBundleManifestFile, statError))
      entries.push_back(it->path());
  }
  if (ec)
    return Status::error("kernel library '" + directory +
                         "': cannot list it: " + ec.message());
  std::sort(entries.begin(), entries.end());
  std::vector<KernelLibraryEntry> kernels;
  // Why the sink-fwd bundles that a call cannot use were passed over.
  std::string skipped;
  for (const std::filesystem::path &path : entries) {
    SINKATTN_RT_ASSIGN_OR_RETURN(Bundle bundle, readBundle(path.string()));
    const bool backward = bundle.kernel == "sink-bwd";
    Expected<SinkFwdVariant> variant =
        backward ? sinkBwdVariantOf(bundle) : sinkFwdVariantOf(bundle);
    if (!variant.ok()) {
      if (bundle.kernel == "sink-fwd" || backward)
        skipped += "; " + path.filename().string() + " " + variant.message();
      continue;
    }
    SINKATTN_RT_ASSIGN_OR_RETURN(std::string schedule,
                                 configText(bundle, "schedule"));
    // A backward's form: how it sums dQ (separate, atomic; with the
    // deferred split "atomic-deferred").
    if (backward) {
      SINKATTN_RT_ASSIGN_OR_RETURN(std::string dq,
                                   configTextOr(bundle, "dq", "separate"));
      SINKATTN_RT_ASSIGN_OR_RETURN(std::string split,
                                   configTextOr(bundle, "dq_split", ""));
      schedule = dq + (split.empty() ? "" : "-" + split);
    }
    KernelLibraryEntry entry;
    entry.directory = path.string();
    entry.kernel = bundle.kernel;
    entry.variant = *variant;
    entry.gqa = backward && (findParam(bundle, "dk_shares") ||
                             findParam(bundle, "dk_accum"));
    entry.schedule = schedule;
    entry.persistent = isPersistent(bundle);
    for (const KernelLibraryEntry &held : kernels)
      if (held.kernel == entry.kernel && held.variant == entry.variant &&
          held.schedule == entry.schedule &&
          held.persistent == entry.persistent && held.gqa == entry.gqa)
        return Status::error(
            "kernel library '" + directory + "' holds two " +
            (backward ? std::string("sink-bwd ") + (entry.gqa ? "GQA " : "MHA ")
                      : std::string()) +
            schedule + (entry.persistent ? " persistent" : "") +
            " bundles for " + variant->describe() + ": " + held.directory +
            " and " + path.string());
    entry.bundle = std::move(bundle);
    kernels.push_back(std::move(entry));
  }
  if (std::none_of(kernels.begin(), kernels.end(),
                   [](const KernelLibraryEntry &entry) {
                     return entry.kernel == "sink-fwd";
                   }))
    return Status::error(
        "kernel library '" + directory +
        "' holds no varlen sink-fwd bundle compiled for "
        "run-time shapes" +
        (skipped.empty() ? std::string() : " (passed over" + skipped + ")"));
  return kernels;
}

Expected<AttentionLibrary>
AttentionLibrary::open(const Context &ctx, const std::string &directory) {
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<KernelLibraryEntry> entries,
                               scanKernelLibrary(directory));
  AttentionLibrary library(ctx);
  for (KernelLibraryEntry &entry : entries)
    library.kernels_.push_back({std::move(entry), nullptr});
  return library;
}

Expected<AttentionLibrary>
AttentionLibrary::ofLoaded(const Context &ctx,
                           std::shared_ptr<LoadedBundle> loaded) {
  KernelLibraryEntry entry;
  entry.bundle = loaded->bundle();
  SINKATTN_RT_ASSIGN_OR_RETURN(entry.variant, sinkFwdVariantOf(entry.bundle));
  SINKATTN_RT_ASSIGN_OR_RETURN(entry.schedule,
                               configText(entry.bundle, "schedule"));
  entry.persistent = isPersistent(entry.bundle);
  // The loaded kernels hold the code; calls re-shape the manifest only.
  entry.bundle.ptx.clear();
  entry.bundle.reference.reset();
  entry.bundle.sass.reset();
  AttentionLibrary library(ctx);
  library.kernels_.push_back({std::move(entry), std::move(loaded)});
  return library;
}

std::vector<SinkFwdVariant> AttentionLibrary::variants() const {
  std::vector<SinkFwdVariant> variants;
  for (const Kernel &kernel : kernels_)
    if (kernel.entry.kernel == "sink-fwd" &&
        std::find(variants.begin(), variants.end(), kernel.entry.variant) ==
            variants.end())
      variants.push_back(kernel.entry.variant);
  return variants;
}

size_t AttentionLibrary::compiledKernels() const {
  return size_t(
      std::count_if(kernels_.begin(), kernels_.end(), [](const Kernel &kernel) {
        return kernel.loaded != nullptr;
      }));
}

std::optional<size_t>
AttentionLibrary::findKernel(const SinkFwdVariant &variant, bool withSinks,
                             const std::string &schedule,
                             bool persistent) const {
  // Among the kernels of the variant: the schedule asked for first, then
  // persistent or not as asked, then one compiled already (a call without
  // sinks takes either sink dtype), then f32 sinks.
  std::optional<size_t> found;
  std::tuple<bool, bool, bool, bool> best;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const KernelLibraryEntry &entry = kernels_[i].entry;
    SinkFwdVariant wanted = variant;
    if (!withSinks)
      wanted.sinkDtype = entry.variant.sinkDtype;
    if (entry.kernel != "sink-fwd" || !(entry.variant == wanted))
      continue;
    std::tuple<bool, bool, bool, bool> rank = {
        entry.schedule == schedule, entry.persistent == persistent,
        kernels_[i].loaded != nullptr, entry.variant.sinkDtype == DType::F32};
    if (!found || rank > best) {
      found = i;
      best = rank;
    }
  }
  return found;
}

bool AttentionLibrary::serves(const SinkFwdVariant &variant,
                              bool withSinks) const {
  return findKernel(variant, withSinks).has_value();
}

std::string AttentionLibrary::noKernelMessage(const SinkFwdVariant &wanted) {
  return "no kernel for " + wanted.describe() +
         " in the kernel library, and this program has no SinkAttn compiler "
         "to build one on demand (AttentionLibrary::setCompiler); compile one "
         "with `sinkattn-runner compile "
         "--kernel sink-fwd --run-time-shapes --seqlens-q 128 --head-dim " +
         std::to_string(wanted.headDim) + " --dtype " +
         dtypeName(wanted.dtype) + " --sink-dtype " +
         dtypeName(wanted.sinkDtype) +
         (wanted.windowed ? " --window 128" : "") +
         (wanted.causal ? "" : " --non-causal") + " --emit bundle -o DIR`";
}

namespace {
/// A buffer of the library holding `values`. The copy runs on the legacy
/// default stream, which a call's non-blocking stream is not ordered after,
/// so it is waited for here, once per buffer.
template <typename T>
Expected<std::shared_ptr<DeviceBuffer>>
uploadAndWait(const Context &ctx, const std::vector<T> &values) {
  SINKATTN_RT_ASSIGN_OR_RETURN(
      DeviceBuffer buffer,
      DeviceBuffer::allocate(ctx, values.size() * sizeof(T)));
  SINKATTN_RT_TRY(buffer.upload(values));
  SINKATTN_RT_TRY(ctx.synchronize());
  return std::make_shared<DeviceBuffer>(std::move(buffer));
}
} // namespace

Expected<CUdeviceptr> AttentionLibrary::offsetTable() {
  if (!offsetTable_) {
    std::vector<int32_t> offsets(size_t(kMaxBatch) + 1);
    for (size_t i = 0; i < offsets.size(); ++i)
      offsets[i] = int32_t(i);
    SINKATTN_RT_ASSIGN_OR_RETURN(offsetTable_, uploadAndWait(*ctx_, offsets));
  }
  return offsetTable_->address();
}

Status AttentionLibrary::forward(const ForwardArgs &args, CUstream stream) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardProblem problem,
                               validateForward(args));
  return forward(args, std::move(problem), stream);
}

Status AttentionLibrary::forward(const ForwardArgs &args,
                                 VarlenForwardProblem problem,
                                 CUstream stream) {
  SINKATTN_RT_ASSIGN_OR_RETURN(CUdeviceptr table, offsetTable());
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardArgs varlen,
                               bshdAsVarlen(args, table));
  return forwardVarlen(varlen, std::move(problem), stream);
}

Status AttentionLibrary::forwardVarlen(const VarlenForwardArgs &args,
                                       CUstream stream) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardProblem problem,
                               validateVarlenForward(args));
  return forwardVarlen(args, std::move(problem), stream);
}

Status AttentionLibrary::forwardVarlen(const VarlenForwardArgs &args,
                                       VarlenForwardProblem problem,
                                       CUstream stream) {
  // The form auto would compile for the call's longest rows, where the
  // library has it.
  const int64_t rowKeyBlocks =
      sinkFwdRowKeyBlocks(args.maxSeqlenKv, problem.window);
  const std::string schedule =
      sinkFwdAutoSchedule(problem.variant.headDim, rowKeyBlocks);
  const bool withSinks = args.sinks.has_value();
  // Persistent as auto would compile it, where the host knows every
  // sequence's length (one length: BSHD, or one sequence), which the tile
  // lists' balance needs.
  const bool oneLength = problem.batch == 1 || problem.offsetUnits.q > 1;
  // The problem with every sequence at the longest lengths: what the tile
  // lists are built for (a shorter sequence's extra tiles find no rows).
  SinkAttentionShape longest;
  longest.batch = problem.batch;
  longest.heads = problem.heads;
  longest.kvHeads = problem.kvHeads;
  longest.seqQ = problem.maxSeqlenQ;
  longest.seqKv = problem.maxSeqlenKv;
  longest.headDim = problem.variant.headDim;
  longest.window = problem.window;
  longest.causal = problem.variant.causal;
  auto runsPersistent = [&](int64_t blockM) {
    return oneLength &&
           sinkFwdRunsPersistent(schedule, rowKeyBlocks, problem.window,
                                 sinkFwdTileCount(longest, blockM),
                                 ctx_->info().smCount);
  };
  bool persistent = false;
  std::optional<size_t> candidate =
      findKernel(problem.variant, withSinks, schedule, /*persistent=*/true);
  const KernelLibraryEntry *entry =
      candidate ? &kernels_[*candidate].entry : nullptr;
  if (entry && entry->persistent && entry->schedule == schedule) {
    SINKATTN_RT_ASSIGN_OR_RETURN(int64_t blockM,
                                 configInteger(entry->bundle, "block_m"));
    persistent = runsPersistent(blockM);
  }
  std::optional<size_t> found =
      findKernel(problem.variant, withSinks, schedule, persistent);
  if (!found && !compiler_)
    return Status::error(noKernelMessage(problem.variant));
  if (!found) {
    // The form auto compiles for the call: persistent only at D 128 (blocks
    // of 128 rows) without a window (D 64's persistent rows are never
    // short enough: ws starts past kPersistentMaxKeyBlocks).
    SinkFwdVariant wanted = problem.variant;
    if (!withSinks)
      wanted.sinkDtype = DType::F32;
    const bool compilePersistent =
        wanted.headDim == 128 && !wanted.windowed && runsPersistent(128);
    Expected<Bundle> compiled = compiler_(wanted, schedule, compilePersistent);
    if (!compiled.ok())
      return Status::error("compiling the kernel for " + wanted.describe() +
                           " on demand failed: " + compiled.message());
    KernelLibraryEntry made;
    made.directory = "(compiled on demand)";
    made.bundle = compiled.take();
    SINKATTN_RT_ASSIGN_OR_RETURN(made.variant, sinkFwdVariantOf(made.bundle));
    SINKATTN_RT_ASSIGN_OR_RETURN(made.schedule,
                                 configText(made.bundle, "schedule"));
    made.persistent = isPersistent(made.bundle);
    if (!(made.variant == wanted))
      return Status::error("the kernel compiled on demand serves " +
                           made.variant.describe() + ", not " +
                           wanted.describe());
    kernels_.push_back({std::move(made), nullptr});
    found = kernels_.size() - 1;
  }
  Kernel &kernel = kernels_[*found];
  SINKATTN_RT_TRY(load(kernel));
  problem.variant.sinkDtype = kernel.entry.variant.sinkDtype;
  SINKATTN_RT_ASSIGN_OR_RETURN(
      Bundle shaped,
      sinkFwdForProblem(kernel.entry.bundle, problem, ctx_->info().smCount));
  CUdeviceptr sinks = 0;
  if (args.sinks) {
    sinks = args.sinks->data;
  } else {
    SINKATTN_RT_ASSIGN_OR_RETURN(
        sinks, noSinks(problem.heads, problem.variant.sinkDtype));
  }
  std::map<std::string, CUdeviceptr> addresses = {
      {"q", args.q.data},
      {"k", args.k.data},
      {"v", args.v.data},
      {"sinks", sinks},
      {"o", args.out.data},
      {"lse", args.lse.data},
      {"cu_seqlens_q", args.cuSeqlensQ.data},
      {"cu_seqlens_kv", args.cuSeqlensKv.data}};
  if (kernel.entry.persistent) {
    SINKATTN_RT_ASSIGN_OR_RETURN(addresses["tiles"],
                                 tileTable(shaped, longest));
  }
  // The shaped bundle is the loaded one's manifest through withTensorShapes
  // (sinkFwdForSizes), validated there.
  return kernel.loaded->runReshaped(shaped, addresses, stream);
}

Expected<CUdeviceptr>
AttentionLibrary::tileTable(const Bundle &shaped,
                            const SinkAttentionShape &longest) {
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t blockM,
                               configInteger(shaped, "block_m"));
  std::vector<int64_t> key = {
      longest.batch,  longest.heads, longest.kvHeads,
      longest.seqQ,   longest.seqKv, longest.window,
      longest.causal, blockM,        int64_t(shaped.grid.x)};
  auto it = tileTables_.find(key);
  if (it != tileTables_.end())
    return it->second->address();
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<int32_t> table,
                               sinkFwdTileTableFor(shaped, longest));
  // Bounded: a server that sees very many sizes drops the tables once they
  // pile up, after the calls that may still read them (docs/library.md).
  constexpr size_t kMaxTileTableBytes = size_t(64) << 20;
  const size_t bytes = table.size() * sizeof(int32_t);
  if (tileTableBytes_ + bytes > kMaxTileTableBytes) {
    SINKATTN_RT_TRY(ctx_->synchronize());
    tileTables_.clear();
    tileTableBytes_ = 0;
  }
  SINKATTN_RT_ASSIGN_OR_RETURN(std::shared_ptr<DeviceBuffer> buffer,
                               uploadAndWait(*ctx_, table));
  tileTables_.emplace(std::move(key), buffer);
  tileTableBytes_ += bytes;
  return buffer->address();
}

Status AttentionLibrary::load(Kernel &kernel) {
  if (kernel.loaded)
    return Status();
  SINKATTN_RT_ASSIGN_OR_RETURN(LoadedBundle loaded,
                               LoadedBundle::load(*ctx_, kernel.entry.bundle));
  kernel.loaded = std::make_shared<LoadedBundle>(std::move(loaded));
  // The loaded kernels hold the PTX; each call re-shapes a copy of the
  // manifest only.
  kernel.entry.bundle.ptx.clear();
  kernel.entry.bundle.reference.reset();
  kernel.entry.bundle.sass.reset();
  return Status();
}

Expected<CUdeviceptr> AttentionLibrary::noSinks(int64_t heads, DType dtype) {
  // No sink: a logit of -inf, whose weight exp(-inf) is 0.
  std::shared_ptr<DeviceBuffer> &none = noSinks_[{heads, dtype}];
  if (!none) {
    const float minusInf = -std::numeric_limits<float>::infinity();
    if (dtype == DType::F32) {
      SINKATTN_RT_ASSIGN_OR_RETURN(
          none,
          uploadAndWait(*ctx_, std::vector<float>(size_t(heads), minusInf)));
    } else {
      SINKATTN_RT_ASSIGN_OR_RETURN(
          none,
          uploadAndWait(*ctx_, std::vector<uint16_t>(size_t(heads),
                                                     floatToBf16(minusInf))));
    }
  }
  return none->address();
}

Expected<size_t>
AttentionLibrary::findBackwardKernel(const VarlenBackwardProblem &problem,
                                     bool withSinks) const {
  const VarlenForwardProblem &forward = problem.forward;
  const bool gqa = forward.heads != forward.kvHeads;
  // A GQA kernel serves MHA too, at the cost of the shares: MHA's first,
  // then the deterministic form (dQ separate), then one loaded already,
  // then f32 sinks.
  std::optional<size_t> found;
  std::tuple<bool, bool, bool, bool> best;
  for (size_t i = 0; i < kernels_.size(); ++i) {
    const KernelLibraryEntry &entry = kernels_[i].entry;
    SinkFwdVariant wanted = forward.variant;
    if (!withSinks)
      wanted.sinkDtype = entry.variant.sinkDtype;
    if (entry.kernel != "sink-bwd" || !(entry.variant == wanted) ||
        (gqa && !entry.gqa))
      continue;
    std::tuple<bool, bool, bool, bool> rank = {
        entry.gqa == gqa, entry.schedule == "separate",
        kernels_[i].loaded != nullptr, entry.variant.sinkDtype == DType::F32};
    if (!found || rank > best) {
      found = i;
      best = rank;
    }
  }
  if (found)
    return *found;
  const SinkFwdVariant &wanted = forward.variant;
  return Status::error(
      "no backward kernel for " + wanted.describe() + (gqa ? " with GQA" : "") +
      " in the kernel library; compile one with `sinkattn-runner compile "
      "--kernel sink-bwd --run-time-shapes --seqlens-q 128 --heads 2 "
      "--kv-heads " +
      std::string(gqa ? "1" : "2") + " --head-dim " +
      std::to_string(wanted.headDim) + " --dtype " + dtypeName(wanted.dtype) +
      " --sink-dtype " + dtypeName(wanted.sinkDtype) +
      (wanted.windowed ? " --window 128" : "") + " --emit bundle -o DIR`");
}

Expected<Bundle>
AttentionLibrary::shapeBackward(size_t index,
                                const VarlenBackwardProblem &problem) {
  const Kernel &kernel = kernels_[index];
  const VarlenForwardProblem &forward = problem.forward;
  return sinkBwdForSizes(
      kernel.entry.bundle, runTimeSizesOf(forward), forward.tokensQ,
      forward.tokensKv, forward.maxSeqlenQ, forward.maxSeqlenKv,
      "max_seqlen_q " + std::to_string(forward.maxSeqlenQ) + ": ",
      forward.tokenStrides, problem.gradientStrides, forward.offsetUnits);
}

namespace {
/// Workspace offsets are multiples of this (the kernels' 16-byte vectors,
/// with room).
constexpr size_t kWorkspaceAlignment = 256;

/// The buffers of a shaped backward bundle that the call does not supply
/// (its scratch) at their offsets in the workspace, and the bytes in all.
size_t carveWorkspace(const Bundle &shaped,
                      const std::map<std::string, CUdeviceptr> &supplied,
                      CUdeviceptr base,
                      std::map<std::string, CUdeviceptr> *addresses) {
  size_t bytes = 0;
  for (const BundleParam &param : shaped.params) {
    if (param.kind != ParamKind::Buffer || supplied.count(param.name))
      continue;
    if (addresses)
      (*addresses)[param.name] = base + bytes;
    bytes += (bufferBytes(param) + kWorkspaceAlignment - 1) /
             kWorkspaceAlignment * kWorkspaceAlignment;
  }
  return bytes;
}

/// The addresses of the tensors a backward call supplies (dsinks only
/// with sinks; without, the kernel's dsinks go to the workspace).
std::map<std::string, CUdeviceptr>
backwardAddresses(const VarlenBackwardArgs &args, CUdeviceptr sinks) {
  std::map<std::string, CUdeviceptr> addresses = {
      {"q", args.q.data},
      {"k", args.k.data},
      {"v", args.v.data},
      {"sinks", sinks},
      {"o", args.out.data},
      {"lse", args.lse.data},
      {"do", args.dout.data},
      {"dq", args.dq.data},
      {"dk", args.dk.data},
      {"dv", args.dv.data},
      {"cu_seqlens_q", args.cuSeqlensQ.data},
      {"cu_seqlens_kv", args.cuSeqlensKv.data}};
  if (args.dsinks)
    addresses["dsinks"] = args.dsinks->data;
  return addresses;
}
} // namespace

Expected<size_t>
AttentionLibrary::backwardWorkspaceBytes(const VarlenBackwardArgs &args) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardProblem problem,
                               validateVarlenBackward(args));
  return backwardWorkspaceBytes(args, std::move(problem));
}

Expected<size_t>
AttentionLibrary::backwardWorkspaceBytes(const BackwardArgs &args) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardProblem problem,
                               validateBackward(args));
  SINKATTN_RT_ASSIGN_OR_RETURN(CUdeviceptr table, offsetTable());
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardArgs varlen,
                               bshdBackwardAsVarlen(args, table));
  return backwardWorkspaceBytes(varlen, std::move(problem));
}

Status AttentionLibrary::backward(const BackwardArgs &args, CUstream stream) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardProblem problem,
                               validateBackward(args));
  SINKATTN_RT_ASSIGN_OR_RETURN(CUdeviceptr table, offsetTable());
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardArgs varlen,
                               bshdBackwardAsVarlen(args, table));
  return backwardVarlen(varlen, std::move(problem), stream);
}

Expected<size_t>
AttentionLibrary::backwardWorkspaceBytes(const VarlenBackwardArgs &args,
                                         VarlenBackwardProblem problem) {
  SINKATTN_RT_ASSIGN_OR_RETURN(
      size_t index, findBackwardKernel(problem, args.sinks.has_value()));
  problem.forward.variant.sinkDtype = kernels_[index].entry.variant.sinkDtype;
  SINKATTN_RT_ASSIGN_OR_RETURN(Bundle shaped, shapeBackward(index, problem));
  return carveWorkspace(shaped, backwardAddresses(args, 0), 0, nullptr);
}

Status AttentionLibrary::backwardVarlen(const VarlenBackwardArgs &args,
                                        CUstream stream) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenBackwardProblem problem,
                               validateVarlenBackward(args));
  return backwardVarlen(args, std::move(problem), stream);
}

Status AttentionLibrary::backwardVarlen(const VarlenBackwardArgs &args,
                                        VarlenBackwardProblem problem,
                                        CUstream stream) {
  SINKATTN_RT_ASSIGN_OR_RETURN(
      size_t index, findBackwardKernel(problem, args.sinks.has_value()));
  const DType sinkDtype = kernels_[index].entry.variant.sinkDtype;
  problem.forward.variant.sinkDtype = sinkDtype;
  SINKATTN_RT_ASSIGN_OR_RETURN(Bundle shaped, shapeBackward(index, problem));
  Kernel &kernel = kernels_[index];
  SINKATTN_RT_TRY(load(kernel));
  CUdeviceptr sinks = 0;
  if (args.sinks) {
    sinks = args.sinks->data;
  } else {
    SINKATTN_RT_ASSIGN_OR_RETURN(sinks,
                                 noSinks(problem.forward.heads, sinkDtype));
  }
  std::map<std::string, CUdeviceptr> addresses = backwardAddresses(args, sinks);
  const size_t needed =
      carveWorkspace(shaped, addresses, args.workspace, &addresses);
  if (args.workspaceBytes < needed)
    return Status::error("workspace: " + std::to_string(args.workspaceBytes) +
                         " bytes; the call needs " + std::to_string(needed) +
                         " (AttentionLibrary::backwardWorkspaceBytes)");
  if (needed > 0 &&
      (args.workspace == 0 || args.workspace % kWorkspaceAlignment != 0))
    return Status::error("workspace: the address is null or not " +
                         std::to_string(kWorkspaceAlignment) + "-byte aligned");
  // The kernels write all of it: it may not share memory with a tensor.
  const DeviceTensor workspace{
      args.workspace, DType::F32, {int64_t(needed / 4)}, {}};
  NamedTensors tensors = backwardInputs(args);
  const NamedTensors outputs = backwardOutputs(args);
  tensors.insert(tensors.end(), outputs.begin(), outputs.end());
  for (auto [name, tensor] : tensors)
    if (needed > 0)
      SINKATTN_RT_TRY(disjoint("workspace", workspace, name, *tensor));
  // The forward ran already: its setup launch is not run.
  return kernels_[index].loaded->runReshaped(shaped, addresses, stream);
}

} // namespace sinkattn::rt
