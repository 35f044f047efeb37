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

#endif // SINKATTN_PIPELINES_PASSES_TD
