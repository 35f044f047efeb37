// RUN: sinkattn-opt %s --tile-warp-specialize --tile-software-pipeline --split-input-file -verify-diagnostics | FileCheck %s

// The same loop twice: with a declared block size it is warp-specialized
// (and software pipelining leaves the kernel alone); without one,
// specialization declines with a remark and the loop is software-pipelined
// instead — never left without overlap.
// CHECK-LABEL: gpu.func @specialized
// CHECK: tile.role = "producer"
// CHECK: tile.role = "consumer"
// CHECK-LABEL: gpu.func @pipelined
// CHECK-NOT: tile.role
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK: scf.if
// CHECK:   tile.tma_copy
// CHECK: scf.for
// CHECK:   gpu.barrier
// CHECK:   tile.tma_copy
// CHECK:   tile.mbarrier_wait_parity
// CHECK:   tile.gemm
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @specialized(%A: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%k, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
    // expected-remark @+1 {{warp specialization declined: the kernel has no known_block_size, so the consumer thread count is unknown}}
    gpu.func @pipelined(%A: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%k, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}
