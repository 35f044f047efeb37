//===- AttentionReference.h - Attention-sink forward references -*- C++ -*-===//
//
// What the `sink-fwd` kernel computes, stated once for the checking side:
// a float64 CPU reference (used to cross-check the GPU reference), the
// exact count of attended (query, key) pairs (for TFLOP/s), and the ABI and
// launch shape of the fp32 GPU reference kernel `sink_fwd_reference`, which
// the compiler builds (lib/Kernels/SinkFwdReference.cpp) and the runner
// launches: both sides take them from here.
//
// Semantics. Q is [B, H, SQ, D], K and V are [B, HK, SKV, D], sinks [H]
// (f32), O [B, H, SQ, D], LSE [B, H, SQ] (f32). Query row i sits at position
// p = i + (SKV - SQ) (right-aligned causal); key j is attended iff j <= p
// and (W == 0 or j > p - W). Head h reads kv head h / (H / HK). With
// s_j = scale * dot(q_i, k_j) and the sink logit t = sinks[h]:
//   M = max(t, max_j s_j),  L = exp(t - M) + sum_j exp(s_j - M),
//   O_i = sum_j exp(s_j - M) v_j / L,  LSE_i = M + ln(L).
// A row that attends no key has O = 0 and LSE = t.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_ATTENTIONREFERENCE_H
#define SINKATTN_RUNTIME_ATTENTIONREFERENCE_H

#include "SinkAttn/Runtime/Launch.h"
#include "SinkAttn/Runtime/Status.h"

#include <cstdint>
#include <vector>

namespace sinkattn::rt {

/// One attention-sink forward problem.
struct SinkAttentionShape {
  int64_t batch = 1, heads = 1, kvHeads = 1, seqQ = 1, seqKv = 1;
  int64_t headDim = 64;
  int64_t window = 0; ///< 0: no sliding window.
  double scale = 0;   ///< Softmax scale (the kernels use 1/sqrt(headDim)).

  /// Number of query rows, B * H * SQ.
  int64_t rows() const { return batch * heads * seqQ; }
  /// Element counts of q/o, k/v and lse.
  uint64_t qElements() const { return uint64_t(rows()) * uint64_t(headDim); }
  uint64_t kvElements() const {
    return uint64_t(batch) * uint64_t(kvHeads) * uint64_t(seqKv) *
           uint64_t(headDim);
  }
};

/// Positive sizes, kvHeads dividing heads, window >= 0, a finite scale, and
/// every tensor below 2^40 elements (so that index arithmetic cannot
/// overflow). SQ > SKV is allowed here (leading rows then attend nothing).
Status validate(const SinkAttentionShape &shape);

/// The keys query row i attends: [begin, end), empty when begin >= end.
struct KeyRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end > begin ? end - begin : 0; }
};
KeyRange attendedKeys(const SinkAttentionShape &shape, int64_t i);

/// Exact number of attended (i, j) pairs of one (batch, head), in closed
/// form (no loop over rows). FLOPs of the forward pass are
/// 4 * B * H * D * attendedPairs(shape).
uint64_t attendedPairs(const SinkAttentionShape &shape);

/// Float64 reference for one query row. `row` indexes [B, H, SQ] row-major;
/// q, k, v and sinks are the inputs as float (already rounded to the
/// kernel's input type), laid out as above. Writes headDim values to `o`
/// and one to `lse`. The caller validated the shape and the sizes.
void sinkAttentionRow(const SinkAttentionShape &shape, const float *q,
                      const float *k, const float *v, const float *sinks,
                      int64_t row, double *o, double *lse);

/// The whole problem; checks the shape and the input sizes. `o` and `lse`
/// are resized to [B, H, SQ, D] and [B, H, SQ].
Status sinkAttentionForward(const SinkAttentionShape &shape,
                            const std::vector<float> &q,
                            const std::vector<float> &k,
                            const std::vector<float> &v,
                            const std::vector<float> &sinks,
                            std::vector<double> &o, std::vector<double> &lse);

/// The fp32 GPU reference kernel of `sink-fwd` (carried in the bundle as its
/// reference): entry name, and its fixed ABI and launch shape. Arguments,
/// all device pointers: q, k, v (input dtype), sinks (f32), o [B,H,SQ,D] f32,
/// lse [B,H,SQ] f32. One thread per query row, rows in [B, H, SQ] order.
inline constexpr const char *kSinkFwdReferenceEntry = "sink_fwd_reference";
inline constexpr uint32_t kSinkFwdReferenceBlockSize = 128;
/// Block (128, 1, 1) and grid (ceil(rows / 128), 1, 1); fails when the grid
/// would exceed 2^31 - 1 blocks.
Expected<LaunchConfig> sinkFwdReferenceLaunch(const SinkAttentionShape &shape,
                                              CUstream stream = nullptr);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_ATTENTIONREFERENCE_H
