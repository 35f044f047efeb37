// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// The two GEMMs of attention: S = Q Kᵀ (SS) and O += P V (RS).
// CHECK-LABEL: func @attention_gemms
func.func @attention_gemms(%sQ: memref<64x128xbf16, 3>, %sK: memref<128x128xbf16, 3>,
                           %sV: memref<128x128xbf16, 3>, %p: !tile.fragment<64x128xbf16>,
                           %o: !tile.fragment<64x128xf32>) -> (!tile.fragment<64x128xf32>, !tile.fragment<64x128xf32>) {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x128xf32>
  // CHECK: tile.gemm %{{.*}}, %{{.*}}, %{{.*}} {transpose_b} : memref<64x128xbf16, 3>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
  %s = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x128xbf16, 3>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
  // CHECK: tile.gemm %{{.*}}, %{{.*}}, %{{.*}} : !tile.fragment<64x128xbf16>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
  %o2 = tile.gemm %p, %sV, %o : !tile.fragment<64x128xbf16>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
  return %s, %o2 : !tile.fragment<64x128xf32>, !tile.fragment<64x128xf32>
}

// Non-square shapes, f16 operands and an f16 accumulator.
// CHECK-LABEL: func @gemm_f16
func.func @gemm_f16(%a: memref<64x32xf16, #gpu.address_space<workgroup>>, %b: memref<32x256xf16, #gpu.address_space<workgroup>>,
                    %c: !tile.fragment<64x256xf16>) -> !tile.fragment<64x256xf16> {
  // CHECK: tile.gemm {{.*}} : memref<64x32xf16, #gpu.address_space<workgroup>>, memref<32x256xf16, #gpu.address_space<workgroup>>, !tile.fragment<64x256xf16>
  %d = tile.gemm %a, %b, %c : memref<64x32xf16, #gpu.address_space<workgroup>>, memref<32x256xf16, #gpu.address_space<workgroup>>, !tile.fragment<64x256xf16>
  return %d : !tile.fragment<64x256xf16>
}

// An async gemm and the wait that makes its result usable.
// CHECK-LABEL: func @async_gemm
// CHECK: %[[S:.*]] = tile.gemm %{{.*}}, %{{.*}}, %{{.*}} {async, transpose_b}
// CHECK: %[[R:.*]]:2 = tile.gemm_wait %[[S]], %{{.*}} pending 1 : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
func.func @async_gemm(%sQ: memref<64x128xbf16, 3>, %sK: memref<128x128xbf16, 3>,
                      %acc: !tile.fragment<64x128xf32>, %m: !tile.fragment<64xf32>)
    -> (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>) {
  %s = tile.gemm %sQ, %sK, %acc {transpose_b, async} : memref<64x128xbf16, 3>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
  %r:2 = tile.gemm_wait %s, %m pending 1 : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
  return %r#0, %r#1 : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
}

// dQ = dS K from dSᵀ in shared memory (transposed A, K x M).
// CHECK-LABEL: func @transposed_a
func.func @transposed_a(%sdSt: memref<64x64xbf16, 3>, %sK: memref<64x128xbf16, 3>,
                        %acc: !tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf32> {
  // CHECK: tile.gemm %{{.*}}, %{{.*}}, %{{.*}} {transpose_a} : memref<64x64xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  %d = tile.gemm %sdSt, %sK, %acc {transpose_a} : memref<64x64xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return %d : !tile.fragment<64x128xf32>
}
