// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @vector_source(%o: !tile.fragment<64xf32>, %a: !tile.fragment<64xf32>) {
  // expected-error @+1 {{'tile.scale_rows' op scales the rows of a 2-D fragment by a row vector, got ranks 1 and 1}}
  %r = tile.scale_rows %o by %a : !tile.fragment<64xf32>, !tile.fragment<64xf32>
  return
}

// -----

func.func @tile_factors(%o: !tile.fragment<64x64xf32>, %a: !tile.fragment<64x8xf32>) {
  // expected-error @+1 {{'tile.scale_rows' op scales the rows of a 2-D fragment by a row vector, got ranks 2 and 2}}
  %r = tile.scale_rows %o by %a : !tile.fragment<64x64xf32>, !tile.fragment<64x8xf32>
  return
}

// -----

func.func @element_types_differ(%o: !tile.fragment<64x64xf32>, %a: !tile.fragment<64xf16>) {
  // expected-error @+1 {{'tile.scale_rows' op needs floating-point elements of one type: source holds 'f32', factors 'f16'}}
  %r = tile.scale_rows %o by %a : !tile.fragment<64x64xf32>, !tile.fragment<64xf16>
  return
}

// -----

func.func @integers(%o: !tile.fragment<64x64xi32>, %a: !tile.fragment<64xi32>) {
  // expected-error @+1 {{'tile.scale_rows' op needs floating-point elements of one type: source holds 'i32', factors 'i32'}}
  %r = tile.scale_rows %o by %a : !tile.fragment<64x64xi32>, !tile.fragment<64xi32>
  return
}

// -----

func.func @row_count(%o: !tile.fragment<128x64xf32>, %a: !tile.fragment<64xf32>) {
  // expected-error @+1 {{'tile.scale_rows' op has 64 factors for 128 rows}}
  %r = tile.scale_rows %o by %a : !tile.fragment<128x64xf32>, !tile.fragment<64xf32>
  return
}
