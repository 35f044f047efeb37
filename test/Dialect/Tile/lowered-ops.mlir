// RUN: sinkattn-opt %s | sinkattn-opt | FileCheck %s
// RUN: sinkattn-opt %s --mlir-print-op-generic | sinkattn-opt | FileCheck %s

// The low-level ops the lowering passes produce: barrier init, fused
// arrive + expect_tx, single-thread TMA load and store, the role's cp.async
// share and its noinc arrive.
// CHECK-LABEL: func @lowered
func.func @lowered(%A: memref<1024x64xbf16>, %O: memref<1024x64xbf16>, %m: index) {
  %c0 = arith.constant 0 : index
  // CHECK: %[[S:.*]] = memref.alloc() {alignment = 1024 : i64} : memref<64x64xbf16, 3>
  %s = memref.alloc() {alignment = 1024} : memref<64x64xbf16, 3>
  // CHECK: %[[B:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  // CHECK: tile.mbarrier_init %[[B]][%{{.*}}], 1 : !tile.barriers<1>
  tile.mbarrier_init %b[%c0], 1 : !tile.barriers<1>
  // CHECK: tile.mbarrier_arrive_expect_tx %[[B]][%{{.*}}], 8192 : !tile.barriers<1>
  tile.mbarrier_arrive_expect_tx %b[%c0], 8192 : !tile.barriers<1>
  // CHECK: tile.tma_load %{{.*}}[%{{.*}}, %{{.*}}], %[[S]], barrier(%[[B]][%{{.*}}]) : memref<1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  tile.tma_load %A[%m, %c0], %s, barrier(%b[%c0]) : memref<1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<1>
  // CHECK: tile.tma_store %[[S]], %{{.*}}[%{{.*}}, %{{.*}}] : memref<64x64xbf16, 3>, memref<1024x64xbf16>
  tile.tma_store %s, %O[%m, %c0] : memref<64x64xbf16, 3>, memref<1024x64xbf16>
  // CHECK: tile.cp_async %{{.*}}[%{{.*}}, %{{.*}}], %[[S]] : memref<1024x64xbf16>, memref<64x64xbf16, 3>
  tile.cp_async %A[%m, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, 3>
  // CHECK: tile.cp_async_arrive %[[B]][%{{.*}}] : !tile.barriers<1>
  tile.cp_async_arrive %b[%c0] : !tile.barriers<1>
  return
}

// im2col: the synchronous copy and the single-thread TMA load it lowers to.
// CHECK-LABEL: func @im2col
// CHECK: tile.im2col_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} offsets[%{{.*}}, %{{.*}}] {lower = array<i64: -1, -1>, upper = array<i64: -1, -1>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>
// CHECK: tile.tma_im2col_load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}} offsets[%{{.*}}, %{{.*}}], barrier(%{{.*}}[%{{.*}}]) {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>, !tile.barriers<1>
func.func @im2col(%x: memref<2x10x12x64xbf16>, %t: memref<16x64xbf16, 3>, %n: index, %h: index, %w: index, %dh: index, %dw: index) {
  %c0 = arith.constant 0 : index
  tile.im2col_copy %x[%n, %h, %w, %c0], %t offsets [%dh, %dw] {lower = array<i64: -1, -1>, upper = array<i64: -1, -1>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>
  %b = tile.alloc_barrier [1] : !tile.barriers<1>
  tile.tma_im2col_load %x[%n, %h, %w, %c0], %t offsets [%dh, %dw], barrier(%b[%c0]) {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>, !tile.barriers<1>
  return
}
