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
