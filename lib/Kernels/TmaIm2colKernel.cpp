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

#include "KernelBuilders.h"
#include "KernelTemplate.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace sinkattn;

namespace {
// NHWC input, tile and start pixel of the test.
constexpr int64_t kN = 2, kH = 10, kW = 12, kC = 64;
constexpr int64_t kPixels = 16, kTaps = 9;
constexpr int64_t kStartN = 1, kStartH = 2, kStartW = 4;

constexpr llvm::StringLiteral kTmaIm2colTemplate = R"mlir(
!tile = memref<16x64x@T@, #gpu.address_space<workgroup>>
module attributes {gpu.container_module} {
  gpu.module @tma_im2col {
    gpu.func @tma_im2col(%x: memref<2x10x12x64x@T@>, %out: memref<9x16x64x@T@>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c9 = arith.constant 9 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %c1024 = arith.constant 1024 : index
      %n0 = arith.constant @N0@ : index
      %h0 = arith.constant @H0@ : index
      %w0 = arith.constant @W0@ : index
      %tid = gpu.thread_id x
      %tile = memref.alloc() {alignment = 1024} : !tile
      scf.for %tap = %c0 to %c9 step %c1 {
        %dh = arith.divui %tap, %c3 : index
        %dw = arith.remui %tap, %c3 : index
        tile.im2col_copy %x[%n0, %h0, %w0, %c0], %tile offsets [%dh, %dw]
            {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>}
            : memref<2x10x12x64x@T@>, !tile
        scf.for %e = %tid to %c1024 step %c128 {
          %p = arith.divui %e, %c64 : index
          %c = arith.remui %e, %c64 : index
          %v = memref.load %tile[%p, %c] : !tile
          memref.store %v, %out[%tap, %p, %c] : memref<9x16x64x@T@>
        }
      }
      gpu.return
    }
  }
}
)mlir";
} // namespace

FailureOr<KernelModule> kernels::buildTmaIm2col(MLIRContext &context,
                                                const KernelConfig &config) {
  if (config.dtype != rt::DType::BF16 && config.dtype != rt::DType::F16)
    return emitError(UnknownLoc::get(&context))
           << "tma-im2col: --dtype " << rt::dtypeName(config.dtype)
           << " is not supported; use bf16 or fp16";
  OwningOpRef<ModuleOp> module = kernels::parseKernelTemplate(
      context, "tma-im2col", kTmaIm2colTemplate,
      {{"T", kernels::mlirTypeName(config.dtype)},
       {"N0", std::to_string(kStartN)},
       {"H0", std::to_string(kStartH)},
       {"W0", std::to_string(kStartW)}});
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
