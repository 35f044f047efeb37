// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s

// A function's memref argument may declare its offset and outer strides
// multiples of N elements; static ones must be.
// CHECK-LABEL: func @token_rows
// CHECK-SAME: tile.stride_multiple = 8 : i64
// CHECK-SAME: tile.stride_multiple = 4 : index
func.func @token_rows(%rows: memref<?x?xbf16, strided<[?, 1], offset: ?>> {tile.stride_multiple = 8 : i64},
                      %dense: memref<4x128xf32> {tile.stride_multiple = 4 : index}) {
  return
}

// A size-1 dimension's stride is never applied.
// CHECK-LABEL: gpu.func @one_row
// CHECK-SAME: tile.stride_multiple = 8 : i64
gpu.module @kernels {
  gpu.func @one_row(%row: memref<1x4xbf16, strided<[3, 1]>> {tile.stride_multiple = 8 : i64}) kernel {
    gpu.return
  }
}
