// RUN: sinkattn-opt %s --convert-tile-fragments-to-nvvm -split-input-file -verify-diagnostics

func.func @no_layout(%v: f32) {
  // expected-error @+1 {{produces '!tile.fragment<64x64xf32>', which has no layout; run tile-assign-layouts first}}
  %a = tile.fill %v : !tile.fragment<64x64xf32>
  return
}

// -----

func.func @f16_accumulator(%acc: !tile.fragment<64x64xf16, #tile.layout<accumulator>>) {
  %sA = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{accumulates in 'f16'; the wgmma lowering supports f32 accumulators}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xf16, #gpu.address_space<workgroup>>, memref<64x64xf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf16, #tile.layout<accumulator>>
  return
}

// -----

func.func @wide_n(%acc: !tile.fragment<64x320xf32, #tile.layout<accumulator>>) {
  %sA = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x320xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{needs N <= 256 and K a multiple of 16 for wgmma.m64nNk16, got N = 320, K = 64}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x320xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x320xf32, #tile.layout<accumulator>>
  return
}

// -----

func.func @unswizzled(%acc: !tile.fragment<64x64xf32, #tile.layout<accumulator>>) {
  %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand A is not a 128-byte-swizzled shared tile; run tile-assign-layouts (and tile-lower-copies) first}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  return
}

// -----

func.func @reduce_bf16(%s: !tile.fragment<64x64xbf16, #tile.layout<accumulator>>) {
  // expected-error @+1 {{reduces 'bf16' elements; the lowering shuffles 32-bit values (f32 or i32)}}
  %r = tile.reduce max %s along 1 : !tile.fragment<64x64xbf16, #tile.layout<accumulator>> -> !tile.fragment<64xbf16, #tile.layout<rows>>
  return
}

// -----

// A fragment at a column that does not start a panel: its chunks would not
// line up with the panel's.
func.func @swizzled_unaligned_index(%o: !tile.fragment<64x64xbf16, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %sO = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{stores '!tile.fragment<64x64xbf16, #tile.layout<accumulator>>' into a swizzled shared tile, which it cannot: its trailing indices are not provable multiples of 8 (row) and 64 (column: a panel)}}
  tile.store %o, %sO[%c0, %c4] : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @swizzled_overhang(%o: !tile.fragment<64x64xf32, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %c96 = arith.constant 96 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x128xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{which it cannot: the fragment '!tile.fragment<64x64xf32, #tile.layout<accumulator>>' does not fit the view at its indices}}
  tile.store %o, %s[%c0, %c96] : !tile.fragment<64x64xf32, #tile.layout<accumulator>>, memref<64x128xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// A column slice's rows are not contiguous: the swizzle's offsets would not
// split back into its indices.
func.func @swizzled_column_view(%o: !tile.fragment<64x64xf32, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x128xf32, #gpu.address_space<workgroup>>
  %half = memref.subview %s[0, 64] [64, 64] [1, 1] : memref<64x128xf32, #gpu.address_space<workgroup>> to memref<64x64xf32, strided<[128, 1], offset: 64>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{which it cannot: its destination view is not row-major with contiguous rows}}
  tile.store %o, %half[%c0, %c0] : !tile.fragment<64x64xf32, #tile.layout<accumulator>>, memref<64x64xf32, strided<[128, 1], offset: 64>, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @swizzled_rows(%r: !tile.fragment<64xf32, #tile.layout<rows>>) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<8x64xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{which it cannot: the fragment '!tile.fragment<64xf32, #tile.layout<rows>>' is not 2-D of 16- or 32-bit elements}}
  tile.store %r, %s[%c0, %c0] : !tile.fragment<64xf32, #tile.layout<rows>>, memref<8x64xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// A tile marked swizzled by hand whose columns are not whole panels.
func.func @swizzled_partial_panel(%o: !tile.fragment<64x16xf32, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x48xf32, #gpu.address_space<workgroup>>
  // expected-error @+1 {{which it cannot: its tile (64x48) is not whole 8-row periods of 32-column panels}}
  tile.store %o, %s[%c0, %c0] : !tile.fragment<64x16xf32, #tile.layout<accumulator>>, memref<64x48xf32, #gpu.address_space<workgroup>>
  return
}

// -----

// Rows of a one-panel tile from an offset that is not provably a multiple
// of 8: the fragment's swizzle would not line up with the tile's.
func.func @swizzled_rows_unaligned(%o: !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, %row: index) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %rows = memref.subview %s[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{which it cannot: its destination is neither a whole tile of its allocation nor rows of a one-panel (64-column) tile starting at a provable multiple of 8}}
  tile.store %o, %rows[%c0, %c0] : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  return
}

// -----

// Rows of a two-panel tile: its rows are not where a fragment-sized tile's
// would be.
func.func @swizzled_rows_two_panels(%o: !tile.fragment<64x128xbf16, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<128x128xbf16, #gpu.address_space<workgroup>>
  %rows = memref.subview %s[64, 0] [64, 128] [1, 1] : memref<128x128xbf16, #gpu.address_space<workgroup>> to memref<64x128xbf16, strided<[128, 1], offset: 8192>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{which it cannot: its destination is neither a whole tile of its allocation nor rows of a one-panel (64-column) tile}}
  tile.store %o, %rows[%c0, %c0] : !tile.fragment<64x128xbf16, #tile.layout<accumulator>>, memref<64x128xbf16, strided<[128, 1], offset: 8192>, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @async_read_early(%acc: !tile.fragment<64x64xf32, #tile.layout<accumulator>>) {
  %sA = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{is async, but its result is used by 'tile.reduce' before a tile.gemm_wait}}
  %d = tile.gemm %sA, %sB, %acc {async} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  %r = tile.reduce max %d along 1 : !tile.fragment<64x64xf32, #tile.layout<accumulator>> -> !tile.fragment<64xf32, #tile.layout<rows>>
  return
}

// -----

func.func @wait_bf16(%p: !tile.fragment<64x64xbf16, #tile.layout<accumulator>>) {
  // expected-error @+1 {{waits for '!tile.fragment<64x64xbf16, #tile.layout<accumulator>>'; gemm results (and what waits with them) are f32 fragments}}
  %r = tile.gemm_wait %p pending 0 : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>
  return
}

// -----

func.func @partial_reduce_bf16(%p: !tile.fragment<64x32xbf16, #tile.layout<accumulator>>) {
  // expected-error @+1 {{combines 'bf16' elements; the lowering handles f32 and i32}}
  %r = tile.partial_reduce sum %p : !tile.fragment<64x32xbf16, #tile.layout<accumulator>> -> !tile.fragment<64x16xbf16, #tile.layout<accumulator>>
  return
}

// -----

func.func @partial_reduce_operand_a_result(%p: !tile.fragment<64x32xbf16, #tile.layout<accumulator>>) {
  // expected-error @+1 {{combines columns of '!tile.fragment<64x16xbf16, #tile.layout<operand_a>>'; the lowering handles #tile.layout<accumulator> fragments only}}
  %r = tile.partial_reduce sum %p : !tile.fragment<64x32xbf16, #tile.layout<accumulator>> -> !tile.fragment<64x16xbf16, #tile.layout<operand_a>>
  return
}

// -----

func.func @partial_reduce_operand_a(%p: !tile.fragment<64x32xbf16, #tile.layout<operand_a>>) {
  // expected-error @+1 {{combines columns of '!tile.fragment<64x32xbf16, #tile.layout<operand_a>>'; the lowering handles #tile.layout<accumulator> fragments only}}
  %r = tile.partial_reduce sum %p : !tile.fragment<64x32xbf16, #tile.layout<operand_a>> -> !tile.fragment<64x16xbf16, #tile.layout<accumulator>>
  return
}

// -----

func.func @scale_rows_operand_a(%p: !tile.fragment<64x32xbf16, #tile.layout<operand_a>>, %a: !tile.fragment<64xbf16, #tile.layout<rows>>) {
  // expected-error @+1 {{scales the rows of '!tile.fragment<64x32xbf16, #tile.layout<operand_a>>'; the lowering handles #tile.layout<accumulator> fragments only}}
  %r = tile.scale_rows %p by %a : !tile.fragment<64x32xbf16, #tile.layout<operand_a>>, !tile.fragment<64xbf16, #tile.layout<rows>>
  return
}
