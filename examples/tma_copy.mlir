// A TMA tile copy written with upstream nvgpu ops: each block of 128 threads
// loads one 64x64 bf16 tile of `in` into shared memory with a TMA load that
// completes on an mbarrier, then writes it to `out` with plain stores.
//
// Kernel ABI: (the 128-byte CUtensorMap of `in`, by value as a grid
// constant; the memref descriptor of `out`). Grid: (N/64, M/64), 128
// threads. Compile: sinkattn-opt tma_copy.mlir --sinkattn-gpu-to-ptx \
//   --sinkattn-write-ptx=output-dir=out -o /dev/null
!barriers = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
!tmap = !nvgpu.tensormap.descriptor<tensor = memref<64x64xbf16, #gpu.address_space<workgroup>>, swizzle = none, l2promo = none, oob = zero, interleave = none>
module attributes {gpu.container_module} {
  gpu.module @tma_copy {
    memref.global "private" @tile : memref<64x64xbf16, #gpu.address_space<workgroup>> {alignment = 128 : i64}
    gpu.func @tma_copy(%descPtr: !llvm.ptr, %out: memref<?x?xbf16>) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 0>} {
      %desc = builtin.unrealized_conversion_cast %descPtr : !llvm.ptr to !tmap
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %bytes = arith.constant 8192 : index
      %false = arith.constant false
      %ticks = arith.constant 10000000 : index
      %tid = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %row0 = arith.muli %by, %c64 : index
      %col0 = arith.muli %bx, %c64 : index
      %tile = memref.get_global @tile : memref<64x64xbf16, #gpu.address_space<workgroup>>
      %bar = nvgpu.mbarrier.create -> !barriers
      %leader = arith.cmpi eq, %tid, %c0 : index
      scf.if %leader {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !barriers
        nvvm.fence.mbarrier.init
      }
      gpu.barrier
      scf.if %leader {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %bytes : !barriers
        // TMA coordinates are innermost first: (column, row).
        nvgpu.tma.async.load %desc[%col0, %row0], %bar[%c0] to %tile : !tmap, !barriers -> memref<64x64xbf16, #gpu.address_space<workgroup>>
      }
      nvgpu.mbarrier.try_wait.parity %bar[%c0], %false, %ticks : !barriers
      %nthreads = arith.constant 128 : index
      %total = arith.constant 4096 : index
      scf.for %i = %tid to %total step %nthreads {
        %r = arith.divui %i, %c64 : index
        %c = arith.remui %i, %c64 : index
        %v = memref.load %tile[%r, %c] : memref<64x64xbf16, #gpu.address_space<workgroup>>
        %gr = arith.addi %row0, %r : index
        %gc = arith.addi %col0, %c : index
        memref.store %v, %out[%gr, %gc] : memref<?x?xbf16>
      }
      gpu.return
    }
  }
}
