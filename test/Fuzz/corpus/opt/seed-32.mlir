// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @partial_row_sums
func.func @partial_row_sums(%p: !tile.fragment<64x128xf32>) -> (!tile.fragment<64x8xf32>, !tile.fragment<128x16xf32>, !tile.fragment<64xf32>) {
  // CHECK: tile.partial_reduce sum %{{.*}} : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf32>
  %parts = tile.partial_reduce sum %p : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf32>
  // CHECK: tile.partial_reduce max %{{.*}} : !tile.fragment<128x64xi32> -> !tile.fragment<128x16xi32>
  %c = arith.constant 3 : i32
  %zero = arith.constant 0.0 : f32
  %q = tile.fill %c : !tile.fragment<128x64xi32>
  %i = tile.partial_reduce max %q : !tile.fragment<128x64xi32> -> !tile.fragment<128x16xi32>
  %f = tile.fill %zero : !tile.fragment<128x16xf32>
  // Reducing the partial columns gives the row vector.
  // CHECK: tile.reduce sum %{{.*}} along 1 : !tile.fragment<64x8xf32> -> !tile.fragment<64xf32>
  %rows = tile.reduce sum %parts along 1 : !tile.fragment<64x8xf32> -> !tile.fragment<64xf32>
  return %parts, %f, %rows : !tile.fragment<64x8xf32>, !tile.fragment<128x16xf32>, !tile.fragment<64xf32>
}
