// Four stages of a 64 KiB tile exceed the GPU's shared memory (see
// test/Pipelines/tile-to-nvgpu-limits.mlir).
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
