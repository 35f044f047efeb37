// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

// The bounds are accepted.
func.func @bounds() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 1}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 64}
  return
}

// -----

func.func @zero() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be in [1, 64], got 0}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 0}
  return
}

// -----

func.func @above_bound() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be in [1, 64], got 65}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 65}
  return
}

// -----

func.func @huge() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be in [1, 64], got 4294967296}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 4294967296}
  return
}

// -----

func.func @negative() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be in [1, 64], got -2}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = -2}
  return
}

// -----

func.func @wider_than_64_bits() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be in [1, 64], got 18446744073709551618}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 18446744073709551618 : i128}
  return
}

// -----

func.func @unsigned_above_bound() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be in [1, 64], got 18446744073709551615}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = 18446744073709551615 : ui64}
  return
}

// -----

func.func @not_an_integer() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{'scf.for' op 'tile.num_stages' must be an integer attribute, got "two"}}
  scf.for %k = %c0 to %c8 step %c1 {
  } {tile.num_stages = "two"}
  return
}
