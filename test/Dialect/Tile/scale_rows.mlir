// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @rescale
func.func @rescale(%o: !tile.fragment<64x128xf32>, %alpha: !tile.fragment<64xf32>) -> !tile.fragment<64x128xf32> {
  // CHECK: tile.scale_rows %{{.*}} by %{{.*}} : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
  %r = tile.scale_rows %o by %alpha : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
  return %r : !tile.fragment<64x128xf32>
}
