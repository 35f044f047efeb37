// RUN: sinkattn-opt %s -verify-diagnostics --split-input-file

// expected-error @+1 {{'func.func' op 'tile.stride_multiple' must be a positive integer, got 0 : i64}}
func.func @zero(%x: memref<?x64xbf16, strided<[?, 1]>> {tile.stride_multiple = 0 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.stride_multiple' must be a positive integer, got "8"}}
func.func @not_an_integer(%x: memref<?x64xbf16, strided<[?, 1]>> {tile.stride_multiple = "8"}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.stride_multiple' marks a memref argument of a function, not argument 0 of this op}}
func.func @not_a_memref(%x: index {tile.stride_multiple = 8 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.stride_multiple' of 8 does not divide the stride 68 of dimension 0 of argument 1 ('memref<?x64xbf16, strided<[68, 1]>>')}}
func.func @static_stride(%a: memref<8xf32>, %x: memref<?x64xbf16, strided<[68, 1]>> {tile.stride_multiple = 8 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.stride_multiple' of 8 does not divide the offset 4 of argument 0 ('memref<?x64xbf16, strided<[?, 1], offset: 4>>')}}
func.func @static_offset(%x: memref<?x64xbf16, strided<[?, 1], offset: 4>> {tile.stride_multiple = 8 : i64}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.stride_multiple' marks a strided memref; argument 0 is 'memref<8x8xf32, affine_map<(d0, d1) -> (d1, d0)>>'}}
func.func @not_strided(%x: memref<8x8xf32, affine_map<(d0, d1) -> (d1, d0)>> {tile.stride_multiple = 8 : i64}) {
  return
}
