// RUN: sinkattn-opt %s --tile-lower-copies --split-input-file | FileCheck %s

// tma_copy: one thread arms the user's barrier with the tile's bytes and
// issues the load; no arrive, no wait.
// CHECK-LABEL: func @tma_copy
// CHECK-SAME: (%[[A:.*]]: memref<1024x64xbf16>, %[[S:.*]]: memref<64x64xbf16, 3>, %[[M:.*]]: index)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[B:.*]] = tile.alloc_barrier [1]
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %[[TID]], %{{.*}}
// CHECK: scf.if %[[LEADER]] {
// CHECK-NEXT: tile.mbarrier_expect_tx %[[B]][%[[C0]]], 8192
// CHECK-NEXT: tile.tma_load %[[A]][%[[M]], %[[C0]]], %[[S]], barrier(%[[B]][%[[C0]]])
// CHECK-NEXT: }
// CHECK-NOT: tile.mbarrier_arrive
// CHECK-NOT: tile.mbarrier_wait_parity
// CHECK: return
func.func @tma_copy(%A: memref<1024x64xbf16>, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  tile.tma_copy %A[%m, %c0], %s, barrier(%b[%c0]) : memref<1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

// A synchronous copy in a loop: its own barrier at the function's start;
// sync, one thread arms + loads + arrives, everybody waits for parity
// ((k - lb) / step) % 2.
// CHECK-LABEL: func @copy_in_loop
// CHECK: %[[SLOT:.*]] = arith.constant 0 : index
// CHECK: %[[B:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
// CHECK: scf.for %[[K:.*]] = %[[LB:.*]] to %{{.*}} step %[[STEP:.*]] {
// CHECK: %[[OFF:.*]] = arith.subi %[[K]], %[[LB]]
// CHECK: %[[IT:.*]] = arith.divui %[[OFF]], %[[STEP]]
// CHECK: %[[PARITY:.*]] = arith.remui %[[IT]], %{{.*}}
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: tile.mbarrier_expect_tx %[[B]][%[[SLOT]]], 16384
// CHECK-NEXT: tile.tma_load {{.*}} barrier(%[[B]][%[[SLOT]]])
// CHECK-NEXT: tile.mbarrier_arrive %[[B]][%[[SLOT]]]
// CHECK-NEXT: }
// CHECK-NEXT: tile.mbarrier_wait_parity %[[B]][%[[SLOT]]], %[[PARITY]]
func.func @copy_in_loop(%A: memref<4096x4096xbf16>, %s: memref<128x64xbf16, 3>, %m: index) {
  %c3 = arith.constant 3 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  scf.for %k = %c3 to %c64 step %c2 {
    tile.copy %A[%m, %k], %s : memref<4096x4096xbf16>, memref<128x64xbf16, 3>
  }
  return
}

// -----

// Outside loops the copy waits for parity 0.
// CHECK-LABEL: func @copy_once
// CHECK: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK: tile.mbarrier_wait_parity %{{.*}}[%{{.*}}], %[[ZERO]]
func.func @copy_once(%A: memref<4096x64xbf16>, %s: memref<128x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  tile.copy %A[%m, %c0], %s : memref<4096x64xbf16>, memref<128x64xbf16, 3>
  return
}

// -----

// A 512-row tile is two 256-row boxes on one barrier; one expect_tx of all
// the bytes; the second box starts 256 rows further in the global tensor.
// CHECK-LABEL: func @split_box
// CHECK-SAME: (%[[A:.*]]: memref<4096x64xf16>, %[[S:.*]]: memref<512x64xf16, 3>, %[[M:.*]]: index)
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: scf.if
// CHECK-NEXT: tile.mbarrier_expect_tx %{{.*}}, 65536
// CHECK: %[[TOP:.*]] = memref.subview %[[S]][0, 0] [256, 64] [1, 1]
// CHECK: %[[BOTTOM:.*]] = memref.subview %[[S]][256, 0] [256, 64] [1, 1]
// CHECK: %[[M2:.*]] = arith.addi %[[M]], %[[C256]]
// CHECK: tile.tma_load %[[A]][%[[M]], %{{.*}}], %[[TOP]]
// CHECK: tile.tma_load %[[A]][%[[M2]], %{{.*}}], %[[BOTTOM]]
// CHECK: tile.mbarrier_arrive
func.func @split_box(%A: memref<4096x64xf16>, %s: memref<512x64xf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  tile.copy %A[%m, %c0], %s : memref<4096x64xf16>, memref<512x64xf16, 3>
  return
}

// -----

// shared -> global: sync, one thread fences the async proxy, stores,
// commits and waits for the reads of the bulk group, sync.
// CHECK-LABEL: func @store
// CHECK-SAME: (%[[S:.*]]: memref<64x64xbf16, 3>, %[[O:.*]]: memref<?x64xbf16>, %[[M:.*]]: index)
// CHECK: gpu.barrier
// CHECK-NEXT: gpu.thread_id
// CHECK: scf.if
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: tile.tma_store %[[S]], %[[O]][%[[M]], %{{.*}}]
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
func.func @store(%s: memref<64x64xbf16, 3>, %O: memref<?x64xbf16>, %m: index) {
  %c0 = arith.constant 0 : index
  tile.copy %s, %O[%m, %c0] : memref<64x64xbf16, 3>, memref<?x64xbf16>
  return
}

// -----

// A store with `add` is the same protocol around a TMA reduce-add.
// CHECK-LABEL: func @store_add
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: tile.tma_store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {add} : memref<64x64xf32, 3>, memref<?x64xf32>
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
func.func @store_add(%s: memref<64x64xf32, 3>, %O: memref<?x64xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  tile.copy %s, %O[%m, %c0] {add} : memref<64x64xf32, 3>, memref<?x64xf32>
  return
}

// -----

// A store with `pending = 1` in a loop alternating two tiles: the wait
// covers the stores before the last one (this iteration's may still read
// its tile), and after the outermost loop one thread waits for all and the
// block syncs, once for both stores of the nested loops. Each store syncs
// before it only: the barrier between the leader's wait and the next write
// to the tile is tile-thread-sync's (thread-sync.mlir, @store_pending).
// CHECK-LABEL: func @store_pending
// CHECK: scf.for
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: tile.tma_store %{{.*}} {add}
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: tile.tma_store %{{.*}} {add}
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.thread_id
// CHECK: scf.if
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: nvvm.cp.async.bulk.wait_group
// CHECK-NOT: tile.stores_drained
// CHECK: return
func.func @store_pending(%s: memref<2x64x64xf32, 3>, %O: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %k = %c0 to %n step %c1 {
      %parity = arith.remui %k, %c2 : index
      %t = memref.subview %s[%parity, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
      tile.copy %t, %O[%k, %c0] {add, pending = 1} : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>, memref<?x64xf32>
      tile.copy %t, %O[%i, %c0] {add, pending = 1} : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>, memref<?x64xf32>
    }
  }
  return
}

// -----

// In a warp-specialized role inside a loop over the roles: the wait for
// all and the role's sync (its named barrier) go after the role's own
// loop, inside the role region, not after the loop around the roles.
// CHECK-LABEL: gpu.func @pending_in_role
// CHECK: scf.for
// CHECK: scf.if
// CHECK: scf.for
// CHECK: nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[LEADER:.*]] = arith.cmpi eq, %[[TID]], %c128
// CHECK-NEXT: scf.if %[[LEADER]] {
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK-NEXT: } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @pending_in_role(%s: memref<64x64xf32, 3>, %O: memref<1024x64xf32>, %n: index, %is: i1) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %t = %c0 to %n step %c1 {
        scf.if %is {
          scf.for %k = %c0 to %n step %c1 {
            tile.copy %s, %O[%k, %c0] {add, pending = 1} : memref<64x64xf32, 3>, memref<1024x64xf32>
          }
        } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      }
      gpu.return
    }
  }
}

// -----

// im2col_copy: its own barrier, the synchronous protocol around one
// single-thread im2col TMA load of the tile's bytes (16 x 64 x 2).
// CHECK-LABEL: func @im2col
// CHECK: %[[B:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: tile.mbarrier_expect_tx %[[B]][%{{.*}}], 2048
// CHECK-NEXT: tile.tma_im2col_load %{{.*}} offsets[%{{.*}}, %{{.*}}], barrier(%[[B]][%{{.*}}]) {lower = array<i64: 0, 0>, upper = array<i64: -2, -2>}
// CHECK-NEXT: tile.mbarrier_arrive %[[B]]
// CHECK-NEXT: }
// CHECK-NEXT: tile.mbarrier_wait_parity %[[B]]
func.func @im2col(%x: memref<2x10x12x64xbf16>, %t: memref<16x64xbf16, 3>, %h: index, %dh: index, %dw: index) {
  %c0 = arith.constant 0 : index
  tile.im2col_copy %x[%c0, %h, %c0, %c0], %t offsets [%dh, %dw] {lower = array<i64: 0, 0>, upper = array<i64: -2, -2>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>
  return
}

// -----

// A tile marked swizzled (a wgmma operand) is loaded and stored with the
// 128-byte swizzle; the TMA conversion splits it into panels.
// CHECK-LABEL: func @swizzled
// CHECK: tile.tma_load {{.*}} {swizzle = 128 : i64} : memref<256x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: tile.tma_store {{.*}} {swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
func.func @swizzled(%A: memref<256x128xbf16>, %m: index) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %A[%m, %c0], %s : memref<256x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %s, %A[%m, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  return
}

// -----

// Stores of a warpgroup's slice (tile.warpgroup_id): each warpgroup syncs
// itself (named barrier 8 + thread_id.x / 128, 128 threads) and its first
// thread (thread_id.x % 128 == 0) issues the TMA and waits for its own
// stores, after the loop as well; the role syncs once after that drain. A
// store without `pending` syncs the warpgroup after it too.
// CHECK-LABEL: gpu.func @warpgroup_stores
// CHECK-DAG: %[[C128I:.*]] = arith.constant 128 : i32
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: scf.for
// CHECK:      %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[WG:.*]] = arith.divui %[[TID]], %[[C128]] : index
// CHECK-NEXT: %[[WG32:.*]] = arith.index_castui %[[WG]] : index to i32
// CHECK-NEXT: %[[ID:.*]] = arith.addi %[[WG32]], %[[C8]] : i32
// CHECK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[C128I]]
// CHECK-NEXT: %[[TID2:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[LANE:.*]] = arith.remui %[[TID2]], %[[C128]] : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0 : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT:   nvvm.fence.proxy
// CHECK-NEXT:   tile.tma_store %{{.*}} {add}
// CHECK-NEXT:   nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:   nvvm.cp.async.bulk.wait_group 1 {read}
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: %[[TID3:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[LANE3:.*]] = arith.remui %[[TID3]], %[[C128]] : index
// CHECK-NEXT: %[[FIRST3:.*]] = arith.cmpi eq, %[[LANE3]], %c0 : index
// CHECK-NEXT: scf.if %[[FIRST3]] {
// CHECK-NEXT:   nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK:      nvvm.barrier id = %{{.*}} number_of_threads = %[[C128I]]
// CHECK:      scf.if
// CHECK:        tile.tma_store
// CHECK-NEXT:   nvvm.cp.async.bulk.commit.group
// CHECK-NEXT:   nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// CHECK:      nvvm.barrier id = %{{.*}} number_of_threads = %[[C128I]]
// CHECK-NEXT: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @warpgroup_stores(%s: memref<4x64x64xf32, 3>, %O: memref<1024x64xf32>, %n: index, %is: i1) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      scf.if %is {
        %wg = tile.warpgroup_id : index
        %slots = arith.muli %wg, %c2 : index
        %mine = memref.subview %s[%slots, 0, 0] [2, 64, 64] [1, 1, 1] : memref<4x64x64xf32, 3> to memref<2x64x64xf32, strided<[4096, 64, 1], offset: ?>, 3>
        scf.for %k = %c0 to %n step %c1 {
          %parity = arith.remui %k, %c2 : index
          %t = memref.subview %mine[%parity, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, strided<[4096, 64, 1], offset: ?>, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
          tile.copy %t, %O[%k, %c0] {add, pending = 1} : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>, memref<1024x64xf32>
        }
        %first = memref.subview %mine[0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xf32, strided<[4096, 64, 1], offset: ?>, 3> to memref<64x64xf32, strided<[64, 1], offset: ?>, 3>
        tile.copy %first, %O[%c0, %c0] : memref<64x64xf32, strided<[64, 1], offset: ?>, 3>, memref<1024x64xf32>
      } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      gpu.return
    }
  }
}
