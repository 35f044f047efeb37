// RUN: sinkattn-opt %s --tile-thread-sync -verify-diagnostics

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
