// Regression: warp-specialize-nested.mlir with 2^32 stages once grew until
// the system killed it; the dialect's verifier now refuses it.
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

