//===- SinkFwdReference.cpp - fp32 GPU reference of sink-fwd --------------===//
//
// The independent reference the runner checks the `sink-fwd` kernel
// against (semantics in SinkAttn/Runtime/AttentionReference.h): plain SIMT
// code, one thread per query row, written in gpu/scf/arith/memref only so
// that it shares nothing with the tile path it checks. Each thread
//
//   1. copies its q row to a private f32 array,
//   2. finds M = max(t, max_j s_j) over the attended keys (pass 1),
//   3. recomputes each s_j and accumulates L and sum_j exp(s_j - M) v_j in
//      f32 (pass 2; every exponent is <= 0, so nothing overflows),
//   4. writes O = acc / L and LSE = M + ln(L).
//
// Recomputing the dot products costs a second pass over K but avoids the
// rescaling of an online softmax: the reference should be obviously right
// rather than fast. exp and ln use the PTX approximations ex2.approx.f32 and
// lg2.approx.f32 (full range, not flush-to-zero; in LLVM 22 the intrinsics
// are llvm.nvvm.ex2.approx.f32, overloaded on the type, and
// llvm.nvvm.lg2.approx.f): math.exp and math.log lower to libdevice calls,
// and we link no libdevice. They are accurate to about 2 ulp, far inside the
// check's tolerance; the runner measures this against a float64 CPU
// reference.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace sinkattn;

namespace {

// Row r indexes LSE; @ROW@ finds its sequence b, head h and position i,
// the sequence's lengths %seqQ and %skv, the offset %qBase of the row in q
// and o, the offset %kBase of key 0 of its kv head in k and v, and the
// distance %kStride between consecutive keys (all in elements; the buffers
// are passed flat so that one body serves every layout). Keys j attended by
// row i at position p = i + SKV_b - SQ_b are [lo, p + 1) with
// lo = max(0, p + 1 - WINDOW); without a window WINDOW is the longest SKV,
// which makes lo 0 for every row. p < 0 attends nothing.
constexpr llvm::StringLiteral kSinkFwdReferenceTemplate = R"mlir(
!q = memref<@Q_ELEMENTS@x@T@>
!kv = memref<@KV_ELEMENTS@x@T@>
!sinks = memref<@H@x@ST@>
!o = memref<@Q_ELEMENTS@xf32>
!lse = memref<@ROWS@xf32>
!row = memref<@D@xf32>
!offsets = memref<@SEQUENCES@xi32>
module attributes {gpu.container_module} {
  gpu.module @@ENTRY@ {
    gpu.func @@ENTRY@(%q: !q, %k: !kv, %v: !kv, %sinks: !sinks, %o: !o, %lse: !lse@SEQUENCE_ARGS@) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %block = arith.constant @BLOCK@ : index
      %rows = arith.constant @ROWS@ : index
      %heads = arith.constant @H@ : index
      %group = arith.constant @GROUP@ : index
      %dim = arith.constant @D@ : index
      %window = arith.constant @WINDOW@ : index
      %scale = arith.constant @SCALE@ : f32
      %log2e = arith.constant 1.44269504088896341 : f32
      %ln2 = arith.constant 0.693147180559945309 : f32
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %first = arith.muli %bid, %block : index
      %row = arith.addi %first, %tid : index
      %inside = arith.cmpi ult, %row, %rows : index
      scf.if %inside {
@ROW@
        %offset = arith.subi %skv, %seqQ : index
        %p = arith.addi %i, %offset : index
        %hi = arith.addi %p, %c1 : index
        %loRaw = arith.subi %hi, %window : index
        %lo = arith.maxsi %loRaw, %c0 : index

        %qRow = memref.alloca() : !row
        %acc = memref.alloca() : !row
        scf.for %d = %c0 to %dim step %c1 {
          %at = arith.addi %qBase, %d : index
          %x = memref.load %q[%at] : !q
          %xf = arith.extf %x : @T@ to f32
          memref.store %xf, %qRow[%d] : !row
          memref.store %zero, %acc[%d] : !row
        }
        @SINK_LOAD@

        // Pass 1: M = max(t, max_j s_j).
        %m = scf.for %j = %lo to %hi step %c1 iter_args(%mj = %t) -> (f32) {
          %jOffset = arith.muli %j, %kStride : index
          %kRow = arith.addi %kBase, %jOffset : index
          %dot = scf.for %d = %c0 to %dim step %c1 iter_args(%sum = %zero) -> (f32) {
            %x = memref.load %qRow[%d] : !row
            %at = arith.addi %kRow, %d : index
            %y = memref.load %k[%at] : !kv
            %yf = arith.extf %y : @T@ to f32
            %xy = arith.mulf %x, %yf : f32
            %next = arith.addf %sum, %xy : f32
            scf.yield %next : f32
          }
          %s = arith.mulf %dot, %scale : f32
          %mNext = arith.maximumf %mj, %s : f32
          scf.yield %mNext : f32
        }

        // Pass 2: L = exp(t - M) + sum_j exp(s_j - M), acc = sum_j exp(s_j - M) v_j.
        // M is -inf only for a row with no key and a -inf sink: then L = 0.
        %ninf = arith.constant 0xFF800000 : f32
        %mIsInf = arith.cmpf oeq, %m, %ninf : f32
        %mSafe = arith.select %mIsInf, %zero, %m : f32
        %tm = arith.subf %t, %mSafe : f32
        %tm2 = arith.mulf %tm, %log2e : f32
        %l0 = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%tm2) : (f32) -> f32
        %l = scf.for %j = %lo to %hi step %c1 iter_args(%lj = %l0) -> (f32) {
          %jOffset = arith.muli %j, %kStride : index
          %kRow = arith.addi %kBase, %jOffset : index
          %dot = scf.for %d = %c0 to %dim step %c1 iter_args(%sum = %zero) -> (f32) {
            %x = memref.load %qRow[%d] : !row
            %at = arith.addi %kRow, %d : index
            %y = memref.load %k[%at] : !kv
            %yf = arith.extf %y : @T@ to f32
            %xy = arith.mulf %x, %yf : f32
            %next = arith.addf %sum, %xy : f32
            scf.yield %next : f32
          }
          %s = arith.mulf %dot, %scale : f32
          %sm = arith.subf %s, %mSafe : f32
          %sm2 = arith.mulf %sm, %log2e : f32
          %e = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%sm2) : (f32) -> f32
          scf.for %d = %c0 to %dim step %c1 {
            %at = arith.addi %kRow, %d : index
            %y = memref.load %v[%at] : !kv
            %yf = arith.extf %y : @T@ to f32
            %a = memref.load %acc[%d] : !row
            %ey = arith.mulf %e, %yf : f32
            %aNext = arith.addf %a, %ey : f32
            memref.store %aNext, %acc[%d] : !row
          }
          %lNext = arith.addf %lj, %e : f32
          scf.yield %lNext : f32
        }

        // O = acc / L (L >= 1: its largest term is exp(0), unless L = 0 and
        // O = 0); LSE = M + ln(L).
        %one = arith.constant 1.0 : f32
        %lIsZero = arith.cmpf oeq, %l, %zero : f32
        %lSafe = arith.select %lIsZero, %one, %l : f32
        scf.for %d = %c0 to %dim step %c1 {
          %a = memref.load %acc[%d] : !row
          %out = arith.divf %a, %lSafe : f32
          %at = arith.addi %qBase, %d : index
          memref.store %out, %o[%at] : !o
        }
        %log2l = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%l) : (f32) -> f32
        %lnl = arith.mulf %log2l, %ln2 : f32
        %result = arith.addf %m, %lnl : f32
        memref.store %result, %lse[%row] : !lse
      }
      gpu.return
    }
  }
}
)mlir";

/// An f32 constant as MLIR text that parses back to exactly `value`.
std::string f32Literal(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9e", double(float(value)));
  return text;
}

} // namespace

std::string kernels::sequenceBoundsText(const std::string &offsetsType) {
  const std::string &t = offsetsType;
  return R"mlir(
      %bNext = arith.addi %b, %c1 : index
      %qStart32 = memref.load %cuQ[%b] : )mlir" + t + R"mlir(
      %qEnd32 = memref.load %cuQ[%bNext] : )mlir" + t + R"mlir(
      %kStart32 = memref.load %cuK[%b] : )mlir" + t + R"mlir(
      %kEnd32 = memref.load %cuK[%bNext] : )mlir" + t + R"mlir(
      %qStart = arith.index_castui %qStart32 : i32 to index
      %qEnd = arith.index_castui %qEnd32 : i32 to index
      %kStart = arith.index_castui %kStart32 : i32 to index
      %kEnd = arith.index_castui %kEnd32 : i32 to index
      %seqQ = arith.subi %qEnd, %qStart : index
      %skv = arith.subi %kEnd, %kStart : index)mlir";
}

std::string kernels::referenceSequenceText(const std::string &scanOffsets,
                                           int64_t batch) {
  return R"mlir(
        %sequences = arith.constant )mlir" + std::to_string(batch + 1) + R"mlir( : index
        %b = scf.for %n = %c1 to %sequences step %c1 iter_args(%count = %c0) -> (index) {
          %end32 = memref.load )mlir" + scanOffsets + R"mlir([%n] : !offsets
          %end = arith.index_castui %end32 : i32 to index
          %before = arith.cmpi ule, %end, %token : index
          %more = arith.addi %count, %c1 : index
          %next = arith.select %before, %more, %count : index
          scf.yield %next : index
        })mlir" + sequenceBoundsText("!offsets");
}

std::string kernels::referenceRowText(const rt::SinkAttentionShape &s) {
  auto str = [](int64_t v) { return std::to_string(v); };
  const int64_t d = s.headDim;
  std::string text;
  if (!s.varlen()) {
    // Element strides of (batch, head, position) in q and in k/v.
    int64_t qBatch = s.qOffset(1, 0, 0), qHead = s.qOffset(0, 1, 0),
            qPos = s.qOffset(0, 0, 1);
    int64_t kvBatch = s.kvOffset(1, 0, 0), kvHead = s.kvOffset(0, 1, 0),
            kvPos = s.kvOffset(0, 0, 1);
    text = R"mlir(
        %seqQ = arith.constant )mlir" + str(s.seqQ) + R"mlir( : index
        %skv = arith.constant )mlir" + str(s.seqKv) + R"mlir( : index
        %i = arith.remui %row, %seqQ : index
        %bh = arith.divui %row, %seqQ : index
        %h = arith.remui %bh, %heads : index
        %b = arith.divui %bh, %heads : index
        %hk = arith.divui %h, %group : index
        %qBatch = arith.constant )mlir" + str(qBatch) + R"mlir( : index
        %qHead = arith.constant )mlir" + str(qHead) + R"mlir( : index
        %qPos = arith.constant )mlir" + str(qPos) + R"mlir( : index
        %kvBatch = arith.constant )mlir" + str(kvBatch) + R"mlir( : index
        %kvHead = arith.constant )mlir" + str(kvHead) + R"mlir( : index
        %kStride = arith.constant )mlir" + str(kvPos) + R"mlir( : index
        %qb = arith.muli %b, %qBatch : index
        %qh = arith.muli %h, %qHead : index
        %qi = arith.muli %i, %qPos : index
        %qbh = arith.addi %qb, %qh : index
        %qBase = arith.addi %qbh, %qi : index
        %kb = arith.muli %b, %kvBatch : index
        %kh = arith.muli %hk, %kvHead : index
        %kBase = arith.addi %kb, %kh : index)mlir";
    return text;
  }
  // Varlen: LSE is [H, TQ]; the sequence of token t is the number of
  // offsets cu_seqlens_q[1..B] at or below t.
  return R"mlir(
        %tokens = arith.constant )mlir" + str(s.tokensQ()) + R"mlir( : index
        %token = arith.remui %row, %tokens : index
        %h = arith.divui %row, %tokens : index
        %hk = arith.divui %h, %group : index)mlir" +
         referenceSequenceText("%cuQ", s.batch) + R"mlir(
        %i = arith.subi %token, %qStart : index
        %cD = arith.constant )mlir" + str(d) + R"mlir( : index
        %qPos = arith.constant )mlir" + str(s.heads * d) + R"mlir( : index
        %kStride = arith.constant )mlir" + str(s.kvHeads * d) + R"mlir( : index
        %qt = arith.muli %token, %qPos : index
        %qh = arith.muli %h, %cD : index
        %qBase = arith.addi %qt, %qh : index
        %kt = arith.muli %kStart, %kStride : index
        %kh = arith.muli %hk, %cD : index
        %kBase = arith.addi %kt, %kh : index)mlir";
}

FailureOr<OwningOpRef<ModuleOp>>
kernels::buildSinkFwdReference(MLIRContext &context,
                               const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "sink-fwd reference: ";
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or fp16";
  rt::SinkAttentionShape shape = sinkAttentionShape(config);
  if (rt::Status valid = rt::validate(shape); !valid.ok())
    return fail() << valid.message();
  // The per-thread rows live in local memory; keep them small.
  if (shape.headDim > 256)
    return fail() << "head_dim " << shape.headDim
                  << " is not supported (at most 256)";
  if (!rt::sinkFwdReferenceLaunch(shape).ok())
    return fail() << "the problem needs more than 2^31-1 blocks of "
                  << rt::kSinkFwdReferenceBlockSize << " rows";

  OwningOpRef<ModuleOp> module = parseKernelTemplate(
      context, "sink-fwd reference", kSinkFwdReferenceTemplate,
      {{"ENTRY", rt::kSinkFwdReferenceEntry},
       {"T", mlirTypeName(config.dtype)},
       {"ST", mlirTypeName(config.sinkDtype)},
       {"SINK_LOAD", sinkLoad("%t", "%sinks", "%h", shape.heads, config.sinkDtype)},
       {"H", std::to_string(shape.heads)},
       {"D", std::to_string(shape.headDim)},
       {"GROUP", std::to_string(shape.heads / shape.kvHeads)},
       {"ROWS", std::to_string(shape.rows())},
       {"Q_ELEMENTS", std::to_string(shape.qElements())},
       {"KV_ELEMENTS", std::to_string(shape.kvElements())},
       {"BLOCK", std::to_string(rt::kSinkFwdReferenceBlockSize)},
       {"WINDOW", std::to_string(shape.window > 0 ? shape.window : shape.seqKv)},
       {"SCALE", f32Literal(shape.scale)},
       {"SEQUENCE_ARGS", shape.varlen() ? ", %cuQ: !offsets, %cuK: !offsets" : ""},
       {"SEQUENCES", std::to_string(shape.batch + 1)},
       {"ROW", referenceRowText(shape)}});
  if (!module)
    return failure();
  return module;
}

FailureOr<std::string>
kernels::compileSinkFwdReferencePTX(MLIRContext &context,
                                    const KernelConfig &config,
                                    PTXTargetOptions target) {
  FailureOr<OwningOpRef<ModuleOp>> module =
      buildSinkFwdReference(context, config);
  if (failed(module))
    return failure();
  // The launch passes one device pointer per buffer (the ABI in
  // AttentionReference.h), whatever the caller's target says.
  target.barePointers = true;
  FailureOr<std::map<std::string, std::string>> ptx =
      compileToPTX(**module, target);
  if (failed(ptx))
    return failure();
  if (ptx->size() != 1)
    return emitError(UnknownLoc::get(&context))
           << "internal error: the sink-fwd reference produced " << ptx->size()
           << " PTX modules, expected 1";
  return ptx->begin()->second;
}
