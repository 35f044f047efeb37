// RUN: sinkattn-opt %s --tile-lower-copies --split-input-file | FileCheck %s

// A store by 16-byte vectors into one sequence's rows of a packed tensor
// (a view that ends inside it): 128 threads, a swizzled 64x64 bf16 tile of
// 512 chunks, 4 per thread (chunk c at row 8c / 64, column 8c % 64). Each
// chunk is read from its swizzled position and stored where it lies inside
// the view, whose run-time rows are 16-byte aligned by the argument's
// tile.stride_multiple; the block syncs before and after.
// CHECK-LABEL: gpu.func @vector_store_sequence
// CHECK-SAME: (%{{.*}}: memref<?x?xbf16, strided<[?, 1]>> {tile.stride_multiple = 8 : i64}, %{{.*}}: index, %[[ROWS:.*]]: index, %{{.*}}: index, %[[M:.*]]: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: %[[S:.*]] = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, 3>
// CHECK: %[[SEQ:.*]] = memref.subview
// CHECK: gpu.barrier
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step
// CHECK-NEXT: %[[STEP:.*]] = arith.muli %[[I]], %[[C128]]
// CHECK-NEXT: %[[CHUNK:.*]] = arith.addi %[[TID]], %[[STEP]]
// CHECK-NEXT: %[[E:.*]] = arith.muli %[[CHUNK]], %[[C8]]
// CHECK-NEXT: %[[COL:.*]] = arith.remui %[[E]], %[[C64]]
// CHECK-NEXT: %[[E1:.*]] = arith.divui %[[E]], %[[C64]]
// CHECK-NEXT: %[[ROW:.*]] = arith.remui %[[E1]], %[[C64]]
// CHECK-NEXT: %[[GROW:.*]] = arith.addi %[[M]], %[[ROW]]
// CHECK-NEXT: %[[IN0:.*]] = arith.cmpi ult, %[[GROW]], %[[ROWS]]
// CHECK-NEXT: %[[IN1:.*]] = arith.cmpi ult, %[[COL]], %[[C64]]
// CHECK: %[[IN:.*]] = arith.andi %[[IN0]], %[[IN1]]
// CHECK: scf.if %[[IN]] {
// CHECK: arith.xori
// CHECK: %[[DROW:.*]] = arith.divui %[[OFF:.*]], %[[C64]]
// CHECK: %[[DCOL:.*]] = arith.remui %[[OFF]], %[[C64]]
// CHECK: %[[V:.*]] = vector.load %[[S]][%[[DROW]], %[[DCOL]]] {alignment = 16 : i64} : memref<64x64xbf16, 3>, vector<8xbf16>
// CHECK: vector.store %[[V]], %[[SEQ]][%[[GROW]], %[[COL]]] {alignment = 16 : i64} : memref<?x64xbf16, strided<[?, 1], offset: ?>>, vector<8xbf16>
// CHECK: gpu.barrier
// CHECK-NOT: tile.copy
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @vector_store_sequence(%O: memref<?x?xbf16, strided<[?, 1]>> {tile.stride_multiple = 8 : i64}, %start: index, %rows: index, %h: index, %m: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, 3>
      %col = arith.muli %h, %c64 : index
      %seq = memref.subview %O[%start, %col] [%rows, 64] [1, 1] : memref<?x?xbf16, strided<[?, 1]>> to memref<?x64xbf16, strided<[?, 1], offset: ?>>
      tile.copy %s, %seq[%m, %c0] {engine = #tile.engine<vector>} : memref<64x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1], offset: ?>>
      gpu.return
    }
  }
}

// -----

// Through a memref.cast of the declared argument, and into a view of fewer
// rows than the tile: chunks past the view's rows are skipped.
// CHECK-LABEL: gpu.func @vector_store_cast
// CHECK: %[[CAST:.*]] = memref.cast
// CHECK: %[[SEQ:.*]] = memref.subview %[[CAST]]
// CHECK: scf.if
// CHECK: %[[V:.*]] = vector.load %{{.*}} {alignment = 16 : i64} : memref<64x64xbf16, 3>, vector<8xbf16>
// CHECK: vector.store %[[V]], %[[SEQ]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xbf16, strided<[?, 1], offset: ?>>, vector<8xbf16>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @vector_store_cast(%O: memref<1000x512xbf16, strided<[?, 1]>> {tile.stride_multiple = 8 : i64}, %start: index, %m: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %s = memref.alloc() : memref<64x64xbf16, 3>
      %cast = memref.cast %O : memref<1000x512xbf16, strided<[?, 1]>> to memref<?x?xbf16, strided<[?, 1]>>
      %seq = memref.subview %cast[%start, 64] [%m, 64] [1, 1] : memref<?x?xbf16, strided<[?, 1]>> to memref<?x64xbf16, strided<[?, 1], offset: ?>>
      tile.copy %s, %seq[%c0, %c0] {engine = #tile.engine<vector>} : memref<64x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1], offset: ?>>
      gpu.return
    }
  }
}
