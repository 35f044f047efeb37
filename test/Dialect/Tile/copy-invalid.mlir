// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics

func.func @global_to_global(%a: memref<64x64xbf16>, %b: memref<64x64xbf16>, %i: index) {
  // expected-error @+1 {{'tile.copy' op copies between global and shared memory, got global -> global}}
  tile.copy %a[%i, %i], %b[%i, %i] : memref<64x64xbf16>, memref<64x64xbf16>
  return
}

// -----

func.func @shared_to_shared(%a: memref<64x64xbf16, 3>, %b: memref<64x64xbf16, 3>) {
  // expected-error @+1 {{'tile.copy' op copies between global and shared memory, got shared -> shared}}
  tile.copy %a, %b : memref<64x64xbf16, 3>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @private_space(%a: memref<64x64xbf16>, %b: memref<64x64xbf16, #gpu.address_space<private>>, %i: index) {
  // expected-error @+1 {{'tile.copy' op copies between global and shared memory, got global -> memory space #gpu.address_space<private>}}
  tile.copy %a[%i, %i], %b : memref<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<private>>
  return
}

// -----

func.func @element_type_mismatch(%a: memref<1024x64xf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op element type mismatch: the global memref holds 'f16' but the shared tile holds 'bf16'}}
  tile.copy %a[%i, %i], %s : memref<1024x64xf16>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @missing_global_indices(%a: memref<1024x64xbf16>, %s: memref<64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op the global memref has rank 2 and needs 2 indices, got 1}}
  tile.copy %a[%i], %s : memref<1024x64xbf16>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @shared_indices(%a: memref<1024x64xbf16>, %s: memref<2x64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op the shared tile takes no indices; select a sub-tile with memref.subview}}
  tile.copy %a[%i, %i], %s[%i] : memref<1024x64xbf16>, memref<2x64x64xbf16, 3>
  return
}

// -----

func.func @dynamic_tile(%a: memref<1024x64xbf16>, %s: memref<?x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op the shared tile must have a static shape, got 'memref<?x64xbf16, 3>'}}
  tile.copy %a[%i, %i], %s : memref<1024x64xbf16>, memref<?x64xbf16, 3>
  return
}

// -----

func.func @tile_rank_too_large(%a: memref<1024x64xbf16>, %s: memref<2x64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op shape mismatch: the shared tile 2x64x64 has rank 3 but the global memref only rank 2}}
  tile.copy %a[%i, %i], %s : memref<1024x64xbf16>, memref<2x64x64xbf16, 3>
  return
}

// -----

func.func @store_element_type_mismatch(%o: memref<1024x64xf32>, %s: memref<64x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op element type mismatch: the global memref holds 'f32' but the shared tile holds 'bf16'}}
  tile.copy %s, %o[%i, %i] : memref<64x64xbf16, 3>, memref<1024x64xf32>
  return
}

// -----

func.func @cp_async_store(%O: memref<64x64xbf16>, %i: index) {
  %s = memref.alloc() : memref<64x64xbf16, 3>
  // expected-error @+1 {{'tile.copy' op engine cp_async only loads into shared memory; stores use tma or vector}}
  tile.copy %s, %O[%i, %i] {engine = #tile.engine<cp_async>} : memref<64x64xbf16, 3>, memref<64x64xbf16>
  return
}

// -----

func.func @cp_async_narrow_rows(%A: memref<64x64xbf16>, %i: index) {
  %s = memref.alloc() : memref<64x4xbf16, 3>
  // expected-error @+1 {{'tile.copy' op cannot use cp.async: the tile's innermost dimension spans 8 bytes, not a multiple of the 16-byte copy chunk}}
  tile.copy %A[%i, %i], %s {engine = #tile.engine<cp_async>} : memref<64x64xbf16>, memref<64x4xbf16, 3>
  return
}

// -----

func.func @unknown_engine(%A: memref<64x64xbf16>, %i: index) {
  %s = memref.alloc() : memref<64x64xbf16, 3>
  // expected-error @+2 {{expected ::sinkattn::tile::CopyEngine to be one of: tma, cp_async}}
  // expected-error @+1 {{failed to parse Tile_CopyEngineAttr parameter 'value'}}
  tile.copy %A[%i, %i], %s {engine = #tile.engine<bulk>} : memref<64x64xbf16>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @copy_rank0(%A: memref<?xbf16>, %i: index) {
  %s = memref.alloc() : memref<bf16, 3>
  // expected-error @+1 {{'tile.copy' op the shared tile must have at least one dimension, got 'memref<bf16, 3>'}}
  tile.copy %A[%i], %s {engine = #tile.engine<cp_async>} : memref<?xbf16>, memref<bf16, 3>
  return
}

// -----

func.func @add_load(%A: memref<1024x64xf32>, %s: memref<64x64xf32, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op adds only a shared tile into global memory, got global -> shared}}
  tile.copy %A[%m, %c0], %s {add} : memref<1024x64xf32>, memref<64x64xf32, 3>
  return
}

// -----

func.func @add_bf16(%s: memref<64x64xbf16, 3>, %O: memref<1024x64xbf16>, %m: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op adds f32 tiles only (TMA reduce-add), got 'bf16'}}
  tile.copy %s, %O[%m, %c0] {add} : memref<64x64xbf16, 3>, memref<1024x64xbf16>
  return
}

// -----

func.func @pending_load(%A: memref<1024x64xf32>, %s: memref<64x64xf32, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %m step %c1 {
    // expected-error @+1 {{'tile.copy' op pending applies to stores (shared -> global) only, got global -> shared}}
    tile.copy %A[%m, %c0], %s {pending = 1} : memref<1024x64xf32>, memref<64x64xf32, 3>
  }
  return
}

// -----

func.func @pending_outside_loop(%s: memref<64x64xf32, 3>, %O: memref<1024x64xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op with pending must be inside an scf.for (the stores still reading their tiles are awaited after the loop)}}
  tile.copy %s, %O[%m, %c0] {add, pending = 1} : memref<64x64xf32, 3>, memref<1024x64xf32>
  return
}

// -----

func.func @pending_zero(%s: memref<64x64xf32, 3>, %O: memref<1024x64xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %m step %c1 {
    // expected-error @+1 {{attribute 'pending' failed to satisfy constraint: 64-bit signless integer attribute whose minimum value is 1}}
    tile.copy %s, %O[%m, %c0] {add, pending = 0} : memref<64x64xf32, 3>, memref<1024x64xf32>
  }
  return
}

// -----

// One thread of the role issues a load and every thread waits for it: a
// warpgroup's slice cannot be loaded on its own.
func.func @load_into_warpgroup_slice(%a: memref<1024x64xbf16>, %i: index) {
  %c64 = arith.constant 64 : index
  %wg = tile.warpgroup_id : index
  %row = arith.muli %wg, %c64 : index
  %s = memref.alloc() : memref<128x64xbf16, 3>
  %mine = memref.subview %s[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
  // expected-error @+1 {{'tile.copy' op loads into a warpgroup's slice of a tile (a subview at tile.warpgroup_id), which is not supported: load the whole tile, or store from the slice}}
  tile.copy %a[%i, %i], %mine : memref<1024x64xbf16>, memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
  return
}

// -----

// A tile larger than a block's shared memory: lowered, its leading
// dimension would become 2^32 TMA boxes.
func.func @tile_beyond_shared_memory(%a: memref<?x64xbf16>, %s: memref<1099511627776x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op the shared tile 'memref<1099511627776x64xbf16, 3>' takes 140737488355328 bytes, more than the 232448 bytes of shared memory a block may use}}
  tile.copy %a[%i, %i], %s : memref<?x64xbf16>, memref<1099511627776x64xbf16, 3>
  return
}

// -----

func.func @tile_size_overflows(%a: memref<?x?x?xf32>, %s: memref<4294967296x4294967296x4294967296xf32, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op the shared tile 'memref<4294967296x4294967296x4294967296xf32, 3>' takes more than 2^63 bytes, more than the 232448 bytes of shared memory a block may use}}
  tile.copy %s, %a[%i, %i, %i] : memref<4294967296x4294967296x4294967296xf32, 3>, memref<?x?x?xf32>
  return
}

// -----

func.func @cp_async_tile_beyond_shared_memory(%a: memref<?x64xbf16>, %s: memref<2048x64xbf16, 3>, %i: index) {
  // expected-error @+1 {{'tile.copy' op the shared tile 'memref<2048x64xbf16, 3>' takes 262144 bytes, more than the 232448 bytes of shared memory a block may use}}
  tile.copy %a[%i, %i], %s {engine = #tile.engine<cp_async>} : memref<?x64xbf16>, memref<2048x64xbf16, 3>
  return
}

// -----

func.func @vector_load(%A: memref<64x64xbf16>, %i: index) {
  %s = memref.alloc() : memref<64x64xbf16, 3>
  // expected-error @+1 {{'tile.copy' op engine vector only stores from shared memory; loads use tma or cp_async}}
  tile.copy %A[%i, %i], %s {engine = #tile.engine<vector>} : memref<64x64xbf16>, memref<64x64xbf16, 3>
  return
}

// -----

func.func @vector_store_partial_chunks(%O: memref<64x60xbf16>, %i: index) {
  %s = memref.alloc() : memref<64x60xbf16, 3>
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the tile's innermost dimension of 60 elements is not whole 16-byte chunks}}
  tile.copy %s, %O[%i, %i] {engine = #tile.engine<vector>} : memref<64x60xbf16, 3>, memref<64x60xbf16>
  return
}

// -----

func.func @vector_store_dynamic_columns(%O: memref<64x?xbf16>, %i: index) {
  %s = memref.alloc() : memref<64x64xbf16, 3>
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: the global view's innermost dimension must be static and whole 16-byte chunks, got 'memref<64x?xbf16>'}}
  tile.copy %s, %O[%i, %i] {engine = #tile.engine<vector>} : memref<64x64xbf16, 3>, memref<64x?xbf16>
  return
}

// -----

func.func @vector_store_add(%O: memref<64x64xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() : memref<64x64xf32, 3>
  // expected-error @+1 {{'tile.copy' op with engine vector takes neither add nor pending (TMA's)}}
  tile.copy %s, %O[%i, %c0] {engine = #tile.engine<vector>, add} : memref<64x64xf32, 3>, memref<64x64xf32>
  return
}

// -----

func.func @vector_store_pending(%O: memref<64x64xbf16>, %i: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.alloc() : memref<64x64xbf16, 3>
  scf.for %j = %c0 to %n step %c1 {
    // expected-error @+1 {{'tile.copy' op with engine vector takes neither add nor pending (TMA's)}}
    tile.copy %s, %O[%i, %c0] {engine = #tile.engine<vector>, pending = 1} : memref<64x64xbf16, 3>, memref<64x64xbf16>
  }
  return
}

// -----

func.func @vector_store_element(%O: memref<64x64xi24>, %i: index) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() : memref<64x64xi24, 3>
  // expected-error @+1 {{'tile.copy' op cannot use engine vector: elements of 'i24' do not tile a 16-byte chunk}}
  tile.copy %s, %O[%i, %c0] {engine = #tile.engine<vector>} : memref<64x64xi24, 3>, memref<64x64xi24>
  return
}

// -----

func.func @vector_store_warpgroup_slice(%O: memref<128x64xbf16>, %i: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %s = memref.alloc() : memref<128x64xbf16, 3>
  %wg = tile.warpgroup_id : index
  %row = arith.muli %wg, %c64 : index
  %slice = memref.subview %s[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
  // expected-error @+1 {{'tile.copy' op with engine vector stores a whole tile, not a warpgroup's slice}}
  tile.copy %slice, %O[%i, %c0] {engine = #tile.engine<vector>} : memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>, memref<128x64xbf16>
  return
}
