//===- IRBuilding.h - Helpers for building kernels as typed IR --*- C++ -*-===//
//
// Small helpers the kernel builders share so that each builder reads like
// its algorithm: index constants, the gpu.module + gpu.func skeleton of a
// kernel, shared-memory tile types, loops whose bodies are built in place
// (pipelined ones carrying tile.num_stages) and the warpgroup index.
//
// The loop and branch helpers build their bodies with the caller's builder:
// they move its insertion point into the new region for the duration of the
// callback and restore it afterwards, so a body is written as straight-line
// code at the point where it appears in the kernel.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_IRBUILDING_H
#define SINKATTN_LIB_KERNELS_IRBUILDING_H

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"
#include "SinkAttn/Runtime/DType.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace sinkattn::kernels {

/// The MLIR element type of a runtime dtype (bf16, f16, f32, ...).
mlir::Type getElementType(mlir::MLIRContext *context, rt::DType type);

/// A statically shaped memref in shared memory
/// (`#gpu.address_space<workgroup>`).
mlir::MemRefType getSharedMemRefType(llvm::ArrayRef<int64_t> shape,
                                     mlir::Type elementType);

/// `arith.constant value : index`.
mlir::Value constantIndex(mlir::ImplicitLocOpBuilder &b, int64_t value);

/// `lhs / rhs` of two indices below 2^31, divided as i32: the GPU has no
/// 64-bit divide (ptxas calls a routine for one).
mlir::Value divUI32(mlir::ImplicitLocOpBuilder &b, mlir::Value lhs,
                    mlir::Value rhs);

/// `arith.constant value : f32`.
mlir::Value constantF32(mlir::ImplicitLocOpBuilder &b, float value);

/// A shared-memory tile, `memref.alloc() {alignment = ...}` (no attribute
/// without an alignment).
mlir::Value allocShared(mlir::ImplicitLocOpBuilder &b, mlir::MemRefType type,
                        std::optional<int64_t> alignment = std::nullopt);

/// A kernel's module: `module attributes {gpu.container_module}` holding
/// `gpu.module @name` with one `gpu.func @name(...) kernel`.
struct KernelSkeleton {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::gpu::GPUFuncOp func;
};

/// Loads the dialects the kernels are built of (arith, gpu, memref, scf,
/// tile) and creates the skeleton of kernel `name` with arguments of
/// `argTypes` and, when given, `known_block_size` (which
/// tile-warp-specialize reads); sets `b` to build at the start of the
/// kernel's (empty) body, which the caller ends with `gpu.return`.
KernelSkeleton createKernel(mlir::ImplicitLocOpBuilder &b, llvm::StringRef name,
                            mlir::TypeRange argTypes,
                            llvm::ArrayRef<int32_t> knownBlockSize = {});

/// Verifies a built kernel module; a failure is reported as an internal
/// error of kernel `name`.
mlir::LogicalResult verifyKernel(KernelSkeleton &kernel, llvm::StringRef name);

/// `scf.for %iv = lower to upper step step` whose body `body(%iv)` builds
/// (the `scf.yield` is added).
mlir::scf::ForOp buildForLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value lower,
                              mlir::Value upper, mlir::Value step,
                              llvm::function_ref<void(mlir::Value iv)> body);

/// The loop-carried form: `body(%iv, iterArgs)` returns the values the
/// iteration yields; the loop's results are the last iteration's.
mlir::scf::ForOp buildForLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value lower,
                              mlir::Value upper, mlir::Value step,
                              mlir::ValueRange inits,
                              llvm::function_ref<llvm::SmallVector<mlir::Value>(
                                  mlir::Value iv, mlir::ValueRange iterArgs)>
                                  body);

/// buildForLoop marked as a software-pipelined loop of `stages` stages
/// (TileDialect::kNumStagesAttrName): the tile passes version its buffers
/// and barriers per stage.
mlir::scf::ForOp
buildPipelinedLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value lower,
                   mlir::Value upper, mlir::Value step, int64_t stages,
                   llvm::function_ref<void(mlir::Value iv)> body);
mlir::scf::ForOp
buildPipelinedLoop(mlir::ImplicitLocOpBuilder &b, mlir::Value lower,
                   mlir::Value upper, mlir::Value step, int64_t stages,
                   mlir::ValueRange inits,
                   llvm::function_ref<llvm::SmallVector<mlir::Value>(
                       mlir::Value iv, mlir::ValueRange iterArgs)>
                       body);

/// `scf.if %condition` without results or else branch, its body built by
/// `body()`.
mlir::scf::IfOp buildIfThen(mlir::ImplicitLocOpBuilder &b,
                            mlir::Value condition,
                            llvm::function_ref<void()> body);

/// `scf.if %condition` with both branches, each built by its callback and
/// yielding the values it returns (none: the `scf.yield` is implicit); the
/// op's results have `resultTypes`.
mlir::scf::IfOp buildIfThenElse(
    mlir::ImplicitLocOpBuilder &b, mlir::TypeRange resultTypes,
    mlir::Value condition,
    llvm::function_ref<llvm::SmallVector<mlir::Value>()> thenBody,
    llvm::function_ref<llvm::SmallVector<mlir::Value>()> elseBody);

/// `tile.map (inputs) -> resultType` whose body `body(indices, elements)`
/// computes one element from the element's indices (one per dimension of
/// `resultType`) and the inputs' elements there.
mlir::Value buildMap(mlir::ImplicitLocOpBuilder &b, mlir::Type resultType,
                     mlir::ValueRange inputs,
                     llvm::function_ref<mlir::Value(mlir::ValueRange indices,
                                                    mlir::ValueRange elements)>
                         body);

/// `tile.copy %global[indices], %shared`: a synchronous tile load (TMA
/// unless `engine` says otherwise).
mlir::Operation *buildLoadTile(mlir::ImplicitLocOpBuilder &b,
                               mlir::Value global, mlir::ValueRange indices,
                               mlir::Value shared,
                               std::optional<tile::CopyEngine> engine = {});

/// `tile.copy %shared, %global[indices]`: a synchronous tile store (TMA
/// unless `engine` says otherwise).
mlir::Operation *buildStoreTile(mlir::ImplicitLocOpBuilder &b,
                                mlir::Value shared, mlir::Value global,
                                mlir::ValueRange indices,
                                std::optional<tile::CopyEngine> engine = {});

/// `memref.subview %source[offsets] [sizes] [1, ...]`: a tile of `source`
/// with unit strides (its strided result type inferred).
mlir::Value buildSubView(mlir::ImplicitLocOpBuilder &b, mlir::Value source,
                         llvm::ArrayRef<mlir::OpFoldResult> offsets,
                         llvm::ArrayRef<int64_t> sizes);

/// The subview with sizes that may be dynamic; its result type inferred, or
/// `resultType` where the view drops unit dimensions.
mlir::Value buildSubView(mlir::ImplicitLocOpBuilder &b, mlir::Value source,
                         llvm::ArrayRef<mlir::OpFoldResult> offsets,
                         llvm::ArrayRef<mlir::OpFoldResult> sizes,
                         mlir::MemRefType resultType = {});

/// A shared-memory view type with `strides` and a dynamic offset (what a
/// rank-reducing subview of a shared tile gives).
mlir::MemRefType getSharedViewType(llvm::ArrayRef<int64_t> shape,
                                   mlir::Type elementType,
                                   llvm::ArrayRef<int64_t> strides);

/// The result of the async `tile.gemm` `async` once at most `pending` gemms
/// are in flight (`tile.gemm_wait`).
mlir::Value buildGemmWait(mlir::ImplicitLocOpBuilder &b, mlir::Value async,
                          int64_t pending);

/// The index of the executing thread's warpgroup (thread id x / 128) as
/// lane 0's value broadcast over the warp (`gpu.shuffle idx`, as CUTLASS's
/// canonical_warp_group_idx does): ptxas then knows it is the same in every
/// lane and keeps what derives from it (the wgmma descriptors of a
/// warpgroup's tile views) in uniform registers; computed per lane, the
/// split backward's descriptors were moved from vector to uniform registers
/// before each wgmma.
mlir::Value buildWarpgroupIndex(mlir::ImplicitLocOpBuilder &b);

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_IRBUILDING_H
