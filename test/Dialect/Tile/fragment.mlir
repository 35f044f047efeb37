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

// Each layout round-trips with the type.
// CHECK-LABEL: func @layouts
// CHECK-SAME: !tile.fragment<128x64xf32, #tile.layout<accumulator>>
// CHECK-SAME: !tile.fragment<64x32xbf16, #tile.layout<operand_a>>
// CHECK-SAME: !tile.fragment<128xf32, #tile.layout<rows>>
func.func @layouts(%acc: !tile.fragment<128x64xf32, #tile.layout<accumulator>>,
                   %a: !tile.fragment<64x32xbf16, #tile.layout<operand_a>>,
                   %rows: !tile.fragment<128xf32, #tile.layout<rows>>) {
  return
}
