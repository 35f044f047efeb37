//===- AttentionReference.cpp - Attention-sink forward references ---------===//

#include "SinkAttn/Runtime/AttentionReference.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sinkattn::rt {

const char *layoutName(AttentionLayout layout) {
  switch (layout) {
  case AttentionLayout::BHSD:
    return "bhsd";
  case AttentionLayout::BSHD:
    return "bshd";
  case AttentionLayout::Varlen:
    return "varlen";
  }
  return "?";
}

std::optional<AttentionLayout> parseLayout(std::string_view name) {
  for (AttentionLayout layout : {AttentionLayout::BHSD, AttentionLayout::BSHD,
                                 AttentionLayout::Varlen})
    if (name == layoutName(layout))
      return layout;
  return std::nullopt;
}

SinkAttentionShape::Row SinkAttentionShape::rowAt(int64_t row) const {
  if (!varlen())
    return {row / (seqQ * heads), (row / seqQ) % heads, row % seqQ};
  // LSE is [H, TQ]: find the sequence that owns the token.
  int64_t token = row % tokensQ();
  auto next = std::upper_bound(cuSeqlensQ.begin(), cuSeqlensQ.end(), token);
  int64_t b = int64_t(next - cuSeqlensQ.begin()) - 1;
  return {b, row / tokensQ(), token - cuSeqlensQ[size_t(b)]};
}

int64_t SinkAttentionShape::rowIndex(int64_t b, int64_t h, int64_t i) const {
  if (!varlen())
    return (b * heads + h) * seqQ + i;
  return h * tokensQ() + cuSeqlensQ[size_t(b)] + i;
}

/// Offset of row `pos` of head `head` in sequence b of a q- or k-like
/// tensor with `heads` heads and padded length `seq`; varlen sequences
/// start at token `start`.
static int64_t rowOffset(AttentionLayout layout, int64_t b, int64_t head,
                         int64_t pos, int64_t heads, int64_t seq,
                         int64_t start, int64_t headDim) {
  switch (layout) {
  case AttentionLayout::BHSD:
    return ((b * heads + head) * seq + pos) * headDim;
  case AttentionLayout::BSHD:
    return ((b * seq + pos) * heads + head) * headDim;
  case AttentionLayout::Varlen:
    return ((start + pos) * heads + head) * headDim;
  }
  return 0;
}

int64_t SinkAttentionShape::qOffset(int64_t b, int64_t h, int64_t i) const {
  return rowOffset(layout, b, h, i, heads, seqQ,
                   varlen() ? cuSeqlensQ[size_t(b)] : 0, headDim);
}

int64_t SinkAttentionShape::kvOffset(int64_t b, int64_t hk, int64_t j) const {
  return rowOffset(layout, b, hk, j, kvHeads, seqKv,
                   varlen() ? cuSeqlensKv[size_t(b)] : 0, headDim);
}

/// [B, heads, seq, D], [B, seq, heads, D] or [tokens, heads, D].
static std::vector<uint64_t> tensorDims(AttentionLayout layout, int64_t batch,
                                        int64_t heads, int64_t seq,
                                        int64_t tokens, int64_t headDim) {
  auto u = [](int64_t v) { return uint64_t(v); };
  switch (layout) {
  case AttentionLayout::BHSD:
    return {u(batch), u(heads), u(seq), u(headDim)};
  case AttentionLayout::BSHD:
    return {u(batch), u(seq), u(heads), u(headDim)};
  case AttentionLayout::Varlen:
    return {u(tokens), u(heads), u(headDim)};
  }
  return {};
}

std::vector<uint64_t> SinkAttentionShape::qDims() const {
  return tensorDims(layout, batch, heads, seqQ, tokensQ(), headDim);
}

std::vector<uint64_t> SinkAttentionShape::kvDims() const {
  return tensorDims(layout, batch, kvHeads, seqKv, tokensKv(), headDim);
}

std::vector<uint64_t> SinkAttentionShape::lseDims() const {
  if (varlen())
    return {uint64_t(heads), uint64_t(tokensQ())};
  return {uint64_t(batch), uint64_t(heads), uint64_t(seqQ)};
}

std::vector<uint64_t> SinkAttentionShape::keyRowDims() const {
  if (varlen())
    return {uint64_t(heads), uint64_t(tokensKv())};
  return {uint64_t(batch), uint64_t(heads), uint64_t(seqKv)};
}

std::vector<std::string_view> splitCommaList(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string_view::npos
                                           ? std::string_view::npos
                                           : comma - start));
    if (comma == std::string_view::npos)
      return items;
    start = comma + 1;
  }
}

Expected<std::vector<int64_t>> parseLengths(std::string_view text,
                                            const std::string &what) {
  std::vector<int64_t> lengths;
  for (std::string_view item : splitCommaList(text)) {
    // At most 12 digits, so the value cannot overflow; anything else is
    // rejected before it is accumulated.
    bool digits = !item.empty() && item.size() <= 12 &&
                  std::all_of(item.begin(), item.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    if (!digits)
      return Status::error(what + ": '" + std::string(text) +
                           "' is not a comma-separated list of lengths "
                           "(non-negative integers below 10^12)");
    int64_t value = 0;
    for (char c : item)
      value = value * 10 + (c - '0');
    lengths.push_back(value);
  }
  return lengths;
}

std::string formatLengths(const std::vector<int64_t> &lengths) {
  std::string text;
  for (int64_t length : lengths)
    text += (text.empty() ? "" : ",") + std::to_string(length);
  return text;
}

std::vector<int64_t> offsetsOf(const std::vector<int64_t> &lengths) {
  std::vector<int64_t> offsets = {0};
  for (int64_t length : lengths)
    offsets.push_back(offsets.back() + length);
  return offsets;
}

std::vector<int64_t> lengthsOf(const std::vector<int64_t> &offsets) {
  std::vector<int64_t> lengths;
  for (size_t b = 0; b + 1 < offsets.size(); ++b)
    lengths.push_back(offsets[b + 1] - offsets[b]);
  return lengths;
}

/// Varlen offsets: B + 1 of them from 0, non-decreasing, every length
/// within `bound` (and the total below 2^40).
static Status validateOffsets(const char *name, const std::vector<int64_t> &cu,
                              int64_t batch, int64_t bound,
                              const char *boundName) {
  std::string prefix = std::string(name) + ": ";
  if (int64_t(cu.size()) != batch + 1)
    return Status::error(prefix + "has " + std::to_string(cu.size()) +
                         " offsets; " + std::to_string(batch) +
                         " sequences need " + std::to_string(batch + 1));
  if (cu[0] != 0)
    return Status::error(prefix + "starts at " + std::to_string(cu[0]) +
                         ", not 0");
  for (size_t b = 0; b + 1 < cu.size(); ++b) {
    int64_t length = cu[b + 1] - cu[b];
    if (length < 0)
      return Status::error(prefix + "decreases after sequence " +
                           std::to_string(b));
    if (length > bound)
      return Status::error(prefix + "sequence " + std::to_string(b) +
                           " has length " + std::to_string(length) + " > " +
                           boundName + " " + std::to_string(bound));
  }
  if (cu.back() > (int64_t(1) << 40))
    return Status::error(prefix + "more than 2^40 tokens");
  return Status();
}

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
  if (s.window > 0 && !s.causal)
    return Status::error("a sliding window needs the causal mask (window " +
                         std::to_string(s.window) + " without causal)");
  if (!std::isfinite(s.scale))
    return Status::error("scale is not a finite number");
  if (s.varlen()) {
    SINKATTN_RT_TRY(validateOffsets("cu_seqlens_q", s.cuSeqlensQ, s.batch,
                                    s.seqQ, "seq_q"));
    SINKATTN_RT_TRY(validateOffsets("cu_seqlens_kv", s.cuSeqlensKv, s.batch,
                                    s.seqKv, "seq_kv"));
    // Tensors of no elements have no tensor maps (and nothing to compute).
    if (s.tokensQ() == 0 || s.tokensKv() == 0)
      return Status::error(std::string(s.tokensQ() == 0 ? "cu_seqlens_q"
                                                        : "cu_seqlens_kv") +
                           ": no tokens at all (every sequence is empty)");
  } else if (!s.cuSeqlensQ.empty() || !s.cuSeqlensKv.empty()) {
    return Status::error(std::string("sequence offsets need the varlen "
                                     "layout, not ") +
                         layoutName(s.layout));
  }
  // Every product below then stays far from int64 overflow, whatever the
  // individual sizes are.
  const double limit = double(int64_t(1) << 40);
  if (double(s.batch) * double(s.heads) * double(s.seqQ) * double(s.headDim) >
          limit ||
      double(s.batch) * double(s.kvHeads) * double(s.seqKv) *
              double(s.headDim) > limit ||
      double(s.tokensQ()) * double(s.heads) * double(s.headDim) > limit ||
      double(s.tokensKv()) * double(s.kvHeads) * double(s.headDim) > limit)
    return Status::error("the attention tensors have more than 2^40 elements");
  return Status();
}

KeyRange attendedKeys(const SinkAttentionShape &s, int64_t b, int64_t i) {
  int64_t seqKv = s.seqKvOf(b);
  KeyRange range;
  if (!s.causal) {
    range.end = seqKv;
    return range;
  }
  int64_t p = i + (seqKv - s.seqQOf(b));
  range.end = std::max<int64_t>(std::min(p, seqKv - 1) + 1, 0);
  range.begin = s.window > 0 ? std::max<int64_t>(0, p - s.window + 1) : 0;
  if (range.end < range.begin)
    range.end = range.begin;
  return range;
}

uint64_t attendedPairs(const SinkAttentionShape &s) {
  // In one sequence, row i attends min(p + 1, W) keys at position
  // p = i + SKV - SQ >= 0 (no window: p + 1), none at p < 0. p runs over
  // [SKV - SQ, SKV - 1], so the total is g(SKV) - g(max(SKV - SQ, 0)) with
  // g(n) = sum over p < n.
  using Wide = unsigned __int128;
  auto g = [&](int64_t n) -> Wide {
    Wide count = Wide(n);
    if (s.window <= 0 || n <= s.window)
      return count * (count + 1) / 2;
    Wide w = Wide(s.window);
    return w * (w + 1) / 2 + (count - w) * w;
  };
  auto sequencePairs = [&](int64_t seqQ, int64_t seqKv) {
    if (!s.causal)
      return Wide(seqQ) * Wide(seqKv);
    return g(seqKv) - g(std::max<int64_t>(seqKv - seqQ, 0));
  };
  Wide pairs = 0;
  if (s.varlen())
    for (int64_t b = 0; b < s.batch; ++b)
      pairs += sequencePairs(s.seqQOf(b), s.seqKvOf(b));
  else
    pairs = Wide(s.batch) * sequencePairs(s.seqQ, s.seqKv);
  return pairs > Wide(UINT64_MAX) ? UINT64_MAX : uint64_t(pairs);
}

void sinkAttentionRow(const SinkAttentionShape &s, const float *q,
                      const float *k, const float *v, const float *sinks,
                      int64_t row, double *o, double *lse) {
  const int64_t d = s.headDim;
  const auto [b, h, i] = s.rowAt(row);
  const int64_t hk = h / (s.heads / s.kvHeads);
  const float *qi = q + s.qOffset(b, h, i);
  const double t = sinks[h];

  // Two passes (max, then sum and accumulate) keep every exponent <= 0.
  KeyRange keys = attendedKeys(s, b, i);
  std::vector<double> logits(size_t(keys.size()));
  double m = t;
  for (int64_t j = keys.begin; j < keys.end; ++j) {
    const float *kj = k + s.kvOffset(b, hk, j);
    double dot = 0;
    for (int64_t c = 0; c < d; ++c)
      dot += double(qi[c]) * double(kj[c]);
    double logit = s.scale * dot;
    logits[size_t(j - keys.begin)] = logit;
    m = std::max(m, logit);
  }
  // A row with neither keys nor a finite sink: O = 0, LSE = t (= -inf).
  if (keys.size() == 0 && std::isinf(t) && t < 0) {
    std::fill(o, o + d, 0.0);
    *lse = t;
    return;
  }
  double l = std::exp(t - m);
  std::fill(o, o + d, 0.0);
  for (int64_t j = keys.begin; j < keys.end; ++j) {
    double p = std::exp(logits[size_t(j - keys.begin)] - m);
    l += p;
    const float *vj = v + s.kvOffset(b, hk, j);
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
  for (int64_t row = 0; row < s.rows(); ++row) {
    SinkAttentionShape::Row at = s.rowAt(row);
    sinkAttentionRow(s, q.data(), k.data(), v.data(), sinks.data(), row,
                     &o[size_t(s.qOffset(at.batch, at.head, at.i))],
                     &lse[size_t(row)]);
  }
  return Status();
}

namespace {
/// A float64 dot product of two float rows; four partial sums keep the
/// sampled checks of long rows fast (their order does not matter at this
/// precision).
double dot(const float *a, const float *b, int64_t n) {
  double sums[4] = {0, 0, 0, 0};
  int64_t c = 0;
  for (; c + 4 <= n; c += 4)
    for (int64_t u = 0; u < 4; ++u)
      sums[u] += double(a[c + u]) * double(b[c + u]);
  for (; c < n; ++c)
    sums[0] += double(a[c]) * double(b[c]);
  return (sums[0] + sums[1]) + (sums[2] + sums[3]);
}
/// The row's attended logits, LSE and O in float64 (sink logit `t`).
struct RowForward {
  KeyRange keys;
  std::vector<double> logits; ///< s_j for j in keys
  double lse = 0;
  std::vector<double> o;
};

RowForward forwardRow(const SinkAttentionShape &s, const float *q,
                      const float *k, const float *v, double t, int64_t b,
                      int64_t h, int64_t i) {
  const int64_t d = s.headDim;
  const int64_t hk = h / (s.heads / s.kvHeads);
  const float *qi = q + s.qOffset(b, h, i);
  RowForward row;
  row.keys = attendedKeys(s, b, i);
  double m = t;
  for (int64_t j = row.keys.begin; j < row.keys.end; ++j) {
    row.logits.push_back(s.scale * dot(qi, k + s.kvOffset(b, hk, j), d));
    m = std::max(m, row.logits.back());
  }
  row.o.assign(size_t(d), 0.0);
  // A row with neither keys nor a finite sink: O = 0, LSE = t (= -inf).
  if (row.keys.size() == 0 && std::isinf(t) && t < 0) {
    row.lse = t;
    return row;
  }
  double l = std::exp(t - m);
  for (double logit : row.logits)
    l += std::exp(logit - m);
  row.lse = m + std::log(l);
  for (int64_t j = row.keys.begin; j < row.keys.end; ++j) {
    double p = std::exp(row.logits[size_t(j - row.keys.begin)] - row.lse);
    const float *vj = v + s.kvOffset(b, hk, j);
    for (int64_t c = 0; c < d; ++c)
      row.o[size_t(c)] += p * double(vj[c]);
  }
  return row;
}

Status checkSizes(const SinkAttentionShape &s, size_t q, size_t k, size_t v,
                  size_t sinks, size_t dO) {
  auto expect = [](const char *name, size_t got, uint64_t want) -> Status {
    if (got != want)
      return Status::error(std::string(name) + " has " + std::to_string(got) +
                           " elements; the shape needs " +
                           std::to_string(want));
    return Status();
  };
  SINKATTN_RT_TRY(expect("q", q, s.qElements()));
  SINKATTN_RT_TRY(expect("k", k, s.kvElements()));
  SINKATTN_RT_TRY(expect("v", v, s.kvElements()));
  SINKATTN_RT_TRY(expect("sinks", sinks, uint64_t(s.heads)));
  SINKATTN_RT_TRY(expect("do", dO, s.qElements()));
  return Status();
}
} // namespace

Status sinkAttentionBackward(const SinkAttentionShape &s,
                             const std::vector<float> &q,
                             const std::vector<float> &k,
                             const std::vector<float> &v,
                             const std::vector<float> &sinks,
                             const std::vector<float> &dO,
                             SinkAttentionGradients &g,
                             const std::vector<float> *storedO) {
  SINKATTN_RT_TRY(validate(s));
  SINKATTN_RT_TRY(
      checkSizes(s, q.size(), k.size(), v.size(), sinks.size(), dO.size()));
  if (storedO && storedO->size() != size_t(s.qElements()))
    return Status::error("o has " + std::to_string(storedO->size()) +
                         " elements; the shape needs " +
                         std::to_string(s.qElements()));
  const int64_t d = s.headDim;
  g.dq.assign(size_t(s.qElements()), 0.0);
  g.dk.assign(size_t(s.kvElements()), 0.0);
  g.dv.assign(size_t(s.kvElements()), 0.0);
  g.dsinks.assign(size_t(s.heads), 0.0);
  for (int64_t r = 0; r < s.rows(); ++r) {
    const auto [b, h, i] = s.rowAt(r);
    const int64_t hk = h / (s.heads / s.kvHeads);
    const double t = sinks[size_t(h)];
    RowForward row = forwardRow(s, q.data(), k.data(), v.data(), t, b, h, i);
    const int64_t qAt = s.qOffset(b, h, i);
    const float *dOi = dO.data() + qAt;
    const float *qi = q.data() + qAt;
    // dO . O: exact for dsinks; dS's from the stored o when given.
    double exactDelta = 0, delta = 0;
    for (int64_t c = 0; c < d; ++c)
      exactDelta += double(dOi[c]) * row.o[size_t(c)];
    if (storedO) {
      const float *oi = storedO->data() + qAt;
      for (int64_t c = 0; c < d; ++c)
        delta += double(dOi[c]) * double(oi[c]);
    } else {
      delta = exactDelta;
    }
    // A -inf sink takes no probability (and has no gradient).
    if (!(std::isinf(t) && t < 0))
      g.dsinks[size_t(h)] -= std::exp(t - row.lse) * exactDelta;
    for (int64_t j = row.keys.begin; j < row.keys.end; ++j) {
      const int64_t kvAt = s.kvOffset(b, hk, j);
      const float *kj = k.data() + kvAt;
      const float *vj = v.data() + kvAt;
      double p = std::exp(row.logits[size_t(j - row.keys.begin)] - row.lse);
      double dp = 0;
      for (int64_t c = 0; c < d; ++c)
        dp += double(dOi[c]) * double(vj[c]);
      double ds = p * (dp - delta);
      for (int64_t c = 0; c < d; ++c) {
        g.dq[size_t(qAt + c)] += s.scale * ds * double(kj[c]);
        g.dk[size_t(kvAt + c)] += s.scale * ds * double(qi[c]);
        g.dv[size_t(kvAt + c)] += p * double(dOi[c]);
      }
    }
  }
  return Status();
}

SinkRowStatistics sinkAttentionRowStatistics(const SinkAttentionShape &s,
                                             const float *q, const float *k,
                                             const float *v, const float *sinks,
                                             const float *dO,
                                             const float *storedO,
                                             int64_t row) {
  const auto [b, h, i] = s.rowAt(row);
  RowForward forward = forwardRow(s, q, k, v, sinks[h], b, h, i);
  const int64_t qAt = s.qOffset(b, h, i);
  SinkRowStatistics statistics;
  statistics.lse = forward.lse;
  for (int64_t c = 0; c < s.headDim; ++c)
    statistics.exactDelta += double(dO[qAt + c]) * forward.o[size_t(c)];
  statistics.delta = storedO ? dot(dO + qAt, storedO + qAt, s.headDim)
                             : statistics.exactDelta;
  return statistics;
}

void sinkAttentionDqRow(const SinkAttentionShape &s, const float *q,
                        const float *k, const float *v, const float *dO,
                        int64_t row, const SinkRowStatistics &statistics,
                        double *dq) {
  const int64_t d = s.headDim;
  const auto [b, h, i] = s.rowAt(row);
  const int64_t hk = h / (s.heads / s.kvHeads);
  const int64_t qAt = s.qOffset(b, h, i);
  std::fill(dq, dq + d, 0.0);
  KeyRange keys = attendedKeys(s, b, i);
  for (int64_t j = keys.begin; j < keys.end; ++j) {
    const float *kj = k + s.kvOffset(b, hk, j), *vj = v + s.kvOffset(b, hk, j);
    double p = std::exp(s.scale * dot(q + qAt, kj, d) - statistics.lse);
    double ds = p * (dot(dO + qAt, vj, d) - statistics.delta);
    for (int64_t c = 0; c < d; ++c)
      dq[c] += s.scale * ds * double(kj[c]);
  }
}

void sinkAttentionDkvRow(
    const SinkAttentionShape &s, const float *q, const float *k,
    const float *v, const float *dO, int64_t b, int64_t hk, int64_t j,
    const std::function<const SinkRowStatistics &(int64_t)> &statistics,
    double *dk, double *dv) {
  const int64_t d = s.headDim, group = s.heads / s.kvHeads;
  const float *kj = k + s.kvOffset(b, hk, j), *vj = v + s.kvOffset(b, hk, j);
  std::fill(dk, dk + d, 0.0);
  std::fill(dv, dv + d, 0.0);
  // Row i sits at position i + past and attends j iff j <= i + past and,
  // with a window, j > i + past - W (attendedKeys' condition solved for i);
  // without the causal mask every row attends j.
  const int64_t seqQ = s.seqQOf(b), past = s.seqKvOf(b) - seqQ;
  const int64_t first = s.causal ? std::max<int64_t>(0, j - past) : 0;
  const int64_t end =
      s.window > 0 ? std::min<int64_t>(seqQ, j - past + s.window) : seqQ;
  for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
    for (int64_t i = first; i < end; ++i) {
      const SinkRowStatistics &row = statistics(s.rowIndex(b, h, i));
      const int64_t qAt = s.qOffset(b, h, i);
      const float *qi = q + qAt, *dOi = dO + qAt;
      double p = std::exp(s.scale * dot(qi, kj, d) - row.lse);
      double ds = p * (dot(dOi, vj, d) - row.delta);
      for (int64_t c = 0; c < d; ++c) {
        dk[c] += s.scale * ds * double(qi[c]);
        dv[c] += p * double(dOi[c]);
      }
    }
}

double sinkAttentionDsinkTerm(double t, const SinkRowStatistics &statistics) {
  if (std::isinf(t) && t < 0)
    return 0;
  return -std::exp(t - statistics.lse) * statistics.exactDelta;
}

Status sinkAttentionLoss(const SinkAttentionShape &s,
                         const std::vector<float> &q,
                         const std::vector<float> &k,
                         const std::vector<float> &v,
                         const std::vector<double> &sinks,
                         const std::vector<float> &dO, double &loss) {
  SINKATTN_RT_TRY(validate(s));
  SINKATTN_RT_TRY(
      checkSizes(s, q.size(), k.size(), v.size(), sinks.size(), dO.size()));
  loss = 0;
  for (int64_t r = 0; r < s.rows(); ++r) {
    const auto [b, h, i] = s.rowAt(r);
    RowForward row =
        forwardRow(s, q.data(), k.data(), v.data(), sinks[size_t(h)], b, h, i);
    const float *dOi = dO.data() + s.qOffset(b, h, i);
    for (int64_t c = 0; c < s.headDim; ++c)
      loss += row.o[size_t(c)] * double(dOi[c]);
  }
  return Status();
}

void addReferenceBuffer(KernelArgs &args, CUdeviceptr address,
                        uint64_t elements, bool descriptor) {
  args.addPointer(address);
  if (!descriptor)
    return;
  args.addPointer(address);
  args.addScalar<int64_t>(0);
  args.addScalar<int64_t>(int64_t(elements));
  args.addScalar<int64_t>(1);
}

void addReferenceParameters(KernelArgs &args, const SinkAttentionShape &s) {
  args.addScalar<int32_t>(int32_t(s.heads));
  args.addScalar<int32_t>(int32_t(s.kvHeads));
  args.addScalar<int32_t>(int32_t(s.window));
  args.addScalar<int32_t>(s.causal ? 1 : 0);
  args.addScalar<float>(float(s.scale));
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

Expected<SinkBwdReferenceLaunches>
sinkBwdReferenceLaunches(const SinkAttentionShape &s, CUstream stream) {
  SINKATTN_RT_TRY(validate(s));
  auto over = [&](int64_t threads, const char *what) -> Expected<LaunchConfig> {
    int64_t blocks = std::max<int64_t>(
        1, (threads + kSinkFwdReferenceBlockSize - 1) / kSinkFwdReferenceBlockSize);
    if (blocks > INT32_MAX)
      return Status::error(std::string("the sink-bwd reference needs ") +
                           std::to_string(blocks) + " blocks over " + what +
                           "; a grid holds at most 2^31-1");
    LaunchConfig config;
    config.grid = {uint32_t(blocks), 1, 1};
    config.block = {kSinkFwdReferenceBlockSize, 1, 1};
    config.stream = stream;
    return config;
  };
  SinkBwdReferenceLaunches launches;
  SINKATTN_RT_ASSIGN_OR_RETURN(launches.rows, over(s.rows(), "query rows"));
  SINKATTN_RT_ASSIGN_OR_RETURN(launches.keys,
                               over(s.kvHeads * s.tokensKv(), "key rows"));
  SINKATTN_RT_ASSIGN_OR_RETURN(launches.sinks, over(s.heads, "heads"));
  return launches;
}

} // namespace sinkattn::rt
