//===- GemmKernel.cpp - TMA + mbarrier + wgmma GEMM -----------------------===//
//
// D[M,N] (f32) = A[M,K] * B[K,N], A and B bf16 or f16, both row-major.
// Written with upstream nvgpu ops until the tile-dialect lowering exists.
// One warpgroup computes a 128x128 tile of D per block; each K step loads a
// 128x64 tile of A and two 64x64 boxes of B (the 128-byte swizzle limits a
// 16-bit box to 64 columns) on one mbarrier and issues wgmma m64n128k16.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;

namespace {
constexpr int64_t kBlockM = 128, kBlockN = 128, kBlockK = 64;

constexpr llvm::StringLiteral kGemmTemplate = R"mlir(
!barriers = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
!mapA = !nvgpu.tensormap.descriptor<tensor = memref<128x64x@T@, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!mapB = !nvgpu.tensormap.descriptor<tensor = memref<64x64x@T@, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
!acc = !nvgpu.warpgroup.accumulator<fragmented = vector<128x128xf32>>
module attributes {gpu.container_module} {
  gpu.module @gemm {
    // 128-byte swizzled tiles must be 1024-byte aligned.
    memref.global "private" @smemA : memref<128x64x@T@, 3> {alignment = 1024 : i64}
    memref.global "private" @smemB : memref<2x64x64x@T@, 3> {alignment = 1024 : i64}
    gpu.func @gemm(%mapAPtr: !llvm.ptr, %mapBPtr: !llvm.ptr, %D: memref<@M@x@N@xf32>) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 0, 1>} {
      %mapA = builtin.unrealized_conversion_cast %mapAPtr : !llvm.ptr to !mapA
      %mapB = builtin.unrealized_conversion_cast %mapBPtr : !llvm.ptr to !mapB
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %kTiles = arith.constant @KTILES@ : index
      %bytes = arith.constant 32768 : index
      %ticks = arith.constant 10000000 : index
      %tid = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %row0 = arith.muli %by, %c128 : index
      %col0 = arith.muli %bx, %c128 : index
      %col1 = arith.addi %col0, %c64 : index
      %sA = memref.get_global @smemA : memref<128x64x@T@, 3>
      // B's 64x128 tile is two dense 64x64 boxes, one after the other (a TMA
      // box lands contiguously); wgmma reads that layout through one
      // descriptor of the whole 64x128 tile.
      %sB2 = memref.get_global @smemB : memref<2x64x64x@T@, 3>
      %sB = memref.reinterpret_cast %sB2 to offset: [0], sizes: [64, 128], strides: [128, 1] : memref<2x64x64x@T@, 3> to memref<64x128x@T@, 3>
      %sB0 = memref.subview %sB2[0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64x@T@, 3> to memref<64x64x@T@, strided<[64, 1]>, 3>
      %sB1 = memref.subview %sB2[1, 0, 0] [1, 64, 64] [1, 1, 1] : memref<2x64x64x@T@, 3> to memref<64x64x@T@, strided<[64, 1], offset: 4096>, 3>
      %bar = nvgpu.mbarrier.create -> !barriers
      %leader = arith.cmpi eq, %tid, %c0 : index
      scf.if %leader {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !barriers
        nvvm.fence.mbarrier.init
      }
      gpu.barrier
      %init = nvgpu.warpgroup.mma.init.accumulator -> !acc
      %res = scf.for %kt = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!acc) {
        %k0 = arith.muli %kt, %c64 : index
        scf.if %leader {
          nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %bytes : !barriers
          // TMA coordinates are innermost first: (column, row).
          nvgpu.tma.async.load %mapA[%k0, %row0], %bar[%c0] to %sA : !mapA, !barriers -> memref<128x64x@T@, 3>
          nvgpu.tma.async.load %mapB[%col0, %k0], %bar[%c0] to %sB0 : !mapB, !barriers -> memref<64x64x@T@, strided<[64, 1]>, 3>
          nvgpu.tma.async.load %mapB[%col1, %k0], %bar[%c0] to %sB1 : !mapB, !barriers -> memref<64x64x@T@, strided<[64, 1], offset: 4096>, 3>
        }
        // The barrier completes once per K step: wait for phase kt.
        %parityIndex = arith.remui %kt, %c2 : index
        %parity = arith.index_cast %parityIndex : index to i1
        nvgpu.mbarrier.try_wait.parity %bar[%c0], %parity, %ticks : !barriers
        %dA = nvgpu.warpgroup.generate.descriptor %sA, %mapA : memref<128x64x@T@, 3>, !mapA -> !nvgpu.warpgroup.descriptor<tensor = memref<128x64x@T@, 3>>
        %dB = nvgpu.warpgroup.generate.descriptor %sB, %mapB : memref<64x128x@T@, 3>, !mapB -> !nvgpu.warpgroup.descriptor<tensor = memref<64x128x@T@, 3>>
        // B is K x N with N contiguous, which wgmma calls transposed.
        %next = nvgpu.warpgroup.mma %dA, %dB, %acc {transposeB} : <tensor = memref<128x64x@T@, 3>>, <tensor = memref<64x128x@T@, 3>>, !acc -> !acc
        nvvm.wgmma.wait.group.sync.aligned 0
        // Every thread is done reading the tiles before the next load.
        gpu.barrier
        scf.yield %next : !acc
      }
      %tileD = memref.subview %D[%row0, %col0] [128, 128] [1, 1] : memref<@M@x@N@xf32> to memref<128x128xf32, strided<[@N@, 1], offset: ?>>
      nvgpu.warpgroup.mma.store %res, %tileD : !acc to memref<128x128xf32, strided<[@N@, 1], offset: ?>>
      gpu.return
    }
  }
}
)mlir";
} // namespace

FailureOr<KernelModule> kernels::buildGemm(MLIRContext &context,
                                           const KernelConfig &config) {
  auto fail = [&]() { return emitError(UnknownLoc::get(&context)) << "gemm: "; };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or f16";
  if (config.m <= 0 || config.n <= 0 || config.k <= 0 ||
      config.m % kBlockM || config.n % kBlockN || config.k % kBlockK)
    return fail() << "unsupported shape M=" << config.m << " N=" << config.n
                  << " K=" << config.k << ": M and N must be positive multiples of "
                  << kBlockM << " and K a positive multiple of " << kBlockK;
  if (config.m / kBlockM > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks in y";

  std::string type = kernels::mlirTypeName(config.dtype);
  OwningOpRef<ModuleOp> module = kernels::parseKernelTemplate(
      context, "gemm", kGemmTemplate,
      {{"T", type},
       {"M", std::to_string(config.m)},
       {"N", std::to_string(config.n)},
       {"KTILES", std::to_string(config.k / kBlockK)}});
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "gemm";
  bundle.entry = "gemm";
  bundle.grid = {uint32_t(config.n / kBlockN), uint32_t(config.m / kBlockM), 1};
  bundle.block = {128, 1, 1};
  bundle.config = {{"m", config.m}, {"n", config.n}, {"k", config.k},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  auto u = [](int64_t v) { return uint64_t(v); };
  bundle.params.push_back(kernels::inputBuffer("a", config.dtype, {u(config.m), u(config.k)},
                                               /*kernelArg=*/false));
  bundle.params.push_back(kernels::inputBuffer("b", config.dtype, {u(config.k), u(config.n)},
                                               /*kernelArg=*/false));
  bundle.params.push_back(kernels::tensorMap(
      "a_map", "a", config.dtype, {u(config.m), u(config.k)},
      {uint32_t(kBlockM), uint32_t(kBlockK)}));
  bundle.params.push_back(kernels::tensorMap(
      "b_map", "b", config.dtype, {u(config.k), u(config.n)}, {64, 64}));
  bundle.params.push_back(kernels::outputBuffer("d", rt::DType::F32,
                                                {u(config.m), u(config.n)}));
  return KernelModule{std::move(module), std::move(bundle)};
}
