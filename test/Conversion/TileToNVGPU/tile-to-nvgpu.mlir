// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))' | FileCheck %s

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // The dynamic shared memory window: an extern array, 16-byte aligned (as
    // the driver places it), rounded up at run time.
    // CHECK: memref.global "public" @__sinkattn_dynamic_shared : memref<0xi8, #gpu.address_space<workgroup>> {alignment = 16 : i64}
    // CHECK-LABEL: gpu.func @copy_tile
    // Two tensor maps appended (A with a 64x64 box, O with 64x64), passed by
    // value; the host reads their sources and boxes from the attributes.
    // CHECK-SAME: (%[[A:.*]]: memref<8x1024x64xbf16>, %[[O:.*]]: memref<1024x64xbf16>, %[[MAPA:.*]]: !llvm.ptr, %[[MAPO:.*]]: !llvm.ptr) kernel
    // CHECK-SAME: sinkattn.dynamic_shared_memory_bytes = 9232 : i64
    // CHECK-SAME: sinkattn.tensor_map_args = array<i64: 2, 3>
    // CHECK-SAME: sinkattn.tensor_maps = [{box = array<i64: 1, 64, 64>, shape = array<i64: 8, 1024, 64>, source = 0 : i64}, {box = array<i64: 64, 64>, shape = array<i64: 1024, 64>, source = 1 : i64}]
    // CHECK: %[[DA:.*]] = builtin.unrealized_conversion_cast %[[MAPA]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
    // CHECK: %[[DO:.*]] = builtin.unrealized_conversion_cast %[[MAPO]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>
    // Shared allocations are views of the dynamic window, rounded up to
    // 1024 bytes at run time; a 16-byte aligned one follows the first.
    // CHECK: %[[SYM:.*]] = memref.get_global @__sinkattn_dynamic_shared
    // CHECK: %[[WINDOW:.*]] = memref.reinterpret_cast %[[SYM]] to offset: [0], sizes: [9232], strides: [1]
    // CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[WINDOW]]
    // CHECK: %[[K1024:.*]] = arith.constant 1024 : index
    // CHECK: %[[MIS:.*]] = arith.remui %[[BASE]], %[[K1024]]
    // CHECK: %[[GAP:.*]] = arith.subi %[[K1024]], %[[MIS]]
    // CHECK: %[[PAD:.*]] = arith.remui %[[GAP]], %[[K1024]]
    // CHECK: %[[OFF0:.*]] = arith.addi %[[PAD]], %{{.*}}
    // CHECK: %[[VIEW:.*]] = memref.view %[[WINDOW]][%[[OFF0]]][] : memref<9232xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    // CHECK: %[[TILE:.*]] = memref.memory_space_cast %[[VIEW]] : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, 3>
    // CHECK: %[[C8192:.*]] = arith.constant 8192 : index
    // CHECK: %[[OFF1:.*]] = arith.addi %[[PAD]], %[[C8192]]
    // CHECK: memref.view %[[WINDOW]][%[[OFF1]]][] : memref<9232xi8, #gpu.address_space<workgroup>> to memref<4xf32, #gpu.address_space<workgroup>>
    // CHECK: %[[G:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    // CHECK: nvgpu.mbarrier.init %[[G]][%{{.*}}], %{{.*}}
    // CHECK: %[[RAW:.*]] = nvgpu.mbarrier.get %[[G]][%{{.*}}] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2> -> i32
    // CHECK: %[[PTR:.*]] = llvm.inttoptr %[[RAW]] : i32 to !llvm.ptr<3>
    // CHECK: nvvm.mbarrier.expect_tx %[[PTR]], %{{.*}} : !llvm.ptr<3>, i32
    // The rank-2 tile is viewed as 1x64x64 for the rank-3 map; coordinates
    // are reversed (innermost first).
    // CHECK: %[[TILE3:.*]] = memref.expand_shape %[[TILE]] {{.*}} output_shape [1, 64, 64]
    // CHECK: nvgpu.tma.async.load %[[DA]][%[[Z:.*]], %[[M:.*]], %[[H:.*]]], %[[G]][%{{.*}}] to %[[TILE3]]
    // CHECK: nvgpu.mbarrier.arrive.expect_tx %[[G]][%{{.*}}], %{{.*}}
    // CHECK: nvgpu.mbarrier.arrive %[[G]]
    // CHECK: nvvm.mbarrier.arrive %{{.*}}, %{{.*}} : !llvm.ptr<3>
    // CHECK: %[[P:.*]] = arith.index_cast %{{.*}} : index to i1
    // CHECK: nvgpu.mbarrier.try_wait.parity %[[G]][%{{.*}}], %[[P]], %{{.*}}
    // CHECK: nvgpu.tma.async.store %[[TILE]] to %[[DO]][%{{.*}}, %[[M]]]
    gpu.func @copy_tile(%A: memref<8x1024x64xbf16>, %O: memref<1024x64xbf16>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %h = gpu.block_id y
      %m = gpu.block_id x
      %tile = memref.alloc() {alignment = 1024} : memref<64x64xbf16, 3>
      %small = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
      %bars = tile.alloc_barrier [1, 128] : !tile.barriers<2>
      tile.mbarrier_init %bars[%c0], 1 : !tile.barriers<2>
      tile.mbarrier_expect_tx %bars[%c0], 8192 : !tile.barriers<2>
      tile.tma_load %A[%h, %m, %c0], %tile, barrier(%bars[%c0]) : memref<8x1024x64xbf16>, memref<64x64xbf16, 3>, !tile.barriers<2>
      tile.mbarrier_arrive_expect_tx %bars[%c0], 8192 : !tile.barriers<2>
      tile.mbarrier_arrive %bars[%c1] : !tile.barriers<2>
      tile.mbarrier_arrive %bars[%c1] count 2 : !tile.barriers<2>
      tile.mbarrier_wait_parity %bars[%c0], %c1 : !tile.barriers<2>
      tile.tma_store %tile, %O[%m, %c0] : memref<64x64xbf16, 3>, memref<1024x64xbf16>
      gpu.return
    }

    // A reduce-add store: NVVM's tensor reduce on the map's pointer, the
    // tile's shared address and i32 coordinates innermost first.
    // CHECK-LABEL: gpu.func @store_add
    // CHECK-SAME: %[[MAP:[a-z0-9]+]]: !llvm.ptr) kernel
    // CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : index to i32
    // CHECK: %[[ROW:.*]] = arith.index_cast %{{.*}} : index to i32
    // CHECK: %[[SRC:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr<3>
    // CHECK: nvvm.cp.async.bulk.tensor.reduce %[[MAP]], %[[SRC]], box[%[[COL]], %[[ROW]]] {redKind = #nvvm.tma_redux_kind<add>}
    gpu.func @store_add(%O: memref<1024x64xf32>, %m: index) kernel {
      %c0 = arith.constant 0 : index
      %tile = memref.alloc() {alignment = 1024} : memref<64x64xf32, 3>
      tile.tma_store %tile, %O[%m, %c0] {add} : memref<64x64xf32, 3>, memref<1024x64xf32>
      gpu.return
    }

    // im2col: its own tensor map (mode, pixels, channels, corners for the
    // host) and a shared::cluster im2col load with coordinates (c, w, h, n)
    // and offsets (dw, dh) innermost first.
    // CHECK-LABEL: gpu.func @im2col
    // CHECK-SAME: %[[MAP:[a-z0-9]+]]: !llvm.ptr) kernel
    // CHECK-SAME: sinkattn.tensor_map_args = array<i64: 5>
    // CHECK-SAME: sinkattn.tensor_maps = [{channels = 64 : i64, lower = array<i64: 0, 0>, mode = "im2col", pixels = 16 : i64, source = 0 : i64, upper = array<i64: -2, -2>}]
    // CHECK: %[[DST:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr<3> to !llvm.ptr<7>
    // CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[DST]], %[[MAP]], %{{.*}}, box[%[[C:.*]], %[[W:.*]], %[[H:.*]], %[[N:.*]]] im2col[%[[DW:.*]], %[[DH:.*]]] {mode = #nvvm.tma_load_mode<im2col>}
    gpu.func @im2col(%x: memref<2x10x12x64xbf16>, %out: memref<16x64xbf16>, %h: index, %dh: index, %dw: index) kernel {
      %c0 = arith.constant 0 : index
      %tile = memref.alloc() {alignment = 1024} : memref<16x64xbf16, 3>
      %bars = tile.alloc_barrier [1] : !tile.barriers<1>
      tile.tma_im2col_load %x[%c0, %h, %c0, %c0], %tile offsets [%dh, %dw], barrier(%bars[%c0]) {lower = array<i64: 0, 0>, upper = array<i64: -2, -2>} : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>, !tile.barriers<1>
      gpu.return
    }
  }
}
