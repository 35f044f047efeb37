// RUN: sinkattn-opt %s --tile-software-pipeline --split-input-file -verify-diagnostics | FileCheck %s

// Without warp specialization (no known_block_size), a 3-stage loop
// prefetches two iterations ahead: buffers get 3 versions, one barrier per
// version, a prologue loads iterations 0 and 1 (each only if it exists),
// and each iteration syncs the block (version (it+2)%3 was read in it-1),
// loads iteration it+2 if it exists, and waits for version it%3 with
// parity (it/3)%2 before the gemm. A loop starting at 5 counts from 5.
// CHECK-LABEL: gpu.func @gemm_like
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [1, 1, 1] : !tile.barriers<3>
// CHECK-NOT: tile.alloc_barrier
// CHECK-DAG: %[[SA:.*]] = memref.alloc() : memref<3x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[SB:.*]] = memref.alloc() : memref<3x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[K0:.*]] = arith.addi %[[LB:.*]], %{{.*}} : index
// CHECK: %[[E0:.*]] = arith.cmpi slt, %[[K0]], %[[UB:.*]] : index
// CHECK: scf.if %[[E0]] {
// CHECK:   tile.tma_copy {{.*}} barrier(%[[FULL]][%[[V0:.*]]])
// CHECK:   tile.tma_copy {{.*}} barrier(%[[FULL]][%[[V0]]])
// CHECK:   tile.mbarrier_arrive %[[FULL]][%[[V0]]]
// CHECK: scf.if
// CHECK:   tile.mbarrier_arrive %[[FULL]]
// CHECK: scf.for %[[K:.*]] = %[[LB]] to %[[UB]]
// CHECK:   %[[OFF:.*]] = arith.subi %[[K]], %[[LB]]
// CHECK:   %[[IT:.*]] = arith.divui %[[OFF]]
// CHECK:   %[[STAGE:.*]] = arith.remui %[[IT]], %c3
// CHECK:   %[[ROUND:.*]] = arith.divui %[[IT]], %c3
// CHECK:   %[[PAR:.*]] = arith.remui %[[ROUND]], %c2
// CHECK:   %[[NEXT:.*]] = arith.addi %[[K]]
// CHECK:   %[[NEXT_EXISTS:.*]] = arith.cmpi slt, %[[NEXT]], %[[UB]]
// CHECK:   gpu.barrier
// CHECK:   scf.if %[[NEXT_EXISTS]] {
// CHECK:     tile.tma_copy
// CHECK:     tile.tma_copy
// CHECK:     tile.mbarrier_arrive %[[FULL]]
// CHECK:   tile.mbarrier_wait_parity %[[FULL]][%[[STAGE]]], %[[PAR]]
// CHECK-NEXT: tile.gemm
// CHECK-NOT: tile.copy
// CHECK-NOT: tile.num_stages
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @gemm_like(%A: memref<64x1024xbf16>, %B: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sB = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c5 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %k0 = arith.muli %k, %c64 : index
        tile.copy %A[%c0, %k0], %sA : memref<64x1024xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %B[%k0, %c0], %sB : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %sA, %sB, %acc : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 3}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// One stage: nothing to prefetch, the loop is left alone.
// CHECK-LABEL: gpu.func @one_stage
// CHECK-NOT: tile.alloc_barrier
// CHECK: tile.copy
// CHECK: tile.num_stages = 1
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @one_stage(%A: memref<1024x64xbf16>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%k, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 1}
      gpu.return
    }
  }
}

// -----

// A store of a tile the loop does not load (dQ's share in a backward) is
// ordinary work of the body: the loop is still pipelined and the store
// stays where it was.
// CHECK-LABEL: gpu.func @store_in_loop
// CHECK: tile.alloc_barrier
// CHECK: scf.for
// CHECK:   tile.tma_copy
// CHECK:   tile.mbarrier_wait_parity
// CHECK:   tile.store
// CHECK:   tile.copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {add}
// CHECK-NOT: tile.num_stages
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @store_in_loop(%A: memref<1024x64xbf16>, %B: memref<1024x64xbf16>, %D: memref<1024x64xf32>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sB = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sD = memref.alloc() : memref<64x64xf32, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      scf.for %k = %c0 to %n step %c1 {
        tile.copy %A[%k, %c0], %sA : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %B[%k, %c0], %sB : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %sA, %sB, %init {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        tile.store %d, %sD[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32, #gpu.address_space<workgroup>>
        tile.copy %sD, %D[%k, %c0] {add} : memref<64x64xf32, #gpu.address_space<workgroup>>, memref<1024x64xf32>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

// A loop this pass does not fit (its buffer is stored back to global
// memory) keeps tile.num_stages for the multi-versioned path.
// CHECK-LABEL: gpu.func @copy_through
// CHECK: tile.copy
// CHECK: tile.copy
// CHECK: tile.num_stages = 2
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{software pipelining declined: the loop has copies other than global -> shared tile.copy at the top of its body or of a guard (user-managed barriers or cp.async groups, nested or shared -> global copies of loaded tiles)}}
    gpu.func @copy_through(%A: memref<1024x64xbf16>, %B: memref<1024x64xbf16>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %k = %c0 to %n step %c1 {
        tile.copy %A[%k, %c0], %s : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %s, %B[%k, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<1024x64xbf16>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

// A pipelined loop inside a loop over tiles: the versions' barriers keep
// completing phases across tiles, so a counter of K iterations runs through
// both loops; the prologue of each tile loads into versions counted from
// its value, and the loop takes version count % 2 and parity
// (count / 2) % 2 from it.
// CHECK-LABEL: gpu.func @persistent
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [1, 1] : !tile.barriers<2>
// CHECK: scf.for %{{.*}} iter_args(%[[OUTER:.*]] = %{{.*}}) -> (index) {
// CHECK:   %[[V0:.*]] = arith.remui %{{.*}}, %c2
// CHECK:   scf.if
// CHECK:     tile.tma_copy {{.*}} barrier(%[[FULL]][%[[V0]]])
// CHECK:   %[[R:.*]]:2 = scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[C:.*]] = %[[OUTER]]) -> (!tile.fragment<64x64xf32>, index) {
// CHECK:     %[[STAGE:.*]] = arith.remui %[[C]], %c2
// CHECK:     %[[ROUND:.*]] = arith.divui %[[C]], %c2
// CHECK:     %[[PAR:.*]] = arith.remui %[[ROUND]], %c2
// CHECK:     tile.mbarrier_wait_parity %[[FULL]][%[[STAGE]]], %[[PAR]]
// CHECK:     %[[NEXT:.*]] = arith.addi %[[C]], %c1
// CHECK:     scf.yield %{{.*}}, %[[NEXT]]
// CHECK:   scf.yield %[[R]]#1 : index
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @persistent(%A: memref<?x64xbf16>, %tiles: index, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      scf.for %t = %c0 to %tiles step %c1 {
        %init = tile.fill %zero : !tile.fragment<64x64xf32>
        %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
          %row = arith.addi %t, %k : index
          tile.copy %A[%row, %c0], %s : memref<?x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
          %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
          scf.yield %d : !tile.fragment<64x64xf32>
        } {tile.num_stages = 2}
      }
      gpu.return
    }
  }
}

// -----

// A tile that threads read element by element (memref.load, here a row of
// per-column statistics inside a tile.map) is staged and prefetched like a
// gemm operand: every load reads version it%3 after the wait, and the block
// sync at the top of the next iteration (before the refill) comes after
// every thread's loads.
// CHECK-LABEL: gpu.func @load_reader
// CHECK-DAG: %[[SA:.*]] = memref.alloc() : memref<3x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[SS:.*]] = memref.alloc() : memref<3x2x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK:   %[[STAGE:.*]] = arith.remui %{{.*}}, %c3
// CHECK-DAG:   %[[VS:.*]] = memref.subview %[[SS]][%[[STAGE]], 0, 0] [1, 2, 64] [1, 1, 1]
// CHECK:   gpu.barrier
// CHECK:   scf.if
// CHECK:     tile.tma_copy
// CHECK:     tile.tma_copy
// CHECK:   tile.mbarrier_wait_parity
// CHECK-NEXT: tile.gemm
// CHECK:   tile.map
// CHECK:     memref.load %[[VS]][%c1, %{{.*}}]
// CHECK-NOT: tile.copy
// CHECK-NOT: tile.num_stages
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @load_reader(%A: memref<1024x64xbf16>, %S: memref<1024x64xf32>, %D: memref<64x64xf32>, %n: index) kernel {
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
      } {tile.num_stages = 3}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A thread writing into a buffer the loop loads is not a reader: the
// refill could race with it.
// CHECK-LABEL: gpu.func @store_into_loaded
// CHECK: tile.copy
// CHECK: tile.num_stages = 2
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{software pipelining declined: a buffer the loop fills is also used outside the loop or by an op other than a tile.gemm (synchronous, or async with a tile.gemm_wait in its block that completes it) or a memref.load (directly or through a subview)}}
    gpu.func @store_into_loaded(%S: memref<1024x64xf32>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %sS = memref.alloc() : memref<2x64xf32, #gpu.address_space<workgroup>>
      scf.for %k = %c0 to %n step %c1 {
        tile.copy %S[%k, %c0], %sS : memref<1024x64xf32>, memref<2x64xf32, #gpu.address_space<workgroup>>
        memref.store %zero, %sS[%c0, %c0] : memref<2x64xf32, #gpu.address_space<workgroup>>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}

// -----

// Through a rank-reducing subview (one row of the stage): the rebuilt
// subview of the staged buffer keeps the rank the load indexes with.
// CHECK-LABEL: gpu.func @load_row
// CHECK: scf.for
// CHECK:   %[[STAGE:.*]] = memref.subview %{{.*}}[%{{.*}}, 0, 0] [1, 2, 64] [1, 1, 1] : memref<2x2x64xf32, #gpu.address_space<workgroup>> to memref<2x64xf32, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK:   %[[ROW:.*]] = memref.subview %[[STAGE]][1, 0] [1, 64] [1, 1] : memref<2x64xf32, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>> to memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
// CHECK:     memref.load %[[ROW]][%{{.*}}] : memref<64xf32, strided<[1], offset: ?>, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @load_row(%A: memref<1024x64xbf16>, %S: memref<1024x64xf32>, %D: memref<64x64xf32>, %n: index) kernel {
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

// -----

// A copy index loaded from a constant global (a persistent kernel's tile
// lists): no thread writes it, so the prefetch repeats the load for the
// iteration it loads ahead: the prologue at the first index, the loop at
// k + 1.
// CHECK-LABEL: gpu.func @constant_global_index
// CHECK: %[[ORDER:.*]] = memref.get_global @order : memref<4xi32>
// CHECK: scf.if
// CHECK:   %[[FIRST:.*]] = memref.load %[[ORDER]][%[[K0:.*]]] : memref<4xi32>
// CHECK:   %[[B0:.*]] = arith.index_castui %[[FIRST]] : i32 to index
// CHECK:   %[[ROW0:.*]] = arith.muli %[[B0]], %c64 : index
// CHECK:   tile.tma_copy %arg0[%[[ROW0]], %c0]
// CHECK: scf.for %[[K:.*]] = %c0 to %c4
// CHECK:   %[[AHEAD:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK:   gpu.barrier
// CHECK:   scf.if
// CHECK:     %[[NEXT:.*]] = memref.load %[[ORDER]][%[[AHEAD]]] : memref<4xi32>
// CHECK:     %[[B1:.*]] = arith.index_castui %[[NEXT]] : i32 to index
// CHECK:     %[[ROW1:.*]] = arith.muli %[[B1]], %c64 : index
// CHECK:     tile.tma_copy %arg0[%[[ROW1]], %c0]
module attributes {gpu.container_module} {
  gpu.module @m {
    memref.global "private" constant @order : memref<4xi32> = dense<[3, 0, 2, 1]>
    gpu.func @constant_global_index(%A: memref<256x64xbf16>, %out: memref<64x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %order = memref.get_global @order : memref<4xi32>
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %block32 = memref.load %order[%k] : memref<4xi32>
        %block = arith.index_castui %block32 : i32 to index
        %row = arith.muli %block, %c64 : index
        tile.copy %A[%row, %c0], %s : memref<256x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// The same index from a global that is not constant: some thread may write
// it between the prefetch and the iteration it was for.
module attributes {gpu.container_module} {
  gpu.module @m {
    memref.global "private" @order : memref<4xi32> = dense<[3, 0, 2, 1]>
    // expected-remark @+1 {{software pipelining declined: a copy index or loop bound is computed by 'memref.load', which is not a pure op the producer could repeat}}
    gpu.func @mutable_global_index(%A: memref<256x64xbf16>, %out: memref<64x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %order = memref.get_global @order : memref<4xi32>
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %block32 = memref.load %order[%k] : memref<4xi32>
        %block = arith.index_castui %block32 : i32 to index
        %row = arith.muli %block, %c64 : index
        tile.copy %A[%row, %c0], %s : memref<256x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// A copy index divided by a run-time size in the kernel's entry block (a
// shape-generic kernel's kv head): every thread computes it once, so the
// prologue that prefetches may compute it too, though a division is not
// speculatable.
// CHECK-LABEL: gpu.func @entry_division
// CHECK-SAME: (%[[A:.*]]: memref<256x?xbf16>, %{{.*}}: memref<64x64xf32>, %[[H:.*]]: index, %[[G:.*]]: index)
// CHECK:   %[[KV:.*]] = arith.divui %[[H]], %[[G]] : index
// CHECK:   %[[COL:.*]] = arith.muli %[[KV]], %c64 : index
// CHECK:   tile.tma_copy %[[A]][%{{.*}}, %[[COL]]]
// CHECK:   scf.for
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @entry_division(%A: memref<256x?xbf16>, %out: memref<64x64xf32>, %head: index, %group: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %kvHead = arith.divui %head, %group : index
      %col = arith.muli %kvHead, %c64 : index
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %row = arith.muli %k, %c64 : index
        tile.copy %A[%row, %col], %s : memref<256x?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// The same division in the loop: prefetching would compute it for an
// iteration ahead, where it may divide by zero before the loop gets there.
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{software pipelining declined: a copy index or loop bound is computed by 'arith.divui', which is not a pure op the producer could repeat}}
    gpu.func @loop_division(%A: memref<256x?xbf16>, %out: memref<64x64xf32>, %head: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %kvHead = arith.divui %head, %k : index
        %col = arith.muli %kvHead, %c64 : index
        tile.copy %A[%c0, %col], %s : memref<256x?xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %out[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}
