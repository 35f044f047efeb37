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

/// The cp.async copies of one producer group: one commit group per
/// iteration.
struct CommitGroup {
  SmallVector<CopyOp> copies;
  Operation *firstReader = nullptr;
  Operation *lastUser = nullptr;
};

/// Clones, under `condition`, the index computations of the loop iteration
/// whose induction value is `inductionValue`; `issue` emits the copies with
/// the mapping.
void underIteration(OpBuilder &builder, LoopLoads &loads, Value condition,
                    Value inductionValue,
                    function_ref<void(const IRMapping &)> issue) {
  Location loc = loads.loop.getLoc();
  auto ifOp = scf::IfOp::create(builder, loc, condition, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&ifOp.getThenRegion().front());
  IRMapping mapping;
  mapping.map(loads.loop.getInductionVar(), inductionValue);
  for (Operation *op : loads.loopOps)
    builder.clone(*op, mapping);
  issue(mapping);
}

/// Issues, under `condition`, the TMA loads of the loop iteration whose
/// induction value is `inductionValue` into version `stage` of the staged
/// buffers, on slot `stage` of `full`; one thread arrives.
void issueTmaLoads(OpBuilder &builder, LoopLoads &loads,
                   ArrayRef<CopyOp> copies,
                   const DenseMap<Operation *, Value> &stagedOfCopy, Value full,
                   Value condition, Value inductionValue, Value stage) {
  underIteration(builder, loads, condition, inductionValue,
                 [&](const IRMapping &mapping) {
                   // Every load of the iteration on the version's one
                   // barrier (count 1): a single arrive.
                   issueCopiesAndArrive(
                       builder, loads.loop.getLoc(), copies, mapping, full,
                       stage, [&](CopyOp copy) {
                         return stageView(builder, copy.getLoc(),
                                          stagedOfCopy.lookup(copy), stage);
                       });
                 });
}

/// Issues, under `condition`, the cp.async copies of `group` for the
/// iteration whose induction value is `inductionValue` into version
/// `stage`, then commits a group (always: the wait counts assume a fixed
/// number of commit groups per iteration, empty ones included).
void issueCommitGroup(OpBuilder &builder, LoopLoads &loads,
                      const CommitGroup &group,
                      const DenseMap<Operation *, Value> &stagedOfCopy,
                      Value condition, Value inductionValue, Value stage) {
  underIteration(builder, loads, condition, inductionValue,
                 [&](const IRMapping &mapping) {
                   for (CopyOp copy : group.copies) {
                     SmallVector<Value> indices;
                     for (Value index : copy.getSourceIndices())
                       indices.push_back(mapping.lookupOrDefault(index));
                     CpAsyncOp::create(builder, copy.getLoc(),
                                       copy.getSource(), indices,
                                       stageView(builder, copy.getLoc(),
                                                 stagedOfCopy.lookup(copy),
                                                 stage));
                   }
                 });
  NVVM::CpAsyncCommitGroupOp::create(builder, loads.loop.getLoc());
}

/// The induction value `step * offset` iterations after `base`.
Value inductionAfter(OpBuilder &builder, scf::ForOp loop, Value base,
                     int64_t offset) {
  Location loc = loop.getLoc();
  Value distance = arith::MulIOp::create(builder, loc, loop.getStep(),
                                         constantIndex(builder, loc, offset));
  return arith::AddIOp::create(builder, loc, base, distance);
}

Value isBefore(OpBuilder &builder, Location loc, Value induction, Value bound) {
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt,
                               induction, bound);
}

void pipeline(gpu::GPUFuncOp func, LoopLoads &loads) {
  MLIRContext *context = func.getContext();
  scf::ForOp loop = loads.loop;
  Location loc = loop.getLoc();
  int64_t stages = loads.stages;
  OpBuilder builder(context);

  // TMA copies prefetch S - 1 iterations ahead on one barrier per version
  // (S >= 2: with one version there is nothing to prefetch into, and they
  // stay synchronous copies). cp.async copies form one commit group per
  // producer group, prefetched S iterations ahead into the version their
  // group's last user just released.
  SmallVector<CopyOp> tmaCopies;
  SmallVector<CommitGroup> commitGroups;
  for (ProducerGroup &group : loads.groups) {
    CommitGroup commit{{}, group.firstReader, group.lastUser};
    for (CopyOp copy : group.copies) {
      if (copy.getCopyEngine() == CopyEngine::cp_async)
        commit.copies.push_back(copy);
      else
        tmaCopies.push_back(copy);
    }
    if (!commit.copies.empty())
      commitGroups.push_back(commit);
  }
  bool prefetchTma = !tmaCopies.empty() && stages >= 2;
  // Commit groups are issued where their last user releases a version, so
  // they are committed in the order of their last use.
  llvm::stable_sort(commitGroups, [](const CommitGroup &a, const CommitGroup &b) {
    if (a.lastUser != b.lastUser)
      return a.lastUser->isBeforeInBlock(b.lastUser);
    return a.firstReader->isBeforeInBlock(b.firstReader);
  });

  SmallVector<CopyOp> pipelined;
  if (prefetchTma)
    pipelined = tmaCopies;
  for (CommitGroup &group : commitGroups)
    llvm::append_range(pipelined, group.copies);

  // One barrier per version (one TMA arrival each), at the kernel's top
  // level where barrier initialization expects it.
  Value full;
  if (prefetchTma) {
    builder.setInsertionPointToStart(&func.getBody().front());
    full = AllocBarrierOp::create(
        builder, loc, BarrierArrayType::get(context, stages),
        builder.getDenseI64ArrayAttr(SmallVector<int64_t>(stages, 1)));
  }

  SmallVector<memref::AllocOp> stagedAllocs;
  DenseMap<Value, Value> staged;
  for (CopyOp copy : pipelined) {
    auto alloc = copy.getDest().getDefiningOp<memref::AllocOp>();
    if (staged.count(alloc.getResult()))
      continue;
    builder.setInsertionPointAfter(alloc);
    staged[alloc.getResult()] = createStagedBuffer(builder, alloc, stages);
    stagedAllocs.push_back(alloc);
  }
  DenseMap<Operation *, Value> stagedOfCopy;
  for (CopyOp copy : pipelined)
    stagedOfCopy[copy] = staged.lookup(copy.getDest());

  // Inside loops around it (a persistent kernel), the versions' barrier
  // phases run on across their iterations: count the pipelined loop's
  // iterations in a counter carried through all of them, and take
  // versions and parities from it.
  Value entryCount;
  if (!loads.outerLoops.empty()) {
    IRRewriter rewriter(builder);
    SmallVector<scf::ForOp> chain(loads.outerLoops);
    chain.push_back(loop);
    rewriter.setInsertionPoint(chain.front());
    Value zero = constantIndex(rewriter, loc, 0);
    SmallVector<scf::ForOp> grown = carryCounters(
        rewriter, chain, {zero},
        [&](OpBuilder &b, Location yieldLoc, ArrayRef<BlockArgument> counts) {
          return SmallVector<Value>{arith::AddIOp::create(
              b, yieldLoc, counts[0], constantIndex(b, yieldLoc, 1))};
        });
    loop = grown.back();
    loads.loop = loop;
    loads.outerLoops.assign(grown.begin(), grown.end() - 1);
    entryCount = loop.getInitArgs().back();
  }

  // Prologue: TMA loads of iterations 0 .. S-2, commit groups of
  // iterations 0 .. S-1 (those that exist).
  builder.setInsertionPoint(loop);
  for (int64_t i = 0; i < stages; ++i) {
    Value induction = inductionAfter(builder, loop, loop.getLowerBound(), i);
    Value exists = isBefore(builder, loc, induction, loop.getUpperBound());
    Value version = constantIndex(builder, loc, i);
    if (entryCount)
      version = arith::RemUIOp::create(
          builder, loc, arith::AddIOp::create(builder, loc, entryCount, version),
          constantIndex(builder, loc, stages));
    if (prefetchTma && i + 1 < stages)
      issueTmaLoads(builder, loads, tmaCopies, stagedOfCopy, full, exists,
                    induction, version);
    for (CommitGroup &group : commitGroups)
      issueCommitGroup(builder, loads, group, stagedOfCopy, exists, induction,
                       version);
  }

  // The loop computes on version it % S.
  loop->removeAttr(TileDialect::kNumStagesAttrName);
  Value stage, parity;
  if (entryCount) {
    builder.setInsertionPointToStart(loop.getBody());
    std::tie(stage, parity) = stageAndParityOf(
        builder, loc, loop.getRegionIterArgs().back(), stages);
  } else {
    std::tie(stage, parity) = stageAndParity(builder, loop, stages);
  }
  builder.setInsertionPointAfterValue(parity);
  for (memref::AllocOp alloc : stagedAllocs)
    replaceInLoop(builder, alloc,
                  loop, stageView(builder, alloc.getLoc(),
                                  staged[alloc.getResult()], stage));
  Value afterParity = parity;

  if (prefetchTma) {
    // Prefetch iteration it + S - 1 into version (it + S - 1) % S, which
    // iteration it - 1 read: every thread must be done with it before TMA
    // overwrites it (write after read).
    Value nextInduction =
        inductionAfter(builder, loop, loop.getInductionVar(), stages - 1);
    Value nextExists = isBefore(builder, loc, nextInduction, loop.getUpperBound());
    Value nextStage = arith::RemUIOp::create(
        builder, loc,
        arith::AddIOp::create(builder, loc, stage,
                              constantIndex(builder, loc, stages - 1)),
        constantIndex(builder, loc, stages));
    createRoleSync(builder, loc, loop);
    issueTmaLoads(builder, loads, tmaCopies, stagedOfCopy, full, nextExists,
                  nextInduction, nextStage);
    Operation *firstReader = nullptr;
    for (ProducerGroup &group : loads.groups)
      if (llvm::any_of(group.copies, [&](CopyOp copy) {
            return llvm::is_contained(tmaCopies, copy);
          }) &&
          (!firstReader || group.firstReader->isBeforeInBlock(firstReader)))
        firstReader = group.firstReader;
    builder.setInsertionPoint(firstReader);
    MBarrierWaitParityOp::create(builder, loc, full, stage, parity);
  }

  if (!commitGroups.empty()) {
    builder.setInsertionPointAfterValue(afterParity);
    Value nextInduction =
        inductionAfter(builder, loop, loop.getInductionVar(), stages);
    Value nextExists = isBefore(builder, loc, nextInduction, loop.getUpperBound());
    // Before a group's first reader, wait until at most N commit groups
    // are pending, N counting those committed after it: the later groups
    // of its own round, S - 1 whole rounds, and this iteration's commits
    // that come before the reader (their last users precede it).
    int64_t groupCount = commitGroups.size();
    DenseMap<Operation *, int64_t> pendingAt;
    SmallVector<Operation *> readers;
    for (auto [order, group] : llvm::enumerate(commitGroups)) {
      int64_t committedBefore = llvm::count_if(commitGroups, [&](const CommitGroup &g) {
        return g.lastUser->isBeforeInBlock(group.firstReader);
      });
      int64_t pending = (groupCount - int64_t(order) - 1) +
                        (stages - 1) * groupCount + committedBefore;
      auto [it, inserted] = pendingAt.try_emplace(group.firstReader, pending);
      if (inserted)
        readers.push_back(group.firstReader);
      else
        it->second = std::min(it->second, pending);
    }
    for (Operation *reader : readers) {
      builder.setInsertionPoint(reader);
      NVVM::CpAsyncWaitGroupOp::create(builder, loc, pendingAt[reader]);
      // This thread's chunks are in shared memory: make them visible to
      // the async proxy (wgmma), then wait for every thread's.
      NVVM::FenceProxyOp::create(
          builder, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(context, NVVM::SharedSpace::shared_cta));
      createRoleSync(builder, loc, reader);
    }
    // After a last user, every thread is done with version it % S: refill
    // it with iteration it + S.
    for (size_t i = 0; i < commitGroups.size();) {
      Operation *lastUser = commitGroups[i].lastUser;
      builder.setInsertionPointAfter(lastUser);
      createRoleSync(builder, loc, lastUser);
      for (; i < commitGroups.size() && commitGroups[i].lastUser == lastUser; ++i)
        issueCommitGroup(builder, loads, commitGroups[i], stagedOfCopy,
                         nextExists, nextInduction, stage);
    }
  }

  for (CopyOp copy : pipelined)
    copy.erase();
  for (memref::AllocOp alloc : stagedAllocs)
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
      bool cpAsync = llvm::any_of(loads->groups, [](ProducerGroup &group) {
        return anyCpAsync(group.copies);
      });
      if (loads->stages < 2 && !cpAsync)
        return; // nothing to prefetch into
      pipeline(func, *loads);
    });
  }
};
} // namespace
