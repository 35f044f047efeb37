//===- ReferenceBuilding.h - Builders of the reference kernels -*- C++ -*-===//
//
// The pieces the fp32 SIMT reference kernels (SinkFwdReference.cpp,
// SinkBwdReference.cpp) are built from: plain gpu/scf/arith/memref code, one
// thread per row, each helper emitting its ops in the order it names them.
// Constants, loops and branches come from IRBuilding.h, as for every kernel.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_REFERENCEBUILDING_H
#define SINKATTN_LIB_KERNELS_REFERENCEBUILDING_H

#include "IRBuilding.h"

#include "SinkAttn/Kernels/Kernels.h"
#include "SinkAttn/Pipelines/Pipelines.h"
#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/DType.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace sinkattn::kernels::reference {

using mlir::ImplicitLocOpBuilder;
using mlir::Value;
using mlir::ValueRange;

/// A flat memref<elements x type>: the reference kernels take every buffer
/// flat so that one body serves every layout.
mlir::MemRefType flatBuffer(int64_t elements, mlir::Type type);

/// scf.for folding one value: `body` maps (iv, carried) to the next one.
Value fold(ImplicitLocOpBuilder &b, Value lo, Value hi, Value step, Value init,
           llvm::function_ref<Value(Value iv, Value carried)> body);

/// memref.load and memref.store of one element, without the optional
/// attributes' default values (as the ops are written in MLIR).
Value load(ImplicitLocOpBuilder &b, Value buffer, Value at);
void store(ImplicitLocOpBuilder &b, Value value, Value buffer, Value at);
/// `buffer[at]` extended to f32.
Value loadF32(ImplicitLocOpBuilder &b, Value buffer, Value at);
/// The f32 sink logit `sinks[head]` of sinks stored as f32 or bf16.
Value loadSinkLogit(ImplicitLocOpBuilder &b, Value sinks, Value head);
/// 2^x and log2(x) with the PTX approximations ex2.approx.f32 and
/// lg2.approx.f32 (math.exp and math.log would need libdevice).
Value exp2Approx(ImplicitLocOpBuilder &b, Value x);
Value log2Approx(ImplicitLocOpBuilder &b, Value x);

/// What a loop over the D elements of a row needs, defined in the function
/// that loops: 0, 1 and D as indices and 0.0 as f32.
struct HeadDimLoop {
  Value c0, c1, dim, zero;
};
/// The loop over d in [0, D).
void forEachElement(ImplicitLocOpBuilder &b, const HeadDimLoop &loop,
                    llvm::function_ref<void(Value d)> body);
/// sum_d row[d] * buffer[base + d] in f32, `row` an f32 memref<D>, `buffer`
/// a flat buffer of the input dtype.
Value dotWithBuffer(ImplicitLocOpBuilder &b, const HeadDimLoop &loop, Value row,
                    Value buffer, Value base);

/// The constants and thread index every reference kernel starts with:
/// `first` is the block's first thread index (block id x block size).
/// log2e only where `withLog2e` (the forward inlines its exponentials).
struct KernelConstants {
  Value c0, c1, block, rows, heads, group, dim, window, scale, log2e, ln2, zero,
      tid, bid, first;
  /// Varlen with run-time shapes: the query tokens and the count of
  /// cu_seqlens offsets (B + 1), read from the buffers' sizes, the kv
  /// heads (an argument) and whether the rows mask causally (i1); null
  /// when they are the shape's constants.
  Value tokensQ, offsetCount, kvHeads, causal;
  HeadDimLoop headDimLoop() const { return {c0, c1, dim, zero}; }
};
/// What a reference compiled for run-time shapes reads at run time: the
/// rows and, for varlen, the offsets (the sizes of its LSE and cu_seqlens_q
/// buffers), and its arguments heads, kvHeads (index), window (index, 0:
/// none), causal (i1) and scale (f32).
struct RunTimeSizes {
  Value rows, offsetCount, heads, kvHeads, window, causal, scale;
};
KernelConstants kernelConstants(ImplicitLocOpBuilder &b,
                                const rt::SinkAttentionShape &shape,
                                bool withLog2e,
                                std::optional<RunTimeSizes> runTime = {});

/// A varlen sequence's token ranges from cu_seqlens_q (`cuQ`) and
/// cu_seqlens_kv (`cuK`): its first tokens, ends and lengths.
struct SequenceBounds {
  Value bNext, qStart, qEnd, kStart, kEnd, seqQ, skv;
};
SequenceBounds sequenceBounds(ImplicitLocOpBuilder &b, Value cuQ, Value cuK,
                              Value sequence, Value c1);
/// The sequence that owns `token` of the side whose offsets are
/// `scanOffsets` (`offsetCount` of them, B + 1): the number of offsets
/// [1..B] at or below it.
Value sequenceOfToken(ImplicitLocOpBuilder &b, Value scanOffsets, Value token,
                      Value offsetCount, Value c0, Value c1);

/// A query row of LSE's order: its sequence, head, kv head and position, the
/// sequence's lengths, the row's offset in q/o/dO (qBase), key 0 of its kv
/// head in k/v (kBase) and the distance between keys (kStride), all in
/// elements of the flat buffers.
struct QueryRow {
  Value b, h, hk, i, seqQ, skv, qBase, kBase, kStride;
};
/// `cuQ`/`cuK` are the varlen offsets (null without varlen).
QueryRow queryRow(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
                  const KernelConstants &k, Value row, Value cuQ, Value cuK);

/// The keys [lo, hi) a query row attends: its position p = i + SKV - SQ,
/// hi = p + 1 and lo = max(0, hi - window).
struct AttendedKeys {
  Value lo, hi;
};
AttendedKeys attendedKeys(ImplicitLocOpBuilder &b, const KernelConstants &k,
                          const QueryRow &row);

/// The PTX of a reference module (`module`, built for `config`; `kernel`
/// names it in errors): the launch passes one device pointer per buffer,
/// or with run-time shapes one memref descriptor (the ABI in
/// AttentionReference.h), whatever `target` says.
mlir::FailureOr<std::string>
compileReferencePTX(mlir::MLIRContext &context,
                    mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>> module,
                    const KernelConfig &config, PTXTargetOptions target,
                    llvm::StringRef kernel);

} // namespace sinkattn::kernels::reference

#endif // SINKATTN_LIB_KERNELS_REFERENCEBUILDING_H
