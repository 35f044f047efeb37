// math.fma lowers to a libdevice call, which SinkAttn refuses (see
// test/Pipelines/gpu-to-ptx-libdevice.mlir).
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
