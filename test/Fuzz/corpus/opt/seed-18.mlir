// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @row_and_column_reductions
func.func @row_and_column_reductions(%s: !tile.fragment<64x128xf32>) -> (!tile.fragment<64xf32>, !tile.fragment<64xf32>, !tile.fragment<128xf32>) {
  // CHECK: tile.reduce max %{{.*}} along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  %m = tile.reduce max %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  // CHECK: tile.reduce sum %{{.*}} along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  %l = tile.reduce sum %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  // CHECK: tile.reduce min %{{.*}} along 0 : !tile.fragment<64x128xf32> -> !tile.fragment<128xf32>
  %c = tile.reduce min %s along 0 : !tile.fragment<64x128xf32> -> !tile.fragment<128xf32>
  return %m, %l, %c : !tile.fragment<64xf32>, !tile.fragment<64xf32>, !tile.fragment<128xf32>
}
