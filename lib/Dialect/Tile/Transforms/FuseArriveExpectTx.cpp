//===- FuseArriveExpectTx.cpp - expect_tx + arrive -> arrive_expect_tx ----===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "Utils.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILEFUSEARRIVEEXPECTTX
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
struct FuseExpectTxWithArrive : public OpRewritePattern<MBarrierExpectTxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MBarrierExpectTxOp expect,
                                PatternRewriter &rewriter) const override {
    Value barriers = expect.getBarriers(), index = expect.getIndex();
    for (Operation *next = expect->getNextNode(); next;
         next = next->getNextNode()) {
      if (auto arrive = dyn_cast<MBarrierArriveOp>(next)) {
        if (!isSameSlot(barriers, index, arrive.getBarriers(),
                        arrive.getIndex()) ||
            arrive.getCount() != 1)
          return rewriter.notifyMatchFailure(expect, "arrive on another slot");
        rewriter.eraseOp(arrive);
        rewriter.replaceOpWithNewOp<MBarrierArriveExpectTxOp>(
            expect, barriers, index, expect.getBytes());
        return success();
      }
      // Transparent: TMA loads completing on this very slot, proxy fences,
      // block-wide syncs, and ops without memory effects (index arithmetic,
      // subviews).
      if (auto load = dyn_cast<TmaLoadOp>(next)) {
        if (isSameSlot(barriers, index, load.getBarriers(),
                       load.getBarrierIndex()))
          continue;
        return rewriter.notifyMatchFailure(expect, "TMA load on another slot");
      }
      if (auto load = dyn_cast<TmaIm2colLoadOp>(next)) {
        if (isSameSlot(barriers, index, load.getBarriers(),
                       load.getBarrierIndex()))
          continue;
        return rewriter.notifyMatchFailure(expect, "TMA load on another slot");
      }
      if (isa<NVVM::FenceProxyOp, gpu::BarrierOp>(next) ||
          isMemoryEffectFree(next))
        continue;
      return rewriter.notifyMatchFailure(expect, "non-transparent operation");
    }
    return rewriter.notifyMatchFailure(expect, "no arrive follows");
  }
};

struct TileFuseArriveExpectTxPass
    : public sinkattn::tile::impl::TileFuseArriveExpectTxBase<
          TileFuseArriveExpectTxPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseExpectTxWithArrive>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
