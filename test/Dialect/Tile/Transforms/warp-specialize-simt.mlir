// RUN: sinkattn-opt %s --tile-warp-specialize --split-input-file -verify-diagnostics | FileCheck %s

// A producer with cp.async (SIMT) copies: its whole warpgroup (threads
// 0-127, first) copies, each thread its 16-byte chunks, for the 256
// consumers (not 256 producers as in the seed: see docs/design.md). The
// loop's one group mixes a cp.async copy (sK) and a TMA copy (sV): its
// forward barriers count 128 arrivals, one cp.async.mbarrier.arrive.noinc
// per producer thread, and the TMA copy only adds expected bytes, so the
// producer never also arrives with mbarrier_arrive (no over-arrival). The
// Q tile before the loop (cp.async) has its own barrier of 128. Registers:
// the producer drops to 56 (address arithmetic per chunk), which leaves
// the consumers (65536 - 128·56) / 256 = 228, rounded to 224.
// cp.async data goes through the generic proxy: the consumers fence after
// each wait, before wgmma reads it.
// CHECK-LABEL: gpu.func @simt_producer
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [128, 128] : !tile.barriers<2>
// CHECK: %[[EMPTY:.*]] = tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK: %[[PRE:.*]] = tile.alloc_barrier [128] : !tile.barriers<1>
// CHECK-NOT: tile.alloc_barrier
// CHECK: %[[IS_PRODUCER:.*]] = arith.cmpi ult, %{{.*}}, %c128
// CHECK: scf.if %[[IS_PRODUCER]] {
// CHECK:   nvvm.setmaxregister  decrease 56
// CHECK:   tile.cp_async %{{.*}}, %{{.*}} : memref<?x64xbf16>
// CHECK:   tile.cp_async_arrive %[[PRE]][%{{.*}}]
// CHECK:   scf.for
// CHECK:     tile.mbarrier_wait_parity %[[EMPTY]][%[[SLOT:.*]]], %{{.*}}
// CHECK:     tile.cp_async %{{.*}}, %{{.*}} : memref<?x64xbf16>
// CHECK:     tile.tma_copy %{{.*}}, barrier(%[[FULL]][%[[SLOT]]])
// CHECK:     tile.cp_async_arrive %[[FULL]][%[[SLOT]]]
// CHECK-NOT: tile.mbarrier_arrive
// CHECK: } {tile.role = "producer", tile.thread_base = 0 : i64, tile.thread_count = 128 : i64}
// CHECK: scf.if
// CHECK:   nvvm.setmaxregister  increase 224
// CHECK:   %[[RAW:.*]] = gpu.thread_id  x
// CHECK:   arith.subi %[[RAW]], %c128
// CHECK:   tile.mbarrier_wait_parity %[[PRE]]
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK:   scf.for
// CHECK:     tile.mbarrier_wait_parity %[[FULL]]
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: tile.gemm
// CHECK:     tile.mbarrier_arrive %[[EMPTY]]
// CHECK: } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @simt_producer(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %V: memref<?x64xbf16>, %O: memref<?x64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sV = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      tile.copy %Q[%c0, %c0], %sQ {engine = #tile.engine<cp_async>} : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %k0 = arith.muli %k, %c64 : index
        tile.copy %K[%k0, %c0], %sK {engine = #tile.engine<cp_async>} : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %V[%k0, %c0], %sV : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %s = tile.gemm %sK, %sV, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %d = tile.gemm %sQ, %sQ, %s {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %O[%c0, %c0] : !tile.fragment<64x64xf32>, memref<?x64xf32>
      gpu.return
    }
  }
}

// -----

// One consumer warpgroup: the SIMT producer has the consumers' full
// extent (128 = C), all of them copy and arrive, and no registers move
// (an even split already gives everyone 255).
// CHECK-LABEL: gpu.func @full_extent
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [128, 128, 128] : !tile.barriers<3>
// CHECK: %[[EMPTY:.*]] = tile.alloc_barrier [128, 128, 128] : !tile.barriers<3>
// CHECK-NOT: nvvm.setmaxregister
// CHECK: scf.for
// CHECK:   tile.mbarrier_wait_parity %[[EMPTY]]
// CHECK:   tile.cp_async
// CHECK:   tile.cp_async_arrive %[[FULL]]
// CHECK: } {tile.role = "producer", tile.thread_base = 0 : i64, tile.thread_count = 128 : i64}
// CHECK: } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 128 : i64}
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @full_extent(%K: memref<?x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %K[%k, %c0], %sK {engine = #tile.engine<cp_async>} : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %s = tile.gemm %sK, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %s : !tile.fragment<64x64xf32>
      } {tile.num_stages = 3}
      gpu.return
    }
  }
}
