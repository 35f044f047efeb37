// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @barrier_protocol
// CHECK-SAME: (%[[SLOT:.*]]: index, %[[PARITY:.*]]: index)
func.func @barrier_protocol(%slot: index, %parity: index) {
  // CHECK: %[[C1:.*]] = arith.constant 1 : index
  %c1 = arith.constant 1 : index
  // CHECK: %[[B:.*]] = tile.alloc_barrier [1, 128] : !tile.barriers<2>
  %b = tile.alloc_barrier [1, 128] : !tile.barriers<2>
  // CHECK: tile.mbarrier_expect_tx %[[B]][%[[SLOT]]], 16384 : !tile.barriers<2>
  tile.mbarrier_expect_tx %b[%slot], 16384 : !tile.barriers<2>
  // CHECK: tile.mbarrier_arrive %[[B]][%[[SLOT]]] : !tile.barriers<2>
  tile.mbarrier_arrive %b[%slot] : !tile.barriers<2>
  // CHECK: tile.mbarrier_arrive %[[B]][%[[C1]]] count 4 : !tile.barriers<2>
  tile.mbarrier_arrive %b[%c1] count 4 : !tile.barriers<2>
  // The default count is not printed.
  // CHECK: tile.mbarrier_arrive %[[B]][%[[C1]]] : !tile.barriers<2>
  tile.mbarrier_arrive %b[%c1] count 1 : !tile.barriers<2>
  // CHECK: tile.mbarrier_wait_parity %[[B]][%[[SLOT]]], %[[PARITY]] : !tile.barriers<2>
  tile.mbarrier_wait_parity %b[%slot], %parity : !tile.barriers<2>
  return
}
