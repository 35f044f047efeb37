// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))'

gpu.module @kernels {
  gpu.func @not_an_argument(%i: index) kernel {
    %c0 = arith.constant 0 : index
    %A = memref.alloc() : memref<64x64xbf16>
    %tile = memref.alloc() : memref<64x64xbf16, 3>
    %bars = tile.alloc_barrier [1] : !tile.barriers<1>
    // expected-error @+1 {{'tile.tma_load' op needs its global tensor to be a kernel argument (its tensor map is passed to the kernel)}}
    tile.tma_load %A[%i, %c0], %tile, barrier(%bars[%c0]) : memref<64x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @copy_not_lowered(%A: memref<64x64xbf16>, %i: index) kernel {
    %c0 = arith.constant 0 : index
    %tile = memref.alloc() : memref<64x64xbf16, 3>
    // expected-error @+1 {{failed to legalize operation 'tile.copy' that was explicitly marked illegal}}
    tile.copy %A[%i, %c0], %tile : memref<64x64xbf16>, memref<64x64xbf16, 3>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @dynamic_shared(%n: index) kernel {
    // expected-error @+1 {{'memref.alloc' op shared allocations need a static shape and the identity layout to be placed in dynamic shared memory, got 'memref<?xf32, 3>'}}
    %tile = memref.alloc(%n) : memref<?xf32, 3>
    gpu.return
  }
}

// -----

#transposed = affine_map<(d0, d1) -> (d1 * 64 + d0)>
gpu.module @kernels {
  gpu.func @column_major(%A: memref<64x64xbf16, #transposed>, %i: index) kernel {
    %c0 = arith.constant 0 : index
    %tile = memref.alloc() : memref<64x64xbf16, 3>
    %bars = tile.alloc_barrier [1] : !tile.barriers<1>
    // expected-error @+1 {{'tile.tma_load' op needs a global tensor whose innermost dimension has stride 1, got 'memref<64x64xbf16, affine_map<(d0, d1) -> (d1 * 64 + d0)>>'}}
    tile.tma_load %A[%i, %c0], %tile, barrier(%bars[%c0]) : memref<64x64xbf16, #transposed>, memref<64x64xbf16, 3>, !tile.barriers<1>
    gpu.return
  }
}

// -----

#folded = affine_map<(d0, d1) -> (d0 mod 8 + d1 * 64)>
gpu.module @kernels {
  gpu.func @not_strided(%A: memref<64x64xbf16, #folded>, %i: index) kernel {
    %c0 = arith.constant 0 : index
    %tile = memref.alloc() : memref<64x64xbf16, 3>
    %bars = tile.alloc_barrier [1] : !tile.barriers<1>
    // expected-error @+1 {{'tile.tma_load' op needs a global tensor with a strided layout (its tensor map holds sizes and strides), got 'memref<64x64xbf16, affine_map<(d0, d1) -> (d0 mod 8 + d1 * 64)>>'}}
    tile.tma_load %A[%i, %c0], %tile, barrier(%bars[%c0]) : memref<64x64xbf16, #folded>, memref<64x64xbf16, 3>, !tile.barriers<1>
    gpu.return
  }
}
