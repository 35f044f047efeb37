// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(sinkattn-tensor-map-arg-positions))' | FileCheck %s
// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(sinkattn-tensor-map-arg-positions{bare-pointers=true}))' | FileCheck %s --check-prefix=BARE

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // Descriptors: the rank-2 memref takes 7 arguments, the rank-3 one 9,
    // the index 1; the maps follow at 17 and 18.
    // CHECK-LABEL: gpu.func @run_time_shapes
    // CHECK-SAME: sinkattn.tensor_map_args = array<i64: 17, 18>
    // One argument per memref with bare pointers: positions unchanged.
    // BARE-LABEL: gpu.func @run_time_shapes
    // BARE-SAME: sinkattn.tensor_map_args = array<i64: 3, 4>
    gpu.func @run_time_shapes(%a: memref<?x64xbf16>, %o: memref<?x?x64xbf16, strided<[?, ?, 1]>>,
                              %n: index, %map_a: !llvm.ptr, %map_o: !llvm.ptr) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 3, 4>} {
      gpu.return
    }

    // A map before the memrefs keeps its position.
    // CHECK-LABEL: gpu.func @map_first
    // CHECK-SAME: sinkattn.tensor_map_args = array<i64: 0, 6>
    gpu.func @map_first(%map_a: !llvm.ptr, %a: memref<128xf32>, %map_b: !llvm.ptr) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 0, 2>} {
      gpu.return
    }

    // Kernels without the attribute are left alone.
    // CHECK-LABEL: gpu.func @untouched
    // CHECK-NOT: sinkattn.tensor_map_args
    gpu.func @untouched(%a: memref<?xf32>) kernel {
      gpu.return
    }

    // An unranked memref after the last map does not matter.
    // CHECK-LABEL: gpu.func @unranked_last
    // CHECK-SAME: sinkattn.tensor_map_args = array<i64: 0>
    gpu.func @unranked_last(%map: !llvm.ptr, %a: memref<*xf32>) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 0>} {
      gpu.return
    }
  }
}
