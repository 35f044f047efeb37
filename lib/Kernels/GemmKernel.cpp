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

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;

namespace {
constexpr int64_t kBlockM = 128, kBlockN = 256, kBlockK = 64;

constexpr llvm::StringLiteral kGemmTemplate = R"mlir(
!sA = memref<128x64x@T@, #gpu.address_space<workgroup>>
!sB = memref<64x256x@T@, #gpu.address_space<workgroup>>
!acc = !tile.fragment<64x256xf32>
module attributes {gpu.container_module} {
  gpu.module @gemm {
    gpu.func @gemm(%A: memref<@M@x@K@x@T@>, %B: memref<@K@x@N@x@T@>, %D: memref<@M@x@N@xf32>) kernel
        @ATTRIBUTES@ {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %kTiles = arith.constant @KTILES@ : index
      %zero = arith.constant 0.0 : f32
      // This warpgroup's 64 rows of the block's 128 (a warp-uniform index:
      // kernels::kWarpgroupIndex).
@WARPGROUP_INDEX@      %wgRow = arith.muli %wg, %c64 : index
      %sA = memref.alloc() : !sA
      %sB = memref.alloc() : !sB
      @TILE_BEGIN@
      %row0 = arith.muli %tileY, %c128 : index
      %col0 = arith.muli %tileX, %c256 : index
      %init = tile.fill %zero : !acc
      %res = scf.for %kt = %c0 to %kTiles step %c1 iter_args(%acc = %init) -> (!acc) {
        %k0 = arith.muli %kt, %c64 : index
        tile.copy %A[%row0, %k0], %sA @ENGINE_A@ : memref<@M@x@K@x@T@>, !sA
        tile.copy %B[%k0, %col0], %sB @ENGINE_B@ : memref<@K@x@N@x@T@>, !sB
        %sAw = memref.subview %sA[%wgRow, 0] [64, 64] [1, 1] : !sA to memref<64x64x@T@, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>
        %next = tile.gemm %sAw, %sB, %acc : memref<64x64x@T@, strided<[64, 1], offset: ?>, #gpu.address_space<workgroup>>, !sB, !acc
        scf.yield %next : !acc
      } {tile.num_stages = @STAGES@}
      %outRow = arith.addi %row0, %wgRow : index
      tile.store %res, %D[%outRow, %col0] : !acc, memref<@M@x@N@xf32>
      @TILE_END@
      gpu.return
    }
  }
}
)mlir";
// One tile per block: the block's coordinates.
constexpr llvm::StringLiteral kOneTile = R"mlir(
      %tileX = gpu.block_id x
      %tileY = gpu.block_id y)mlir";

// Persistent: each block loops over tiles t = block, block + grid, ...,
// so the K loop (and its barrier phases) is nested in a loop over tiles.
std::string tileLoop(int64_t tiles, int64_t tilesN) {
  return R"mlir(
      %first = gpu.block_id x
      %blocks = gpu.grid_dim x
      %tilesN = arith.constant )mlir" +
         std::to_string(tilesN) + R"mlir( : index
      %tiles = arith.constant )mlir" +
         std::to_string(tiles) + R"mlir( : index
      scf.for %t = %first to %tiles step %blocks {
      %tileX = arith.remui %t, %tilesN : index
      %tileY = arith.divui %t, %tilesN : index)mlir";
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
  const char *cpAsync = "{engine = #tile.engine<cp_async>}";
  int64_t tiles = (config.m / kBlockM) * (config.n / kBlockN);
  if (config.persistentBlocks < 0 || config.persistentBlocks > 65535)
    return fail() << "--persistent " << config.persistentBlocks
                  << " is not supported: 0 (one tile per block) to 65535 blocks";
  int64_t blocks = std::min(config.persistentBlocks, tiles);
  if (config.m / kBlockM > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks in y";

  std::string type = kernels::mlirTypeName(config.dtype);
  OwningOpRef<ModuleOp> module = kernels::parseKernelTemplate(
      context, "gemm", kGemmTemplate,
      {{"T", type},
       {"M", std::to_string(config.m)},
       {"N", std::to_string(config.n)},
       {"K", std::to_string(config.k)},
       {"STAGES", std::to_string(config.stages)},
       {"ATTRIBUTES", warpSpecialized
                          ? "attributes {known_block_size = array<i32: 256, 1, 1>}"
                          : ""},
       {"KTILES", std::to_string(config.k / kBlockK)},
       {"WARPGROUP_INDEX", kernels::kWarpgroupIndex},
       {"TILE_BEGIN", blocks ? tileLoop(tiles, config.n / kBlockN)
                             : kOneTile.str()},
       {"TILE_END", blocks ? "}" : ""},
       {"ENGINE_A", config.copyEngine != "tma" ? cpAsync : ""},
       {"ENGINE_B", config.copyEngine == "cp-async" ? cpAsync : ""}});
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
