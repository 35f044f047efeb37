// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @element_type(%o: !tile.fragment<64x64xf32>, %O: memref<64x64xbf16>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{element type mismatch: the fragment holds 'f32' but the destination holds 'bf16'}}
  tile.store %o, %O[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xbf16>
  return
}

// -----

func.func @rank(%o: !tile.fragment<64x64xf32>, %O: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{a rank-2 fragment does not fit a rank-1 destination}}
  tile.store %o, %O[%c0] : !tile.fragment<64x64xf32>, memref<64xf32>
  return
}

// -----

func.func @indices(%o: !tile.fragment<64x64xf32>, %O: memref<2x64x64xf32>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{the destination has rank 3 and needs 3 indices, got 2}}
  tile.store %o, %O[%c0, %c0] : !tile.fragment<64x64xf32>, memref<2x64x64xf32>
  return
}

// -----

func.func @space(%o: !tile.fragment<64x64xf32>, %O: memref<64x64xf32, 5>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{stores into shared or global memory, got}}
  tile.store %o, %O[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, 5>
  return
}

// -----

func.func @add_shared(%o: !tile.fragment<64x64xf32>, %S: memref<64x64xf32, 3>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{adds atomically into global memory only, got shared memory}}
  tile.store %o, %S[%c0, %c0] {add} : !tile.fragment<64x64xf32>, memref<64x64xf32, 3>
  return
}

// -----

func.func @add_bf16(%o: !tile.fragment<64x64xbf16>, %O: memref<64x64xbf16>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{adds f32 elements only, got 'bf16'}}
  tile.store %o, %O[%c0, %c0] {add} : !tile.fragment<64x64xbf16>, memref<64x64xbf16>
  return
}
