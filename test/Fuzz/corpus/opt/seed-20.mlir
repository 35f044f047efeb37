// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// The fire-and-forget protocol: two loads share one arrival on one slot.
// CHECK-LABEL: func @tma_copy_two_loads_one_barrier
func.func @tma_copy_two_loads_one_barrier(%A: memref<4096x4096xbf16>, %B: memref<4096x4096xbf16>,
                                          %m: index, %n: index, %k: index, %parity: index) {
  %c0 = arith.constant 0 : index
  %sA = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  // CHECK: %[[BAR:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
  %bar = tile.alloc_barrier [1] : !tile.barriers<1>
  // CHECK: tile.tma_copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}, barrier(%[[BAR]][%[[C0:.*]]]) : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
  tile.tma_copy %A[%m, %k], %sA, barrier(%bar[%c0]) : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
  // CHECK: tile.tma_copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}, barrier(%[[BAR]][%[[C0]]]) : memref<4096x4096xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
  tile.tma_copy %B[%k, %n], %sB, barrier(%bar[%c0]) : memref<4096x4096xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
  // CHECK: tile.mbarrier_arrive %[[BAR]][%[[C0]]]
  tile.mbarrier_arrive %bar[%c0] : !tile.barriers<1>
  // CHECK: tile.mbarrier_wait_parity %[[BAR]][%[[C0]]], %{{.*}}
  tile.mbarrier_wait_parity %bar[%c0], %parity : !tile.barriers<1>
  return
}
