//===- TmaCopyKernel.cpp - TMA streaming copy in tile IR ------------------===//
//
// out[M,N] = in[M,N] through shared memory, in tile IR: each block copies a
// strip of 64 rows and up to 8 64-column tiles; its loop (tile.num_stages = S)
// loads a tile with a synchronous `tile.copy` (global -> shared: TMA on a
// per-stage barrier) and stores it with another (shared -> global: TMA
// store). The tile passes version the buffer and barrier per stage and the
// conversion places them in dynamic shared memory. With run-time shapes the
// tensors are `memref<?x?xT>` kernel arguments (memref descriptors): the
// tensor maps, encoded at launch, clip the last strip and tiles.
//
//===----------------------------------------------------------------------===//

#include "IRBuilding.h"
#include "KernelBuilders.h"

#include "SinkAttn/Runtime/KernelGrids.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
constexpr int64_t kTile = rt::kTmaCopyTile;
/// With run-time shapes every block copies this many tiles (the last
/// block's may lie past the matrix: the tensor maps clip them).
constexpr int64_t kRunTimeShapeTilesPerBlock = 8;

/// out = in, each block copying 64 rows and `tilesPerBlock` 64-column tiles
/// through one shared tile in a loop of `stages` stages; `m` and `n` are
/// ShapedType::kDynamic for a kernel that takes them at launch.
OwningOpRef<ModuleOp> buildTmaCopyModule(MLIRContext &context, Type element,
                                         int64_t m, int64_t n,
                                         int64_t tilesPerBlock,
                                         int64_t stages) {
  ImplicitLocOpBuilder b(NameLoc::get(StringAttr::get(&context, "tma-copy")),
                         &context);
  auto tensorType = MemRefType::get({m, n}, element);
  KernelSkeleton kernel = createKernel(b, "tma_copy", {tensorType, tensorType});
  Value in = kernel.func.getArgument(0);
  Value out = kernel.func.getArgument(1);

  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value c64 = constantIndex(b, kTile);
  Value tiles = constantIndex(b, tilesPerBlock);
  Value bx = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value by = gpu::BlockIdOp::create(b, gpu::Dimension::y);
  Value row = arith::MulIOp::create(b, by, c64);
  Value firstTile = arith::MulIOp::create(b, bx, tiles);
  Value buffer = allocShared(b, getSharedMemRefType({kTile, kTile}, element),
                             /*alignment=*/1024);
  buildPipelinedLoop(b, c0, tiles, c1, stages, [&](Value t) {
    Value tileIndex = arith::AddIOp::create(b, firstTile, t);
    Value col = arith::MulIOp::create(b, tileIndex, c64);
    buildLoadTile(b, in, {row, col}, buffer);
    buildStoreTile(b, buffer, out, {row, col});
  });
  gpu::ReturnOp::create(b);

  if (failed(verifyKernel(kernel, "tma-copy")))
    return nullptr;
  return std::move(kernel.module);
}
} // namespace

FailureOr<KernelModule> kernels::buildTmaCopy(MLIRContext &context,
                                              const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "tma-copy: ";
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or f16";
  if (config.runTimeShapes) {
    // Any shape whose rows the tensor maps can stride over (16 bytes).
    if (config.m <= 0 || config.n <= 0 ||
        config.n * int64_t(rt::dtypeSize(config.dtype)) % 16)
      return fail() << "unsupported default shape M=" << config.m
                    << " N=" << config.n
                    << ": both must be positive, N a multiple of 8";
  } else if (config.m <= 0 || config.n <= 0 || config.m % kTile ||
             config.n % kTile) {
    return fail() << "unsupported shape M=" << config.m << " N=" << config.n
                  << ": both must be positive multiples of " << kTile
                  << " (--run-time-shapes takes others)";
  }
  if (config.stages < 1 || config.stages > 8)
    return fail() << "--stages " << config.stages
                  << " is not supported; use 1 to 8";
  // Up to 8 tiles (512 columns) per block: enough blocks to fill the GPU,
  // enough work per block to amortize its setup.
  int64_t tilesPerBlock = kRunTimeShapeTilesPerBlock;
  while (!config.runTimeShapes && (config.n / kTile) % tilesPerBlock)
    tilesPerBlock /= 2;
  if ((config.m + kTile - 1) / kTile > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks in y";

  int64_t m = config.runTimeShapes ? ShapedType::kDynamic : config.m;
  int64_t n = config.runTimeShapes ? ShapedType::kDynamic : config.n;
  OwningOpRef<ModuleOp> module =
      buildTmaCopyModule(context, getElementType(&context, config.dtype), m, n,
                         tilesPerBlock, config.stages);
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "tma-copy";
  bundle.entry = "tma_copy";
  bundle.grid = rt::tmaCopyGrid(config.m, config.n, tilesPerBlock);
  bundle.block = {128, 1, 1};
  bundle.config = {{"m", config.m}, {"n", config.n}, {"stages", config.stages},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  std::vector<uint64_t> shape = {uint64_t(config.m), uint64_t(config.n)};
  bundle.params.push_back(inputBuffer("in", config.dtype, shape));
  bundle.params.push_back(outputBuffer("out", config.dtype, shape));
  if (config.runTimeShapes) {
    bundle.formatVersion = rt::kBundleDescriptorFormatVersion;
    bundle.config["tiles_per_block"] = tilesPerBlock;
    for (rt::BundleParam &buffer : bundle.params) {
      buffer.descriptor = true;
      buffer.dynamicDims = {0, 1};
    }
  }
  return KernelModule{std::move(module), std::move(bundle), /*tileIR=*/true};
}
