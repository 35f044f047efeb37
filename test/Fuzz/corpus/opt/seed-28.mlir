// Barrier lowering must run after multi-versioning: in that order every
// version of every slot is initialized; in the other order multi-versioning
// refuses the already initialized array instead of leaving versions without
// initialization.
// RUN: sinkattn-opt %s --tile-multi-version-buffers --tile-lower-barriers | FileCheck %s
// RUN: not sinkattn-opt %s --tile-lower-barriers --tile-multi-version-buffers 2>&1 | FileCheck %s --check-prefix=WRONG

// CHECK: %[[BARS:.*]] = tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK: scf.if
// CHECK-NEXT: %[[S0:.*]] = arith.constant 0 : index
// CHECK-NEXT: tile.mbarrier_init %[[BARS]][%[[S0]]], 1
// CHECK-NEXT: %[[S1:.*]] = arith.constant 1 : index
// CHECK-NEXT: tile.mbarrier_init %[[BARS]][%[[S1]]], 1
// CHECK-NEXT: nvvm.fence.mbarrier.init
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier

// WRONG: error: 'tile.alloc_barrier' op is already initialized (tile-lower-barriers ran before tile-multi-version-buffers); multi-versioning must come first so that initialization covers every version
func.func @order(%A: memref<4096x64xbf16>, %buf: memref<64x64xbf16, 3>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  scf.for %k = %c0 to %c8 step %c1 {
    tile.tma_copy %A[%k, %c0], %buf, barrier(%bars[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
    tile.mbarrier_wait_parity %bars[%c0], %c0 : !tile.barriers<1>
  } {tile.num_stages = 2}
  return
}
