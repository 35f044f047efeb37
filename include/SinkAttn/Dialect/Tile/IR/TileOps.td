//===- TileOps.td - Operations of the tile dialect ---------*- tablegen -*-===//

#ifndef SINKATTN_DIALECT_TILE_IR_TILEOPS_TD
#define SINKATTN_DIALECT_TILE_IR_TILEOPS_TD

include "SinkAttn/Dialect/Tile/IR/TileDialect.td"
include "SinkAttn/Dialect/Tile/IR/TileAttrs.td"
include "SinkAttn/Dialect/Tile/IR/TileEnums.td"
include "SinkAttn/Dialect/Tile/IR/TileTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// 0 (row-major, no swizzle) or 128 (the 128-byte TMA/wgmma swizzle).
def Tile_SwizzleBytes : ConfinedAttr<I64Attr, [IntIsOneOf<[0, 128]>]>;

def Tile_Fragment : Type<CPred<"::llvm::isa<::sinkattn::tile::FragmentType>($_self)">,
    "register tile (!tile.fragment)", "::sinkattn::tile::FragmentType">;
def Tile_Barriers : Type<CPred<"::llvm::isa<::sinkattn::tile::BarrierArrayType>($_self)">,
    "mbarrier array (!tile.barriers)", "::sinkattn::tile::BarrierArrayType">;

// The barrier array lives in shared memory; ops on one slot read and write it.
def Tile_BarrierResource : Resource<"::sinkattn::tile::BarrierResource">;

//===----------------------------------------------------------------------===//
// Barriers
//===----------------------------------------------------------------------===//

def Tile_AllocBarrierOp : Tile_Op<"alloc_barrier"> {
  let summary = "allocate an array of mbarriers with per-slot arrive counts";
  let description = [{
    Allocates `N` mbarriers in shared memory. `arrive_counts[i]` is the number
    of arrivals that complete a phase of slot `i` (1 to 2^20-1, the hardware
    limit). Initialization (one elected thread inits every slot, then
    `fence.mbarrier_init`, then a block-wide sync) is inserted by the barrier
    lowering, which runs after multi-versioning so that it sees expanded
    arrays.

    Example:

    ```mlir
    // Slot 0 completes on one (TMA) arrival, slot 1 on 128 thread arrivals.
    %bars = tile.alloc_barrier [1, 128] : !tile.barriers<2>
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$arrive_counts);
  let results = (outs Res<Tile_Barriers, "", [MemAlloc<Tile_BarrierResource>]>:$barriers);
  let assemblyFormat = "$arrive_counts attr-dict `:` qualified(type($barriers))";
  let hasVerifier = 1;
}

class Tile_BarrierSlotOp<string mnemonic, list<Trait> traits = []>
    : Tile_Op<mnemonic, !listconcat(traits,
        [MemoryEffects<[MemRead<Tile_BarrierResource>, MemWrite<Tile_BarrierResource>]>])> {
  let hasVerifier = 1;
}

def Tile_MBarrierArriveOp : Tile_BarrierSlotOp<"mbarrier_arrive"> {
  let summary = "arrive on one mbarrier slot";
  let description = [{
    Each executing thread arrives `count` times (default 1) on slot `index` of
    the barrier array. The barrier's phase completes once the slot's arrive
    count is reached and all expected transaction bytes have landed.

    ```mlir
    tile.mbarrier_arrive %bars[%i] : !tile.barriers<2>
    tile.mbarrier_arrive %bars[%i] count 2 : !tile.barriers<2>
    ```
  }];
  let arguments = (ins Tile_Barriers:$barriers, Index:$index,
                       DefaultValuedAttr<I64Attr, "1">:$count);
  let assemblyFormat = [{
    $barriers `[` $index `]` (`count` $count^)? attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_MBarrierExpectTxOp : Tile_BarrierSlotOp<"mbarrier_expect_tx"> {
  let summary = "add expected transaction bytes to one mbarrier slot";
  let description = [{
    Tells slot `index` to expect `bytes` more bytes of asynchronous (TMA)
    transactions in its current phase. It does not arrive. The byte count is
    limited by the hardware transaction counter to 2^20-1.

    ```mlir
    tile.mbarrier_expect_tx %bars[%c0], 16384 : !tile.barriers<2>
    ```
  }];
  let arguments = (ins Tile_Barriers:$barriers, Index:$index, I64Attr:$bytes);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $bytes attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_MBarrierWaitParityOp : Tile_BarrierSlotOp<"mbarrier_wait_parity"> {
  let summary = "wait until the phase of the given parity has completed";
  let description = [{
    Blocks the executing threads until the phase of slot `index` whose parity
    is `parity` (0 or 1) has completed. A fresh mbarrier is in phase 0, so
    waiting for parity 1 on it returns at once; producers waiting on "empty"
    barriers rely on that to run ahead for the first stages.

    ```mlir
    tile.mbarrier_wait_parity %bars[%slot], %parity : !tile.barriers<2>
    ```
  }];
  let arguments = (ins Tile_Barriers:$barriers, Index:$index, Index:$parity);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $parity attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_MBarrierInitOp : Tile_BarrierSlotOp<"mbarrier_init"> {
  let summary = "initialize one mbarrier slot with its arrive count";
  let description = [{
    Initializes slot `index` to phase 0 with `count` expected arrivals.
    Inserted by `tile-lower-barriers` (one elected thread initializes every
    slot, then `nvvm.fence.mbarrier.init` and a block-wide barrier); users
    allocate with `tile.alloc_barrier` instead of writing it.

    ```mlir
    tile.mbarrier_init %bars[%c1], 128 : !tile.barriers<2>
    ```
  }];
  let arguments = (ins Tile_Barriers:$barriers, Index:$index, I64Attr:$count);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $count attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_MBarrierArriveExpectTxOp : Tile_BarrierSlotOp<"mbarrier_arrive_expect_tx"> {
  let summary = "arrive on one slot and add expected transaction bytes";
  let description = [{
    `mbarrier.arrive.expect_tx`: adds `bytes` to the slot's expected
    transactions and arrives once, atomically. `tile-fuse-arrive-expect-tx`
    forms it from an `expect_tx` followed by an `arrive` on the same slot.

    ```mlir
    tile.mbarrier_arrive_expect_tx %bars[%s], 32768 : !tile.barriers<2>
    ```
  }];
  let arguments = (ins Tile_Barriers:$barriers, Index:$index, I64Attr:$bytes);
  let assemblyFormat = [{
    $barriers `[` $index `]` `,` $bytes attr-dict `:` qualified(type($barriers))
  }];
}

//===----------------------------------------------------------------------===//
// Threads
//===----------------------------------------------------------------------===//

def Tile_WarpgroupIdOp : Tile_Op<"warpgroup_id", [Pure]> {
  let summary = "the executing warpgroup's index, uniform across its warps";
  let description = [{
    `thread_id.x / 128` in the executing code's thread numbering: the block's
    threads, or inside a role region of `tile-warp-specialize` (which
    renumbers a role's threads from 0) the role's. The value is the same in
    every thread of a warpgroup, and the lowering (`convert-tile-to-nvgpu`)
    makes that visible to ptxas by a warp shuffle from lane 0.

    Shared tiles sliced by it are private to a warpgroup: a `memref.subview`
    whose leading offset is `tile.warpgroup_id` times a constant at least
    the view's leading size gives each warpgroup rows no other warpgroup's
    slice overlaps. `tile-thread-sync` then orders accesses through that
    slice with the warpgroup's own named barrier (128 threads) instead of
    one over the whole role, and `tile-lower-copies` lets the warpgroup's
    first thread store the slice by TMA on its own, so the warpgroups of a
    role need not meet.

    ```mlir
    %wg = tile.warpgroup_id : index
    %row = arith.muli %wg, %c64 : index
    %mine = memref.subview %sdS[%row, 0] [64, 64] [1, 1] : memref<128x64xbf16, 3> to memref<64x64xbf16, strided<[64, 1], offset: ?>, 3>
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Copies
//===----------------------------------------------------------------------===//

def Tile_CopyOp : Tile_Op<"copy", [AttrSizedOperandSegments]> {
  let summary = "synchronous tile copy between global and shared memory";
  let description = [{
    Copies one tile between a global tensor and a shared-memory buffer. The
    global side is the whole tensor, indexed by the element coordinates of
    the tile's first element (one index per dimension); the shared side is a
    statically shaped tile (slice a larger buffer with `memref.subview`) and
    takes no indices; it fits in the 232448 bytes of shared memory a block
    may use. The tile's shape lines up with the trailing dimensions
    of the global tensor; leading global dimensions are copied one at a time.
    Elements outside the global tensor read as zero and are not written.

    The copy is synchronous: when it returns, every thread of the block sees
    the data. Loads use TMA unless `engine = #tile.engine<cp_async>` asks
    for `cp.async` (every thread copies 16-byte chunks; the tile's innermost
    dimension must span a multiple of 16 bytes). In a pipelined loop
    (`tile.num_stages`) the compiler overlaps the loads with computation
    (`tile-warp-specialize`, `tile-software-pipeline`). Stores use TMA,
    whose bounds are the whole tensor's, unless `engine =
    #tile.engine<vector>` asks for the role's threads to move 16-byte
    vectors (shared loads, global stores): then the bounds are the global
    view's, so that a store into a view that ends inside a tensor (one
    sequence of a packed batch) writes nothing past the view. Such a store
    needs the view's rows 16-byte aligned, provably (static strides and
    offsets, `tile.stride_multiple`, or subview offsets that are multiples)
    and whole 16-byte chunks in its innermost dimension, and reads the tile
    as a whole role (not from a warpgroup's slice). A store with `add` adds
    the tile into the tensor instead (TMA's
    element-wise reduce-add, f32 only), so that many blocks can accumulate
    one tensor; the order of their additions, and so the rounding, varies
    from run to run. A store may sit in a pipelined loop's body if the loop
    does not load the tile it stores.

    A store with `pending = N` does not wait for its own TMA to read the
    tile: its issuing thread waits only until every store its role issued
    before the last N has read its tile (`cp.async.bulk.wait_group.read
    N`), and the other threads do not wait for that thread: the barrier
    that orders the wait before the next write to the tile is placed by
    `tile-thread-sync`, which reuses one the code has anyway. The last N
    tiles may still be being read, so the code must not write them until
    then: with N = 1, a loop alternates two tiles and the wait falls on the
    store of the iteration before, long done. It must sit in an `scf.for`;
    after the outermost one the lowering waits for every store to have
    read its tile.

    ```mlir
    // Load rows [%m, %m+128) and columns [%k, %k+64) of A into shared memory.
    tile.copy %A[%m, %k], %sA : memref<4096x4096xbf16>, memref<128x64xbf16, #gpu.address_space<workgroup>>
    // Store a shared tile of O into global memory.
    tile.copy %sO, %O[%b, %h, %m, %c0] : memref<128x64xbf16, 3>, memref<?x?x?x64xbf16>
    // Store one sequence's rows of a packed batch, clipped at its end.
    tile.copy %sO, %Oseq[%m, %c0] {engine = #tile.engine<vector>} : memref<128x64xbf16, 3>, memref<?x64xbf16, strided<[?, 1], offset: ?>>
    // Load with cp.async instead of TMA.
    tile.copy %A[%m, %k], %sA {engine = #tile.engine<cp_async>} : memref<4096x4096xbf16>, memref<128x64xbf16, 3>
    // Add a shared f32 tile into dQ.
    tile.copy %sdQ, %dQ[%b, %h, %m, %c0] {add} : memref<64x128xf32, 3>, memref<2x16x1000x128xf32>
    // The same, not waiting for the TMA to read %sdQ (a loop alternating
    // two tiles).
    tile.copy %sdQ, %dQ[%b, %h, %m, %c0] {add, pending = 1} : memref<64x128xf32, 3>, memref<2x16x1000x128xf32>
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "copy source", [MemRead]>:$source,
    Variadic<Index>:$sourceIndices,
    Arg<AnyMemRef, "copy destination", [MemRead, MemWrite]>:$dest,
    Variadic<Index>:$destIndices,
    OptionalAttr<Tile_CopyEngineAttr>:$engine,
    UnitAttr:$add,
    OptionalAttr<ConfinedAttr<I64Attr, [IntMinValue<1>]>>:$pending);
  let extraClassDeclaration = [{
    /// The engine of a copy: `engine`, or TMA when unset.
    ::sinkattn::tile::CopyEngine getCopyEngine() {
      return getEngine().value_or(::sinkattn::tile::CopyEngine::tma);
    }
  }];
  let assemblyFormat = [{
    $source (`[` $sourceIndices^ `]`)? `,` $dest (`[` $destIndices^ `]`)?
    attr-dict `:` type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_TmaCopyOp : Tile_Op<"tma_copy", [
    MemoryEffects<[MemRead<Tile_BarrierResource>, MemWrite<Tile_BarrierResource>]>]> {
  let summary = "fire-and-forget TMA load into shared memory on a user barrier";
  let description = [{
    Issues a TMA load of one tile from a global tensor into shared memory and
    adds the tile's bytes to the expected transactions of barrier slot
    `barriers[barrierIndex]` (expect_tx + TMA load, executed by one elected
    thread). It neither arrives nor waits: the user arrives (counting that
    arrival in the slot's arrive count) and waits with
    `tile.mbarrier_wait_parity`. Several `tma_copy`s may share one arrival.

    The source must be a global memref indexed by element coordinates, the
    destination a statically shaped shared-memory tile; the barrier is
    required.

    ```mlir
    tile.tma_copy %K[%b, %h, %n, %c0], %sK, barrier(%bars[%stage])
        : memref<?x?x?x128xbf16>, memref<128x128xbf16, 3>, !tile.barriers<2>
    tile.mbarrier_arrive %bars[%stage] : !tile.barriers<2>
    tile.mbarrier_wait_parity %bars[%stage], %parity : !tile.barriers<2>
    ```
  }];
  // The barrier comes first so that an op built without one (generic form)
  // is rejected by name: "operand #0 must be mbarrier array".
  let arguments = (ins
    Tile_Barriers:$barriers,
    Index:$barrierIndex,
    Arg<AnyMemRef, "global source", [MemRead]>:$source,
    Variadic<Index>:$sourceIndices,
    Arg<AnyMemRef, "shared destination", [MemWrite]>:$dest);
  let assemblyFormat = [{
    $source `[` $sourceIndices `]` `,` $dest `,` `barrier` `(` $barriers `[` $barrierIndex `]` `)`
    attr-dict `:` type($source) `,` type($dest) `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def Tile_CpAsyncOp : Tile_Op<"cp_async"> {
  let summary = "issue the executing role's share of a cp.async tile load";
  let description = [{
    Starts an asynchronous SIMT copy of one tile from a global tensor into
    shared memory: the threads of the executing role (the whole block, or a
    `tile-warp-specialize` role region) split the tile into 16-byte chunks
    and each issues `cp.async.cg.shared.global` for its chunks. Nothing
    waits: completion is tracked per thread with `cp.async` commit groups
    (`nvvm.cp.async.commit.group` / `nvvm.cp.async.wait.group N`) or by
    `tile.cp_async_arrive` on an mbarrier. Every thread of the role must
    execute it. Chunks outside the global tensor are zero-filled, as TMA
    does.

    The source is a global memref indexed by the element coordinates of the
    tile's first element; the destination a statically shaped shared tile
    whose innermost dimension spans a multiple of 16 bytes. A destination in
    the 128-byte swizzled layout (`tile.swizzle = 128`) is written in that
    layout. `tile-lower-copies` lowers it to `nvgpu.device_async_copy`.

    ```mlir
    tile.cp_async %A[%m, %k], %sA : memref<4096x4096xbf16>, memref<128x64xbf16, 3>
    nvvm.cp.async.commit.group
    nvvm.cp.async.wait.group 0
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "global source", [MemRead]>:$source,
    Variadic<Index>:$sourceIndices,
    Arg<AnyMemRef, "shared destination", [MemWrite]>:$dest);
  let assemblyFormat = [{
    $source `[` $sourceIndices `]` `,` $dest attr-dict `:` type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_CpAsyncArriveOp : Tile_BarrierSlotOp<"cp_async_arrive"> {
  let summary = "arrive on a barrier slot once the thread's cp.async copies land";
  let description = [{
    `cp.async.mbarrier.arrive.noinc`: when every `cp.async` the executing
    thread issued before it has completed, the thread arrives once on slot
    `index`. The arrival counts toward the slot's arrive count (`noinc`), so
    a slot that each of `P` copying threads arrives on this way has arrive
    count `P`; a TMA load on the same slot then only adds expected bytes
    (`tile.mbarrier_expect_tx`) and must not arrive again.

    ```mlir
    tile.cp_async %K[%n, %c0], %sK : memref<?x128xbf16>, memref<64x128xbf16, 3>
    tile.cp_async_arrive %full[%stage] : !tile.barriers<2>
    ```
  }];
  let arguments = (ins Tile_Barriers:$barriers, Index:$index);
  let assemblyFormat = [{
    $barriers `[` $index `]` attr-dict `:` qualified(type($barriers))
  }];
}

def Tile_TmaLoadOp : Tile_Op<"tma_load", [
    MemoryEffects<[MemRead<Tile_BarrierResource>, MemWrite<Tile_BarrierResource>]>]> {
  let summary = "issue one TMA tile load (executing thread only)";
  let description = [{
    The low-level form `tile.tma_copy` and `tile.copy` lower to: the
    executing thread issues a TMA load of the tile into shared memory that
    completes its bytes on the barrier slot. It neither arms the barrier
    (expect_tx) nor arrives; lowering passes put it under a single-thread
    guard next to the `expect_tx`. Operands are as for `tile.tma_copy`.

    `swizzle = 128` (set by `tile-lower-copies` for tiles that
    `tile-assign-layouts` marked) stores the tile in the 128-byte swizzled
    layout wgmma reads: panels of 128-byte rows, one TMA box per panel.

    ```mlir
    tile.tma_load %A[%m, %k], %sA, barrier(%bars[%s])
        : memref<4096x4096xbf16>, memref<128x64xbf16, 3>, !tile.barriers<2>
    ```
  }];
  let arguments = (ins
    Tile_Barriers:$barriers,
    Index:$barrierIndex,
    Arg<AnyMemRef, "global source", [MemRead]>:$source,
    Variadic<Index>:$sourceIndices,
    Arg<AnyMemRef, "shared destination", [MemWrite]>:$dest,
    DefaultValuedAttr<Tile_SwizzleBytes, "0">:$swizzle);
  let assemblyFormat = [{
    $source `[` $sourceIndices `]` `,` $dest `,` `barrier` `(` $barriers `[` $barrierIndex `]` `)`
    attr-dict `:` type($source) `,` type($dest) `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

def Tile_TmaStoreOp : Tile_Op<"tma_store"> {
  let summary = "issue one TMA tile store (executing thread only)";
  let description = [{
    The executing thread issues a TMA store of a shared-memory tile into a
    global tensor at the given element coordinates, as part of its current
    bulk-async group. Completion is awaited with
    `nvvm.cp.async.bulk.commit.group` / `nvvm.cp.async.bulk.wait_group`;
    `tile.copy` shared → global lowers to that sequence under a
    single-thread guard. With `add` it is a TMA reduce-add
    (`cp.reduce.async.bulk.tensor ... .add`) of an f32 tile.

    ```mlir
    tile.tma_store %sO, %O[%m, %c0] : memref<64x64xbf16, 3>, memref<4096x64xbf16>
    tile.tma_store %sdQ, %dQ[%m, %c0] {add} : memref<64x64xf32, 3>, memref<4096x64xf32>
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "shared source", [MemRead]>:$source,
    Arg<AnyMemRef, "global destination", [MemRead, MemWrite]>:$dest,
    Variadic<Index>:$destIndices,
    DefaultValuedAttr<Tile_SwizzleBytes, "0">:$swizzle,
    UnitAttr:$add);
  let assemblyFormat = [{
    $source `,` $dest `[` $destIndices `]` attr-dict `:` type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_Im2colCopyOp : Tile_Op<"im2col_copy", [AttrSizedOperandSegments]> {
  let summary = "synchronous im2col tile load (NHWC convolution) into shared memory";
  let description = [{
    Loads one im2col tile of an NHWC tensor with TMA in im2col mode: row `p`
    of the `PxC` shared tile holds `C` channels (from channel `c`) of the
    `p`-th pixel of a traversal that starts at pixel `(n, h, w)` and runs
    along W, then H, then N, inside the bounding box
    `[lower, dim - 1 + upper]` of each spatial dimension; each traversed
    pixel is read at `(h + dh, w + dw)` for the kernel tap offsets
    `offsets [dh, dw]`, and reads outside the tensor give zero (padding).

    Like `tile.copy` it is synchronous and gets a barrier of its own when
    lowered (`tile-lower-copies`).

    ```mlir
    tile.im2col_copy %x[%n, %h, %w, %c0], %tile offsets [%dh, %dw]
        {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>}
        : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>
    ```
  }];
  let arguments = (ins
    Arg<AnyMemRef, "NHWC source", [MemRead]>:$source,
    Variadic<Index>:$sourceIndices,
    Arg<AnyMemRef, "shared destination", [MemWrite]>:$dest,
    Variadic<Index>:$offsets,
    DenseI64ArrayAttr:$lower,
    DenseI64ArrayAttr:$upper);
  let assemblyFormat = [{
    $source `[` $sourceIndices `]` `,` $dest `offsets` `[` $offsets `]`
    attr-dict `:` type($source) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_TmaIm2colLoadOp : Tile_Op<"tma_im2col_load", [AttrSizedOperandSegments,
    MemoryEffects<[MemRead<Tile_BarrierResource>, MemWrite<Tile_BarrierResource>]>]> {
  let summary = "issue one TMA im2col load (executing thread only)";
  let description = [{
    What `tile.im2col_copy` lowers to under a single-thread guard: the TMA
    im2col load of the tile, completing its bytes on the barrier slot. No
    expect_tx, no arrive.

    ```mlir
    tile.tma_im2col_load %x[%n, %h, %w, %c0], %tile offsets [%dh, %dw],
        barrier(%bars[%s]) {lower = array<i64: 0, 0>, upper = array<i64: 0, 0>}
        : memref<2x10x12x64xbf16>, memref<16x64xbf16, 3>, !tile.barriers<1>
    ```
  }];
  let arguments = (ins
    Tile_Barriers:$barriers,
    Index:$barrierIndex,
    Arg<AnyMemRef, "NHWC source", [MemRead]>:$source,
    Variadic<Index>:$sourceIndices,
    Arg<AnyMemRef, "shared destination", [MemWrite]>:$dest,
    Variadic<Index>:$offsets,
    DenseI64ArrayAttr:$lower,
    DenseI64ArrayAttr:$upper);
  let assemblyFormat = [{
    $source `[` $sourceIndices `]` `,` $dest `offsets` `[` $offsets `]` `,`
    `barrier` `(` $barriers `[` $barrierIndex `]` `)`
    attr-dict `:` type($source) `,` type($dest) `,` qualified(type($barriers))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Register tiles
//===----------------------------------------------------------------------===//

def Tile_FillOp : Tile_Op<"fill", [Pure,
    TypesMatchWith<"value type matches the result's element type", "result", "value",
                   "::llvm::cast<::sinkattn::tile::FragmentType>($_self).getElementType()">]> {
  let summary = "a register tile with every element set to one value";
  let description = [{
    ```mlir
    %acc = tile.fill %zero : !tile.fragment<64x128xf32>
    ```
  }];
  let arguments = (ins AnyType:$value);
  let results = (outs Tile_Fragment:$result);
  let assemblyFormat = "$value attr-dict `:` qualified(type($result))";
}

def Tile_GemmOp : Tile_Op<"gemm", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "register-tile matrix multiply-accumulate (wgmma)";
  let description = [{
    Computes `result = acc + A · B` over a warpgroup (`Aᵀ` with
    `transpose_a`, `Bᵀ` with `transpose_b`). `A` is `MxK`, either a
    shared-memory tile (wgmma SS) or a register fragment (wgmma RS), or with
    `transpose_a` a shared-memory tile stored `KxM` (M contiguous: wgmma's
    transposed A, e.g. the dSᵀ a backward keeps, read as dS); `B` is a
    shared-memory tile, `KxN`, or `NxK` with `transpose_b`; `acc` and the
    result are `MxN` fragments.
    `A` and `B` have one element type (`bf16` or `f16`); the accumulator is
    `f32` or `f16`.

    ```mlir
    // S = Q Kᵀ with both operands in shared memory.
    %s = tile.gemm %sQ, %sK, %zero {transpose_b}
        : memref<64x128xbf16, 3>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
    // O += P V with P in registers.
    %o = tile.gemm %p, %sV, %o0
        : !tile.fragment<64x128xbf16>, memref<128x128xbf16, 3>, !tile.fragment<64x128xf32>
    // dQ = dS K from dSᵀ (keys x queries) in shared memory.
    %dq = tile.gemm %sdSt, %sK, %zero {transpose_a}
        : memref<64x64xbf16, 3>, memref<64x128xbf16, 3>, !tile.fragment<64x128xf32>
    ```

    By default the gemm completes before its result is used (the lowering
    commits the wgmma group and waits for it). With `async` it only issues
    and commits: the result may be read only through `tile.gemm_wait`
    (or be the accumulator of another `async` gemm), which lets independent
    work overlap the tensor cores.
  }];
  let arguments = (ins
    AnyTypeOf<[Tile_Fragment, AnyMemRef]>:$a,
    Arg<AnyMemRef, "B operand", [MemRead]>:$b,
    Tile_Fragment:$acc,
    UnitAttr:$transpose_a,
    UnitAttr:$transpose_b,
    UnitAttr:$async);
  let results = (outs Tile_Fragment:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` qualified(type($acc))
  }];
  let hasVerifier = 1;
}

def Tile_GemmWaitOp : Tile_Op<"gemm_wait", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait for async tile.gemm groups and make their results usable";
  let description = [{
    Waits until at most `pending` of the executing warpgroup's committed
    `async` gemms are still in flight (`wgmma.wait_group pending`), then
    yields its operands — the results of those gemms — as values that are
    safe to read. Waiting also means the shared tiles the completed gemms
    read may be overwritten.

    ```mlir
    %s = tile.gemm %sQ, %sK, %zero {transpose_b, async} : ...
    // ... softmax of the previous block ...
    %ready = tile.gemm_wait %s pending 0 : !tile.fragment<64x128xf32>
    ```
  }];
  let arguments = (ins Variadic<Tile_Fragment>:$fragments,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$pending);
  let results = (outs Variadic<Tile_Fragment>:$results);
  let assemblyFormat = [{
    $fragments `pending` $pending attr-dict `:` qualified(type($fragments))
  }];
}

def Tile_ReduceOp : Tile_Op<"reduce", [Pure]> {
  let summary = "reduce a register tile along one dimension";
  let description = [{
    Combines the elements of `source` along dimension `dim` with `max`, `min`
    or `sum`; the result has that dimension removed. Row reductions of a 2-D
    tile (`dim = 1`) give the per-row vectors of a softmax.

    ```mlir
    %rowmax = tile.reduce max %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_Fragment:$source,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$dim);
  let results = (outs Tile_Fragment:$result);
  let assemblyFormat = [{
    $kind $source `along` $dim attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Tile_PartialReduceOp : Tile_Op<"partial_reduce", [Pure]> {
  let summary = "combine a register tile's columns into a narrower tile";
  let description = [{
    Combines the columns of a 2-D `source` of `N` columns into a `result` of
    `W` columns (`W` divides `N`) with `max`, `min` or `sum`:
    `result[i, c]` combines `source[i, g * W + c]` over `g = 0 ... N/W - 1`.
    A `tile.reduce ... along 1` of the result gives the same row vector as
    one of the source.

    `W` is a multiple of 8, so in the accumulator layout every thread
    combines only registers it holds (it holds columns `8j + 2q + e` of both
    tiles): no shuffles, unlike a row reduction, whose butterfly over the
    quad waits for the other lanes. A softmax keeps its running row sum as
    such partial columns and reduces them once after its loop (FA3's
    deferred row sum) instead of shuffling in every iteration.

    ```mlir
    %partial = tile.partial_reduce sum %p : !tile.fragment<64x128xf32> -> !tile.fragment<64x8xf32>
    ```
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_Fragment:$source);
  let results = (outs Tile_Fragment:$result);
  let assemblyFormat = [{
    $kind $source attr-dict `:` qualified(type($source)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Tile_ScaleRowsOp : Tile_Op<"scale_rows",
    [Pure, AllTypesMatch<["source", "result"]>]> {
  let summary = "multiply each row of a register tile by its row's factor";
  let description = [{
    `result[i, j] = source[i, j] * factors[i]`: the value a `tile.map`
    multiplying by a broadcast row vector computes. The lowering lets a
    thread whose rows' factors are all exactly 1 skip its multiplies
    (`x * 1` is `x`) behind a branch, so an online softmax whose running
    max moves only when it grows by a margin rescales its output in few
    iterations (FA4's conditional rescaling) instead of in every one.

    ```mlir
    %o2 = tile.scale_rows %o by %alpha : !tile.fragment<64x128xf32>, !tile.fragment<64xf32>
    ```
  }];
  let arguments = (ins Tile_Fragment:$source, Tile_Fragment:$factors);
  let results = (outs Tile_Fragment:$result);
  let assemblyFormat = [{
    $source `by` $factors attr-dict `:` qualified(type($source)) `,` qualified(type($factors))
  }];
  let hasVerifier = 1;
}

def Tile_MapOp : Tile_Op<"map", [RecursiveMemoryEffects, SingleBlock]> {
  let summary = "elementwise computation over register tiles and indices";
  let description = [{
    Computes each element of the result by running the body once per
    element. The body receives the element's indices (one `index` per result
    dimension), then one scalar per input, and yields the result element.

    An input has the result's shape, or a leading prefix of it and is then
    broadcast along the remaining dimensions: a `64` row vector maps onto a
    `64x128` tile by repeating along dimension 1. Values defined outside the
    op (scalars such as a softmax scale) can be used in the body.

    ```mlir
    // p = exp2(s * scale - m[row]), masked to the causal triangle.
    %p = tile.map (%s, %m) : (!tile.fragment<64x128xf32>, !tile.fragment<64xf32>)
                             -> !tile.fragment<64x128xf32> {
    ^bb0(%i: index, %j: index, %x: f32, %mi: f32):
      %t = arith.mulf %x, %scale : f32
      %d = arith.subf %t, %mi : f32
      %e = math.exp2 %d : f32
      %keep = arith.cmpi ule, %j, %i : index
      %r = arith.select %keep, %e, %zero : f32
      tile.yield %r : f32
    }
    ```
  }];
  let arguments = (ins Variadic<Tile_Fragment>:$inputs);
  let results = (outs Tile_Fragment:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $result) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Tile_YieldOp : Tile_Op<"yield", [Pure, Terminator, HasParent<"MapOp">, ReturnLike]> {
  let summary = "yield the element computed by a tile.map body";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

def Tile_CastOp : Tile_Op<"cast", [Pure]> {
  let summary = "convert the element type of a register tile";
  let description = [{
    Converts every element to the result's element type (floats round to
    nearest even; `f32` → `bf16`/`f16` packs pairs into 32-bit registers when
    lowered). Only the element type (and the layout) may change, not the
    shape.

    ```mlir
    %p16 = tile.cast %p : !tile.fragment<64x128xf32> to !tile.fragment<64x128xbf16>
    ```
  }];
  let arguments = (ins Tile_Fragment:$source);
  let results = (outs Tile_Fragment:$result);
  let assemblyFormat = [{
    $source attr-dict `:` qualified(type($source)) `to` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store"> {
  let summary = "store a register tile into a shared tile or a global tensor";
  let description = [{
    Writes the elements of `value` into `dest` starting at `indices` (one
    index per `dest` dimension; a fragment of lower rank fills the innermost
    dimensions, the leading indices select the slice). Each thread stores
    the elements it holds; elements that fall outside `dest` are skipped, so
    a tile can hang over the end of a tensor whose length is not a multiple
    of the block. A rank-1 (`rows`) fragment is stored once per row. Into
    an unswizzled destination a thread's two adjacent columns go as one
    2-element store where their offset is provably even (contiguous rows,
    even strides, offset and column index, an even last dimension), else
    element by element.

    A shared destination must be a tile allocated in the function; if it is
    swizzled (`tile.swizzle`), the store follows the swizzle (a 2-D
    fragment of 16- or 32-bit elements into a whole tile, or rows of a
    one-panel tile, at a row index that is a provable multiple of 8 and a
    column index of the panel width, 64 or 32 elements). Before TMA or
    wgmma read such a tile, the writes are made visible to the async proxy
    (`tile.copy` shared → global does this).

    With `add` the elements are added to global memory atomically (relaxed
    `atom.global.add.f32`, which ptxas issues as a reduction): `f32`
    fragments into a global `f32` destination, so that many blocks can
    accumulate one tensor. The sum's order, and so its rounding, varies
    from run to run. For whole tiles `tile.copy {add}` from shared memory
    (one TMA reduce-add) was 1.8x faster in the backward's dQ.

    ```mlir
    tile.store %o, %O[%b, %h, %m0, %c0]
        : !tile.fragment<64x128xbf16>, memref<2x16x1000x128xbf16>
    tile.store %lse, %LSE[%b, %h, %m0] : !tile.fragment<64xf32>, memref<2x16x1000xf32>
    tile.store %dq, %dQacc[%b, %h, %m0, %c0] {add}
        : !tile.fragment<64x128xf32>, memref<2x16x1000x128xf32>
    ```
  }];
  let arguments = (ins
    Tile_Fragment:$value,
    Arg<AnyMemRef, "destination", [MemRead, MemWrite]>:$dest,
    Variadic<Index>:$indices,
    UnitAttr:$add);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` attr-dict `:` qualified(type($value)) `,` type($dest)
  }];
  let hasVerifier = 1;
}

#endif // SINKATTN_DIALECT_TILE_IR_TILEOPS_TD
