//===- SinkBwdReference.cpp - fp32 GPU reference of the sink backward -----===//
//
// The independent reference a backward kernel is checked against
// (semantics and ABI in SinkAttn/Runtime/AttentionReference.h): plain SIMT
// code in gpu/scf/arith/memref, like the forward's reference, in three
// kernels of one module.
//
//   rows   one thread per query row recomputes M, L (two passes, every
//          exponent <= 0) and O, then its dQ row from
//          dS_j = P_j (dO . v_j - delta) with delta = dO . o, o the
//          forward's output as given (stored in the input dtype: the
//          backward's specification, as in every FlashAttention backward);
//          it also writes its O (the check compares the stored o with
//          it) and records LSE, delta and the row's sink term
//          -exp(t - LSE) dO . O with its own, unrounded O (dsinks are exact
//          gradients) for the kernels after it.
//   keys   one thread per key row of a kv head accumulates its dK and dV
//          rows over every query row, of every query head of its group,
//          that attends it (the rows' LSE and delta from `rows`), so GQA
//          sums without repeating K/V.
//   sinks  one thread per head sums its rows' sink terms in a fixed order.
//
// Each output element has one writer: the reference is deterministic.
// exp uses ex2.approx.f32 and ln lg2.approx.f32, as in the forward's
// reference; the CPU test runs this code against the float64 backward.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/IR/Diagnostics.h"

#include <cstdio>

using namespace mlir;
using namespace sinkattn;

namespace {

constexpr llvm::StringLiteral kSinkBwdReferenceTemplate = R"mlir(
!q = memref<@Q_ELEMENTS@x@T@>
!kv = memref<@KV_ELEMENTS@x@T@>
!sinks = memref<@H@x@ST@>
!dq = memref<@Q_ELEMENTS@xf32>
!dkv = memref<@KV_ELEMENTS@xf32>
!dsinks = memref<@H@xf32>
!rows = memref<@ROWS@xf32>
!row = memref<@D@xf32>
!offsets = memref<@SEQUENCES@xi32>
module attributes {gpu.container_module} {
  gpu.module @sink_bwd_reference {
    gpu.func @sink_bwd_reference_rows@KERNEL_ARGS@ kernel {
@CONSTANTS@
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
        %doRow = memref.alloca() : !row
        %acc = memref.alloca() : !row
        %dqRow = memref.alloca() : !row
        scf.for %d = %c0 to %dim step %c1 {
          %at = arith.addi %qBase, %d : index
          %x = memref.load %q[%at] : !q
          %xf = arith.extf %x : @T@ to f32
          memref.store %xf, %qRow[%d] : !row
          %g = memref.load %do[%at] : !q
          %gf = arith.extf %g : @T@ to f32
          memref.store %gf, %doRow[%d] : !row
          memref.store %zero, %acc[%d] : !row
          memref.store %zero, %dqRow[%d] : !row
        }
        @SINK_LOAD@

        // M = max(t, max_j s_j).
        %m = scf.for %j = %lo to %hi step %c1 iter_args(%mj = %t) -> (f32) {
          %s = func.call @score(%qRow, %k, %kBase, %kStride, %j) : (!row, !kv, index, index, index) -> f32
          %mNext = arith.maximumf %mj, %s : f32
          scf.yield %mNext : f32
        }
        // L = exp(t - M) + sum_j exp(s_j - M); acc = sum_j exp(s_j - M) v_j.
        // M is -inf only for a row with no key and a -inf sink: then L = 0.
        %ninf = arith.constant 0xFF800000 : f32
        %one = arith.constant 1.0 : f32
        %mIsInf = arith.cmpf oeq, %m, %ninf : f32
        %mSafe = arith.select %mIsInf, %zero, %m : f32
        %tm = arith.subf %t, %mSafe : f32
        %l0 = func.call @exp(%tm) : (f32) -> f32
        %l = scf.for %j = %lo to %hi step %c1 iter_args(%lj = %l0) -> (f32) {
          %s = func.call @score(%qRow, %k, %kBase, %kStride, %j) : (!row, !kv, index, index, index) -> f32
          %sm = arith.subf %s, %mSafe : f32
          %e = func.call @exp(%sm) : (f32) -> f32
          %jOffset = arith.muli %j, %kStride : index
          %vRow = arith.addi %kBase, %jOffset : index
          scf.for %d = %c0 to %dim step %c1 {
            %at = arith.addi %vRow, %d : index
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
        // LSE = M + ln L; dO . O with O = acc / L (the sink term's); delta =
        // dO . o with the given o (dS's).
        %log2l = llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"(%l) : (f32) -> f32
        %lnl = arith.mulf %log2l, %ln2 : f32
        %rowLse = arith.addf %m, %lnl : f32
        %lIsZero = arith.cmpf oeq, %l, %zero : f32
        %lSafe = arith.select %lIsZero, %one, %l : f32
        %dot = scf.for %d = %c0 to %dim step %c1 iter_args(%sum = %zero) -> (f32) {
          %a = memref.load %acc[%d] : !row
          %o = arith.divf %a, %lSafe : f32
          %oAt = arith.addi %qBase, %d : index
          memref.store %o, %refO[%oAt] : !dq
          %g = memref.load %doRow[%d] : !row
          %go = arith.mulf %g, %o : f32
          %next = arith.addf %sum, %go : f32
          scf.yield %next : f32
        }
        %given = func.call @dotAt(%doRow, %storedO, %qBase) : (!row, !q, index) -> f32
        // dQ = scale sum_j P_j (dO . v_j - delta) k_j.
        scf.for %j = %lo to %hi step %c1 {
          %s = func.call @score(%qRow, %k, %kBase, %kStride, %j) : (!row, !kv, index, index, index) -> f32
          %sl = arith.subf %s, %rowLse : f32
          %pj = func.call @exp(%sl) : (f32) -> f32
          %dp = func.call @dotRow(%doRow, %v, %kBase, %kStride, %j) : (!row, !kv, index, index, index) -> f32
          %dpd = arith.subf %dp, %given : f32
          %ds = arith.mulf %pj, %dpd : f32
          %dsScaled = arith.mulf %ds, %scale : f32
          %jOffset = arith.muli %j, %kStride : index
          %kRow = arith.addi %kBase, %jOffset : index
          scf.for %d = %c0 to %dim step %c1 {
            %at = arith.addi %kRow, %d : index
            %y = memref.load %k[%at] : !kv
            %yf = arith.extf %y : @T@ to f32
            %a = memref.load %dqRow[%d] : !row
            %term = arith.mulf %dsScaled, %yf : f32
            %aNext = arith.addf %a, %term : f32
            memref.store %aNext, %dqRow[%d] : !row
          }
        }
        scf.for %d = %c0 to %dim step %c1 {
          %a = memref.load %dqRow[%d] : !row
          %at = arith.addi %qBase, %d : index
          memref.store %a, %dq[%at] : !dq
        }
        // The row's share of dsink: -exp(t - LSE) dO . O.
        %tl = arith.subf %t, %rowLse : f32
        %pSinkRaw = func.call @exp(%tl) : (f32) -> f32
        // A -inf sink takes no probability (and exp(-inf - -inf) is NaN).
        %tIsInf = arith.cmpf oeq, %t, %ninf : f32
        %pSink = arith.select %tIsInf, %zero, %pSinkRaw : f32
        %share = arith.mulf %pSink, %dot : f32
        %term = arith.negf %share : f32
        memref.store %rowLse, %lse[%row] : !rows
        memref.store %given, %delta[%row] : !rows
        memref.store %term, %terms[%row] : !rows
      }
      gpu.return
    }

    gpu.func @sink_bwd_reference_keys@KERNEL_ARGS@ kernel {
@CONSTANTS@
      %keyRows = arith.constant @KEY_ROWS@ : index
      %keyRow = arith.addi %first, %tid : index
      %inside = arith.cmpi ult, %keyRow, %keyRows : index
      scf.if %inside {
@KEY_ROW@
        // The query rows i whose position i + SKV - SQ lies in
        // [j, j + WINDOW): those that attend key j.
        %offset = arith.subi %skv, %seqQ : index
        %iFirstRaw = arith.subi %j, %offset : index
        %iFirst = arith.maxsi %iFirstRaw, %c0 : index
        %iEndRaw = arith.addi %iFirstRaw, %window : index
        %iEnd = arith.minsi %iEndRaw, %seqQ : index
        %kRow = memref.alloca() : !row
        %vRow = memref.alloca() : !row
        %dkRow = memref.alloca() : !row
        %dvRow = memref.alloca() : !row
        scf.for %d = %c0 to %dim step %c1 {
          %at = arith.addi %kvAt, %d : index
          %x = memref.load %k[%at] : !kv
          %xf = arith.extf %x : @T@ to f32
          memref.store %xf, %kRow[%d] : !row
          %y = memref.load %v[%at] : !kv
          %yf = arith.extf %y : @T@ to f32
          memref.store %yf, %vRow[%d] : !row
          memref.store %zero, %dkRow[%d] : !row
          memref.store %zero, %dvRow[%d] : !row
        }
        %hFirst = arith.muli %hk, %group : index
        %hEnd = arith.addi %hFirst, %group : index
        scf.for %h = %hFirst to %hEnd step %c1 {
          %qh = arith.muli %h, %qHeadStride : index
          %qbh = arith.addi %qBatchBase, %qh : index
          %lh = arith.muli %h, %lseHeadStride : index
          %lbh = arith.addi %lseBatchBase, %lh : index
          scf.for %i = %iFirst to %iEnd step %c1 {
            %qi = arith.muli %i, %qPosStride : index
            %qAt = arith.addi %qbh, %qi : index
            %r = arith.addi %lbh, %i : index
            %rowLse = memref.load %lse[%r] : !rows
            %rowDelta = memref.load %delta[%r] : !rows
            %qk = func.call @dotAt(%kRow, %q, %qAt) : (!row, !q, index) -> f32
            %s = arith.mulf %qk, %scale : f32
            %sl = arith.subf %s, %rowLse : f32
            %pij = func.call @exp(%sl) : (f32) -> f32
            %dp = func.call @dotAt(%vRow, %do, %qAt) : (!row, !q, index) -> f32
            %dpd = arith.subf %dp, %rowDelta : f32
            %ds = arith.mulf %pij, %dpd : f32
            %dsScaled = arith.mulf %ds, %scale : f32
            scf.for %d = %c0 to %dim step %c1 {
              %at = arith.addi %qAt, %d : index
              %x = memref.load %q[%at] : !q
              %xf = arith.extf %x : @T@ to f32
              %g = memref.load %do[%at] : !q
              %gf = arith.extf %g : @T@ to f32
              %a = memref.load %dkRow[%d] : !row
              %ta = arith.mulf %dsScaled, %xf : f32
              %aNext = arith.addf %a, %ta : f32
              memref.store %aNext, %dkRow[%d] : !row
              %c = memref.load %dvRow[%d] : !row
              %tc = arith.mulf %pij, %gf : f32
              %cNext = arith.addf %c, %tc : f32
              memref.store %cNext, %dvRow[%d] : !row
            }
          }
        }
        scf.for %d = %c0 to %dim step %c1 {
          %at = arith.addi %kvAt, %d : index
          %a = memref.load %dkRow[%d] : !row
          memref.store %a, %dk[%at] : !dkv
          %c = memref.load %dvRow[%d] : !row
          memref.store %c, %dv[%at] : !dkv
        }
      }
      gpu.return
    }

    gpu.func @sink_bwd_reference_sinks@KERNEL_ARGS@ kernel {
@CONSTANTS@
      %h = arith.addi %first, %tid : index
      %inside = arith.cmpi ult, %h, %heads : index
      scf.if %inside {
        // Rows of head h: batch b's run of @RUN@ rows at b * @BATCH_ROWS@ +
        // h * @RUN@ (LSE's order).
        %batches = arith.constant @RUN_BATCHES@ : index
        %run = arith.constant @RUN@ : index
        %batchRows = arith.constant @BATCH_ROWS@ : index
        %headStart = arith.muli %h, %run : index
        %sum = scf.for %b = %c0 to %batches step %c1 iter_args(%total = %zero) -> (f32) {
          %bStart = arith.muli %b, %batchRows : index
          %start = arith.addi %bStart, %headStart : index
          %end = arith.addi %start, %run : index
          %part = scf.for %r = %start to %end step %c1 iter_args(%acc = %total) -> (f32) {
            %x = memref.load %terms[%r] : !rows
            %next = arith.addf %acc, %x : f32
            scf.yield %next : f32
          }
          scf.yield %part : f32
        }
        memref.store %sum, %dsinks[%h] : !dsinks
      }
      gpu.return
    }

    // scale * (q_row . k_j) for the key j of a kv head at kBase.
    func.func private @score(%qRow: !row, %k: !kv, %kBase: index, %kStride: index, %j: index) -> f32 {
      %scale = arith.constant @SCALE@ : f32
      %dot = func.call @dotRow(%qRow, %k, %kBase, %kStride, %j) : (!row, !kv, index, index, index) -> f32
      %s = arith.mulf %dot, %scale : f32
      return %s : f32
    }
    // x . y_j for the row y_j at kBase + j * kStride.
    func.func private @dotRow(%x: !row, %y: !kv, %kBase: index, %kStride: index, %j: index) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %dim = arith.constant @D@ : index
      %zero = arith.constant 0.0 : f32
      %jOffset = arith.muli %j, %kStride : index
      %base = arith.addi %kBase, %jOffset : index
      %dot = scf.for %d = %c0 to %dim step %c1 iter_args(%sum = %zero) -> (f32) {
        %a = memref.load %x[%d] : !row
        %at = arith.addi %base, %d : index
        %b = memref.load %y[%at] : !kv
        %bf = arith.extf %b : @T@ to f32
        %ab = arith.mulf %a, %bf : f32
        %next = arith.addf %sum, %ab : f32
        scf.yield %next : f32
      }
      return %dot : f32
    }
    // row . x for the row of x at `at` (a query, dO or stored O row).
    func.func private @dotAt(%row: !row, %x: !q, %at: index) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %dim = arith.constant @D@ : index
      %zero = arith.constant 0.0 : f32
      %dot = scf.for %d = %c0 to %dim step %c1 iter_args(%sum = %zero) -> (f32) {
        %a = memref.load %row[%d] : !row
        %i = arith.addi %at, %d : index
        %b = memref.load %x[%i] : !q
        %bf = arith.extf %b : @T@ to f32
        %ab = arith.mulf %a, %bf : f32
        %next = arith.addf %sum, %ab : f32
        scf.yield %next : f32
      }
      return %dot : f32
    }
    // exp(x) = ex2(x log2 e).
    func.func private @exp(%x: f32) -> f32 {
      %log2e = arith.constant 1.44269504088896341 : f32
      %y = arith.mulf %x, %log2e : f32
      %e = llvm.call_intrinsic "llvm.nvvm.ex2.approx.f32"(%y) : (f32) -> f32
      return %e : f32
    }
  }
}
)mlir";

// The arguments every kernel of the module takes (one ABI, launched in
// order with the same values).
constexpr llvm::StringLiteral kKernelArgs = R"mlir((%q: !q, %k: !kv, %v: !kv, %sinks: !sinks, %do: !q,
        %storedO: !q, %dq: !dq, %dk: !dkv, %dv: !dkv, %dsinks: !dsinks,
        %refO: !dq, %lse: !rows, %delta: !rows, %terms: !rows@SEQUENCE_ARGS@))mlir";

constexpr llvm::StringLiteral kConstants = R"mlir(
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %block = arith.constant @BLOCK@ : index
      %rows = arith.constant @ROWS@ : index
      %heads = arith.constant @H@ : index
      %group = arith.constant @GROUP@ : index
      %dim = arith.constant @D@ : index
      %window = arith.constant @WINDOW@ : index
      %scale = arith.constant @SCALE@ : f32
      %ln2 = arith.constant 0.693147180559945309 : f32
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %first = arith.muli %bid, %block : index)mlir";

/// The @KEY_ROW@ part: from %keyRow (kv head major, then token) it defines
/// %b, %hk, %j (the key in its sequence), %seqQ, %skv, %kvAt (the key row's
/// offset in k/v), and how to address query rows of (b, h, i): q/dO at
/// %qBatchBase + h * %qHeadStride + i * %qPosStride, LSE's order at
/// %lseBatchBase + h * %lseHeadStride + i.
std::string keyRowText(const rt::SinkAttentionShape &s) {
  auto str = [](int64_t v) { return std::to_string(v); };
  const int64_t d = s.headDim;
  if (!s.varlen()) {
    // Element strides of (batch, head, position) in q and in k/v.
    int64_t qBatch = s.qOffset(1, 0, 0), qHead = s.qOffset(0, 1, 0),
            qPos = s.qOffset(0, 0, 1);
    int64_t kvBatch = s.kvOffset(1, 0, 0), kvHead = s.kvOffset(0, 1, 0),
            kvPos = s.kvOffset(0, 0, 1);
    return R"mlir(
        %seqQ = arith.constant )mlir" + str(s.seqQ) + R"mlir( : index
        %skv = arith.constant )mlir" + str(s.seqKv) + R"mlir( : index
        %kvHeads = arith.constant )mlir" + str(s.kvHeads) + R"mlir( : index
        %j = arith.remui %keyRow, %skv : index
        %bhk = arith.divui %keyRow, %skv : index
        %hk = arith.remui %bhk, %kvHeads : index
        %b = arith.divui %bhk, %kvHeads : index
        %kvBatch = arith.constant )mlir" + str(kvBatch) + R"mlir( : index
        %kvHead = arith.constant )mlir" + str(kvHead) + R"mlir( : index
        %kvPos = arith.constant )mlir" + str(kvPos) + R"mlir( : index
        %kb = arith.muli %b, %kvBatch : index
        %kh = arith.muli %hk, %kvHead : index
        %kj = arith.muli %j, %kvPos : index
        %kbh = arith.addi %kb, %kh : index
        %kvAt = arith.addi %kbh, %kj : index
        %qBatch = arith.constant )mlir" + str(qBatch) + R"mlir( : index
        %qHeadStride = arith.constant )mlir" + str(qHead) + R"mlir( : index
        %qPosStride = arith.constant )mlir" + str(qPos) + R"mlir( : index
        %qBatchBase = arith.muli %b, %qBatch : index
        %lseBatch = arith.constant )mlir" + str(s.heads * s.seqQ) + R"mlir( : index
        %lseBatchBase = arith.muli %b, %lseBatch : index
        %lseHeadStride = arith.constant )mlir" + str(s.seqQ) + R"mlir( : index)mlir";
  }
  // Varlen: the sequence of key token t is the number of offsets
  // cu_seqlens_kv[1..B] at or below t.
  return R"mlir(
        %tokens = arith.constant )mlir" + str(s.tokensKv()) + R"mlir( : index
        %token = arith.remui %keyRow, %tokens : index
        %hk = arith.divui %keyRow, %tokens : index)mlir" +
         kernels::referenceSequenceText("%cuK", s.batch) + R"mlir(
        %j = arith.subi %token, %kStart : index
        %cD = arith.constant )mlir" + str(d) + R"mlir( : index
        %kvPos = arith.constant )mlir" + str(s.kvHeads * d) + R"mlir( : index
        %kt = arith.muli %token, %kvPos : index
        %kh = arith.muli %hk, %cD : index
        %kvAt = arith.addi %kt, %kh : index
        %qHeadStride = arith.constant )mlir" + str(d) + R"mlir( : index
        %qPosStride = arith.constant )mlir" + str(s.heads * d) + R"mlir( : index
        %qBatchBase = arith.muli %qStart, %qPosStride : index
        %lseBatchBase = arith.addi %qStart, %c0 : index
        %lseHeadStride = arith.constant )mlir" + str(s.tokensQ()) + R"mlir( : index)mlir";
}

std::string f32Text(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9e", double(float(value)));
  return text;
}

} // namespace

FailureOr<OwningOpRef<ModuleOp>>
kernels::buildSinkBwdReference(MLIRContext &context,
                               const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "sink-bwd reference: ";
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or fp16";
  rt::SinkAttentionShape shape = sinkAttentionShape(config);
  if (rt::Status valid = rt::validate(shape); !valid.ok())
    return fail() << valid.message();
  if (shape.headDim > 256)
    return fail() << "head_dim " << shape.headDim
                  << " is not supported (at most 256)";
  if (!rt::sinkBwdReferenceLaunches(shape).ok())
    return fail() << "the problem needs more than 2^31-1 blocks of "
                  << rt::kSinkFwdReferenceBlockSize << " threads";

  auto str = [](int64_t v) { return std::to_string(v); };
  // Substituted in two rounds: the shared pieces first (they hold
  // placeholders of their own).
  std::string text = kSinkBwdReferenceTemplate.str();
  for (auto [key, value] :
       {std::pair<std::string, std::string>{"@CONSTANTS@", kConstants.str()},
        {"@KERNEL_ARGS@", kKernelArgs.str()},
        {"@ROW@", referenceRowText(shape)},
        {"@KEY_ROW@", keyRowText(shape)}})
    replaceAll(text, key, value);
  // dsinks: rows of head h come in runs of SQ per batch ([B, H, SQ]), or
  // one run of TQ (varlen's [H, TQ]).
  int64_t run = shape.varlen() ? shape.tokensQ() : shape.seqQ;
  int64_t runBatches = shape.varlen() ? 1 : shape.batch;
  int64_t batchRows = shape.varlen() ? 0 : shape.heads * shape.seqQ;
  OwningOpRef<ModuleOp> module = parseKernelTemplate(
      context, "sink-bwd reference", text,
      {{"T", mlirTypeName(config.dtype)},
       {"ST", mlirTypeName(config.sinkDtype)},
       {"SINK_LOAD", sinkLoad("%t", "%sinks", "%h", shape.heads, config.sinkDtype)},
       {"H", str(shape.heads)},
       {"D", str(shape.headDim)},
       {"GROUP", str(shape.heads / shape.kvHeads)},
       {"ROWS", str(shape.rows())},
       {"KEY_ROWS", str(shape.kvHeads * shape.tokensKv())},
       {"Q_ELEMENTS", str(shape.qElements())},
       {"KV_ELEMENTS", str(shape.kvElements())},
       {"BLOCK", str(rt::kSinkFwdReferenceBlockSize)},
       {"WINDOW", str(shape.window > 0 ? shape.window : shape.seqKv)},
       {"SCALE", f32Text(shape.scale)},
       {"SEQUENCES", str(shape.batch + 1)},
       {"SEQUENCE_ARGS",
        shape.varlen() ? ", %cuQ: !offsets, %cuK: !offsets" : ""},
       {"RUN", str(run)},
       {"RUN_BATCHES", str(runBatches)},
       {"BATCH_ROWS", str(batchRows)}});
  if (!module)
    return failure();
  return module;
}
