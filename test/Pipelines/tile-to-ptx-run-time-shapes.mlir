// A kernel whose tensors have run-time sizes and strides takes them as
// memref descriptors (upstream's calling convention: allocated and aligned
// pointers, offset, sizes, strides); its tensor maps still come last, by
// value, at their positions in that signature.
// RUN: rm -rf %t && mkdir -p %t
// RUN: sinkattn-opt %s --sinkattn-tile-to-ptx --sinkattn-write-ptx=output-dir=%t -o /dev/null
// RUN: FileCheck %s --input-file=%t/kernels.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/kernels.ptx -o %t/kernels.cubin %}
// Bare pointers need static shapes: upstream's conversion refuses the kernel.
// RUN: not sinkattn-opt %s --sinkattn-tile-to-ptx=bare-pointers=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=BARE

// CHECK: .entry copy_tile(
// A (rank 3): pointers, offset, three sizes, three strides.
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_tile_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_tile_param_1,
// CHECK-COUNT-7: .param .u64 copy_tile_param_{{[2-8]}},
// O (rank 2, strided): pointers, offset, two sizes, two strides.
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_tile_param_9,
// CHECK-NEXT: .param .u64 .ptr .align 1 copy_tile_param_10,
// CHECK-COUNT-5: .param .u64 copy_tile_param_{{1[1-5]}},
// CHECK-NEXT: .param .align 64 .b8 copy_tile_param_16[128],
// CHECK-NEXT: .param .align 64 .b8 copy_tile_param_17[128]
// CHECK-NEXT: )
// CHECK: cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK: cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group

// BARE: failed to legalize operation 'gpu.func'
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @copy_tile(%A: memref<?x?x64xbf16>, %O: memref<?x64xbf16, strided<[?, 1]>>) kernel {
      %c0 = arith.constant 0 : index
      %h = gpu.block_id y
      %m = gpu.block_id x
      %tile = memref.alloc() {alignment = 1024} : memref<64x64xbf16, 3>
      tile.copy %A[%h, %m, %c0], %tile : memref<?x?x64xbf16>, memref<64x64xbf16, 3>
      tile.copy %tile, %O[%m, %c0] : memref<64x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1]>>
      gpu.return
    }
  }
}
