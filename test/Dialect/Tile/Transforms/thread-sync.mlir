// RUN: sinkattn-opt %s --tile-thread-sync --split-input-file | FileCheck %s

// A fragment stored to shared memory and read by wgmma (every thread's
// elements, read by the whole warpgroup): one barrier between them.
// Another read of the same tile needs none.
// CHECK-LABEL: func @store_then_gemm
// CHECK: tile.store
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NOT: gpu.barrier
// CHECK: tile.gemm
// CHECK: return
func.func @store_then_gemm(%p: !tile.fragment<64x64xbf16>, %acc: !tile.fragment<64x64xf32>, %sB: memref<64x64xbf16, 3>) -> (!tile.fragment<64x64xf32>, !tile.fragment<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %sP = memref.alloc() : memref<64x64xbf16, 3>
  tile.store %p, %sP[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  %d = tile.gemm %sP, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  %e = tile.gemm %sP, %sB, %d : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  return %d, %e : !tile.fragment<64x64xf32>, !tile.fragment<64x64xf32>
}

// -----

// No hazard, no barrier: reads only, and stores to different tiles.
// CHECK-LABEL: func @no_conflict
// CHECK-NOT: gpu.barrier
func.func @no_conflict(%p: !tile.fragment<64x64xbf16>, %acc: !tile.fragment<64x64xf32>, %sA: memref<64x64xbf16, 3>, %sB: memref<64x64xbf16, 3>) -> !tile.fragment<64x64xf32> {
  %c0 = arith.constant 0 : index
  %sX = memref.alloc() : memref<64x64xbf16, 3>
  %sY = memref.alloc() : memref<64x64xbf16, 3>
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  tile.store %p, %sX[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  tile.store %p, %sY[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  return %d : !tile.fragment<64x64xf32>
}

// -----

// In a loop: the tile is read at the top of an iteration and rewritten at
// its bottom. Write after read within the iteration needs a barrier before
// the store; read after write across iterations one before the gemm. An
// existing barrier is not doubled.
// CHECK-LABEL: func @loop_carried
// CHECK: scf.for
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.store
// CHECK-NEXT: scf.yield
// CHECK-LABEL: func @already_synced
// CHECK: tile.store
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm
func.func @loop_carried(%p: !tile.fragment<64x64xbf16>, %acc0: !tile.fragment<64x64xf32>, %sB: memref<64x64xbf16, 3>, %n: index) -> !tile.fragment<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %sP = memref.alloc() : memref<64x64xbf16, 3>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
    %d = tile.gemm %sP, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
    tile.store %p, %sP[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
    scf.yield %d : !tile.fragment<64x64xf32>
  }
  return %r : !tile.fragment<64x64xf32>
}
func.func @already_synced(%p: !tile.fragment<64x64xbf16>, %acc: !tile.fragment<64x64xf32>, %sB: memref<64x64xbf16, 3>) -> !tile.fragment<64x64xf32> {
  %c0 = arith.constant 0 : index
  %sP = memref.alloc() : memref<64x64xbf16, 3>
  tile.store %p, %sP[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  gpu.barrier
  %d = tile.gemm %sP, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  return %d : !tile.fragment<64x64xf32>
}

// -----

// Inside the consumer role of a warp-specialized kernel the barrier is the
// role's named barrier (bar.sync 2, 128), never the block's.
// CHECK-LABEL: gpu.func @in_role
// CHECK: scf.if
// CHECK:   tile.store
// CHECK-DAG:   %[[ID:.*]] = arith.constant 2 : i32
// CHECK-DAG:   %[[COUNT:.*]] = arith.constant 128 : i32
// CHECK:   nvvm.barrier id = %[[ID]] number_of_threads = %[[COUNT]]
// CHECK-NEXT: tile.gemm
// CHECK-NOT: gpu.barrier
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @in_role(%p: !tile.fragment<64x64xbf16>, %sB: memref<64x64xbf16, 3>, %out: memref<64x64xf32>, %c: i1) kernel {
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0.0 : f32
      %sP = memref.alloc() : memref<64x64xbf16, 3>
      scf.if %c {
        %acc = tile.fill %zero : !tile.fragment<64x64xf32>
        tile.store %p, %sP[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
        %d = tile.gemm %sP, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
        tile.store %d, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 128 : i64}
      gpu.return
    }
  }
}

// -----

// Loops whose trip count depends on the thread id are not reached by every
// thread in every trip, so a barrier for an access inside one goes before
// it (the other access came before the loop). A thread reading and then
// writing the same element (the same index values) is no hazard.
// CHECK-LABEL: func @thread_loops
// CHECK: scf.for
// CHECK:   memref.store
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for
// CHECK-NOT: gpu.barrier
// CHECK:   memref.load
// CHECK-NOT: gpu.barrier
// CHECK:   memref.store
// CHECK: return
func.func @thread_loops(%v: f32) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c4096 = arith.constant 4096 : index
  %tid = gpu.thread_id x
  %acc = memref.alloc() : memref<64x64xf32, 3>
  scf.for %e = %tid to %c4096 step %c128 {
    %r = arith.divui %e, %c64 : index
    %c = arith.remui %e, %c64 : index
    memref.store %v, %acc[%r, %c] : memref<64x64xf32, 3>
  }
  scf.for %e = %tid to %c4096 step %c128 {
    %r = arith.divui %e, %c64 : index
    %c = arith.remui %e, %c64 : index
    %old = memref.load %acc[%r, %c] : memref<64x64xf32, 3>
    %new = arith.addf %old, %v : f32
    memref.store %new, %acc[%r, %c] : memref<64x64xf32, 3>
  }
  return
}

// -----

// One thread writes an element every thread then reads (a broadcast): the
// index is the same for all threads, so it is a hazard after all.
// CHECK-LABEL: func @broadcast
// CHECK: scf.if
// CHECK:   memref.store
// CHECK: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load
func.func @broadcast(%v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %tid = gpu.thread_id x
  %s = memref.alloc() : memref<4xf32, 3>
  %first = arith.cmpi eq, %tid, %c0 : index
  scf.if %first {
    memref.store %v, %s[%c0] : memref<4xf32, 3>
  }
  %x = memref.load %s[%c0] : memref<4xf32, 3>
  return %x : f32
}

// -----

// A store to global memory syncs before itself (tile-lower-copies). Without
// `pending` it syncs after too, so the next write to its tile needs
// nothing. With `pending` its leader's wait for the earlier stores stands
// for a read of the tile: the next iteration's write to the tile gets a
// barrier.
// CHECK-LABEL: func @store_pending
// CHECK: scf.for
// CHECK-NEXT: arith.remui
// CHECK-NEXT: memref.subview
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.store
// CHECK-NEXT: tile.copy
// CHECK-NEXT: {{^ *}}}
// CHECK-LABEL: func @store_not_pending
// CHECK-NOT: gpu.barrier
// CHECK: return
func.func @store_pending(%v: !tile.fragment<64x64xf32>, %O: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = memref.alloc() : memref<2x64x64xf32, 3>
  scf.for %k = %c0 to %n step %c1 {
    %parity = arith.remui %k, %c2 : index
    %t = memref.subview %s[%parity, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
    tile.store %v, %t[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
    tile.copy %t, %O[%k, %c0] {add, pending = 1} : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>, memref<?x64xf32>
  }
  return
}
func.func @store_not_pending(%v: !tile.fragment<64x64xf32>, %O: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xf32, 3>
  scf.for %k = %c0 to %n step %c1 {
    tile.store %v, %s[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, 3>
    tile.copy %s, %O[%k, %c0] {add} : memref<64x64xf32, 3>, memref<?x64xf32>
  }
  return
}

// -----

// The atomic backward's loop: dSᵀ stored, read by dQ's GEMM (a barrier
// before it), dQ's share stored and added with `pending`. The barrier
// before the next iteration's GEMM also orders the leader's wait before
// the next write of the share's tile: one barrier per iteration, none
// before the share's store.
// CHECK-LABEL: func @store_pending_then_barrier
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: tile.store
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NOT: gpu.barrier
// CHECK: tile.store
// CHECK-NEXT: tile.copy
// CHECK-NEXT: scf.yield
func.func @store_pending_then_barrier(%ds: !tile.fragment<64x64xbf16>, %acc0: !tile.fragment<64x64xf32>, %sK: memref<64x64xbf16, 3>, %O: memref<?x64xf32>, %n: index) -> !tile.fragment<64x64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %sdS = memref.alloc() : memref<64x64xbf16, 3>
  %s = memref.alloc() : memref<2x64x64xf32, 3>
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
    tile.store %ds, %sdS[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
    %dq = tile.gemm %sdS, %sK, %acc0 : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
    %parity = arith.remui %k, %c2 : index
    %t = memref.subview %s[%parity, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
    tile.store %dq, %t[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
    tile.copy %t, %O[%k, %c0] {add, pending = 1} : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>, memref<?x64xf32>
    scf.yield %dq : !tile.fragment<64x64xf32>
  }
  return %r : !tile.fragment<64x64xf32>
}

// -----

// A warpgroup's slice of a tile (a subview at tile.warpgroup_id times 64,
// 64 rows): its store and the GEMM reading it are ordered by the
// warpgroup's own barrier (id 8 + thread_id.x / 128, 128 threads), each
// iteration and across iterations, so the role's two warpgroups need not
// meet. Reading the whole tile after the loop (the other warpgroup's rows
// too) takes the role's barrier.
// CHECK-LABEL: gpu.func @warpgroup_slices
// CHECK: scf.for
// CHECK-NEXT:   %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:   %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT:   %[[WG:.*]] = arith.divui %[[TID]], %[[C128]] : index
// CHECK-NEXT:   %[[FIRST:.*]] = arith.constant 8 : i32
// CHECK-NEXT:   %[[WG32:.*]] = arith.index_castui %[[WG]] : index to i32
// CHECK-NEXT:   %[[ID:.*]] = arith.addi %[[WG32]], %[[FIRST]] : i32
// CHECK-NEXT:   %[[COUNT:.*]] = arith.constant 128 : i32
// CHECK-NEXT:   nvvm.barrier id = %[[ID]] number_of_threads = %[[COUNT]]
// CHECK-NEXT:   tile.store
// CHECK:        nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK-NEXT:   tile.gemm
// CHECK-NEXT:   scf.yield
// CHECK-NEXT: }
// CHECK-DAG:  %[[ROLECOUNT:.*]] = arith.constant 256 : i32
// CHECK-DAG:  %[[ROLE:.*]] = arith.constant 2 : i32
// CHECK-NEXT: nvvm.barrier id = %[[ROLE]] number_of_threads = %[[ROLECOUNT]]
// CHECK-NEXT: memref.load
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @warpgroup_slices(%p: !tile.fragment<64x64xbf16>, %sB: memref<64x64xbf16, 3>, %out: memref<64x64xf32>, %c: i1, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sP = memref.alloc() : memref<128x64xbf16, 3>
      scf.if %c {
        %wg = tile.warpgroup_id : index
        %row = arith.muli %wg, %c64 : index
        %mine = memref.subview %sP[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
        %acc = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %acc) -> (!tile.fragment<64x64xf32>) {
          tile.store %p, %mine[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
          %d = tile.gemm %mine, %sB, %a : memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        }
        %x = memref.load %sP[%c0, %c0] : memref<128x64xbf16, 3>
        tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      gpu.return
    }
  }
}

// -----

// Slices of the same tile cut differently (64 rows at 64 · w, 32 rows at
// 32 · w) overlap between warpgroups (warpgroup 1's second cut is
// warpgroup 0's first's rows 32..63): the role's barrier, before the load
// and before the next store (write after read); and a subview at
// tile.warpgroup_id times less than its rows (64 at 32 · w) is no slice.
// (The role barrier's two constants come in either order: createRoleSync
// builds them as arguments of one call.)
// CHECK-LABEL: gpu.func @not_one_slice
// CHECK:      tile.store
// CHECK-NEXT: arith.constant {{2|256}} : i32
// CHECK-NEXT: arith.constant {{2|256}} : i32
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.constant {{2|256}} : i32
// CHECK-NEXT: arith.constant {{2|256}} : i32
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads
// CHECK-NEXT: tile.store
// CHECK-NEXT: arith.constant {{2|256}} : i32
// CHECK-NEXT: arith.constant {{2|256}} : i32
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads
// CHECK-NEXT: memref.load
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @not_one_slice(%v: f32, %c: i1) kernel {
      %c0 = arith.constant 0 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %s = memref.alloc() : memref<128x64xf32, 3>
      scf.if %c {
        %wg = tile.warpgroup_id : index
        %row64 = arith.muli %wg, %c64 : index
        %row32 = arith.muli %wg, %c32 : index
        %a = memref.subview %s[%row64, 0] [64, 64] [1, 1] : memref<128x64xf32, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
        %b = memref.subview %s[%row32, 0] [32, 64] [1, 1] : memref<128x64xf32, 3> to memref<32x64xf32, strided<[64, 1], offset: ?>, 3>
        %wide = memref.subview %s[%row32, 0] [64, 64] [1, 1] : memref<128x64xf32, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
        %f = tile.fill %v : !tile.fragment<64x64xf32>
        tile.store %f, %a[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
        %x = memref.load %b[%c0, %c0] : memref<32x64xf32, strided<[64, 1], offset: ?>, 3>
        tile.store %f, %wide[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
        %y = memref.load %wide[%c0, %c0] : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
      } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      gpu.return
    }
  }
}

// -----

// A named barrier whose id depends on the warpgroup (a ping-pong turn:
// bar.sync 3 + w with the warpgroup before arriving) holds every thread of
// the executing warpgroup but orders no other warpgroup after it: it
// serves the warpgroup's slice (no barrier added before the GEMM reading
// %mine) but not a tile every warpgroup writes (the role's barrier).
// CHECK-LABEL: gpu.func @turn_barrier
// CHECK:      tile.store %{{.*}}, %[[MINE:[a-z_0-9]+]][
// CHECK-NEXT: nvvm.barrier id = %[[TURN:.*]] number_of_threads
// CHECK-NEXT: tile.gemm %[[MINE]]
// CHECK-NEXT: tile.store
// CHECK-NEXT: nvvm.barrier id = %[[TURN]] number_of_threads
// CHECK-DAG:  %[[ROLE:.*]] = arith.constant 2 : i32
// CHECK-DAG:  %[[COUNT:.*]] = arith.constant 256 : i32
// CHECK:      nvvm.barrier id = %[[ROLE]] number_of_threads = %[[COUNT]]
// CHECK-NEXT: tile.gemm
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @turn_barrier(%p: !tile.fragment<64x64xbf16>, %sB: memref<64x64xbf16, 3>, %c: i1) kernel {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %threads = arith.constant 256 : i32
      %turnBase = arith.constant 3 : i32
      %sP = memref.alloc() : memref<128x64xbf16, 3>
      %sAll = memref.alloc() : memref<64x64xbf16, 3>
      scf.if %c {
        %wg = tile.warpgroup_id : index
        %wg32 = arith.index_cast %wg : index to i32
        %turn = arith.addi %turnBase, %wg32 : i32
        %row = arith.muli %wg, %c64 : index
        %mine = memref.subview %sP[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
        %acc = tile.fill %zero : !tile.fragment<64x64xf32>
        tile.store %p, %mine[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
        nvvm.barrier id = %turn number_of_threads = %threads
        %d = tile.gemm %mine, %sB, %acc : memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
        tile.store %p, %sAll[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
        nvvm.barrier id = %turn number_of_threads = %threads
        %e = tile.gemm %sAll, %sB, %d : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
      } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      gpu.return
    }
  }
}

// -----

// A tile the kernel orders itself (tile.mbarrier_ordered): the store and
// the wgmma that reads it are separated by the kernel's own mbarrier
// arrive and wait, and the pass adds no barrier for it; the same accesses
// to an unmarked tile still get one.
// CHECK-LABEL: func @mbarrier_ordered
// CHECK: tile.store %{{.*}}, %[[OWN:.*]][
// CHECK-NEXT: tile.mbarrier_arrive
// CHECK-NEXT: tile.mbarrier_wait_parity
// CHECK-NEXT: tile.gemm %[[OWN]]
// CHECK-NEXT: tile.store %{{.*}}, %[[PLAIN:.*]][
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm %[[PLAIN]]
// CHECK-NOT: gpu.barrier
// CHECK: return
func.func @mbarrier_ordered(%p: !tile.fragment<64x64xbf16>, %acc: !tile.fragment<64x64xf32>, %sB: memref<64x64xbf16, 3>, %parity: index) -> (!tile.fragment<64x64xf32>, !tile.fragment<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %full = tile.alloc_barrier [128] : !tile.barriers<1>
  %own = memref.alloc() {tile.mbarrier_ordered} : memref<64x64xbf16, 3>
  %plain = memref.alloc() : memref<64x64xbf16, 3>
  tile.store %p, %own[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  tile.mbarrier_arrive %full[%c0] : !tile.barriers<1>
  tile.mbarrier_wait_parity %full[%c0], %parity : !tile.barriers<1>
  %d = tile.gemm %own, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  tile.store %p, %plain[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  %e = tile.gemm %plain, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  return %d, %e : !tile.fragment<64x64xf32>, !tile.fragment<64x64xf32>
}
