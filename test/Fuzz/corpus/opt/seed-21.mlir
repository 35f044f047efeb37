// RUN: sinkattn-opt %s --tile-fuse-arrive-expect-tx --split-input-file | FileCheck %s

// expect_tx; TMA loads on the same slot, a proxy fence, a sync, index
// arithmetic; arrive on the same slot -> one arrive_expect_tx in place of the
// expect_tx, the arrive gone.
// CHECK-LABEL: func @fused
// CHECK: tile.mbarrier_arrive_expect_tx %[[B:.*]][%[[I:.*]]], 16384
// CHECK-NEXT: tile.tma_load {{.*}} barrier(%[[B]][%[[I]]])
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: arith.addi
// CHECK-NEXT: tile.tma_load {{.*}} barrier(%[[B]][%[[I]]])
// CHECK-NOT: tile.mbarrier_arrive
// CHECK-NOT: tile.mbarrier_expect_tx
// CHECK: return
func.func @fused(%A: memref<4096x64xbf16>, %s: memref<64x64xbf16, 3>, %t: memref<64x64xbf16, 3>, %m: index, %i: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  tile.mbarrier_expect_tx %b[%i], 16384 : !tile.barriers<2>
  tile.tma_load %A[%m, %c0], %s, barrier(%b[%i]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<2>
  nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
  gpu.barrier
  %m2 = arith.addi %m, %c64 : index
  tile.tma_load %A[%m2, %c0], %t, barrier(%b[%i]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<2>
  tile.mbarrier_arrive %b[%i] : !tile.barriers<2>
  return
}

// -----

// An arrive on another slot is not fused.
// CHECK-LABEL: func @other_slot
// CHECK: tile.mbarrier_expect_tx %[[B:.*]][%[[C0:.*]]], 8192
// CHECK: tile.mbarrier_arrive %[[B]][%[[C1:.*]]]
// CHECK-NOT: arrive_expect_tx
func.func @other_slot(%A: memref<4096x64xbf16>, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  tile.mbarrier_expect_tx %b[%c0], 8192 : !tile.barriers<2>
  tile.tma_load %A[%m, %c0], %s, barrier(%b[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<2>
  tile.mbarrier_arrive %b[%c1] : !tile.barriers<2>
  return
}

// -----

// Another barrier array is another barrier, even at the same index.
// CHECK-LABEL: func @other_array
// CHECK: tile.mbarrier_expect_tx
// CHECK: tile.mbarrier_arrive
// CHECK-NOT: arrive_expect_tx
func.func @other_array(%i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  %d = tile.alloc_barrier [1] : !tile.barriers<1>
  tile.mbarrier_expect_tx %b[%i], 8192 : !tile.barriers<1>
  tile.mbarrier_arrive %d[%i] : !tile.barriers<1>
  return
}

// -----

// Something that is not transparent in between (a store to shared memory,
// a TMA load on another slot) blocks the fusion.
// CHECK-LABEL: func @blocked
// CHECK-COUNT-2: tile.mbarrier_expect_tx
// CHECK-NOT: arrive_expect_tx
func.func @blocked(%A: memref<4096x64xbf16>, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  tile.mbarrier_expect_tx %b[%c0], 8192 : !tile.barriers<2>
  %v = arith.constant 1.0 : bf16
  memref.store %v, %s[%c0, %c0] : memref<64x64xbf16, 3>
  tile.mbarrier_arrive %b[%c0] : !tile.barriers<2>
  tile.mbarrier_expect_tx %b[%c0], 8192 : !tile.barriers<2>
  tile.tma_load %A[%m, %c0], %s, barrier(%b[%c1]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<2>
  tile.mbarrier_arrive %b[%c0] : !tile.barriers<2>
  return
}

// -----

// An arrive with count 2 arrives twice: not fusable.
// CHECK-LABEL: func @count_two
// CHECK: tile.mbarrier_expect_tx
// CHECK: tile.mbarrier_arrive %{{.*}} count 2
func.func @count_two(%i: index) {
  %b = tile.alloc_barrier [2] : !tile.barriers<1>
  tile.mbarrier_expect_tx %b[%i], 8192 : !tile.barriers<1>
  tile.mbarrier_arrive %b[%i] count 2 : !tile.barriers<1>
  return
}
