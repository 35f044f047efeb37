// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @casts
func.func @casts(%p: !tile.fragment<64x128xf32>, %h: !tile.fragment<64xf16>) -> (!tile.fragment<64x128xbf16>, !tile.fragment<64xf32>) {
  // CHECK: tile.cast %{{.*}} : !tile.fragment<64x128xf32> to !tile.fragment<64x128xbf16>
  %b = tile.cast %p : !tile.fragment<64x128xf32> to !tile.fragment<64x128xbf16>
  // CHECK: tile.cast %{{.*}} : !tile.fragment<64xf16> to !tile.fragment<64xf32>
  %f = tile.cast %h : !tile.fragment<64xf16> to !tile.fragment<64xf32>
  return %b, %f : !tile.fragment<64x128xbf16>, !tile.fragment<64xf32>
}
