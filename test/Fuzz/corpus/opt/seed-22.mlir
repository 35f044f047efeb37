// RUN: sinkattn-opt %s --tile-lower-barriers -verify-diagnostics

func.func @nested(%cond: i1) {
  scf.if %cond {
    // expected-error @+1 {{'tile.alloc_barrier' op must be allocated at the top level of the kernel: its initialization ends with a block-wide barrier every thread must reach}}
    %bars = tile.alloc_barrier [1] : !tile.barriers<1>
  }
  return
}
