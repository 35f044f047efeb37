// The wgmma GEMM example compiles to PTX with TMA loads and wgmma, and
// ptxas accepts it for sm_90a.
// RUN: rm -rf %t && mkdir -p %t
// RUN: sinkattn-opt %sinkattn_src_root/examples/wgmma_gemm.mlir \
// RUN:   --sinkattn-gpu-to-ptx="chip=sm_90a features=+ptx80 opt-level=3" \
// RUN:   --sinkattn-write-ptx=output-dir=%t -o /dev/null
// RUN: FileCheck %s --input-file=%t/wgmma_gemm.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/wgmma_gemm.ptx -o %t/wgmma_gemm.cubin %}

// CHECK: .target sm_90a
// CHECK: .entry wgmma_gemm(
// The NVPTX backend rotates the K loop, so the order of loads and MMAs is
// not fixed.
// CHECK-DAG: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-DAG: wgmma.fence.sync.aligned
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-DAG: wgmma.commit_group.sync.aligned
// CHECK-DAG: wgmma.wait_group.sync.aligned 0
