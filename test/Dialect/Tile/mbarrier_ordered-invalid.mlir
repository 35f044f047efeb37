// RUN: sinkattn-opt %s -verify-diagnostics --split-input-file

func.func @not_unit() {
  // expected-error @+1 {{'memref.alloc' op 'tile.mbarrier_ordered' must be a unit attribute}}
  %s = memref.alloc() {tile.mbarrier_ordered = 1 : i32} : memref<64x64xbf16, 3>
  return
}

// -----

func.func @global_memory() {
  // expected-error @+1 {{'memref.alloc' op 'tile.mbarrier_ordered' marks a shared-memory memref.alloc (one in #gpu.address_space<workgroup>), not this op}}
  %s = memref.alloc() {tile.mbarrier_ordered} : memref<64x64xbf16>
  return
}

// -----

func.func @not_an_alloc(%x: index) -> index {
  // expected-error @+1 {{'arith.addi' op 'tile.mbarrier_ordered' marks a shared-memory memref.alloc (one in #gpu.address_space<workgroup>), not this op}}
  %y = arith.addi %x, %x {tile.mbarrier_ordered} : index
  return %y : index
}
