// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --canonicalize | FileCheck %s --check-prefix=CANON

// CHECK-LABEL: func @alloc_barrier
func.func @alloc_barrier() -> (!tile.barriers<2>, !tile.barriers<1>) {
  // CHECK: tile.alloc_barrier [1, 128] : !tile.barriers<2>
  %0 = tile.alloc_barrier [1, 128] : !tile.barriers<2>
  // CHECK: tile.alloc_barrier [1048575] : !tile.barriers<1>
  %1 = tile.alloc_barrier [1048575] : !tile.barriers<1>
  return %0, %1 : !tile.barriers<2>, !tile.barriers<1>
}

// An unused allocation has no other effect: canonicalization removes it.
// CANON-LABEL: func @dead_alloc
// CANON-NOT: tile.alloc_barrier
// CANON: return
// CHECK-LABEL: func @dead_alloc
// CHECK: tile.alloc_barrier [1]
func.func @dead_alloc() {
  %0 = tile.alloc_barrier [1] : !tile.barriers<1>
  return
}
