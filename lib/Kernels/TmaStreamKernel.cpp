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

#include "IRBuilding.h"
#include "KernelBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
constexpr int64_t kTile = 64;
constexpr int64_t kThreads = 128;

/// out[m, c] = the sum over tiles kt in [startTile, tiles) of
/// A[m, kt*64 + c] + B[m, kt*64 + c], the tiles streamed by tile.tma_copy
/// through a loop of `stages` stages.
OwningOpRef<ModuleOp> buildTmaStreamModule(MLIRContext &context, Type element,
                                           int64_t m, int64_t k,
                                           int64_t startTile, int64_t stages) {
  ImplicitLocOpBuilder b(NameLoc::get(StringAttr::get(&context, "tma-stream")),
                         &context);
  auto inputType = MemRefType::get({m, k}, element);
  auto outType = MemRefType::get({m, kTile}, b.getF32Type());
  KernelSkeleton kernel =
      createKernel(b, "tma_stream", {inputType, inputType, outType});
  Value A = kernel.func.getArgument(0);
  Value B = kernel.func.getArgument(1);
  Value out = kernel.func.getArgument(2);
  MemRefType sharedType = getSharedMemRefType({kTile, kTile}, element);
  MemRefType accumulatorType =
      getSharedMemRefType({kTile, kTile}, b.getF32Type());

  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value c64 = constantIndex(b, kTile);
  Value c128 = constantIndex(b, kThreads);
  Value c4096 = constantIndex(b, kTile * kTile);
  Value start = constantIndex(b, startTile);
  Value tiles = constantIndex(b, k / kTile);
  Value zero = constantF32(b, 0.0f);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value bid = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  Value row0 = arith::MulIOp::create(b, bid, c64);
  Value sA = allocShared(b, sharedType, /*alignment=*/1024);
  Value sB = allocShared(b, sharedType, /*alignment=*/1024);
  Value acc = allocShared(b, accumulatorType, /*alignment=*/16);
  Value bar = tile::AllocBarrierOp::create(
      b, tile::BarrierArrayType::get(&context, 1), ArrayRef<int64_t>{1});
  // The block's threads over the elements (r, c) of a 64x64 tile: thread
  // tid takes elements tid, tid + 128, ... in row-major order.
  auto forEachTileElement = [&](function_ref<void(Value r, Value c)> body) {
    buildForLoop(b, tid, c4096, c128, [&](Value e) {
      Value r = arith::DivUIOp::create(b, e, c64);
      Value c = arith::RemUIOp::create(b, e, c64);
      body(r, c);
    });
  };
  forEachTileElement([&](Value r, Value c) {
    memref::StoreOp::create(b, zero, acc, ValueRange{r, c});
  });
  Value leader = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, c0);
  buildPipelinedLoop(b, start, tiles, c1, stages, [&](Value kt) {
    Value col = arith::MulIOp::create(b, kt, c64);
    tile::TmaCopyOp::create(b, bar, c0, A, ValueRange{row0, col}, sA);
    tile::TmaCopyOp::create(b, bar, c0, B, ValueRange{row0, col}, sB);
    buildIfThen(b, leader, [&] { tile::MBarrierArriveOp::create(b, bar, c0); });
    // The parity written here is the raw tile index's; multi-versioning
    // replaces it with the stage phase counted from the loop start.
    Value parity = arith::RemUIOp::create(b, kt, c1);
    tile::MBarrierWaitParityOp::create(b, bar, c0, parity);
    forEachTileElement([&](Value r, Value c) {
      Value a = memref::LoadOp::create(b, sA, ValueRange{r, c});
      Value bv = memref::LoadOp::create(b, sB, ValueRange{r, c});
      Value af = arith::ExtFOp::create(b, b.getF32Type(), a);
      Value bf = arith::ExtFOp::create(b, b.getF32Type(), bv);
      Value sum = arith::AddFOp::create(b, af, bf);
      Value old = memref::LoadOp::create(b, acc, ValueRange{r, c});
      Value updated = arith::AddFOp::create(b, old, sum);
      memref::StoreOp::create(b, updated, acc, ValueRange{r, c});
    });
    // Every thread is done with this stage's tiles before a later
    // iteration's TMA overwrites them.
    gpu::BarrierOp::create(b);
  });
  forEachTileElement([&](Value r, Value c) {
    Value v = memref::LoadOp::create(b, acc, ValueRange{r, c});
    Value row = arith::AddIOp::create(b, row0, r);
    memref::StoreOp::create(b, v, out, ValueRange{row, c});
  });
  gpu::ReturnOp::create(b);

  if (failed(verifyKernel(kernel, "tma-stream")))
    return nullptr;
  return std::move(kernel.module);
}
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

  OwningOpRef<ModuleOp> module =
      buildTmaStreamModule(context, getElementType(&context, config.dtype),
                           config.m, config.k, config.startTile, config.stages);
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
