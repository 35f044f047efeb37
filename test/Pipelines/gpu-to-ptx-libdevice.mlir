// A math op that upstream lowers to a libdevice call (math.fma outside a
// tile.map) is a diagnostic and a non-zero exit in every environment, with
// or without CUDA_HOME (which would make gpu-module-to-binary link
// libdevice): the PTX may not depend on it.
// RUN: not sinkattn-opt %s --sinkattn-gpu-to-ptx -o /dev/null 2>&1 | FileCheck %s
// RUN: env CUDA_HOME=/usr/local/cuda not sinkattn-opt %s --sinkattn-gpu-to-ptx -o /dev/null 2>&1 | FileCheck %s
// RUN: env -u CUDA_HOME -u CUDA_ROOT -u CUDA_PATH not sinkattn-opt %s --sinkattn-gpu-to-ptx -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: 'k' calls libdevice function '__nv_fmaf', but SinkAttn links no libdevice
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%out: memref<1xf32>, %x: f32) kernel {
      %c0 = arith.constant 0 : index
      %r = math.fma %x, %x, %x : f32
      memref.store %r, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }
}
