// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// The softmax step of attention: p = exp2(s * scale - m[row]) under a causal
// mask, with the row vector broadcast along dimension 1.
// CHECK-LABEL: func @masked_softmax_step
func.func @masked_softmax_step(%s: !tile.fragment<64x128xf32>, %m: !tile.fragment<64xf32>,
                               %scale: f32) -> !tile.fragment<64x128xf32> {
  %zero = arith.constant 0.0 : f32
  // CHECK: tile.map(%{{.*}}, %{{.*}}) : (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>) -> !tile.fragment<64x128xf32> {
  // CHECK-NEXT: ^bb0(%[[I:.*]]: index, %[[J:.*]]: index, %[[X:.*]]: f32, %[[MI:.*]]: f32):
  // CHECK: arith.cmpi ule, %[[J]], %[[I]] : index
  // CHECK: tile.yield %{{.*}} : f32
  %p = tile.map (%s, %m) : (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>) -> !tile.fragment<64x128xf32> {
  ^bb0(%i: index, %j: index, %x: f32, %mi: f32):
    %t = arith.mulf %x, %scale : f32
    %d = arith.subf %t, %mi : f32
    %e = math.exp2 %d : f32
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %e, %zero : f32
    tile.yield %r : f32
  }
  return %p : !tile.fragment<64x128xf32>
}

// A map without inputs builds a tile from its indices (here a mask).
// CHECK-LABEL: func @index_only
func.func @index_only() -> !tile.fragment<64x64xi1> {
  // CHECK: tile.map() : () -> !tile.fragment<64x64xi1>
  %mask = tile.map () : () -> !tile.fragment<64x64xi1> {
  ^bb0(%i: index, %j: index):
    %lt = arith.cmpi ult, %j, %i : index
    tile.yield %lt : i1
  }
  return %mask : !tile.fragment<64x64xi1>
}
