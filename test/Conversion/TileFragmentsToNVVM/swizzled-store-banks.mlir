// The swizzled fragment stores, run for every thread of a warpgroup by
// Inputs/swizzled_store_banks.py: every element at its 128-byte-swizzled
// position exactly once, and no store with a bank conflict. fp32 pairs (8
// bytes) are served half a warp at a time, so odd rows store the panel's
// other half first (storeSwizzled); bf16 pairs (4 bytes) a whole warp at
// a time, in the plain order.
// RUN: sinkattn-opt %s --convert-tile-fragments-to-nvvm --canonicalize | python3 %S/Inputs/swizzled_store_banks.py | FileCheck %s
// CHECK: banks_64x64xf32_col64: 16 stores, 0 misplaced elements, 0 of 128 access groups with a bank conflict
// CHECK: banks_64x32xf32_col32: 8 stores, 0 misplaced elements, 0 of 64 access groups with a bank conflict
// CHECK: banks_64x128xf32_col0: 32 stores, 0 misplaced elements, 0 of 256 access groups with a bank conflict
// CHECK: banks_64x64xbf16_col64: 16 stores, 0 misplaced elements, 0 of 64 access groups with a bank conflict

func.func @banks_64x64xf32_col64(%d: !tile.fragment<64x64xf32, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xf32, #gpu.address_space<workgroup>>
  tile.store %d, %s[%c0, %c64] : !tile.fragment<64x64xf32, #tile.layout<accumulator>>, memref<64x128xf32, #gpu.address_space<workgroup>>
  return
}

func.func @banks_64x32xf32_col32(%d: !tile.fragment<64x32xf32, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xf32, #gpu.address_space<workgroup>>
  tile.store %d, %s[%c0, %c32] : !tile.fragment<64x32xf32, #tile.layout<accumulator>>, memref<64x128xf32, #gpu.address_space<workgroup>>
  return
}

func.func @banks_64x128xf32_col0(%d: !tile.fragment<64x128xf32, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xf32, #gpu.address_space<workgroup>>
  tile.store %d, %s[%c0, %c0] : !tile.fragment<64x128xf32, #tile.layout<accumulator>>, memref<64x128xf32, #gpu.address_space<workgroup>>
  return
}

func.func @banks_64x64xbf16_col64(%d: !tile.fragment<64x64xbf16, #tile.layout<accumulator>>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %s = memref.alloc() {alignment = 1024, tile.swizzle = 128 : i64} : memref<64x128xbf16, #gpu.address_space<workgroup>>
  tile.store %d, %s[%c0, %c64] : !tile.fragment<64x64xbf16, #tile.layout<accumulator>>, memref<64x128xbf16, #gpu.address_space<workgroup>>
  return
}
