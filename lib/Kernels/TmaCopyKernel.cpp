//===- TmaCopyKernel.cpp - TMA streaming copy in tile IR ------------------===//
//
// out[M,N] = in[M,N] through shared memory, in tile IR: each block copies a
// strip of 64 rows and TILES 64-column tiles; its loop (tile.num_stages = S)
// loads a tile with a synchronous `tile.copy` (global -> shared: TMA on a
// per-stage barrier) and stores it with another (shared -> global: TMA
// store). The tile passes version the buffer and barrier per stage and the
// conversion places them in dynamic shared memory.
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
!shared = memref<64x64x@T@, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @tma_copy {
    gpu.func @tma_copy(%in: memref<@M@x@N@x@T@>, %out: memref<@M@x@N@x@T@>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %tiles = arith.constant @TILES@ : index
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %row = arith.muli %by, %c64 : index
      %firstTile = arith.muli %bx, %tiles : index
      %buffer = memref.alloc() {alignment = 1024} : !shared
      scf.for %t = %c0 to %tiles step %c1 {
        %tile = arith.addi %firstTile, %t : index
        %col = arith.muli %tile, %c64 : index
        tile.copy %in[%row, %col], %buffer : memref<@M@x@N@x@T@>, !shared
        tile.copy %buffer, %out[%row, %col] : !shared, memref<@M@x@N@x@T@>
      } {tile.num_stages = @STAGES@}
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
  if (config.stages < 1 || config.stages > 8)
    return fail() << "--stages " << config.stages
                  << " is not supported; use 1 to 8";
  // Up to 8 tiles (512 columns) per block: enough blocks to fill the GPU,
  // enough work per block to amortize its setup.
  int64_t tilesPerBlock = 8;
  while ((config.n / kTile) % tilesPerBlock)
    tilesPerBlock /= 2;
  if (config.m / kTile > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks in y";

  OwningOpRef<ModuleOp> module = kernels::parseKernelTemplate(
      context, "tma-copy", kTmaCopyTemplate,
      {{"T", kernels::mlirTypeName(config.dtype)},
       {"M", std::to_string(config.m)},
       {"N", std::to_string(config.n)},
       {"TILES", std::to_string(tilesPerBlock)},
       {"STAGES", std::to_string(config.stages)}});
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "tma-copy";
  bundle.entry = "tma_copy";
  bundle.grid = {uint32_t(config.n / (kTile * tilesPerBlock)),
                 uint32_t(config.m / kTile), 1};
  bundle.block = {128, 1, 1};
  bundle.config = {{"m", config.m}, {"n", config.n}, {"stages", config.stages},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  std::vector<uint64_t> shape = {uint64_t(config.m), uint64_t(config.n)};
  bundle.params.push_back(inputBuffer("in", config.dtype, shape));
  bundle.params.push_back(outputBuffer("out", config.dtype, shape));
  return KernelModule{std::move(module), std::move(bundle), /*tileIR=*/true};
}
