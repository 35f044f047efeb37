// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(convert-tile-to-nvgpu))' | FileCheck %s

// tile.cp_async_arrive becomes cp.async.mbarrier.arrive.noinc on the
// slot's shared-memory address (the arrival counts toward the slot's
// arrive count).
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: gpu.func @arrive
    // CHECK: %[[GROUP:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
    // CHECK: %[[ADDR:.*]] = nvgpu.mbarrier.get %[[GROUP]][%{{.*}}] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2> -> i32
    // CHECK: %[[PTR:.*]] = llvm.inttoptr %[[ADDR]] : i32 to !llvm.ptr<3>
    // CHECK: nvvm.cp.async.mbarrier.arrive %[[PTR]] {noinc = true} : !llvm.ptr<3>
    // CHECK-NOT: tile.
    gpu.func @arrive(%slot: index) kernel {
      %bars = tile.alloc_barrier [128, 128] : !tile.barriers<2>
      tile.cp_async_arrive %bars[%slot] : !tile.barriers<2>
      gpu.return
    }
  }
}
