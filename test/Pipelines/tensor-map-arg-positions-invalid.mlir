// RUN: sinkattn-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(gpu.module(sinkattn-tensor-map-arg-positions))'

gpu.module @kernels {
  // expected-error @+1 {{tensor map argument 2 does not exist (2 arguments)}}
  gpu.func @out_of_range(%a: memref<?xf32>, %map: !llvm.ptr) kernel attributes {sinkattn.tensor_map_args = array<i64: 2>} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{tensor map argument 0 must be !llvm.ptr, got 'memref<?xf32>'}}
  gpu.func @not_a_pointer(%a: memref<?xf32>) kernel attributes {sinkattn.tensor_map_args = array<i64: 0>} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'sinkattn.tensor_map_args' is only valid on kernels}}
  gpu.func @device_function(%map: !llvm.ptr) attributes {sinkattn.tensor_map_args = array<i64: 0>} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{'sinkattn.tensor_map_args' must be a DenseI64ArrayAttr}}
  gpu.func @wrong_type(%map: !llvm.ptr) kernel attributes {sinkattn.tensor_map_args = [0]} {
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{argument 0 is an unranked memref, whose lowered width is not known here; a tensor-map argument follows it}}
  gpu.func @unranked(%a: memref<*xf32>, %map: !llvm.ptr) kernel attributes {sinkattn.tensor_map_args = array<i64: 1>} {
    gpu.return
  }
}
