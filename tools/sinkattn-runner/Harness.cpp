//===- Harness.cpp - Run, check and time a kernel bundle ------------------===//

#include "Harness.h"
#include "KernelKinds.h"

#include "SinkAttn/Runtime/CudaDriver.h"
#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Launch.h"
#include "SinkAttn/Runtime/Npy.h"
#include "SinkAttn/Runtime/Random.h"
#include "SinkAttn/Runtime/Timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>
#include <thread>
#include <tuple>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {

/// Encodes floats as a buffer's element type (rounding to nearest even).
rt::Expected<std::vector<uint8_t>> encode(const std::vector<float> &values,
                                          rt::DType dtype) {
  std::vector<uint8_t> bytes(values.size() * rt::dtypeSize(dtype));
  switch (dtype) {
  case rt::DType::BF16:
  case rt::DType::F16: {
    std::vector<uint16_t> bits = dtype == rt::DType::BF16 ? rt::toBf16(values)
                                                          : rt::toHalf(values);
    std::memcpy(bytes.data(), bits.data(), bytes.size());
    return bytes;
  }
  case rt::DType::F32:
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  default:
    return rt::Status::error(std::string("the harness cannot fill buffers of ") +
                             rt::dtypeName(dtype));
  }
}

rt::Expected<std::vector<float>> decode(const std::vector<uint8_t> &bytes,
                                        rt::DType dtype) {
  size_t count = bytes.size() / rt::dtypeSize(dtype);
  switch (dtype) {
  case rt::DType::BF16:
  case rt::DType::F16: {
    std::vector<uint16_t> bits(count);
    std::memcpy(bits.data(), bytes.data(), bytes.size());
    return dtype == rt::DType::BF16 ? rt::fromBf16(bits) : rt::fromHalf(bits);
  }
  case rt::DType::F32: {
    std::vector<float> values(count);
    std::memcpy(values.data(), bytes.data(), bytes.size());
    return values;
  }
  default:
    return rt::Status::error(std::string("the harness cannot read buffers of ") +
                             rt::dtypeName(dtype));
  }
}

/// printf into a std::string (short texts).
template <typename... Args>
std::string format(const char *pattern, Args... args) {
  char text[256];
  std::snprintf(text, sizeof(text), pattern, args...);
  return text;
}

/// Runs body(i) for i in [0, count) on all hardware threads.
template <typename Body> void parallelFor(size_t count, Body body) {
  size_t workers = std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, count);
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (size_t i = w; i < count; i += workers)
        body(i);
    });
  for (std::thread &t : threads)
    t.join();
}

/// Accumulates the comparison statistics of out against ref.
struct Comparison {
  double diff2 = 0, ref2 = 0, maxAbs = 0;
  uint64_t checked = 0, nonFinite = 0;
  void add(double out, double ref) {
    ++checked;
    if (!std::isfinite(out)) {
      ++nonFinite;
      return;
    }
    double d = out - ref;
    diff2 += d * d;
    ref2 += ref * ref;
    maxAbs = std::max(maxAbs, std::fabs(d));
  }
  void fill(CheckReport &report) const {
    report.checked = checked;
    report.nonFinite = nonFinite;
    report.relL2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    report.maxAbs = maxAbs;
  }
};

bool isNegativeInfinity(double x) { return std::isinf(x) && x < 0; }

/// Outputs within `absolute` + `relative` |ref| of the reference count as
/// right. The forward's O within 1e-2 + 1e-2 |ref| (bf16, rounded once);
/// its LSE within 1e-3 (fp32 throughout: a sink's share of a long row's
/// softmax denominator moves it by less than 1e-2).
struct ForwardBound {
  double absolute, relative;
};
constexpr ForwardBound kOutputBound{1e-2, 1e-2}, kLseBound{1e-3, 0};

/// `out` against `ref` element by element within `bound`: the compared
/// elements go into `stats`. A -inf reference (the LSE of a row with
/// neither keys nor a finite sink) must be matched exactly; other
/// references that are not finite are counted in `refNonFinite` and
/// skipped. Returns the outputs outside the bound.
uint64_t countOutsideForwardBound(const std::vector<float> &out,
                                  const std::vector<float> &ref,
                                  ForwardBound bound, Comparison &stats,
                                  uint64_t &refNonFinite) {
  uint64_t outside = 0;
  for (size_t e = 0; e < out.size(); ++e) {
    double x = out[e], r = ref[e];
    if (isNegativeInfinity(r)) {
      ++stats.checked;
      if (!isNegativeInfinity(x))
        ++outside;
      continue;
    }
    if (!std::isfinite(r)) {
      ++refNonFinite;
      continue;
    }
    stats.add(x, r);
    if (std::isfinite(x) &&
        !(std::fabs(x - r) <= bound.absolute + bound.relative * std::fabs(r)))
      ++outside;
  }
  return outside;
}

/// The gradient elements the float64 backward computes for a check: every
/// one, or dQ rows (the first, the last and random ones), one kv head's
/// dK/dV rows (its first, its last and random ones) and the dsinks of the
/// query heads that read it (each a sum over all of that head's rows, so
/// that head's rows are all computed).
struct BackwardSample {
  bool everything = false;
  std::vector<int64_t> queryRows; ///< LSE rows: their dq rows
  int64_t kvHead = 0;             ///< sampled kv head (unless everything)
  struct KeyRow {
    int64_t batch, kvHead, j;
  };
  std::vector<KeyRow> keyRows; ///< dk and dv rows

  std::string describe(const rt::SinkAttentionShape &shape) const {
    if (everything)
      return "every gradient element";
    int64_t group = shape.heads / shape.kvHeads;
    return std::to_string(queryRows.size()) + " of " +
           std::to_string(shape.rows()) + " dq rows, " +
           std::to_string(keyRows.size()) + " of " +
           std::to_string(shape.tokensKv()) + " dk/dv rows of kv head " +
           std::to_string(kvHead) + " and dsinks of heads " +
           std::to_string(kvHead * group) + "-" +
           std::to_string((kvHead + 1) * group - 1);
  }
};

BackwardSample chooseBackwardSample(const rt::SinkAttentionShape &shape,
                                    uint64_t seed, bool everything) {
  BackwardSample sample;
  sample.everything = everything;
  // Key token t of the packed or padded key axis as (sequence, position).
  auto keyAt = [&](int64_t token) -> std::pair<int64_t, int64_t> {
    if (!shape.varlen())
      return {token / shape.seqKv, token % shape.seqKv};
    auto next = std::upper_bound(shape.cuSeqlensKv.begin(),
                                 shape.cuSeqlensKv.end(), token);
    int64_t b = int64_t(next - shape.cuSeqlensKv.begin()) - 1;
    return {b, token - shape.cuSeqlensKv[size_t(b)]};
  };
  const int64_t rows = shape.rows(), keys = shape.tokensKv();
  if (everything) {
    sample.queryRows.resize(size_t(rows));
    std::iota(sample.queryRows.begin(), sample.queryRows.end(), 0);
    for (int64_t hk = 0; hk < shape.kvHeads; ++hk)
      for (int64_t token = 0; token < keys; ++token) {
        auto [b, j] = keyAt(token);
        sample.keyRows.push_back({b, hk, j});
      }
    return sample;
  }
  // Of this seed, so that different seeds look at different elements.
  rt::Rng rng(seed * 0x9E3779B97F4A7C15ull + 0xB0C4);
  // `count` distinct indices below `size`: the first, the last and random
  // ones, in increasing order.
  auto distinct = [&](int64_t size, int64_t count) {
    std::set<int64_t> chosen = {0, size - 1};
    while (int64_t(chosen.size()) < std::min(size, count))
      chosen.insert(int64_t(rng.next() % uint64_t(size)));
    return std::vector<int64_t>(chosen.begin(), chosen.end());
  };
  sample.queryRows = distinct(rows, 512);
  sample.kvHead = int64_t(rng.next() % uint64_t(shape.kvHeads));
  for (int64_t token : distinct(keys, 256)) {
    auto [b, j] = keyAt(token);
    sample.keyRows.push_back({b, sample.kvHead, j});
  }
  return sample;
}

/// The float64 backward at a sample's elements: per gradient (dq, dk, dv,
/// dsinks, in that order) the elements' offsets in the kernel's tensor,
/// their values by the specification (dS from the stored O) and exact (dS
/// from the unrounded O; dsinks are exact in both).
struct Float64Backward {
  struct Gradient {
    const char *name;
    std::vector<size_t> at;
    std::vector<double> specified, exact;
  };
  std::vector<Gradient> gradients;
};

rt::Expected<Float64Backward> float64Backward(const rt::SinkAttentionShape &shape,
                                              const SinkBwdInputs &in,
                                              const BackwardSample &sample) {
  SINKATTN_RT_TRY(rt::validate(shape));
  if (in.q.size() != shape.qElements() || in.dO.size() != shape.qElements() ||
      in.o.size() != shape.qElements() || in.k.size() != shape.kvElements() ||
      in.v.size() != shape.kvElements() || in.sinks.size() != size_t(shape.heads))
    return rt::Status::error("internal error: the backward's inputs do not "
                             "have the sizes of its shape");
  const int64_t d = shape.headDim, group = shape.heads / shape.kvHeads;
  const float *q = in.q.data(), *k = in.k.data(), *v = in.v.data(),
              *dO = in.dO.data();
  // Row statistics of every row a sampled element needs: the dq rows', and
  // every row of the sampled kv head's query heads (its dK/dV sum over
  // them, its dsinks over all rows of a head).
  std::vector<char> needed(size_t(shape.rows()), sample.everything);
  for (int64_t row : sample.queryRows)
    needed[size_t(row)] = 1;
  for (int64_t row = 0; row < shape.rows() && !sample.everything; ++row)
    if (shape.rowAt(row).head / group == sample.kvHead)
      needed[size_t(row)] = 1;
  std::vector<int64_t> statRows;
  for (int64_t row = 0; row < shape.rows(); ++row)
    if (needed[size_t(row)])
      statRows.push_back(row);
  std::vector<rt::SinkRowStatistics> stats(size_t(shape.rows())),
      exactStats(size_t(shape.rows()));
  parallelFor(statRows.size(), [&](size_t n) {
    int64_t row = statRows[n];
    stats[size_t(row)] = rt::sinkAttentionRowStatistics(
        shape, q, k, v, in.sinks.data(), dO, in.o.data(), row);
    exactStats[size_t(row)] = stats[size_t(row)];
    exactStats[size_t(row)].delta = stats[size_t(row)].exactDelta;
  });

  Float64Backward result;
  Float64Backward::Gradient dq{"dq", {}, {}, {}}, dk{"dk", {}, {}, {}},
      dv{"dv", {}, {}, {}}, dsinks{"dsinks", {}, {}, {}};
  const size_t rowsCount = sample.queryRows.size(),
               keysCount = sample.keyRows.size();
  dq.at.resize(rowsCount * size_t(d));
  dq.specified.resize(dq.at.size());
  dq.exact.resize(dq.at.size());
  parallelFor(rowsCount, [&](size_t n) {
    int64_t row = sample.queryRows[n];
    rt::SinkAttentionShape::Row at = shape.rowAt(row);
    size_t offset = size_t(shape.qOffset(at.batch, at.head, at.i));
    size_t first = n * size_t(d);
    for (int64_t c = 0; c < d; ++c)
      dq.at[first + size_t(c)] = offset + size_t(c);
    rt::sinkAttentionDqRow(shape, q, k, v, dO, row, stats[size_t(row)],
                           &dq.specified[first]);
    rt::sinkAttentionDqRow(shape, q, k, v, dO, row, exactStats[size_t(row)],
                           &dq.exact[first]);
  });
  for (Float64Backward::Gradient *g : {&dk, &dv}) {
    g->at.resize(keysCount * size_t(d));
    g->specified.resize(g->at.size());
    g->exact.resize(g->at.size());
  }
  parallelFor(keysCount, [&](size_t n) {
    const BackwardSample::KeyRow &key = sample.keyRows[n];
    size_t offset = size_t(shape.kvOffset(key.batch, key.kvHead, key.j));
    size_t first = n * size_t(d);
    for (int64_t c = 0; c < d; ++c)
      dk.at[first + size_t(c)] = dv.at[first + size_t(c)] = offset + size_t(c);
    for (auto [table, values] : {std::pair{&stats, &Float64Backward::Gradient::specified},
                                 std::pair{&exactStats, &Float64Backward::Gradient::exact}})
      rt::sinkAttentionDkvRow(
          shape, q, k, v, dO, key.batch, key.kvHead, key.j,
          [&](int64_t row) -> const rt::SinkRowStatistics & {
            return (*table)[size_t(row)];
          },
          &(dk.*values)[first], &(dv.*values)[first]);
  });
  // dsinks of every head whose rows all have statistics, each summed over
  // its rows in LSE order.
  auto sampledHead = [&](int64_t h) {
    return sample.everything || h / group == sample.kvHead;
  };
  std::vector<double> sums(size_t(shape.heads), 0.0);
  for (int64_t row = 0; row < shape.rows(); ++row) {
    int64_t h = shape.rowAt(row).head;
    if (sampledHead(h))
      sums[size_t(h)] +=
          rt::sinkAttentionDsinkTerm(in.sinks[size_t(h)], stats[size_t(row)]);
  }
  for (int64_t h = 0; h < shape.heads; ++h)
    if (sampledHead(h)) {
      dsinks.at.push_back(size_t(h));
      dsinks.specified.push_back(sums[size_t(h)]);
      dsinks.exact.push_back(sums[size_t(h)]);
    }
  result.gradients = {std::move(dq), std::move(dk), std::move(dv),
                      std::move(dsinks)};
  return result;
}

} // namespace

bool runner::harnessSupports(const std::string &kernel) {
  return findKernelKind(kernel) != nullptr;
}

std::vector<float> runner::randomInput(const std::string &kernel,
                                      const std::string &buffer, size_t count,
                                      uint64_t stream) {
  if (const KernelKind *kind = findKernelKind(kernel))
    return kind->randomInput(buffer, count, stream);
  return rt::randomUniform(count, stream, -1.f, 1.f);
}

rt::Expected<std::vector<int32_t>>
runner::integerInput(const rt::Bundle &bundle, const std::string &buffer) {
  const KernelKind *kind = findKernelKind(bundle.kernel);
  if (kind && kind->integerInput)
    return kind->integerInput(bundle, buffer);
  return rt::Status::error("the harness cannot fill the integer buffer '" +
                           buffer + "' of a " + bundle.kernel + " bundle");
}

namespace {
/// The attention problem of a sink-fwd or (`backward`) sink-bwd bundle,
/// after checking its buffers.
rt::Expected<rt::SinkAttentionShape> attentionShape(const rt::Bundle &bundle,
                                                    bool backward) {
  const std::string prefix = bundle.kernel + " bundle: ";
  auto integer = [&](const char *key) -> rt::Expected<int64_t> {
    rt::Expected<int64_t> value = rt::configInteger(bundle, key);
    if (!value.ok())
      return value.status().withContext(prefix);
    return value;
  };
  rt::SinkAttentionShape shape;
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.batch, integer("batch"));
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.heads, integer("heads"));
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.kvHeads, integer("kv_heads"));
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.seqQ, integer("seq_q"));
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.seqKv, integer("seq_kv"));
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.headDim, integer("head_dim"));
  SINKATTN_RT_ASSIGN_OR_RETURN(shape.window, integer("window"));
  // Bundles from before non-causal kernels were causal.
  if (bundle.config.count("causal")) {
    SINKATTN_RT_ASSIGN_OR_RETURN(int64_t causal, integer("causal"));
    shape.causal = causal != 0;
  }
  shape.scale = shape.headDim > 0 ? 1.0 / std::sqrt(double(shape.headDim)) : 0;
  if (auto it = bundle.config.find("scale"); it != bundle.config.end()) {
    if (const double *value = std::get_if<double>(&it->second))
      shape.scale = *value;
    else if (const int64_t *value = std::get_if<int64_t>(&it->second))
      shape.scale = double(*value);
    else
      return rt::Status::error(prefix + "config 'scale' is not a number");
  }
  auto text = [&](const char *key) -> rt::Expected<std::string> {
    rt::Expected<std::string> value = rt::configText(bundle, key);
    if (!value.ok())
      return value.status().withContext(prefix);
    return value;
  };
  // Bundles from before layouts were BHSD.
  if (bundle.config.count("layout")) {
    SINKATTN_RT_ASSIGN_OR_RETURN(std::string name, text("layout"));
    std::optional<rt::AttentionLayout> layout = rt::parseLayout(name);
    if (!layout)
      return rt::Status::error(prefix + "unknown layout '" + name +
                               "' (bhsd, bshd or varlen)");
    shape.layout = *layout;
  }
  if (shape.varlen()) {
    for (auto [key, offsets] :
         {std::pair{"seqlens_q", &shape.cuSeqlensQ},
          std::pair{"seqlens_kv", &shape.cuSeqlensKv}}) {
      SINKATTN_RT_ASSIGN_OR_RETURN(std::string lengths, text(key));
      SINKATTN_RT_ASSIGN_OR_RETURN(
          std::vector<int64_t> parsed,
          rt::parseLengths(lengths, prefix + "config '" +
                                        key + "'"));
      *offsets = rt::offsetsOf(parsed);
    }
  }
  SINKATTN_RT_TRY(rt::validate(shape).withContext(prefix));

  // The buffers must be what the config describes: the references index
  // them with these shapes.
  auto u = [](int64_t v) { return uint64_t(v); };
  std::vector<uint64_t> qShape = shape.qDims(), kvShape = shape.kvDims();
  auto expect = [&](const char *name, rt::BufferRole role,
                    const std::vector<uint64_t> &dims,
                    std::vector<rt::DType> dtypes) -> rt::Status {
    const rt::BundleParam *p = rt::findParam(bundle, name);
    std::string where = prefix + "buffer '" + name + "' ";
    if (!p || p->kind != rt::ParamKind::Buffer)
      return rt::Status::error(where + "is missing");
    if (p->role != role)
      return rt::Status::error(where + "should be an " +
                               rt::bufferRoleName(role));
    // A descriptor buffer (run-time shapes) has the kernel's view of a
    // varlen [T, H, D] tensor: [T, H * D].
    std::vector<uint64_t> expected = dims;
    if (p->descriptor && shape.varlen() && dims.size() == 3)
      expected = {dims[0], dims[1] * dims[2]};
    if (p->shape != expected) {
      std::string text;
      for (uint64_t d : expected)
        text += (text.empty() ? "[" : ", ") + std::to_string(d);
      return rt::Status::error(where + "does not have the shape " + text +
                               "] that the config implies");
    }
    if (std::find(dtypes.begin(), dtypes.end(), p->dtype) == dtypes.end())
      return rt::Status::error(where + "has the unsupported dtype " +
                               rt::dtypeName(p->dtype));
    return rt::Status();
  };
  using rt::BufferRole;
  using rt::DType;
  SINKATTN_RT_TRY(expect("q", BufferRole::Input, qShape, {DType::BF16, DType::F16}));
  DType inputType = rt::findParam(bundle, "q")->dtype;
  SINKATTN_RT_TRY(expect("k", BufferRole::Input, kvShape, {inputType}));
  SINKATTN_RT_TRY(expect("v", BufferRole::Input, kvShape, {inputType}));
  SINKATTN_RT_TRY(expect("sinks", BufferRole::Input, {u(shape.heads)},
                         {DType::F32, DType::BF16}));
  SINKATTN_RT_TRY(expect("o", BufferRole::Output, qShape,
                         {DType::BF16, DType::F16, DType::F32}));
  SINKATTN_RT_TRY(expect("lse", BufferRole::Output, shape.lseDims(),
                         {DType::F32}));
  if (backward) {
    // The reference reads o as the input dtype (dS's delta = dO . o).
    SINKATTN_RT_TRY(expect("o", BufferRole::Output, qShape, {inputType}));
    SINKATTN_RT_TRY(expect("do", BufferRole::Input, qShape, {inputType}));
    SINKATTN_RT_TRY(expect("dq", BufferRole::Output, qShape, {inputType}));
    SINKATTN_RT_TRY(expect("dk", BufferRole::Output, kvShape, {inputType}));
    SINKATTN_RT_TRY(expect("dv", BufferRole::Output, kvShape, {inputType}));
    SINKATTN_RT_TRY(expect("dsinks", BufferRole::Output, {u(shape.heads)},
                           {DType::F32}));
    // The scratch the kernels index with the config's shapes.
    SINKATTN_RT_TRY(expect("delta", BufferRole::Output, shape.lseDims(),
                           {DType::F32}));
    // --dq separate (bundles from before the option): a sink term per query
    // row; atomic: per key row, the rows' sink weights in the row
    // statistics and the fp32 dQ.
    std::string dqMode = "separate";
    if (bundle.config.count("dq")) {
      SINKATTN_RT_ASSIGN_OR_RETURN(dqMode, text("dq"));
      if (dqMode != "separate" && dqMode != "atomic")
        return rt::Status::error(prefix + "unknown dq mode '" + dqMode +
                                 "' (separate or atomic)");
    }
    const bool atomicDq = dqMode == "atomic";
    // The per-block row statistics (bundles from before 2026-12-01 have
    // none at D 128 or with --schedule ws).
    if (rt::findParam(bundle, "row_stats"))
      SINKATTN_RT_TRY(expect("row_stats", BufferRole::Output,
                             {u(shape.batch), u(shape.heads),
                              u((shape.seqQ + 63) / 64), atomicDq ? 3u : 2u,
                              64},
                             {DType::F32}));
    SINKATTN_RT_TRY(expect("sink_terms", BufferRole::Output,
                           atomicDq ? shape.keyRowDims() : shape.lseDims(),
                           {DType::F32}));
    if (atomicDq)
      SINKATTN_RT_TRY(
          expect("dq_accum", BufferRole::Output, qShape, {DType::F32}));
    if (shape.heads != shape.kvHeads) {
      // GQA's dK/dV: fp32 shares per query head, or (the split: --dq atomic
      // with two dK/dV warpgroups) fp32 sums per kv head; the split's older
      // bundles keep the shares, and still run.
      const bool kvAccumulate = atomicDq && rt::findParam(bundle, "dk_accum");
      std::vector<uint64_t> shares = {
          u(kvAccumulate ? shape.kvHeads : shape.heads),
          u(shape.varlen() ? shape.tokensKv() : shape.batch * shape.seqKv),
          u(shape.headDim)};
      const char *dkName = kvAccumulate ? "dk_accum" : "dk_shares";
      const char *dvName = kvAccumulate ? "dv_accum" : "dv_shares";
      SINKATTN_RT_TRY(expect(dkName, BufferRole::Output, shares, {DType::F32}));
      SINKATTN_RT_TRY(expect(dvName, BufferRole::Output, shares, {DType::F32}));
    }
  }
  if (shape.varlen()) {
    SINKATTN_RT_TRY(expect("cu_seqlens_q", BufferRole::Input,
                           {u(shape.batch + 1)}, {DType::I32}));
    SINKATTN_RT_TRY(expect("cu_seqlens_kv", BufferRole::Input,
                           {u(shape.batch + 1)}, {DType::I32}));
    if (shape.tokensQ() > INT32_MAX || shape.tokensKv() > INT32_MAX)
      return rt::Status::error(prefix + "more than 2^31-1 tokens do "
                               "not fit the i32 sequence offsets");
  }
  return shape;
}
} // namespace

rt::Expected<rt::SinkAttentionShape>
runner::sinkFwdShape(const rt::Bundle &bundle) {
  return attentionShape(bundle, /*backward=*/false);
}

rt::Expected<rt::SinkAttentionShape>
runner::sinkBwdShape(const rt::Bundle &bundle) {
  return attentionShape(bundle, /*backward=*/true);
}

rt::Expected<const KernelKind *> runner::harnessKind(const rt::Bundle &bundle) {
  const KernelKind *kind = findKernelKind(bundle.kernel);
  if (!kind)
    return rt::Status::error("the runner has no check or benchmark for kernel "
                             "kind '" + bundle.kernel + "'");
  // A config that contradicts the buffers is a broken bundle: say so before
  // anything else (check and bench alike, with or without a GPU).
  if (kind->validate)
    SINKATTN_RT_TRY(kind->validate(bundle));
  return kind;
}

rt::Expected<std::unique_ptr<Session>>
Session::open(rt::Bundle bundle, int device, bool verbose) {
  SINKATTN_RT_ASSIGN_OR_RETURN(const KernelKind *kind, harnessKind(bundle));
  SINKATTN_RT_ASSIGN_OR_RETURN(auto driver, rt::CudaDriver::load());
  SINKATTN_RT_ASSIGN_OR_RETURN(int count, rt::deviceCount(*driver));
  if (device >= count)
    return rt::Status::error("--device " + std::to_string(device) +
                             " does not exist (" + std::to_string(count) +
                             " CUDA devices)");
  std::unique_ptr<Session> session(new Session());
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::Context context,
                               rt::Context::create(driver, device));
  session->context_ = std::make_unique<rt::Context>(std::move(context));
  SINKATTN_RT_TRY(rt::checkHopperOrNewer(session->context_->info()));
  auto loadStart = std::chrono::steady_clock::now();
  SINKATTN_RT_ASSIGN_OR_RETURN(
      rt::LoadedBundle loaded,
      rt::LoadedBundle::load(*session->context_, std::move(bundle)));
  std::chrono::duration<double, std::milli> loadTime =
      std::chrono::steady_clock::now() - loadStart;
  if (verbose)
    std::fprintf(
        stderr, "kernels of %s: %s, loaded in %.1f ms\nJIT log of %s:\n%s\n",
        loaded.name().c_str(), loaded.codeSource().c_str(), loadTime.count(),
        loaded.name().c_str(), loaded.infoLog().c_str());
  session->loaded_ = std::make_shared<rt::LoadedBundle>(std::move(loaded));
  session->verbose_ = verbose;
  session->kind_ = kind;
  if (rt::sinkFwdVariantOf(session->bundle()).ok()) {
    SINKATTN_RT_ASSIGN_OR_RETURN(
        rt::AttentionLibrary library,
        rt::AttentionLibrary::ofLoaded(*session->context_, session->loaded_));
    session->library_ =
        std::make_unique<rt::AttentionLibrary>(std::move(library));
  }
  return session;
}

int64_t Session::configInt(const std::string &key) const {
  auto it = bundle().config.find(key);
  if (it == bundle().config.end())
    return 0;
  if (const int64_t *value = std::get_if<int64_t>(&it->second))
    return *value;
  return 0;
}

std::string Session::describeConfig() const {
  std::string text;
  for (const auto &[key, value] : bundle().config) {
    if (key == "chip")
      continue;
    text += (text.empty() ? "" : " ") + key + "=";
    if (const int64_t *number = std::get_if<int64_t>(&value)) {
      text += std::to_string(*number);
    } else if (const double *real = std::get_if<double>(&value)) {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.6g", *real);
      text += buffer;
    } else {
      text += std::get<std::string>(value);
    }
  }
  return text;
}

rt::Expected<std::vector<float>>
runner::sinkLogitsFor(const rt::Bundle &bundle, std::vector<float> values) {
  const rt::BundleParam *sinks = rt::findParam(bundle, "sinks");
  if (!sinks || sinks->kind != rt::ParamKind::Buffer ||
      sinks->role != rt::BufferRole::Input)
    return rt::Status::error("--sinks applies to attention bundles with sink "
                             "logits (sink-fwd, sink-bwd), not to this " +
                             bundle.kernel + " bundle");
  uint64_t heads = sinks->shape.empty() ? 1 : sinks->shape.front();
  if (values.size() != 1 && values.size() != heads)
    return rt::Status::error(
        "--sinks has " + std::to_string(values.size()) +
        " values; this bundle has " + std::to_string(heads) +
        " heads (give one value for all of them, or one per head)");
  if (values.size() == 1)
    values.assign(heads, values.front());
  return values;
}

std::string runner::formatSinkLogits(const std::vector<float> &values) {
  std::string text;
  for (float sink : values) {
    char value[32];
    std::snprintf(value, sizeof(value), "%g", double(sink));
    text += (text.empty() ? "" : ",") + std::string(value);
  }
  return text;
}

rt::Status Session::fixSinks(std::vector<float> values) {
  SINKATTN_RT_ASSIGN_OR_RETURN(fixedSinks_,
                               sinkLogitsFor(bundle(), std::move(values)));
  return rt::Status::success();
}

rt::Status Session::prepare(uint64_t seed) {
  buffers_.clear();
  addresses_.clear();
  inputs_.clear();
  inputBytes_.clear();
  referenceOutputs_.clear();
  seed_ = seed;
  for (size_t index = 0; index < bundle().params.size(); ++index) {
    const rt::BundleParam &param = bundle().params[index];
    if (param.kind != rt::ParamKind::Buffer)
      continue;
    uint64_t bytes = rt::bufferBytes(param);
    SINKATTN_RT_ASSIGN_OR_RETURN(rt::DeviceBuffer buffer,
                                 rt::DeviceBuffer::allocate(*context_, bytes));
    if (param.role == rt::BufferRole::Input &&
        param.dtype == rt::DType::I32) {
      // Integer inputs are not random: the sequence offsets of a varlen
      // sink-fwd come from its config.
      SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<int32_t> values,
                                   integerInput(bundle(), param.name));
      if (values.size() * sizeof(int32_t) != bytes)
        return rt::Status::error("internal error: buffer '" + param.name +
                                 "' has the wrong size for its values");
      std::vector<uint8_t> encoded(bytes);
      std::memcpy(encoded.data(), values.data(), bytes);
      inputs_[param.name] = std::vector<float>(values.begin(), values.end());
      SINKATTN_RT_TRY(buffer.copyFromHost(encoded.data(), encoded.size()));
      inputBytes_[param.name] = std::move(encoded);
    } else if (param.role == rt::BufferRole::Input) {
      // Each buffer draws from its own stream of the seed.
      size_t count = bytes / rt::dtypeSize(param.dtype);
      uint64_t stream = seed * 0x9E3779B97F4A7C15ull + index;
      std::vector<float> values =
          param.name == "sinks" && !fixedSinks_.empty()
              ? fixedSinks_
              : kind_->randomInput(param.name, count, stream);
      SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<uint8_t> encoded,
                                   encode(values, param.dtype));
      SINKATTN_RT_ASSIGN_OR_RETURN(inputs_[param.name],
                                   decode(encoded, param.dtype));
      SINKATTN_RT_TRY(buffer.copyFromHost(encoded.data(), encoded.size()));
      inputBytes_[param.name] = std::move(encoded);
    } else {
      SINKATTN_RT_TRY(buffer.poison());
    }
    addresses_[param.name] = buffer.address();
    buffers_.emplace(param.name, std::move(buffer));
  }
  if (library_)
    SINKATTN_RT_TRY(prepareLibraryCall());
  return context_->synchronize();
}

rt::Status Session::prepareLibraryCall() {
  const rt::Bundle &b = bundle();
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t headDim,
                               rt::configInteger(b, "head_dim"));
  // The bundle's token views [T, heads * D] as [T, heads, D].
  auto tokens = [&](const char *name) -> rt::DeviceTensor {
    const rt::BundleParam &p = *rt::findParam(b, name);
    rt::DeviceTensor t{
        addresses_.at(name),
        p.dtype,
        {int64_t(p.shape[0]), int64_t(p.shape[1]) / headDim, headDim},
        {}};
    if (!p.strides.empty())
      t.strides = {int64_t(p.strides[0]), headDim, 1};
    return t;
  };
  auto dense = [&](const char *name) -> rt::DeviceTensor {
    const rt::BundleParam &p = *rt::findParam(b, name);
    return {addresses_.at(name),
            p.dtype,
            std::vector<int64_t>(p.shape.begin(), p.shape.end()),
            {}};
  };
  rt::VarlenForwardArgs call;
  call.q = tokens("q");
  call.k = tokens("k");
  call.v = tokens("v");
  call.out = tokens("o");
  call.lse = dense("lse");
  call.sinks = dense("sinks");
  call.cuSeqlensQ = dense("cu_seqlens_q");
  call.cuSeqlensKv = dense("cu_seqlens_kv");
  // The problem as the check's reference reads it: one parse for both.
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkAttentionShape shape, sinkFwdShape(b));
  auto longest = [](const std::vector<int64_t> &offsets) {
    std::vector<int64_t> lengths = rt::lengthsOf(offsets);
    return lengths.empty() ? int64_t(0)
                           : *std::max_element(lengths.begin(), lengths.end());
  };
  call.maxSeqlenQ = longest(shape.cuSeqlensQ);
  call.maxSeqlenKv = longest(shape.cuSeqlensKv);
  call.causal = shape.causal;
  call.window = shape.window;
  call.softmaxScale = shape.scale;
  SINKATTN_RT_ASSIGN_OR_RETURN(libraryProblem_,
                               rt::validateVarlenForward(call));
  libraryCall_ = std::move(call);
  return rt::Status::success();
}

rt::Status Session::launch(CUstream stream) {
  if (library_)
    return library_->forwardVarlen(libraryCall_, libraryProblem_, stream);
  return loaded_->run(addresses_, stream, rt::LaunchPhase::Main);
}

rt::Status Session::setup() {
  SINKATTN_RT_TRY(loaded_->run(addresses_, nullptr, rt::LaunchPhase::Setup));
  return context_->synchronize();
}

rt::Expected<std::vector<float>>
Session::downloadAsFloat(const std::string &name) const {
  const rt::BundleParam *param = rt::findParam(bundle(), name);
  auto it = buffers_.find(name);
  if (!param || it == buffers_.end())
    return rt::Status::error("internal error: no buffer '" + name + "'");
  std::vector<uint8_t> bytes(it->second.size());
  SINKATTN_RT_TRY(it->second.copyToHost(bytes.data(), bytes.size()));
  return decode(bytes, param->dtype);
}

rt::Expected<CheckReport> Session::check() {
  for (auto &[name, buffer] : buffers_)
    if (rt::findParam(bundle(), name)->role == rt::BufferRole::Output)
      SINKATTN_RT_TRY(buffer.poison());
  SINKATTN_RT_TRY(setup());
  SINKATTN_RT_TRY(launch(nullptr));
  SINKATTN_RT_TRY(context_->synchronize());
  return (this->*kind_->check)();
}

rt::Expected<CheckReport> Session::checkTmaCopy() {
  CheckReport report;
  Comparison comparison;
  // A copy is exact: compare bits, not values.
  const std::vector<uint8_t> &in = inputBytes_.at("in");
  std::vector<uint8_t> out(in.size());
  SINKATTN_RT_TRY(buffers_.at("out").copyToHost(out.data(), out.size()));
  size_t elementSize = rt::dtypeSize(rt::findParam(bundle(), "in")->dtype);
  for (size_t i = 0; i < in.size(); i += elementSize)
    if (std::memcmp(&in[i], &out[i], elementSize) != 0)
      ++report.mismatches;
  // The bytes just downloaded, as values (no second download).
  SINKATTN_RT_ASSIGN_OR_RETURN(
      std::vector<float> outValues,
      decode(out, rt::findParam(bundle(), "out")->dtype));
  const std::vector<float> &inValues = inputs_.at("in");
  for (size_t i = 0; i < inValues.size(); ++i)
    comparison.add(outValues[i], inValues[i]);
  comparison.fill(report);
  report.criterion = "bit-exact";
  report.passed = report.mismatches == 0 && report.nonFinite == 0;
  return report;
}

rt::Expected<CheckReport> Session::checkTmaIm2col() {
  CheckReport report;
  Comparison comparison;
  // out[tap][p][c] = x[n0][bh + dh][bw + dw][c] (0 outside the tensor),
  // (bh, bw) the p-th pixel from (h0, w0) along W, wrapping to the next
  // row (the bounding box is the whole tensor), tap = dh * 3 + dw.
  int64_t h = configInt("h"), w = configInt("w"), c = configInt("c");
  int64_t pixels = configInt("pixels"), taps = configInt("taps");
  int64_t n0 = configInt("n0"), h0 = configInt("h0"), w0 = configInt("w0");
  const std::vector<uint8_t> &x = inputBytes_.at("x");
  rt::DType dtype = rt::findParam(bundle(), "out")->dtype;
  size_t elementSize = rt::dtypeSize(dtype);
  std::vector<uint8_t> out(size_t(taps * pixels * c) * elementSize);
  SINKATTN_RT_TRY(buffers_.at("out").copyToHost(out.data(), out.size()));
  const std::vector<float> &xValues = inputs_.at("x");
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> outValues, decode(out, dtype));
  for (int64_t tap = 0; tap < taps; ++tap)
    for (int64_t p = 0; p < pixels; ++p) {
      int64_t linear = (h0 * w + w0) + p;
      int64_t bh = linear / w, bw = linear % w;
      int64_t ih = bh + tap / 3, iw = bw + tap % 3;
      bool inside = ih >= 0 && ih < h && iw >= 0 && iw < w;
      for (int64_t ch = 0; ch < c; ++ch) {
        size_t o = size_t((tap * pixels + p) * c + ch);
        size_t i = size_t(((n0 * h + ih) * w + iw) * c + ch);
        // Outside the tensor TMA fills zero bits.
        bool equal = inside ? std::memcmp(&x[i * elementSize],
                                          &out[o * elementSize], elementSize) == 0
                            : std::all_of(&out[o * elementSize],
                                          &out[(o + 1) * elementSize],
                                          [](uint8_t byte) { return byte == 0; });
        if (!equal)
          ++report.mismatches;
        comparison.add(outValues[o], inside ? xValues[i] : 0.0);
      }
    }
  comparison.fill(report);
  report.criterion = "bit-exact vs host im2col";
  report.passed = report.mismatches == 0 && report.nonFinite == 0;
  return report;
}

rt::Expected<CheckReport> Session::checkTmaStream() {
  CheckReport report;
  Comparison comparison;
  // out[m, c] = sum over tiles kt >= start of A[m, kt*64 + c] + B[...].
  int64_t m = configInt("m"), k = configInt("k"), start = configInt("start_tile");
  const std::vector<float> &a = inputs_.at("a");
  const std::vector<float> &b = inputs_.at("b");
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> out, downloadAsFloat("out"));
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < 64; ++col) {
      double sum = 0;
      for (int64_t tile = start; tile < k / 64; ++tile) {
        size_t at = size_t(row) * k + tile * 64 + col;
        sum += double(a[at]) + double(b[at]);
      }
      float got = out[size_t(row) * 64 + col];
      if (got != float(sum))
        ++report.mismatches;
      comparison.add(got, sum);
    }
  comparison.fill(report);
  report.criterion = "exact (inputs are multiples of 1/64, sums exact in f32)";
  report.passed = report.mismatches == 0 && report.nonFinite == 0;
  return report;
}

rt::Expected<CheckReport> Session::checkGemm() {
  // D = A * B against a float64 host reference. All rows when the problem
  // is small, else 128 rows (first, last and seeded random ones).
  CheckReport report;
  Comparison comparison;
  int64_t m = configInt("m"), n = configInt("n"), k = configInt("k");
  const std::vector<float> &a = inputs_.at("a");
  const std::vector<float> &b = inputs_.at("b");
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> d, downloadAsFloat("d"));
  std::vector<int64_t> rows;
  if (double(m) * n * k <= double(1 << 30)) {
    rows.resize(m);
    std::iota(rows.begin(), rows.end(), 0);
  } else {
    rt::Rng rng(0x5EED0000 + uint64_t(m));
    rows = {0, m - 1};
    while (rows.size() < 128)
      rows.push_back(int64_t(rng.next() % uint64_t(m)));
  }
  std::vector<std::vector<double>> reference(rows.size());
  parallelFor(rows.size(), [&](size_t r) {
    std::vector<double> &acc = reference[r];
    acc.assign(n, 0.0);
    const float *aRow = &a[size_t(rows[r]) * k];
    for (int64_t kk = 0; kk < k; ++kk) {
      double av = aRow[kk];
      const float *bRow = &b[size_t(kk) * n];
      for (int64_t j = 0; j < n; ++j)
        acc[j] += av * bRow[j];
    }
  });
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t j = 0; j < n; ++j)
      comparison.add(d[size_t(rows[r]) * n + j], reference[r][j]);
  comparison.fill(report);
  report.criterion = "rel-L2 < 1e-3 vs float64 host reference (" +
                     std::to_string(rows.size()) + " of " + std::to_string(m) +
                     " rows)";
  report.passed = report.nonFinite == 0 && report.relL2 < 1e-3;
  return report;
}

/// The reference kernels compute with 1/sqrt(head_dim) built in: a bundle
/// computing with another scale needs a reference that takes it.
static rt::Status checkReferenceScale(const rt::SinkAttentionShape &shape,
                                      const std::string &kernel) {
  double builtIn = 1.0 / std::sqrt(double(shape.headDim));
  if (!(std::fabs(shape.scale - builtIn) <= 1e-6 * builtIn))
    return rt::Status::error(
        kernel + " bundle: config scale " + format("%.9g", shape.scale) +
        " differs from the 1/sqrt(head_dim) = " + format("%.9g", builtIn) +
        " that the reference kernel computes with");
  return rt::Status();
}

rt::Status Session::loadReference() {
  if (referenceFunction_)
    return rt::Status();
  if (!bundle().reference)
    return rt::Status::error(
        "the " + bundle().kernel + " bundle carries no reference kernel "
        "(manifest field 'reference', format_version 2), which its check "
        "runs; recompile the bundle");
  const rt::BundleReference &reference = *bundle().reference;
  // The error of a failed JIT compile holds ptxas's log.
  rt::Expected<rt::Module> module = rt::Module::loadPtx(
      *context_, reference.ptx, rt::JitOptions(), reference.ptxFile);
  if (!module.ok())
    return module.status().withContext("reference kernel: ");
  if (verbose_)
    std::fprintf(stderr, "JIT log of %s:\n%s\n", reference.entry.c_str(),
                 module->infoLog().c_str());
  referenceModule_ = std::make_unique<rt::Module>(module.take());
  rt::Expected<rt::Function> function =
      referenceModule_->getFunction(reference.entry);
  if (!function.ok())
    return function.status().withContext("reference kernel: ");
  referenceFunction_ = std::make_unique<rt::Function>(function.take());
  return rt::Status();
}

rt::Expected<CheckReport> Session::checkSinkFwd() {
  // The kernel has run (check()); now the fp32 GPU reference on the same
  // inputs, into outputs of its own, poisoned like the kernel's.
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkAttentionShape shape,
                               sinkFwdShape(bundle()));
  // A bundle for run-time shapes carries a reference that takes memref
  // descriptors too, and the attention's parameters (the scale among them).
  const bool descriptors = rt::findParam(bundle(), "q")->descriptor;
  if (!descriptors)
    SINKATTN_RT_TRY(checkReferenceScale(shape, bundle().kernel));
  SINKATTN_RT_TRY(loadReference());
  SINKATTN_RT_ASSIGN_OR_RETURN(
      rt::DeviceBuffer refO,
      rt::DeviceBuffer::allocate(*context_, shape.qElements() * sizeof(float)));
  SINKATTN_RT_ASSIGN_OR_RETURN(
      rt::DeviceBuffer refLse,
      rt::DeviceBuffer::allocate(*context_, size_t(shape.rows()) * sizeof(float)));
  SINKATTN_RT_TRY(refO.poison());
  SINKATTN_RT_TRY(refLse.poison());
  rt::KernelArgs args;
  for (auto [input, elements] : {std::pair{"q", shape.qElements()},
                                 {"k", shape.kvElements()},
                                 {"v", shape.kvElements()},
                                 {"sinks", uint64_t(shape.heads)}})
    rt::addReferenceBuffer(args, buffers_.at(input).address(), elements,
                           descriptors);
  rt::addReferenceBuffer(args, refO.address(), shape.qElements(), descriptors);
  rt::addReferenceBuffer(args, refLse.address(), uint64_t(shape.rows()),
                         descriptors);
  if (shape.varlen())
    for (const char *offsets : {"cu_seqlens_q", "cu_seqlens_kv"})
      rt::addReferenceBuffer(args, buffers_.at(offsets).address(),
                             uint64_t(shape.batch + 1), descriptors);
  if (descriptors)
    rt::addReferenceParameters(args, shape);
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::LaunchConfig launch,
                               rt::sinkFwdReferenceLaunch(shape));
  SINKATTN_RT_TRY(rt::launchKernel(*referenceFunction_, launch, args)
                      .withContext("reference kernel: "));
  SINKATTN_RT_TRY(context_->synchronize().withContext("reference kernel: "));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> refOValues,
                               refO.download<float>());
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> refLseValues,
                               refLse.download<float>());
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> o, downloadAsFloat("o"));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> lse, downloadAsFloat("lse"));
  CheckReport report = compareSinkFwd(
      shape, {inputs_.at("q"), inputs_.at("k"), inputs_.at("v"),
              inputs_.at("sinks")},
      o, lse, refOValues, refLseValues, seed_);
  referenceOutputs_["o"] = {rt::findParam(bundle(), "o")->shape,
                            std::move(refOValues)};
  referenceOutputs_["lse"] = {rt::findParam(bundle(), "lse")->shape,
                              std::move(refLseValues)};
  return report;
}

rt::Expected<CheckReport> Session::checkSinkBwd() {
  // The kernels have run (check()); now the backward's fp32 GPU reference
  // (rows, keys, sinks kernels of one module) on the same inputs.
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkAttentionShape shape,
                               sinkFwdShape(bundle()));
  // A bundle for run-time shapes carries a reference that takes memref
  // descriptors too, and the attention's parameters (the scale among them).
  const bool descriptors = rt::findParam(bundle(), "q")->descriptor;
  if (!descriptors)
    SINKATTN_RT_TRY(checkReferenceScale(shape, bundle().kernel));
  SINKATTN_RT_TRY(loadReference());
  rt::Function *rows = referenceFunction_.get();
  std::unique_ptr<rt::Function> keys, sinks;
  for (auto [entry, function] :
       {std::pair{rt::kSinkBwdReferenceKeysEntry, &keys},
        std::pair{rt::kSinkBwdReferenceSinksEntry, &sinks}}) {
    rt::Expected<rt::Function> found = referenceModule_->getFunction(entry);
    if (!found.ok())
      return found.status().withContext("reference kernel: ");
    *function = std::make_unique<rt::Function>(found.take());
  }
  // Its outputs and scratch: dq, dk, dv, dsinks, its own O, lse, delta,
  // sink terms.
  const size_t rowCount = size_t(shape.rows());
  const std::pair<const char *, size_t> refBuffers[] = {
      {"dq", shape.qElements()}, {"dk", shape.kvElements()},
      {"dv", shape.kvElements()}, {"dsinks", size_t(shape.heads)},
      {"o", shape.qElements()}, {"lse", rowCount}, {"delta", rowCount},
      {"sink_terms", rowCount}};
  std::map<std::string, rt::DeviceBuffer> ref;
  rt::KernelArgs args;
  // o: the forward's output as the setup launch stored it (dS's delta is
  // dO . o, as the kernels compute it).
  for (auto [input, elements] : {std::pair{"q", shape.qElements()},
                                 {"k", shape.kvElements()},
                                 {"v", shape.kvElements()},
                                 {"sinks", uint64_t(shape.heads)},
                                 {"do", shape.qElements()},
                                 {"o", shape.qElements()}})
    rt::addReferenceBuffer(args, buffers_.at(input).address(), elements,
                           descriptors);
  for (const auto &[name, count] : refBuffers) {
    SINKATTN_RT_ASSIGN_OR_RETURN(
        rt::DeviceBuffer buffer,
        rt::DeviceBuffer::allocate(*context_, count * sizeof(float)));
    SINKATTN_RT_TRY(buffer.poison());
    rt::addReferenceBuffer(args, buffer.address(), count, descriptors);
    ref.emplace(name, std::move(buffer));
  }
  if (shape.varlen())
    for (const char *offsets : {"cu_seqlens_q", "cu_seqlens_kv"})
      rt::addReferenceBuffer(args, buffers_.at(offsets).address(),
                             uint64_t(shape.batch + 1), descriptors);
  if (descriptors)
    rt::addReferenceParameters(args, shape);
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::SinkBwdReferenceLaunches launches,
                               rt::sinkBwdReferenceLaunches(shape));
  for (auto [function, launch] : {std::pair{rows, &launches.rows},
                                  std::pair{keys.get(), &launches.keys},
                                  std::pair{sinks.get(), &launches.sinks}})
    SINKATTN_RT_TRY(rt::launchKernel(*function, *launch, args)
                        .withContext("reference kernel: "));
  SINKATTN_RT_TRY(context_->synchronize().withContext("reference kernel: "));

  SinkBwdGradients out, refs;
  for (auto [name, kernel, reference] :
       {std::tuple{"dq", &out.dq, &refs.dq}, std::tuple{"dk", &out.dk, &refs.dk},
        std::tuple{"dv", &out.dv, &refs.dv},
        std::tuple{"dsinks", &out.dsinks, &refs.dsinks}}) {
    SINKATTN_RT_ASSIGN_OR_RETURN(*reference, ref.at(name).download<float>());
    SINKATTN_RT_ASSIGN_OR_RETURN(*kernel, downloadAsFloat(name));
  }
  SINKATTN_RT_ASSIGN_OR_RETURN(refs.o, ref.at("o").download<float>());
  SINKATTN_RT_ASSIGN_OR_RETURN(std::vector<float> storedO, downloadAsFloat("o"));
  rt::Expected<CheckReport> report = compareSinkBwd(
      shape,
      {inputs_.at("q"), inputs_.at("k"), inputs_.at("v"), inputs_.at("sinks"),
       inputs_.at("do"), storedO},
      out, refs, seed_);
  for (auto [name, values] :
       {std::pair{"dq", &refs.dq}, std::pair{"dk", &refs.dk},
        std::pair{"dv", &refs.dv}, std::pair{"dsinks", &refs.dsinks}})
    referenceOutputs_[name] = {rt::findParam(bundle(), name)->shape,
                               std::move(*values)};
  return report;
}

rt::Expected<CheckReport> runner::compareSinkBwd(
    const rt::SinkAttentionShape &shape, const SinkBwdInputs &in,
    const SinkBwdGradients &out, const SinkBwdGradients &refs, uint64_t seed,
    double fullCrossCheckWork, double finiteDifferenceWork) {
  CheckReport report;
  std::map<std::string, const std::vector<float> *> refValues = {
      {"dq", &refs.dq}, {"dk", &refs.dk}, {"dv", &refs.dv},
      {"dsinks", &refs.dsinks}};
  std::map<std::string, const std::vector<float> *> outValues = {
      {"dq", &out.dq}, {"dk", &out.dk}, {"dv", &out.dv},
      {"dsinks", &out.dsinks}};
  for (const auto &[name, values] : outValues)
    if (values->size() != refValues[name]->size())
      return rt::Status::error("internal error: the kernel's " + name +
                               " and the reference's differ in size");
  // The kernel against the GPU reference, per gradient: every element
  // within 2e-2 (|ref| + max|ref|) (bf16 rounds P and dS before their
  // GEMMs, so small elements of long sums carry the error of large ones)
  // and the whole tensor within rel-L2 1e-2 (bf16 noise is about 3e-3).
  uint64_t refNonFinite = 0;
  Comparison all;
  std::string stats;
  bool tensorsClose = true;
  // Each gradient's largest finite reference element: the scale of its
  // per-element bounds here and against the float64 backward below.
  std::map<std::string, double> refLargest;
  for (const char *name : {"dq", "dk", "dv", "dsinks"}) {
    const std::vector<float> &kernel = *outValues[name], &r = *refValues[name];
    double &largest = refLargest[name];
    for (float value : r)
      if (std::isfinite(value))
        largest = std::max(largest, double(std::fabs(value)));
    Comparison one;
    for (size_t e = 0; e < kernel.size(); ++e) {
      double x = kernel[e], y = r[e];
      if (!std::isfinite(y)) {
        ++refNonFinite;
        continue;
      }
      one.add(x, y);
      all.add(x, y);
      if (std::isfinite(x) &&
          !(std::fabs(x - y) <= 2e-2 * (std::fabs(y) + largest)))
        ++report.mismatches;
    }
    CheckReport part;
    one.fill(part);
    tensorsClose = tensorsClose && part.relL2 <= 1e-2;
    stats += format("%s%s: rel-L2 %.3e max-abs %.3e max|ref| %.3g",
                    stats.empty() ? "" : "; ", name, part.relL2, part.maxAbs,
                    largest);
  }
  all.fill(report);
  report.notes.push_back(stats + " (vs the fp32 GPU reference)");
  if (!tensorsClose)
    report.notes.push_back("FAIL: a gradient's rel-L2 exceeds 1e-2 (above)");

  // The reference takes dS's delta from the stored O, as the kernels do: so
  // that O is checked too, at every size, against the reference's own fp32
  // O with the forward check's bound.
  uint64_t storedOWrong = 0;
  if (!refs.o.empty()) {
    if (refs.o.size() != in.o.size())
      return rt::Status::error("internal error: the stored O and the "
                               "reference's O differ in size");
    // Every element counts, non-finite ones on either side too.
    Comparison oStats;
    uint64_t refONonFinite = 0;
    storedOWrong =
        countOutsideForwardBound(in.o, refs.o, kOutputBound, oStats,
                                 refONonFinite) +
        oStats.nonFinite + refONonFinite;
    report.notes.push_back(format("stored O (the setup forward's) vs the "
                                  "reference's fp32 O: max-abs %.3e, ",
                                  oStats.maxAbs) +
                           std::to_string(storedOWrong) +
                           " outside 1e-2 + 1e-2*|ref|");
    if (storedOWrong)
      report.notes.push_back("FAIL: the setup forward's stored O is wrong at " +
                             std::to_string(storedOWrong) +
                             " elements (every gradient takes delta from it)");
  }

  // Per row of D (a query's dQ, a key's dK or dV): the tensor-wide scale
  // above hides a small row that is wrong altogether (a late key's dK/dV
  // missing its last query). ||out - ref|| <= 0.3 max(||ref||, floor): rows
  // of dK and dV carry errors of 0.5–3.5% in a bf16 model of the kernels,
  // dQ's rows, whose sums cancel, up to 10% above a floor of 5% of its
  // largest row (dK/dV: 0.1%). The reference takes delta from the stored
  // O as the kernels do: the O's rounding, amplified by cancellation in
  // dP - delta, put a 1-key row's dK 37% off the exact gradient.
  const int64_t d = shape.headDim;
  uint64_t rowsWrong = 0;
  std::string worstRow;
  double worstRatio = 0;
  for (auto [name, floorFraction] :
       {std::pair{"dq", 5e-2}, std::pair{"dk", 1e-3}, std::pair{"dv", 1e-3}}) {
    const std::vector<float> &kernel = *outValues[name], &r = *refValues[name];
    size_t rows = r.size() / size_t(d);
    std::vector<double> refNorms(rows), errNorms(rows);
    double largestNorm = 0;
    for (size_t row = 0; row < rows; ++row) {
      double ref2 = 0, err2 = 0;
      for (int64_t c = 0; c < d; ++c) {
        double x = kernel[row * size_t(d) + size_t(c)],
               y = r[row * size_t(d) + size_t(c)];
        ref2 += std::isfinite(y) ? y * y : 0;
        err2 += std::isfinite(x) && std::isfinite(y) ? (x - y) * (x - y) : 0;
      }
      refNorms[row] = std::sqrt(ref2);
      errNorms[row] = std::sqrt(err2);
      largestNorm = std::max(largestNorm, refNorms[row]);
    }
    for (size_t row = 0; row < rows; ++row) {
      double scale = std::max(refNorms[row], floorFraction * largestNorm);
      double ratio = scale > 0 ? errNorms[row] / scale : errNorms[row];
      if (!(ratio <= 0.3)) {
        ++rowsWrong;
        if (!(ratio <= worstRatio)) {
          worstRatio = ratio;
          worstRow = std::string(name) + " row " + std::to_string(row);
        }
      }
    }
  }
  if (rowsWrong)
    report.notes.push_back(
        "FAIL: " + std::to_string(rowsWrong) +
        " rows of dq/dk/dv are off by more than 30% of their norm (worst: " +
        worstRow + ", " + format("%.3g", worstRatio) + ")");

  // The GPU reference against the float64 CPU backward and the kernels
  // against the exact float64 gradient: every element when that is cheap,
  // else sampled elements (as the forward's check samples rows); on the
  // smallest problems also dsinks against central differences of the loss
  // sum(O . dO).
  double work = double(shape.rows()) * double(shape.seqKv) * double(shape.headDim);
  const bool everything = work <= fullCrossCheckWork;
  const std::vector<float> &q = in.q, &k = in.k, &v = in.v, &sinks = in.sinks,
                           &dO = in.dO;
  BackwardSample sample = chooseBackwardSample(shape, seed, everything);
  SINKATTN_RT_ASSIGN_OR_RETURN(Float64Backward cpu,
                               float64Backward(shape, in, sample));
  uint64_t disagreements = 0, crossChecked = 0, kernelFdFailures = 0,
           exactMismatches = 0;
  double crossMaxAbs = 0, exactMaxAbs = 0;
  for (const Float64Backward::Gradient &gradient : cpu.gradients) {
    const std::vector<float> &x = *outValues[gradient.name],
                             &r = *refValues[gradient.name];
    // The per-element bound's scale: the tensor's largest element, from
    // the exact values here and the (cross-checked) reference elsewhere.
    double largest = refLargest[gradient.name];
    for (double value : gradient.exact)
      largest = std::max(largest, std::fabs(value));
    for (size_t e = 0; e < gradient.at.size(); ++e) {
      ++crossChecked;
      double specified = gradient.specified[e], exact = gradient.exact[e];
      double diff = std::fabs(double(r[gradient.at[e]]) - specified);
      if (!(diff <= 1e-3 + 1e-3 * std::fabs(specified)))
        ++disagreements;
      if (!(diff <= crossMaxAbs))
        crossMaxAbs = diff;
      // The kernels against the exact gradient: the bound they meet
      // against the reference; the stored o's rounding stays far inside.
      double exactDiff = std::fabs(double(x[gradient.at[e]]) - exact);
      if (!(exactDiff <= 2e-2 * (std::fabs(exact) + largest)))
        ++exactMismatches;
      if (!(exactDiff <= exactMaxAbs))
        exactMaxAbs = exactDiff;
    }
  }
  std::string crossText =
      "reference cross-check: fp32 GPU reference vs float64 CPU backward, " +
      sample.describe(shape) + ": max-abs " + format("%.3e", crossMaxAbs) +
      ", " + std::to_string(disagreements) + " of " +
      std::to_string(crossChecked) +
      " values outside 1e-3 + 1e-3*|ref|; kernels vs the exact float64 "
      "gradient (dS from the unrounded O): max-abs " +
      format("%.3e", exactMaxAbs) + ", " + std::to_string(exactMismatches) +
      " outside 2e-2 * (|exact| + max|exact|)";
  if (everything && work <= finiteDifferenceWork) {
    // Central differences in float64 (step 1e-3; the loss is smooth).
    const std::vector<double> &cpuDsinks = cpu.gradients.back().specified;
    std::vector<double> sinkValues(sinks.begin(), sinks.end());
    std::vector<double> fd(size_t(shape.heads), 0.0);
    double largestFd = 0;
    for (int64_t h = 0; h < shape.heads; ++h) {
      if (!std::isfinite(sinkValues[size_t(h)]))
        continue;
      double losses[2];
      for (int side = 0; side < 2; ++side) {
        std::vector<double> moved = sinkValues;
        moved[size_t(h)] += side ? -1e-3 : 1e-3;
        SINKATTN_RT_TRY(
            rt::sinkAttentionLoss(shape, q, k, v, moved, dO, losses[side]));
      }
      fd[size_t(h)] = (losses[0] - losses[1]) / 2e-3;
      largestFd = std::max(largestFd, std::fabs(fd[size_t(h)]));
    }
    // The float64 backward within 1e-5 + 1e-4|fd| (it defines the
    // reference); the kernels' dsinks on the main check's scale.
    double worst = 0;
    uint64_t referenceFailures = 0;
    int64_t finiteSinks = 0;
    for (int64_t h = 0; h < shape.heads; ++h) {
      // A -inf sink has no derivative to difference.
      if (!std::isfinite(sinkValues[size_t(h)]))
        continue;
      ++finiteSinks;
      double x = fd[size_t(h)];
      double diff = std::fabs(double(out.dsinks[size_t(h)]) - x);
      worst = std::max(worst, diff);
      if (!(diff <= 2e-2 * (std::fabs(x) + largestFd)))
        ++kernelFdFailures;
      if (!(std::fabs(cpuDsinks[size_t(h)] - x) <= 1e-5 + 1e-4 * std::fabs(x)))
        ++referenceFailures;
    }
    disagreements += referenceFailures;
    crossText += format("; dsinks vs central differences of sum(O.dO): "
                        "kernel max-abs %.3e, %llu of %lld finite-sink "
                        "heads outside tolerance, float64 backward %llu "
                        "outside",
                        worst, (unsigned long long)kernelFdFailures,
                        (long long)finiteSinks,
                        (unsigned long long)referenceFailures);
  }
  report.notes.push_back(crossText);
  if (refNonFinite)
    report.notes.push_back(
        "FAIL: the GPU reference kernel produced " +
        std::to_string(refNonFinite) +
        " non-finite gradients; the kernel was not compared at those elements");
  if (exactMismatches)
    report.notes.push_back(
        "FAIL: " + std::to_string(exactMismatches) +
        " gradient elements of the kernels are off the exact float64 "
        "gradient by more than 2e-2 * (|exact| + max|exact|)");
  if (kernelFdFailures)
    report.notes.push_back(
        "FAIL: the kernels' dsinks disagree with finite differences of the "
        "loss (" + std::to_string(kernelFdFailures) + " heads)");
  if (disagreements)
    report.notes.push_back(
        "FAIL: the references disagree (" + std::to_string(disagreements) +
        " values): the GPU reference or the float64 backward, not "
        "necessarily the kernel, is wrong");
  report.criterion =
      "|out - ref| <= 2e-2 * (|ref| + max|ref|) for every element, "
      "rel-L2 <= 1e-2 for each of dq, dk, dv and dsinks and every row of "
      "dq/dk/dv within 30% of its norm vs the fp32 GPU "
      "reference kernel (dS from the stored O, itself within 1e-2 + "
      "1e-2*|ref| of the reference's O; dsinks exact; itself within "
      "1e-3 + 1e-3*|ref| of the float64 CPU backward on " +
      sample.describe(shape) +
      ", where the kernels are also within 2e-2 * (|exact| + max|exact|) "
      "of the exact gradient; dsinks also against finite differences on "
      "tiny problems); rel-L2/max-abs over all";
  report.passed = disagreements == 0 && refNonFinite == 0 && tensorsClose &&
                  rowsWrong == 0 && kernelFdFailures == 0 &&
                  exactMismatches == 0 && storedOWrong == 0 &&
                  report.mismatches == 0 && report.nonFinite == 0;
  return report;
}

CheckReport runner::compareSinkFwd(const rt::SinkAttentionShape &shape,
                                   const SinkFwdInputs &in,
                                   const std::vector<float> &o,
                                   const std::vector<float> &lse,
                                   const std::vector<float> &refO,
                                   const std::vector<float> &refLse,
                                   uint64_t seed, double fullCrossCheckWork) {
  // The kernel against the GPU reference, every element.
  CheckReport report;
  Comparison oStats, lseStats;
  uint64_t refNonFinite = 0;
  report.mismatches +=
      countOutsideForwardBound(o, refO, kOutputBound, oStats, refNonFinite);
  report.mismatches +=
      countOutsideForwardBound(lse, refLse, kLseBound, lseStats, refNonFinite);
  oStats.fill(report); // rel-L2 and max-abs of the report are o's
  CheckReport lseReport;
  lseStats.fill(lseReport);
  report.checked = oStats.checked + lseStats.checked;
  report.nonFinite = oStats.nonFinite + lseStats.nonFinite;
  report.notes.push_back(format("o: rel-L2 %.3e max-abs %.3e; lse: rel-L2 %.3e "
                                "max-abs %.3e (vs the fp32 GPU reference)",
                                report.relL2, report.maxAbs, lseReport.relL2,
                                lseReport.maxAbs));

  // The GPU reference against the float64 CPU reference: every row when
  // that is cheap, else the first and last rows and random ones (of this
  // seed, so that different seeds look at different rows).
  const int64_t rows = shape.rows();
  std::vector<int64_t> sample;
  double work = double(rows) * double(shape.seqKv) * double(shape.headDim);
  if (work <= fullCrossCheckWork) {
    sample.resize(size_t(rows));
    std::iota(sample.begin(), sample.end(), 0);
  } else {
    rt::Rng rng(seed * 0x2545F4914F6CDD1Dull + 0x5EED);
    sample = {0, rows - 1};
    while (sample.size() < size_t(std::min<int64_t>(rows, 512)))
      sample.push_back(int64_t(rng.next() % uint64_t(rows)));
  }
  const int64_t d = shape.headDim;
  std::vector<double> cpuO(sample.size() * size_t(d)), cpuLse(sample.size());
  parallelFor(sample.size(), [&](size_t r) {
    rt::sinkAttentionRow(shape, in.q.data(), in.k.data(), in.v.data(),
                         in.sinks.data(), sample[r], &cpuO[r * size_t(d)],
                         &cpuLse[r]);
  });
  uint64_t disagreements = 0, crossChecked = 0;
  double crossMaxAbs = 0;
  int64_t worstRow = -1;
  auto crossCompare = [&](double gpu, double cpu, int64_t row) {
    ++crossChecked;
    // Both -inf (a row without keys or sink): equal.
    double diff = isNegativeInfinity(gpu) && isNegativeInfinity(cpu)
                      ? 0.0
                      : std::fabs(gpu - cpu);
    if (!(diff <= 1e-4 + 1e-4 * std::fabs(cpu))) { // NaN disagrees too
      if (disagreements++ == 0 || !(diff <= crossMaxAbs))
        worstRow = row;
    }
    if (!(diff <= crossMaxAbs))
      crossMaxAbs = diff;
  };
  for (size_t r = 0; r < sample.size(); ++r) {
    int64_t row = sample[r];
    rt::SinkAttentionShape::Row at = shape.rowAt(row);
    size_t offset = size_t(shape.qOffset(at.batch, at.head, at.i));
    for (int64_t c = 0; c < d; ++c)
      crossCompare(refO[offset + size_t(c)], cpuO[r * size_t(d) + c], row);
    crossCompare(refLse[size_t(row)], cpuLse[r], row);
  }
  std::string rowsText = std::to_string(sample.size()) + " of " +
                         std::to_string(rows) + " rows";
  report.notes.push_back(
      "reference cross-check: fp32 GPU reference vs float64 CPU reference on " +
      rowsText + ": max-abs " + format("%.3e", crossMaxAbs) + ", " +
      std::to_string(disagreements) + " of " + std::to_string(crossChecked) +
      " values outside 1e-4 + 1e-4*|ref|");
  if (refNonFinite)
    report.notes.push_back(
        "FAIL: the GPU reference kernel produced " +
        std::to_string(refNonFinite) +
        " non-finite outputs (unwritten outputs are NaN); the kernel was not "
        "compared at those elements");
  if (disagreements)
    report.notes.push_back(
        "FAIL: the GPU reference kernel disagrees with the float64 CPU "
        "reference (" + std::to_string(disagreements) +
        " values, worst at row " + std::to_string(worstRow) +
        "): the reference, not necessarily the kernel, is wrong");

  report.criterion =
      "|out - ref| <= 1e-2 + 1e-2*|ref| for every o element and <= 1e-3 "
      "for every lse element vs the fp32 GPU reference kernel, itself within 1e-4 + 1e-4*|ref| of a "
      "float64 CPU reference on " + rowsText + "; rel-L2/max-abs above are o's";
  report.passed = disagreements == 0 && refNonFinite == 0 &&
                  report.mismatches == 0 && report.nonFinite == 0;
  return report;
}

rt::JsonValue runner::benchJsonRow(const Session &session,
                                   const BenchReport &report, bool flushL2) {
  rt::JsonValue row = rt::JsonValue::object();
  row.set("kernel", session.bundle().kernel);
  row.set("config", session.describeConfig());
  row.set("median_ms", report.medianMs);
  row.set("min_ms", report.minMs);
  row.set("tflops", report.tflops);
  row.set("gbps", report.gbps);
  row.set("iterations", report.iterations);
  rt::JsonValue times = rt::JsonValue::array();
  for (double ms : report.timesMs)
    times.push(ms);
  row.set("times_ms", std::move(times));
  for (const auto &[name, value] : report.metrics)
    row.set(name, value);
  row.set("l2_flush", flushL2);
  if (!session.fixedSinks().empty())
    row.set("sinks", formatSinkLogits(session.fixedSinks()));
  return row;
}

rt::Expected<BenchReport> Session::bench(int warmup, int iterations,
                                         bool flushL2) {
  // What the timed kernels read (the backward: the forward's O and LSE).
  SINKATTN_RT_TRY(setup());
  SINKATTN_RT_ASSIGN_OR_RETURN(
      rt::TimingStats stats,
      rt::benchmark(
          *context_, [&](CUstream stream) { return launch(stream); }, warmup,
          iterations, flushL2));
  BenchReport report;
  report.medianMs = stats.medianMs;
  report.minMs = stats.minMs;
  report.iterations = iterations;
  report.timesMs = stats.timesMs;
  SINKATTN_RT_TRY(kind_->countWork(bundle(), stats.medianMs * 1e-3, report));
  return report;
}

rt::Status Session::saveIo(const std::string &directory) const {
  for (const auto &[name, buffer] : buffers_) {
    const rt::BundleParam *param = rt::findParam(bundle(), name);
    std::vector<uint8_t> bytes(buffer.size());
    SINKATTN_RT_TRY(buffer.copyToHost(bytes.data(), bytes.size()));
    rt::NpyArray array;
    if (param->dtype == rt::DType::F32) {
      std::vector<float> values(bytes.size() / 4);
      std::memcpy(values.data(), bytes.data(), bytes.size());
      array = rt::makeNpyF32(param->shape, values);
    } else if (param->dtype == rt::DType::I32) {
      std::vector<int32_t> values(bytes.size() / 4);
      std::memcpy(values.data(), bytes.data(), bytes.size());
      array = rt::makeNpyI32(param->shape, values);
    } else {
      std::vector<uint16_t> bits(bytes.size() / 2);
      std::memcpy(bits.data(), bytes.data(), bytes.size());
      array = param->dtype == rt::DType::BF16 ? rt::makeNpyBf16(param->shape, bits)
                                              : rt::makeNpyF16(param->shape, bits);
    }
    SINKATTN_RT_TRY(rt::writeNpy(directory + "/" + name + ".npy", array));
  }
  for (const auto &[name, output] : referenceOutputs_)
    SINKATTN_RT_TRY(rt::writeNpy(directory + "/ref_" + name + ".npy",
                                 rt::makeNpyF32(output.first, output.second)));
  return rt::Status::success();
}
