// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s

// tile.warpgroup_id round-trips; a subview at it times a constant at least
// its rows is a warpgroup's slice (tile-thread-sync, tile-lower-copies).
// CHECK-LABEL: func @slice
// CHECK: %[[WG:.*]] = tile.warpgroup_id : index
// CHECK: %[[ROW:.*]] = arith.muli %[[WG]], %{{.*}} : index
// CHECK: memref.subview %{{.*}}[%[[ROW]], 0] [64, 64] [1, 1]
func.func @slice() -> memref<64x64xbf16, strided<[64, 1], offset: ?>, 3> {
  %c64 = arith.constant 64 : index
  %wg = tile.warpgroup_id : index
  %row = arith.muli %wg, %c64 : index
  %s = memref.alloc() : memref<128x64xbf16, 3>
  %mine = memref.subview %s[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
  return %mine : memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
}
