// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @fill_type_mismatch(%v: f16) {
  // expected-error @+1 {{'tile.fill' op failed to verify that value type matches the result's element type}}
  %0 = "tile.fill"(%v) : (f16) -> !tile.fragment<64x64xf32>
  return
}

// -----

// expected-error @+1 {{fragments have rank 1 or 2, got rank 3}}
func.func @rank3(%x: !tile.fragment<2x64x64xf32>) {
  return
}

// -----

// expected-error @+1 {{fragment element type must be f32, f16, bf16, i32 or i1, got 'f64'}}
func.func @f64(%x: !tile.fragment<64x64xf64>) {
  return
}

// -----

// expected-error @+1 {{expected static shape}}
func.func @dynamic(%x: !tile.fragment<?x64xf32>) {
  return
}

// -----

// expected-error @+1 {{fragment dimensions must be static and positive}}
func.func @zero_dim(%x: !tile.fragment<0x64xf32>) {
  return
}
