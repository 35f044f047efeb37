// Bad input fails fast with an error, inside a memory and time limit: a
// size-like attribute out of range is refused by the verifier before any
// pass builds per-stage state from it, and a kernel whose shared memory
// (after multi-versioning) exceeds the GPU's is refused at compile time.
// RUN: split-file %s %t
// RUN: (%limit_memory && %expect_exit 1 timeout 20 sinkattn-opt %t/huge-num-stages.mlir --sinkattn-tile-to-nvgpu -o /dev/null) 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: (%limit_memory && %expect_exit 1 timeout 20 sinkattn-opt %t/staged-beyond-shared-memory.mlir --sinkattn-tile-to-nvgpu -o /dev/null) 2>&1 | FileCheck %s --check-prefix=SMEM

// test/Dialect/Tile/Transforms/warp-specialize-nested.mlir with 2^32 stages
// (also the fuzz corpus's regression-huge-num-stages.mlir): the passes would
// build 2^32 barrier slots and prologue steps.
// STAGES: huge-num-stages.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'scf.for' op 'tile.num_stages' must be in [1, 64], got 4294967296
//--- huge-num-stages.mlir
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @persistent(%A: memref<?x64xbf16>, %D: memref<?x64xf32>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %bx = gpu.block_id x
      %grid = gpu.grid_dim x
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %bx to %tiles step %grid {
        %row = arith.muli %t, %c64 : index
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          %r0 = arith.addi %row, %k0 : index
          tile.copy %A[%r0, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 4294967296}
        tile.store %r, %D[%row, %c0] : !tile.fragment<64x64xf32>, memref<?x64xf32>
      }
      gpu.return
    }
  }
}

// Four stages of a 64 KiB tile: the tile fits, the staged buffer does not.
// SMEM: error: 'gpu.func' op kernel needs more than 262144 bytes of shared memory, the GPU allows at most 232448
// SMEM: note: this shared allocation alone takes 262144 bytes
//--- staged-beyond-shared-memory.mlir
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @staged(%A: memref<?x128xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<256x128xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x256xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x256xf32>) {
        %row = arith.muli %k, %c256 : index
        tile.copy %A[%row, %c0], %s : memref<?x128xbf16>, memref<256x128xbf16, #gpu.address_space<workgroup>>
        %a = memref.subview %s[0, 0] [64, 128] [1, 1] : memref<256x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16, strided<[128, 1]>, #gpu.address_space<workgroup>>
        %d = tile.gemm %a, %s, %acc {transpose_b} : memref<64x128xbf16, strided<[128, 1]>, #gpu.address_space<workgroup>>, memref<256x128xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x256xf32>
        scf.yield %d : !tile.fragment<64x256xf32>
      } {tile.num_stages = 4}
      gpu.return
    }
  }
}
