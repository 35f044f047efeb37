//===- AttentionReference.cpp - Attention-sink forward references ---------===//

#include "SinkAttn/Runtime/AttentionReference.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sinkattn::rt {

Status validate(const SinkAttentionShape &s) {
  auto positive = [](const char *name, int64_t value) -> Status {
    if (value < 1)
      return Status::error(std::string(name) + " must be positive, got " +
                           std::to_string(value));
    return Status();
  };
  SINKATTN_RT_TRY(positive("batch", s.batch));
  SINKATTN_RT_TRY(positive("heads", s.heads));
  SINKATTN_RT_TRY(positive("kv_heads", s.kvHeads));
  SINKATTN_RT_TRY(positive("seq_q", s.seqQ));
  SINKATTN_RT_TRY(positive("seq_kv", s.seqKv));
  SINKATTN_RT_TRY(positive("head_dim", s.headDim));
  if (s.heads % s.kvHeads != 0)
    return Status::error("kv_heads " + std::to_string(s.kvHeads) +
                         " does not divide heads " + std::to_string(s.heads));
  if (s.window < 0)
    return Status::error("window must be 0 (none) or positive, got " +
                         std::to_string(s.window));
  if (!std::isfinite(s.scale))
    return Status::error("scale is not a finite number");
  // Every product below then stays far from int64 overflow, whatever the
  // individual sizes are.
  const double limit = double(int64_t(1) << 40);
  if (double(s.batch) * double(s.heads) * double(s.seqQ) * double(s.headDim) >
          limit ||
      double(s.batch) * double(s.kvHeads) * double(s.seqKv) *
              double(s.headDim) > limit)
    return Status::error("the attention tensors have more than 2^40 elements");
  return Status();
}

KeyRange attendedKeys(const SinkAttentionShape &s, int64_t i) {
  int64_t p = i + (s.seqKv - s.seqQ);
  KeyRange range;
  range.end = std::min(p, s.seqKv - 1) + 1;
  range.begin = s.window > 0 ? std::max<int64_t>(0, p - s.window + 1) : 0;
  if (range.end < range.begin)
    range.end = range.begin;
  return range;
}

uint64_t attendedPairs(const SinkAttentionShape &s) {
  // Row i attends min(p + 1, W) keys at position p = i + SKV - SQ >= 0 (no
  // window: p + 1), none at p < 0. p runs over [SKV - SQ, SKV - 1], so the
  // total is g(SKV) - g(max(SKV - SQ, 0)) with g(n) = sum over p < n.
  using Wide = unsigned __int128;
  auto g = [&](int64_t n) -> Wide {
    Wide count = Wide(n);
    if (s.window <= 0 || n <= s.window)
      return count * (count + 1) / 2;
    Wide w = Wide(s.window);
    return w * (w + 1) / 2 + (count - w) * w;
  };
  int64_t first = std::max<int64_t>(s.seqKv - s.seqQ, 0);
  Wide pairs = g(s.seqKv) - g(first);
  return pairs > Wide(UINT64_MAX) ? UINT64_MAX : uint64_t(pairs);
}

void sinkAttentionRow(const SinkAttentionShape &s, const float *q,
                      const float *k, const float *v, const float *sinks,
                      int64_t row, double *o, double *lse) {
  const int64_t d = s.headDim;
  const int64_t i = row % s.seqQ;
  const int64_t bh = row / s.seqQ;
  const int64_t h = bh % s.heads;
  const int64_t b = bh / s.heads;
  const int64_t hk = h / (s.heads / s.kvHeads);
  const float *qi = q + row * d;
  const int64_t kvBase = (b * s.kvHeads + hk) * s.seqKv * d;
  const double t = sinks[h];

  // Two passes (max, then sum and accumulate) keep every exponent <= 0.
  KeyRange keys = attendedKeys(s, i);
  std::vector<double> logits(size_t(keys.size()));
  double m = t;
  for (int64_t j = keys.begin; j < keys.end; ++j) {
    const float *kj = k + kvBase + j * d;
    double dot = 0;
    for (int64_t c = 0; c < d; ++c)
      dot += double(qi[c]) * double(kj[c]);
    double logit = s.scale * dot;
    logits[size_t(j - keys.begin)] = logit;
    m = std::max(m, logit);
  }
  double l = std::exp(t - m);
  std::fill(o, o + d, 0.0);
  for (int64_t j = keys.begin; j < keys.end; ++j) {
    double p = std::exp(logits[size_t(j - keys.begin)] - m);
    l += p;
    const float *vj = v + kvBase + j * d;
    for (int64_t c = 0; c < d; ++c)
      o[c] += p * double(vj[c]);
  }
  // l >= 1: the largest term is exp(0).
  for (int64_t c = 0; c < d; ++c)
    o[c] /= l;
  *lse = m + std::log(l);
}

Status sinkAttentionForward(const SinkAttentionShape &s,
                            const std::vector<float> &q,
                            const std::vector<float> &k,
                            const std::vector<float> &v,
                            const std::vector<float> &sinks,
                            std::vector<double> &o, std::vector<double> &lse) {
  SINKATTN_RT_TRY(validate(s));
  auto expect = [](const char *name, size_t got, uint64_t want) -> Status {
    if (got != want)
      return Status::error(std::string(name) + " has " + std::to_string(got) +
                           " elements; the shape needs " +
                           std::to_string(want));
    return Status();
  };
  SINKATTN_RT_TRY(expect("q", q.size(), s.qElements()));
  SINKATTN_RT_TRY(expect("k", k.size(), s.kvElements()));
  SINKATTN_RT_TRY(expect("v", v.size(), s.kvElements()));
  SINKATTN_RT_TRY(expect("sinks", sinks.size(), uint64_t(s.heads)));
  o.assign(size_t(s.qElements()), 0.0);
  lse.assign(size_t(s.rows()), 0.0);
  for (int64_t row = 0; row < s.rows(); ++row)
    sinkAttentionRow(s, q.data(), k.data(), v.data(), sinks.data(), row,
                     &o[size_t(row * s.headDim)], &lse[size_t(row)]);
  return Status();
}

Expected<LaunchConfig> sinkFwdReferenceLaunch(const SinkAttentionShape &s,
                                              CUstream stream) {
  SINKATTN_RT_TRY(validate(s));
  int64_t blocks = (s.rows() + kSinkFwdReferenceBlockSize - 1) /
                   kSinkFwdReferenceBlockSize;
  if (blocks > INT32_MAX)
    return Status::error("the sink-fwd reference needs " +
                         std::to_string(blocks) +
                         " blocks; a grid holds at most 2^31-1");
  LaunchConfig config;
  config.grid = {uint32_t(blocks), 1, 1};
  config.block = {kSinkFwdReferenceBlockSize, 1, 1};
  config.stream = stream;
  return config;
}

} // namespace sinkattn::rt
