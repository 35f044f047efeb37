// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @count_mismatch() {
  // expected-error @+1 {{'tile.alloc_barrier' op has 3 arrive counts but the result has 2 barrier slots}}
  %0 = tile.alloc_barrier [1, 1, 1] : !tile.barriers<2>
  return
}

// -----

func.func @zero_count() {
  // expected-error @+1 {{'tile.alloc_barrier' op slot 1 has arrive count 0; mbarrier arrive counts must be in [1, 1048575]}}
  %0 = tile.alloc_barrier [1, 0] : !tile.barriers<2>
  return
}

// -----

func.func @count_too_large() {
  // expected-error @+1 {{slot 0 has arrive count 1048576; mbarrier arrive counts must be in [1, 1048575]}}
  %0 = tile.alloc_barrier [1048576] : !tile.barriers<1>
  return
}

// -----

// expected-error @+1 {{a barrier array has 1 to 29056 slots (8 bytes each in a block's 232448 bytes of shared memory), got 0}}
func.func @empty_array(%b: !tile.barriers<0>) {
  return
}

// -----

// expected-error @+1 {{a barrier array has 1 to 29056 slots (8 bytes each in a block's 232448 bytes of shared memory), got 4294967296}}
func.func @huge_array(%b: !tile.barriers<4294967296>) {
  return
}
