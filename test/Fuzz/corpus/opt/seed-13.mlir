// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @not_a_prefix(%s: !tile.fragment<64x128xf32>, %v: !tile.fragment<128xf32>) {
  // expected-error @+1 {{'tile.map' op shape mismatch: input 1 is 128, which is neither the result shape 64x128 nor a leading prefix of it to broadcast}}
  %p = tile.map (%s, %v) : (!tile.fragment<64x128xf32>, !tile.fragment<128xf32>) -> !tile.fragment<64x128xf32> {
  ^bb0(%i: index, %j: index, %x: f32, %y: f32):
    tile.yield %x : f32
  }
  return
}

// -----

func.func @wrong_arity(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.map' op body must take 3 arguments (2 indices, then one element per input), got 1}}
  %p = tile.map (%s) : (!tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf32> {
  ^bb0(%x: f32):
    tile.yield %x : f32
  }
  return
}

// -----

func.func @index_not_index(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.map' op body argument 1 is an element index and must be 'index', got 'i32'}}
  %p = tile.map (%s) : (!tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf32> {
  ^bb0(%i: index, %j: i32, %x: f32):
    tile.yield %x : f32
  }
  return
}

// -----

func.func @element_arg_mismatch(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.map' op body argument 2 must have input 0's element type 'f32', got 'f16'}}
  %p = tile.map (%s) : (!tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf32> {
  ^bb0(%i: index, %j: index, %x: f16):
    %y = arith.extf %x : f16 to f32
    tile.yield %y : f32
  }
  return
}

// -----

func.func @yield_mismatch(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.map' op body must yield one 'f16' (the result element type)}}
  %p = tile.map (%s) : (!tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf16> {
  ^bb0(%i: index, %j: index, %x: f32):
    tile.yield %x : f32
  }
  return
}

// -----

func.func @yield_outside_map(%x: f32) {
  // expected-error @+1 {{'tile.yield' op expects parent op 'tile.map'}}
  tile.yield %x : f32
}
