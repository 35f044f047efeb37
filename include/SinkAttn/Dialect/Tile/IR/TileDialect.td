//===- TileDialect.td - The tile dialect -------------------*- tablegen -*-===//
//
// The `tile` dialect: pipelined copies, mbarriers and register tiles for
// attention kernels on NVIDIA Hopper.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_DIALECT_TILE_IR_TILEDIALECT_TD
#define SINKATTN_DIALECT_TILE_IR_TILEDIALECT_TD

include "mlir/IR/OpBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::sinkattn::tile";
  let summary = "Pipelined copies, mbarriers and register tiles for Hopper kernels";
  let description = [{
    The `tile` dialect is the level at which SinkAttn writes attention kernels.
    It sits between a kernel description and the upstream `nvgpu`/`nvvm`
    dialects and models what a Hopper kernel schedules:

    * **Memory.** Global tensors and shared-memory tiles are `memref`s; shared
      tiles carry `#gpu.address_space<workgroup>` (or the NVVM integer space 3).
    * **Barriers.** `tile.alloc_barrier` creates an array of mbarriers in
      shared memory, each slot with its own arrive count
      (`!tile.barriers<N>`). `tile.mbarrier_arrive`, `tile.mbarrier_expect_tx`
      and `tile.mbarrier_wait_parity` address one slot.
    * **Copies.** `tile.copy` is a synchronous copy between global and shared
      memory (the compiler chooses TMA, cp.async or SIMT and inserts the
      barriers); `tile.tma_copy` is the fire-and-forget form that only arms
      a user-managed barrier (expect_tx) and issues the TMA load.
    * **Register tiles.** `!tile.fragment<MxNxT>` values live in registers,
      distributed over the threads of a warpgroup once a layout is assigned.
      `tile.gemm`, `tile.fill`, `tile.reduce`, `tile.map` and `tile.cast`
      compute on them with value semantics.

    Pipelined loops are `scf.for` loops carrying a `tile.num_stages`
    attribute, an integer from 1 to 64 (the verifier checks it: the passes
    build per-stage barriers, buffers and pipeline steps from it).

    Sizes are bounded where they are verified, so that no input makes the
    compiler allocate or loop without limit: a barrier array has at most
    29056 slots, a fragment at most 65536 elements, and a statically shaped
    shared tile that a tile op moves or reads fits in the 232448 bytes of
    shared memory a block may use on sm_90 (`convert-tile-to-nvgpu` refuses
    a kernel whose shared memory as a whole does not).

    A shared `memref.alloc` marked `tile.mbarrier_ordered` (a unit
    attribute) is one whose accesses the kernel orders itself, with its own
    `tile.mbarrier_arrive` / `tile.mbarrier_wait_parity` handshakes (for
    example a buffer two warpgroups fill and drain in rotation without
    meeting): `tile-thread-sync` places no barriers for it. The verifier
    accepts it only on a `memref.alloc` in shared memory.

    A function's memref argument marked `tile.stride_multiple = N` (a
    positive integer) is one whose offset and strides but the innermost, in
    elements, the caller promises are multiples of N, static or not: for
    example token rows a launcher has checked to be 16 bytes apart. The
    lowering reads it to prove a run-time strided access aligned (column
    pairs as one word, 16-byte vector stores). The verifier accepts it only
    on a strided memref argument whose static strides and offset are such
    multiples.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::memref::MemRefDialect"
  ];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that marks an `scf.for` as a
    /// software-pipelined loop with the given number of stages.
    static constexpr ::llvm::StringLiteral kNumStagesAttrName = "tile.num_stages";
    /// Name of the discardable attribute on a shared-memory `memref.alloc`
    /// giving the byte span of its TMA/wgmma swizzle (128): the tile is
    /// stored as panels of 128-byte rows, each panel swizzled.
    static constexpr ::llvm::StringLiteral kSwizzleAttrName = "tile.swizzle";
    /// Unit attribute on a shared-memory `memref.alloc` whose accesses the
    /// kernel orders with its own mbarriers: tile-thread-sync leaves it out.
    static constexpr ::llvm::StringLiteral kMbarrierOrderedAttrName =
        "tile.mbarrier_ordered";
    /// Name of the discardable attribute on a function's memref argument
    /// promising that its offset and its strides but the innermost are
    /// multiples of the given number of elements.
    static constexpr ::llvm::StringLiteral kStrideMultipleAttrName =
        "tile.stride_multiple";
    /// Unit attribute tile-warp-specialize leaves on the kernels it split.
    static constexpr ::llvm::StringLiteral kWarpSpecializedAttrName =
        "tile.warp_specialized";
  }];
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

#endif // SINKATTN_DIALECT_TILE_IR_TILEDIALECT_TD
