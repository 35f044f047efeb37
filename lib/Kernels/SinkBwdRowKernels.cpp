//===- SinkBwdRowKernels.cpp - The backward's row kernels -----------------===//
//
// The attention-sink backward's kernels that work on rows rather than
// tiles: sink_bwd_preprocess (Delta and each query block's record),
// sink_bwd_dq_convert (--dq atomic: the fp32 dQ rounded, and dsinks) and
// sink_bwd_sinks (dsinks from the rows' sink terms), and the pieces they
// share with the dQ kernel (the head's dsink sum and its butterfly).
//
//===----------------------------------------------------------------------===//

#include "SinkBwdLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// Partial sums per lane of the head's dsink sum: rows l + 32u + 256m,
/// m = 0, 1, ..., go into sum u, so that many loads are in flight (one
/// chain of dependent loads was far slower; docs/PERF.md).
constexpr int64_t kSinkPartialSums = 8;
static_assert(kSinkPartialSums >= 2, "the sums are combined pairwise");

/// The sum of `value` over the 32 lanes of a warp in a fixed butterfly
/// (xor 16, 8, ..., 1), then + 0 as the text it replaces had it.
Value buildWarpSum(ImplicitLocOpBuilder &b, Value value, Value width,
                   Value zero) {
  for (int32_t offset : {16, 8, 4, 2, 1}) {
    Value offsetValue = arith::ConstantIntOp::create(b, b.getI32Type(), offset);
    auto shuffle = gpu::ShuffleOp::create(b, value, offsetValue, width,
                                          gpu::ShuffleMode::XOR);
    value = arith::AddFOp::create(b, value, shuffle.getShuffleResult());
  }
  return arith::AddFOp::create(b, value, zero);
}
} // namespace

void sinkattn::kernels::buildHeadSinkSum(ImplicitLocOpBuilder &b,
                                         const SinkBwdLayout &layout,
                                         Value terms, Value dsinks, Value head,
                                         Value lane, Value c0, Value c1,
                                         Value zero) {
  Value width = arith::ConstantIntOp::create(b, b.getI32Type(), 32);
  Value run = constantIndex(b, layout.run);
  Value runs = constantIndex(b, layout.runBatches);
  Value batchRows = constantIndex(b, layout.batchRows);
  Value headBase = arith::MulIOp::create(b, head, run);
  Value stride = constantIndex(b, 32 * kSinkPartialSums);
  SmallVector<Value> zeros(kSinkPartialSums, zero);
  // Over the runs, lane `lane`'s rows k + 32u of each into sum u; rows past
  // the run read row k and add 0.
  scf::ForOp runLoop = buildForLoop(
      b, c0, runs, c1, zeros,
      [&](Value r, ValueRange parts) -> SmallVector<Value> {
        Value runBase = arith::MulIOp::create(b, r, batchRows);
        Value base = arith::AddIOp::create(b, runBase, headBase);
        scf::ForOp rowLoop = buildForLoop(
            b, lane, run, stride, parts,
            [&](Value k, ValueRange sums) -> SmallVector<Value> {
              SmallVector<Value> inside, values;
              for (int64_t u = 0; u < kSinkPartialSums; ++u) {
                Value offset = constantIndex(b, 32 * u);
                Value row = arith::AddIOp::create(b, k, offset);
                inside.push_back(arith::CmpIOp::create(
                    b, arith::CmpIPredicate::ult, row, run));
                Value clamped =
                    arith::SelectOp::create(b, inside.back(), row, k);
                Value at = arith::AddIOp::create(b, base, clamped);
                values.push_back(memref::LoadOp::create(b, terms, at));
              }
              SmallVector<Value> next;
              for (int64_t u = 0; u < kSinkPartialSums; ++u) {
                Value term =
                    arith::SelectOp::create(b, inside[u], values[u], zero);
                next.push_back(arith::AddFOp::create(b, sums[u], term));
              }
              return next;
            });
        return rowLoop.getResults();
      });
  Value sum = runLoop.getResult(0);
  for (int64_t u = 1; u < kSinkPartialSums; ++u)
    sum = arith::AddFOp::create(b, sum, runLoop.getResult(u));
  Value total = buildWarpSum(b, sum, width, zero);
  Value firstLane =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c0);
  buildIfThen(b, firstLane,
              [&] { memref::StoreOp::create(b, total, dsinks, head); });
}

gpu::GPUFuncOp sinkattn::kernels::buildSinkBwdSinks(
    ImplicitLocOpBuilder &b, const SinkBwdProblem &problem,
    const SinkBwdLayout &layout) {
  Type dsinksType =
      MemRefType::get({problem.shape.heads}, b.getF32Type());
  gpu::GPUFuncOp func =
      createBackwardKernel(b, "sink_bwd_sinks", {layout.terms, dsinksType});
  Value terms = func.getArgument(0), dsinks = func.getArgument(1);
  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value zero = constantF32(b, 0.0f);
  // One warp per head.
  Value head = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value lane = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  buildHeadSinkSum(b, layout, terms, dsinks, head, lane, c0, c1, zero);
  finishBackwardKernel(b, func);
  return func;
}
