// RUN: sinkattn-opt %s --tile-lower-copies -split-input-file -verify-diagnostics

func.func @inner_dimension_too_wide(%A: memref<64x4096xbf16>, %s: memref<8x512xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op cannot use TMA: tile dimension 1 is 512 elements; TMA boxes are at most 256 per dimension and only the leading dimension is split}}
  tile.copy %A[%m, %c0], %s : memref<64x4096xbf16>, memref<8x512xbf16, 3>
  return
}

// -----

func.func @inner_bytes(%A: memref<64x4096xbf16>, %s: memref<64x4xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_copy' op cannot use TMA: the tile's innermost dimension spans 8 bytes, not a multiple of 16}}
  tile.tma_copy %A[%m, %c0], %s, barrier(%b[%c0]) : memref<64x4096xbf16>, memref<64x4xbf16, 3>, !tile.barriers<1>
  return
}

// -----

// The 128-byte swizzle is a 2-D layout of 16-bit elements.
func.func @cp_async_swizzled_1d(%A: memref<1024xbf16>, %m: index) {
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<64xbf16, 3>
  // expected-error @+1 {{'tile.cp_async' op cannot use cp.async into the swizzled tile 'memref<64xbf16, 3>': the 128-byte swizzle is laid out for 2-D tiles of 16-bit elements}}
  tile.cp_async %A[%m], %s : memref<1024xbf16>, memref<64xbf16, 3>
  return
}

// -----

// A store with pending in a role region whose only loop is outside it: the
// role's wait and sync after that loop would run in every role.
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @pending_loop_outside_role(%s: memref<64x64xf32, 3>, %O: memref<1024x64xf32>, %n: index, %is: i1) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %t = %c0 to %n step %c1 {
        scf.if %is {
          // expected-error @+1 {{'tile.copy' op with pending needs an scf.for around it inside its warp-specialized role, after which its role awaits the stores}}
          tile.copy %s, %O[%t, %c0] {add, pending = 1} : memref<64x64xf32, 3>, memref<1024x64xf32>
        } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      }
      gpu.return
    }
  }
}

// -----

// A vector store needs 16-byte aligned rows: a run-time row stride nobody
// declared could be odd.
func.func @vector_store_undeclared_stride(%O: memref<?x64xbf16, strided<[?, 1]>>, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the global view's rows are not provably 8-element (16-byte) aligned (a static layout, or unit-stride subviews with aligned innermost offsets of an argument whose run-time strides tile.stride_multiple declares)}}
  tile.copy %s, %O[%m, %c0] {engine = #tile.engine<vector>} : memref<64x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1]>>
  return
}

// -----

// Declared, but in multiples of 4 elements: 8 bytes, not 16.
func.func @vector_store_small_multiple(%O: memref<?x64xbf16, strided<[?, 1]>> {tile.stride_multiple = 4 : i64}, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the global view's rows are not provably 8-element (16-byte) aligned}}
  tile.copy %s, %O[%m, %c0] {engine = #tile.engine<vector>} : memref<64x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1]>>
  return
}

// -----

// A subview with a row step of 2 over 12-element rows: its rows start 24·i
// elements apart, but its first row 12·%i elements in.
func.func @vector_store_strided_subview(%O: memref<64x24xbf16>, %s: memref<16x8xbf16, 3>, %i: index) {
  %c0 = arith.constant 0 : index
  %v = memref.subview %O[%i, 0] [16, 8] [2, 1] : memref<64x24xbf16> to memref<16x8xbf16, strided<[48, 1], offset: ?>>
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the global view's rows are not provably 8-element (16-byte) aligned}}
  tile.copy %s, %v[%c0, %c0] {engine = #tile.engine<vector>} : memref<16x8xbf16, 3>, memref<16x8xbf16, strided<[48, 1], offset: ?>>
  return
}

// -----

// A rank-reducing subview hides the dropped dimension's stride (12).
func.func @vector_store_rank_reducing(%O: memref<4x8x12x8xbf16>, %s: memref<8x8xbf16, 3>, %i: index) {
  %c0 = arith.constant 0 : index
  %v = memref.subview %O[0, 0, %i, 0] [1, 8, 1, 8] [1, 1, 1, 1] : memref<4x8x12x8xbf16> to memref<8x8xbf16, strided<[96, 1], offset: ?>>
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the global view's rows are not provably 8-element (16-byte) aligned}}
  tile.copy %s, %v[%c0, %c0] {engine = #tile.engine<vector>} : memref<8x8xbf16, 3>, memref<8x8xbf16, strided<[96, 1], offset: ?>>
  return
}

// -----

func.func @vector_store_odd_column(%O: memref<100x64xbf16>, %s: memref<64x32xbf16, 3>, %m: index, %n: index) {
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the column index is not a provable multiple of 8 elements (16 bytes)}}
  tile.copy %s, %O[%m, %n] {engine = #tile.engine<vector>} : memref<64x32xbf16, 3>, memref<100x64xbf16>
  return
}

// -----

// Half of a swizzled tile: the swizzle's rows are the whole tile's.
func.func @vector_store_swizzled_half(%O: memref<256x128xbf16>, %m: index) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<128x128xbf16, 3>
  %half = memref.subview %s[64, 0] [64, 128] [1, 1] : memref<128x128xbf16, 3> to memref<64x128xbf16, strided<[128, 1], offset: 8192>, 3>
  // expected-error @+1 {{'tile.copy' op cannot use engine vector from 'memref<64x128xbf16, strided<[128, 1], offset: 8192>, 3>', a view of the swizzled tile 'memref<128x128xbf16, 3>': the 128-byte swizzle is laid out for whole 2-D tiles of 16-bit elements}}
  tile.copy %half, %O[%m, %c0] {engine = #tile.engine<vector>} : memref<64x128xbf16, strided<[128, 1], offset: 8192>, 3>, memref<256x128xbf16>
  return
}
