// The named pipeline takes a tile IR kernel (a 2-stage loop streaming tiles
// through tile.tma_copy with a user barrier) to PTX: per-stage barriers and
// buffers, fused arrive.expect_tx, parity waits, tensor maps by value.
// RUN: rm -rf %t && mkdir -p %t
// RUN: sinkattn-opt %s --sinkattn-tile-to-nvgpu | FileCheck %s --check-prefix=NVGPU
// RUN: sinkattn-opt %s --sinkattn-tile-to-ptx=bare-pointers=true --sinkattn-write-ptx=output-dir=%t -o /dev/null
// RUN: FileCheck %s --input-file=%t/stream.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/stream.ptx -o %t/stream.cubin %}

// NVGPU: gpu.func @stream({{.*}}, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) kernel attributes {sinkattn.dynamic_shared_memory_bytes = 33792 : i64
// NVGPU: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// NVGPU: nvgpu.mbarrier.arrive.expect_tx
// NVGPU: nvgpu.mbarrier.try_wait.parity
// NVGPU-NOT: tile.mbarrier
// NVGPU-NOT: tile.tma

// CHECK: .extern .shared .align 16 .b8 __sinkattn_dynamic_shared[];
// CHECK: .entry stream(
// CHECK: .param .align 64 .b8 stream_param_3[128],
// CHECK-NEXT: .param .align 64 .b8 stream_param_4[128]
// CHECK: .shared .align 8 .b8 __mbarrier[16];
// CHECK: mbarrier.init.shared.b64
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: mbarrier.try_wait.parity.shared.b64
module attributes {gpu.container_module} {
  gpu.module @stream {
    gpu.func @stream(%A: memref<1024x256xbf16>, %B: memref<1024x256xbf16>, %out: memref<1024x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %m = arith.muli %bid, %c64 : index
      %sA = memref.alloc() {alignment = 1024} : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %sB = memref.alloc() {alignment = 1024} : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %bar = tile.alloc_barrier [1] : !tile.barriers<1>
      %leader = arith.cmpi eq, %tid, %c0 : index
      %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %c0) -> (index) {
        %col = arith.muli %k, %c64 : index
        tile.tma_copy %A[%m, %col], %sA, barrier(%bar[%c0]) : memref<1024x256xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
        tile.tma_copy %B[%m, %col], %sB, barrier(%bar[%c0]) : memref<1024x256xbf16>, memref<64x64xbf16, #gpu.address_space<workgroup>>, !tile.barriers<1>
        scf.if %leader {
          tile.mbarrier_arrive %bar[%c0] : !tile.barriers<1>
        }
        tile.mbarrier_wait_parity %bar[%c0], %c0 : !tile.barriers<1>
        %a = memref.load %sA[%tid, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>
        %b = memref.load %sB[%tid, %c0] : memref<64x64xbf16, #gpu.address_space<workgroup>>
        %af = arith.extf %a : bf16 to f32
        %bf = arith.extf %b : bf16 to f32
        %s = arith.addf %af, %bf : f32
        memref.store %s, %out[%m, %tid] : memref<1024x64xf32>
        gpu.barrier
        scf.yield %acc : index
      } {tile.num_stages = 2}
      gpu.return
    }
  }
}
