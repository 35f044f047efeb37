// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(sinkattn-tensor-maps-by-value))'

gpu.module @kernels {
  // expected-error @+1 {{tensor map argument 1 does not exist (1 arguments)}}
  llvm.func @out_of_range(%a: !llvm.ptr) attributes {nvvm.kernel, sinkattn.tensor_map_args = array<i64: 1>} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{tensor map argument 0 must be !llvm.ptr, got 'i64'}}
  llvm.func @not_a_pointer(%a: i64) attributes {nvvm.kernel, sinkattn.tensor_map_args = array<i64: 0>} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'sinkattn.tensor_map_args' is only valid on kernels}}
  llvm.func @device_function(%a: !llvm.ptr) attributes {sinkattn.tensor_map_args = array<i64: 0>} {
    llvm.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'sinkattn.tensor_map_args' must be a DenseI64ArrayAttr}}
  llvm.func @wrong_kind(%a: !llvm.ptr) attributes {nvvm.kernel, sinkattn.tensor_map_args = [0]} {
    llvm.return
  }
}
