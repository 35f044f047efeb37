// RUN: sinkattn-opt %s --tile-lower-copies --split-input-file -verify-diagnostics | FileCheck %s

// A synchronous load's barrier completes one phase per execution. In
// nested loops or under a condition that is not one phase per iteration of
// one loop, so the load counts its executions: a counter carried through
// the loops (iteration arguments) and the scf.if (a result; the else branch
// passes it through), incremented after the load; the wait's parity is
// count % 2.
// CHECK-LABEL: func @counted
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[BT:.*]] = tile.alloc_barrier [1]
// CHECK: %[[BS:.*]] = tile.alloc_barrier [1]
// CHECK: scf.for %[[I:.*]] = {{.*}} iter_args(%[[CS:.*]] = %[[C0]], %[[CT:.*]] = %[[C0]]) -> (index, index) {
// CHECK:   %[[INNER:.*]] = scf.for {{.*}} iter_args(%[[N:.*]] = %[[CS]]) -> (index) {
// CHECK:     %[[P:.*]] = arith.remui %[[N]], %[[C2]]
// CHECK:     tile.mbarrier_wait_parity %[[BS]][%{{.*}}], %[[P]]
// CHECK:     %[[NEXT:.*]] = arith.addi %[[N]], %[[C1]]
// CHECK:     scf.yield %[[NEXT]] : index
// CHECK:   %[[TAKEN:.*]] = scf.if %{{.*}} -> (index) {
// CHECK:     %[[PT:.*]] = arith.remui %[[CT]], %[[C2]]
// CHECK:     tile.mbarrier_wait_parity %[[BT]][%{{.*}}], %[[PT]]
// CHECK:     %[[TNEXT:.*]] = arith.addi %[[CT]], %[[C1]]
// CHECK:     scf.yield %[[TNEXT]] : index
// CHECK:   } else {
// CHECK:     scf.yield %[[CT]] : index
// CHECK:   scf.yield %[[INNER]], %[[TAKEN]] : index, index
func.func @counted(%A: memref<?x64xbf16>, %n: index, %m: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  %t = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      tile.copy %A[%j, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
    }
    scf.if %p {
      tile.copy %A[%i, %c0], %t : memref<?x64xbf16>, memref<64x64xbf16, 3>
    }
  }
  return
}

// -----

// A conditional that returns values keeps them and gains the count.
// CHECK-LABEL: func @if_with_results
// CHECK: %[[R:.*]]:2 = scf.if %{{.*}} -> (f32, index) {
// CHECK:   tile.mbarrier_wait_parity
// CHECK:   scf.yield %{{.*}}, %{{.*}} : f32, index
// CHECK: } else {
// CHECK:   scf.yield %{{.*}}, %{{.*}} : f32, index
// CHECK: return %[[R]]#0 : f32
func.func @if_with_results(%A: memref<?x64xbf16>, %p: i1, %x: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  %r = scf.if %p -> (f32) {
    tile.copy %A[%c0, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
    %y = arith.addf %x, %x : f32
    scf.yield %y : f32
  } else {
    scf.yield %x : f32
  }
  return %r : f32
}

// -----

func.func @in_while(%A: memref<?x64xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  %r = scf.while (%i = %c0) : (index) -> index {
    %go = arith.cmpi ult, %i, %n : index
    scf.condition(%go) %i : index
  } do {
  ^bb0(%i: index):
    // expected-error @+1 {{'tile.copy' op is a synchronous load inside 'scf.while', where its barrier's phase cannot be counted; use scf.for and scf.if around it}}
    tile.copy %A[%i, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
    %next = arith.addi %i, %c1 : index
    scf.yield %next : index
  }
  return
}

// -----

// Two loads in the same nested loops: each gets its own counter (threading
// the second rebuilds the loops the first's lowering already uses).
// CHECK-LABEL: func @two_in_nested_loops
// CHECK: scf.for {{.*}} iter_args(%[[OA:.*]] = %{{.*}}, %[[OB:.*]] = %{{.*}}) -> (index, index) {
// CHECK:   scf.for {{.*}} iter_args(%[[A:.*]] = %[[OA]], %[[B:.*]] = %[[OB]]) -> (index, index) {
// CHECK:     arith.remui %[[A]], %c2
// CHECK:     tile.mbarrier_wait_parity
// CHECK:     arith.remui %[[B]], %c2
// CHECK:     tile.mbarrier_wait_parity
func.func @two_in_nested_loops(%A: memref<?x64xbf16>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  %t = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %m step %c1 {
      tile.copy %A[%j, %c0], %t : memref<?x64xbf16>, memref<64x64xbf16, 3>
      tile.copy %A[%j, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
    }
  }
  return
}

// -----

// A conditional load and a nested-loop load under one outer loop.
// CHECK-LABEL: func @conditional_and_nested
// CHECK: scf.for {{.*}} iter_args(%[[OA:.*]] = %{{.*}}, %[[OB:.*]] = %{{.*}}) -> (index, index) {
// CHECK:   scf.if %{{.*}} -> (index) {
// CHECK:     arith.remui %[[OA]], %c2
// CHECK:   scf.for {{.*}} iter_args(%[[B:.*]] = %[[OB]]) -> (index) {
// CHECK:     arith.remui %[[B]], %c2
func.func @conditional_and_nested(%A: memref<?x64xbf16>, %n: index, %m: index, %p: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  %t = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %i = %c0 to %n step %c1 {
    scf.if %p {
      tile.copy %A[%i, %c0], %t : memref<?x64xbf16>, memref<64x64xbf16, 3>
    }
    scf.for %j = %c0 to %m step %c1 {
      tile.copy %A[%j, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
    }
  }
  return
}

// -----

// A loop counting in i32: the iteration becomes an index for the parity.
// CHECK-LABEL: func @i32_loop
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:   %[[ITI:.*]] = arith.index_castui %[[K]] : i32 to index
// CHECK:   %[[P:.*]] = arith.remui %[[ITI]], %{{.*}} : index
// CHECK:   tile.mbarrier_wait_parity %{{.*}}[%{{.*}}], %[[P]]
func.func @i32_loop(%A: memref<?x64xbf16>, %n: i32) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0 : i32
  %o = arith.constant 1 : i32
  %s = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %k = %z to %n step %o : i32 {
    %ki = arith.index_cast %k : i32 to index
    tile.copy %A[%ki, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, 3>
  }
  return
}
