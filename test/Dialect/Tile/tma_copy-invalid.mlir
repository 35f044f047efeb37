// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @shared_to_shared(%a: memref<64x64xbf16, 3>, %s: memref<64x64xbf16, 3>, %i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_copy' op loads global -> shared, but the source is in shared memory}}
  tile.tma_copy %a[%i, %i], %s, barrier(%b[%i]) : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

func.func @global_to_global(%a: memref<64x64xbf16>, %g: memref<64x64xbf16>, %i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_copy' op loads global -> shared, but the destination is in global memory}}
  tile.tma_copy %a[%i, %i], %g, barrier(%b[%i]) : memref<64x64xbf16>, memref<64x64xbf16>, !tile.barriers<1>
  return
}

// -----

func.func @missing_barrier(%a: memref<1024x64xbf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{expected ','}}
  tile.tma_copy %a[%i, %i], %s : memref<1024x64xbf16>, memref<64x64xbf16, 3>
  return
}

// -----

// The generic form cannot drop the barrier either.
func.func @missing_barrier_generic(%a: memref<1024x64xbf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.tma_copy' op operand #0 must be mbarrier array (!tile.barriers), but got 'memref<1024x64xbf16>'}}
  "tile.tma_copy"(%a, %i, %i, %s) : (memref<1024x64xbf16>, index, index, memref<64x64xbf16, 3>) -> ()
  return
}

// -----

func.func @barrier_out_of_range(%a: memref<1024x64xbf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  %c3 = arith.constant 3 : index
  %b = tile.alloc_barrier [1, 1, 1] : !tile.barriers<3>
  // expected-error @+1 {{'tile.tma_copy' op barrier index 3 is out of range for '!tile.barriers<3>' (slots 0..2)}}
  tile.tma_copy %a[%i, %i], %s, barrier(%b[%c3]) : memref<1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<3>
  return
}

// -----

func.func @element_type_mismatch(%a: memref<1024x64xf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_copy' op element type mismatch: the global memref holds 'f16' but the shared tile holds 'bf16'}}
  tile.tma_copy %a[%i, %i], %s, barrier(%b[%i]) : memref<1024x64xf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

func.func @wrong_index_count(%a: memref<8x1024x64xbf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_copy' op the global memref has rank 3 and needs 3 indices, got 2}}
  tile.tma_copy %a[%i, %i], %s, barrier(%b[%i]) : memref<8x1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  return
}

// -----

func.func @too_many_bytes(%a: memref<8192x8192xf32>, %s: memref<1024x512xf32, 3>, %i: index) {
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // expected-error @+1 {{'tile.tma_copy' op the shared tile 'memref<1024x512xf32, 3>' takes 2097152 bytes, more than the 232448 bytes of shared memory a block may use}}
  tile.tma_copy %a[%i, %i], %s, barrier(%b[%i]) : memref<8192x8192xf32>, memref<1024x512xf32, 3>, !tile.barriers<1>
  return
}
