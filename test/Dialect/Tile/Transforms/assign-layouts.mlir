// RUN: sinkattn-opt %s --tile-assign-layouts | FileCheck %s

!sQ = memref<64x128xbf16, #gpu.address_space<workgroup>>
!sKV = memref<128x128xbf16, #gpu.address_space<workgroup>>

// The attention step: S (accumulator), its row max and sum (rows), P cast
// to bf16 and fed to the second gemm (operand_a), O carried by the loop
// (accumulator, the same type on init, iteration argument, yield and
// result). The gemm operand tiles become 128-byte swizzled, 1024-aligned.
// CHECK-LABEL: func @attention_step
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<64x128xbf16
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x128xbf16
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x128xbf16
// CHECK: tile.fill {{.*}} : !tile.fragment<64x128xf32, #tile.layout<accumulator>>
// CHECK: tile.fill {{.*}} : !tile.fragment<64xf32, #tile.layout<rows>>
// CHECK: scf.for {{.*}} iter_args(%[[O:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}) -> (!tile.fragment<64x128xf32, #tile.layout<accumulator>>, !tile.fragment<64xf32, #tile.layout<rows>>)
// CHECK:   tile.gemm {{.*}} {transpose_b} : {{.*}}, !tile.fragment<64x128xf32, #tile.layout<accumulator>>
// CHECK:   tile.reduce max {{.*}} : !tile.fragment<64x128xf32, #tile.layout<accumulator>> -> !tile.fragment<64xf32, #tile.layout<rows>>
// CHECK:   tile.map{{.*}} : (!tile.fragment<64x128xf32, #tile.layout<accumulator>>, !tile.fragment<64xf32, #tile.layout<rows>>) -> !tile.fragment<64x128xf32, #tile.layout<accumulator>>
// CHECK:   tile.cast {{.*}} : !tile.fragment<64x128xf32, #tile.layout<accumulator>> to !tile.fragment<64x128xbf16, #tile.layout<operand_a>>
// CHECK:   tile.gemm {{.*}} : !tile.fragment<64x128xbf16, #tile.layout<operand_a>>, {{.*}}, !tile.fragment<64x128xf32, #tile.layout<accumulator>>
// CHECK:   scf.yield {{.*}} : !tile.fragment<64x128xf32, #tile.layout<accumulator>>, !tile.fragment<64xf32, #tile.layout<rows>>
// CHECK: tile.store {{.*}} : !tile.fragment<64xf32, #tile.layout<rows>>, memref<256xf32>
func.func @attention_step(%n: index, %out: memref<256xf32>, %outO: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %sQ = memref.alloc() : !sQ
  %sK = memref.alloc() : !sKV
  %sV = memref.alloc() : !sKV
  %o0 = tile.fill %zero : !tile.fragment<64x128xf32>
  %m0 = tile.fill %zero : !tile.fragment<64xf32>
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%o = %o0, %m = %m0)
      -> (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>) {
    %s = tile.gemm %sQ, %sK, %o0 {transpose_b} : !sQ, !sKV, !tile.fragment<64x128xf32>
    %mx = tile.reduce max %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
    %p = tile.map (%s, %mx) : (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>) -> !tile.fragment<64x128xf32> {
    ^bb0(%a: index, %b: index, %x: f32, %y: f32):
      %d = arith.subf %x, %y : f32
      tile.yield %d : f32
    }
    %p16 = tile.cast %p : !tile.fragment<64x128xf32> to !tile.fragment<64x128xbf16>
    %o2 = tile.gemm %p16, %sV, %o : !tile.fragment<64x128xbf16>, !sKV, !tile.fragment<64x128xf32>
    scf.yield %o2, %mx : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
  }
  tile.store %r#1, %out[%c0] : !tile.fragment<64xf32>, memref<256xf32>
  tile.store %r#0, %outO[%c0, %c0] : !tile.fragment<64x128xf32>, memref<64x128xf32>
  return
}

// Both branches of an scf.if and its result share one layout.
// CHECK-LABEL: func @branches
// CHECK: scf.if {{.*}} -> (!tile.fragment<128xf32, #tile.layout<rows>>)
// CHECK: tile.fill {{.*}} : !tile.fragment<128xf32, #tile.layout<rows>>
// CHECK: } else {
// CHECK: tile.fill {{.*}} : !tile.fragment<128xf32, #tile.layout<rows>>
func.func @branches(%c: i1, %v: f32, %out: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %r = scf.if %c -> !tile.fragment<128xf32> {
    %a = tile.fill %v : !tile.fragment<128xf32>
    scf.yield %a : !tile.fragment<128xf32>
  } else {
    %b = tile.fill %v : !tile.fragment<128xf32>
    scf.yield %b : !tile.fragment<128xf32>
  }
  tile.store %r, %out[%c0] : !tile.fragment<128xf32>, memref<128xf32>
  return
}

// A layout already present and matching is kept.
// CHECK-LABEL: func @existing
// CHECK: tile.fill {{.*}} : !tile.fragment<64x64xf32, #tile.layout<accumulator>>
func.func @existing(%v: f32, %out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %a = tile.fill %v : !tile.fragment<64x64xf32, #tile.layout<accumulator>>
  tile.store %a, %out[%c0, %c0] : !tile.fragment<64x64xf32, #tile.layout<accumulator>>, memref<64x64xf32>
  return
}

// A shared tile that register fragments are stored into and that only TMA
// copies to global memory read is a TMA store's staging tile: it becomes
// 128-byte swizzled too, so the fragment's 32-bit pieces spread over the
// banks. A fragment may fill part of it, at indices that are multiples of
// 8. A tile that something else reads (memref.load), or that a fragment is
// stored into at an index that is not, keeps the plain layout.
// CHECK-LABEL: func @tma_store_staging
// CHECK: %[[STAGED:.*]] = memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[READ:.*]] = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[PART:.*]] = memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[SHIFTED:.*]] = memref.alloc() : memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: tile.store %{{.*}}, %[[STAGED]][%c0, %c0]
// CHECK: tile.copy %[[STAGED]], %{{.*}}[%c0, %c0]
func.func @tma_store_staging(%out: memref<256x128xbf16>) -> bf16 {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : bf16
  %staged = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %read = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %part = memref.alloc() : memref<128x128xbf16, #gpu.address_space<workgroup>>
  %shifted = memref.alloc() : memref<128x128xbf16, #gpu.address_space<workgroup>>
  %o = tile.fill %one : !tile.fragment<64x128xbf16>
  tile.store %o, %staged[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %staged, %out[%c0, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  tile.store %o, %read[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %read, %out[%c64, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  %x = memref.load %read[%c0, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.store %o, %part[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<128x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %part, %out[%c64, %c0] : memref<128x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  %c4 = arith.constant 4 : index
  tile.store %o, %shifted[%c4, %c0] : !tile.fragment<64x128xbf16>, memref<128x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %shifted, %out[%c64, %c0] : memref<128x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  return %x : bf16
}

// A 16-bit tile that vector stores read (engine vector: one sequence's
// rows of a packed batch) is staging as well; a 32-bit one is not (the
// vector store's swizzled reads are laid out for 16-bit tiles).
// CHECK-LABEL: func @vector_store_staging
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() : memref<64x32xf32, #gpu.address_space<workgroup>>
func.func @vector_store_staging(%out: memref<?x128xbf16, strided<[?, 1], offset: ?>>, %out32: memref<256x32xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : bf16
  %one32 = arith.constant 1.0 : f32
  %staged = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %staged32 = memref.alloc() : memref<64x32xf32, #gpu.address_space<workgroup>>
  %o = tile.fill %one : !tile.fragment<64x128xbf16>
  tile.store %o, %staged[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %staged, %out[%c0, %c0] {engine = #tile.engine<vector>} : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<?x128xbf16, strided<[?, 1], offset: ?>>
  %o32 = tile.fill %one32 : !tile.fragment<64x32xf32>
  tile.store %o32, %staged32[%c0, %c0] : !tile.fragment<64x32xf32>, memref<64x32xf32, #gpu.address_space<workgroup>>
  tile.copy %staged32, %out32[%c0, %c0] {engine = #tile.engine<vector>} : memref<64x32xf32, #gpu.address_space<workgroup>>, memref<256x32xf32>
  return
}

// The fp32 tiles a TMA reduce-add reads (the backward's dQ shares), two
// stages of them, each written by two 64-column fragments: staging tiles
// too, swizzled in panels of 32 columns (128 bytes of fp32). Through the
// stage's view (its trailing sizes the tile's) the stores and the copy
// still see the allocation's whole tile.
// CHECK-LABEL: func @tma_reduce_staging
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<2x64x128xf32, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() : memref<64x48xf32, #gpu.address_space<workgroup>>
func.func @tma_reduce_staging(%out: memref<256x128xf32>, %stage: index, %wg: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %tiles = memref.alloc() : memref<2x64x128xf32, #gpu.address_space<workgroup>>
  %tile = memref.subview %tiles[%stage, 0, 0] [1, 64, 128] [1, 1, 1] : memref<2x64x128xf32, #gpu.address_space<workgroup>> to memref<64x128xf32, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  %half = tile.fill %one : !tile.fragment<64x64xf32>
  %col = arith.muli %wg, %c64 : index
  tile.store %half, %tile[%c0, %col] : !tile.fragment<64x64xf32>, memref<64x128xf32, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  tile.copy %tile, %out[%c0, %c0] {add} : memref<64x128xf32, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<256x128xf32>
  // 48 columns: not a whole number of 32-column panels.
  %narrow = memref.alloc() : memref<64x48xf32, #gpu.address_space<workgroup>>
  %part = tile.fill %one : !tile.fragment<64x48xf32>
  tile.store %part, %narrow[%c0, %c0] : !tile.fragment<64x48xf32>, memref<64x48xf32, #gpu.address_space<workgroup>>
  tile.copy %narrow, %out[%c64, %c0] {add} : memref<64x48xf32, #gpu.address_space<workgroup>>, memref<256x128xf32>
  return
}

// Not staging tiles either: one read through a subview, one a TMA load
// fills (it is a load's destination, not only a store's source).
// CHECK-LABEL: func @not_tma_store_staging
// CHECK: memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
func.func @not_tma_store_staging(%out: memref<256x128xbf16>) -> bf16 {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : bf16
  %viewed = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %loaded = memref.alloc() : memref<64x128xbf16, #gpu.address_space<workgroup>>
  %o = tile.fill %one : !tile.fragment<64x128xbf16>
  tile.store %o, %viewed[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %viewed, %out[%c0, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  %row = memref.subview %viewed[8, 0] [8, 128] [1, 1] : memref<64x128xbf16, #gpu.address_space<workgroup>> to memref<8x128xbf16, strided<[128, 1], offset: 1024>, #gpu.address_space<workgroup>>
  %x = memref.load %row[%c0, %c0] : memref<8x128xbf16, strided<[128, 1], offset: 1024>, #gpu.address_space<workgroup>>
  tile.copy %out[%c64, %c0], %loaded : memref<256x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.store %o, %loaded[%c0, %c0] : !tile.fragment<64x128xbf16>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.copy %loaded, %out[%c0, %c0] : memref<64x128xbf16, #gpu.address_space<workgroup>>, memref<256x128xbf16>
  return %x : bf16
}

// tile.partial_reduce ties nothing: its source and result are 2-D, so both
// get the accumulator layout (and its row reduction the rows layout).
// CHECK-LABEL: func @partial_row_sum
// CHECK: tile.partial_reduce sum %{{.*}} : !tile.fragment<64x128xf32, #tile.layout<accumulator>> -> !tile.fragment<64x8xf32, #tile.layout<accumulator>>
// CHECK: tile.reduce sum %{{.*}} along 1 : !tile.fragment<64x8xf32, #tile.layout<accumulator>> -> !tile.fragment<64xf32, #tile.layout<rows>>
func.func @partial_row_sum(%out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %p = tile.fill %one : !tile.fragment<64x128xf32>
  %parts = tile.partial_reduce sum %p : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf32>
  %rows = tile.reduce sum %parts along 1 : !tile.fragment<64x8xf32> -> !tile.fragment<64xf32>
  tile.store %rows, %out[%c0] : !tile.fragment<64xf32>, memref<64xf32>
  return
}

// tile.scale_rows ties its result to its source (one type); the factors
// are a row vector.
// CHECK-LABEL: func @scaled_rows
// CHECK: tile.scale_rows %{{.*}} by %{{.*}} : !tile.fragment<64x64xf32, #tile.layout<accumulator>>, !tile.fragment<64xf32, #tile.layout<rows>>
func.func @scaled_rows(%out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %two = arith.constant 2.0 : f32
  %o = tile.fill %two : !tile.fragment<64x64xf32>
  %a = tile.fill %two : !tile.fragment<64xf32>
  %r = tile.scale_rows %o by %a : !tile.fragment<64x64xf32>, !tile.fragment<64xf32>
  tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
  return
}

// tile.scale_rows ties its source to its result: a result used as a wgmma
// register A operand makes the source operand_a too (which the lowering
// then rejects, fragments-invalid.mlir); without the tie the source would
// default to the accumulator layout.
// CHECK-LABEL: func @scaled_rows_operand_a
// CHECK: %[[P:.*]] = tile.fill %{{.*}} : !tile.fragment<64x64xbf16, #tile.layout<operand_a>>
// CHECK: tile.scale_rows %[[P]] by %{{.*}} : !tile.fragment<64x64xbf16, #tile.layout<operand_a>>, !tile.fragment<64xbf16, #tile.layout<rows>>
func.func @scaled_rows_operand_a(%out: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : bf16
  %zero = arith.constant 0.0 : f32
  %b = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
  %p = tile.fill %one : !tile.fragment<64x64xbf16>
  %a = tile.fill %one : !tile.fragment<64xbf16>
  %ps = tile.scale_rows %p by %a : !tile.fragment<64x64xbf16>, !tile.fragment<64xbf16>
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %d = tile.gemm %ps, %b, %acc : !tile.fragment<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  tile.store %d, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
  return
}

// A warpgroup's 64-column panel of a 128-column tile (FlashAttention 3's
// split of dQ's head dim, `sink-bwd --dq atomic --dkdv-warpgroups 2`): the
// column offset is a product with 64, so the slice starts on a panel, and
// the allocation becomes swizzled like a whole-row operand's.
// CHECK-LABEL: func @column_panel_operand
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x64xbf16
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x128xbf16
// CHECK: tile.gemm {{.*}} {transpose_a} : memref<128x64xbf16, {{.*}}>, memref<128x64xbf16, strided<[128, 1], offset: ?>, {{.*}}>, !tile.fragment<64x64xf32, #tile.layout<accumulator>>
func.func @column_panel_operand(%wg: index) {
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %col = arith.muli %wg, %c64 : index
  %acc = tile.fill %zero : !tile.fragment<64x64xf32>
  %sdS = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %sK = memref.alloc() : memref<128x128xbf16, #gpu.address_space<workgroup>>
  %panel = memref.subview %sK[0, %col] [128, 64] [1, 1] : memref<128x128xbf16, #gpu.address_space<workgroup>> to memref<128x64xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>
  %d = tile.gemm %sdS, %panel, %acc {transpose_a} : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<128x64xbf16, strided<[128, 1], offset: ?>, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
  return
}

// Half a panel (32 columns) of a 64-column tile as operand B, N along its
// rows (the D 64 split's dQ panels): the column offset is a product with
// 32, and the allocation becomes swizzled as for whole panels.
// CHECK-LABEL: func @half_panel_operand
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x64xbf16
// CHECK: memref.alloc() {alignment = 1024 : i64, tile.swizzle = 128 : i64} : memref<128x64xbf16
// CHECK: tile.gemm {{.*}} {transpose_a} : memref<128x64xbf16, {{.*}}>, memref<128x32xbf16, strided<[64, 1], offset: ?>, {{.*}}>, !tile.fragment<64x32xf32, #tile.layout<accumulator>>
func.func @half_panel_operand(%wg: index) {
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %col = arith.muli %wg, %c32 : index
  %acc = tile.fill %zero : !tile.fragment<64x32xf32>
  %sdS = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %sK = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
  %half = memref.subview %sK[0, %col] [128, 32] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<128x32xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
  %d = tile.gemm %sdS, %half, %acc {transpose_a} : memref<128x64xbf16, #gpu.address_space<workgroup>>, memref<128x32xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !tile.fragment<64x32xf32>
  return
}
