// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(sinkattn-reject-libdevice-calls))'

gpu.module @kernels {
  llvm.func @__nv_fmaf(f32, f32, f32) -> f32
  llvm.func @k(%x: f32) -> f32 attributes {nvvm.kernel} {
    // expected-error @+1 {{'k' calls libdevice function '__nv_fmaf', but SinkAttn links no libdevice (ptxas and the JIT would reject the unresolved call): lower the op inside a tile.map, or use arith ops with fastmath<contract> or an NVVM intrinsic}}
    %r = llvm.call @__nv_fmaf(%x, %x, %x) : (f32, f32, f32) -> f32
    llvm.return %r : f32
  }
}

// -----

// Every call is reported, in any function of the module.
gpu.module @kernels {
  llvm.func @__nv_expf(f32) -> f32
  llvm.func @device(%x: f32) -> f32 {
    // expected-error @+1 {{'device' calls libdevice function '__nv_expf'}}
    %r = llvm.call @__nv_expf(%x) : (f32) -> f32
    llvm.return %r : f32
  }
  llvm.func @k(%x: f32) -> f32 attributes {nvvm.kernel} {
    // expected-error @+1 {{'k' calls libdevice function '__nv_expf'}}
    %r = llvm.call @__nv_expf(%x) : (f32) -> f32
    llvm.return %r : f32
  }
}
