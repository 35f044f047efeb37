// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))' | FileCheck %s

// tile.warpgroup_id: thread_id.x / 128 in the role's numbering (less the
// role's first thread), read from lane 0 by a shuffle so that ptxas sees
// one value per warp; outside a role, the block's numbering.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @in_role
    // CHECK:      %[[TID:.*]] = gpu.thread_id x
    // CHECK-NEXT: %[[BASE:.*]] = arith.constant 128 : index
    // CHECK-NEXT: %[[LOCAL:.*]] = arith.subi %[[TID]], %[[BASE]] : index
    // CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
    // CHECK-NEXT: %[[WG:.*]] = arith.divui %[[LOCAL]], %[[C128]] : index
    // CHECK-NEXT: %[[WG32:.*]] = arith.index_castui %[[WG]] : index to i32
    // CHECK-DAG:  %[[LANE0:.*]] = arith.constant 0 : i32
    // CHECK-DAG:  %[[WIDTH:.*]] = arith.constant 32 : i32
    // CHECK-NEXT: %[[UNIFORM:.*]], %{{.*}} = gpu.shuffle idx %[[WG32]], %[[LANE0]], %[[WIDTH]] : i32
    // CHECK-NEXT: %[[RESULT:.*]] = arith.index_castui %[[UNIFORM]] : i32 to index
    // CHECK-NEXT: memref.store %[[RESULT]]
    // CHECK-NOT: tile.warpgroup_id
    gpu.func @in_role(%out: memref<384xindex>, %is: i1) kernel {
      %c0 = arith.constant 0 : index
      scf.if %is {
        %wg = tile.warpgroup_id : index
        memref.store %wg, %out[%c0] : memref<384xindex>
      } {tile.role = "consumer", tile.thread_base = 128 : i64, tile.thread_count = 256 : i64}
      gpu.return
    }
    // CHECK-LABEL: gpu.func @whole_block
    // CHECK:      %[[TID:.*]] = gpu.thread_id x
    // CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : index
    // CHECK-NEXT: %[[WG:.*]] = arith.divui %[[TID]], %[[C128]] : index
    // CHECK:      gpu.shuffle idx
    gpu.func @whole_block(%out: memref<256xindex>) kernel {
      %c0 = arith.constant 0 : index
      %wg = tile.warpgroup_id : index
      memref.store %wg, %out[%c0] : memref<256xindex>
      gpu.return
    }
  }
}
