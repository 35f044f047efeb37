// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @fill
func.func @fill() -> (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  // CHECK: tile.fill %{{.*}} : !tile.fragment<64x128xf32>
  %acc = tile.fill %zero : !tile.fragment<64x128xf32>
  // CHECK: tile.fill %{{.*}} : !tile.fragment<64xf32>
  %m = tile.fill %ninf : !tile.fragment<64xf32>
  return %acc, %m : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
}

// A layout attribute round-trips with the type.
// CHECK-LABEL: func @layout
// CHECK-SAME: !tile.fragment<64x64xf16, "wgmma_acc">
func.func @layout(%x: !tile.fragment<64x64xf16, "wgmma_acc">) -> !tile.fragment<64x64xf16, "wgmma_acc"> {
  return %x : !tile.fragment<64x64xf16, "wgmma_acc">
}
