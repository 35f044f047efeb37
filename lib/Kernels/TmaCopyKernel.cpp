//===- TmaCopyKernel.cpp - TMA load/store tile copy -----------------------===//
//
// out[M,N] = in[M,N], one 64x64 tile per block: one elected thread arms an
// mbarrier and issues the TMA load into shared memory; after the wait, it
// issues the TMA store of the same tile and waits for the bulk group before
// the block exits (shared memory must stay alive until the store read it).
// Written with upstream nvgpu/nvvm ops until the tile lowering exists.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;

namespace {
constexpr int64_t kTile = 64;

constexpr llvm::StringLiteral kTmaCopyTemplate = R"mlir(
!barriers = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 1>
!map = !nvgpu.tensormap.descriptor<tensor = memref<64x64x@T@, 3>, swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>
module attributes {gpu.container_module} {
  gpu.module @tma_copy {
    memref.global "private" @tile : memref<64x64x@T@, 3> {alignment = 1024 : i64}
    gpu.func @tma_copy(%inPtr: !llvm.ptr, %outPtr: !llvm.ptr) kernel
        attributes {sinkattn.tensor_map_args = array<i64: 0, 1>} {
      %in = builtin.unrealized_conversion_cast %inPtr : !llvm.ptr to !map
      %out = builtin.unrealized_conversion_cast %outPtr : !llvm.ptr to !map
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %bytes = arith.constant @BYTES@ : index
      %parity = arith.constant false
      %ticks = arith.constant 10000000 : index
      %tid = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %row0 = arith.muli %by, %c64 : index
      %col0 = arith.muli %bx, %c64 : index
      %tile = memref.get_global @tile : memref<64x64x@T@, 3>
      %bar = nvgpu.mbarrier.create -> !barriers
      %leader = arith.cmpi eq, %tid, %c0 : index
      scf.if %leader {
        nvgpu.mbarrier.init %bar[%c0], %c1 : !barriers
        nvvm.fence.mbarrier.init
      }
      gpu.barrier
      scf.if %leader {
        nvgpu.mbarrier.arrive.expect_tx %bar[%c0], %bytes : !barriers
        nvgpu.tma.async.load %in[%col0, %row0], %bar[%c0] to %tile : !map, !barriers -> memref<64x64x@T@, 3>
        nvgpu.mbarrier.try_wait.parity %bar[%c0], %parity, %ticks : !barriers
        nvgpu.tma.async.store %tile to %out[%col0, %row0] : memref<64x64x@T@, 3> -> !map
        nvvm.cp.async.bulk.commit.group
        nvvm.cp.async.bulk.wait_group 0
      }
      gpu.return
    }
  }
}
)mlir";
} // namespace

FailureOr<KernelModule> kernels::buildTmaCopy(MLIRContext &context,
                                              const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "tma-copy: ";
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or f16";
  if (config.m <= 0 || config.n <= 0 || config.m % kTile || config.n % kTile)
    return fail() << "unsupported shape M=" << config.m << " N=" << config.n
                  << ": both must be positive multiples of " << kTile;
  if (config.m / kTile > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks in y";

  OwningOpRef<ModuleOp> module = kernels::parseKernelTemplate(
      context, "tma-copy", kTmaCopyTemplate,
      {{"T", kernels::mlirTypeName(config.dtype)},
       {"BYTES", std::to_string(kTile * kTile * rt::dtypeSize(config.dtype))}});
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "tma-copy";
  bundle.entry = "tma_copy";
  bundle.grid = {uint32_t(config.n / kTile), uint32_t(config.m / kTile), 1};
  bundle.block = {128, 1, 1};
  bundle.config = {{"m", config.m}, {"n", config.n},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  std::vector<uint64_t> shape = {uint64_t(config.m), uint64_t(config.n)};
  bundle.params.push_back(
      inputBuffer("in", config.dtype, shape, /*kernelArg=*/false));
  bundle.params.push_back(
      outputBuffer("out", config.dtype, shape, /*kernelArg=*/false));
  bundle.params.push_back(
      tensorMap("in_map", "in", config.dtype, shape, {kTile, kTile}));
  bundle.params.push_back(
      tensorMap("out_map", "out", config.dtype, shape, {kTile, kTile}));
  return KernelModule{std::move(module), std::move(bundle)};
}
