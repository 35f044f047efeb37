// RUN: sinkattn-opt %s --tile-lower-copies --tile-multi-version-buffers --split-input-file -verify-diagnostics | FileCheck %s

// A pipelined loop nested in another loop: its synchronous load counts its
// executions (tile-lower-copies); versioning the barrier by this loop's
// iteration would restart the parity every outer iteration, so the barrier
// keeps its one slot and counted parity. The buffer still gets versions.
// CHECK-LABEL: func @nested_pipelined_loop
// CHECK: %[[B:.*]] = tile.alloc_barrier [1] {tile.counted_phases} : !tile.barriers<1>
// CHECK-NOT: tile.alloc_barrier
// CHECK: memref.alloc() : memref<2x64x64xbf16, 3>
// CHECK: scf.for
// CHECK:   scf.for {{.*}} iter_args(%[[N:.*]] = %{{.*}}) -> (index)
// CHECK:     %[[P:.*]] = arith.remui %[[N]], %c2
// CHECK:     tile.mbarrier_wait_parity %[[B]][%{{.*}}], %[[P]]
func.func @nested_pipelined_loop(%A: memref<?x64xbf16>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      tile.copy %A[%j, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
      %x = memref.load %s[%c0, %c0] : memref<64x64xbf16, 3>
    } {tile.num_stages = 2}
  }
  return
}

// -----

// At the top level the same loop versions its barrier by iteration.
// CHECK-LABEL: func @top_level_pipelined_loop
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
func.func @top_level_pipelined_loop(%A: memref<?x64xbf16>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %j = %c0 to %m step %c1 {
    tile.copy %A[%j, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
    %x = memref.load %s[%c0, %c0] : memref<64x64xbf16, 3>
  } {tile.num_stages = 2}
  return
}

// -----

// A user-managed barrier in a pipelined loop nested in another loop: its
// phases run on across the outer iterations, so the inner iteration cannot
// give its parity. Rejected, not silently mis-versioned.
func.func @user_barrier_nested(%A: memref<?x64xbf16>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  // expected-error @+1 {{'tile.alloc_barrier' op is used in a pipelined loop whose iterations do not count its phases (the loop is nested in another loop or region); pipeline the loop with tile.copy loads, or wait with a parity you count yourself and drop tile.num_stages}}
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      tile.tma_copy %A[%j, %c0], %s, barrier(%b[%c0]) : memref<?x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
      tile.mbarrier_arrive %b[%c0] : !tile.barriers<1>
      %p = arith.remui %j, %c2 : index
      tile.mbarrier_wait_parity %b[%c0], %p : !tile.barriers<1>
    } {tile.num_stages = 2}
  }
  return
}

// -----

// A wait under a condition does not run every iteration.
func.func @user_wait_conditional(%A: memref<?x64xbf16>, %m: index, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  // expected-error @+1 {{'tile.alloc_barrier' op is used in a pipelined loop whose iterations do not count its phases (a wait on it is not directly in the loop body)}}
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  scf.for %j = %c0 to %m step %c1 {
    tile.tma_copy %A[%j, %c0], %s, barrier(%b[%c0]) : memref<?x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
    tile.mbarrier_arrive %b[%c0] : !tile.barriers<1>
    scf.if %flag {
      %p = arith.remui %j, %c2 : index
      // expected-note @+1 {{the wait}}
      tile.mbarrier_wait_parity %b[%c0], %p : !tile.barriers<1>
    }
  } {tile.num_stages = 2}
  return
}
