//===- WarpSpecialize.cpp - Producer/consumer warp specialization ---------===//
//
// Splits a kernel whose pipelined loop loads its operands with tile.copy
// into a TMA producer warpgroup and the original threads as consumers, the
// stages of every loaded buffer guarded by a forward ("full") and a
// back-pressure ("empty") barrier per producer group. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "LoopLoads.h"
#include "Utils.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILEWARPSPECIALIZE
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
/// The producer is one warpgroup (setmaxnreg works per warpgroup): one
/// thread issues TMA copies, all 128 issue cp.async chunks.
constexpr int64_t kProducerThreads = 128;
/// A TMA-only producer needs few registers: it computes indices and issues
/// copies.
constexpr int64_t kTmaProducerRegisters = 24;
/// Loops around the pipelined one add the producer's tile coordinates and
/// phase counters: the persistent GEMM's producer spills 40 bytes at 24
/// registers, none at 32.
constexpr int64_t kNestedTmaProducerRegisters = 32;
/// A cp.async producer computes an address per 16-byte chunk: ptxas
/// spills the cp.async GEMM's producer (24 chunks per thread and stage) at
/// 40 and 48 registers, not at 56.
constexpr int64_t kSimtProducerRegisters = 56;
constexpr int64_t kRegisterFile = 65536;
/// ptxas allocates at most 255 registers; setmaxnreg takes multiples of 8.
constexpr int64_t kMaxConsumerRegisters = 240;

/// A warp-specialization plan: the loop's loads and the thread split.
struct Plan : LoopLoads {
  int64_t consumerThreads = 0;
  int64_t producerThreads = kProducerThreads;
  int64_t producerRegisters = kTmaProducerRegisters;
};

/// Decides whether and how `func` is specialized; the reason in `why` when
/// not.
FailureOr<Plan> analyze(gpu::GPUFuncOp func, std::string &why) {
  Plan plan;
  DenseI32ArrayAttr blockSize = func.getKnownBlockSizeAttr();
  if (!blockSize) {
    why = "the kernel has no known_block_size, so the consumer thread count "
          "is unknown";
    return failure();
  }
  ArrayRef<int32_t> dims = blockSize.asArrayRef();
  if (dims.size() != 3 || dims[1] != 1 || dims[2] != 1) {
    why = "threadIdx.y/z are used (known_block_size is not [C, 1, 1])";
    return failure();
  }
  plan.consumerThreads = dims[0];
  if (plan.consumerThreads % 128 != 0 ||
      plan.consumerThreads + kProducerThreads > 1024) {
    why = "the block has " + std::to_string(plan.consumerThreads) +
          " threads; warp specialization needs whole warpgroups and at most "
          "896 consumers";
    return failure();
  }
  bool userWritten = func->hasAttr(TileDialect::kWarpSpecializedAttrName);
  func.walk([&](Operation *op) {
    if (isa<NVVM::SetMaxRegisterOp>(op) || op->hasAttr(kThreadBaseAttrName))
      userWritten = true;
  });
  if (userWritten) {
    why = "the kernel is already warp-specialized";
    return failure();
  }
  // The consumers keep their code; what would change meaning under a
  // producer warpgroup is declined.
  bool blockShaped = false;
  func.walk([&](Operation *op) {
    if (auto dim = dyn_cast<gpu::BlockDimOp>(op))
      blockShaped |= dim.getDimension() == gpu::Dimension::x;
    blockShaped |= isa<gpu::SubgroupIdOp, gpu::NumSubgroupsOp>(op);
  });
  if (blockShaped) {
    why = "the kernel reads the block size or warp numbering, which the "
          "producer warpgroup would change";
    return failure();
  }

  FailureOr<LoopLoads> loads =
      analyzeLoopLoads(func, why, /*withTileLoads=*/true);
  if (failed(loads))
    return failure();
  static_cast<LoopLoads &>(plan) = std::move(*loads);
  int64_t slots = plan.stages * static_cast<int64_t>(plan.groups.size());
  if (slots > kMaxBarrierSlots) {
    why = std::to_string(plan.stages) + " stages of " +
          std::to_string(plan.groups.size()) + " producer groups need " +
          std::to_string(slots) + " barrier slots, more than the " +
          std::to_string(kMaxBarrierSlots) + " a barrier array may have";
    return failure();
  }
  bool simt = anyCpAsync(plan.preLoopCopies) ||
              llvm::any_of(plan.groups, [](const ProducerGroup &group) {
                return anyCpAsync(group.copies);
              });
  // A cp.async producer keeps its whole warpgroup busy copying. It does
  // not grow to the consumers' thread count (the seed's rule): with 256
  // consumers + 256 producers the wgmma consumers fail to compile under
  // ptxas (C7602, measured; docs/design.md).
  if (simt)
    plan.producerRegisters = kSimtProducerRegisters;
  else if (!plan.outerLoops.empty())
    plan.producerRegisters = kNestedTmaProducerRegisters;
  return plan;
}

/// Registers per thread at launch with one block per SM: the register file
/// split evenly, rounded down to the allocation unit of 8.
int64_t launchRegisters(const Plan &plan) {
  return kRegisterFile / (plan.consumerThreads + plan.producerThreads) / 8 * 8;
}

/// Registers per consumer thread: what the block was launched with, less
/// the producer's share, a multiple of 8, at most 240. setmaxnreg.inc draws
/// only on what setmaxnreg.dec released in the block, so asking for more
/// blocks the consumers forever (the persistent GEMM's 32-register producer
/// left 232, not 240: it hung once ptxas honoured the request, 2026-12-01).
int64_t consumerRegisters(const Plan &plan) {
  int64_t threads = plan.consumerThreads + plan.producerThreads;
  int64_t available = (launchRegisters(plan) * threads -
                       plan.producerThreads * plan.producerRegisters) /
                      plan.consumerThreads;
  return std::min<int64_t>(kMaxConsumerRegisters, available / 8 * 8);
}

/// Whether moving registers from the producer to the consumers gives the
/// consumers more than an even split of the register file would: with one
/// consumer warpgroup every thread can have 240 registers anyway (and ptxas
/// cannot then tell the entry register count: warning C7508).
bool reallocationPays(const Plan &plan) {
  return launchRegisters(plan) < consumerRegisters(plan);
}

/// `it % 2` of `loop`'s iteration `it` counted from its start (computed at
/// the start of its body), at `builder`'s insertion point in that body: the
/// phase of a one-buffer barrier pair used once per iteration.
Value iterationParity(OpBuilder &builder, scf::ForOp loop) {
  Value iteration = createIterationIndex(builder, loop);
  return arith::RemUIOp::create(builder, loop.getLoc(), iteration,
                                constantIndex(builder, loop.getLoc(), 2));
}

void specialize(gpu::GPUFuncOp func, Plan &plan) {
  MLIRContext *context = func.getContext();
  Block &entry = func.getBody().front();
  Location loc = plan.loop.getLoc();
  OpBuilder builder(context);
  int64_t stages = plan.stages;
  int64_t groupCount = plan.groups.size();
  int64_t consumers = plan.consumerThreads;
  int64_t producers = plan.producerThreads;

  // 1. Allocations first: both roles use them.
  SmallVector<Operation *> allocations;
  for (Operation &op : entry)
    if (isa<memref::AllocOp, AllocBarrierOp>(op))
      allocations.push_back(&op);
  Operation *insertAfter = nullptr;
  for (Operation *op : allocations) {
    if (insertAfter)
      op->moveAfter(insertAfter);
    else
      op->moveBefore(&entry, entry.begin());
    insertAfter = op;
  }
  if (insertAfter)
    builder.setInsertionPointAfter(insertAfter);
  else
    builder.setInsertionPointToStart(&entry);

  // 2. Barriers: S·G forward (one TMA arrival, or one cp.async arrival
  // per producer thread) and S·G back-pressure (every consumer thread),
  // plus one per load before the loop. Slot stage·G + g.
  auto barrierArray = [&](ArrayRef<int64_t> counts) -> Value {
    if (counts.empty())
      return Value();
    return AllocBarrierOp::create(
        builder, loc, BarrierArrayType::get(context, counts.size()),
        builder.getDenseI64ArrayAttr(counts));
  };
  SmallVector<int64_t> fullCounts, emptyCounts, preLoopCounts;
  for (int64_t stage = 0; stage < stages; ++stage)
    for (const ProducerGroup &group : plan.groups) {
      fullCounts.push_back(arrivalsPerPhase(group.copies, producers));
      emptyCounts.push_back(consumers);
    }
  for (CopyOp copy : plan.preLoopCopies)
    preLoopCounts.push_back(arrivalsPerPhase({copy}, producers));
  // A tile load (TileLoad): forward and back-pressure, one phase per
  // iteration of the loop around the pipelined one.
  SmallVector<int64_t> tileFullCounts, tileEmptyCounts;
  for (const TileLoad &load : plan.tileLoads) {
    tileFullCounts.push_back(arrivalsPerPhase({load.copy}, producers));
    tileEmptyCounts.push_back(consumers);
  }
  Value full = barrierArray(fullCounts);
  Value empty = barrierArray(emptyCounts);
  Value preLoop = barrierArray(preLoopCounts);
  Value tileFull = barrierArray(tileFullCounts);
  Value tileEmpty = barrierArray(tileEmptyCounts);

  // 3. Staged buffers: a leading dimension S.
  DenseMap<Value, Value> staged;
  for (memref::AllocOp alloc : plan.buffers)
    staged[alloc.getResult()] = createStagedBuffer(builder, alloc, stages);

  // Which staged buffer each loop copy fills (the consumer rewrite below
  // replaces the copies' destinations).
  DenseMap<Operation *, Value> stagedOfCopy;
  for (ProducerGroup &group : plan.groups)
    for (CopyOp copy : group.copies)
      stagedOfCopy[copy] = staged.lookup(copy.getDest());

  // 4. The roles: producer warpgroup(s) first, consumers after.
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value producerEnd = constantIndex(builder, loc, producers);
  Value isProducer = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult,
                                           tid, producerEnd);
  Value isConsumer = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge,
                                           tid, producerEnd);
  auto roleRegion = [&](Value condition, StringRef role, int64_t base,
                        int64_t count) {
    auto ifOp = scf::IfOp::create(builder, loc, condition, /*withElse=*/false);
    ifOp->setAttr(kThreadRoleAttrName, builder.getStringAttr(role));
    ifOp->setAttr(kThreadBaseAttrName, builder.getI64IntegerAttr(base));
    ifOp->setAttr(kThreadCountAttrName, builder.getI64IntegerAttr(count));
    return ifOp;
  };
  scf::IfOp producer = roleRegion(isProducer, "producer", 0, producers);
  scf::IfOp consumer = roleRegion(isConsumer, "consumer", producers, consumers);

  // 5. Consumer: everything the kernel did, in its own thread numbering.
  Block *consumerBlock = &consumer.getThenRegion().front();
  Operation *consumerYield = consumerBlock->getTerminator();
  for (Operation &op : llvm::make_early_inc_range(entry)) {
    if (&op == producer.getOperation() || &op == consumer.getOperation() ||
        op.hasTrait<OpTrait::IsTerminator>() ||
        llvm::is_contained(allocations, &op) || op.isBeforeInBlock(producer))
      continue;
    op.moveBefore(consumerYield);
  }
  builder.setInsertionPointToStart(consumerBlock);
  bool reallocate = reallocationPays(plan);
  if (reallocate)
    NVVM::SetMaxRegisterOp::create(builder, loc, consumerRegisters(plan),
                                   NVVM::SetMaxRegisterAction::increase);
  Value consumerTid = arith::SubIOp::create(
      builder, loc, gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x),
      producerEnd);
  consumer.walk([&](gpu::ThreadIdOp op) {
    if (op.getDimension() == gpu::Dimension::x &&
        op.getResult() != consumerTid.getDefiningOp()->getOperand(0))
      op.getResult().replaceAllUsesWith(consumerTid);
  });
  // The producer never reaches the consumers' block syncs: they become the
  // consumer role's named barrier.
  SmallVector<gpu::BarrierOp> blockSyncs;
  consumer.walk([&](gpu::BarrierOp sync) { blockSyncs.push_back(sync); });
  for (gpu::BarrierOp sync : blockSyncs) {
    OpBuilder syncBuilder(sync);
    createRoleSync(syncBuilder, sync.getLoc(), sync);
    sync.erase();
  }
  // cp.async writes go through the generic proxy; wgmma reads through the
  // async one: the reader fences after its wait.
  auto fenceCpAsync = [&](ArrayRef<CopyOp> copies) {
    if (anyCpAsync(copies))
      NVVM::FenceProxyOp::create(
          builder, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(context, NVVM::SharedSpace::shared_cta));
  };
  for (auto [index, copy] : llvm::enumerate(plan.preLoopCopies)) {
    builder.setInsertionPoint(copy);
    MBarrierWaitParityOp::create(builder, copy.getLoc(), preLoop,
                                 constantIndex(builder, loc, index),
                                 constantIndex(builder, loc, 0));
    fenceCpAsync({copy});
  }
  scf::ForOp loop = plan.loop;
  loop->removeAttr(TileDialect::kNumStagesAttrName);
  // Phase counters. A guarded group uses a stage only on the iterations
  // that take its guard: both roles count those in a counter per guard.
  // Inside loops around the pipelined one (a persistent kernel), the
  // barriers' phases run on across their iterations, so the iterations
  // are counted in a counter carried through all of them too. A top-level
  // loop's unguarded groups count its iterations.
  bool nested = !plan.outerLoops.empty();
  size_t guardBase = nested ? 1 : 0;
  size_t counterCount = guardBase + plan.guards.size();
  auto nextCounts = [&](OpBuilder &b, Location yieldLoc, ValueRange counts,
                        const IRMapping &conditions) {
    SmallVector<Value> next;
    if (nested)
      next.push_back(arith::AddIOp::create(b, yieldLoc, counts[0],
                                           constantIndex(b, yieldLoc, 1)));
    for (auto [i, guard] : llvm::enumerate(plan.guards))
      next.push_back(countIf(b, yieldLoc, counts[guardBase + i],
                             conditions.lookupOrDefault(guard.getCondition())));
    return next;
  };
  if (counterCount != 0) {
    IRRewriter rewriter(builder);
    SmallVector<scf::ForOp> chain(plan.outerLoops);
    chain.push_back(loop);
    rewriter.setInsertionPoint(chain.front());
    SmallVector<Value> zeros(counterCount,
                             constantIndex(rewriter, loc, 0));
    SmallVector<scf::ForOp> grown = carryCounters(
        rewriter, chain, zeros,
        [&](OpBuilder &b, Location yieldLoc, ArrayRef<BlockArgument> counts) {
          return nextCounts(b, yieldLoc, ValueRange(counts), IRMapping());
        });
    // The pipelined loop was rebuilt: a tile load's reader or user is it.
    for (TileLoad &load : plan.tileLoads) {
      if (load.firstReader == loop.getOperation())
        load.firstReader = grown.back();
      if (load.lastUser == loop.getOperation())
        load.lastUser = grown.back();
    }
    loop = grown.back();
    plan.loop = loop;
    plan.outerLoops.assign(grown.begin(), grown.end() - 1);
  }
  ValueRange counters = loop.getRegionIterArgs().take_back(counterCount);
  Value stage, parity;
  if (nested) {
    builder.setInsertionPointToStart(loop.getBody());
    std::tie(stage, parity) = stageAndParityOf(builder, loc, counters[0], stages);
  } else {
    std::tie(stage, parity) = stageAndParity(builder, loop, stages);
  }
  // Tile loads: the consumers wait for the tile before its first reader
  // and release it after its last user, in the phase of the outer loop's
  // iteration (one buffer: phase = iteration parity).
  if (!plan.tileLoads.empty()) {
    OpBuilder::InsertionGuard tileGuard(builder);
    builder.setInsertionPointToStart(plan.outerLoops.front().getBody());
    Value tileParity = iterationParity(builder, plan.outerLoops.front());
    for (auto [index, load] : llvm::enumerate(plan.tileLoads)) {
      builder.setInsertionPoint(load.firstReader);
      Value slot = constantIndex(builder, loc, index);
      MBarrierWaitParityOp::create(builder, loc, tileFull, slot, tileParity);
      fenceCpAsync({load.copy});
      builder.setInsertionPointAfter(load.lastUser);
      MBarrierArriveOp::create(builder, loc, tileEmpty,
                               constantIndex(builder, loc, index), 1);
    }
  }
  builder.setInsertionPointAfterValue(parity);
  SmallVector<std::pair<Value, Value>> guardPhase;
  for (size_t i = 0; i < plan.guards.size(); ++i)
    guardPhase.push_back(
        stageAndParityOf(builder, loc, counters[guardBase + i], stages));
  auto phaseOf = [&](const ProducerGroup &group) -> std::pair<Value, Value> {
    if (!group.guard)
      return {stage, parity};
    return guardPhase[llvm::find(plan.guards, group.guard) - plan.guards.begin()];
  };
  for (const ProducerGroup &group : plan.groups)
    for (CopyOp copy : group.copies) {
      auto alloc = copy.getDest().getDefiningOp<memref::AllocOp>();
      Value view = stageView(builder, alloc.getLoc(), stagedOfCopy.lookup(copy),
                             phaseOf(group).first);
      replaceInLoop(builder, alloc, loop, view);
    }
  auto slotOf = [&](OpBuilder &b, Value stageValue, int64_t group) -> Value {
    Value base = arith::MulIOp::create(b, loc, stageValue,
                                       constantIndex(b, loc, groupCount));
    return arith::AddIOp::create(b, loc, base, constantIndex(b, loc, group));
  };
  for (auto [g, group] : llvm::enumerate(plan.groups)) {
    auto [groupStage, groupParity] = phaseOf(group);
    // Under the group's guard (its first reader and last user are there).
    builder.setInsertionPoint(group.firstReader);
    Value slot = slotOf(builder, groupStage, g);
    MBarrierWaitParityOp::create(builder, loc, full, slot, groupParity);
    fenceCpAsync(group.copies);
    builder.setInsertionPointAfter(group.lastUser);
    MBarrierArriveOp::create(builder, loc, empty, slot, 1);
  }

  // 6. Producer: its share of registers, the index computations, and the
  // loads, each stage waiting for the consumers to release it.
  builder.setInsertionPointToStart(&producer.getThenRegion().front());
  if (reallocate)
    NVVM::SetMaxRegisterOp::create(builder, loc, plan.producerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
  IRMapping mapping;
  for (Operation *op : plan.prologue)
    builder.clone(*op, mapping);
  for (auto [index, copy] : llvm::enumerate(plan.preLoopCopies))
    issueCopiesAndArrive(builder, loc, {copy}, mapping, preLoop,
                         constantIndex(builder, loc, index),
                         [](CopyOp copy) { return copy.getDest(); });
  // The loops around the pipelined one, rebuilt with what their bodies
  // compute for the copies; the counters run through them as in the
  // consumer.
  std::function<ValueRange(size_t, IRMapping &, ValueRange)> buildLevel =
      [&](size_t level, IRMapping &levelMapping,
          ValueRange counts) -> ValueRange {
    if (level < plan.outerLoops.size()) {
      scf::ForOp outer = plan.outerLoops[level];
      auto rebuilt = scf::ForOp::create(
          builder, loc, levelMapping.lookupOrDefault(outer.getLowerBound()),
          levelMapping.lookupOrDefault(outer.getUpperBound()),
          levelMapping.lookupOrDefault(outer.getStep()), counts);
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(rebuilt.getBody());
      IRMapping inner = levelMapping;
      inner.map(outer.getInductionVar(), rebuilt.getInductionVar());
      for (Operation *op : plan.outerOps[level])
        builder.clone(*op, inner);
      // The tile loads of the loop around the pipelined one: once the
      // consumers released the buffer (the previous iteration's phase; a
      // fresh barrier's phase 1 counts as complete), before this
      // iteration's pipelined loads.
      if (level + 1 == plan.outerLoops.size() && !plan.tileLoads.empty()) {
        Value tileParity = iterationParity(builder, rebuilt);
        Value emptyParity = arith::XOrIOp::create(
            builder, loc, tileParity, constantIndex(builder, loc, 1));
        for (auto [index, load] : llvm::enumerate(plan.tileLoads)) {
          Value slot = constantIndex(builder, loc, index);
          MBarrierWaitParityOp::create(builder, loc, tileEmpty, slot,
                                       emptyParity);
          issueCopiesAndArrive(builder, loc, {load.copy}, inner, tileFull, slot,
                               [](CopyOp copy) { return copy.getDest(); });
        }
      }
      ValueRange results =
          buildLevel(level + 1, inner, rebuilt.getRegionIterArgs());
      if (!results.empty())
        scf::YieldOp::create(builder, loc, results);
      return rebuilt.getResults();
    }
    auto producerLoop = scf::ForOp::create(
        builder, loc, levelMapping.lookupOrDefault(loop.getLowerBound()),
        levelMapping.lookupOrDefault(loop.getUpperBound()),
        levelMapping.lookupOrDefault(loop.getStep()), counts);
    OpBuilder::InsertionGuard guard(builder);
    ValueRange pCounts = producerLoop.getRegionIterArgs();
    Value pStage, pParity;
    if (nested) {
      builder.setInsertionPointToStart(producerLoop.getBody());
      std::tie(pStage, pParity) =
          stageAndParityOf(builder, loc, pCounts[0], stages);
    } else {
      std::tie(pStage, pParity) = stageAndParity(builder, producerLoop, stages);
    }
    builder.setInsertionPointAfterValue(pParity);
    IRMapping loopMapping = levelMapping;
    loopMapping.map(loop.getInductionVar(), producerLoop.getInductionVar());
    for (Operation *op : plan.loopOps)
      builder.clone(*op, loopMapping);
    // The loads of one group: wait until the consumers released the stage
    // (a fresh barrier's phase 1 counts as complete: the first S waits on
    // "empty" pass at once), load, arrive.
    auto produce = [&](int64_t g, ProducerGroup &group, Value groupStage,
                       Value groupParity) {
      Value slot = slotOf(builder, groupStage, g);
      Value emptyParity = arith::XOrIOp::create(
          builder, loc, groupParity, constantIndex(builder, loc, 1));
      MBarrierWaitParityOp::create(builder, loc, empty, slot, emptyParity);
      issueCopiesAndArrive(builder, loc, group.copies, loopMapping, full, slot,
                           [&](CopyOp copy) {
                             return stageView(builder, copy.getLoc(),
                                              stagedOfCopy.lookup(copy),
                                              groupStage);
                           });
    };
    SmallVector<Value> next = nextCounts(builder, loc, pCounts, loopMapping);
    for (auto [g, group] : llvm::enumerate(plan.groups)) {
      if (!group.guard) {
        produce(g, group, pStage, pParity);
        continue;
      }
      // The same guard as the consumers', with the same use count.
      size_t index = llvm::find(plan.guards, group.guard) - plan.guards.begin();
      auto [groupStage, groupParity] =
          stageAndParityOf(builder, loc, pCounts[guardBase + index], stages);
      auto ifOp = scf::IfOp::create(
          builder, loc, loopMapping.lookupOrDefault(group.guard.getCondition()),
          /*withElse=*/false);
      OpBuilder::InsertionGuard inGuard(builder);
      builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
      produce(g, group, groupStage, groupParity);
    }
    if (!next.empty())
      scf::YieldOp::create(builder, loc, next);
    return producerLoop.getResults();
  };
  SmallVector<Value> counterInits(counterCount, constantIndex(builder, loc, 0));
  buildLevel(0, mapping, counterInits);

  // 7. The loop's copies moved to the producer; the old buffers are gone.
  for (ProducerGroup &group : plan.groups)
    for (CopyOp copy : group.copies)
      copy.erase();
  for (CopyOp copy : plan.preLoopCopies)
    copy.erase();
  for (TileLoad &load : plan.tileLoads)
    load.copy.erase();
  for (memref::AllocOp alloc : plan.buffers)
    alloc.erase();
  func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
      {int32_t(consumers + producers), 1, 1}));
  func->setAttr(TileDialect::kWarpSpecializedAttrName, builder.getUnitAttr());
}

struct TileWarpSpecializePass
    : public sinkattn::tile::impl::TileWarpSpecializeBase<TileWarpSpecializePass> {
  void runOnOperation() override {
    getOperation()->walk([&](gpu::GPUFuncOp func) {
      if (!func.isKernel())
        return;
      std::string why;
      FailureOr<Plan> plan = analyze(func, why);
      if (failed(plan)) {
        // Declining is not an error: the kernel keeps the ordinary path.
        func.emitRemark() << "warp specialization declined: " << why;
        return;
      }
      specialize(func, *plan);
    });
  }
};
} // namespace
