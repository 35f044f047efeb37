//===- LoopLoads.cpp - The loads of a pipelined loop ----------------------===//

#include "LoopLoads.h"
#include "Utils.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace {
bool isGlobalToShared(CopyOp copy) {
  return isSharedMemory(cast<MemRefType>(copy.getDest().getType())) &&
         isGlobalMemory(cast<MemRefType>(copy.getSource().getType()));
}

/// The ancestor of `op` in `block`, or null.
Operation *ancestorIn(Block &block, Operation *op) {
  return block.findAncestorOpInBlock(*op);
}

/// Whether `value` is a constant global's memref (memref.get_global of a
/// `constant` memref.global: a persistent kernel's tile lists).
bool isConstantGlobal(Value value) {
  auto get = value.getDefiningOp<memref::GetGlobalOp>();
  if (!get)
    return false;
  auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
      get, get.getNameAttr());
  return global && global.getConstant();
}

/// A load the producer may repeat: it reads memory that no thread writes,
/// so every thread reads the same value whenever it loads: a kernel
/// argument in global memory that the kernel only ever loads from or takes
/// sizes of (a varlen kernel's sequence offsets, a persistent kernel's tile
/// table) or a constant global.
bool isReadOnlyLoad(Operation *op) {
  auto load = dyn_cast<memref::LoadOp>(op);
  if (!load || isSharedMemory(load.getMemRefType()))
    return false;
  if (isConstantGlobal(load.getMemRef()))
    return true;
  auto argument = dyn_cast<BlockArgument>(load.getMemRef());
  if (!argument || !isa<gpu::GPUFuncOp>(argument.getOwner()->getParentOp()) ||
      !argument.getOwner()->isEntryBlock())
    return false;
  return llvm::all_of(argument.getUsers(), [](Operation *user) {
    return isa<memref::LoadOp, memref::DimOp>(user);
  });
}

/// An integer division (by a run-time size, so not speculatable) that every
/// thread runs unconditionally: in the kernel's entry block, or directly in
/// the body of a non-pipelined loop whose enclosing ops up to the entry
/// block are all such loops (a persistent kernel's tile loop). The producer
/// runs the same iterations of those loops, so computing it too computes what
/// the consumers do; a pipelined loop's body is computed ahead of its
/// iteration, where it may divide by zero before the loop gets there.
bool isUnconditionalDivision(Operation *op) {
  if (!isa<arith::DivUIOp, arith::DivSIOp, arith::RemUIOp, arith::RemSIOp,
           arith::CeilDivUIOp, arith::CeilDivSIOp, arith::FloorDivSIOp>(op))
    return false;
  Block *block = op->getBlock();
  Operation *parent = op->getParentOp();
  while (auto loop = dyn_cast<scf::ForOp>(parent)) {
    if (loop->hasAttr(TileDialect::kNumStagesAttrName))
      return false;
    block = loop->getBlock();
    parent = loop->getParentOp();
  }
  return isa<gpu::GPUFuncOp>(parent) && block->isEntryBlock();
}

/// The `tile.gemm_wait` that completes an async gemm: the user of its
/// result in its block (following async gemms that take it as their
/// accumulator), provided the wait's `pending` count is at most the number
/// of async gemms issued after this one and before the wait (each is one
/// wgmma group; the oldest groups complete first). Null otherwise.
GemmWaitOp completingWait(GemmOp gemm) {
  Value result = gemm.getResult();
  while (true) {
    if (!result.hasOneUse())
      return {};
    Operation *user = *result.getUsers().begin();
    if (user->getBlock() != gemm->getBlock())
      return {};
    if (auto wait = dyn_cast<GemmWaitOp>(user)) {
      int64_t later = 0;
      for (Operation *op = gemm->getNextNode(); op != wait;
           op = op->getNextNode()) {
        // A gemm inside a region may or may not issue: do not count on it.
        if (op->getNumRegions() != 0 &&
            op->walk([](GemmOp) { return WalkResult::interrupt(); })
                .wasInterrupted())
          return {};
        if (auto other = dyn_cast<GemmOp>(op); other && other.getAsync())
          ++later;
      }
      return int64_t(wait.getPending()) <= later ? wait : GemmWaitOp();
    }
    auto next = dyn_cast<GemmOp>(user);
    if (!next || !next.getAsync() || next.getAcc() != result)
      return {};
    result = next.getResult();
  }
}

/// Collects, in program order, the ops of `block` that `roots` depend on
/// (transitively, through operands), stopping at values defined outside the
/// block. Fails with `why` if one is not a pure op without regions (or a
/// read-only argument load, or an unconditional division) or reads a value
/// `forbidden` rejects (a loop-carried value).
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
    if (isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::SubgroupIdOp,
            gpu::BlockDimOp>(def)) {
      why = "a copy index, guard or loop bound depends on the thread "
            "(the producer's threads are not the consumers')";
      return failure();
    }
    if ((!isPure(def) && !isReadOnlyLoad(def) &&
         !isUnconditionalDivision(def)) ||
        def->getNumRegions() != 0) {
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

/// Whether `user` of a loaded buffer only reads it, and is done reading
/// when it completes in its block: a synchronous tile.gemm or an async one
/// whose completing wait is in its block (it reads the buffer until then,
/// so that wait is the last use a release follows), a memref.load (a
/// thread's load is done when it returns, before the thread reaches the
/// release), or a subview (a warpgroup's rows) that only such ops use.
bool onlyReads(Operation *user) {
  auto reader = [](Operation *op) {
    if (auto gemm = dyn_cast<GemmOp>(op))
      return !gemm.getAsync() || bool(completingWait(gemm));
    return isa<memref::LoadOp>(op);
  };
  if (reader(user))
    return true;
  auto subview = dyn_cast<memref::SubViewOp>(user);
  return subview && llvm::all_of(subview->getUsers(), reader);
}

/// The first and last ops of `scope` that read `buffer`, which `copy`
/// fills: its other users and its subviews' users (a subview only computes
/// an address), an async gemm reading until its completing wait. Null and
/// null when nothing reads it; failure when a reader is outside `scope`.
FailureOr<std::pair<Operation *, Operation *>>
readSpan(Value buffer, Operation *copy, Block &scope) {
  SmallVector<Operation *> readers;
  for (Operation *user : buffer.getUsers()) {
    if (user == copy)
      continue;
    if (isa<memref::SubViewOp>(user))
      llvm::append_range(readers, user->getUsers());
    else
      readers.push_back(user);
  }
  for (size_t r = 0, e = readers.size(); r < e; ++r)
    if (auto gemm = dyn_cast<GemmOp>(readers[r]); gemm && gemm.getAsync())
      readers.push_back(completingWait(gemm));
  Operation *first = nullptr, *last = nullptr;
  for (Operation *reader : readers) {
    Operation *top = reader ? ancestorIn(scope, reader) : nullptr;
    if (!top)
      return failure();
    if (!first || top->isBeforeInBlock(first))
      first = top;
    if (!last || last->isBeforeInBlock(top))
      last = top;
  }
  return std::make_pair(first, last);
}

/// Whether kernel argument `argument` is only read: every user loads from
/// it (memref.load, or a tile.copy with it as the source) or takes its
/// sizes (memref.dim: a kernel of run-time shapes). A tile load released
/// before a store into its source could otherwise read the next tile's
/// rows before the store lands.
bool isReadOnlyArgument(BlockArgument argument) {
  return llvm::all_of(argument.getUsers(), [&](Operation *user) {
    if (auto copy = dyn_cast<CopyOp>(user))
      return copy.getSource() == argument && copy.getDest() != argument;
    return isa<memref::LoadOp, memref::DimOp>(user);
  });
}

/// The copies at the top level of `outer`'s body before `inner` that the
/// producer can issue once per iteration of `outer` (TileLoad): global ->
/// shared, from a kernel argument the kernel only reads into a whole static
/// allocation of the kernel that only readers (onlyReads) inside `outer`
/// use after it, with indices the producer can compute (pure ops of the
/// body and of the kernel's entry block). Others stay where they are.
SmallVector<TileLoad> findTileLoads(scf::ForOp outer, scf::ForOp inner) {
  SmallVector<TileLoad> loads;
  Block &body = *outer.getBody();
  if (inner->getBlock() != &body)
    return loads;
  Block &entry = outer->getParentOfType<gpu::GPUFuncOp>().getBody().front();
  for (Operation &op : body) {
    if (&op == inner.getOperation())
      break;
    auto copy = dyn_cast<CopyOp>(op);
    if (!copy || !isGlobalToShared(copy))
      continue;
    auto source = dyn_cast<BlockArgument>(copy.getSource());
    auto dest = copy.getDest().getDefiningOp<memref::AllocOp>();
    if (!source || source.getOwner() != &entry ||
        !isReadOnlyArgument(source) || !dest ||
        dest->getBlock() != &entry || !dest.getType().hasStaticShape())
      continue;
    if (!llvm::all_of(dest->getUsers(), [&](Operation *user) {
          return user == copy.getOperation() || onlyReads(user);
        }))
      continue;
    FailureOr<std::pair<Operation *, Operation *>> span =
        readSpan(dest.getResult(), copy, body);
    if (failed(span) || !span->first || span->first->isBeforeInBlock(copy))
      continue;
    // The producer recomputes the indices: pure ops of the body.
    llvm::SetVector<Operation *> slice;
    SmallVector<Value> outside;
    std::string why;
    auto carried = [&](Value value) {
      auto arg = dyn_cast<BlockArgument>(value);
      return arg && arg.getOwner() == &body && arg != outer.getInductionVar();
    };
    if (failed(collectSlice(body, llvm::to_vector(copy.getSourceIndices()),
                            carried, slice, outside, why)))
      continue;
    // And what they take from before the loop (not the thread's id).
    llvm::SetVector<Operation *> entrySlice;
    SmallVector<Value> external;
    if (failed(collectSlice(entry, outside, [](Value) { return false; },
                            entrySlice, external, why)))
      continue;
    loads.push_back({copy, span->first, span->second});
  }
  return loads;
}

} // namespace

FailureOr<LoopLoads> sinkattn::tile::analyzeLoopLoads(gpu::GPUFuncOp func,
                                                      std::string &why,
                                                      bool withTileLoads) {
  LoopLoads plan;
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
  // The loops around it (a persistent kernel's tile loop), each directly
  // in its parent's body, the outermost at the kernel's top level.
  for (Operation *parent = plan.loop->getParentOp();
       parent != func.getOperation(); parent = parent->getParentOp()) {
    auto outer = dyn_cast<scf::ForOp>(parent);
    if (!outer) {
      why = "the pipelined loop is inside '" +
            parent->getName().getStringRef().str() +
            "'; only scf.for loops may enclose it";
      return failure();
    }
    if (!outer.getInductionVar().getType().isIndex()) {
      why = "a loop around the pipelined loop does not count in index";
      return failure();
    }
    plan.outerLoops.insert(plan.outerLoops.begin(), outer);
  }
  Operation *topLevel =
      plan.outerLoops.empty() ? plan.loop.getOperation()
                              : plan.outerLoops.front().getOperation();
  if (topLevel->getBlock() != &entry) {
    why = "the pipelined loop is not at the top level of the kernel";
    return failure();
  }
  // The dialect verifies that the count is in [1, kMaxNumStages].
  plan.stages =
      plan.loop->getAttrOfType<IntegerAttr>(TileDialect::kNumStagesAttrName)
          .getInt();

  if (!plan.loop.getInductionVar().getType().isIndex()) {
    why = "the pipelined loop does not count in index";
    return failure();
  }
  Block &body = *plan.loop.getBody();
  SmallVector<CopyOp> loopCopies;
  DenseMap<Operation *, scf::IfOp> guardOf;
  bool unsupported = false;
  // The allocations the loop loads into.
  DenseSet<Operation *> loaded;
  plan.loop.walk([&](CopyOp copy) {
    if (isGlobalToShared(copy))
      loaded.insert(getSharedAllocation(copy.getDest()));
  });
  plan.loop.walk([&](Operation *op) {
    if (auto copy = dyn_cast<CopyOp>(op)) {
      // A store of a tile the loop does not load is synchronous (its
      // lowering syncs before and after): ordinary work of the body.
      auto source = cast<MemRefType>(copy.getSource().getType());
      if (isSharedMemory(source) &&
          !loaded.contains(getSharedAllocation(copy.getSource())))
        return;
      // At the top of the body, or at the top of the then-block of an
      // scf.if that is (a guard).
      auto guard = dyn_cast<scf::IfOp>(op->getParentOp());
      bool guarded = guard && guard->getBlock() == &body &&
                     op->getBlock() == &guard.getThenRegion().front();
      if (!isGlobalToShared(copy) || (op->getBlock() != &body && !guarded)) {
        unsupported = true;
        return;
      }
      loopCopies.push_back(copy);
      if (guarded)
        guardOf[op] = guard;
    } else if (isa<TmaCopyOp, TmaLoadOp, Im2colCopyOp, TmaIm2colLoadOp,
                   AllocBarrierOp, CpAsyncOp, CpAsyncArriveOp,
                   NVVM::CpAsyncCommitGroupOp, NVVM::CpAsyncWaitGroupOp>(op)) {
      unsupported = true;
    }
  });
  if (unsupported) {
    why = "the loop has copies other than global -> shared tile.copy at "
          "the top of its body or of a guard (user-managed barriers or "
          "cp.async groups, nested or shared -> global copies of loaded "
          "tiles)";
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
    // The producer reads the source too: a kernel argument.
    auto source = dyn_cast<BlockArgument>(copy.getSource());
    if (!source || source.getOwner() != &entry) {
      why = "a loop copy's source is not a kernel argument";
      return failure();
    }
    for (Operation *user : alloc->getUsers())
      if (!plan.loop->isAncestor(user) ||
          !(isa<CopyOp>(user) || onlyReads(user))) {
        why = "a buffer the loop fills is also used outside the loop or by "
              "an op other than a tile.gemm (synchronous, or async with a "
              "tile.gemm_wait in its block that completes it) or a "
              "memref.load (directly or through a subview)";
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
    scf::IfOp guard = guardOf.lookup(copy);
    Block &scope = guard ? guard.getThenRegion().front() : body;
    FailureOr<std::pair<Operation *, Operation *>> span =
        readSpan(copy.getDest(), copy, scope);
    if (failed(span)) {
      why = "a guarded copy's buffer is read outside its guard";
      return failure();
    }
    Operation *first = span->first, *last = span->second;
    if (!first || first->isBeforeInBlock(copy)) {
      why = "a loop copy is not read after it in the loop body";
      return failure();
    }
    if (guard) {
      for (Value index : copy.getSourceIndices())
        if (Operation *def = index.getDefiningOp(); def && guard->isAncestor(def)) {
          why = "a guarded copy's index is computed under its guard";
          return failure();
        }
      if (!llvm::is_contained(plan.guards, guard))
        plan.guards.push_back(guard);
    }
    auto group = llvm::find_if(plan.groups, [&](const ProducerGroup &g) {
      return g.firstReader == first && g.lastUser == last && g.guard == guard;
    });
    if (group == plan.groups.end()) {
      plan.groups.push_back({{copy}, first, last, guard});
    } else {
      group->copies.push_back(copy);
    }
  }

  for (Operation &op : entry) {
    if (&op == topLevel)
      break;
    if (auto copy = dyn_cast<CopyOp>(op); copy && isGlobalToShared(copy))
    {
      auto source = dyn_cast<BlockArgument>(copy.getSource());
      auto dest = copy.getDest().getDefiningOp<memref::AllocOp>();
      if (!source || source.getOwner() != &entry || !dest ||
          dest->getBlock() != &entry) {
        why = "a copy before the loop does not load a kernel argument into a "
              "whole allocation";
        return failure();
      }
      if (llvm::any_of(plan.preLoopCopies, [&](CopyOp other) {
            return other.getDest() == copy.getDest();
          })) {
        why = "two copies before the loop fill the same buffer";
        return failure();
      }
      plan.preLoopCopies.push_back(copy);
    }
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
  for (scf::IfOp guard : plan.guards)
    if (failed(collectSlice(body, {guard.getCondition()}, carried, loopSlice,
                            needed, why)))
      return failure();
  needed.append({plan.loop.getLowerBound(), plan.loop.getUpperBound(),
                 plan.loop.getStep()});
  if (withTileLoads && plan.outerLoops.size() == 1) {
    plan.tileLoads = findTileLoads(plan.outerLoops.front(), plan.loop);
    for (TileLoad &load : plan.tileLoads)
      llvm::append_range(needed, load.copy.getSourceIndices());
  }
  // Through the loops around it, innermost first: what their bodies compute
  // for the copies and the inner bounds, and their own bounds.
  plan.outerOps.resize(plan.outerLoops.size());
  for (int64_t level = plan.outerLoops.size() - 1; level >= 0; --level) {
    scf::ForOp outer = plan.outerLoops[level];
    Block &outerBody = *outer.getBody();
    auto outerCarried = [&](Value value) {
      auto arg = dyn_cast<BlockArgument>(value);
      return arg && arg.getOwner() == &outerBody &&
             arg != outer.getInductionVar();
    };
    llvm::SetVector<Operation *> levelSlice;
    SmallVector<Value> outside;
    if (failed(collectSlice(outerBody, needed, outerCarried, levelSlice,
                            outside, why)))
      return failure();
    plan.outerOps[level] = levelSlice.takeVector();
    llvm::sort(plan.outerOps[level], [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    needed = std::move(outside);
    needed.append({outer.getLowerBound(), outer.getUpperBound(),
                   outer.getStep()});
  }
  for (CopyOp copy : plan.preLoopCopies)
    llvm::append_range(needed, copy.getSourceIndices());
  llvm::SetVector<Operation *> prologue;
  SmallVector<Value> external;
  if (failed(collectSlice(entry, needed, [](Value) { return false; }, prologue,
                          external, why)))
    return failure();
  plan.loopOps = loopSlice.takeVector();
  llvm::sort(plan.loopOps,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  plan.prologue = prologue.takeVector();
  llvm::sort(plan.prologue,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return plan;
}


Value sinkattn::tile::constantIndex(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(builder, loc, value);
}

std::pair<Value, Value> sinkattn::tile::stageAndParity(OpBuilder &builder, scf::ForOp loop,
                                       int64_t stages) {
  OpBuilder::InsertionGuard guard(builder);
  Value iteration = createIterationIndex(builder, loop);
  builder.setInsertionPointAfterValue(iteration);
  return stageAndParityOf(builder, loop.getLoc(), iteration, stages);
}

Value sinkattn::tile::stageView(OpBuilder &builder, Location loc, Value staged, Value stage) {
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

std::pair<Value, Value> sinkattn::tile::stageAndParityOf(OpBuilder &builder,
                                                         Location loc,
                                                         Value count,
                                                         int64_t stages) {
  Value stageCount = constantIndex(builder, loc, stages);
  Value stage = arith::RemUIOp::create(builder, loc, count, stageCount);
  Value round = arith::DivUIOp::create(builder, loc, count, stageCount);
  Value parity =
      arith::RemUIOp::create(builder, loc, round, constantIndex(builder, loc, 2));
  return {stage, parity};
}

SmallVector<scf::ForOp> sinkattn::tile::carryCounters(
    RewriterBase &rewriter, ArrayRef<scf::ForOp> loops, ValueRange inits,
    function_ref<SmallVector<Value>(OpBuilder &, Location,
                                    ArrayRef<BlockArgument>)>
        next) {
  size_t count = inits.size();
  SmallVector<scf::ForOp> grown;
  SmallVector<Value> start(inits);
  for (auto [level, original] : llvm::enumerate(loops)) {
    scf::ForOp loop = original;
    bool innermost = level + 1 == loops.size();
    rewriter.setInsertionPoint(loop);
    auto rebuilt = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
        rewriter, start, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &b, Location loc, ArrayRef<BlockArgument> current) {
          // An outer loop yields what its inner loop ends with: patched
          // below, once that loop exists.
          if (!innermost)
            return SmallVector<Value>(current.begin(), current.end());
          return next(b, loc, current);
        }));
    grown.push_back(rebuilt);
    start.assign(rebuilt.getRegionIterArgs().take_back(count).begin(),
                 rebuilt.getRegionIterArgs().take_back(count).end());
  }
  for (size_t level = 0; level + 1 < grown.size(); ++level) {
    auto yield = cast<scf::YieldOp>(grown[level].getBody()->getTerminator());
    unsigned first = yield.getNumOperands() - count;
    for (size_t i = 0; i < count; ++i)
      yield->setOperand(first + i,
                        grown[level + 1].getResults().take_back(count)[i]);
  }
  return grown;
}

Value sinkattn::tile::countIf(OpBuilder &builder, Location loc, Value count,
                              Value condition) {
  Value increment = arith::SelectOp::create(
      builder, loc, condition, constantIndex(builder, loc, 1),
      constantIndex(builder, loc, 0));
  return arith::AddIOp::create(builder, loc, count, increment);
}

void sinkattn::tile::replaceInLoop(OpBuilder &builder, memref::AllocOp alloc,
                                   scf::ForOp loop, Value view) {
  SmallVector<memref::SubViewOp> subviews;
  for (Operation *user : alloc->getUsers())
    if (auto subview = dyn_cast<memref::SubViewOp>(user))
      if (loop->isAncestor(subview))
        subviews.push_back(subview);
  alloc.getResult().replaceUsesWithIf(view, [&](OpOperand &use) {
    return loop->isAncestor(use.getOwner());
  });
  // Subviews of the buffer now view a stage (a strided, offset memref):
  // rebuild them so their result types follow, dropping the same unit
  // dimensions as before (a rank-reducing subview, such as one row that
  // memref.load reads, keeps its rank).
  for (memref::SubViewOp subview : subviews) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(subview);
    auto resultType = cast<MemRefType>(
        memref::SubViewOp::inferRankReducedResultType(
            subview.getType().getShape(),
            cast<MemRefType>(subview.getSource().getType()),
            subview.getMixedOffsets(), subview.getMixedSizes(),
            subview.getMixedStrides()));
    auto rebuilt = memref::SubViewOp::create(
        builder, subview.getLoc(), resultType, subview.getSource(),
        subview.getMixedOffsets(), subview.getMixedSizes(),
        subview.getMixedStrides());
    subview.getResult().replaceAllUsesWith(rebuilt.getResult());
    subview.erase();
  }
}

Value sinkattn::tile::createStagedBuffer(OpBuilder &builder,
                                         memref::AllocOp alloc,
                                         int64_t stages) {
  MemRefType type = alloc.getType();
  SmallVector<int64_t> shape = {stages};
  llvm::append_range(shape, type.getShape());
  auto stagedType = MemRefType::get(shape, type.getElementType(),
                                    MemRefLayoutAttrInterface(),
                                    type.getMemorySpace());
  return memref::AllocOp::create(builder, alloc.getLoc(), stagedType,
                                 ValueRange{}, alloc->getAttrs());
}

bool sinkattn::tile::anyCpAsync(ArrayRef<CopyOp> copies) {
  return llvm::any_of(copies, [](CopyOp copy) {
    return copy.getCopyEngine() == CopyEngine::cp_async;
  });
}

int64_t sinkattn::tile::arrivalsPerPhase(ArrayRef<CopyOp> copies,
                                         int64_t roleThreads) {
  return anyCpAsync(copies) ? roleThreads : 1;
}

void sinkattn::tile::issueCopiesAndArrive(
    OpBuilder &builder, Location loc, ArrayRef<CopyOp> copies,
    const IRMapping &mapping, Value barriers, Value slot,
    function_ref<Value(CopyOp)> destinationOf) {
  for (CopyOp copy : copies) {
    SmallVector<Value> indices;
    for (Value index : copy.getSourceIndices())
      indices.push_back(mapping.lookupOrDefault(index));
    if (copy.getCopyEngine() == CopyEngine::cp_async)
      CpAsyncOp::create(builder, copy.getLoc(), copy.getSource(), indices,
                        destinationOf(copy));
    else
      TmaCopyOp::create(builder, copy.getLoc(), barriers, slot,
                        copy.getSource(), indices, destinationOf(copy));
  }
  if (anyCpAsync(copies)) {
    CpAsyncArriveOp::create(builder, loc, barriers, slot);
    return;
  }
  Value leader =
      createLeaderPredicate(builder, loc, builder.getInsertionBlock()->getParentOp());
  auto arrive = scf::IfOp::create(builder, loc, leader, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&arrive.getThenRegion().front());
  MBarrierArriveOp::create(builder, loc, barriers, slot, 1);
}
