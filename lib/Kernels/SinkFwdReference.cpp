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
#include "ReferenceBuilding.h"

#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <limits>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;
using namespace sinkattn::kernels::reference;

namespace {

/// scale * (qRow . k_j) for the key at kRow (pass 1 and pass 2 recompute it).
Value score(ImplicitLocOpBuilder &b, const KernelConstants &k, Value qRow,
            Value keys, Value kRow) {
  Value dot = dotWithBuffer(b, k.headDimLoop(), qRow, keys, kRow);
  return arith::MulFOp::create(b, dot, k.scale);
}

/// The row of key j: kBase + j * kStride.
Value keyRowAt(ImplicitLocOpBuilder &b, const QueryRow &row, Value j) {
  Value jOffset = arith::MulIOp::create(b, j, row.kStride);
  return arith::AddIOp::create(b, row.kBase, jOffset);
}

/// exp(x) as ex2(x log2 e).
Value exp(ImplicitLocOpBuilder &b, const KernelConstants &k, Value x) {
  Value scaled = arith::MulFOp::create(b, x, k.log2e);
  return exp2Approx(b, scaled);
}

/// One thread's query row (the file comment's steps 1-4). Keys j attended by
/// row i at position p = i + SKV_b - SQ_b are [lo, p + 1) with
/// lo = max(0, p + 1 - WINDOW); p < 0 attends nothing.
void buildRow(ImplicitLocOpBuilder &b, const rt::SinkAttentionShape &shape,
              const KernelConstants &k, Value rowIndex, ValueRange args) {
  Value q = args[0], keys = args[1], values = args[2], sinks = args[3],
        o = args[4], lse = args[5];
  Value cuQ = shape.varlen() ? args[6] : Value();
  Value cuK = shape.varlen() ? args[7] : Value();
  QueryRow row = queryRow(b, shape, k, rowIndex, cuQ, cuK);
  AttendedKeys attended = attendedKeys(b, k, row);

  auto rowType = MemRefType::get({shape.headDim}, b.getF32Type());
  Value qRow = memref::AllocaOp::create(b, rowType);
  Value acc = memref::AllocaOp::create(b, rowType);
  forEachElement(b, k.headDimLoop(), [&](Value d) {
    Value x = loadF32(b, q, arith::AddIOp::create(b, row.qBase, d));
    store(b, x, qRow, d);
    store(b, k.zero, acc, d);
  });
  Value t = loadSinkLogit(b, sinks, row.h);

  // Pass 1: M = max(t, max_j s_j).
  Value m = fold(b, attended.lo, attended.hi, k.c1, t,
                 [&](Value j, Value mj) -> Value {
                   Value s = score(b, k, qRow, keys, keyRowAt(b, row, j));
                   return arith::MaximumFOp::create(b, mj, s);
                 });

  // Pass 2: L = exp(t - M) + sum_j exp(s_j - M), acc = sum_j exp(s_j - M)
  // v_j. M is -inf only for a row with no key and a -inf sink: then L = 0.
  Value ninf = constantF32(b, -std::numeric_limits<float>::infinity());
  Value mIsInf = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, ninf);
  Value mSafe = arith::SelectOp::create(b, mIsInf, k.zero, m);
  Value l0 = exp(b, k, arith::SubFOp::create(b, t, mSafe));
  Value l = fold(
      b, attended.lo, attended.hi, k.c1, l0, [&](Value j, Value lj) -> Value {
        Value kRow = keyRowAt(b, row, j);
        Value s = score(b, k, qRow, keys, kRow);
        Value e = exp(b, k, arith::SubFOp::create(b, s, mSafe));
        forEachElement(b, k.headDimLoop(), [&](Value d) {
          Value y = loadF32(b, values, arith::AddIOp::create(b, kRow, d));
          Value a = load(b, acc, d);
          Value ey = arith::MulFOp::create(b, e, y);
          Value aNext = arith::AddFOp::create(b, a, ey);
          store(b, aNext, acc, d);
        });
        return arith::AddFOp::create(b, lj, e);
      });

  // O = acc / L (L >= 1: its largest term is exp(0), unless L = 0 and
  // O = 0); LSE = M + ln(L).
  Value one = constantF32(b, 1.0f);
  Value lIsZero =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, k.zero);
  Value lSafe = arith::SelectOp::create(b, lIsZero, one, l);
  forEachElement(b, k.headDimLoop(), [&](Value d) {
    Value a = load(b, acc, d);
    Value out = arith::DivFOp::create(b, a, lSafe);
    Value at = arith::AddIOp::create(b, row.qBase, d);
    store(b, out, o, at);
  });
  Value log2l = log2Approx(b, l);
  Value lnl = arith::MulFOp::create(b, log2l, k.ln2);
  Value result = arith::AddFOp::create(b, m, lnl);
  store(b, result, lse, rowIndex);
}

} // namespace

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

  context.loadDialect<arith::ArithDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                      memref::MemRefDialect, scf::SCFDialect>();
  ImplicitLocOpBuilder b(
      NameLoc::get(StringAttr::get(&context, "sink-fwd reference")), &context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getLoc());
  (*module)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                     b.getUnitAttr());
  b.setInsertionPointToEnd(module->getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, rt::kSinkFwdReferenceEntry);
  b.setInsertionPointToStart(gpuModule.getBody());

  // The ABI of AttentionReference.h: q, k, v, sinks, o, lse (and the varlen
  // offsets), every buffer flat; with run-time shapes every size is the
  // buffer's and the attention's parameters follow as scalars.
  Type t = getElementType(&context, config.dtype);
  Type f32 = b.getF32Type();
  auto sized = [&](int64_t elements) {
    return config.runTimeShapes ? ShapedType::kDynamic : elements;
  };
  SmallVector<Type> args = {
      flatBuffer(sized(shape.qElements()), t),
      flatBuffer(sized(shape.kvElements()), t),
      flatBuffer(sized(shape.kvElements()), t),
      flatBuffer(sized(shape.heads),
                 getElementType(&context, config.sinkDtype)),
      flatBuffer(sized(shape.qElements()), f32),
      flatBuffer(sized(shape.rows()), f32)};
  if (shape.varlen())
    args.append(2, flatBuffer(sized(shape.batch + 1), b.getI32Type()));
  // heads, kv_heads, window, causal, scale.
  if (config.runTimeShapes)
    args.append(
        {b.getI32Type(), b.getI32Type(), b.getI32Type(), b.getI32Type(), f32});
  auto func = gpu::GPUFuncOp::create(b, rt::kSinkFwdReferenceEntry,
                                     b.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  b.setInsertionPointToStart(&func.getBody().front());

  std::optional<RunTimeSizes> runTime;
  if (config.runTimeShapes && !shape.varlen())
    return fail() << "run-time shapes need --layout varlen";
  if (config.runTimeShapes) {
    Value c0 = constantIndex(b, 0);
    auto index = [&](unsigned arg) -> Value {
      return arith::IndexCastUIOp::create(b, b.getIndexType(),
                                          func.getArgument(arg));
    };
    Value zero32 = arith::ConstantIntOp::create(b, b.getI32Type(), 0);
    Value causal = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                         func.getArgument(11), zero32);
    runTime = RunTimeSizes{memref::DimOp::create(b, func.getArgument(5), c0),
                           memref::DimOp::create(b, func.getArgument(6), c0),
                           index(8),
                           index(9),
                           index(10),
                           causal,
                           func.getArgument(12)};
  }
  KernelConstants k = kernelConstants(b, shape, /*withLog2e=*/true, runTime);
  Value row = arith::AddIOp::create(b, k.first, k.tid);
  Value inside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, k.rows);
  buildIfThen(b, inside, [&] { buildRow(b, shape, k, row, func.getArguments()); });
  gpu::ReturnOp::create(b);

  if (failed(verify(*module)))
    return failure();
  return module;
}

FailureOr<std::string> kernels::compileSinkFwdReferencePTX(
    MLIRContext &context, const KernelConfig &config, PTXTargetOptions target) {
  return compileReferencePTX(context, buildSinkFwdReference(context, config),
                             config, target, "sink-fwd");
}
