//===- AttentionReference.h - Attention-sink forward references -*- C++ -*-===//
//
// What the `sink-fwd` kernel computes, stated once for the checking side:
// a float64 CPU reference (used to cross-check the GPU reference), the
// exact count of attended (query, key) pairs (for TFLOP/s), and the ABI and
// launch shape of the fp32 GPU reference kernel `sink_fwd_reference`, which
// the compiler builds (lib/Kernels/SinkFwdReference.cpp) and the runner
// launches: both sides take them from here.
//
// Semantics. Three layouts (AttentionLayout): BHSD (Q and O [B, H, SQ, D],
// K and V [B, HK, SKV, D]), BSHD (Q and O [B, SQ, H, D], K and V
// [B, SKV, HK, D]), both with LSE [B, H, SQ]; and varlen, B sequences of
// their own lengths packed along the token axis (Q and O [TQ, H, D], K and
// V [TKV, HK, D], LSE [H, TQ]; sequence b owns query tokens
// [cu_seqlens_q[b], cu_seqlens_q[b+1]) and key tokens likewise; neither
// side may be empty as a whole). Sinks are [H] (f32 or bf16 in memory).
// In sequence b with lengths SQ_b and SKV_b, query row i sits at position
// p = i + (SKV_b - SQ_b) (right-aligned causal); key j is attended iff
// 0 <= j <= p and (W == 0 or j > p - W); without the causal mask
// (`causal` false, no window) every key 0 <= j < SKV_b. Head h reads kv head
// h / (H / HK). With s_j = scale * dot(q_i, k_j) and the sink logit
// t = sinks[h]:
//   M = max(t, max_j s_j),  L = exp(t - M) + sum_j exp(s_j - M),
//   O_i = sum_j exp(s_j - M) v_j / L,  LSE_i = M + ln(L).
// A row that attends no key has O = 0 and LSE = t (also for t = -inf; a
// -inf sink has dsink = 0).
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_ATTENTIONREFERENCE_H
#define SINKATTN_RUNTIME_ATTENTIONREFERENCE_H

#include "SinkAttn/Runtime/Launch.h"
#include "SinkAttn/Runtime/Status.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sinkattn::rt {

/// How Q/O, K/V and LSE are laid out in memory (see the file comment).
enum class AttentionLayout { BHSD, BSHD, Varlen };
/// "bhsd", "bshd", "varlen".
const char *layoutName(AttentionLayout layout);
std::optional<AttentionLayout> parseLayout(std::string_view name);

/// One attention-sink forward problem.
struct SinkAttentionShape {
  /// With varlen: B sequences; seqQ and seqKv are upper bounds of their
  /// lengths (the kernel's grid covers seqQ rows per sequence).
  int64_t batch = 1, heads = 1, kvHeads = 1, seqQ = 1, seqKv = 1;
  int64_t headDim = 64;
  int64_t window = 0; ///< 0: no sliding window.
  /// Softmax scale (kernels compiled for one problem use 1/sqrt(headDim);
  /// those for run-time shapes take it).
  double scale = 0;
  /// False: every query attends every key of its sequence (no window).
  bool causal = true;
  AttentionLayout layout = AttentionLayout::BHSD;
  /// Varlen only: B + 1 token offsets each, starting at 0, non-decreasing.
  std::vector<int64_t> cuSeqlensQ, cuSeqlensKv;

  bool varlen() const { return layout == AttentionLayout::Varlen; }
  /// Query and key lengths of sequence b, and its first token.
  int64_t seqQOf(int64_t b) const {
    return varlen() ? cuSeqlensQ[size_t(b + 1)] - cuSeqlensQ[size_t(b)] : seqQ;
  }
  int64_t seqKvOf(int64_t b) const {
    return varlen() ? cuSeqlensKv[size_t(b + 1)] - cuSeqlensKv[size_t(b)]
                    : seqKv;
  }
  /// Query and key tokens over all sequences (TQ, TKV).
  int64_t tokensQ() const {
    return varlen() ? cuSeqlensQ.back() : batch * seqQ;
  }
  int64_t tokensKv() const {
    return varlen() ? cuSeqlensKv.back() : batch * seqKv;
  }
  /// Number of query rows, H * TQ: the elements of LSE, in its order.
  int64_t rows() const { return heads * tokensQ(); }
  /// Element counts of q/o, k/v and lse.
  uint64_t qElements() const { return uint64_t(rows()) * uint64_t(headDim); }
  uint64_t kvElements() const {
    return uint64_t(kvHeads) * uint64_t(tokensKv()) * uint64_t(headDim);
  }
  /// Sequence, head and position in the sequence of LSE element `row`.
  struct Row {
    int64_t batch, head, i;
  };
  Row rowAt(int64_t row) const;
  /// The LSE element of query row i of head h in sequence b: rowAt()'s
  /// inverse.
  int64_t rowIndex(int64_t b, int64_t h, int64_t i) const;
  /// Offset of the first element of query row i of (b, h) in q and o, and
  /// of key row j of (b, hk) in k and v.
  int64_t qOffset(int64_t b, int64_t h, int64_t i) const;
  int64_t kvOffset(int64_t b, int64_t hk, int64_t j) const;
  /// Dimensions of q and o, of k and v, and of lse, outermost first.
  std::vector<uint64_t> qDims() const;
  std::vector<uint64_t> kvDims() const;
  std::vector<uint64_t> lseDims() const;
  /// lseDims() over the keys: [B, H, SKV], varlen [H, tokensKv()].
  std::vector<uint64_t> keyRowDims() const;
};

/// The items of a comma-separated list ("a,,b" has an empty second item;
/// "" is one empty item), as views into `text`.
std::vector<std::string_view> splitCommaList(std::string_view text);
/// Varlen lengths as written in flags and bundle configs: "100,1000,513"
/// (each >= 0, at least one). The error names `what`.
Expected<std::vector<int64_t>> parseLengths(std::string_view text,
                                            const std::string &what);
std::string formatLengths(const std::vector<int64_t> &lengths);
/// Offsets 0, l0, l0 + l1, ... of lengths, and the lengths of offsets.
std::vector<int64_t> offsetsOf(const std::vector<int64_t> &lengths);
std::vector<int64_t> lengthsOf(const std::vector<int64_t> &offsets);

/// Positive sizes, kvHeads dividing heads, window >= 0 (0 without the
/// causal mask), a finite scale, and
/// every tensor below 2^40 elements (so that index arithmetic cannot
/// overflow); varlen offsets as described above, within seqQ and seqKv.
/// SQ > SKV is allowed here (leading rows then attend nothing).
Status validate(const SinkAttentionShape &shape);

/// The keys query row i of sequence b attends: [begin, end), empty when
/// begin >= end.
struct KeyRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end > begin ? end - begin : 0; }
};
KeyRange attendedKeys(const SinkAttentionShape &shape, int64_t b, int64_t i);

/// Exact number of attended (i, j) pairs of one head over all sequences, in
/// closed form per sequence (no loop over rows). FLOPs of the forward pass
/// are 4 * H * D * attendedPairs(shape).
uint64_t attendedPairs(const SinkAttentionShape &shape);

/// Float64 reference for one query row. `row` indexes LSE (rowAt()); q, k,
/// v and sinks are the inputs as float (already rounded to the kernel's
/// input type), laid out as the shape's layout says. Writes headDim values
/// to `o` and one to `lse`. The caller validated the shape and the sizes.
void sinkAttentionRow(const SinkAttentionShape &shape, const float *q,
                      const float *k, const float *v, const float *sinks,
                      int64_t row, double *o, double *lse);

/// The whole problem; checks the shape and the input sizes. `o` and `lse`
/// are resized to q's and LSE's sizes and laid out as q and LSE are.
Status sinkAttentionForward(const SinkAttentionShape &shape,
                            const std::vector<float> &q,
                            const std::vector<float> &k,
                            const std::vector<float> &v,
                            const std::vector<float> &sinks,
                            std::vector<double> &o, std::vector<double> &lse);

/// Gradients of the attention-sink forward for an upstream gradient dO
/// (laid out as o), in float64: dq (q's layout), dk and dv (k's layout;
/// a kv head sums over the query heads that read it), dsinks [H]. With
/// P_ij = exp(s_ij - LSE_i), P_i,sink = exp(t - LSE_i), D_i = dO_i . O_i:
///   dV_j = sum_i P_ij dO_i,  dS_ij = P_ij (dO_i . v_j - D_i),
///   dQ_i = scale sum_j dS_ij k_j,  dK_j = scale sum_i dS_ij q_i,
///   dsink_h = -sum_{b,i} P_i,sink D_i   (the sink has no value).
/// With `storedO` (the forward's output as a kernel stored it, laid out as
/// q), dS uses D_i = dO_i . storedO_i instead: what a FlashAttention-style
/// backward computes from the saved output, and what sink-bwd's dQ, dK and
/// dV are specified as. dsinks always use the exact D_i.
struct SinkAttentionGradients {
  std::vector<double> dq, dk, dv, dsinks;
};
Status sinkAttentionBackward(const SinkAttentionShape &shape,
                             const std::vector<float> &q,
                             const std::vector<float> &k,
                             const std::vector<float> &v,
                             const std::vector<float> &sinks,
                             const std::vector<float> &dO,
                             SinkAttentionGradients &gradients,
                             const std::vector<float> *storedO = nullptr);

/// The backward of single rows and keys in float64, for checks that sample
/// a large problem instead of computing all of it (sinkAttentionBackward's
/// definitions; the caller validated the shape and the buffer sizes, and
/// `storedO` may be null).
/// What the backward needs of one query row's forward.
struct SinkRowStatistics {
  double lse = 0;        ///< -inf for a row with neither keys nor a finite sink
  double delta = 0;      ///< dO_i . o_i with the stored o (dS's D_i)
  double exactDelta = 0; ///< dO_i . O_i with the exact O (dsinks' D_i)
};
SinkRowStatistics sinkAttentionRowStatistics(const SinkAttentionShape &shape,
                                             const float *q, const float *k,
                                             const float *v, const float *sinks,
                                             const float *dO,
                                             const float *storedO, int64_t row);
/// dQ of LSE row `row` (headDim values) from its statistics.
void sinkAttentionDqRow(const SinkAttentionShape &shape, const float *q,
                        const float *k, const float *v, const float *dO,
                        int64_t row, const SinkRowStatistics &statistics,
                        double *dq);
/// dK and dV of key j of kv head hk in sequence b (headDim values each):
/// sums over every query row of the heads that read hk and attend key j.
/// `statistics(row)` gives those rows' statistics by LSE row.
void sinkAttentionDkvRow(
    const SinkAttentionShape &shape, const float *q, const float *k,
    const float *v, const float *dO, int64_t b, int64_t hk, int64_t j,
    const std::function<const SinkRowStatistics &(int64_t)> &statistics,
    double *dk, double *dv);
/// One row's share of dsinks[h] for sink logit t: -exp(t - LSE) dO . O
/// (0 for a -inf sink, which takes no probability).
double sinkAttentionDsinkTerm(double t, const SinkRowStatistics &statistics);

/// sum(O . dO) of the forward in float64: the scalar whose gradients
/// sinkAttentionBackward computes without `storedO` (with it, dv and dsinks
/// still are; for finite-difference checks).
Status sinkAttentionLoss(const SinkAttentionShape &shape,
                         const std::vector<float> &q,
                         const std::vector<float> &k,
                         const std::vector<float> &v,
                         const std::vector<double> &sinks,
                         const std::vector<float> &dO, double &loss);

/// The fp32 GPU reference kernel of `sink-fwd` (carried in the bundle as its
/// reference): entry name, and its fixed ABI and launch shape. Arguments,
/// all device pointers: q, k, v (input dtype), sinks (f32 or bf16), o (f32,
/// q's layout), lse (f32), and with varlen cu_seqlens_q and cu_seqlens_kv
/// (i32). One thread per query row, rows in LSE order. A bundle compiled
/// for run-time shapes (its buffers are memref descriptors) carries a
/// reference that takes each of these flat buffers as a rank-1 memref
/// descriptor instead (addReferenceBuffer) and reads the rows and the
/// sequence count from lse's and cu_seqlens_q's sizes; the attention's
/// parameters follow as scalars: heads, kv heads, window (0: none), causal
/// (0 or 1), all i32, and the softmax scale (f32): addReferenceParameters.
inline constexpr const char *kSinkFwdReferenceEntry = "sink_fwd_reference";
/// A flat buffer of `elements` as a reference takes it: its address, or
/// with `descriptor` the rank-1 memref descriptor (address twice, offset 0,
/// the size, stride 1).
void addReferenceBuffer(KernelArgs &args, CUdeviceptr address,
                        uint64_t elements, bool descriptor);
/// The scalars that follow the buffers of a reference for run-time shapes.
void addReferenceParameters(KernelArgs &args, const SinkAttentionShape &shape);
inline constexpr uint32_t kSinkFwdReferenceBlockSize = 128;
/// Block (128, 1, 1) and grid (ceil(rows / 128), 1, 1); fails when the grid
/// would exceed 2^31 - 1 blocks.
Expected<LaunchConfig> sinkFwdReferenceLaunch(const SinkAttentionShape &shape,
                                              CUstream stream = nullptr);

/// The fp32 GPU reference of the backward: three kernels of one module,
/// launched in this order with the same arguments, all device pointers:
/// q, k, v (input dtype), sinks (f32 or bf16), do (input dtype, q's
/// layout), o (the forward's output in the input dtype, q's layout), dq
/// (f32, q's layout), dk, dv (f32, k's layout), dsinks (f32 [H]), its own
/// O (f32, q's layout: the check holds the stored o to it), then three f32
/// [rows] scratch buffers lse, delta and sink_terms, and with varlen
/// cu_seqlens_q and cu_seqlens_kv (i32). As for sink_fwd_reference, a
/// bundle compiled for run-time shapes (varlen) carries kernels that take
/// each of these buffers as a rank-1 memref descriptor (addReferenceBuffer)
/// and read the sizes from them, with the attention's parameters after the
/// offsets (addReferenceParameters).
///   rows:  one thread per query row: LSE, O, delta = dO . o (the given o,
///          as the backward's specification says), its dQ row, and its
///          sink term -exp(t - LSE) dO . O (its own fp32 O: exact);
///   keys:  one thread per key row (kv head, token): its dK and dV rows
///          over every query row of every head of the group that sees it;
///   sinks: one thread per head: dsinks[h], the sum of its rows' terms in
///          a fixed order.
/// Deterministic: every output element has one writer.
inline constexpr const char *kSinkBwdReferenceRowsEntry = "sink_bwd_reference_rows";
inline constexpr const char *kSinkBwdReferenceKeysEntry = "sink_bwd_reference_keys";
inline constexpr const char *kSinkBwdReferenceSinksEntry = "sink_bwd_reference_sinks";
struct SinkBwdReferenceLaunches {
  LaunchConfig rows, keys, sinks;
};
/// Blocks of kSinkFwdReferenceBlockSize threads over rows(), kvHeads *
/// tokensKv() and heads.
Expected<SinkBwdReferenceLaunches>
sinkBwdReferenceLaunches(const SinkAttentionShape &shape,
                         CUstream stream = nullptr);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_ATTENTIONREFERENCE_H
