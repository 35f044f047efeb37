//===- Passes.td - Transformations of the tile dialect -----*- tablegen -*-===//

#ifndef SINKATTN_DIALECT_TILE_TRANSFORMS_PASSES_TD
#define SINKATTN_DIALECT_TILE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TileWarpSpecialize : Pass<"tile-warp-specialize"> {
  let summary = "Split kernels into a producer warpgroup (TMA or cp.async) and consumer warpgroups";
  let description = [{
    For a kernel (`gpu.func ... kernel`, `known_block_size = [C, 1, 1]`,
    C a multiple of 128) whose one pipelined loop (`scf.for` with
    `tile.num_stages = S`, 1 ≤ S ≤ 64 (verified by the dialect), at the kernel's top level or nested in
    `scf.for` loops that are) loads its operands with top-level global →
    shared `tile.copy`s:

    * **Groups.** Copies whose buffers have the same first reader and the
      same last user in the loop body form a group `g`; each gets S forward
      barriers (`full`: one TMA arrival, or 128 when the group has a
      cp.async copy, see below) and S back-pressure barriers (`empty`, C
      arrivals), slot `stage·G + g`: exactly 2·G·S barriers, plus one per
      `tile.copy` before the loop. The buffers get a leading
      dimension S (version `stage` = `it % S`, `it = (k − lb)/step`).
    * **Registers.** When an even split of the register file would give the
      consumers fewer registers than they can have once the producer keeps
      P = 24 (32 inside loops around the pipelined one, 56 with cp.async
      copies: what ptxas needs without spilling) registers (two or more
      consumer warpgroups), the producer does `setmaxnreg.dec P` and the
      consumers `setmaxnreg.inc` to `min(240, (R·T − 128·P) / C)` rounded
      down to 8, where R·T is what the block of T threads was launched with
      (R = 65536 / T rounded down to 8: 168 for 384 threads) — the only
      registers `setmaxnreg.inc` can draw on (asking for more blocks the
      consumers forever); with one consumer warpgroup every thread
      may have 240 registers anyway and no reallocation is emitted. The
      kernel's `known_block_size` becomes `.maxntid`, which lets ptxas
      honour `setmaxnreg` in most kernels; where it still cannot tell the
      registers at entry (ptxas warning C7508: every `setmaxnreg` ignored)
      the kernel should also declare `nvvm.minctasm = 1`, as the
      backward's shared-tile kernels do. The pass does not add it: it
      changes ptxas's schedule of kernels that do not need it.
    * **Producer** (threads 0–127): repeats the pure
      index computations the copies and the loop bounds need (nothing else
      of the kernel; `memref.load`s of kernel arguments the kernel only
      loads from or takes sizes of count as pure, such as varlen sequence
      offsets or a persistent kernel's tile table, which assumes the host
      does not pass one buffer as two arguments, and so do loads of
      `constant` globals; so do integer divisions by run-time values in
      the entry block or directly in the loops around the pipelined one,
      which every thread runs), issues the pre-loop loads with their own
      barriers, and
      per iteration and group waits `empty` with parity `((it/S) % 2) ^ 1`
      (a fresh barrier passes phase 1, so the first S waits are free), issues
      `tile.tma_copy` into the stage, and one thread arrives on `full`.
    * **cp.async copies** (`engine = #tile.engine<cp_async>`): all 128
      producer threads issue their chunks (`tile.cp_async`) and each
      arrives with `tile.cp_async_arrive` (`cp.async.mbarrier.arrive.noinc`,
      counted in `full`'s 128). A group mixing TMA and cp.async copies only
      adds the TMA bytes (`expect_tx`) and never arrives a 129th time. The
      consumers fence (`fence.proxy.async`) after waiting for such a group:
      cp.async writes through the generic proxy, wgmma reads through the
      async one. The producer stays one warpgroup rather than taking the
      consumers' thread count: with 2·C threads (C = 256) the wgmma
      consumers fail to compile under ptxas (C7602, measured).
    * **Loops around the pipelined one** (a persistent kernel's loop over
      tiles): the barriers' phases run on across their iterations, so both
      roles carry a counter of the pipelined loop's iterations through all
      of them and take stage and parity from it; the producer rebuilds the
      loops with the pure ops of their bodies the copies need. With one
      such loop, a global -> shared `tile.copy` directly in its body before
      the pipelined loop (TMA or cp.async) is a *tile load* (a Q tile) when
      it fills a whole static allocation of the kernel that only readers in
      that body use after it (`tile.gemm`s, synchronous or completed by a
      `tile.gemm_wait` in their block, and `memref.load`s, directly or
      through subviews), from a kernel argument the kernel only reads
      (loads, copies from it, its sizes; which again assumes that the host
      does not pass the buffer as another argument too), with indices the
      producer can
      compute (pure ops, not the thread id): the producer issues it once
      per iteration, before
      that iteration's pipelined loads, on a barrier pair of its own
      (waiting until the consumers released the buffer in the previous
      iteration); the consumers wait for it before its first reader and
      release it after its last user, so the next iteration's load
      overlaps their work after the pipelined loop. Other copies there
      stay with the consumers.
    * **Consumers** (threads 128 …): the original kernel with thread ids
      renumbered from 0; each pre-loop copy becomes a wait on its barrier;
      in the loop, a wait on `full` (parity `(it/S) % 2`) before a group's
      first reader and an arrive on `empty` after its last user (for an
      async `tile.gemm`, the `tile.gemm_wait` that completes it, one whose
      `pending` count is at most the async gemms issued after it: the
      tensor cores read the stage until then). A stage's readers are
      `tile.gemm`s and `memref.load`s (a thread's load has returned
      before it arrives; every consumer thread arrives). Everything
      after the loop stays with the consumers.
    * `known_block_size` becomes C + 128; the role regions are `scf.if`s
      marked `tile.role`, `tile.thread_base`, `tile.thread_count`, which
      later passes read to pick the role's leader thread and to use named
      barriers (`bar.sync id, count`) instead of block-wide ones.

    * **Guards.** A copy may also sit at the top of an `scf.if` at the top
      of the loop body when its buffer is only read under that `if`: the
      producer loads and the consumers wait and arrive under the same
      condition, and both count the iterations that take it in a
      loop-carried counter (phase counter) from which that group's stage
      and parity come, so skipped iterations do not advance its pipeline
      (through loops around the pipelined one too).

    Declining is not an error: a remark says why (no known block size,
    `threadIdx.y/z`, not whole warpgroups, no or several pipelined loops, a
    loop inside something other than `scf.for`, no global → shared copy, user-managed
    barriers, buffers used outside the loop, read by an op other than
    `tile.gemm` or `memref.load`, or read by an async gemm that no
    `tile.gemm_wait` in its block completes, copy
    indices, guards or bounds that depend on loop-carried values, impure ops
    or the thread id, copy sources that are not kernel arguments, a kernel
    that reads its block size or warp numbering, a loop not counting in
    index, a kernel already specialized) and the kernel keeps the ordinary
    pipelined path. Block syncs the kernel wrote become the consumers'
    named barrier.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def TileSoftwarePipeline : Pass<"tile-software-pipeline"> {
  let summary = "Prefetch the loads of a pipelined loop (TMA: S - 1, cp.async: S iterations ahead)";
  let description = [{
    For a kernel that `tile-warp-specialize` left alone whose pipelined loop
    (`tile.num_stages = S`) has the shape that pass accepts (top-level
    global → shared `tile.copy`s filling whole allocations that only
    `tile.gemm` and `memref.load` read (the block sync before a version is
    refilled waits for every thread's loads), indices from pure computations (and loads of
    read-only kernel arguments and constant globals) of the induction variable; the loop at the kernel's top level or in `scf.for` loops
    that are): every thread keeps computing. TMA copies (S ≥ 2):

    * the buffers get a leading dimension S; one barrier per version (one
      TMA arrival each) is allocated at the kernel's top level;
    * a prologue before the loop issues the loads of iterations 0 … S − 2
      (each only if the loop has that many iterations) into versions
      0 … S − 2;
    * at the start of iteration `it` (counted from the loop's start), after
      a block sync (every thread is done with version `(it + S − 1) % S`,
      read in iteration `it − 1`: write after read), one thread issues the
      loads of iteration `it + S − 1` if it exists into that version; then
      every thread waits for version `it % S` with parity `(it / S) % 2`
      before the first reader.

    The copies become `tile.tma_copy` (expect_tx + TMA) plus one thread's
    arrive, which `tile-fuse-arrive-expect-tx` fuses.

    cp.async copies (`engine = #tile.engine<cp_async>`, S ≥ 1) go through
    commit groups instead of barriers, one per producer group and
    iteration:

    * the prologue copies iterations 0 … S − 1 into versions 0 … S − 1,
      committing a group per producer group even when the iteration does
      not exist (the wait counts below assume a fixed number per round);
    * right after a group's last user in iteration `it`, a block sync (the
      other threads are done with version `it % S`) and the copies of
      iteration `it + S` into that version, then a commit: groups are
      committed in the order of their last use;
    * before a group's first reader, `cp.async.wait_group N` with N the
      groups committed after it (the later groups of its round, S − 1
      whole rounds, and this iteration's commits whose last user comes
      before the reader), a `fence.proxy.async` (wgmma reads what the
      generic proxy wrote) and a block sync.

    Inside loops around the pipelined one, a counter of its iterations is
    carried through them all and versions and parities come from it (the
    barriers' phases run on across the outer iterations). A loop that does not
    fit keeps `tile.num_stages` (a remark says why) and gets the
    multi-versioned synchronous path of `tile-multi-version-buffers`; with
    S = 1 and only TMA copies there is nothing to prefetch into and the loop
    is left as it is.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def TileAssignLayouts : Pass<"tile-assign-layouts"> {
  let summary = "Give every register fragment a layout and swizzle the tiles wgmma reads or TMA stores";
  let description = [{
    * **Register layouts.** Every `!tile.fragment` value gets a
      `#tile.layout`: rank-1 fragments `rows`; rank-2 fragments `operand_a`
      when they feed `tile.gemm` as the register A operand, `accumulator`
      otherwise. Values that must share one type get one layout: the
      init, iteration argument, yielded value and result of an `scf.for`,
      the results and yields of an `scf.if`, and a gemm's accumulator and
      result. Existing layouts are kept and checked.
    * **Shared swizzle.** The shared tiles `tile.gemm` reads (operand B, and
      A when it is in shared memory) are marked `tile.swizzle = 128` on their
      `memref.alloc` (alignment raised to 1024 bytes): TMA then stores them
      as 128-byte-swizzled panels of 64 16-bit columns (`tile-lower-copies`)
      and the wgmma lowering builds matching descriptors. An operand may be
      whole rows of such a tile or a column slice of whole panels (its
      column offset a provable multiple of 64), or, for an untransposed B
      (N along its rows), half a panel: 32 columns at an offset that is a
      provable multiple of 32, whose descriptor starts 64 bytes into the
      panel. Other slices are an error naming the operand and the offset.
    * **Store staging.** A shared tile of 16- or 32-bit elements (its
      trailing two dimensions: columns a multiple of a 128-byte panel's, 64
      or 32, rows a multiple of 8, at most 256; leading dimensions are
      stages) that fragment `tile.store`s write and only `tile.copy`s to
      global memory read (TMA stores or reduce-adds, or for 16-bit tiles
      `engine = #tile.engine<vector>` stores), each through the
      allocation or whole-tile views of it, is swizzled the same way, when
      every store can follow the swizzle (`checkSwizzledStore`: a 2-D
      fragment at a row index that is a provable multiple of 8 and a column
      index of the panel width): the fragment's elements then spread over
      the banks, where a warp's eight rows of an unswizzled tile 128 to 512
      bytes apart all hit the same ones. TMA moves such a tile in panel
      boxes; vector stores read each chunk at its swizzled place. Tiles
      with other users keep the plain layout.

    Errors, each naming the value or op: a shape a layout cannot
    distribute (rows not a multiple of 64, columns not a multiple of 8, or of
    16 for an A operand), a column reduction (dimension 0), a fragment
    used both as A operand and as accumulator, fragments crossing function
    boundaries or regions other than `scf.for`/`scf.if`, and gemm operand
    tiles that are not whole allocations of the function or whose rows are
    not a multiple of 64 elements.
  }];
}

def TileThreadSync : Pass<"tile-thread-sync"> {
  let summary = "Barriers only where threads' shared-memory accesses conflict";
  let description = [{
    Walks each function in order, tracking the shared allocations that
    threads wrote (`tile.store`, `memref.store`) and read (`memref.load`,
    the operands of `tile.gemm`, which wgmma reads for the whole warpgroup)
    since the last barrier, and inserts one before an op that

    * reads an allocation other threads wrote since then (read after write),
    * or writes an allocation others read since then (write after read).

    Loop bodies start from what the loop was entered with plus what one
    iteration leaves behind, so hazards between iterations get their barrier
    too; both branches of an `scf.if` are followed. Existing barriers and
    the copies whose lowering synchronizes (`tile.copy`, `tile.im2col_copy`)
    start the state over, except that a store with `pending` (which syncs
    only before itself) then counts as a read of its tile: its issuing
    thread's wait completes the earlier stores' reads, so the next write
    to the tile needs a barrier after it (often one the code needs anyway,
    which then serves both). TMA writes are ordered by mbarriers, not here, and
    two accesses that do not conflict get no barrier. Inside a role of a
    warp-specialized kernel the barrier is the role's named barrier
    (`bar.sync id, count`) instead of a block-wide one.

    Accesses through a warpgroup's slice of a tile (a `memref.subview`
    whose leading offset is `tile.warpgroup_id` times a constant at least
    its rows, so that no two warpgroups' slices overlap) are the executing
    warpgroup's alone: a hazard between two of them through the same slice
    takes the warpgroup's own barrier (named barrier 8 + `thread_id.x /
    128`, 128 threads), which orders them only for that warpgroup's later
    accesses to the slice; a hazard with any other access to the tile (the
    whole tile, another slicing) takes the role's. A store of a slice
    (`tile.copy`, lowered per warpgroup) syncs only its warpgroup, and a
    named barrier whose id is not a constant (a warpgroup's, or a
    ping-pong turn, which the warpgroup before arrives at without waiting)
    counts as the executing warpgroup's only.

    Allocations marked `tile.mbarrier_ordered` are left out: the kernel
    orders their accesses with its own mbarrier arrivals and waits, which
    this pass does not model (a function holding one must wait on some
    mbarrier, or the pass reports it).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::arith::ArithDialect"];
}

def TileLowerCopies : Pass<"tile-lower-copies"> {
  let summary = "Lower tile.copy, tile.tma_copy and tile.cp_async to TMA, cp.async and barriers";
  let description = [{
    * `tile.tma_copy` (fire-and-forget) becomes, under a single-thread guard,
      `tile.mbarrier_expect_tx` of the tile's bytes followed by the TMA
      load(s) on the user's barrier slot. The user arrives and waits.
    * `tile.copy` global → shared (synchronous) gets a barrier of its own
      (a one-slot `tile.alloc_barrier [1]` at the start of the function;
      multi-versioning gives it one slot per pipeline stage). All threads
      first sync (earlier readers of the tile are done), one thread issues
      `expect_tx` + load(s) + `arrive`, then every thread waits with parity
      `iteration % 2` of the enclosing `scf.for` (0 outside loops), the
      iteration being counted from the loop's start. A load in nested loops
      or under an `scf.if` completes its barrier once per execution, not
      per iteration of one loop: it counts its executions in a counter
      carried through the enclosing `scf.for`s (iteration arguments) and
      `scf.if`s (a result), and waits with parity `count % 2`. Under any
      other region op (`scf.while`, ...) it is an error.
    * `tile.copy` global → shared with `engine = #tile.engine<cp_async>`:
      all threads sync, issue their `tile.cp_async` share, commit, wait for
      the group (`nvvm.cp.async.wait.group 0`), fence the generic proxy
      against the async proxy (wgmma and TMA stores read shared memory
      through it) and sync again. No barrier.
    * `tile.cp_async`: the `P` threads of the executing role (a
      warp-specialized role region, or the kernel's `known_block_size`)
      split the tile into 16-byte chunks, row-major; thread `t` issues
      `nvgpu.device_async_copy` (`cp.async.cg`, 16 bytes) for chunks
      `t, t + P, ...` in an `scf.for`. A chunk outside the global tensor
      copies zero source bytes from a clamped address (zero fill); one the
      innermost dimension ends inside copies only its elements inside. A
      swizzled destination (`tile.swizzle = 128`) gets each chunk at its
      128B-swizzled position. Without a known thread count (no role, no
      `known_block_size`) the block's threads stride over the chunks by
      `gpu.block_dim`.
    * `tile.copy` shared → global syncs the block, then one thread fences
      the generic proxy against the async proxy, issues the TMA store(s),
      commits and waits for the bulk group; a final sync keeps the tile
      alive until the store has read it. With `pending = N` the thread
      waits only for the groups before the last N
      (`cp.async.bulk.wait_group.read N`) and there is no final sync
      (`tile-thread-sync` places the barrier before the next write to the
      tile, or finds one already there), and after the outermost
      `scf.for` around the store inside its warp-specialized role (or the
      function) it waits for all of them and the role syncs (once per
      loop); without such a loop the store is an error.
    * `tile.copy` shared → global with `engine = #tile.engine<vector>`:
      the role syncs, its `P` threads split the tile into 16-byte chunks
      as for `tile.cp_async`, and thread `t` moves chunks `t, t + P, ...`,
      each a 16-byte `vector.load` from the tile (at its swizzled position
      where the tile is swizzled) and, where the chunk lies inside the
      global view (its sizes, not the whole tensor's), a 16-byte
      `vector.store`; the role syncs again. The view's rows and the column
      index must be provably 16-byte aligned (static strides and offsets,
      `tile.stride_multiple` on the argument it views, subview offsets
      that are multiples); otherwise it is an error.

    * A store from a warpgroup's slice of a tile (see `tile-thread-sync`)
      is the warpgroup's: it syncs the warpgroup (named barrier 8 +
      `thread_id.x / 128`, 128 threads) instead of the role, its first
      thread (`thread_id.x % 128 == 0`) issues it, and with `pending` each
      warpgroup's first thread waits for its own stores after the loop,
      before the role syncs. Loads into a slice are rejected by the
      verifier.

    A tile whose leading dimension exceeds the 256-element TMA box limit is
    split into several loads (or stores) of at most 256 rows on the same
    barrier, whose bytes add up in the one `expect_tx`. Splitting keeps the
    shared tile row-major, so only the leading dimension may exceed the
    limit; a wider inner dimension is an error naming the limit.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def TileMultiVersionBuffers : Pass<"tile-multi-version-buffers"> {
  let summary = "Give buffers and barriers of pipelined loops one version per stage";
  let description = [{
    In an `scf.for` carrying `tile.num_stages = S` (iteration `it` counted
    from the loop's start, `it = (k - min) / step`):

    * a `tile.alloc_shared` buffer that the loop fills by TMA (the
      destination of `tile.tma_copy`, `tile.tma_load` or a global → shared
      `tile.copy`) gets a leading dimension `S`; inside the loop every use
      reads version `it % S` (a `memref.subview`);
    * a barrier array of `n` slots used in the loop becomes `S·n` slots (slot
      `i` of stage `v` is `v·n + i`) with its arrive counts replicated `S`
      times;
    * every `tile.mbarrier_wait_parity` on such an array gets parity
      `(it / S) % 2`, inverted when the original parity had an odd offset (a
      constant 1, or `(x + odd) % 2`: a back-pressure wait stays inverted).

    Counting from the loop's start (not the raw induction variable) keeps a
    loop that starts at an odd offset from waiting for parity 1 on a fresh
    barrier, which would return at once and read stale data.

    Barriers stay as they are when that iteration does not count their
    phases: the loop is nested in another loop or conditional (it may run
    more than once), or a wait on them is not directly in its body. Their
    synchronous loads counted their executions (`tile-lower-copies`).

    It runs before `tile-lower-barriers` so that initialization covers every
    version: an array that already has `tile.mbarrier_init` users is
    rejected, as are buffers or barrier arrays also used outside the loop.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def TileLowerBarriers : Pass<"tile-lower-barriers"> {
  let summary = "Initialize barrier arrays: elected init, fence, block sync";
  let description = [{
    After each `tile.alloc_barrier`, one thread (thread 0) initializes every
    slot with its arrive count (`tile.mbarrier_init`) and issues
    `nvvm.fence.mbarrier.init`; then the whole block synchronizes
    (`gpu.barrier`) so no thread uses a barrier before it is initialized.
    Arrays must be allocated at the top level of the kernel (the block-wide
    sync must be reached by every thread). Runs after
    `tile-multi-version-buffers`, which expands the arrays it initializes.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"
  ];
}

def TileFuseArriveExpectTx : Pass<"tile-fuse-arrive-expect-tx"> {
  let summary = "Fuse expect_tx and a later arrive on the same barrier slot";
  let description = [{
    `expect_tx(b[i], n); X*; arrive(b[i])` becomes
    `arrive_expect_tx(b[i], n); X*` when every operation in `X*` is
    transparent to the barrier: a `tile.tma_load` on the same slot, a proxy
    fence or a block-wide sync. The arrive must be on the same slot (same
    barrier array and same index value) with count 1; a different barrier,
    or anything else in between, leaves the pair untouched.
  }];
}

#endif // SINKATTN_DIALECT_TILE_TRANSFORMS_PASSES_TD
