//===- TmaStreamKernel.cpp - TMA streaming through a pipelined tile loop --===//
//
// The seed's "TMA copy pipeline" test, in tile IR: a K loop streams 64x64
// tiles of two matrices through `tile.tma_copy` into shared memory on a
// user barrier (the leader arrives, everybody waits), and the block sums
// them in a shared f32 accumulator:
//
//   out[m, c] = sum over tiles kt in [start, K/64) of A[m, kt*64 + c] + B[m, kt*64 + c]
//
// The loop carries tile.num_stages = S, so the passes give the buffers and
// the barrier S versions and rewrite the wait parity. One block handles 64
// rows with 128 threads.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;

namespace {
constexpr int64_t kTile = 64;

constexpr llvm::StringLiteral kTmaStreamTemplate = R"mlir(
!shared = memref<64x64x@T@, #gpu.address_space<workgroup>>
!accumulator = memref<64x64xf32, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @tma_stream {
    gpu.func @tma_stream(%A: memref<@M@x@K@x@T@>, %B: memref<@M@x@K@x@T@>, %out: memref<@M@x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %c4096 = arith.constant 4096 : index
      %start = arith.constant @START@ : index
      %tiles = arith.constant @TILES@ : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %bid = gpu.block_id x
      %m = arith.muli %bid, %c64 : index
      %sA = memref.alloc() {alignment = 1024} : !shared
      %sB = memref.alloc() {alignment = 1024} : !shared
      %acc = memref.alloc() {alignment = 16} : !accumulator
      %bar = tile.alloc_barrier [1] : !tile.barriers<1>
      scf.for %e = %tid to %c4096 step %c128 {
        %r = arith.divui %e, %c64 : index
        %c = arith.remui %e, %c64 : index
        memref.store %zero, %acc[%r, %c] : !accumulator
      }
      %leader = arith.cmpi eq, %tid, %c0 : index
      scf.for %kt = %start to %tiles step %c1 {
        %col = arith.muli %kt, %c64 : index
        tile.tma_copy %A[%m, %col], %sA, barrier(%bar[%c0]) : memref<@M@x@K@x@T@>, !shared, !tile.barriers<1>
        tile.tma_copy %B[%m, %col], %sB, barrier(%bar[%c0]) : memref<@M@x@K@x@T@>, !shared, !tile.barriers<1>
        scf.if %leader {
          tile.mbarrier_arrive %bar[%c0] : !tile.barriers<1>
        }
        // The parity written here is the raw tile index's; multi-versioning
        // replaces it with the stage phase counted from the loop start.
        %parity = arith.remui %kt, %c1 : index
        tile.mbarrier_wait_parity %bar[%c0], %parity : !tile.barriers<1>
        scf.for %e = %tid to %c4096 step %c128 {
          %r = arith.divui %e, %c64 : index
          %c = arith.remui %e, %c64 : index
          %a = memref.load %sA[%r, %c] : !shared
          %b = memref.load %sB[%r, %c] : !shared
          %af = arith.extf %a : @T@ to f32
          %bf = arith.extf %b : @T@ to f32
          %sum = arith.addf %af, %bf : f32
          %old = memref.load %acc[%r, %c] : !accumulator
          %new = arith.addf %old, %sum : f32
          memref.store %new, %acc[%r, %c] : !accumulator
        }
        // Every thread is done with this stage's tiles before a later
        // iteration's TMA overwrites them.
        gpu.barrier
      } {tile.num_stages = @STAGES@}
      scf.for %e = %tid to %c4096 step %c128 {
        %r = arith.divui %e, %c64 : index
        %c = arith.remui %e, %c64 : index
        %v = memref.load %acc[%r, %c] : !accumulator
        %row = arith.addi %m, %r : index
        memref.store %v, %out[%row, %c] : memref<@M@x64xf32>
      }
      gpu.return
    }
  }
}
)mlir";
} // namespace

FailureOr<KernelModule> kernels::buildTmaStream(MLIRContext &context,
                                                const KernelConfig &config) {
  auto fail = [&]() {
    return emitError(UnknownLoc::get(&context)) << "tma-stream: ";
  };
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return fail() << "--dtype " << rt::dtypeName(config.dtype)
                  << " is not supported; use bf16 or fp16";
  if (config.m % kTile || config.k % kTile)
    return fail() << "unsupported shape M=" << config.m << " K=" << config.k
                  << ": both must be positive multiples of " << kTile;
  if (config.m / kTile > 65535)
    return fail() << "M=" << config.m << " needs more than 65535 blocks";
  int64_t tiles = config.k / kTile;
  if (config.stages < 1 || config.stages > 8)
    return fail() << "--stages " << config.stages << " is not supported; use 1 to 8";
  if (config.startTile < 0 || config.startTile >= tiles)
    return fail() << "--start-tile " << config.startTile
                  << " is outside the " << tiles << " tiles of K=" << config.k;

  OwningOpRef<ModuleOp> module = kernels::parseKernelTemplate(
      context, "tma-stream", kTmaStreamTemplate,
      {{"T", kernels::mlirTypeName(config.dtype)},
       {"M", std::to_string(config.m)},
       {"K", std::to_string(config.k)},
       {"TILES", std::to_string(tiles)},
       {"START", std::to_string(config.startTile)},
       {"STAGES", std::to_string(config.stages)}});
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "tma-stream";
  bundle.entry = "tma_stream";
  bundle.grid = {uint32_t(config.m / kTile), 1, 1};
  bundle.block = {128, 1, 1};
  bundle.config = {{"m", config.m},
                   {"k", config.k},
                   {"stages", config.stages},
                   {"start_tile", config.startTile},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  std::vector<uint64_t> shape = {uint64_t(config.m), uint64_t(config.k)};
  bundle.params.push_back(inputBuffer("a", config.dtype, shape));
  bundle.params.push_back(inputBuffer("b", config.dtype, shape));
  bundle.params.push_back(
      outputBuffer("out", rt::DType::F32, {uint64_t(config.m), uint64_t(kTile)}));
  return KernelModule{std::move(module), std::move(bundle), /*tileIR=*/true};
}
