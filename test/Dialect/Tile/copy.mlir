// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// CHECK-LABEL: func @copy_global_to_shared
func.func @copy_global_to_shared(%A: memref<4096x4096xbf16>, %m: index, %k: index) {
  %sA = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: tile.copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  tile.copy %A[%m, %k], %sA : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// A rank-2 tile of a rank-4 BHSD tensor, into a slice of a multi-stage
// buffer in the NVVM integer address space 3.
// CHECK-LABEL: func @copy_bhsd_tile_into_stage
func.func @copy_bhsd_tile_into_stage(%K: memref<?x?x?x128xbf16>, %b: index, %h: index, %n: index, %stage: index) {
  %c0 = arith.constant 0 : index
  %buf = memref.alloc() : memref<2x128x128xbf16, 3>
  %s = memref.subview %buf[%stage, 0, 0] [1, 128, 128] [1, 1, 1]
      : memref<2x128x128xbf16, 3> to memref<128x128xbf16, strided<[128, 1], offset: ?>, 3>
  // CHECK: tile.copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} : memref<?x?x?x128xbf16>, memref<128x128xbf16, strided<[128, 1], offset: ?>, 3>
  tile.copy %K[%b, %h, %n, %c0], %s : memref<?x?x?x128xbf16>, memref<128x128xbf16, strided<[128, 1], offset: ?>, 3>
  return
}

// CHECK-LABEL: func @copy_shared_to_global
func.func @copy_shared_to_global(%O: memref<?x64xf16, #gpu.address_space<global>>, %m: index) {
  %c0 = arith.constant 0 : index
  %sO = memref.alloc() : memref<64x64xf16, #gpu.address_space<workgroup>>
  // CHECK: tile.copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : memref<64x64xf16, #gpu.address_space<workgroup>>, memref<?x64xf16, #gpu.address_space<global>>
  tile.copy %sO, %O[%m, %c0] : memref<64x64xf16, #gpu.address_space<workgroup>>, memref<?x64xf16, #gpu.address_space<global>>
  return
}

// A load that asks for cp.async instead of TMA.
// CHECK-LABEL: func @copy_with_cp_async
func.func @copy_with_cp_async(%A: memref<4096x4096xbf16>, %m: index, %k: index) {
  %sA = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: tile.copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} {engine = #tile.engine<cp_async>} : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  tile.copy %A[%m, %k], %sA {engine = #tile.engine<cp_async>} : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  // CHECK: tile.copy %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} {engine = #tile.engine<tma>}
  tile.copy %A[%m, %k], %sA {engine = #tile.engine<tma>} : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
  return
}

// A reduce-add store.
// CHECK-LABEL: func @store_add
func.func @store_add(%s: memref<64x64xf32, 3>, %O: memref<1024x64xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  // CHECK: tile.copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {add} : memref<64x64xf32, 3>, memref<1024x64xf32>
  tile.copy %s, %O[%m, %c0] {add} : memref<64x64xf32, 3>, memref<1024x64xf32>
  scf.for %i = %c0 to %m step %m {
    // CHECK: tile.copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {add, pending = 1 : i64} : memref<64x64xf32, 3>, memref<1024x64xf32>
    tile.copy %s, %O[%i, %c0] {add, pending = 1} : memref<64x64xf32, 3>, memref<1024x64xf32>
  }
  return
}
