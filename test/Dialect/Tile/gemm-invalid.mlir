// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @k_mismatch(%a: memref<64x32xbf16, 3>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op shape mismatch: A is 64x32 and B is 64x128, so the reduction dimensions differ (32 vs 64)}}
  %d = tile.gemm %a, %b, %c : memref<64x32xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @k_mismatch_transposed(%a: memref<64x32xbf16, 3>, %b: memref<128x64xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op shape mismatch: A is 64x32 and B is 128x64 (transposed), so the reduction dimensions differ (32 vs 64)}}
  %d = tile.gemm %a, %b, %c {transpose_b} : memref<64x32xbf16, 3>, memref<128x64xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @acc_mismatch(%a: memref<64x64xbf16, 3>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x64xf32>) {
  // expected-error @+1 {{'tile.gemm' op shape mismatch: A·B is 64x128 but the accumulator is 64x64}}
  %d = tile.gemm %a, %b, %c : memref<64x64xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x64xf32>
  return
}

// -----

func.func @b_in_global(%a: memref<64x64xbf16, 3>, %b: memref<64x128xbf16>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op operand B must be a shared-memory tile, got global memory}}
  %d = tile.gemm %a, %b, %c : memref<64x64xbf16, 3>, memref<64x128xbf16>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @a_in_global(%a: memref<64x64xbf16>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op operand A must be a register fragment or a shared-memory tile, got global memory}}
  %d = tile.gemm %a, %b, %c : memref<64x64xbf16>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @operand_types_differ(%a: !tile.fragment<64x64xf16>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op element type mismatch: A holds 'f16' but B holds 'bf16'}}
  %d = tile.gemm %a, %b, %c : !tile.fragment<64x64xf16>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @f32_operands(%a: !tile.fragment<64x64xf32>, %b: memref<64x128xf32, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op A and B must hold bf16 or f16, got 'f32'}}
  %d = tile.gemm %a, %b, %c : !tile.fragment<64x64xf32>, memref<64x128xf32, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @bf16_accumulator(%a: memref<64x64xbf16, 3>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xbf16>) {
  // expected-error @+1 {{'tile.gemm' op the accumulator must hold f32 or f16, got 'bf16'}}
  %d = tile.gemm %a, %b, %c : memref<64x64xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xbf16>
  return
}

// -----

func.func @row_vector_operand(%a: !tile.fragment<64xbf16>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op operands must be 2-D, got A rank 1, B rank 2, accumulator rank 2}}
  %d = tile.gemm %a, %b, %c : !tile.fragment<64xbf16>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @result_differs(%a: memref<64x64xbf16, 3>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op failed to verify that all of {acc, result} have same type}}
  %d = "tile.gemm"(%a, %b, %c) : (memref<64x64xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>) -> !tile.fragment<64x128xf16>
  return
}

// -----

func.func @wait_negative(%acc: !tile.fragment<64x64xf32>) {
  // expected-error @+1 {{'tile.gemm_wait' op attribute 'pending' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %r = tile.gemm_wait %acc pending -1 : !tile.fragment<64x64xf32>
  return
}

// -----

func.func @transposed_fragment(%a: !tile.fragment<64x64xbf16>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op transpose_a needs operand A in shared memory (wgmma reads a transposed A only from there), got a register fragment}}
  %d = tile.gemm %a, %b, %c {transpose_a} : !tile.fragment<64x64xbf16>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

// Transposed, A (K x M = 64 x 128) gives M = 128 rows, not the accumulator's 64.
func.func @transposed_shape(%a: memref<64x128xbf16, 3>, %b: memref<64x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op shape mismatch: A·B is 128x128 but the accumulator is 64x128}}
  %d = tile.gemm %a, %b, %c {transpose_a} : memref<64x128xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @transposed_k(%a: memref<8x64xbf16, 3>, %b: memref<8x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op the reduction dimension (transposed A's rows) is 8; wgmma needs a multiple of 16 (its k16 steps)}}
  %d = tile.gemm %a, %b, %c {transpose_a} : memref<8x64xbf16, 3>, memref<8x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

func.func @transposed_reduction_mismatch(%a: memref<64x64xbf16, 3>, %b: memref<32x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op shape mismatch: A is 64x64 (transposed) and B is 32x128, so the reduction dimensions differ (64 vs 32)}}
  %d = tile.gemm %a, %b, %c {transpose_a} : memref<64x64xbf16, 3>, memref<32x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}

// -----

// The reduction dimension is not bounded by the fragments: the tiles are,
// by the shared memory they must fit in (the lowering emits a wgmma per k16).
func.func @a_beyond_shared_memory(%a: memref<64x4194304xbf16, 3>, %b: memref<4194304x64xbf16, 3>, %c: !tile.fragment<64x64xf32>) {
  // expected-error @+1 {{'tile.gemm' op the shared tile 'memref<64x4194304xbf16, 3>' takes 536870912 bytes, more than the 232448 bytes of shared memory a block may use}}
  %0 = tile.gemm %a, %b, %c : memref<64x4194304xbf16, 3>, memref<4194304x64xbf16, 3>, !tile.fragment<64x64xf32>
  return
}

// -----

func.func @b_beyond_shared_memory(%a: !tile.fragment<64x1024xbf16>, %b: memref<1024x128xbf16, 3>, %c: !tile.fragment<64x128xf32>) {
  // expected-error @+1 {{'tile.gemm' op the shared tile 'memref<1024x128xbf16, 3>' takes 262144 bytes, more than the 232448 bytes of shared memory a block may use}}
  %0 = tile.gemm %a, %b, %c : !tile.fragment<64x1024xbf16>, memref<1024x128xbf16, 3>, !tile.fragment<64x128xf32>
  return
}
