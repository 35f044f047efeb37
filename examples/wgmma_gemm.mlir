// A TMA + mbarrier + wgmma GEMM written with upstream nvgpu ops:
// D[M,N] (f32) = A[M,K] (bf16, row-major) * B[K,N] (bf16, row-major).
// One warpgroup computes a 128x128 tile of D per block: each K step loads a
// 128x64 tile of A and two 64x64 boxes of B (128-byte swizzle limits a bf16
// box to 64 columns) on one mbarrier, then issues wgmma m64n128k16.
//
// Kernel ABI: (CUtensorMap of A, CUtensorMap of B, both by value as grid
// constants; memref descriptor of D; K). Grid: (N/128, M/128), 128 threads.
!barriers = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
!mapA = !nvgpu.tensormap.descriptor<tensor = memref<128x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!mapB = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
module attributes {gpu.container_module} {
  gpu.module @wgmma_gemm {
    memref.global "private" @smemA : memref<128x64xbf16, 3> {alignment = 1024 : i64}
    memref.global "private" @smemB : memref<2x64x64xbf16, 3> {alignment = 1024 : i64}
    gpu.func @wgmma_gemm(%descAPtr: !llvm.ptr, %descBPtr: !llvm.ptr, %D: memref<?x?xf32>, %K: index) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 0, 1>} {
      %descA = builtin.unrealized_conversion_cast %descAPtr : !llvm.ptr to !mapA
      %descB = builtin.unrealized_conversion_cast %descBPtr : !llvm.ptr to !mapB
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %bytes = arith.constant 32768 : index
      %ticks = arith.constant 10000000 : index
      %tid = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %row0 = arith.muli %by, %c128 : index
      %col0 = arith.muli %bx, %c128 : index
      %sA = memref.get_global @smemA : memref<128x64xbf16, 3>
      // B's 64x128 tile is two dense 64x64 boxes, one after the other (a TMA
      // box lands contiguously); wgmma reads that layout through one
      // descriptor of the whole 64x128 tile.
      %sB2 = memref.get_global @smemB : memref<2x64x64xbf16, 3>
      %sB = memref.reinterpret_cast %sB2 to offset: [0], sizes: [64, 128], strides: [128, 1] : memref<2x64x64xbf16, 3> to memref<64x128xbf16, 3>
      %sB0 = memref.subview %sB2[0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1]>, 3>
      %sB1 = memref.subview %sB2[1, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: 4096>, 3>
      %bar = nvgpu.mbarrier.create -> !barriers
      %leader = arith.cmpi eq, %tid, %c0 : index
      scf.if %leader {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !barriers
        nvvm.fence.mbarrier.init
      }
      gpu.barrier
      %init = nvgpu.warpgroup.mma.init.accumulator -> !acc
      %kTiles = arith.divui %K, %c64 : index
      %res = scf.for %kt = %c0 to %kTiles step %c1 iter_args(%a = %init) -> (!acc) {
        %k0 = arith.muli %kt, %c64 : index
        scf.if %leader {
          nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %bytes : !barriers
          nvgpu.tma.async.load %descA[%k0, %row0], %bar[%c0] to %sA : !mapA, !barriers -> memref<128x64xbf16, 3>
          %col1 = arith.addi %col0, %c64 : index
          nvgpu.tma.async.load %descB[%col0, %k0], %bar[%c0] to %sB0 : !mapB, !barriers -> memref<64x64xbf16, strided<[64, 1]>, 3>
          nvgpu.tma.async.load %descB[%col1, %k0], %bar[%c0] to %sB1 : !mapB, !barriers -> memref<64x64xbf16, strided<[64, 1], offset: 4096>, 3>
        }
        %parityIdx = arith.remui %kt, %c2 : index
        %parity = arith.index_cast %parityIdx : index to i1
        nvgpu.mbarrier.try_wait.parity %bar[%c0], %parity, %ticks : !barriers
        %dA = nvgpu.warpgroup.generate.descriptor %sA, %descA : memref<128x64xbf16, 3>, !mapA -> !nvgpu.warpgroup.descriptor<tensor = memref<128x64xbf16, 3>>
        %dB = nvgpu.warpgroup.generate.descriptor %sB, %descB : memref<64x128xbf16, 3>, !mapB -> !nvgpu.warpgroup.descriptor<tensor = memref<64x128xbf16, 3>>
        %n = nvgpu.warpgroup.mma %dA, %dB, %a {transposeB} : <tensor = memref<128x64xbf16, 3>>, <tensor = memref<64x128xbf16, 3>>, !acc -> !acc
        nvvm.wgmma.wait.group.sync.aligned 0
        // Every thread is done reading the tiles before the next load.
        gpu.barrier
        scf.yield %n : !acc
      }
      %tileD = memref.subview %D[%row0, %col0] [128, 128] [1, 1] : memref<?x?xf32> to memref<128x128xf32, strided<[?, 1], offset: ?>>
      nvgpu.warpgroup.mma.store %res, %tileD : !acc to memref<128x128xf32, strided<[?, 1], offset: ?>>
      gpu.return
    }
  }
}
