// RUN: sinkattn-opt %s --tile-lower-copies --split-input-file | FileCheck %s

// tile.cp_async in a 128-thread block: the 64x64 bf16 tile is 512 16-byte
// chunks of 8 elements, 4 per thread; thread t copies chunks t, t+128, ...
// (row = 8c / 64, column = 8c % 64). Each chunk copies min(8, columns left)
// elements when inside the tensor, none otherwise (zero fill) from a
// clamped address. The swizzled destination gets the 128B pattern: the
// 16-byte chunk index XOR row % 8.
// CHECK-LABEL: gpu.func @cp_async_swizzled
// CHECK-SAME: (%[[A:.*]]: memref<?x256xbf16>, %[[M:.*]]: index, %[[K:.*]]: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[COLS:.*]] = arith.constant 256 : index
// CHECK: %[[S:.*]] = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, 3>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[ROWS:.*]] = memref.dim %[[A]], %[[C0]]
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C4]] step
// CHECK-NEXT: %[[STEP:.*]] = arith.muli %[[I]], %[[C128]]
// CHECK-NEXT: %[[CHUNK:.*]] = arith.addi %[[TID]], %[[STEP]]
// CHECK-NEXT: %[[E:.*]] = arith.muli %[[CHUNK]], %[[C8]]
// CHECK-NEXT: %[[COL:.*]] = arith.remui %[[E]], %[[C64]]
// CHECK-NEXT: %[[E1:.*]] = arith.divui %[[E]], %[[C64]]
// CHECK-NEXT: %[[ROW:.*]] = arith.remui %[[E1]], %[[C64]]
// CHECK: %[[GROW:.*]] = arith.addi %[[M]], %[[ROW]]
// CHECK: %[[GCOL:.*]] = arith.addi %[[K]], %[[COL]]
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[GROW]], %[[ROWS]]
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[GCOL]], %[[COLS]]
// CHECK: %[[IN:.*]] = arith.andi %[[IN0]], %[[IN1]]
// CHECK: %[[LEFT:.*]] = arith.subi %[[COLS]], %[[GCOL]]
// CHECK: %[[FEW:.*]] = arith.minui %[[LEFT]], %[[C8]]
// CHECK: %[[VALID:.*]] = arith.select %[[IN]], %[[FEW]], %[[C0]]
// CHECK: %[[SROW:.*]] = arith.select %[[IN]], %[[GROW]], %[[C0]]
// CHECK: %[[SCOL:.*]] = arith.select %[[IN]], %[[GCOL]], %[[C0]]
// CHECK: arith.xori
// CHECK: %[[DROW:.*]] = arith.divui %[[OFF:.*]], %[[C64]]
// CHECK: %[[DCOL:.*]] = arith.remui %[[OFF]], %[[C64]]
// CHECK: nvgpu.device_async_copy %[[A]][%[[SROW]], %[[SCOL]]], %[[S]][%[[DROW]], %[[DCOL]]], 8, %[[VALID]] {bypassL1} : memref<?x256xbf16> to memref<64x64xbf16, 3>
// CHECK-NOT: tile.cp_async
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cp_async_swizzled(%A: memref<?x256xbf16>, %m: index, %k: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %s = memref.alloc() {tile.swizzle = 128 : i64} : memref<64x64xbf16, 3>
      tile.cp_async %A[%m, %k], %s : memref<?x256xbf16>, memref<64x64xbf16, 3>
      gpu.return
    }
  }
}

// -----

// 24x64 bf16 is 192 chunks: 2 rounds over 128 threads, the second only for
// chunks < 192. Without swizzle the chunk lands at its own row and column.
// In a 2-D block [64, 2, 1] the thread number is x + 64 y.
// CHECK-LABEL: gpu.func @cp_async_ragged
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C192:.*]] = arith.constant 192 : index
// CHECK-DAG: %[[X:.*]] = gpu.thread_id x
// CHECK-DAG: %[[Y:.*]] = gpu.thread_id y
// CHECK-DAG: %[[Z:.*]] = gpu.thread_id z
// CHECK-DAG: %[[ZY:.*]] = arith.muli %[[Z]], %[[C2]]
// CHECK: %[[YZ:.*]] = arith.addi %[[Y]], %[[ZY]]
// CHECK: %[[OFF:.*]] = arith.muli %[[YZ]], %[[C64]]
// CHECK: %[[T:.*]] = arith.addi %[[X]], %[[OFF]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[C2]]
// CHECK: %[[CHUNK:.*]] = arith.addi %[[T]], %{{.*}}
// CHECK: %[[EXISTS:.*]] = arith.cmpi ult, %[[CHUNK]], %[[C192]]
// CHECK: scf.if %[[EXISTS]] {
// CHECK-NOT: arith.xori
// CHECK: nvgpu.device_async_copy {{.*}}, %{{.*}}[%[[ROW:.*]], %[[COL:.*]]], 8, %{{.*}} {bypassL1} : memref<128x64xbf16> to memref<24x64xbf16, 3>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cp_async_ragged(%A: memref<128x64xbf16>, %m: index) kernel attributes {known_block_size = array<i32: 64, 2, 1>} {
      %c0 = arith.constant 0 : index
      %s = memref.alloc() : memref<24x64xbf16, 3>
      tile.cp_async %A[%m, %c0], %s : memref<128x64xbf16>, memref<24x64xbf16, 3>
      gpu.return
    }
  }
}

// -----

// Inside a role region of 256 threads starting at thread 128, the role's
// threads split the tile: thread tid - 128, stride 256.
// CHECK-LABEL: gpu.func @cp_async_in_role
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: scf.if
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T:.*]] = arith.subi %[[TID]], %[[C128]]
// CHECK: scf.for %[[I:.*]] =
// CHECK: %[[STEP:.*]] = arith.muli %[[I]], %[[C256]]
// CHECK: arith.addi %[[T]], %[[STEP]]
// CHECK: nvgpu.device_async_copy
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @cp_async_in_role(%A: memref<128x64xbf16>, %m: index, %is: i1) kernel attributes {known_block_size = array<i32: 384, 1, 1>} {
      %c0 = arith.constant 0 : index
      %s = memref.alloc() : memref<64x64xbf16, 3>
      scf.if %is {
        tile.cp_async %A[%m, %c0], %s : memref<128x64xbf16>, memref<64x64xbf16, 3>
      } {tile.role = "producer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      gpu.return
    }
  }
}

// -----

// A synchronous cp.async copy: sync (earlier readers are done), every
// thread copies its chunks, commits and waits for them, fences them into
// the async proxy, and the block syncs.
// CHECK-LABEL: gpu.func @copy_with_cp_async
// CHECK: gpu.barrier
// CHECK-NEXT: gpu.thread_id x
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy {{.*}} : memref<128x64xbf16> to memref<64x64xbf16, 3>
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: tile.alloc_barrier
// CHECK-NOT: tile.copy
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @copy_with_cp_async(%A: memref<128x64xbf16>, %m: index) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %s = memref.alloc() : memref<64x64xbf16, 3>
      tile.copy %A[%m, %c0], %s {engine = #tile.engine<cp_async>} : memref<128x64xbf16>, memref<64x64xbf16, 3>
      gpu.return
    }
  }
}

// -----

// Without a known block size the block's threads stride over the chunks:
// thread x + X (y + Y z) takes chunks t, t + X Y Z, ... of the 512.
// CHECK-LABEL: func @cp_async_dynamic_block
// CHECK-DAG: %[[C512:.*]] = arith.constant 512 : index
// CHECK-DAG: %[[DX:.*]] = gpu.block_dim x
// CHECK-DAG: %[[DY:.*]] = gpu.block_dim y
// CHECK-DAG: %[[DZ:.*]] = gpu.block_dim z
// CHECK-DAG: %[[XY:.*]] = arith.muli %[[DX]], %[[DY]]
// CHECK-DAG: %[[P:.*]] = arith.muli %[[XY]], %[[DZ]]
// CHECK: scf.for %[[CHUNK:.*]] = %[[T:.*]] to %[[C512]] step %[[P]]
// CHECK:   arith.muli %[[CHUNK]], %c8
// CHECK:   nvgpu.device_async_copy
func.func @cp_async_dynamic_block(%A: memref<128x64xbf16>, %s: memref<64x64xbf16, 3>, %m: index) {
  %c0 = arith.constant 0 : index
  tile.cp_async %A[%m, %c0], %s : memref<128x64xbf16>, memref<64x64xbf16, 3>
  return
}
