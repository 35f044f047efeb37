// A kernel the NVVM lowering cannot handle is a diagnostic and a non-zero
// exit: a tensor-map typed kernel argument does not legalize in a gpu.func
// signature (pass a pointer to the CUtensorMap instead).
// RUN: not sinkattn-opt %s --sinkattn-gpu-to-ptx -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: failed to legalize operation 'gpu.func'
!tmap = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, 3>, swizzle = none, l2promo = none, oob = zero, interleave = none>
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%desc: !tmap) kernel {
      gpu.return
    }
  }
}
