//===- KernelBuilders.h - The individual kernel builders --------*- C++ -*-===//

#ifndef SINKATTN_LIB_KERNELS_KERNELBUILDERS_H
#define SINKATTN_LIB_KERNELS_KERNELBUILDERS_H

#include "SinkAttn/Kernels/Kernels.h"

namespace sinkattn::kernels {

mlir::FailureOr<KernelModule> buildGemm(mlir::MLIRContext &context,
                                        const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaCopy(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaStream(mlir::MLIRContext &context,
                                             const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaIm2col(mlir::MLIRContext &context,
                                             const KernelConfig &config);

/// Bundle parameters. Shapes are outermost first.
rt::BundleParam inputBuffer(std::string name, rt::DType dtype,
                            std::vector<uint64_t> shape, bool kernelArg = true);
rt::BundleParam outputBuffer(std::string name, rt::DType dtype,
                             std::vector<uint64_t> shape, bool kernelArg = true);
/// A zero-filling tiled map of a dense row-major buffer (128-byte swizzle
/// unless told otherwise).
rt::BundleParam tensorMap(std::string name, std::string buffer,
                          rt::DType dtype, std::vector<uint64_t> shape,
                          std::vector<uint32_t> box,
                          rt::TensorMapSwizzle swizzle = rt::TensorMapSwizzle::B128);

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_KERNELBUILDERS_H
