// RUN: sinkattn-opt %s --tile-assign-layouts -split-input-file -verify-diagnostics

func.func @rows_not_multiple_of_64(%v: f32, %out: memref<48x64xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.fill' op cannot give '!tile.fragment<48x64xf32>' a register layout: #tile.layout<accumulator> needs a multiple of 64 rows (wgmma works on 64-row blocks), got 48}}
  %a = tile.fill %v : !tile.fragment<48x64xf32>
  tile.store %a, %out[%c0, %c0] : !tile.fragment<48x64xf32>, memref<48x64xf32>
  return
}

// -----

func.func @column_reduction(%v: f32) {
  %a = tile.fill %v : !tile.fragment<64x64xf32>
  // expected-error @+1 {{reduces along dimension 0: only row reductions (dimension 1) have a register layout (#tile.layout<rows>)}}
  %r = tile.reduce sum %a along 0 : !tile.fragment<64x64xf32> -> !tile.fragment<64xf32>
  return
}

// -----

func.func @a_operand_k(%v: bf16, %sB: memref<24x64xbf16, #gpu.address_space<workgroup>>) {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  // expected-error @+1 {{'tile.fill' op cannot give '!tile.fragment<64x24xbf16>' a register layout: #tile.layout<operand_a> needs a multiple of 16 columns (wgmma k), got 24}}
  %a = tile.fill %v : !tile.fragment<64x24xbf16>
  %sBa = memref.alloc() : memref<24x64xbf16, #gpu.address_space<workgroup>>
  %d = tile.gemm %a, %sBa, %acc : !tile.fragment<64x24xbf16>, memref<24x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// -----

func.func @operand_not_allocated(%sA: memref<64x64xbf16, #gpu.address_space<workgroup>>) {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %sB = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand A must be (a view of) a shared tile allocated in this function with memref.alloc, so that its swizzled layout can be chosen}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// -----

// A column slice that does not start on a 64-column panel.
func.func @operand_partial_tile() {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %big = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %sB = memref.subview %big[0, 32] [64, 64] [1, 1] : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[128, 1], offset: 32>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand B must be whole rows of a tile or whole 64-column panels of it: its columns start at an offset that is not a provable multiple of 64 (a constant, or a product with one) in 'memref<64x128xbf16, #gpu.address_space<workgroup>>'}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, strided<[128, 1], offset: 32>, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// -----

// A column slice from an offset it cannot prove a multiple of 64.
func.func @operand_column_offset_unknown(%col: index) {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %big = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %sB = memref.subview %big[0, %col] [64, 64] [1, 1] : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand B must be whole rows of a tile or whole 64-column panels of it}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// -----

// Half a panel from an offset that is not a multiple of 32 columns.
func.func @half_panel_misaligned() {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x32xf32>
  %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %big = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.subview %big[0, 16] [64, 32] [1, 1] : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x32xbf16, strided<[64, 1], offset: 16>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand B must be whole rows of a tile or whole 64-column panels of it (or, N along its rows, half of one): its columns start at an offset that is not a provable multiple of 32}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x32xbf16, strided<[64, 1], offset: 16>, #gpu.address_space<workgroup>>, !tile.fragment<64x32xf32>
  return
}

// -----

// Half a panel of a transposed B (K along its rows): not supported.
func.func @half_panel_transposed() {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %a = tile.fill %one : !tile.fragment<64x32xbf16>
  %big = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.subview %big[0, 32] [64, 32] [1, 1] : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x32xbf16, strided<[64, 1], offset: 32>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand B must be whole rows of a tile or whole 64-column panels of it: its columns start at an offset that is not a provable multiple of 64}}
  %d = tile.gemm %a, %sB, %acc {transpose_b} : !tile.fragment<64x32xbf16>, memref<64x32xbf16, strided<[64, 1], offset: 32>, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// -----

// More rows than the allocation's tiles hold.
func.func @operand_too_tall() {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() : memref<32x64xbf16, #gpu.address_space<workgroup>>
  %v = memref.reinterpret_cast %sB to offset: [0], sizes: [64, 64], strides: [64, 1] : memref<32x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[64, 1]>, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand B (64x64) does not fit the tiles of its allocation 'memref<32x64xbf16, #gpu.address_space<workgroup>>'}}
  %d = tile.gemm %sA, %v, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, strided<[64, 1]>, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// -----

func.func @operand_not_swizzlable() {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x32xf32>
  %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %sB = memref.alloc() : memref<64x32xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{operand B (64x32) cannot take the 128-byte swizzle: it needs a multiple of 64 contiguous elements per row and a multiple of 8 rows}}
  %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x32xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x32xf32>
  return
}

// -----

// expected-error @+1 {{takes a register fragment argument; fragments live inside one kernel and have no calling convention}}
func.func @fragment_argument(%x: !tile.fragment<64x64xf32>) {
  return
}

// -----

func.func @layout_conflict(%v: bf16) {
  %zero = arith.constant 0.0 : f32
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %sB = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  // expected-error @+1 {{has a fragment of layout #tile.layout<accumulator> where its uses need #tile.layout<operand_a>}}
  %a = tile.fill %v : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>
  %d = tile.gemm %a, %sB, %acc : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}
