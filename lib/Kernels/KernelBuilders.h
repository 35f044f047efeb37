//===- KernelBuilders.h - The individual kernel builders --------*- C++ -*-===//

#ifndef SINKATTN_LIB_KERNELS_KERNELBUILDERS_H
#define SINKATTN_LIB_KERNELS_KERNELBUILDERS_H

#include "SinkAttn/Kernels/Kernels.h"

namespace sinkattn::kernels {

mlir::FailureOr<KernelModule> buildGemm(mlir::MLIRContext &context,
                                        const KernelConfig &config);
mlir::FailureOr<KernelModule> buildSinkFwd(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildSinkBwd(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaCopy(mlir::MLIRContext &context,
                                           const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaStream(mlir::MLIRContext &context,
                                             const KernelConfig &config);
mlir::FailureOr<KernelModule> buildTmaIm2col(mlir::MLIRContext &context,
                                             const KernelConfig &config);

/// The fp32 SIMT reference of `sink-fwd` (gpu/scf/arith/memref only, no
/// tile ops; ABI and launch shape in SinkAttn/Runtime/AttentionReference.h)
/// for the config's batch, heads, kvHeads, seqQ, seqKv, headDim, window and
/// dtype, scale 1/sqrt(headDim). Unsupported values are reported through
/// the context's diagnostics.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildSinkFwdReference(mlir::MLIRContext &context, const KernelConfig &config);
/// buildSinkFwdReference() compiled to PTX for `target` (bare pointers
/// whatever `target` says): what goes into the bundle's reference with
/// entry rt::kSinkFwdReferenceEntry.
mlir::FailureOr<std::string>
compileSinkFwdReferencePTX(mlir::MLIRContext &context,
                           const KernelConfig &config,
                           PTXTargetOptions target);

/// The attention problem of a sink-fwd config (scale 1/sqrt(headDim); with
/// varlen the offsets of its lengths). Not validated.
rt::SinkAttentionShape sinkAttentionShape(const KernelConfig &config);

/// The fp32 SIMT reference of the attention-sink backward (three kernels,
/// ABI and launches in SinkAttn/Runtime/AttentionReference.h); with
/// run-time shapes (varlen only) its sizes and parameters are arguments.
mlir::FailureOr<mlir::OwningOpRef<mlir::ModuleOp>>
buildSinkBwdReference(mlir::MLIRContext &context, const KernelConfig &config);
/// buildSinkBwdReference() compiled to PTX for `target` (bare pointers
/// unless run-time shapes, whatever `target` says): the bundle's reference,
/// one PTX module with the three entries.
mlir::FailureOr<std::string>
compileSinkBwdReferencePTX(mlir::MLIRContext &context,
                           const KernelConfig &config, PTXTargetOptions target);

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
