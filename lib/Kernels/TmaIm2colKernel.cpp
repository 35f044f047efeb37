//===- TmaIm2colKernel.cpp - TMA im2col tile loads in tile IR -------------===//
//
// The im2col test kernel: for each tap (dh, dw) of a 3x3 filter, one block
// loads the im2col tile of an NHWC input with `tile.im2col_copy` (TMA in
// im2col mode, its own barrier) and writes it out:
//
//   out[tap][p][c] = x[n0][bh(p) + dh][bw(p) + dw][c], 0 outside the tensor,
//
// where (bh(p), bw(p)) is the p-th pixel of the traversal that starts at
// (h0, w0) and runs along W, wrapping to the next row (the bounding box is
// the whole tensor: lower = upper = 0). The 16 pixels starting at w0 = 4 of
// a 12-wide row wrap into the next row, and taps dw > 0 read past the row's
// end (zero fill): both TMA behaviours are exercised.
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
// NHWC input, tile and start pixel of the test.
constexpr int64_t kN = 2, kH = 10, kW = 12, kC = 64;
constexpr int64_t kPixels = 16, kTaps = 9;
constexpr int64_t kStartN = 1, kStartH = 2, kStartW = 4;
constexpr int64_t kFilter = 3, kThreads = 128;

/// For each tap (dh, dw) of the 3x3 filter: the im2col tile of the pixels
/// from (kStartN, kStartH, kStartW), loaded by tile.im2col_copy and stored
/// to out[tap] by the block's threads.
OwningOpRef<ModuleOp> buildTmaIm2colModule(MLIRContext &context, Type element) {
  ImplicitLocOpBuilder b(NameLoc::get(StringAttr::get(&context, "tma-im2col")),
                         &context);
  auto inputType = MemRefType::get({kN, kH, kW, kC}, element);
  auto outType = MemRefType::get({kTaps, kPixels, kC}, element);
  KernelSkeleton kernel = createKernel(b, "tma_im2col", {inputType, outType});
  Value x = kernel.func.getArgument(0);
  Value out = kernel.func.getArgument(1);

  Value c0 = constantIndex(b, 0);
  Value c1 = constantIndex(b, 1);
  Value c3 = constantIndex(b, kFilter);
  Value c9 = constantIndex(b, kTaps);
  Value c64 = constantIndex(b, kC);
  Value c128 = constantIndex(b, kThreads);
  Value c1024 = constantIndex(b, kPixels * kC);
  Value n0 = constantIndex(b, kStartN);
  Value h0 = constantIndex(b, kStartH);
  Value w0 = constantIndex(b, kStartW);
  Value tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value tile = allocShared(b, getSharedMemRefType({kPixels, kC}, element),
                           /*alignment=*/1024);
  buildForLoop(b, c0, c9, c1, [&](Value tap) {
    Value dh = arith::DivUIOp::create(b, tap, c3);
    Value dw = arith::RemUIOp::create(b, tap, c3);
    // The bounding box is the whole tensor.
    tile::Im2colCopyOp::create(b, x, ValueRange{n0, h0, w0, c0}, tile,
                               ValueRange{dh, dw}, /*lower=*/{0, 0},
                               /*upper=*/{0, 0});
    buildForLoop(b, tid, c1024, c128, [&](Value e) {
      Value p = arith::DivUIOp::create(b, e, c64);
      Value c = arith::RemUIOp::create(b, e, c64);
      Value v = memref::LoadOp::create(b, tile, ValueRange{p, c});
      memref::StoreOp::create(b, v, out, ValueRange{tap, p, c});
    });
  });
  gpu::ReturnOp::create(b);

  if (failed(verifyKernel(kernel, "tma-im2col")))
    return nullptr;
  return std::move(kernel.module);
}
} // namespace

FailureOr<KernelModule> kernels::buildTmaIm2col(MLIRContext &context,
                                                const KernelConfig &config) {
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return emitError(UnknownLoc::get(&context))
           << "tma-im2col: --dtype " << rt::dtypeName(config.dtype)
           << " is not supported; use bf16 or fp16";
  OwningOpRef<ModuleOp> module =
      buildTmaIm2colModule(context, getElementType(&context, config.dtype));
  if (!module)
    return failure();

  rt::Bundle bundle;
  bundle.kernel = "tma-im2col";
  bundle.entry = "tma_im2col";
  bundle.grid = {1, 1, 1};
  bundle.block = {128, 1, 1};
  bundle.config = {{"n", kN},         {"h", kH},          {"w", kW},
                   {"c", kC},         {"pixels", kPixels}, {"taps", kTaps},
                   {"n0", kStartN},   {"h0", kStartH},    {"w0", kStartW},
                   {"dtype", std::string(rt::dtypeName(config.dtype))}};
  bundle.params.push_back(
      inputBuffer("x", config.dtype, {uint64_t(kN), uint64_t(kH), uint64_t(kW), uint64_t(kC)}));
  bundle.params.push_back(outputBuffer(
      "out", config.dtype, {uint64_t(kTaps), uint64_t(kPixels), uint64_t(kC)}));
  return KernelModule{std::move(module), std::move(bundle), /*tileIR=*/true};
}
