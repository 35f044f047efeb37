//===- SoftwarePipeline.cpp - Prefetch a pipelined loop's loads -----------===//
//
// The path of kernels that are not warp-specialized: every thread computes,
// and the loads of iteration it + S - 1 are issued while iteration it
// computes, into S versions of each buffer with one barrier per version.
// See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "LoopLoads.h"
#include "Utils.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILESOFTWAREPIPELINE
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {

/// Issues, under `condition`, the loads of the loop iteration whose
/// induction value is `inductionValue` into version `stage` of the staged
/// buffers, on slot `stage` of `full`; one thread arrives.
void issueLoads(OpBuilder &builder, LoopLoads &loads,
                const DenseMap<Operation *, Value> &stagedOfCopy, Value full,
                Value condition, Value inductionValue, Value stage) {
  Location loc = loads.loop.getLoc();
  auto ifOp = scf::IfOp::create(builder, loc, condition, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
  IRMapping mapping;
  mapping.map(loads.loop.getInductionVar(), inductionValue);
  for (Operation *op : loads.loopOps)
    builder.clone(*op, mapping);
  // Every load of the iteration on the version's one barrier (count 1):
  // a single arrive.
  SmallVector<CopyOp> copies;
  for (ProducerGroup &group : loads.groups)
    llvm::append_range(copies, group.copies);
  issueCopiesAndArrive(builder, loc, copies, mapping, full, stage,
                       [&](CopyOp copy) {
                         return stageView(builder, copy.getLoc(),
                                          stagedOfCopy.lookup(copy), stage);
                       });
}

void pipeline(gpu::GPUFuncOp func, LoopLoads &loads) {
  MLIRContext *context = func.getContext();
  scf::ForOp loop = loads.loop;
  Location loc = loop.getLoc();
  int64_t stages = loads.stages;
  OpBuilder builder(context);

  // One barrier per version (one TMA arrival each), at the kernel's top
  // level where barrier initialization expects it.
  builder.setInsertionPointToStart(&func.getBody().front());
  Value full = AllocBarrierOp::create(
      builder, loc, BarrierArrayType::get(context, stages),
      builder.getDenseI64ArrayAttr(SmallVector<int64_t>(stages, 1)));

  DenseMap<Value, Value> staged;
  for (memref::AllocOp alloc : loads.buffers) {
    builder.setInsertionPointAfter(alloc);
    staged[alloc.getResult()] = createStagedBuffer(builder, alloc, stages);
  }
  DenseMap<Operation *, Value> stagedOfCopy;
  for (ProducerGroup &group : loads.groups)
    for (CopyOp copy : group.copies)
      stagedOfCopy[copy] = staged.lookup(copy.getDest());

  // Prologue: iterations 0 .. S-2 (those that exist).
  builder.setInsertionPoint(loop);
  for (int64_t i = 0; i + 1 < stages; ++i) {
    Value offset = arith::MulIOp::create(builder, loc, loop.getStep(),
                                         constantIndex(builder, loc, i));
    Value induction =
        arith::AddIOp::create(builder, loc, loop.getLowerBound(), offset);
    Value exists = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt,
                                         induction, loop.getUpperBound());
    issueLoads(builder, loads, stagedOfCopy, full, exists, induction,
               constantIndex(builder, loc, i));
  }

  // The loop: compute on version it % S, prefetch iteration it + S - 1.
  loop->removeAttr(TileDialect::kNumStagesAttrName);
  auto [stage, parity] = stageAndParity(builder, loop, stages);
  builder.setInsertionPointAfterValue(parity);
  for (memref::AllocOp alloc : loads.buffers)
    replaceInLoop(builder, alloc,
                  loop, stageView(builder, alloc.getLoc(),
                                  staged[alloc.getResult()], stage));
  Value ahead = arith::MulIOp::create(builder, loc, loop.getStep(),
                                      constantIndex(builder, loc, stages - 1));
  Value nextInduction =
      arith::AddIOp::create(builder, loc, loop.getInductionVar(), ahead);
  Value nextExists = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::slt, nextInduction, loop.getUpperBound());
  Value nextStage = arith::RemUIOp::create(
      builder, loc,
      arith::AddIOp::create(builder, loc, stage,
                            constantIndex(builder, loc, stages - 1)),
      constantIndex(builder, loc, stages));
  // Version (it + S - 1) % S was read in iteration it - 1: every thread must
  // be done with it before TMA overwrites it (write after read).
  createRoleSync(builder, loc, loop);
  issueLoads(builder, loads, stagedOfCopy, full, nextExists, nextInduction,
             nextStage);
  Operation *firstReader = nullptr;
  for (ProducerGroup &group : loads.groups)
    if (!firstReader || group.firstReader->isBeforeInBlock(firstReader))
      firstReader = group.firstReader;
  builder.setInsertionPoint(firstReader);
  MBarrierWaitParityOp::create(builder, loc, full, stage, parity);

  for (ProducerGroup &group : loads.groups)
    for (CopyOp copy : group.copies)
      copy.erase();
  for (memref::AllocOp alloc : loads.buffers)
    alloc.erase();
}

struct TileSoftwarePipelinePass
    : public sinkattn::tile::impl::TileSoftwarePipelineBase<
          TileSoftwarePipelinePass> {
  void runOnOperation() override {
    getOperation()->walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel() ||
          func->hasAttr(TileDialect::kWarpSpecializedAttrName))
        return;
      bool hasPipelinedLoop = false;
      func.walk([&](scf::ForOp loop) {
        hasPipelinedLoop |= loop->hasAttr(TileDialect::kNumStagesAttrName);
      });
      if (!hasPipelinedLoop)
        return;
      std::string why;
      FailureOr<LoopLoads> loads = analyzeLoopLoads(func, why);
      if (failed(loads)) {
        // The loop keeps tile.num_stages: multi-versioning still gives its
        // buffers and barriers one version per stage.
        func.emitRemark() << "software pipelining declined: " << why;
        return;
      }
      if (!loads->guards.empty()) {
        func.emitRemark() << "software pipelining declined: guarded copies "
                             "are only warp-specialized";
        return;
      }
      if (loads->stages < 2)
        return; // nothing to prefetch
      pipeline(func, *loads);
    });
  }
};
} // namespace
