// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @store
func.func @store(%o: !tile.fragment<64x128xbf16>, %lse: !tile.fragment<64xf32>,
                 %O: memref<2x16x1000x128xbf16>, %L: memref<2x16x1000xf32>,
                 %b: index, %h: index, %m: index) {
  %c0 = arith.constant 0 : index
  // CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !tile.fragment<64x128xbf16>, memref<2x16x1000x128xbf16>
  tile.store %o, %O[%b, %h, %m, %c0] : !tile.fragment<64x128xbf16>, memref<2x16x1000x128xbf16>
  // CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : !tile.fragment<64xf32>, memref<2x16x1000xf32>
  tile.store %lse, %L[%b, %h, %m] : !tile.fragment<64xf32>, memref<2x16x1000xf32>
  %s = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  // CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.store %o, %s[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  return
}

// Atomic accumulation into a global f32 tensor.
// CHECK-LABEL: func @store_add
func.func @store_add(%dq: !tile.fragment<64x128xf32>, %D: memref<2x16x1000x128xf32>,
                     %b: index, %h: index, %m: index) {
  %c0 = arith.constant 0 : index
  // CHECK: tile.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {add} : !tile.fragment<64x128xf32>, memref<2x16x1000x128xf32>
  tile.store %dq, %D[%b, %h, %m, %c0] {add} : !tile.fragment<64x128xf32>, memref<2x16x1000x128xf32>
  return
}
