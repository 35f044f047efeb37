// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @arrive_out_of_range() {
  %c2 = arith.constant 2 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  // expected-error @+1 {{'tile.mbarrier_arrive' op barrier index 2 is out of range for '!tile.barriers<2>' (slots 0..1)}}
  tile.mbarrier_arrive %b[%c2] : !tile.barriers<2>
  return
}

// -----

func.func @arrive_negative_index() {
  %c = arith.constant -1 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  // expected-error @+1 {{barrier index -1 is out of range}}
  tile.mbarrier_arrive %b[%c] : !tile.barriers<2>
  return
}

// -----

func.func @arrive_count_zero(%i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.mbarrier_arrive' op arrive count 0 must be in [1, 1048575]}}
  tile.mbarrier_arrive %b[%i] count 0 : !tile.barriers<1>
  return
}

// -----

func.func @expect_tx_out_of_range() {
  %c4 = arith.constant 4 : index
  %b = tile.alloc_barrier [1, 1, 1, 1] : !tile.barriers<4>
  // expected-error @+1 {{'tile.mbarrier_expect_tx' op barrier index 4 is out of range for '!tile.barriers<4>' (slots 0..3)}}
  tile.mbarrier_expect_tx %b[%c4], 128 : !tile.barriers<4>
  return
}

// -----

func.func @expect_tx_too_many_bytes(%i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.mbarrier_expect_tx' op expects 1048576 transaction bytes; an mbarrier phase can expect 1 to 1048575 bytes}}
  tile.mbarrier_expect_tx %b[%i], 1048576 : !tile.barriers<1>
  return
}

// -----

func.func @expect_tx_zero_bytes(%i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{expects 0 transaction bytes}}
  tile.mbarrier_expect_tx %b[%i], 0 : !tile.barriers<1>
  return
}

// -----

func.func @wait_out_of_range(%p: index) {
  %c7 = arith.constant 7 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  // expected-error @+1 {{'tile.mbarrier_wait_parity' op barrier index 7 is out of range for '!tile.barriers<2>' (slots 0..1)}}
  tile.mbarrier_wait_parity %b[%c7], %p : !tile.barriers<2>
  return
}

// -----

func.func @wait_bad_parity(%i: index) {
  %c2 = arith.constant 2 : index
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.mbarrier_wait_parity' op parity must be 0 or 1, got 2}}
  tile.mbarrier_wait_parity %b[%i], %c2 : !tile.barriers<1>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @wait_parity_not_index(%i: index, %p: i32) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{use of value '%p' expects different type than prior uses: 'index' vs 'i32'}}
  tile.mbarrier_wait_parity %b[%i], %p : !tile.barriers<1>
  return
}
