//===- KernelTemplate.h - Kernels written as MLIR text ----------*- C++ -*-===//
//
// The first kernels are written in upstream gpu/nvgpu/nvvm ops as MLIR text
// with @NAME@ placeholders, parsed after substitution. (Kernels that go
// through the tile dialect are built with OpBuilder instead.)
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_KERNELTEMPLATE_H
#define SINKATTN_LIB_KERNELS_KERNELTEMPLATE_H

#include "SinkAttn/Runtime/DType.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>

namespace sinkattn::kernels {

/// Replaces every @KEY@ of `text` by its value and parses the result. A
/// placeholder without a value is a programming error (reported, fails).
mlir::OwningOpRef<mlir::ModuleOp>
parseKernelTemplate(mlir::MLIRContext &context, llvm::StringRef name,
                    llvm::StringRef text,
                    const std::map<std::string, std::string> &values);

/// Replaces every occurrence of `from` in `text` by `to` (for kernel text
/// assembled from pieces before parseKernelTemplate); returns how many.
int replaceAll(std::string &text, llvm::StringRef from, llvm::StringRef to);

/// `text` with each SSA name of `names` (whole names: "%r" is not the start
/// of "%row") renamed to name + `suffix`: one copy of a piece of kernel text
/// per unrolled step.
std::string withSuffix(std::string text, llvm::ArrayRef<llvm::StringRef> names,
                       llvm::StringRef suffix);

/// The MLIR spelling of a floating-point element type ("bf16", "f16", ...).
std::string mlirTypeName(rt::DType type);

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_KERNELTEMPLATE_H
