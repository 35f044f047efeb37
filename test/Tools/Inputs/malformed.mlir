func.func @f() {
  %0 = tile.alloc_barrier [1 : !tile.barriers<1>
