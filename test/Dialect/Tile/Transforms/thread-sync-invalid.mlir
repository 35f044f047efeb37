// RUN: sinkattn-opt %s --tile-thread-sync -verify-diagnostics --split-input-file

// Two threads' accesses to different elements of one tile inside the same
// thread-dependent loop: no barrier placement can order them.
func.func @unorderable(%v: f32) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %tid = gpu.thread_id x
  %s = memref.alloc() : memref<128xf32, 3>
  scf.for %i = %tid to %c128 step %c64 {
    // (and the load of the previous trip with this store: loop-carried)
    // expected-error @+1 {{conflicts with another thread's access to the same shared tile inside thread-dependent control flow}}
    memref.store %v, %s[%i] : memref<128xf32, 3>
    %j = arith.addi %i, %c1 : index
    // expected-error @+1 {{conflicts with another thread's access to the same shared tile inside thread-dependent control flow, where no barrier can be placed}}
    %x = memref.load %s[%j] : memref<128xf32, 3>
  }
  return
}

// -----

// A tile left to the kernel's mbarriers in a function that waits on none.
func.func @mbarrier_ordered_without_waits(%p: !tile.fragment<64x64xbf16>, %acc: !tile.fragment<64x64xf32>, %sB: memref<64x64xbf16, 3>) -> !tile.fragment<64x64xf32> {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'memref.alloc' op is marked 'tile.mbarrier_ordered' (the kernel orders its accesses with mbarriers), but the function waits on no mbarrier (tile.mbarrier_wait_parity)}}
  %own = memref.alloc() {tile.mbarrier_ordered} : memref<64x64xbf16, 3>
  tile.store %p, %own[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, 3>
  %d = tile.gemm %own, %sB, %acc : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  return %d : !tile.fragment<64x64xf32>
}
