// RUN: sinkattn-opt %s --tile-warp-specialize --tile-lower-copies | FileCheck %s

// Copies left to the consumers after warp specialization are lowered for
// their role: the single-thread work goes to the role's first thread (128,
// the first consumer) and block syncs become a named barrier of the
// consumers only (bar.sync 2, 128), since the producer never reaches them.
// The producer's loads go to its thread 0.
// CHECK-LABEL: gpu.func @store_through_shared
// CHECK-DAG: %[[ID:.*]] = arith.constant 2 : i32
// CHECK-DAG: %[[COUNT:.*]] = arith.constant 128 : i32
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: scf.if
// CHECK:   arith.cmpi eq, %{{.*}}, %[[C0]]
// CHECK:   tile.tma_load
// CHECK: tile.role = "producer"
// CHECK: scf.if
// CHECK:   tile.store
// CHECK:   nvvm.barrier id = %[[ID]] number_of_threads = %[[COUNT]]
// CHECK:   %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %[[C128]] : index
// CHECK:   scf.if %[[LEADER]] {
// CHECK:     nvvm.fence.proxy
// CHECK:     tile.tma_store
// CHECK:   nvvm.barrier id = %[[ID]] number_of_threads = %[[COUNT]]
// CHECK-NOT: gpu.barrier
// CHECK: tile.role = "consumer"
!s = memref<64x64xbf16, #gpu.address_space<workgroup>>
!acc = !tile.fragment<64x64xf32>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @store_through_shared(%A: memref<1024x64xbf16>, %O: memref<64x64xbf16>, %n: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : !s
      %sO = memref.alloc() : !s
      %acc0 = tile.fill %zero : !acc
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!acc) {
        tile.copy %A[%i, %c0], %sA : memref<1024x64xbf16>, !s
        %d = tile.gemm %sA, %sA, %acc {transpose_b} : !s, !s, !acc
        scf.yield %d : !acc
      } {tile.num_stages = 2}
      %r16 = tile.cast %r : !acc to !tile.fragment<64x64xbf16>
      tile.store %r16, %sO[%c0, %c0] : !tile.fragment<64x64xbf16>, !s
      tile.copy %sO, %O[%c0, %c0] : !s, memref<64x64xbf16>
      gpu.return
    }
  }
}
