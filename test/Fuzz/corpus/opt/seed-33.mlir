// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @vector_source(%s: !tile.fragment<64xf32>) {
  // expected-error @+1 {{'tile.partial_reduce' op combines the columns of a 2-D fragment into a 2-D fragment, got ranks 1 and 2}}
  %r = tile.partial_reduce sum %s : !tile.fragment<64xf32> -> !tile.fragment<64x8xf32>
  return
}

// -----

func.func @vector_result(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.partial_reduce' op combines the columns of a 2-D fragment into a 2-D fragment, got ranks 2 and 1}}
  %r = tile.partial_reduce sum %s : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  return
}

// -----

func.func @element_type_mismatch(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.partial_reduce' op element type mismatch: source holds 'f32' but result holds 'f16'}}
  %r = tile.partial_reduce sum %s : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf16>
  return
}

// -----

func.func @rows_differ(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.partial_reduce' op shape mismatch: the result has 128 rows, the source 64}}
  %r = tile.partial_reduce sum %s : !tile.fragment<64x128xf32> -> !tile.fragment<128x8xf32>
  return
}

// -----

func.func @width_not_multiple_of_8(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.partial_reduce' op result has 4 columns; it needs a multiple of 8 so that each thread combines only its own registers}}
  %r = tile.partial_reduce sum %s : !tile.fragment<64x128xf32> -> !tile.fragment<64x4xf32>
  return
}

// -----

func.func @width_not_dividing(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.partial_reduce' op result has 48 columns, which do not divide the source's 128}}
  %r = tile.partial_reduce sum %s : !tile.fragment<64x128xf32> -> !tile.fragment<64x48xf32>
  return
}

// -----

func.func @unknown_kind(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [max, min, sum]}}
  %r = tile.partial_reduce prod %s : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf32>
  return
}
