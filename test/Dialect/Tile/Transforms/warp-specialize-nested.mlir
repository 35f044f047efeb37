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
