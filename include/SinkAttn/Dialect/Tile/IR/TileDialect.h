//===- TileDialect.h - The tile dialect -------------------------*- C++ -*-===//
//
// Public header of the `tile` dialect: dialect, types, enums and ops.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_DIALECT_TILE_IR_TILEDIALECT_H
#define SINKATTN_DIALECT_TILE_IR_TILEDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "SinkAttn/Dialect/Tile/IR/TileOpsDialect.h.inc"
#include "SinkAttn/Dialect/Tile/IR/TileEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileOpsTypes.h.inc"

namespace sinkattn::tile {

/// The shared-memory state of mbarrier arrays: ops that arrive on, arm or wait
/// on a slot read and write it, so no pass reorders them across each other.
struct BarrierResource
    : public mlir::SideEffects::Resource::Base<BarrierResource> {
  llvm::StringRef getName() final { return "tile.barriers"; }
};

/// Shared memory one block may use on sm_90 after opting in (227 KiB,
/// cudaDevAttrMaxSharedMemoryPerBlockOptin on H100 and H200).
inline constexpr int64_t kMaxSharedMemoryBytes = 232448;

/// Bytes of one mbarrier object in shared memory.
inline constexpr int64_t kMBarrierBytes = 8;

/// The most slots a barrier array may have: as many mbarriers as fill a
/// block's shared memory.
inline constexpr int64_t kMaxBarrierSlots =
    kMaxSharedMemoryBytes / kMBarrierBytes;

/// The most stages a pipelined loop (`tile.num_stages`) may have: the range
/// of sinkattn-runner's --stages; each stage keeps a copy of the loop's
/// buffers, so the shared-memory limit bounds real kernels well below it.
inline constexpr int64_t kMaxNumStages = 64;

/// The most elements a fragment may have: 512 per thread of a warpgroup,
/// about what a thread's 255 registers hold as packed 16-bit pairs.
inline constexpr int64_t kMaxFragmentElements = 128 * 512;

/// Bytes of a statically shaped memref of integer, index or float elements,
/// or nullopt when the shape is dynamic, the elements are of another type or
/// the size does not fit in int64_t.
std::optional<int64_t> getStaticByteSize(mlir::MemRefType type);

/// True for memrefs in CUDA shared memory: `#gpu.address_space<workgroup>` or
/// the NVVM integer address space 3.
bool isSharedMemory(mlir::MemRefType type);

/// True for memrefs in global memory: no memory space, the integer spaces 0
/// or 1, or `#gpu.address_space<global>`.
bool isGlobalMemory(mlir::MemRefType type);

/// The memref `memref` is a view of, through every view-like op (subviews,
/// views, casts): an allocation, a function argument, ...
mlir::Value getViewRoot(mlir::Value memref);

/// The `memref.alloc` a shared tile is a view of (through subviews, views,
/// casts), or null when it is not an allocation of this function.
mlir::memref::AllocOp getSharedAllocation(mlir::Value tile);

/// Whether every view between `tile` and its allocation offsets dimension
/// `fromBack` (0: the innermost) by a multiple of `multiple` elements: each
/// is a memref.subview whose offset there is a constant multiple, or a
/// product (arith.muli) or sum (arith.addi) of such values. Other views
/// (casts, reshapes) and offsets it cannot see through answer false. Used
/// where a slice of a swizzled tile must start on a swizzle boundary: a
/// 64-column panel, or 8 rows.
bool hasAlignedViewOffsets(mlir::Value tile, unsigned fromBack,
                           int64_t multiple);

/// The swizzle span in bytes (0 or 128) of the allocation `tile` views, as
/// marked by tile-assign-layouts (`tile.swizzle`); 0 when unmarked.
int64_t getSwizzleBytes(mlir::Value tile);

/// Attributes of the `scf.if` regions tile-warp-specialize creates: the
/// role's name, its first thread and its thread count.
inline constexpr llvm::StringLiteral kThreadRoleAttrName = "tile.role";
inline constexpr llvm::StringLiteral kThreadBaseAttrName = "tile.thread_base";
inline constexpr llvm::StringLiteral kThreadCountAttrName = "tile.thread_count";

/// The threads that execute `op`: the innermost enclosing role region of a
/// warp-specialized kernel, or the whole block (base 0, count 0).
struct ThreadRole {
  int64_t base = 0;
  int64_t count = 0; ///< 0: every thread of the block
  /// Named barrier of the role (bar.sync id, count); 0 for the block.
  int64_t barrierId = 0;
};
ThreadRole getThreadRole(mlir::Operation *op);

/// The innermost role region (tile-warp-specialize's scf.if carrying the
/// role's thread base and count) around `op`, or null outside roles.
mlir::Operation *getRoleRegion(mlir::Operation *op);

/// A slice of a shared tile that only the executing warpgroup touches: a
/// memref.subview of `source` whose leading offset is tile.warpgroup_id
/// times `stride` (a constant) and whose leading size `rows` is at most
/// `stride`, so that no two warpgroups' slices overlap. Two accesses through
/// equal slices (the same source, stride and rows) touch only the executing
/// warpgroup's rows.
struct WarpgroupSlice {
  mlir::Value source;
  int64_t stride = 0;
  int64_t rows = 0;
  bool operator==(const WarpgroupSlice &other) const {
    return source == other.source && stride == other.stride &&
           rows == other.rows;
  }
};

/// The warpgroup slice among the views between `tile` and its root (the
/// nearest to `tile`), or none when every warpgroup may touch it.
std::optional<WarpgroupSlice> getWarpgroupSlice(mlir::Value tile);

/// Whether every row of `memref` provably starts `multiple`-element
/// aligned: its innermost stride is 1 and its offset and other strides are
/// multiples of `multiple`, by its static layout, or by the root it views
/// through casts and subviews that keep every dimension at unit strides
/// with provable innermost offsets (a root aligned statically, or a
/// function argument whose tile.stride_multiple declares it).
bool hasAlignedRows(mlir::Value memref, int64_t multiple);

/// Whether `value` is provably a multiple of `multiple`: a constant
/// multiple, or a product (arith.muli) with one, or a sum (arith.addi) of
/// such values.
bool isProvableMultipleOf(mlir::OpFoldResult value, int64_t multiple);

/// Columns of one panel of a 128-byte-swizzled tile of `elementBits`-bit
/// elements: its rows are 128 bytes (64 16-bit or 32 32-bit elements).
int64_t getSwizzlePanelColumns(int64_t elementBits);

/// Element offset of (row, col) in a 128-byte-swizzled shared tile of
/// `rows` rows of `elementBits`-bit elements (16 or 32), built at the
/// builder's position: panels of 128-byte rows (getSwizzlePanelColumns),
/// `rows` rows each, the 16-byte chunk index XOR-ed with row % 8 (the
/// TMA/wgmma 128B pattern). cp.async writes swizzled tiles through it;
/// tile.store's lowering uses the same pattern as an XOR of the plain
/// offset (storeSwizzled), which keeps a fragment's addresses cheap.
mlir::Value createSwizzled128Offset(mlir::OpBuilder &builder, mlir::Location loc,
                                    mlir::Value row, mlir::Value col,
                                    int64_t rows, int64_t elementBits);

/// The layout kind of a fragment type, if it has a #tile.layout.
std::optional<LayoutKind> getLayoutKind(FragmentType type);

/// Registers per thread of a fragment with a layout (elements, not packed
/// 32-bit registers): M*N/128 for accumulator and operand_a, M/32 for rows.
int64_t getRegistersPerThread(FragmentType type);

/// Why `kind` cannot distribute a fragment of `shape` and `elementType`, or
/// an empty string when it can.
std::string checkLayout(LayoutKind kind, llvm::ArrayRef<int64_t> shape,
                        mlir::Type elementType);

} // namespace sinkattn::tile

#define GET_OP_CLASSES
#include "SinkAttn/Dialect/Tile/IR/TileOps.h.inc"

namespace sinkattn::tile {
/// Why `store`, into (a view of) a shared allocation of the function, could
/// not write it under the 128-byte swizzle, or an empty string when it can:
/// a 2-D fragment of 16- or 32-bit elements into a row-major view that is a
/// whole tile of its allocation (of one stage, say) or rows of a one-panel
/// tile starting on a multiple of 8 rows, the tile whole 8-row periods of
/// whole panels, at trailing indices that are provable multiples of 8 (row)
/// and of the panel width (column) and leave the fragment inside the view.
/// tile-assign-layouts swizzles a TMA store's staging tile only when every
/// store into it passes, and the fragment lowering checks each store into a
/// swizzled tile with it.
std::string checkSwizzledStore(StoreOp store);
} // namespace sinkattn::tile

#endif // SINKATTN_DIALECT_TILE_IR_TILEDIALECT_H
