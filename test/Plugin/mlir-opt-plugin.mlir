// libSinkAttnPlugin.so in Debian's stock mlir-opt-22: the tile dialect and
// the named pipelines run on a pipelined, warp-specialized TMA + wgmma GEMM,
// and give what sinkattn-opt gives, to the byte, at the nvgpu/nvvm level and
// in PTX. The dialect plugin alone brings the passes too. Passes a plugin
// registers are named in --pass-pipeline: mlir-opt-22 makes its --<pass>
// flags before it loads plugins.
// REQUIRES: mlir-opt-plugins
// RUN: rm -rf %t && mkdir -p %t/opt %t/plugin
// RUN: mlir-opt-22 --load-dialect-plugin=%sinkattn_plugin --load-pass-plugin=%sinkattn_plugin %s --pass-pipeline="builtin.module(sinkattn-tile-to-nvgpu)" -o %t/plugin.mlir
// RUN: FileCheck %s --input-file=%t/plugin.mlir
// RUN: FileCheck %s --check-prefix=NOTILE --input-file=%t/plugin.mlir
// RUN: sinkattn-opt %s --sinkattn-tile-to-nvgpu -o %t/opt.mlir
// RUN: diff %t/opt.mlir %t/plugin.mlir
// RUN: mlir-opt-22 --load-dialect-plugin=%sinkattn_plugin %s --pass-pipeline="builtin.module(sinkattn-tile-to-ptx{bare-pointers=true},sinkattn-write-ptx{output-dir=%t/plugin})" -o /dev/null
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t/plugin/m.ptx
// RUN: sinkattn-opt %s --sinkattn-tile-to-ptx=bare-pointers=true --sinkattn-write-ptx=output-dir=%t/opt -o /dev/null
// RUN: diff %t/opt/m.ptx %t/plugin/m.ptx
//
// Errors come back as diagnostics and a failing exit status: a pass's
// (too much shared memory), and a pipeline option the plugin's parser
// refuses.
// RUN: not mlir-opt-22 --load-pass-plugin=%sinkattn_plugin --load-dialect-plugin=%sinkattn_plugin %S/../CAPI/Inputs/shared-memory.mlir --pass-pipeline="builtin.module(sinkattn-tile-to-nvgpu)" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not mlir-opt-22 --load-dialect-plugin=%sinkattn_plugin %s --pass-pipeline="builtin.module(sinkattn-tile-to-ptx{opt-level=x})" 2>&1 | FileCheck %s --check-prefix=OPTION
// Without the plugin, mlir-opt-22 knows neither the dialect nor the passes.
// RUN: not mlir-opt-22 %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// RUN: not mlir-opt-22 --load-dialect-plugin=%sinkattn_plugin %s --sinkattn-tile-to-nvgpu 2>&1 | FileCheck %s --check-prefix=FLAG

// CHECK: gpu.func @gemm(
// CHECK-SAME: known_block_size = array<i32: 384, 1, 1>
// CHECK: nvgpu.mbarrier.create
// CHECK: nvvm.setmaxregister  decrease 24
// CHECK: nvgpu.tma.async.load
// CHECK: nvvm.setmaxregister  increase 240
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// NOTILE-NOT: {{tile\.(copy|gemm|fill|store|warpgroup_id|alloc_barrier)}}

// PTX: .target sm_90a
// PTX: .entry gemm(
// PTX: setmaxnreg.dec.sync.aligned.u32 24;
// PTX: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16

// SMEM: error: 'gpu.func' op kernel needs more than 262144 bytes of shared memory
// OPTION: for the --opt-level option: 'x' value invalid for integer argument!
// OPTION: error: failed to add `sinkattn-tile-to-ptx` with options `opt-level=x`
// NOPLUGIN: error: `!"tile"<"fragment<64x256xf32>">` type created with unregistered dialect
// FLAG: Unknown command line argument '--sinkattn-tile-to-nvgpu'

// A 128x256 tile of D = A·B per block, K in steps of 64 through 3 stages;
// each of the two consumer warpgroups multiplies its 64 rows of A.
!sA = memref<128x64xbf16, #gpu.address_space<workgroup>>
!sB = memref<64x256xbf16, #gpu.address_space<workgroup>>
!acc = !tile.fragment<64x256xf32>
module attributes {gpu.container_module} {
  gpu.module @m {
    gpu.func @gemm(%A: memref<256x512xbf16>, %B: memref<512x256xbf16>, %D: memref<256x256xf32>) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %by = gpu.block_id y
      %row0 = arith.muli %by, %c128 : index
      %wg = tile.warpgroup_id : index
      %wgRow = arith.muli %wg, %c64 : index
      %sA = memref.alloc() : !sA
      %sB = memref.alloc() : !sB
      %init = tile.fill %zero : !acc
      %res = scf.for %kt = %c0 to %c8 step %c1 iter_args(%acc = %init) -> (!acc) {
        %k0 = arith.muli %kt, %c64 : index
        tile.copy %A[%row0, %k0], %sA : memref<256x512xbf16>, !sA
        tile.copy %B[%k0, %c0], %sB : memref<512x256xbf16>, !sB
        %sAw = memref.subview %sA[%wgRow, 0] [64, 64] [1, 1] : !sA to memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
        %next = tile.gemm %sAw, %sB, %acc : memref<64x64xbf16, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !sB, !acc
        scf.yield %next : !acc
      } {tile.num_stages = 3}
      %outRow = arith.addi %row0, %wgRow : index
      tile.store %res, %D[%outRow, %c0] : !acc, memref<256x256xf32>
      gpu.return
    }
  }
}
