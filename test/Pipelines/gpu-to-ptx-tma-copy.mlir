// The TMA copy example compiles to PTX for sm_90a with a bulk tensor load
// that completes on an mbarrier, and ptxas accepts it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: sinkattn-opt %sinkattn_src_root/examples/tma_copy.mlir --sinkattn-gpu-to-ptx \
// RUN:   | FileCheck %s --check-prefix=IR
// RUN: sinkattn-opt %sinkattn_src_root/examples/tma_copy.mlir --sinkattn-gpu-to-ptx \
// RUN:   --sinkattn-write-ptx=output-dir=%t -o /dev/null
// RUN: FileCheck %s --input-file=%t/tma_copy.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t/tma_copy.ptx -o %t/tma_copy.cubin %}

// IR: gpu.binary @tma_copy [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, {{.*}}assembly = "{{.*}}.target sm_90a

// CHECK: .version 8.0
// CHECK: .target sm_90a
// The tensor map is a 128-byte grid-constant parameter, addressed generically.
// CHECK: .entry tma_copy(
// CHECK-NEXT: .param .align 64 .b8 tma_copy_param_0[128]
// CHECK: cvta.param.u64 %[[MAP:rd[0-9]+]], %{{rd[0-9]+}};
// CHECK: mbarrier.init.shared.b64
// CHECK: fence.mbarrier_init.release.cluster
// CHECK: mbarrier.arrive.expect_tx.shared.b64
// CHECK: cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%{{rd[0-9]+}}], [%[[MAP]],
// CHECK: mbarrier.try_wait.parity.shared.b64
