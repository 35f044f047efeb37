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
      `sinkattn.dynamic_shared_memory_bytes`. A kernel whose window and
      mbarriers (static shared memory, 8 bytes a slot) together exceed the
      232448 bytes a block may use on sm_90 (227 KiB, the opt-in limit of
      H100 and H200) is refused here, at compile time, with both sizes:
      "kernel needs N bytes of shared memory, the GPU allows at most
      232448".
    * **Tensor maps.** Each distinct (global memref argument, box shape) that
      a `tile.tma_load` or `tile.tma_store` uses gets a new `!llvm.ptr`
      kernel argument, appended in order of first use, passed by value as a
      grid constant (listed in `sinkattn.tensor_map_args` for
      `sinkattn-tensor-maps-by-value`) and described for the host in
      `sinkattn.tensor_maps`, an array of dictionaries `{source = <argument>,
      box = array<i64: ...>, shape = array<i64: ...>}` (box and the global
      memref's shape outermost first; `swizzle = 128` when swizzled; zero
      fill out of bounds). The shape is the kernel's view of the buffer: a
      `[B, S, H * D]` argument may be passed a `[B, S, H, D]` buffer.
      A global memref with a `strided<...>` layout adds `strides =
      array<i64: ...>` (elements, outermost first). Sizes and strides known
      only at run time are `ShapedType::kDynamic` in both, as in the memref
      type: the host encodes such maps from the tensor it launches with.
      The global operand must be a kernel argument with the identity or a
      strided layout.
    * **Barriers and TMA.** `!tile.barriers<N>` becomes
      `!nvgpu.mbarrier.group<..., num_barriers = N>`; `alloc_barrier`,
      `mbarrier_init`, `mbarrier_arrive` (count 1 through nvgpu, larger
      counts through `nvvm.mbarrier.arrive`), `mbarrier_expect_tx`,
      `mbarrier_arrive_expect_tx`, `mbarrier_wait_parity`, `tma_load` and
      `tma_store` become their nvgpu/nvvm counterparts (TMA coordinates are
      reversed: innermost first).
    * **Threads.** `tile.warpgroup_id` becomes `(thread_id.x - base) /
      128`, `base` the first thread of the enclosing role region of
      `tile-warp-specialize` (0 outside one), read from lane 0 by
      `gpu.shuffle idx` so that ptxas sees one value per warp.

    `tile.copy` and `tile.tma_copy` must have been lowered
    (`tile-lower-copies`); any tile op left is an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::NVVM::NVVMDialect"
  ];
}

def ConvertTileFragmentsToNVVM : Pass<"convert-tile-fragments-to-nvvm"> {
  let summary = "Lower register fragments to per-thread registers, tile.gemm to wgmma";
  let description = [{
    Every `!tile.fragment` (which must carry a `#tile.layout`; see
    `tile-assign-layouts`) becomes the `vector<R x T>` of the R elements one
    thread holds, in the register order of its layout, and the fragment ops
    are expanded per register:

    * `tile.fill` → `vector.broadcast`;
    * `tile.map` → its body cloned once per register, with the element's
      row/column computed from the thread id (so masks work) and row vectors
      broadcast by row; `math.exp2`/`math.log2` on `f32` become
      `ex2.approx.ftz`/`lg2.approx.ftz` (write `exp2(x·c − m)` as
      `math.fma` to get the scale folded into one FMA);
    * `tile.reduce` along rows → a tree over the thread's registers of each
      row, then two butterfly shuffles (`shfl.sync.bfly` 1 and 2) across the
      quad that shares the row;
    * `tile.cast` → `arith.truncf`/`arith.extf` on the register vector
      (accumulator → A operand keeps every element in place);
    * `tile.store` → `memref.store` per register, skipping elements outside
      a global tensor, one thread per quad for row vectors; into a swizzled
      shared tile (16- or 32-bit elements) one vector store per pair of
      adjacent columns at its 128-byte-swizzled position, addressed from one
      XOR-ed base per 16-byte chunk of a panel per thread plus a constant
      per register (so no per-register address is hoisted out of a loop);
      32-bit elements (8-byte pairs, served half a warp at a time) with odd
      rows storing the panel's other half first (a select per register),
      which keeps the half-warp's four rows on distinct banks;
      stores to shared memory end
      with `fence.proxy.async.shared::cta` so TMA or wgmma may read them
      (after the kernel's block sync);
    * `tile.gemm` → `wgmma.fence`, one `wgmma.mma_async.m64nNk16` per 64-row
      block and k-step as inline PTX (SS: descriptors of the 128-byte
      swizzled operands; RS: four packed 32-bit A registers per step, which
      no MLIR op expresses), `commit_group`, `wait_group 0`, and an empty asm
      per accumulator register so no use moves above the wait; an `async`
      gemm stops after `commit_group`, and `tile.gemm_wait` does
      `wait_group pending` plus the register fences.

    `scf.for`/`scf.if` carrying fragments are converted structurally.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::memref::MemRefDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

#endif // SINKATTN_CONVERSION_PASSES_TD
