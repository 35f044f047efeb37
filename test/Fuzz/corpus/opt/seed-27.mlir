// RUN: sinkattn-opt %s --tile-multi-version-buffers --split-input-file | FileCheck %s

// A 3-stage loop: the 2-slot barrier array becomes 6 slots with the arrive
// counts replicated; slot i of stage v is v*2 + i; the TMA destination gets
// a leading stage dimension; waits use parity (it / 3) % 2, and the wait
// that had an odd offset ((k + 1) % 2, a back-pressure wait) stays inverted.
// The iteration counts from the loop's start (7, not a multiple of 2*3).
// CHECK-LABEL: func @three_stages
// CHECK: %[[BUF:.*]] = memref.alloc() {alignment = 1024 : i64} : memref<3x64x64xbf16, 3>
// CHECK: %[[BARS:.*]] = tile.alloc_barrier [1, 128, 1, 128, 1, 128] : !tile.barriers<6>
// CHECK-NOT: tile.alloc_barrier
// CHECK: scf.for %[[K:.*]] = %[[LB:.*]] to %{{.*}} step %[[STEP:.*]] {
// CHECK: %[[OFF:.*]] = arith.subi %[[K]], %[[LB]] : index
// CHECK: %[[IT:.*]] = arith.divui %[[OFF]], %[[STEP]] : index
// CHECK: %[[S:.*]] = arith.constant 3 : index
// CHECK: %[[TWO:.*]] = arith.constant 2 : index
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[VERSION:.*]] = arith.remui %[[IT]], %[[S]] : index
// CHECK: %[[ROUND:.*]] = arith.divui %[[IT]], %[[S]] : index
// CHECK: %[[PHASE:.*]] = arith.remui %[[ROUND]], %[[TWO]] : index
// CHECK: %[[INVERTED:.*]] = arith.xori %[[PHASE]], %[[ONE]] : index
// CHECK: %[[VIEW:.*]] = memref.subview %[[BUF]][%{{.*}}, 0, 0] [1, 64, 64] [1, 1, 1] : memref<3x64x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
// CHECK: %[[BASE0:.*]] = arith.muli %[[VERSION]], %{{.*}} : index
// CHECK: %[[FULL:.*]] = arith.addi %[[BASE0]], %[[C0:.*]] : index
// CHECK: tile.tma_copy %{{.*}}, %[[VIEW]], barrier(%[[BARS]][%[[FULL]]])
// CHECK: tile.mbarrier_arrive %[[BARS]][%{{.*}}]
// CHECK: tile.mbarrier_wait_parity %[[BARS]][%{{.*}}], %[[PHASE]]
// CHECK: memref.load %[[VIEW]]
// CHECK: tile.mbarrier_arrive %[[BARS]][%{{.*}}] count 128
// CHECK: tile.mbarrier_wait_parity %[[BARS]][%{{.*}}], %[[INVERTED]]
// CHECK: } {tile.num_stages = 3 : i64}
func.func @three_stages(%A: memref<4096x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %c64 = arith.constant 64 : index
  %buf = memref.alloc() {alignment = 1024} : memref<64x64xbf16, 3>
  %bars = tile.alloc_barrier [1, 128] : !tile.barriers<2>
  scf.for %k = %c7 to %c64 step %c1 {
    tile.tma_copy %A[%k, %c0], %buf, barrier(%bars[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<2>
    tile.mbarrier_arrive %bars[%c0] : !tile.barriers<2>
    %p = arith.remui %k, %c2 : index
    tile.mbarrier_wait_parity %bars[%c0], %p : !tile.barriers<2>
    %x = memref.load %buf[%c0, %c0] : memref<64x64xbf16, 3>
    tile.mbarrier_arrive %bars[%c1] count 128 : !tile.barriers<2>
    %k1 = arith.addi %k, %c1 : index
    %q = arith.remui %k1, %c2 : index
    tile.mbarrier_wait_parity %bars[%c1], %q : !tile.barriers<2>
  } {tile.num_stages = 3}
  return
}

// -----

// One stage still normalizes parity by the loop start: a loop starting at 1
// waits for parity 0 first, not for parity 1 on a fresh barrier (which would
// return at once and read stale data).
// CHECK-LABEL: func @one_stage_odd_start
// CHECK: %[[BARS:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
// CHECK: scf.for %[[K:.*]] = %[[LB:.*]] to
// CHECK: %[[OFF:.*]] = arith.subi %[[K]], %[[LB]]
// CHECK: %[[IT:.*]] = arith.divui %[[OFF]]
// CHECK: %[[ROUND:.*]] = arith.divui %[[IT]], %{{.*}}
// CHECK: %[[PHASE:.*]] = arith.remui %[[ROUND]], %{{.*}}
// CHECK: tile.mbarrier_wait_parity %[[BARS]][%{{.*}}], %[[PHASE]]
func.func @one_stage_odd_start(%A: memref<4096x64xbf16>, %buf: memref<64x64xbf16, 3>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  scf.for %k = %c1 to %c9 step %c1 {
    tile.tma_copy %A[%k, %c0], %buf, barrier(%bars[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
    tile.mbarrier_arrive %bars[%c0] : !tile.barriers<1>
    %p = arith.remui %k, %c1 : index
    tile.mbarrier_wait_parity %bars[%c0], %p : !tile.barriers<1>
  } {tile.num_stages = 1}
  return
}

// -----

// Loops without tile.num_stages are left alone.
// CHECK-LABEL: func @not_pipelined
// CHECK: memref.alloc() : memref<64x64xbf16, 3>
// CHECK: tile.alloc_barrier [1] : !tile.barriers<1>
func.func @not_pipelined(%A: memref<4096x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %buf = memref.alloc() : memref<64x64xbf16, 3>
  %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  scf.for %k = %c0 to %c8 step %c1 {
    tile.tma_copy %A[%k, %c0], %buf, barrier(%bars[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  }
  return
}
