// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @missing_dimension(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op reduces along dimension 2, which a rank-2 fragment does not have}}
  %m = tile.reduce max %s along 2 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  return
}

// -----

func.func @wrong_result_shape(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op shape mismatch: reducing 64x128 along dimension 1 gives 64, not 128}}
  %m = tile.reduce max %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<128xf32>
  return
}

// -----

func.func @element_type_mismatch(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op element type mismatch: source holds 'f32' but result holds 'f16'}}
  %m = tile.reduce sum %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf16>
  return
}

// -----

func.func @vector_source(%s: !tile.fragment<64xf32>) {
  // expected-error @+1 {{'tile.reduce' op reduces a 2-D fragment to a row or column vector, got rank 1}}
  %m = tile.reduce sum %s along 0 : !tile.fragment<64xf32> -> !tile.fragment<64xf32>
  return
}

// -----

func.func @negative_dimension(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.reduce' op attribute 'dim' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %m = tile.reduce sum %s along -1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  return
}

// -----

func.func @unknown_kind(%s: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [max, min, sum]}}
  %m = tile.reduce prod %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
  return
}
