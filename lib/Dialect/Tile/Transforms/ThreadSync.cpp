//===- ThreadSync.cpp - Barriers for shared-memory hazards between threads ===//
//
// Inserts a block (or role) barrier before an op that reads a shared tile
// other threads wrote since the last barrier (read after write), or writes a
// tile others read since then (write after read) — including across loop
// iterations — and nowhere else. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"
#include "Utils.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace sinkattn::tile;

namespace sinkattn::tile {
#define GEN_PASS_DEF_TILETHREADSYNC
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h.inc"
} // namespace sinkattn::tile

namespace {
/// One access to a shared allocation since the last barrier.
struct Record {
  Operation *allocation;
  /// The memref accessed (a view of the allocation).
  Value memref;
  /// The element indices of a single-element access (memref.load/store),
  /// empty for whole-tile accesses (tile.store, wgmma operands): two
  /// single-element accesses with the same index values touch the same
  /// element from the same thread, which is no hazard.
  SmallVector<Value, 4> indices;
  /// The thread-dependent loop or branch the access is inside (the op in
  /// the uniform code around it), or null.
  Operation *divergence;
  /// The warpgroup slice accessed (getWarpgroupSlice): only the executing
  /// warpgroup's threads made this access.
  std::optional<WarpgroupSlice> slice;
  /// A warpgroup barrier followed the access: it is ordered before later
  /// accesses to the same slice (by the same warpgroup), not before other
  /// warpgroups' accesses to the tile.
  bool warpgroupSynced = false;
};

bool dependsOnThreadId(Value value);

bool conflicts(const Record &earlier, Operation *allocation, Value memref,
               ArrayRef<Value> indices) {
  if (earlier.allocation != allocation)
    return false;
  if (earlier.indices.empty() || indices.empty())
    return true;
  // The same element of the same view, at an index that differs between
  // threads: each thread touches its own element. (A uniform index is the
  // same element for every thread: a broadcast, which conflicts.)
  bool sameElement = earlier.memref == memref &&
                     ArrayRef<Value>(earlier.indices) == indices &&
                     llvm::any_of(indices, dependsOnThreadId);
  return !sameElement;
}

/// Shared allocations touched by threads since the last barrier.
struct SyncState {
  SmallVector<Record> written, read;
  void clear() {
    written.clear();
    read.clear();
  }
  /// The executing warpgroup synchronized: its accesses to its slices
  /// (those `ordered` selects) are ordered before its later accesses to them.
  void markWarpgroupSynced(
      function_ref<bool(const Record &)> ordered = [](const Record &) {
        return true;
      }) {
    for (SmallVector<Record> *records : {&written, &read})
      for (Record &r : *records)
        r.warpgroupSynced |= r.slice.has_value() && ordered(r);
  }
  void merge(const SyncState &other) {
    llvm::append_range(written, other.written);
    llvm::append_range(read, other.read);
  }
};

/// The shared allocation behind `value`, if it is one this pass orders: not
/// one the kernel orders with its own mbarriers (tile.mbarrier_ordered).
Operation *sharedAllocation(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !isSharedMemory(type))
    return nullptr;
  memref::AllocOp alloc = getSharedAllocation(value);
  if (alloc && alloc->hasAttr(TileDialect::kMbarrierOrderedAttrName))
    return nullptr;
  return alloc;
}

/// A tile left to the kernel's mbarriers in a function that waits on none
/// is unordered: say so rather than compile a race.
LogicalResult checkMbarrierOrderedTiles(FunctionOpInterface func) {
  bool waits = false;
  func.walk([&](MBarrierWaitParityOp) { waits = true; });
  if (waits)
    return success();
  WalkResult result = func.walk([&](memref::AllocOp alloc) {
    if (!alloc->hasAttr(TileDialect::kMbarrierOrderedAttrName))
      return WalkResult::advance();
    alloc.emitOpError()
        << "is marked '" << TileDialect::kMbarrierOrderedAttrName
        << "' (the kernel orders its accesses with mbarriers), but the "
           "function waits on no mbarrier (tile.mbarrier_wait_parity)";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}

/// What `op` does to shared tiles, as seen by the other threads.
struct Access {
  struct Touch {
    Operation *allocation;
    Value memref;
    SmallVector<Value, 4> indices;
    std::optional<WarpgroupSlice> slice = getWarpgroupSlice(memref);
  };
  SmallVector<Touch, 2> reads, writes;
  /// The op synchronizes the block itself (or its lowering does): the
  /// state starts over before its own reads and writes are recorded (a
  /// store with `pending` syncs only before itself, and then reads its
  /// tile).
  bool synchronizes = false;
  /// As `synchronizes`, for the executing warpgroup only (a store of its
  /// slice of a tile): the state of its slices starts over.
  bool synchronizesWarpgroup = false;
};

Access classify(Operation *op) {
  Access access;
  auto copy = dyn_cast<CopyOp>(op);
  bool sliceStore = copy && getWarpgroupSlice(copy.getSource()).has_value();
  if (copy && (copy.getPending() || sliceStore)) {
    // A store with `pending` lowers with a sync before it and none after
    // (tile-lower-copies): its leader's wait for the earlier stores stands
    // for a read of the tile, which the next write must follow. The store
    // of a warpgroup's slice syncs only that warpgroup (and, without
    // `pending`, again after the store).
    (sliceStore ? access.synchronizesWarpgroup : access.synchronizes) = true;
    if (copy.getPending())
      if (Operation *alloc = sharedAllocation(copy.getSource()))
        access.reads.push_back({alloc, copy.getSource(), {}});
  } else if (auto named = dyn_cast<NVVM::BarrierOp>(op);
             named && named.getBarrierId() &&
             !matchPattern(named.getBarrierId(), m_Constant())) {
    // A barrier whose id depends on the thread's warpgroup: one
    // warpgroup's (createWarpgroupSync), or a ping-pong turn, which orders
    // the warpgroup before it ahead of this one but not the other way
    // round. Either way every thread of the executing warpgroup waits at
    // it; a role's barrier has a constant id.
    access.synchronizesWarpgroup = true;
  } else if (isa<gpu::BarrierOp, NVVM::BarrierOp, CopyOp, Im2colCopyOp>(op)) {
    // tile.copy / im2col_copy lower with a block sync before (and, for a
    // store, after) and a barrier wait for their data.
    access.synchronizes = true;
  } else if (auto store = dyn_cast<StoreOp>(op)) {
    if (Operation *alloc = sharedAllocation(store.getDest()))
      access.writes.push_back({alloc, store.getDest(), {}});
  } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
    if (Operation *alloc = sharedAllocation(store.getMemRef()))
      access.writes.push_back(
          {alloc, store.getMemRef(), llvm::to_vector<4>(store.getIndices())});
  } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
    if (Operation *alloc = sharedAllocation(load.getMemRef()))
      access.reads.push_back(
          {alloc, load.getMemRef(), llvm::to_vector<4>(load.getIndices())});
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    // wgmma reads whole tiles, written by any thread of the block.
    for (Value operand : {Value(gemm.getA()), Value(gemm.getB())})
      if (Operation *alloc = sharedAllocation(operand))
        access.reads.push_back({alloc, operand, {}});
  }
  return access;
}

/// Whether `value` differs between threads (depends on the thread id).
bool dependsOnThreadId(Value value) {
  SetVector<Operation *> slice;
  BackwardSliceOptions options;
  options.inclusive = true;
  (void)getBackwardSlice(value, &slice, options);
  return llvm::any_of(slice, [](Operation *op) {
    return isa<gpu::ThreadIdOp, gpu::LaneIdOp, gpu::SubgroupIdOp>(op);
  });
}

class ThreadSync {
public:
  /// Walks `block` from `state`, inserting barriers where a hazard needs
  /// one when `insert` is set; returns the state at the block's end.
  /// `divergence` is the thread-dependent loop or branch `block` is in (a
  /// barrier must go before it: not every thread reaches its body).
  SyncState run(Block &block, SyncState state, bool insert,
                Operation *divergence) {
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        Operation *inner = divergence;
        if (!inner && (dependsOnThreadId(loop.getLowerBound()) ||
                       dependsOnThreadId(loop.getUpperBound()) ||
                       dependsOnThreadId(loop.getStep())))
          inner = loop;
        // Loop-carried hazards: the body starts from what the loop was
        // entered with plus what an iteration leaves behind.
        SyncState end = run(*loop.getBody(), state, /*insert=*/false, inner);
        SyncState start = state;
        start.merge(end);
        state.merge(run(*loop.getBody(), start, insert, inner));
        continue;
      }
      if (auto branch = dyn_cast<scf::IfOp>(op)) {
        // Role regions split the block by design: each role syncs itself.
        Operation *inner = divergence;
        if (!inner && !branch->hasAttr(kThreadBaseAttrName) &&
            dependsOnThreadId(branch.getCondition()))
          inner = branch;
        SyncState merged =
            run(branch.getThenRegion().front(), state, insert, inner);
        if (!branch.getElseRegion().empty())
          merged.merge(run(branch.getElseRegion().front(), state, insert, inner));
        else
          merged.merge(state);
        state = merged;
        continue;
      }
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          state = run(inner, state, insert, divergence);
      Access access = classify(&op);
      if (access.synchronizes)
        state.clear();
      if (access.synchronizesWarpgroup)
        state.markWarpgroupSynced();
      // A hazard between accesses to the same warpgroup slice needs only
      // the warpgroup's barrier.
      bool hazard = false, sameRegion = false, acrossWarpgroups = false;
      auto check = [&](ArrayRef<Record> earlier, const Access::Touch &touch) {
        for (const Record &record : earlier) {
          bool sameSlice =
              touch.slice && record.slice && *touch.slice == *record.slice;
          if (record.warpgroupSynced && sameSlice)
            continue;
          if (conflicts(record, touch.allocation, touch.memref, touch.indices)) {
            hazard = true;
            sameRegion |= divergence && record.divergence == divergence;
            acrossWarpgroups |= !sameSlice;
          }
        }
      };
      for (const Access::Touch &touch : access.reads)
        check(state.written, touch); // read after write
      for (const Access::Touch &touch : access.writes)
        check(state.read, touch); // write after read
      if (hazard) {
        if (insert && sameRegion) {
          op.emitOpError()
              << "conflicts with another thread's access to the same shared "
                 "tile inside thread-dependent control flow, where no "
                 "barrier can be placed; restructure so the accesses are "
                 "separated by code every thread runs";
          failedAny = true;
        } else if (insert) {
          // Before the thread-dependent region when inside one: the other
          // access happened before it.
          Operation *at = divergence ? divergence : &op;
          OpBuilder builder(at);
          if (acrossWarpgroups)
            createRoleSync(builder, at->getLoc(), at);
          else
            createWarpgroupSync(builder, at->getLoc());
        }
        // What happened before the barrier is ordered now: everything, or,
        // after a warpgroup's barrier, its accesses to its slices for its
        // own later accesses to them.
        auto ordered = [&](const Record &r) {
          return !divergence || r.divergence != divergence;
        };
        if (acrossWarpgroups) {
          llvm::erase_if(state.written, ordered);
          llvm::erase_if(state.read, ordered);
        } else {
          state.markWarpgroupSynced(ordered);
        }
      }
      for (const Access::Touch &touch : access.reads)
        state.read.push_back({touch.allocation, touch.memref, touch.indices,
                              divergence, touch.slice});
      for (const Access::Touch &touch : access.writes)
        state.written.push_back({touch.allocation, touch.memref, touch.indices,
                                 divergence, touch.slice});
    }
    return state;
  }

  bool failedAny = false;
};

struct TileThreadSyncPass
    : public sinkattn::tile::impl::TileThreadSyncBase<TileThreadSyncPass> {
  void runOnOperation() override {
    getOperation()->walk([&](FunctionOpInterface func) {
      if (func.isExternal())
        return;
      if (failed(checkMbarrierOrderedTiles(func)))
        return signalPassFailure();
      ThreadSync sync;
      sync.run(func.getFunctionBody().front(), SyncState(), /*insert=*/true,
               /*divergence=*/nullptr);
      if (sync.failedAny)
        signalPassFailure();
    });
  }
};
} // namespace
