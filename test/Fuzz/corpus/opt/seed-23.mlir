// RUN: sinkattn-opt %s --tile-lower-barriers | FileCheck %s
// Running it twice changes nothing: initialized arrays are recognized.
// RUN: sinkattn-opt %s --tile-lower-barriers --tile-lower-barriers | FileCheck %s

// One thread initializes every slot with its arrive count and fences; then
// the whole block syncs before any use.
// CHECK-LABEL: func @init
// CHECK: %[[BARS:.*]] = tile.alloc_barrier [1, 128, 3] : !tile.barriers<3>
// CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[LEADER:.*]] = arith.cmpi eq, %[[TID]], %[[C0]] : index
// CHECK-NEXT: scf.if %[[LEADER]] {
// CHECK-NEXT: %[[S0:.*]] = arith.constant 0 : index
// CHECK-NEXT: tile.mbarrier_init %[[BARS]][%[[S0]]], 1
// CHECK-NEXT: %[[S1:.*]] = arith.constant 1 : index
// CHECK-NEXT: tile.mbarrier_init %[[BARS]][%[[S1]]], 128
// CHECK-NEXT: %[[S2:.*]] = arith.constant 2 : index
// CHECK-NEXT: tile.mbarrier_init %[[BARS]][%[[S2]]], 3
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.mbarrier_arrive %[[BARS]]
// CHECK-NOT: tile.mbarrier_init
func.func @init() {
  %c1 = arith.constant 1 : index
  %bars = tile.alloc_barrier [1, 128, 3] : !tile.barriers<3>
  tile.mbarrier_arrive %bars[%c1] : !tile.barriers<3>
  return
}
