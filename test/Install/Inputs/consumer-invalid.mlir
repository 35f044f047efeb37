func.func @bad(%a: memref<64x32xbf16, 3>, %b: memref<64x64xbf16, 3>, %c: !tile.fragment<64x64xf32>) {
  %d = tile.gemm %a, %b, %c : memref<64x32xbf16, 3>, memref<64x64xbf16, 3>, !tile.fragment<64x64xf32>
  return
}
