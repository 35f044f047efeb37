// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @shape_change(%p: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.cast' op shape mismatch: cast changes 64x128 into 64x64; only the element type may change}}
  %b = tile.cast %p : !tile.fragment<64x128xf32> to !tile.fragment<64x64xbf16>
  return
}

// -----

func.func @integer(%p: !tile.fragment<64x128xi32>) {
  // expected-error @+1 {{'tile.cast' op converts between float element types, got 'i32' to 'f32'}}
  %b = tile.cast %p : !tile.fragment<64x128xi32> to !tile.fragment<64x128xf32>
  return
}
