// RUN: sinkattn-opt %s --tile-warp-specialize --split-input-file -verify-diagnostics | FileCheck %s

// A persistent kernel: the pipelined K loop is nested in a loop over tiles.
// The barriers' phases run on across tiles, so both roles carry a counter
// of K iterations through both loops (starting at 0, the inner loop
// starting from the outer loop's value and handing its final value back)
// and take stage = count % S and parity = (count / S) % 2 from it. The
// producer rebuilds the tile loop with what the copies need (the tile's
// row); the consumer keeps the whole kernel. Its TMA producer gets 32
// registers (24 spill with the extra loop), which leaves the two consumer
// warpgroups 232, not 240: setmaxnreg.inc only draws on what the block was
// launched with (168 per thread for 384 threads) and the producer released,
// (168·384 − 32·128) / 256 = 236, rounded down to 8.
// CHECK-LABEL: gpu.func @persistent
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK: %[[EMPTY:.*]] = tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK: scf.if
// CHECK:   nvvm.setmaxregister  decrease 32
// CHECK:   %[[BX:.*]] = gpu.block_id  x
// CHECK:   %[[GX:.*]] = gpu.grid_dim  x
// CHECK:   %[[Z:.*]] = arith.constant 0 : index
// CHECK:   scf.for %[[T:.*]] = %[[BX]] to %{{.*}} step %[[GX]] iter_args(%[[PO:.*]] = %[[Z]]) -> (index) {
// CHECK:     %[[ROW:.*]] = arith.muli %[[T]], %c64
// CHECK:     %[[PI:.*]] = scf.for %{{.*}} = %{{.*}} iter_args(%[[PC:.*]] = %[[PO]]) -> (index) {
// CHECK:       %[[PS:.*]] = arith.remui %[[PC]], %c2
// CHECK:       %[[PR:.*]] = arith.divui %[[PC]], %c2
// CHECK:       %[[PP:.*]] = arith.remui %[[PR]], %c2
// CHECK:       arith.addi %[[ROW]]
// CHECK:       %[[PNEXT:.*]] = arith.addi %[[PC]], %c1
// CHECK:       %[[EP:.*]] = arith.xori %[[PP]], %c1
// CHECK:       tile.mbarrier_wait_parity %[[EMPTY]][%{{.*}}], %[[EP]]
// CHECK:       tile.tma_copy
// CHECK:       scf.yield %[[PNEXT]] : index
// CHECK:     scf.yield %[[PI]] : index
// CHECK: } {tile.role = "producer"
// CHECK: scf.if
// CHECK:   nvvm.setmaxregister  increase 232
// CHECK:   gpu.grid_dim
// CHECK-NEXT: %[[CZ:.*]] = arith.constant 0 : index
// CHECK-NEXT: scf.for %{{.*}} iter_args(%[[CO:.*]] = %[[CZ]]) -> (index) {
// CHECK:     tile.fill
// CHECK:     %[[CI:.*]]:2 = scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CC:.*]] = %[[CO]]) -> (!tile.fragment<64x64xf32>, index) {
// CHECK:       %[[CS:.*]] = arith.remui %[[CC]], %c2
// CHECK:       %[[CR:.*]] = arith.divui %[[CC]], %c2
// CHECK:       %[[CP:.*]] = arith.remui %[[CR]], %c2
// CHECK:       tile.mbarrier_wait_parity %[[FULL]][%{{.*}}], %[[CP]]
// CHECK:       tile.gemm
// CHECK:       tile.mbarrier_arrive %[[EMPTY]]
// CHECK:       %[[CNEXT:.*]] = arith.addi %[[CC]], %c1
// CHECK:       scf.yield %{{.*}}, %[[CNEXT]]
// CHECK:     tile.store %[[CI]]#0
// CHECK:     scf.yield %[[CI]]#1 : index
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @persistent(%A: memref<?x64xbf16>, %D: memref<?x64xf32>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %bx = gpu.block_id x
      %grid = gpu.grid_dim x
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %bx to %tiles step %grid {
        %row = arith.muli %t, %c64 : index
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          %r0 = arith.addi %row, %k0 : index
          tile.copy %A[%r0, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        tile.store %r, %D[%row, %c0] : !tile.fragment<64x64xf32>, memref<?x64xf32>
      }
      gpu.return
    }
  }
}

// -----

// A tile load (a persistent attention kernel's Q tile): a copy at the top
// of the tile loop's body, before the pipelined loop, into a buffer only
// the loop's gemms read (through a subview). The producer issues it once
// per tile, before the tile's pipelined loads, on a barrier pair of its
// own: it waits until the consumers released the buffer in the previous
// tile (parity of the tile iteration, flipped: a fresh barrier's phase 1
// counts as complete), loads, and arrives. The consumers wait for the
// tile's phase before the pipelined loop (the buffer's first reader) and
// release the buffer right after it (its last user), so the next tile's
// load overlaps their epilogue; their copy is gone.
// CHECK-LABEL: gpu.func @tile_load
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK: %[[EMPTY:.*]] = tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK: %[[QFULL:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
// CHECK: %[[QEMPTY:.*]] = tile.alloc_barrier [256] : !tile.barriers<1>
// CHECK: scf.if
// CHECK:   scf.for %[[T:.*]] = %[[LB:.*]] to %{{.*}} step %[[STEP:[^ ]*]] iter_args
// CHECK:     %[[OFF:.*]] = arith.subi %[[T]], %[[LB]]
// CHECK:     %[[IT:.*]] = arith.divui %[[OFF]], %[[STEP]]
// CHECK:     %[[ROW:.*]] = arith.muli %[[T]], %c64
// CHECK:     %[[TP:.*]] = arith.remui %[[IT]], %c2
// CHECK:     %[[EP:.*]] = arith.xori %[[TP]], %c1
// CHECK:     tile.mbarrier_wait_parity %[[QEMPTY]][%[[SLOT:.*]]], %[[EP]] : !tile.barriers<1>
// CHECK:     tile.tma_copy %arg0[%[[ROW]], %c0{{.*}}], %[[Q:.*]], barrier(%[[QFULL]][%[[SLOT]]])
// CHECK:     tile.mbarrier_arrive %[[QFULL]][%[[SLOT]]]
// CHECK:     scf.for
// CHECK:       tile.mbarrier_wait_parity %[[EMPTY]]
// CHECK:       tile.tma_copy %arg1
// CHECK: } {tile.role = "producer"
// CHECK: scf.if
// CHECK:   scf.for %[[CT:.*]] = %[[CLB:.*]] to %{{.*}} step %[[CSTEP:[^ ]*]] iter_args
// CHECK:     %[[COFF:.*]] = arith.subi %[[CT]], %[[CLB]]
// CHECK:     %[[CIT:.*]] = arith.divui %[[COFF]], %[[CSTEP]]
// CHECK:     %[[CTP:.*]] = arith.remui %[[CIT]], %c2
// CHECK-NOT: tile.copy
// CHECK:     memref.subview %[[Q]]
// CHECK:     tile.mbarrier_wait_parity %[[QFULL]][%[[CSLOT:.*]]], %[[CTP]] : !tile.barriers<1>
// CHECK-NEXT: %[[LOOP:.*]]:2 = scf.for
// CHECK:       tile.gemm
// CHECK:       scf.yield
// CHECK-NEXT: }
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: tile.mbarrier_arrive %[[QEMPTY]][%{{.*}}] : !tile.barriers<1>
// CHECK-NEXT: tile.store %[[LOOP]]#0
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @tile_load(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %D: memref<?x64xf32>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %bx = gpu.block_id x
      %grid = gpu.grid_dim x
      %sQ = memref.alloc() : memref<128x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %bx to %tiles step %grid {
        %row = arith.muli %t, %c64 : index
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
        %sQw = memref.subview %sQ[%c64, 0] [64, 64] [1, 1] : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQw, %sK, %acc {transpose_b} : memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        tile.store %r, %D[%row, %c0] : !tile.fragment<64x64xf32>, memref<?x64xf32>
      }
      gpu.return
    }
  }
}

// -----

// Not a tile load: the buffer is also written after the loop (a tile the
// consumers stage their output in), so the consumers keep the copy
// (synchronous, lowered by tile-lower-copies) and no barrier pair is added.
// CHECK-LABEL: gpu.func @tile_buffer_written
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: tile.copy %arg0
// CHECK: tile.store %{{.*}}, %[[Q:.*]][%c0, %c0]
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @tile_buffer_written(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = arith.muli %t, %c64 : index
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        %r16 = tile.cast %r : !tile.fragment<64x64xf32> to !tile.fragment<64x64xbf16>
        tile.store %r16, %sQ[%c0, %c0] : !tile.fragment<64x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %sQ, %Q[%row, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<?x64xbf16>
      }
      gpu.return
    }
  }
}

// -----

// Not tile loads, so the consumers keep them (synchronous) and the kernel
// is still specialized: a copy whose row depends on the thread (the
// producer's threads are not the consumers'), and one from an argument the
// kernel also writes (releasing the buffer before that store could let the
// next tile's load read rows the store has not written yet).
// CHECK-LABEL: gpu.func @tile_copy_by_thread
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: tile.copy %arg0
// CHECK: } {tile.role = "consumer"
// CHECK-LABEL: gpu.func @tile_copy_source_written
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: tile.copy %arg0
// CHECK: tile.store %{{.*}}, %arg0
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @tile_copy_by_thread(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %wg = arith.divui %tid, %c128 : index
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = arith.muli %t, %c64 : index
        %qRow = arith.addi %row, %wg : index
        tile.copy %Q[%qRow, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
    gpu.func @tile_copy_source_written(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = arith.muli %t, %c64 : index
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        %r16 = tile.cast %r : !tile.fragment<64x64xf32> to !tile.fragment<64x64xbf16>
        tile.store %r16, %Q[%row, %c0] : !tile.fragment<64x64xbf16>, memref<?x64xbf16>
      }
      gpu.return
    }
  }
}

// -----

// More copies that are not tile loads: the buffer is read before the copy
// in the tile loop's body (the previous tile's rows), or after the tile
// loop, or the pipelined loop sits in two loops (tile loads need exactly
// one around it: their phase is that loop's iteration).
// CHECK-LABEL: gpu.func @tile_buffer_read_before
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: memref.load
// CHECK: tile.copy %arg0
// CHECK: } {tile.role = "consumer"
// CHECK-LABEL: gpu.func @tile_buffer_read_after
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: tile.copy %arg0
// CHECK: } {tile.role = "consumer"
// CHECK-LABEL: gpu.func @two_loops_around
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: tile.copy %arg0
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @tile_buffer_read_before(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %out: memref<?xbf16>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = arith.muli %t, %c64 : index
        %previous = memref.load %sQ[%c0, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>
        memref.store %previous, %out[%t] : memref<?xbf16>
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
    gpu.func @tile_buffer_read_after(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %out: memref<?xbf16>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = arith.muli %t, %c64 : index
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      %last = memref.load %sQ[%c0, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>
      memref.store %last, %out[%c0] : memref<?xbf16>
      gpu.return
    }
    gpu.func @two_loops_around(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %batches: index, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %b = %c0 to %batches step %c1 {
        scf.for %t = %c0 to %tiles step %c1 {
          %row = arith.muli %t, %c64 : index
          tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %init = tile.fill %zero : !tile.fragment<64x64xf32>
          %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
            %k0 = arith.muli %k, %c64 : index
            tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
            %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
            scf.yield %d : !tile.fragment<64x64xf32>
          } {tile.num_stages = 2}
        }
      }
      gpu.return
    }
  }
}

// -----

// Guards under a tile loop: the K-iteration counter and the guard's use
// counter both run through the two loops; the guarded group takes its
// stage and parity from the guard's counter, which only advances on
// iterations that take the guard.
// CHECK-LABEL: gpu.func @guarded_persistent
// CHECK: scf.if
// CHECK:   scf.for {{.*}} iter_args(%[[O0:.*]] = %{{.*}}, %[[O1:.*]] = %{{.*}}) -> (index, index) {
// CHECK:     scf.for {{.*}} iter_args(%[[I0:.*]] = %[[O0]], %[[I1:.*]] = %[[O1]]) -> (index, index) {
// CHECK:       %[[GUARD:.*]] = arith.cmpi
// CHECK:       arith.addi %[[I0]], %{{.*}}
// CHECK:       arith.select %[[GUARD]], %{{.*}}, %{{.*}}
// CHECK:       %[[GS:.*]] = arith.remui %[[I1]], %{{.*}}
// CHECK:       scf.if %[[GUARD]] {
// CHECK:         memref.subview %{{.*}}[%[[GS]], 0, 0]
// CHECK-NEXT:    tile.tma_copy
// CHECK: } {tile.role = "producer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @guarded_persistent(%A: memref<?x64xbf16>, %tiles: index, %kTiles: index, %limit: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %take = arith.cmpi ult, %k, %limit : index
          %next = scf.if %take -> (!tile.fragment<64x64xf32>) {
            tile.copy %A[%k, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
            %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
            scf.yield %d : !tile.fragment<64x64xf32>
          } else {
            scf.yield %acc : !tile.fragment<64x64xf32>
          }
          scf.yield %next : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
  }
}

// -----

// Only scf.for may enclose the pipelined loop.
// CHECK-LABEL: gpu.func @inside_if
// CHECK-NOT: tile.role
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: the pipelined loop is inside 'scf.if'; only scf.for loops may enclose it}}
    gpu.func @inside_if(%A: memref<?x64xbf16>, %n: index, %p: i1) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.if %p {
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          tile.copy %A[%k, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
  }
}

// -----

// A tile-loop value carried across tiles cannot be recomputed by the
// producer.
// CHECK-LABEL: gpu.func @carried_tile_index
// CHECK-NOT: tile.role
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a copy index depends on a value carried by the loop}}
    gpu.func @carried_tile_index(%A: memref<?x64xbf16>, %tiles: index, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %last = scf.for %t = %c0 to %tiles step %c1 iter_args(%row = %c0) -> (index) {
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %i = arith.addi %row, %k : index
          tile.copy %A[%i, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        %next = arith.addi %row, %n : index
        scf.yield %next : index
      }
      gpu.return
    }
  }
}

// -----

// A persistent kernel of run-time shapes: its tile loop's bounds and tiles
// come from a table argument that the kernel only loads from and takes the
// size of, and each tile's row is a division by a run-time count (the
// rows per level, from Q's size). Every thread runs those divisions
// directly in the tile loop, so the producer repeats them; Q, whose size
// the kernel reads but which it never writes, is still a tile load.
// CHECK-LABEL: gpu.func @run_time_tile_table
// CHECK: %[[QFULL:.*]] = tile.alloc_barrier [1] : !tile.barriers<1>
// CHECK: scf.if
// CHECK:   %[[PBEGIN:.*]] = memref.load %arg2[%{{.*}}] : memref<?xi32>
// CHECK:   scf.for %[[PSLOT:.*]] = %{{.*}} to %{{.*}} step %c1 iter_args
// CHECK:     %[[PTILE32:.*]] = memref.load %arg2[%[[PSLOT]]] : memref<?xi32>
// CHECK:     %[[PTILE:.*]] = arith.index_castui %[[PTILE32]]
// CHECK:     %[[PLEVEL:.*]] = arith.divui %[[PTILE]], %[[PPER:.*]] : index
// CHECK:     %[[PROW:.*]] = arith.muli %[[PLEVEL]], %c64
// CHECK:     tile.tma_copy %arg0[%[[PROW]], %c0{{.*}}], %{{.*}}, barrier(%[[QFULL]]
// CHECK: } {tile.role = "producer"
// CHECK-NOT: tile.copy %arg0
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @run_time_tile_table(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %table: memref<?xi32>, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %perLevel = memref.dim %Q, %c0 : memref<?x64xbf16>
      %entries = memref.dim %table, %c0 : memref<?xi32>
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %block = gpu.block_id x
      %next = arith.addi %block, %c1 : index
      %begin32 = memref.load %table[%block] : memref<?xi32>
      %begin = arith.index_castui %begin32 : i32 to index
      %end32 = memref.load %table[%next] : memref<?xi32>
      %end = arith.index_castui %end32 : i32 to index
      scf.for %slot = %begin to %end step %c1 {
        %tile32 = memref.load %table[%slot] : memref<?xi32>
        %tile = arith.index_castui %tile32 : i32 to index
        %level = arith.divui %tile, %perLevel : index
        %row = arith.muli %level, %c64 : index
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
  }
}

// -----

// A division by a run-time value under a condition is not run by every
// thread (the producer could divide where the consumers do not).
// CHECK-LABEL: gpu.func @conditional_division
// CHECK-NOT: tile.role
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a copy index or loop bound is computed by 'scf.if', which is not a pure op the producer could repeat}}
    gpu.func @conditional_division(%A: memref<?x64xbf16>, %tiles: index, %n: index, %d: index, %p: i1) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = scf.if %p -> (index) {
          %q = arith.divui %t, %d : index
          scf.yield %q : index
        } else {
          scf.yield %c0 : index
        }
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %i = arith.addi %row, %k : index
          tile.copy %A[%i, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %g = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %g : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
  }
}

// -----

// An argument the kernel takes the size of but also writes is no tile
// load: the consumers keep Q's copy (the kernel is still specialized).
// CHECK-LABEL: gpu.func @dim_of_written_argument
// CHECK: tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK-NEXT: tile.alloc_barrier [256, 256] : !tile.barriers<2>
// CHECK-NOT: tile.alloc_barrier
// CHECK: } {tile.role = "producer"
// CHECK: tile.copy %arg0
// CHECK: } {tile.role = "consumer"
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @dim_of_written_argument(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %tiles: index, %kTiles: index) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %rows = memref.dim %Q, %c0 : memref<?x64xbf16>
      %sQ = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sK = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %row = arith.muli %t, %c64 : index
        tile.copy %Q[%row, %c0], %sQ : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %k0 = arith.muli %k, %c64 : index
          tile.copy %K[%k0, %c0], %sK : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %sQ, %sK, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
        %r16 = tile.cast %r : !tile.fragment<64x64xf32> to !tile.fragment<64x64xbf16>
        %last = arith.subi %rows, %c64 : index
        tile.store %r16, %Q[%last, %c0] : !tile.fragment<64x64xbf16>, memref<?x64xbf16>
      }
      gpu.return
    }
  }
}

// -----

// A division by a run-time value directly in the pipelined loop is
// computed ahead of its iteration by the producer (prefetching), where it
// may divide by zero before the loop gets there: not repeated.
// CHECK-LABEL: gpu.func @division_in_pipelined
// CHECK-NOT: tile.role
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{warp specialization declined: a copy index or loop bound is computed by 'arith.divui', which is not a pure op the producer could repeat}}
    gpu.func @division_in_pipelined(%A: memref<?x64xbf16>, %tiles: index, %n: index, %d: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %row = arith.divui %k, %d : index
          tile.copy %A[%row, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %g = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %g : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
  }
}
