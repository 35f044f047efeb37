// RUN: sinkattn-opt %s --tile-multi-version-buffers -split-input-file -verify-diagnostics

func.func @buffer_used_after_loop(%A: memref<4096x64xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'memref.alloc' op is filled by TMA in a pipelined loop but also used outside it; multi-versioning needs every use inside the loop}}
  %buf = memref.alloc() : memref<64x64xbf16, 3>
  %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  scf.for %k = %c0 to %c8 step %c1 {
    tile.tma_copy %A[%k, %c0], %buf, barrier(%bars[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  } {tile.num_stages = 2}
  %x = memref.load %buf[%c0, %c0] : memref<64x64xbf16, 3>
  return
}

// -----

func.func @barrier_used_before_loop(%A: memref<4096x64xbf16>, %buf: memref<64x64xbf16, 3>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'tile.alloc_barrier' op is used in a pipelined loop and outside it; multi-versioning needs every use inside the loop}}
  %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  tile.mbarrier_arrive %bars[%c0] : !tile.barriers<1>
  scf.for %k = %c0 to %c8 step %c1 {
    tile.tma_copy %A[%k, %c0], %buf, barrier(%bars[%c0]) : memref<4096x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  } {tile.num_stages = 2}
  return
}

