// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))' | FileCheck %s

// A 128-byte-swizzled 64x128 bf16 tile is two panels of 64 columns (128
// bytes per row), one TMA box each: the tensor map has a 64x64 box and the
// 128B swizzle, the second panel lands 64*64 elements after the first and
// reads columns 64 further.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @load_swizzled
    // CHECK-SAME: sinkattn.tensor_maps = [{box = array<i64: 1, 64, 64>, shape = array<i64: 4, 256, 128>, source = 0 : i64, swizzle = 128 : i64}]
    // CHECK: !nvgpu.tensormap.descriptor<tensor = memref<1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
    // CHECK: %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[TILE:.*]] :
    // CHECK: %[[P0:.*]] = arith.addi %[[OFFSET]], %c0
    // CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[P0]]], sizes: [64, 64], strides: [64, 1]
    // CHECK: %[[P1:.*]] = arith.addi %[[OFFSET]], %c4096
    // CHECK: %[[PANEL1:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[P1]]], sizes: [64, 64], strides: [64, 1]
    // CHECK: %[[COL1:.*]] = arith.addi %{{.*}}, %c64
    // CHECK: nvgpu.tma.async.load
    // CHECK: %[[BOX1:.*]] = memref.expand_shape %[[PANEL1]]
    // CHECK: nvgpu.tma.async.load %{{.*}}[%[[COL1]], %{{.*}}, %{{.*}}], %{{.*}} to %[[BOX1]]
    gpu.func @load_swizzled(%A: memref<4x256x128xbf16>, %h: index, %m: index) kernel {
      %c0 = arith.constant 0 : index
      %bars = tile.alloc_barrier [1] : !tile.barriers<1>
      %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
      tile.tma_load %A[%h, %m, %c0], %s, barrier(%bars[%c0]) {swizzle = 128 : i64}
          : memref<4x256x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
      gpu.return
    }
  }
}
