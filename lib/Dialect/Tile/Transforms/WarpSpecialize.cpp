//===- WarpSpecialize.cpp - Producer/consumer warp specialization ---------===//
//
// Splits a kernel whose pipelined loop loads its operands with tile.copy
// into a TMA producer warpgroup and the original threads as consumers, the
// stages of every loaded buffer guarded by a forward ("full") and a
// back-pressure ("empty") barrier per producer group. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
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
constexpr int64_t kProducerThreads = 128;
/// A TMA-only producer needs few registers: it computes indices and issues
/// copies.
constexpr int64_t kProducerRegisters = 24;
constexpr int64_t kRegisterFile = 65536;
/// ptxas allocates at most 255 registers; setmaxnreg takes multiples of 8.
constexpr int64_t kMaxConsumerRegisters = 240;

/// Loads that share their first reader and last user: one full and one
/// empty barrier per stage.
struct ProducerGroup {
  SmallVector<CopyOp> copies;
  Operation *firstReader = nullptr;
  Operation *lastUser = nullptr;
};

struct Plan {
  scf::ForOp loop;
  int64_t stages = 0;
  int64_t consumerThreads = 0;
  SmallVector<ProducerGroup> groups;
  /// Copies before the loop (a Q tile): producer issues, consumer waits.
  SmallVector<CopyOp> preLoopCopies;
  /// Buffers the loop's copies fill, in order of first copy.
  SmallVector<memref::AllocOp> buffers;
  /// Top-level ops before the loop that the producer needs (index and bound
  /// computations), in program order; all pure.
  SmallVector<Operation *> producerPrologue;
  /// Ops of the loop body the producer needs (copy indices), in order.
  SmallVector<Operation *> producerLoopOps;
};

bool isGlobalToShared(CopyOp copy) {
  return isSharedMemory(cast<MemRefType>(copy.getDest().getType())) &&
         isGlobalMemory(cast<MemRefType>(copy.getSource().getType()));
}

/// The ancestor of `op` in `block`, or null.
Operation *ancestorIn(Block &block, Operation *op) {
  return block.findAncestorOpInBlock(*op);
}

/// Collects, in program order, the ops of `block` that `roots` depend on
/// (transitively, through operands), stopping at values defined outside the
/// block. Fails with `why` if one is not a pure op without regions or reads
/// a value `forbidden` rejects (a loop-carried value).
LogicalResult collectSlice(Block &block, ArrayRef<Value> roots,
                           function_ref<bool(Value)> forbidden,
                           llvm::SetVector<Operation *> &slice,
                           SmallVector<Value> &outside, std::string &why) {
  SmallVector<Value> worklist(roots.begin(), roots.end());
  DenseSet<Value> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    if (forbidden(value)) {
      why = "a copy index depends on a value carried by the loop";
      return failure();
    }
    Operation *def = value.getDefiningOp();
    if (!def || def->getBlock() != &block) {
      if (!def && cast<BlockArgument>(value).getOwner() == &block) {
        // The induction variable (or another argument of the block).
        continue;
      }
      outside.push_back(value);
      continue;
    }
    if (!isPure(def) || def->getNumRegions() != 0) {
      why = "a copy index or loop bound is computed by '" +
            def->getName().getStringRef().str() +
            "', which is not a pure op the producer could repeat";
      return failure();
    }
    slice.insert(def);
    for (Value operand : def->getOperands())
      worklist.push_back(operand);
  }
  return success();
}

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

  Block &entry = func.getBody().front();
  SmallVector<scf::ForOp> pipelined;
  func.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(TileDialect::kNumStagesAttrName))
      pipelined.push_back(loop);
  });
  if (pipelined.size() != 1) {
    why = pipelined.empty() ? "no pipelined loop (scf.for with tile.num_stages)"
                            : "more than one pipelined loop";
    return failure();
  }
  plan.loop = pipelined.front();
  if (plan.loop->getBlock() != &entry) {
    why = "the pipelined loop is not at the top level of the kernel";
    return failure();
  }
  auto stages = plan.loop->getAttrOfType<IntegerAttr>(TileDialect::kNumStagesAttrName);
  plan.stages = stages ? stages.getInt() : 0;
  if (plan.stages < 1) {
    why = "num_stages is " + std::to_string(plan.stages) +
          "; a warp-specialized loop needs at least one stage";
    return failure();
  }

  Block &body = *plan.loop.getBody();
  SmallVector<CopyOp> loopCopies;
  bool unsupported = false;
  plan.loop.walk([&](Operation *op) {
    if (auto copy = dyn_cast<CopyOp>(op)) {
      if (!isGlobalToShared(copy) || op->getBlock() != &body)
        unsupported = true;
      else
        loopCopies.push_back(copy);
    } else if (isa<TmaCopyOp, TmaLoadOp, Im2colCopyOp, TmaIm2colLoadOp,
                   AllocBarrierOp>(op)) {
      unsupported = true;
    }
  });
  if (unsupported) {
    why = "the loop has copies other than top-level global -> shared "
          "tile.copy (user-managed barriers, nested or shared -> global "
          "copies)";
    return failure();
  }
  if (loopCopies.empty()) {
    why = "the pipelined loop has no TMA producer (no global -> shared "
          "tile.copy)";
    return failure();
  }

  // Buffers: whole allocations at the top level, used only in the loop.
  for (CopyOp copy : loopCopies) {
    auto alloc = copy.getDest().getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != &entry ||
        !alloc.getType().hasStaticShape()) {
      why = "a loop copy does not fill a whole static shared allocation of "
            "the kernel";
      return failure();
    }
    auto readsOnly = [&](Operation *user) {
      // tile.gemm, or a subview (a warpgroup's rows) that only gemms read.
      if (isa<CopyOp, GemmOp>(user))
        return true;
      auto subview = dyn_cast<memref::SubViewOp>(user);
      return subview && llvm::all_of(subview->getUsers(), [](Operation *u) {
               return isa<GemmOp>(u);
             });
    };
    for (Operation *user : alloc->getUsers())
      if (!plan.loop->isAncestor(user) || !readsOnly(user)) {
        why = "a buffer the loop fills is also used outside the loop or by "
              "an op other than tile.gemm (directly or through a subview)";
        return failure();
      }
    if (llvm::count_if(alloc->getUsers(), [](Operation *user) {
          return isa<CopyOp>(user);
        }) != 1) {
      why = "a buffer is filled by more than one copy";
      return failure();
    }
    plan.buffers.push_back(alloc);
  }

  // Groups by (first reader, last user).
  for (CopyOp copy : loopCopies) {
    Operation *first = nullptr, *last = nullptr;
    // The ops that read the buffer: its users, and the users of its
    // subviews (a subview only computes an address).
    SmallVector<Operation *> readers;
    for (Operation *user : copy.getDest().getUsers()) {
      if (user == copy)
        continue;
      if (isa<memref::SubViewOp>(user))
        llvm::append_range(readers, user->getUsers());
      else
        readers.push_back(user);
    }
    for (Operation *user : readers) {
      Operation *top = ancestorIn(body, user);
      if (!first || top->isBeforeInBlock(first))
        first = top;
      if (!last || last->isBeforeInBlock(top))
        last = top;
    }
    if (!first || first->isBeforeInBlock(copy)) {
      why = "a loop copy is not read after it in the loop body";
      return failure();
    }
    auto group = llvm::find_if(plan.groups, [&](const ProducerGroup &g) {
      return g.firstReader == first && g.lastUser == last;
    });
    if (group == plan.groups.end()) {
      plan.groups.push_back({{copy}, first, last});
    } else {
      group->copies.push_back(copy);
    }
  }

  for (Operation &op : entry) {
    if (&op == plan.loop.getOperation())
      break;
    if (auto copy = dyn_cast<CopyOp>(op); copy && isGlobalToShared(copy))
      plan.preLoopCopies.push_back(copy);
  }

  // What the producer must compute: copy indices (in and before the loop)
  // and the loop bounds.
  auto carried = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &body && arg != plan.loop.getInductionVar();
  };
  llvm::SetVector<Operation *> loopSlice;
  SmallVector<Value> needed;
  for (CopyOp copy : loopCopies)
    if (failed(collectSlice(body, llvm::to_vector(copy.getSourceIndices()),
                            carried, loopSlice, needed, why)))
      return failure();
  needed.append({plan.loop.getLowerBound(), plan.loop.getUpperBound(),
                 plan.loop.getStep()});
  for (CopyOp copy : plan.preLoopCopies)
    llvm::append_range(needed, copy.getSourceIndices());
  llvm::SetVector<Operation *> prologue;
  SmallVector<Value> external;
  if (failed(collectSlice(entry, needed, [](Value) { return false; }, prologue,
                          external, why)))
    return failure();
  plan.producerLoopOps = loopSlice.takeVector();
  llvm::sort(plan.producerLoopOps,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  plan.producerPrologue = prologue.takeVector();
  llvm::sort(plan.producerPrologue,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return plan;
}

Value constantIndex(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(builder, loc, value);
}

/// `stage = it % S` and `parity = (it / S) % 2` of the loop's iteration
/// `it` counted from its start, at the start of its body.
std::pair<Value, Value> stageAndParity(OpBuilder &builder, scf::ForOp loop,
                                       int64_t stages) {
  OpBuilder::InsertionGuard guard(builder);
  Value iteration = createIterationIndex(builder, loop);
  builder.setInsertionPointAfterValue(iteration);
  Location loc = loop.getLoc();
  Value stageCount = constantIndex(builder, loc, stages);
  Value stage = arith::RemUIOp::create(builder, loc, iteration, stageCount);
  Value round = arith::DivUIOp::create(builder, loc, iteration, stageCount);
  Value parity =
      arith::RemUIOp::create(builder, loc, round, constantIndex(builder, loc, 2));
  return {stage, parity};
}

/// `buffer[stage]` of a staged buffer.
Value stageView(OpBuilder &builder, Location loc, Value staged, Value stage) {
  auto type = cast<MemRefType>(staged.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, builder.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes(rank, builder.getIndexAttr(1));
  SmallVector<OpFoldResult> strides(rank, builder.getIndexAttr(1));
  offsets[0] = stage;
  for (int64_t d = 1; d < rank; ++d)
    sizes[d] = builder.getIndexAttr(type.getShape()[d]);
  auto viewType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().drop_front(), type, offsets, sizes, strides);
  return memref::SubViewOp::create(builder, loc, cast<MemRefType>(viewType),
                                   staged, offsets, sizes, strides);
}

/// Registers per consumer thread: as many as the register file allows once
/// the producer warpgroup has its share (one block per SM), a multiple of 8,
/// at most 240.
int64_t consumerRegisters(int64_t consumerThreads) {
  int64_t available =
      (kRegisterFile - kProducerThreads * kProducerRegisters) / consumerThreads;
  return std::min<int64_t>(kMaxConsumerRegisters, available / 8 * 8);
}

/// Whether moving registers from the producer to the consumers gives the
/// consumers more than an even split of the register file would: with one
/// consumer warpgroup every thread can have 240 registers anyway (and ptxas
/// cannot then tell the entry register count: warning C7508).
bool reallocationPays(int64_t consumerThreads) {
  int64_t evenSplit =
      kRegisterFile / (consumerThreads + kProducerThreads) / 8 * 8;
  return evenSplit < consumerRegisters(consumerThreads);
}

void specialize(gpu::GPUFuncOp func, Plan &plan) {
  MLIRContext *context = func.getContext();
  Block &entry = func.getBody().front();
  Location loc = plan.loop.getLoc();
  OpBuilder builder(context);
  int64_t stages = plan.stages;
  int64_t groupCount = plan.groups.size();
  int64_t consumers = plan.consumerThreads;

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

  // 2. Barriers: S·G forward (one TMA arrival) and S·G back-pressure (every
  // consumer thread), plus one per load before the loop.
  auto barrierArray = [&](int64_t slots, int64_t count) -> Value {
    if (slots == 0)
      return Value();
    return AllocBarrierOp::create(
        builder, loc, BarrierArrayType::get(context, slots),
        builder.getDenseI64ArrayAttr(SmallVector<int64_t>(slots, count)));
  };
  Value full = barrierArray(stages * groupCount, 1);
  Value empty = barrierArray(stages * groupCount, consumers);
  Value preLoop = barrierArray(plan.preLoopCopies.size(), 1);

  // 3. Staged buffers: a leading dimension S.
  DenseMap<Value, Value> staged;
  for (memref::AllocOp alloc : plan.buffers) {
    MemRefType type = alloc.getType();
    SmallVector<int64_t> shape = {stages};
    llvm::append_range(shape, type.getShape());
    auto stagedType = MemRefType::get(shape, type.getElementType(),
                                      MemRefLayoutAttrInterface(),
                                      type.getMemorySpace());
    auto stagedAlloc = memref::AllocOp::create(builder, alloc.getLoc(),
                                               stagedType, ValueRange{},
                                               alloc->getAttrs());
    staged[alloc.getResult()] = stagedAlloc.getResult();
  }

  // Which staged buffer each loop copy fills (the consumer rewrite below
  // replaces the copies' destinations).
  DenseMap<Operation *, Value> stagedOfCopy;
  for (ProducerGroup &group : plan.groups)
    for (CopyOp copy : group.copies)
      stagedOfCopy[copy] = staged.lookup(copy.getDest());

  // 4. The roles: producer warpgroup first (threads 0-127), consumers after.
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value producerEnd = constantIndex(builder, loc, kProducerThreads);
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
  scf::IfOp producer = roleRegion(isProducer, "producer", 0, kProducerThreads);
  scf::IfOp consumer =
      roleRegion(isConsumer, "consumer", kProducerThreads, consumers);

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
  bool reallocate = reallocationPays(consumers);
  if (reallocate)
    NVVM::SetMaxRegisterOp::create(builder, loc, consumerRegisters(consumers),
                                   NVVM::SetMaxRegisterAction::increase);
  Value consumerTid = arith::SubIOp::create(
      builder, loc, gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x),
      producerEnd);
  consumer.walk([&](gpu::ThreadIdOp op) {
    if (op.getDimension() == gpu::Dimension::x &&
        op.getResult() != consumerTid.getDefiningOp()->getOperand(0))
      op.getResult().replaceAllUsesWith(consumerTid);
  });
  for (auto [index, copy] : llvm::enumerate(plan.preLoopCopies)) {
    builder.setInsertionPoint(copy);
    MBarrierWaitParityOp::create(builder, copy.getLoc(), preLoop,
                                 constantIndex(builder, loc, index),
                                 constantIndex(builder, loc, 0));
  }
  scf::ForOp loop = plan.loop;
  loop->removeAttr(TileDialect::kNumStagesAttrName);
  auto [stage, parity] = stageAndParity(builder, loop, stages);
  builder.setInsertionPointAfterValue(parity);
  for (memref::AllocOp alloc : plan.buffers) {
    Value view = stageView(builder, alloc.getLoc(), staged[alloc.getResult()], stage);
    SmallVector<memref::SubViewOp> subviews;
    for (Operation *user : alloc->getUsers())
      if (auto subview = dyn_cast<memref::SubViewOp>(user))
        subviews.push_back(subview);
    alloc.getResult().replaceUsesWithIf(view, [&](OpOperand &use) {
      return loop->isAncestor(use.getOwner());
    });
    // Subviews of the buffer now view a stage (a strided, offset memref):
    // rebuild them so their result types follow.
    for (memref::SubViewOp subview : subviews) {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(subview);
      auto rebuilt = memref::SubViewOp::create(
          builder, subview.getLoc(), subview.getSource(),
          subview.getMixedOffsets(), subview.getMixedSizes(),
          subview.getMixedStrides());
      subview.getResult().replaceAllUsesWith(rebuilt.getResult());
      subview.erase();
    }
  }
  auto slotOf = [&](OpBuilder &b, Value stageValue, int64_t group) -> Value {
    Value base = arith::MulIOp::create(b, loc, stageValue,
                                       constantIndex(b, loc, groupCount));
    return arith::AddIOp::create(b, loc, base, constantIndex(b, loc, group));
  };
  for (auto [g, group] : llvm::enumerate(plan.groups)) {
    builder.setInsertionPoint(group.firstReader);
    MBarrierWaitParityOp::create(builder, loc, full, slotOf(builder, stage, g),
                                 parity);
    builder.setInsertionPointAfter(group.lastUser);
    MBarrierArriveOp::create(builder, loc, empty, slotOf(builder, stage, g), 1);
  }

  // 6. Producer: its share of registers, the index computations, and the
  // loads, each stage waiting for the consumers to release it.
  builder.setInsertionPointToStart(&producer.getThenRegion().front());
  if (reallocate)
    NVVM::SetMaxRegisterOp::create(builder, loc, kProducerRegisters,
                                   NVVM::SetMaxRegisterAction::decrease);
  IRMapping mapping;
  for (Operation *op : plan.producerPrologue)
    builder.clone(*op, mapping);
  auto leaderArrive = [&](Value barriers, Value slot) {
    Value leader = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                         gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x),
                                         constantIndex(builder, loc, 0));
    auto ifOp = scf::IfOp::create(builder, loc, leader, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
    MBarrierArriveOp::create(builder, loc, barriers, slot, 1);
  };
  for (auto [index, copy] : llvm::enumerate(plan.preLoopCopies)) {
    Value slot = constantIndex(builder, loc, index);
    SmallVector<Value> indices;
    for (Value v : copy.getSourceIndices())
      indices.push_back(mapping.lookupOrDefault(v));
    TmaCopyOp::create(builder, copy.getLoc(), preLoop, slot, copy.getSource(),
                      indices, copy.getDest());
    leaderArrive(preLoop, slot);
  }
  auto producerLoop = scf::ForOp::create(
      builder, loc, mapping.lookupOrDefault(loop.getLowerBound()),
      mapping.lookupOrDefault(loop.getUpperBound()),
      mapping.lookupOrDefault(loop.getStep()));
  {
    OpBuilder::InsertionGuard guard(builder);
    auto [pStage, pParity] = stageAndParity(builder, producerLoop, stages);
    builder.setInsertionPointAfterValue(pParity);
    // A fresh barrier's phase 1 counts as complete: the first S waits on
    // "empty" pass at once.
    Value emptyParity = arith::XOrIOp::create(builder, loc, pParity,
                                              constantIndex(builder, loc, 1));
    IRMapping loopMapping = mapping;
    loopMapping.map(loop.getInductionVar(), producerLoop.getInductionVar());
    for (Operation *op : plan.producerLoopOps)
      builder.clone(*op, loopMapping);
    for (auto [g, group] : llvm::enumerate(plan.groups)) {
      Value slot = slotOf(builder, pStage, g);
      MBarrierWaitParityOp::create(builder, loc, empty, slot, emptyParity);
      for (CopyOp copy : group.copies) {
        SmallVector<Value> indices;
        for (Value v : copy.getSourceIndices())
          indices.push_back(loopMapping.lookupOrDefault(v));
        Value view = stageView(builder, copy.getLoc(),
                               stagedOfCopy.lookup(copy), pStage);
        TmaCopyOp::create(builder, copy.getLoc(), full, slot, copy.getSource(),
                          indices, view);
      }
      leaderArrive(full, slot);
    }
  }

  // 7. The loop's copies moved to the producer; the old buffers are gone.
  for (ProducerGroup &group : plan.groups)
    for (CopyOp copy : group.copies)
      copy.erase();
  for (CopyOp copy : plan.preLoopCopies)
    copy.erase();
  for (memref::AllocOp alloc : plan.buffers)
    alloc.erase();
  func.setKnownBlockSizeAttr(builder.getDenseI32ArrayAttr(
      {int32_t(consumers + kProducerThreads), 1, 1}));
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
