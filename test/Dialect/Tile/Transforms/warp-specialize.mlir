// RUN: sinkattn-opt %s --tile-warp-specialize --split-input-file | FileCheck %s

// Attention-shaped: a Q tile before the loop, K and V loaded in the loop and
// read by different gemms (two groups). With S = 2 and G = 2 exactly
// 2·2 forward barriers (count 1) and 2·2 back-pressure barriers (count C =
// 128) are reserved, plus one for Q; K and V get a leading stage dimension.
// CHECK-LABEL: gpu.func @attention
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK-SAME: tile.warp_specialized
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [1, 1, 1, 1] : !tile.barriers<4>
// CHECK: %[[EMPTY:.*]] = tile.alloc_barrier [128, 128, 128, 128] : !tile.barriers<4>
// CHECK: %[[PRE:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
// CHECK-NOT: tile.alloc_barrier
// CHECK: %[[SK:.*]] = memref.alloc() : memref<2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[SV:.*]] = memref.alloc() : memref<2x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[TID:.*]] = gpu.thread_id  x
// CHECK: %[[IS_PRODUCER:.*]] = arith.cmpi ult, %[[TID]], %c128
// CHECK: %[[IS_CONSUMER:.*]] = arith.cmpi uge, %[[TID]], %c128
// The producer: no register reallocation with one consumer warpgroup; the
// loop bound is recomputed; no accumulator initialization (consumer-only).
// CHECK: scf.if %[[IS_PRODUCER]] {
// CHECK-NOT: nvvm.setmaxregister
// CHECK-NOT: tile.fill
// CHECK:   %[[PBOUND:.*]] = arith.ceildivui
// CHECK:   tile.tma_copy %{{.*}}, barrier(%[[PRE]][%{{.*}}])
// CHECK:   tile.mbarrier_arrive %[[PRE]]
// CHECK:   scf.for %[[K:.*]] = %{{.*}} to %[[PBOUND]]
// CHECK:     %[[IT:.*]] = arith.divui
// CHECK:     %[[STAGE:.*]] = arith.remui %[[IT]], %c2
// CHECK:     %[[ROUND:.*]] = arith.divui %[[IT]], %c2
// CHECK:     %[[PAR:.*]] = arith.remui %[[ROUND]], %c2
// CHECK:     %[[EMPTY_PAR:.*]] = arith.xori %[[PAR]], %c1
// CHECK:     tile.mbarrier_wait_parity %[[EMPTY]][%[[SLOT_K:.*]]], %[[EMPTY_PAR]]
// CHECK:     %[[KSTAGE:.*]] = memref.subview %[[SK]][%[[STAGE]], 0, 0]
// CHECK:     tile.tma_copy %{{.*}}, %[[KSTAGE]], barrier(%[[FULL]][%[[SLOT_K]]])
// CHECK:     tile.mbarrier_arrive %[[FULL]][%[[SLOT_K]]]
// CHECK:     %[[EMPTY_PAR_V:.*]] = arith.xori %[[PAR]], %c1
// CHECK:     tile.mbarrier_wait_parity %[[EMPTY]][%[[SLOT_V:.*]]], %[[EMPTY_PAR_V]]
// CHECK:     tile.tma_copy %{{.*}}, barrier(%[[FULL]][%[[SLOT_V]]])
// CHECK:     tile.mbarrier_arrive %[[FULL]][%[[SLOT_V]]]
// CHECK-NOT: tile.gemm
// CHECK: } {tile.role = "producer", tile.thread_base = 0 : i64, tile.thread_count = 128 : i64}
// The consumers: thread ids from 0, Q waited for, the loop bound defined
// here too, a wait before each group's reader and an arrive after it.
// CHECK: scf.if %[[IS_CONSUMER]] {
// CHECK:   %[[RAW:.*]] = gpu.thread_id  x
// CHECK:   %[[CTID:.*]] = arith.subi %[[RAW]], %c128
// CHECK:   arith.divui %[[CTID]], %c128
// CHECK:   tile.mbarrier_wait_parity %[[PRE]][%{{.*}}], %{{.*}}
// CHECK:   tile.fill
// CHECK:   %[[CBOUND:.*]] = arith.ceildivui
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[CBOUND]]
// CHECK-NOT: tile.num_stages
// CHECK:     tile.mbarrier_wait_parity %[[FULL]]
// CHECK-NEXT: tile.gemm {{.*}} {transpose_b}
// CHECK:     tile.mbarrier_arrive %[[EMPTY]]
// CHECK:     tile.cast
// CHECK:     tile.mbarrier_wait_parity %[[FULL]]
// CHECK-NEXT: tile.gemm
// CHECK:     tile.mbarrier_arrive %[[EMPTY]]
// CHECK:   tile.store
// CHECK: } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 128 : i64}
!sQ = memref<64x64xbf16, #gpu.address_space<workgroup>>
!sKV = memref<128x64xbf16, #gpu.address_space<workgroup>>
!S = !tile.fragment<64x128xf32>
!O = !tile.fragment<64x64xf32>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @attention(%Q: memref<256x64xbf16>, %K: memref<1024x64xbf16>, %V: memref<1024x64xbf16>, %out: memref<256x64xf32>, %n: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c128 = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %bx = gpu.block_id x
      %tid = gpu.thread_id x
      %half = arith.divui %tid, %c128 : index
      %m0 = arith.muli %bx, %c128 : index
      %sQ = memref.alloc() : !sQ
      %sK = memref.alloc() : !sKV
      %sV = memref.alloc() : !sKV
      tile.copy %Q[%m0, %c0], %sQ : memref<256x64xbf16>, !sQ
      %o0 = tile.fill %zero : !O
      %s0 = tile.fill %zero : !S
      %blocks = arith.ceildivui %n, %c128 : index
      %r = scf.for %kb = %c0 to %blocks step %c1 iter_args(%o = %o0) -> (!O) {
        %n0 = arith.muli %kb, %c128 : index
        tile.copy %K[%n0, %c0], %sK : memref<1024x64xbf16>, !sKV
        tile.copy %V[%n0, %c0], %sV : memref<1024x64xbf16>, !sKV
        %s = tile.gemm %sQ, %sK, %s0 {transpose_b} : !sQ, !sKV, !S
        %p = tile.cast %s : !S to !tile.fragment<64x128xbf16>
        %o2 = tile.gemm %p, %sV, %o : !tile.fragment<64x128xbf16>, !sKV, !O
        scf.yield %o2 : !O
      } {tile.num_stages = 2}
      tile.store %r, %out[%m0, %c0] : !O, memref<256x64xf32>
      gpu.return
    }
  }
}

// -----

// GEMM-shaped, two consumer warpgroups: A and B share one group (one
// reader), so 3 stages reserve 3 + 3 barriers; the registers move from the
// producer (24) to the consumers (240: the block's launch budget, 168
// registers × 384 threads, less 128·24, over 256 threads, rounded to 8 and
// capped); a loop starting at 3 counts its iterations from 3.
// CHECK-LABEL: gpu.func @gemm
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>
// CHECK: tile.alloc_barrier [1, 1, 1] : !tile.barriers<3>
// CHECK: tile.alloc_barrier [256, 256, 256] : !tile.barriers<3>
// CHECK-NOT: tile.alloc_barrier
// CHECK: scf.if
// CHECK:   nvvm.setmaxregister  decrease 24
// CHECK:   scf.for %[[K:.*]] = %c3
// CHECK:     arith.subi %[[K]], %c3
// CHECK:     tile.mbarrier_wait_parity
// CHECK:     tile.tma_copy
// CHECK:     tile.tma_copy
// CHECK:     tile.mbarrier_arrive
// CHECK:   tile.role = "producer"
// CHECK: scf.if
// CHECK:   nvvm.setmaxregister  increase 240
// CHECK:   tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64
!sA = memref<128x64xbf16, #gpu.address_space<workgroup>>
!sB = memref<64x256xbf16, #gpu.address_space<workgroup>>
!acc = !tile.fragment<64x256xf32>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @gemm(%A: memref<256x512xbf16>, %B: memref<512x256xbf16>, %D: memref<256x256xf32>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %by = gpu.block_id y
      %row0 = arith.muli %by, %c128 : index
      %tid = gpu.thread_id x
      %wg = arith.divui %tid, %c128 : index
      %wgRow = arith.muli %wg, %c64 : index
      %sA = memref.alloc() : !sA
      %sB = memref.alloc() : !sB
      %init = tile.fill %zero : !acc
      %res = scf.for %kt = %c3 to %c8 step %c1 iter_args(%acc = %init) -> (!acc) {
        %k0 = arith.muli %kt, %c64 : index
        tile.copy %A[%row0, %k0], %sA : memref<256x512xbf16>, !sA
        tile.copy %B[%k0, %row0], %sB : memref<512x256xbf16>, !sB
        %sAw = memref.subview %sA[%wgRow, 0] [64, 64] [1, 1] : !sA to memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
        %next = tile.gemm %sAw, %sB, %acc : memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !sB, !acc
        scf.yield %next : !acc
      } {tile.num_stages = 3}
      %outRow = arith.addi %row0, %wgRow : index
      tile.store %res, %D[%outRow, %c1] : !acc, memref<256x256xf32>
      gpu.return
    }
  }
}

// -----

// A block sync the kernel wrote inside its loop becomes the consumers'
// named barrier (the producer never reaches it).
// CHECK-LABEL: gpu.func @user_sync
// CHECK: tile.role = "producer"
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// CHECK: tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @user_sync(%A: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%k, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        gpu.barrier
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A persistent kernel's tile lists: the tile loop's bounds and the tile come
// from a constant global, which no thread writes, so the producer repeats
// those loads too.
// CHECK-LABEL: gpu.func @constant_global_lists
// CHECK: scf.if
// CHECK:   memref.get_global @lists : memref<5xi32>
// CHECK:   memref.load %{{.*}} : memref<5xi32>
// CHECK:   memref.load %{{.*}} : memref<5xi32>
// CHECK:   scf.for
// CHECK:     memref.load %{{.*}} : memref<5xi32>
// CHECK:     scf.for
// CHECK:       tile.tma_copy
// CHECK:   tile.role = "producer"
// CHECK: scf.if
// CHECK:   memref.get_global @lists : memref<5xi32>
// CHECK:   tile.role = "consumer"
!sL = memref<64x64xbf16, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @m {
    memref.global "private" constant @lists : memref<5xi32> = dense<[2, 4, 5, 1, 0]>
    gpu.func @constant_global_lists(%K: memref<1024x64xbf16>, %out: memref<2x64x64xf32>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %lists = memref.get_global @lists : memref<5xi32>
      %b = gpu.block_id x
      %bNext = arith.addi %b, %c1 : index
      %begin32 = memref.load %lists[%b] : memref<5xi32>
      %end32 = memref.load %lists[%bNext] : memref<5xi32>
      %begin = arith.index_castui %begin32 : i32 to index
      %end = arith.index_castui %end32 : i32 to index
      %sK = memref.alloc() : !sL
      scf.for %slot = %begin to %end step %c1 {
        %tile32 = memref.load %lists[%slot] : memref<5xi32>
        %tile = arith.index_castui %tile32 : i32 to index
        %first = arith.muli %tile, %c4 : index
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %res = scf.for %kb = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %block = arith.addi %first, %kb : index
          %row = arith.muli %block, %c64 : index
          tile.copy %K[%row, %c0], %sK : memref<1024x64xbf16>, !sL
          %next = tile.gemm %sK, %sK, %acc {transpose_b} : !sL, !sL, !tile.fragment<64x64xf32>
          scf.yield %next : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        tile.store %res, %out[%tile, %c0, %c0] : !tile.fragment<64x64xf32>, memref<2x64x64xf32>
      }
      gpu.return
    }
  }
}

// -----

// Varlen-shaped: the loop bounds and a copy index come from sequence
// offsets the kernel only reads, so the producer repeats those loads.
// CHECK-LABEL: gpu.func @read_only_offsets
// CHECK: scf.if
// CHECK:   memref.load %{{.*}} : memref<3xi32>
// CHECK:   memref.load %{{.*}} : memref<3xi32>
// CHECK:   scf.for
// CHECK:     tile.tma_copy
// CHECK:   tile.role = "producer"
// CHECK: scf.if
// CHECK:   memref.load %{{.*}} : memref<3xi32>
// CHECK:   memref.load %{{.*}} : memref<3xi32>
// CHECK:   tile.role = "consumer"
!sK = memref<64x64xbf16, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @read_only_offsets(%K: memref<1024x64xbf16>, %cu: memref<3xi32>, %out: memref<64x64xf32>) kernel
        attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %b = gpu.block_id x
      %bNext = arith.addi %b, %c1 : index
      %start32 = memref.load %cu[%b] : memref<3xi32>
      %end32 = memref.load %cu[%bNext] : memref<3xi32>
      %start = arith.index_castui %start32 : i32 to index
      %end = arith.index_castui %end32 : i32 to index
      %length = arith.subi %end, %start : index
      %blocks = arith.ceildivui %length, %c64 : index
      %sK = memref.alloc() : !sK
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %res = scf.for %kb = %c0 to %blocks step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %n0 = arith.muli %kb, %c64 : index
        %row = arith.addi %start, %n0 : index
        tile.copy %K[%row, %c0], %sK : memref<1024x64xbf16>, !sK
        %next = tile.gemm %sK, %sK, %acc {transpose_b} : !sK, !sK, !tile.fragment<64x64xf32>
        scf.yield %next : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %res, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// An async gemm reads its stage until the wait that completes it: the
// consumers release the stage after that wait, not after the gemm, so other
// work (the ping-pong hand-over of sink-fwd) can sit between the two.
// CHECK-LABEL: gpu.func @async_reader
// CHECK: tile.role = "producer"
// CHECK: tile.mbarrier_wait_parity
// CHECK: tile.gemm {{.*}}async
// CHECK-NEXT: nvvm.barrier.arrive
// CHECK-NEXT: tile.gemm_wait
// CHECK-NEXT: tile.mbarrier_arrive
// CHECK: tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @async_reader(%A: memref<1024x64xbf16>, %n: index, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %id = arith.constant 3 : i32
      %count = arith.constant 256 : i32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %acc0 = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %acc0) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%i, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b, async} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        nvvm.barrier.arrive id = %id number_of_threads = %count
        %w = tile.gemm_wait %d pending 0 : !tile.fragment<64x64xf32>
        scf.yield %w : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// Two async gemms in flight: `pending 1` completes the older one (A's
// reader), `pending 0` the younger one (B's), and each stage is released
// right after the wait that completes its reader.
// CHECK-LABEL: gpu.func @two_in_flight
// CHECK: tile.role = "producer"
// CHECK: tile.mbarrier_wait_parity
// CHECK: tile.gemm {{.*}}async
// CHECK: tile.mbarrier_wait_parity
// CHECK: tile.gemm {{.*}}async
// CHECK-NEXT: tile.gemm_wait %{{.*}} pending 1
// CHECK-NEXT: tile.mbarrier_arrive
// CHECK-NEXT: tile.gemm_wait %{{.*}} pending 0
// CHECK-NEXT: tile.mbarrier_arrive
// CHECK: tile.role = "consumer"
!sT = memref<64x64xbf16, #gpu.address_space<workgroup>>
!f = !tile.fragment<64x64xf32>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @two_in_flight(%A: memref<1024x64xbf16>, %B: memref<1024x64xbf16>, %n: index, %out: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : !sT
      %sB = memref.alloc() : !sT
      %acc0 = tile.fill %zero : !f
      %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %acc0, %y = %acc0) -> (!f, !f) {
        tile.copy %A[%i, %c0], %sA : memref<1024x64xbf16>, !sT
        tile.copy %B[%i, %c0], %sB : memref<1024x64xbf16>, !sT
        %a = tile.gemm %sA, %sA, %x {transpose_b, async} : !sT, !sT, !f
        %b = tile.gemm %sB, %sB, %y {transpose_b, async} : !sT, !sT, !f
        %aReady = tile.gemm_wait %a pending 1 : !f
        %bReady = tile.gemm_wait %b pending 0 : !f
        scf.yield %aReady, %bReady : !f, !f
      } {tile.num_stages = 2}
      tile.store %r#0, %out[%c0, %c0] : !f, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A tile the consumers read element by element (memref.load) is a group of
// its own: each consumer thread waits for it before its first load and
// arrives on its empty barrier (128 arrivals) after its last one, so the
// producer refills the stage only once every thread's loads have returned.
// CHECK-LABEL: gpu.func @load_reader
// CHECK: tile.alloc_barrier [1, 1, 1, 1] : !tile.barriers<4>
// CHECK: tile.alloc_barrier [128, 128, 128, 128] : !tile.barriers<4>
// CHECK-DAG: memref.alloc() : memref<2x2x64xf32, #gpu.address_space<workgroup>>
// CHECK: tile.role = "producer"
// CHECK: tile.mbarrier_wait_parity
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: tile.mbarrier_arrive
// CHECK: tile.mbarrier_wait_parity
// CHECK-NEXT: tile.map
// CHECK: memref.load
// CHECK: }
// CHECK-NEXT: tile.mbarrier_arrive
// CHECK: tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @load_reader(%A: memref<1024x64xbf16>, %S: memref<1024x64xf32>, %D: memref<64x64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sS = memref.alloc() : memref<2x64xf32, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %k64 = arith.muli %k, %c64 : index
        %k2 = arith.muli %k, %c2 : index
        tile.copy %A[%k64, %c0], %sA : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %S[%k2, %c0], %sS : memref<1024x64xf32>, memref<2x64xf32, #gpu.address_space<workgroup>>
        %d = tile.gemm %sA, %sA, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %e = tile.map (%d) : (!tile.fragment<64x64xf32>) -> !tile.fragment<64x64xf32> {
        ^bb0(%i: index, %j: index, %x: f32):
          %s = memref.load %sS[%c1, %j] : memref<2x64xf32, #gpu.address_space<workgroup>>
          %y = arith.addf %x, %s : f32
          tile.yield %y : f32
        }
        scf.yield %e : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// Through a rank-reducing subview (one row of the stage): the consumers'
// rebuilt subview keeps the rank the load indexes with.
// CHECK-LABEL: gpu.func @load_row
// CHECK: tile.role = "producer"
// CHECK: %[[ROW:.*]] = memref.subview %{{.*}}[1, 0] [1, 64] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>> to memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: tile.mbarrier_wait_parity
// CHECK-NEXT: tile.map
// CHECK: memref.load %[[ROW]][%{{.*}}] : memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK: tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @load_row(%A: memref<1024x64xbf16>, %S: memref<1024x64xf32>, %D: memref<64x64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sS = memref.alloc() : memref<2x64xf32, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %k64 = arith.muli %k, %c64 : index
        %k2 = arith.muli %k, %c2 : index
        tile.copy %A[%k64, %c0], %sA : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %S[%k2, %c0], %sS : memref<1024x64xf32>, memref<2x64xf32, #gpu.address_space<workgroup>>
        %d = tile.gemm %sA, %sA, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %row = memref.subview %sS[1, 0] [1, 64] [1, 1] : memref<2x64xf32, #gpu.address_space<workgroup>> to memref<64xf32, strided<[1], offset: 64>, #gpu.address_space<workgroup>>
        %e = tile.map (%d) : (!tile.fragment<64x64xf32>) -> !tile.fragment<64x64xf32> {
        ^bb0(%i: index, %j: index, %x: f32):
          %s = memref.load %row[%j] : memref<64xf32, strided<[1], offset: 64>, #gpu.address_space<workgroup>>
          %y = arith.addf %x, %s : f32
          tile.yield %y : f32
        }
        scf.yield %e : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}
