//===- GemmKernel.cpp - Warp-specialized TMA + wgmma GEMM in tile IR ------===//
//
// D[M,N] (f32) = A[M,K] * B[K,N], A and B bf16 or f16, both row-major.
// Each block computes a 128x256 tile of D with two warpgroups, 64 rows
// each (wgmma m64n256k16, SS, B MN-major). The K loop copies a 128x64 tile
// of A and a 64x256 tile of B per step with tile.copy and carries
// `tile.num_stages`; tile-warp-specialize turns it into a TMA producer
// warpgroup feeding the two consumer warpgroups through S stages (the same
// IR is also correct unspecialized, which is the fallback). With
// --copy-engine cp-async (or mixed) the loads use cp.async: a SIMT
// producer of 256 threads, or software pipelining with commit groups.
//
//===----------------------------------------------------------------------===//

#include "IRBuilding.h"
#include "KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
constexpr int64_t kBlockM = 128, kBlockN = 256, kBlockK = 64;
// The rows of the block tile each consumer warpgroup computes.
constexpr int64_t kWarpgroupM = 64;

struct GemmShape {
  int64_t m, n, k;
  int64_t stages;
  /// Declare the block size, so that tile-warp-specialize adds a producer.
  bool warpSpecialized;
  /// Blocks of a persistent kernel; 0: one tile per block.
  int64_t persistentBlocks;
  /// cp.async instead of TMA for the loads of A and of B.
  bool cpAsyncA, cpAsyncB;
};

/// D = A * B, each block tile computed by a K loop of `stages` stages that
/// copies a 128x64 tile of A and a 64x256 tile of B into shared memory and
/// multiplies them into each warpgroup's 64x256 accumulator.
OwningOpRef<ModuleOp> buildGemmModule(MLIRContext &context, Type element,
                                      const GemmShape &shape) {
  ImplicitLocOpBuilder b(NameLoc::get(StringAttr::get(&context, "gemm")),
                         &context);
  auto aType = MemRefType::get({shape.m, shape.k}, element);
  auto bType = MemRefType::get({shape.k, shape.n}, element);
  auto dType = MemRefType::get({shape.m, shape.n}, b.getF32Type());
  SmallVector<int32_t> knownBlockSize;
  if (shape.warpSpecialized)
    knownBlockSize = {256, 1, 1};
  KernelSkeleton kernel =
      createKernel(b, "gemm", {aType, bType, dType}, knownBlockSize);
  Value A = kernel.func.getArgument(0);
  Value B = kernel.func.getArgument(1);
  Value D = kernel.func.getArgument(2);
  auto accType =
      tile::FragmentType::get({kWarpgroupM, kBlockN}, b.getF32Type());
  std::optional<tile::CopyEngine> engineA, engineB;
  if (shape.cpAsyncA)
    engineA = tile::CopyEngine::cp_async;
  if (shape.cpAsyncB)
    engineB = tile::CopyEngine::cp_async;

  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value c64 = constantIndex(b, kBlockK);
  Value c128 = constantIndex(b, kBlockM);
  Value c256 = constantIndex(b, kBlockN);
  Value kTiles = constantIndex(b, shape.k / kBlockK);
  Value zero = constantF32(b, 0.0f);
  // This warpgroup's 64 rows of the block's 128.
  Value wg = buildWarpgroupIndex(b);
  Value wgRow = arith::MulIOp::create(b, wg, c64);
  Value sA = allocShared(b, getSharedMemRefType({kBlockM, kBlockK}, element));
  Value sB = allocShared(b, getSharedMemRefType({kBlockK, kBlockN}, element));

  auto computeTile = [&](Value tileX, Value tileY) {
    Value row0 = arith::MulIOp::create(b, tileY, c128);
    Value col0 = arith::MulIOp::create(b, tileX, c256);
    Value init = tile::FillOp::create(b, accType, zero);
    scf::ForOp kLoop = buildPipelinedLoop(
        b, c0, kTiles, c1, shape.stages, init,
        [&](Value kt, ValueRange iterArgs) -> SmallVector<Value> {
          Value k0 = arith::MulIOp::create(b, kt, c64);
          buildLoadTile(b, A, {row0, k0}, sA, engineA);
          buildLoadTile(b, B, {k0, col0}, sB, engineB);
          Value sAw = buildSubView(b, sA, {wgRow, b.getIndexAttr(0)},
                                   {kWarpgroupM, kBlockK});
          Value next = tile::GemmOp::create(b, sAw, sB, iterArgs[0]);
          return {next};
        });
    Value outRow = arith::AddIOp::create(b, row0, wgRow);
    tile::StoreOp::create(b, kLoop.getResult(0), D, ValueRange{outRow, col0});
  };

  int64_t tilesN = shape.n / kBlockN;
  if (shape.persistentBlocks) {
    // Each block loops over tiles t = block, block + grid, ..., so the K
    // loop (and its barrier phases) is nested in a loop over tiles.
    Value first = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value blocks = gpu::GridDimOp::create(b, gpu::Dimension::x);
    Value tilesPerRow = constantIndex(b, tilesN);
    Value tiles = constantIndex(b, (shape.m / kBlockM) * tilesN);
    buildForLoop(b, first, tiles, blocks, [&](Value t) {
      Value tileX = arith::RemUIOp::create(b, t, tilesPerRow);
      Value tileY = arith::DivUIOp::create(b, t, tilesPerRow);
      computeTile(tileX, tileY);
    });
  } else {
    Value tileX = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value tileY = gpu::BlockIdOp::create(b, gpu::Dimension::y);
    computeTile(tileX, tileY);
  }
  gpu::ReturnOp::create(b);

  if (failed(verifyKernel(kernel, "gemm")))
    return nullptr;
  return std::move(kernel.module);
}
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
                  << " K=" << config.k << ": M must be a positive multiple of " << kBlockM << ", N of "
                  << kBlockN << " and K of " << kBlockK;
  if (config.stages < 1 || config.stages > 4)
    return fail() << "--stages " << config.stages
                  << " is not supported: 1 to 4 (each stage is 48 KiB of "
                     "shared memory)";
  if (config.schedule == "overlap")
    return fail() << "--schedule overlap applies to sink-fwd only (gemm: "
                     "auto, ws or plain)";
  if (config.schedule != "auto" && config.schedule != "ws" &&
      config.schedule != "plain")
    return fail() << "unknown schedule '" << config.schedule
                  << "' (auto, ws or plain)";
  // Declaring the block size lets tile-warp-specialize add its producer.
  bool warpSpecialized = config.schedule != "plain";
  if (config.copyEngine != "tma" && config.copyEngine != "cp-async" &&
      config.copyEngine != "mixed")
    return fail() << "unknown copy engine '" << config.copyEngine
                  << "' (tma, cp-async or mixed)";
  int64_t tiles = (config.m / kBlockM) * (config.n / kBlockN);
  if (config.persistentBlocks < 0 || config.persistentBlocks > 65535)
    return fail() << "--persistent " << config.persistentBlocks
                  << " is not supported: 0 (one tile per block) to 65535 blocks";
  int64_t blocks = std::min(config.persistentBlocks, tiles);
  if (config.m / kBlockM > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks in y";

  GemmShape shape{config.m,
                  config.n,
                  config.k,
                  config.stages,
                  warpSpecialized,
                  blocks,
                  /*cpAsyncA=*/config.copyEngine != "tma",
                  /*cpAsyncB=*/config.copyEngine == "cp-async"};
  OwningOpRef<ModuleOp> module =
      buildGemmModule(context, getElementType(&context, config.dtype), shape);
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "gemm";
  bundle.entry = "gemm";
  bundle.grid = blocks ? rt::Dim3{uint32_t(blocks), 1, 1}
                       : rt::Dim3{uint32_t(config.n / kBlockN),
                                  uint32_t(config.m / kBlockM), 1};
  bundle.block = {256, 1, 1}; // the consumers; warp specialization adds its producer
  bundle.config = {{"m", config.m}, {"n", config.n}, {"k", config.k},
                   {"stages", config.stages},
                   {"schedule", std::string(warpSpecialized ? "ws" : "plain")},
                   {"copy_engine", config.copyEngine},
                   {"persistent_blocks", blocks},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  auto u = [](int64_t v) { return uint64_t(v); };
  // Tensor maps are added by the tile lowering (lowerKernelToNVGPU).
  bundle.params.push_back(kernels::inputBuffer("a", config.dtype, {u(config.m), u(config.k)}));
  bundle.params.push_back(kernels::inputBuffer("b", config.dtype, {u(config.k), u(config.n)}));
  bundle.params.push_back(kernels::outputBuffer("d", rt::DType::F32,
                                                {u(config.m), u(config.n)}));
  KernelModule kernel{std::move(module), std::move(bundle)};
  kernel.tileIR = true;
  return kernel;
}
