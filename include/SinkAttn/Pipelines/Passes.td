//===- Passes.td - Passes of the SinkAttn pipelines --------*- tablegen -*-===//

#ifndef SINKATTN_PIPELINES_PASSES_TD
#define SINKATTN_PIPELINES_PASSES_TD

include "mlir/Pass/PassBase.td"

def WritePTXPass : Pass<"sinkattn-write-ptx", "::mlir::ModuleOp"> {
  let summary = "Write the PTX held by gpu.binary ops to files";
  let description = [{
    After `sinkattn-gpu-to-ptx` (or any pipeline that ends in
    `gpu-module-to-binary{format=isa}`), each `gpu.binary` holds its kernel as
    PTX text inside a `#gpu.object`. This pass writes every such object to
    `<output-dir>/<binary name>.ptx` (or `<binary name>.<i>.ptx` when a binary
    has several objects) and leaves the IR unchanged, so PTX can be produced
    straight from `sinkattn-opt`:

    ```
    sinkattn-opt kernel.mlir --sinkattn-gpu-to-ptx \
        --sinkattn-write-ptx=output-dir=out -o /dev/null
    ```

    It fails with a diagnostic on a binary whose object is not PTX assembly
    (for example a cubin), and when a file cannot be written.
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\".\"",
           "Directory the .ptx files are written to (created if missing)">
  ];
}

def TensorMapsByValuePass
    : Pass<"sinkattn-tensor-maps-by-value", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Pass TMA tensor maps to kernels by value, as grid constants";
  let description = [{
    A TMA load reads its 128-byte `CUtensorMap` through a generic address.
    Passing the map by value in the kernel's parameter space (a
    `__grid_constant__` parameter in CUDA C++) avoids a device allocation and
    a copy per launch. A tensor-map typed argument does not legalize in a
    `gpu.func` signature, so kernels take the map as `!llvm.ptr` and list
    those argument positions in the function attribute
    `sinkattn.tensor_map_args = array<i64: ...>`.

    This pass runs after `convert-gpu-to-nvvm` (which keeps function
    attributes but drops argument attributes). On each `llvm.func` kernel
    that carries the attribute it marks the listed `!llvm.ptr` arguments
    `llvm.byval = !llvm.array<128 x i8>`, `llvm.align = 64` and
    `nvvm.grid_constant`, and removes the attribute. The NVPTX backend then
    emits a `.param .align 64 .b8 [128]` parameter and takes its generic
    address with `cvta.param`.

    Argument positions are those of the lowered function:
    `sinkattn-tensor-map-arg-positions` renumbers a `gpu.func`'s positions
    for the calling convention it is lowered with.

    ```mlir
    // Before (inside a gpu.module):
    llvm.func @k(%map: !llvm.ptr, %out: !llvm.ptr)
        attributes {nvvm.kernel, sinkattn.tensor_map_args = array<i64: 0>}
    // After:
    llvm.func @k(%map: !llvm.ptr {llvm.align = 64 : i64,
                                  llvm.byval = !llvm.array<128 x i8>,
                                  nvvm.grid_constant},
                 %out: !llvm.ptr) attributes {nvvm.kernel}
    ```

    An index outside the argument list, an argument that is not a pointer,
    or the attribute on a function that is not a kernel is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def TensorMapArgPositionsPass
    : Pass<"sinkattn-tensor-map-arg-positions", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Renumber tensor-map arguments for the kernel's LLVM signature";
  let description = [{
    `sinkattn.tensor_map_args` lists the positions of a kernel's tensor-map
    arguments in its `gpu.func` signature (`convert-tile-to-nvgpu` writes
    them there). `convert-gpu-to-nvvm` then expands every memref argument
    into the fields of its descriptor (allocated and aligned pointers,
    offset, one size and one stride per dimension: 3 + 2 * rank arguments)
    unless the kernel is lowered with the bare-pointer calling convention
    (one pointer per memref, which needs static shapes). A kernel whose
    tensors have run-time sizes or strides takes descriptors, so positions
    after a memref argument move.

    This pass runs on each `gpu.module` before `convert-gpu-to-nvvm` and
    rewrites each kernel's `sinkattn.tensor_map_args` to the positions the
    arguments will have in the lowered `llvm.func`, for the calling
    convention the option names (it must match the one
    `convert-gpu-to-nvvm` uses); `sinkattn-tensor-maps-by-value` marks
    them there.

    ```mlir
    // Before: the map is argument 1 of the gpu.func.
    gpu.func @k(%a: memref<?x64xbf16>, %map: !llvm.ptr) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 1>}
    // After (bare-pointers=false): the memref takes 3 + 2 * 2 = 7 arguments.
    gpu.func @k(%a: memref<?x64xbf16>, %map: !llvm.ptr) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 7>}
    ```

    A position outside the argument list, an argument that is not
    `!llvm.ptr`, an unranked memref before a map, or the attribute on a
    function that is not a kernel is an error.
  }];
  let options = [
    Option<"barePointers", "bare-pointers", "bool", /*default=*/"false",
           "The kernel is lowered with the bare-pointer calling convention "
           "(one argument per memref)">
  ];
}

def RejectLibdeviceCallsPass
    : Pass<"sinkattn-reject-libdevice-calls", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Reject kernels that call libdevice functions";
  let description = [{
    Upstream's `convert-gpu-to-nvvm` lowers some `math` ops (`math.fma`,
    `math.exp`, `math.log`, ...) to calls of libdevice functions (`__nv_*`).
    SinkAttn links no libdevice: `gpu-module-to-binary` would link it only
    when a CUDA toolkit is found through `CUDA_ROOT`, `CUDA_HOME` or
    `CUDA_PATH`, so the same kernel would compile to self-contained PTX in
    one environment and to PTX with an unresolved call, which ptxas and the
    JIT reject, in another. This pass runs after `convert-gpu-to-nvvm` and
    makes the result the same everywhere: a call of an external `__nv_*`
    function is an error naming the function and its caller. The tile
    dialect's fragment lowering emits `fma.rn`, `ex2.approx` and `lg2.approx`
    for `math.fma`, `math.exp2` and `math.log2` inside `tile.map`; outside
    it, write `arith.mulf`/`arith.addf` with `fastmath<contract>` or an NVVM
    intrinsic.

    Modules without such calls are left unchanged.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // SINKATTN_PIPELINES_PASSES_TD
