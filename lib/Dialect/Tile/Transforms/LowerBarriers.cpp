//===- LowerBarriers.cpp - Barrier array initialization -------------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "Utils.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILELOWERBARRIERS
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
struct TileLowerBarriersPass
    : public sinkattn::tile::impl::TileLowerBarriersBase<TileLowerBarriersPass> {
  void runOnOperation() override {
    SmallVector<AllocBarrierOp> arrays;
    getOperation()->walk([&](AllocBarrierOp array) { arrays.push_back(array); });
    for (AllocBarrierOp array : arrays)
      if (failed(initialize(array)))
        return signalPassFailure();
  }

  static LogicalResult initialize(AllocBarrierOp array) {
    // Idempotent: an array with init users is initialized already.
    if (llvm::any_of(array->getUsers(),
                     [](Operation *user) { return isa<MBarrierInitOp>(user); }))
      return success();
    if (!isa<FunctionOpInterface>(array->getParentOp()))
      return array.emitOpError()
             << "must be allocated at the top level of the kernel: its "
                "initialization ends with a block-wide barrier every thread "
                "must reach";
    OpBuilder builder(array.getContext());
    builder.setInsertionPointAfter(array);
    Location loc = array.getLoc();
    Value leader = createLeaderPredicate(builder, loc);
    auto ifOp = scf::IfOp::create(builder, loc, leader, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
      for (auto [slot, count] : llvm::enumerate(array.getArriveCounts()))
        MBarrierInitOp::create(builder, loc, array,
                               arith::ConstantIndexOp::create(builder, loc, slot),
                               count);
      // Make the initialization visible to the async proxy (TMA
      // completions) and to the other threads.
      NVVM::FenceMbarrierInitOp::create(builder, loc);
    }
    gpu::BarrierOp::create(builder, loc);
    return success();
  }
};
} // namespace
