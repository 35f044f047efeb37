// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @init_count(%i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.mbarrier_init' op arrive count 0 must be in [1, 1048575]}}
  tile.mbarrier_init %b[%i], 0 : !tile.barriers<1>
  return
}

// -----

func.func @init_slot() {
  %c1 = arith.constant 1 : index
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.mbarrier_init' op barrier index 1 is out of range for '!tile.barriers<1>' (slots 0..0)}}
  tile.mbarrier_init %b[%c1], 1 : !tile.barriers<1>
  return
}

// -----

func.func @arrive_expect_tx_bytes(%i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.mbarrier_arrive_expect_tx' op expects 2000000 transaction bytes; an mbarrier phase can expect 1 to 1048575 bytes}}
  tile.mbarrier_arrive_expect_tx %b[%i], 2000000 : !tile.barriers<1>
  return
}

// -----

func.func @tma_load_shared_source(%a: memref<64x64xbf16, 3>, %s: memref<64x64xbf16, 3>, %i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_load' op loads global -> shared, but the source is in shared memory}}
  tile.tma_load %a[%i, %i], %s, barrier(%b[%i]) : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

func.func @tma_store_to_shared(%s: memref<64x64xbf16, 3>, %t: memref<64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.tma_store' op stores shared -> global, but the destination is in shared memory}}
  tile.tma_store %s, %t[%i, %i] : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @tma_store_from_global(%g: memref<64x64xbf16>, %o: memref<64x64xbf16>, %i: index) {
  // expected-error @+1 {{'tile.tma_store' op stores shared -> global, but the source is in global memory}}
  tile.tma_store %g, %o[%i, %i] : memref<64x64xbf16>, memref<64x64xbf16>
  return
}

// -----

func.func @tma_store_indices(%s: memref<64x64xbf16, 3>, %o: memref<8x64x64xbf16>, %i: index) {
  // expected-error @+1 {{'tile.tma_store' op the global memref has rank 3 and needs 3 indices, got 2}}
  tile.tma_store %s, %o[%i, %i] : memref<64x64xbf16, 3>, memref<8x64x64xbf16>
  return
}

// -----

func.func @im2col_rank(%x: memref<12x64xbf16>, %t: memref<16x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.im2col_copy' op loads from a rank-4 (NHWC) global tensor, got 'memref<12x64xbf16>'}}
  tile.im2col_copy %x[%i, %i, %i, %i], %t offsets [%i, %i] {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<12x64xbf16>, memref<16x64xbf16, 3>
  return
}

// -----

func.func @im2col_tile(%x: memref<2x10x12x64xbf16>, %t: memref<16x4x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.im2col_copy' op loads into a static 2-D (pixels x channels) shared tile, got 'memref<16x4x64xbf16, 3>'}}
  tile.im2col_copy %x[%i, %i, %i, %i], %t offsets [%i, %i] {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x64xbf16>, memref<16x4x64xbf16, 3>
  return
}

// -----

func.func @im2col_channels(%x: memref<2x10x12x4xbf16>, %t: memref<16x4xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.im2col_copy' op an im2col tile has at most 1024 pixels and 256 channels whose bytes are a multiple of 16, got 16 x 4}}
  tile.im2col_copy %x[%i, %i, %i, %i], %t offsets [%i, %i] {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x4xbf16>, memref<16x4xbf16, 3>
  return
}

// -----

func.func @im2col_corner(%x: memref<2x10x12x64xbf16>, %t: memref<16x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.im2col_copy' op corner offset 200 is outside [-128, 127]}}
  tile.im2col_copy %x[%i, %i, %i, %i], %t offsets [%i, %i] {lower = array<i64: 0, 200>, upper = array<i64: 0, 0>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>
  return
}

// -----

func.func @im2col_offsets(%x: memref<2x10x12x64xbf16>, %t: memref<16x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.im2col_copy' op needs 2 offsets and 2-entry lower/upper corners (h, w)}}
  tile.im2col_copy %x[%i, %i, %i, %i], %t offsets [%i] {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>
  return
}

// -----

func.func @im2col_element_type(%x: memref<2x10x12x64xf16>, %t: memref<16x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.im2col_copy' op element type mismatch: the source holds 'f16' but the tile holds 'bf16'}}
  tile.im2col_copy %x[%i, %i, %i, %i], %t offsets [%i, %i] {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x64xf16>, memref<16x64xbf16, 3>
  return
}

// -----

func.func @im2col_load_slot(%x: memref<2x10x12x64xbf16>, %t: memref<16x64xbf16, 3>, %i: index) {
  %c1 = arith.constant 1 : index
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_im2col_load' op barrier index 1 is out of range for '!tile.barriers<1>' (slots 0..0)}}
  tile.tma_im2col_load %x[%i, %i, %i, %i], %t offsets [%i, %i], barrier(%b[%c1]) {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

func.func @swizzle_64(%A: memref<1024x64xbf16>, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_load' op attribute 'swizzle' failed to satisfy constraint: 64-bit signless integer attribute whose value is one of {0, 128}}}
  tile.tma_load %A[%m, %c0], %s, barrier(%b[%c0]) {swizzle = 64 : i64} : memref<1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

func.func @cp_async_from_shared(%A: memref<64x64xbf16, 3>, %s: memref<64x64xbf16, 3>, %m: index) {
  // expected-error @+1 {{'tile.cp_async' op loads global -> shared, but the source is in shared memory}}
  tile.cp_async %A[%m, %m], %s : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @cp_async_to_global(%A: memref<64x64xbf16>, %s: memref<64x64xbf16>, %m: index) {
  // expected-error @+1 {{'tile.cp_async' op loads global -> shared, but the destination is in global memory}}
  tile.cp_async %A[%m, %m], %s : memref<64x64xbf16>, memref<64x64xbf16>
  return
}

// -----

func.func @cp_async_chunk(%A: memref<64x64xf32>, %s: memref<64x2xf32, 3>, %m: index) {
  // expected-error @+1 {{'tile.cp_async' op cannot use cp.async: the tile's innermost dimension spans 8 bytes, not a multiple of the 16-byte copy chunk}}
  tile.cp_async %A[%m, %m], %s : memref<64x64xf32>, memref<64x2xf32, 3>
  return
}

// -----

func.func @cp_async_indices(%A: memref<8x64x64xbf16>, %s: memref<64x64xbf16, 3>, %m: index) {
  // expected-error @+1 {{'tile.cp_async' op the global memref has rank 3 and needs 3 indices, got 2}}
  tile.cp_async %A[%m, %m], %s : memref<8x64x64xbf16>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @cp_async_arrive_slot(%m: index) {
  %c2 = arith.constant 2 : index
  %b = tile.alloc_barrier [1, 1] : !tile.barriers<2>
  // expected-error @+1 {{'tile.cp_async_arrive' op barrier index 2 is out of range for '!tile.barriers<2>' (slots 0..1)}}
  tile.cp_async_arrive %b[%c2] : !tile.barriers<2>
  return
}

// -----

func.func @cp_async_rank0(%A: memref<?xbf16>, %s: memref<bf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.cp_async' op the shared tile must have at least one dimension, got 'memref<bf16, 3>'}}
  tile.cp_async %A[%i], %s : memref<?xbf16>, memref<bf16, 3>
  return
}

// -----

func.func @tma_store_add_bf16(%s: memref<64x64xbf16, 3>, %o: memref<64x64xbf16>, %i: index) {
  // expected-error @+1 {{'tile.tma_store' op adds f32 tiles only (TMA reduce-add), got 'bf16'}}
  tile.tma_store %s, %o[%i, %i] {add} : memref<64x64xbf16, 3>, memref<64x64xbf16>
  return
}

// -----

func.func @cp_async_tile_beyond_shared_memory(%A: memref<?x64xf32>, %m: index) {
  %s = memref.alloc() : memref<1024x64xf32, 3>
  // expected-error @+1 {{'tile.cp_async' op the shared tile 'memref<1024x64xf32, 3>' takes 262144 bytes, more than the 232448 bytes of shared memory a block may use}}
  tile.cp_async %A[%m, %m], %s : memref<?x64xf32>, memref<1024x64xf32, 3>
  return
}
