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

// -----

// expected-error @+1 {{a fragment layout must be a #tile.layout, got "wgmma_acc"}}
func.func @not_a_layout(%x: !tile.fragment<64x64xf16, "wgmma_acc">) {
  return
}

// -----

// expected-error @+1 {{#tile.layout<accumulator> needs a multiple of 64 rows (wgmma works on 64-row blocks), got 32}}
func.func @acc_rows(%x: !tile.fragment<32x64xf32, #tile.layout<accumulator>>) {
  return
}

// -----

// expected-error @+1 {{#tile.layout<accumulator> needs a multiple of 8 columns (wgmma n), got 12}}
func.func @acc_cols(%x: !tile.fragment<64x12xf32, #tile.layout<accumulator>>) {
  return
}

// -----

// expected-error @+1 {{#tile.layout<operand_a> holds bf16 or f16 elements (wgmma A), got f32}}
func.func @operand_a_f32(%x: !tile.fragment<64x64xf32, #tile.layout<operand_a>>) {
  return
}

// -----

// expected-error @+1 {{#tile.layout<operand_a> needs a multiple of 16 columns (wgmma k), got 24}}
func.func @operand_a_k(%x: !tile.fragment<64x24xbf16, #tile.layout<operand_a>>) {
  return
}

// -----

// expected-error @+1 {{#tile.layout<rows> distributes rank-1 fragments, got rank 2}}
func.func @rows_rank(%x: !tile.fragment<64x64xf32, #tile.layout<rows>>) {
  return
}

// -----

// expected-error @+2 {{expected ::sinkattn::tile::LayoutKind to be one of: accumulator, operand_a, rows}}
// expected-error @+1 {{failed to parse Tile_LayoutAttr parameter 'value'}}
func.func @bad_kind(%x: !tile.fragment<64xf32, #tile.layout<columns>>) {
  return
}

// -----

// expected-error @+1 {{a fragment has at most 65536 elements (512 per thread of a warpgroup), got 128x1024}}
func.func @too_many_elements(%x: !tile.fragment<128x1024xf32>) {
  return
}

// -----

// expected-error @+1 {{a fragment has at most 65536 elements (512 per thread of a warpgroup), got 4294967296x4294967296}}
func.func @overflowing_shape(%x: !tile.fragment<4294967296x4294967296xf32>) {
  return
}
