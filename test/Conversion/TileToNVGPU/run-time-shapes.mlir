// Tensors whose sizes and strides are known only at run time: their tensor
// maps record the dynamic sizes and strides for the host, which encodes the
// maps from the tensors it launches with.
// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))' | FileCheck %s

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @run_time_shapes
    // CHECK-SAME: sinkattn.tensor_map_args = array<i64: 2, 3>
    // CHECK-SAME: sinkattn.tensor_maps = [{box = array<i64: 1, 64, 64>, shape = array<i64: -9223372036854775808, -9223372036854775808, 64>, source = 0 : i64}, {box = array<i64: 64, 64>, shape = array<i64: -9223372036854775808, 64>, source = 1 : i64, strides = array<i64: -9223372036854775808, 1>}]
    gpu.func @run_time_shapes(%A: memref<?x?x64xbf16>, %O: memref<?x64xbf16, strided<[?, 1]>>) kernel {
      %c0 = arith.constant 0 : index
      %h = gpu.block_id y
      %m = gpu.block_id x
      %tile = memref.alloc() {alignment = 1024} : memref<64x64xbf16, 3>
      %bars = tile.alloc_barrier [1] : !tile.barriers<1>
      tile.tma_load %A[%h, %m, %c0], %tile, barrier(%bars[%c0]) : memref<?x?x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
      tile.mbarrier_wait_parity %bars[%c0], %c0 : !tile.barriers<1>
      tile.tma_store %tile, %O[%m, %c0] : memref<64x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1]>>
      gpu.return
    }

    // A static strided view records its strides too.
    // CHECK-LABEL: gpu.func @static_strided
    // CHECK-SAME: sinkattn.tensor_maps = [{box = array<i64: 64, 64>, shape = array<i64: 128, 64>, source = 0 : i64, strides = array<i64: 192, 1>}]
    gpu.func @static_strided(%A: memref<128x64xbf16, strided<[192, 1]>>) kernel {
      %c0 = arith.constant 0 : index
      %tile = memref.alloc() {alignment = 1024} : memref<64x64xbf16, 3>
      %bars = tile.alloc_barrier [1] : !tile.barriers<1>
      tile.tma_load %A[%c0, %c0], %tile, barrier(%bars[%c0]) : memref<128x64xbf16, strided<[192, 1]>>, memref<64x64xbf16, 3>, !tile.barriers<1>
      gpu.return
    }
  }
}
