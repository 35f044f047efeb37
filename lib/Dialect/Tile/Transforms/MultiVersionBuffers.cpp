//===- MultiVersionBuffers.cpp - One buffer/barrier version per stage -----===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "Utils.h"

#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILEMULTIVERSIONBUFFERS
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
/// The (barrier array, slot index) operands of an op that addresses one
/// barrier slot, or nullopt.
std::optional<std::pair<OpOperand *, OpOperand *>> slotOperands(Operation *op) {
  return llvm::TypeSwitch<Operation *,
                          std::optional<std::pair<OpOperand *, OpOperand *>>>(op)
      .Case<TmaCopyOp, TmaLoadOp, TmaIm2colLoadOp>([](auto tma) {
        return std::make_pair(&tma.getBarriersMutable(),
                              &tma.getBarrierIndexMutable());
      })
      .Case<MBarrierArriveOp, MBarrierExpectTxOp, MBarrierArriveExpectTxOp,
            MBarrierWaitParityOp, MBarrierInitOp, CpAsyncArriveOp>([](auto slotOp) {
        return std::make_pair(&slotOp.getBarriersMutable(),
                              &slotOp.getIndexMutable());
      })
      .Default([](Operation *) { return std::nullopt; });
}

/// The odd offset of a wait's original parity: 1 for the constant 1, for
/// `(x + odd) % 2` and for `x ^ 1`; else 0.
int64_t parityOffset(Value parity) {
  if (std::optional<int64_t> constant = getConstantIntValue(parity))
    return *constant & 1;
  Value dividend;
  if (auto rem = parity.getDefiningOp<arith::RemUIOp>();
      rem && getConstantIntValue(rem.getRhs()) == 2)
    dividend = rem.getLhs();
  else if (auto srem = parity.getDefiningOp<arith::RemSIOp>();
           srem && getConstantIntValue(srem.getRhs()) == 2)
    dividend = srem.getLhs();
  if (dividend)
    if (auto add = dividend.getDefiningOp<arith::AddIOp>()) {
      std::optional<int64_t> rhs = getConstantIntValue(add.getRhs());
      std::optional<int64_t> lhs = getConstantIntValue(add.getLhs());
      return (rhs ? *rhs : lhs ? *lhs : 0) & 1;
    }
  if (auto xorOp = parity.getDefiningOp<arith::XOrIOp>())
    return getConstantIntValue(xorOp.getRhs()).value_or(0) & 1;
  return 0;
}

/// The shared-memory allocation a TMA destination comes from (through
/// subviews), or null.
memref::AllocOp filledAllocation(Operation *op) {
  Value dest;
  if (auto load = dyn_cast<TmaLoadOp>(op))
    dest = load.getDest();
  else if (auto im2col = dyn_cast<TmaIm2colLoadOp>(op))
    dest = im2col.getDest();
  else if (auto im2colCopy = dyn_cast<Im2colCopyOp>(op))
    dest = im2colCopy.getDest();
  else if (auto tmaCopy = dyn_cast<TmaCopyOp>(op))
    dest = tmaCopy.getDest();
  else if (auto copy = dyn_cast<CopyOp>(op);
           copy && isSharedMemory(cast<MemRefType>(copy.getDest().getType())))
    dest = copy.getDest();
  if (!dest)
    return nullptr;
  while (auto subview = dest.getDefiningOp<memref::SubViewOp>())
    dest = subview.getSource();
  auto alloc = dest.getDefiningOp<memref::AllocOp>();
  if (alloc && isSharedMemory(alloc.getType()))
    return alloc;
  return nullptr;
}

struct TileMultiVersionBuffersPass
    : public sinkattn::tile::impl::TileMultiVersionBuffersBase<
          TileMultiVersionBuffersPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(TileDialect::kNumStagesAttrName))
        loops.push_back(loop);
    });
    for (scf::ForOp loop : loops)
      if (failed(versionLoop(loop)))
        return signalPassFailure();
  }

  LogicalResult versionLoop(scf::ForOp loop) {
    // The dialect verifies that the count is in [1, kMaxNumStages].
    int64_t stages =
        loop->getAttrOfType<IntegerAttr>(TileDialect::kNumStagesAttrName)
            .getInt();
    IRRewriter rewriter(loop.getContext());

    // Buffers the loop fills by TMA.
    llvm::SetVector<memref::AllocOp> buffers;
    llvm::SetVector<AllocBarrierOp> barrierArrays;
    loop.getBody()->walk([&](Operation *op) {
      if (memref::AllocOp alloc = filledAllocation(op))
        buffers.insert(alloc);
      if (auto slot = slotOperands(op))
        if (auto array = slot->first->get().getDefiningOp<AllocBarrierOp>())
          barrierArrays.insert(array);
    });

    for (memref::AllocOp alloc : buffers) {
      if (loop->isAncestor(alloc))
        return alloc.emitOpError()
               << "is filled by TMA in a pipelined loop but allocated inside "
                  "it; allocate it before the loop";
      for (Operation *user : alloc->getUsers())
        if (!loop->isProperAncestor(user))
          return alloc.emitOpError()
                 << "is filled by TMA in a pipelined loop but also used "
                    "outside it; multi-versioning needs every use inside the "
                    "loop";
      FailureOr<memref::AllocOp> versioned = memref::multiBuffer(
          rewriter, alloc, stages, /*skipOverrideAnalysis=*/true);
      if (failed(versioned))
        return loop.emitOpError() << "could not multi-version a buffer of type "
                                  << alloc.getType();
    }

    // Versioned barriers take their parity from this loop's iteration: that
    // only counts their phases when the loop runs once per thread (at the
    // top level; role regions run once) and every wait runs once per
    // iteration (directly in its body). Synchronous loads that counted
    // their executions instead (tile-lower-copies) keep their one barrier;
    // other barriers there cannot be versioned correctly.
    bool topLevel = true;
    for (Operation *parent = loop->getParentOp();
         parent && !isa<FunctionOpInterface>(parent);
         parent = parent->getParentOp())
      topLevel &= parent->hasAttr(kThreadBaseAttrName);
    barrierArrays.remove_if([](AllocBarrierOp array) {
      return array->hasAttr(kCountedPhasesAttrName);
    });
    for (AllocBarrierOp array : barrierArrays) {
      Operation *conditionalWait = nullptr;
      for (Operation *user : array->getUsers())
        if (isa<MBarrierWaitParityOp>(user) && user->getBlock() != loop.getBody())
          conditionalWait = user;
      if (topLevel && !conditionalWait)
        continue;
      InFlightDiagnostic diag = array.emitOpError()
                                << "is used in a pipelined loop whose "
                                   "iterations do not count its phases (";
      if (!topLevel)
        diag << "the loop is nested in another loop or region";
      else
        diag << "a wait on it is not directly in the loop body";
      diag << "); pipeline the loop with tile.copy loads, or wait with a "
              "parity you count yourself and drop tile.num_stages";
      if (conditionalWait)
        diag.attachNote(conditionalWait->getLoc()) << "the wait";
      return failure();
    }
    if (barrierArrays.empty())
      return success();
    // it = (k - min) / step; version = it % S; parity = (it / S) % 2.
    rewriter.setInsertionPointToStart(loop.getBody());
    Location loc = loop.getLoc();
    Value iteration = createIterationIndex(rewriter, loop);
    rewriter.setInsertionPointAfterValue(iteration);
    Value stageCount = arith::ConstantIndexOp::create(rewriter, loc, stages);
    Value two = arith::ConstantIndexOp::create(rewriter, loc, 2);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value version = arith::RemUIOp::create(rewriter, loc, iteration, stageCount);
    Value round = arith::DivUIOp::create(rewriter, loc, iteration, stageCount);
    Value phase = arith::RemUIOp::create(rewriter, loc, round, two);
    Value invertedPhase = arith::XOrIOp::create(rewriter, loc, phase, one);

    for (AllocBarrierOp array : barrierArrays) {
      for (Operation *user : array->getUsers()) {
        if (isa<MBarrierInitOp>(user))
          return array.emitOpError()
                 << "is already initialized (tile-lower-barriers ran before "
                    "tile-multi-version-buffers); multi-versioning must come "
                    "first so that initialization covers every version";
        if (!loop->isProperAncestor(user))
          return array.emitOpError()
                 << "is used in a pipelined loop and outside it; "
                    "multi-versioning needs every use inside the loop";
      }
      int64_t slots = array.getBarriers().getType().getSize();
      if (stages * slots > kMaxBarrierSlots)
        return array.emitOpError()
               << "would need " << stages << " x " << slots << " = "
               << stages * slots << " barrier slots in a loop of " << stages
               << " stages, more than the " << kMaxBarrierSlots
               << " a barrier array may have";
      SmallVector<int64_t> counts;
      for (int64_t v = 0; v < stages; ++v)
        llvm::append_range(counts, array.getArriveCounts());
      rewriter.setInsertionPoint(array);
      auto versioned = AllocBarrierOp::create(
          rewriter, array.getLoc(),
          BarrierArrayType::get(array.getContext(), stages * slots),
          rewriter.getDenseI64ArrayAttr(counts));
      for (Operation *user : llvm::make_early_inc_range(array->getUsers())) {
        std::pair<OpOperand *, OpOperand *> operands = *slotOperands(user);
        OpOperand *barriers = operands.first, *index = operands.second;
        rewriter.setInsertionPoint(user);
        // Slot i of version v is v * n + i.
        Value base = arith::MulIOp::create(
            rewriter, user->getLoc(), version,
            arith::ConstantIndexOp::create(rewriter, user->getLoc(), slots));
        Value slot = arith::AddIOp::create(rewriter, user->getLoc(), base,
                                           index->get());
        rewriter.modifyOpInPlace(user, [&] {
          barriers->set(versioned);
          index->set(slot);
          if (auto wait = dyn_cast<MBarrierWaitParityOp>(user))
            wait.getParityMutable().set(
                parityOffset(wait.getParity()) ? invertedPhase : phase);
        });
      }
      rewriter.eraseOp(array);
    }
    return success();
  }
};
} // namespace
