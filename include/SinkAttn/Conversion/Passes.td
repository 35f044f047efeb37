//===- Passes.td - Conversions out of the tile dialect -----*- tablegen -*-===//

#ifndef SINKATTN_CONVERSION_PASSES_TD
#define SINKATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTileToNVGPU : Pass<"convert-tile-to-nvgpu", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower tile barriers, TMA and shared allocations to nvgpu/nvvm";
  let description = [{
    For every kernel (`gpu.func ... kernel`) of the module:

    * **Shared memory.** Each `memref.alloc` in shared memory becomes a view
      of the kernel's dynamic shared memory at an offset aligned to the
      allocation's `alignment` (at least 16 bytes), relative to a base
      rounded up to 1024 bytes (TMA's 128-byte swizzle needs 1024-byte
      aligned tiles) at run time. The window is a public zero-sized
      `memref.global` (`__sinkattn_dynamic_shared`, emitted as
      `.extern .shared .align 16`: declaring 1024 would let LLVM fold the
      run-time rounding away although the driver does not place the window
      that way);
      upstream's `gpu.dynamic_shared_memory` is not used because its internal
      global is demoted to a 1-byte static variable whose neighbours (the
      mbarriers) offsets from it can overwrite. The bytes to launch with
      (1024 of slack included) are recorded as
      `sinkattn.dynamic_shared_memory_bytes`.
    * **Tensor maps.** Each distinct (global memref argument, box shape) that
      a `tile.tma_load` or `tile.tma_store` uses gets a new `!llvm.ptr`
      kernel argument, appended in order of first use, passed by value as a
      grid constant (listed in `sinkattn.tensor_map_args` for
      `sinkattn-tensor-maps-by-value`) and described for the host in
      `sinkattn.tensor_maps`, an array of dictionaries `{source = <argument>,
      box = array<i64: ...>}`
      (box outermost first; dense, no swizzle, zero fill out of bounds).
      The global operand must be a kernel argument.
    * **Barriers and TMA.** `!tile.barriers<N>` becomes
      `!nvgpu.mbarrier.group<..., num_barriers = N>`; `alloc_barrier`,
      `mbarrier_init`, `mbarrier_arrive` (count 1 through nvgpu, larger
      counts through `nvvm.mbarrier.arrive`), `mbarrier_expect_tx`,
      `mbarrier_arrive_expect_tx`, `mbarrier_wait_parity`, `tma_load` and
      `tma_store` become their nvgpu/nvvm counterparts (TMA coordinates are
      reversed: innermost first).

    `tile.copy` and `tile.tma_copy` must have been lowered
    (`tile-lower-copies`); any tile op left is an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

#endif // SINKATTN_CONVERSION_PASSES_TD
