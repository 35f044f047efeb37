// RUN: sinkattn-opt %s --tile-software-pipeline --split-input-file -verify-diagnostics | FileCheck %s

// cp.async copies pipeline through commit groups, one per producer group
// and iteration, committed in the order of the groups' LAST use: sX is read
// by the first and third gemm, sY by the second, so sY's group (last use:
// gemm 2) commits before sX's (last use: gemm 3). With S = 2 the prologue
// copies iterations 0 and 1 (each only if it exists, always committing);
// each iteration refills a version right after its group's last user
// (block sync first: other threads may still read it) with iteration
// it + 2. Before a group's first reader, wait until at most N groups are
// pending, N = the groups committed after it: sX (commit 2nd of its round)
// 0 + one whole round (2) + none of this iteration's = 2; sY (1st) 1 + 2 +
// 0 = 3. Then fence (async proxy) and sync the block.
// CHECK-LABEL: gpu.func @last_use_order
// CHECK-NOT: tile.alloc_barrier
// CHECK-DAG: %[[SX:.*]] = memref.alloc() : memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK-DAG: %[[SY:.*]] = memref.alloc() : memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// Prologue, iteration 0: sY's group, then sX's.
// CHECK: scf.if
// CHECK:   tile.cp_async %{{.*}}, %[[Y0:.*]] :
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.if
// CHECK:   tile.cp_async %{{.*}}, %[[X0:.*]] :
// CHECK: nvvm.cp.async.commit.group
// Iteration 1.
// CHECK: scf.if
// CHECK:   memref.subview %[[SY]]
// CHECK:   tile.cp_async
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.if
// CHECK:   memref.subview %[[SX]]
// CHECK:   tile.cp_async
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.for %[[K:[a-z0-9_]+]] =
// CHECK:   %[[STAGE:.*]] = arith.remui %{{.*}}, %c2
// CHECK:   %[[NEXT:.*]] = arith.addi %[[K]], %{{.*}}
// CHECK:   %[[NEXT_EXISTS:.*]] = arith.cmpi slt, %[[NEXT]]
// CHECK:   nvvm.cp.async.wait.group 2
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: nvvm.cp.async.wait.group 3
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if %[[NEXT_EXISTS]] {
// CHECK:        memref.subview %[[SY]][%[[STAGE]], 0, 0]
// CHECK:        tile.cp_async
// CHECK:      }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if %[[NEXT_EXISTS]] {
// CHECK:        memref.subview %[[SX]][%[[STAGE]], 0, 0]
// CHECK:        tile.cp_async
// CHECK:      }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: scf.yield
// CHECK-NOT: tile.copy
// CHECK-NOT: tile.num_stages
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @last_use_order(%X: memref<1024x64xbf16>, %Y: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sX = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sY = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %k0 = arith.muli %k, %c64 : index
        tile.copy %X[%k0, %c0], %sX {engine = #tile.engine<cp_async>} : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.copy %Y[%k0, %c0], %sY {engine = #tile.engine<cp_async>} : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d1 = tile.gemm %sX, %sX, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %d2 = tile.gemm %sY, %sY, %d1 {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        %d3 = tile.gemm %sX, %sX, %d2 {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d3 : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      tile.store %r, %D[%c0, %c0] : !tile.fragment<64x64xf32>, memref<64x64xf32>
      gpu.return
    }
  }
}

// -----

// One stage still overlaps with cp.async: the single version is refilled
// with the next iteration right after its last user, and the reader waits
// for all groups (N = 0).
// CHECK-LABEL: gpu.func @one_stage
// CHECK: memref.alloc() : memref<1x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.if
// CHECK:   tile.cp_async
// CHECK: nvvm.cp.async.commit.group
// CHECK-NOT: nvvm.cp.async.commit.group
// CHECK: scf.for
// CHECK:   nvvm.cp.async.wait.group 0
// CHECK:   gpu.barrier
// CHECK-NEXT: tile.gemm
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.if
// CHECK:   tile.cp_async
// CHECK:   nvvm.cp.async.commit.group
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @one_stage(%A: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%k, %c0], %s {engine = #tile.engine<cp_async>} : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 1}
      gpu.return
    }
  }
}

// -----

// TMA and cp.async loads in one pipelined loop: the TMA copy keeps its
// barrier path (prefetch S - 1 = 2 ahead, wait on its version's barrier),
// the cp.async copy its commit groups (S = 3 ahead); the barrier counts a
// single arrival (no cp.async thread arrives on it).
// CHECK-LABEL: gpu.func @mixed
// CHECK: %[[FULL:.*]] = tile.alloc_barrier [1, 1, 1] : !tile.barriers<3>
// CHECK: scf.for
// CHECK:   gpu.barrier
// CHECK:   scf.if
// CHECK:     tile.tma_copy
// CHECK-NOT: tile.cp_async
// CHECK:     tile.mbarrier_arrive %[[FULL]]
// CHECK:   tile.mbarrier_wait_parity %[[FULL]]
// CHECK:   nvvm.cp.async.wait.group 2
// CHECK:   tile.gemm
// CHECK:   tile.cp_async
// CHECK:   nvvm.cp.async.commit.group
// CHECK-NOT: tile.cp_async_arrive
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @mixed(%A: memref<64x1024xbf16>, %B: memref<1024x64xbf16>, %D: memref<64x64xf32>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %sA = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sB = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        %k0 = arith.muli %k, %c64 : index
        tile.copy %A[%c0, %k0], %sA {engine = #tile.engine<cp_async>} : memref<64x1024xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
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

// A loop whose body manages cp.async groups itself is left alone: the
// pass's commit groups would change what the user's waits count.
// CHECK-LABEL: gpu.func @user_groups
// CHECK: tile.num_stages = 2
module attributes {gpu.container_module} {
  gpu.module @m {
    // expected-remark @+1 {{software pipelining declined: the loop has copies other than global -> shared tile.copy at the top of its body or of a guard (user-managed barriers or cp.async groups, nested or shared -> global copies of loaded tiles)}}
    gpu.func @user_groups(%A: memref<1024x64xbf16>, %B: memref<1024x64xbf16>, %n: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %s = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %t = memref.alloc() : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %init = tile.fill %zero : !tile.fragment<64x64xf32>
      %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %init) -> (!tile.fragment<64x64xf32>) {
        tile.copy %A[%k, %c0], %s {engine = #tile.engine<cp_async>} : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        tile.cp_async %B[%k, %c0], %t : memref<1024x64xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>
        nvvm.cp.async.commit.group
        nvvm.cp.async.wait.group 0
        %d = tile.gemm %s, %s, %acc {transpose_b} : memref<64x64xbf16, #gpu.address_space<workgroup>>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.fragment<64x64xf32>
        scf.yield %d : !tile.fragment<64x64xf32>
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}
