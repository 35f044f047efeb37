func.func @consumer(%A: memref<1024x64xbf16>, %sA: memref<64x64xbf16, 3>, %i: index, %p: index) -> !tile.fragment<64x64xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  tile.tma_copy %A[%i, %c0], %sA, barrier(%bars[%c0]) : memref<1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  tile.mbarrier_arrive %bars[%c0] : !tile.barriers<1>
  tile.mbarrier_wait_parity %bars[%c0], %p : !tile.barriers<1>
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %s = tile.gemm %sA, %sA, %acc {transpose_b} : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  return %s : !tile.fragment<64x64xf32>
}
