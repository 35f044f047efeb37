// RUN: sinkattn-opt %s --pass-pipeline='builtin.module(gpu.module(sinkattn-tensor-maps-by-value))' | FileCheck %s

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // CHECK-LABEL: llvm.func @two_maps
    // CHECK-SAME: (%{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    // CHECK-SAME: %{{.*}}: !llvm.ptr,
    // CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant})
    // CHECK-SAME: attributes {nvvm.kernel}
    // CHECK-NOT: sinkattn.tensor_map_args
    llvm.func @two_maps(%a: !llvm.ptr, %out: !llvm.ptr, %b: !llvm.ptr)
        attributes {nvvm.kernel, sinkattn.tensor_map_args = array<i64: 0, 2>} {
      llvm.return
    }

    // Kernels without the attribute are left alone.
    // CHECK-LABEL: llvm.func @untouched
    // CHECK-SAME: (%{{.*}}: !llvm.ptr) attributes {nvvm.kernel}
    llvm.func @untouched(%a: !llvm.ptr) attributes {nvvm.kernel} {
      llvm.return
    }
  }
}
