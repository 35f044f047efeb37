//===- SinkBwdLayout.h - The backward's buffers and sequences ---*- C++ -*-===//
//
// What the backward's kernels need to know about the memory layout of one
// problem (BHSD; BSHD viewed as [B, S, H * D]; varlen packed [T, H * D]
// with the sequence offsets as kernel arguments): the types of the buffers
// they take, the sequence values a block derives from its batch index and
// heads, and the indices of a row, an element or a tile in each buffer.
// Also the constants every tile kernel of the backward starts with.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_LIB_KERNELS_SINKBWDLAYOUT_H
#define SINKATTN_LIB_KERNELS_SINKBWDLAYOUT_H

#include "SinkBwdBuilding.h"

namespace sinkattn::kernels {

/// The arguments after a backward kernel's buffers: varlen's sequence
/// offsets and, with run-time shapes, the softmax scale, the scale in log2
/// units, the window size (windowed only) and the offsets' units.
struct SinkBwdTrailingArgs {
  mlir::Value cuQ, cuK;
  mlir::Value scale, scaleLog2, window, unitQ, unitK;
};

/// The constants at the start of the preprocess, dK/dV, dQ and dQ-convert
/// kernels, in the order they are defined.
struct SinkBwdConstants {
  mlir::Value c0, c1, c63, c64;
  /// Query heads per kv head.
  mlir::Value group;
  /// The window (without one seqKv + 1, or with run-time shapes 2^31 - 1,
  /// so that the distance test always passes), as an index and, for the
  /// 32-bit mask, as an i32 that no distance reaches; whether there is a
  /// window (i1).
  mlir::Value window, window32, hasWindow;
  /// 0, -inf and log2(e) (f32).
  mlir::Value zero, negInf, log2e;
  /// The softmax scale and scale · log2(e) (f32).
  mlir::Value scale, scaleLog2;
  /// Run-time shapes: the offsets' units (index), and the last token of the
  /// q-side buffers (rows read past a sequence's end are clamped to it).
  mlir::Value unitQ, unitK, lastToken;

  /// With run-time shapes the sizes come from `trailing` and the kernel's
  /// buffers: `qSide` (a q-shaped buffer, for the token count) and, for
  /// kernels that need the group with a window, `kvSide` (a kv-shaped one).
  /// Without a window the group is the grid's x (rt::attentionBlockGrid), in
  /// the kernels whose grid is built that way (`groupFromGrid`).
  static SinkBwdConstants build(mlir::ImplicitLocOpBuilder &b,
                                const SinkBwdProblem &problem,
                                const SinkBwdTrailingArgs &trailing = {},
                                mlir::Value qSide = {}, mlir::Value kvSide = {},
                                bool groupFromGrid = false);
};

/// One sequence of a block's batch index and heads: its lengths, its first
/// rows in the buffers' row coordinates, and its heads' first columns.
struct SinkBwdSequence {
  /// The block's sequence (batch index), query head and kv head.
  mlir::Value batch, head, kvHead;
  /// This sequence's query and key lengths.
  mlir::Value seqQ, seqKv;
  /// Its first query and key rows in the q-side and kv-side buffers (0
  /// unless varlen).
  mlir::Value qStart, kStart;
  /// The first columns of the query head and the kv head in a [.., H * D]
  /// row (defined, unused, for BHSD too), and D as an index.
  mlir::Value headColumn, kvHeadColumn, headDim;
  /// The last row of LSE's row coordinate (rows read past a sequence's end
  /// are clamped to it).
  mlir::Value lastRow;
  /// Right-aligned causal: query row i sits at key position i + past.
  mlir::Value past;
};

/// The memory layout's part of the backward's kernels.
struct SinkBwdLayout {
  rt::AttentionLayout kind;
  /// Q, O, dO and dQ; K, V, dK and dV (the element type).
  mlir::MemRefType q, kv;
  /// LSE, Delta and the per query row sink terms (f32): [B, H, SQ], varlen
  /// [H, TQ].
  mlir::MemRefType lse;
  /// The sink terms flat (per query row; with --dq atomic per key row), as
  /// the dsinks sum reads them.
  mlir::MemRefType terms;
  /// Each query block's record, [B, H, query blocks, statsRows, 64] f32.
  mlir::MemRefType stats;
  /// --dq atomic: the fp32 dQ (q's shape) and the per key sink terms
  /// ([B, H, SKV], varlen [H, TKV]).
  mlir::MemRefType qAcc, keyTerms;
  /// GQA: the query heads' fp32 shares of dK and dV, [H, B, SKV, D]
  /// (varlen [H, TKV, D]): a tile overhanging its sequence is cut at SKV
  /// instead of running into the next sequence's rows. The split's fp32
  /// sums per kv head (kvAcc) take the same form with HK heads.
  mlir::MemRefType shares, kvAcc;
  /// The dK/dV kernel's share-sum counters, one per sequence, kv head and
  /// block of 64 keys (i32).
  mlir::MemRefType shareCounts;
  /// Varlen: the sequence offsets (i32 [B + 1]); null otherwise.
  mlir::MemRefType offsets;
  /// The dsinks sum: a head's rows of `terms` come in `runBatches` runs of
  /// `run` rows, `batchRows` apart.
  int64_t run = 0, runBatches = 0, batchRows = 0;
  /// D, the query and key lengths (constants unless varlen) and the last
  /// row of LSE's row coordinate.
  int64_t headDim = 0, seqQ = 0, seqKv = 0, lastRow = 0;
  /// Every size is the buffers' at run time (varlen only).
  bool runTimeShapes = false;
  bool windowed = false;

  static SinkBwdLayout get(mlir::MLIRContext *context,
                           const SinkBwdProblem &problem);

  bool varlen() const { return kind == rt::AttentionLayout::Varlen; }
  /// Appends the types of the arguments after the buffers
  /// (SinkBwdTrailingArgs).
  void appendSequenceArgs(llvm::SmallVectorImpl<mlir::Type> &types) const;
  /// Those arguments of a kernel, from `args[next]` on.
  SinkBwdTrailingArgs trailingArgs(llvm::ArrayRef<mlir::BlockArgument> args,
                                   size_t next) const;

  /// The sequence of block (`batch`, `head`) and the head's kv head
  /// (`kvHead` where the block ids have it, else head / group; none where
  /// the group is unknown): varlen loads it from the offsets `cuQ` and
  /// `cuK`; the others' lengths are constants.
  SinkBwdSequence buildSequence(mlir::ImplicitLocOpBuilder &b,
                                const SinkBwdConstants &constants,
                                mlir::Value batch, mlir::Value head,
                                mlir::Value cuQ, mlir::Value cuK,
                                mlir::Value kvHead = {}) const;

  /// LSE-shaped buffers (LSE, Delta, the terms) at token `row`.
  llvm::SmallVector<mlir::Value> rowAt(const SinkBwdSequence &sequence,
                                       mlir::Value row) const;
  /// A q-shaped buffer's element at token `row`, column `column` of the
  /// head (`headColumn` = the head's first column + `column`, the index of
  /// the layouts that view [.., S, H * D]).
  llvm::SmallVector<mlir::Value> elementAt(const SinkBwdSequence &sequence,
                                           mlir::Value row, mlir::Value column,
                                           mlir::Value headColumn) const;
  /// The same for a kv-shaped buffer (the kv head's columns).
  llvm::SmallVector<mlir::Value> kvElementAt(const SinkBwdSequence &sequence,
                                             mlir::Value row,
                                             mlir::Value column,
                                             mlir::Value headColumn) const;
  /// A q-side tile's indices at token `row` (its first column last).
  llvm::SmallVector<mlir::Value> qTile(const SinkBwdSequence &sequence,
                                       mlir::Value row, mlir::Value c0) const;
  /// A kv-side tile's indices at token `row` (its first column last).
  llvm::SmallVector<mlir::Value> kvTile(const SinkBwdSequence &sequence,
                                        mlir::Value row, mlir::Value c0) const;

  /// Stores `rows` (a row fragment: the query rows from `firstRow` of the
  /// sequence) into the LSE-shaped `dest`; varlen through a view that ends
  /// with the sequence.
  void storeRows(mlir::ImplicitLocOpBuilder &b, const SinkBwdSequence &sequence,
                 mlir::Value rows, mlir::Value dest,
                 mlir::Value firstRow) const;
  /// Stores the fragment `tile` (the query rows from `firstRow` of the
  /// sequence, token `row`) into the q-shaped `dest` by register stores;
  /// varlen through a view that ends with the sequence.
  void storeQTile(mlir::ImplicitLocOpBuilder &b,
                  const SinkBwdSequence &sequence, mlir::Value tile,
                  mlir::Value dest, mlir::Value row, mlir::Value firstRow,
                  mlir::Value c0) const;
  /// storeQTile where a tensor map of `dest` clips the tile (BHSD, BSHD)
  /// through the shared tile `staging` and one TMA store: whole lines
  /// instead of 2-byte elements 8 rows apart. Varlen: storeQTile.
  void storeQTileThroughShared(mlir::ImplicitLocOpBuilder &b,
                               const SinkBwdSequence &sequence,
                               mlir::Value tile, mlir::Value staging,
                               mlir::Value dest, mlir::Value row,
                               mlir::Value firstRow, mlir::Value c0) const;
};

/// Varlen: `buffer`'s rows `start` .. `start` + `length` along dimension
/// `rowDim` (its other dimensions whole), a view that ends with the
/// sequence, so that a tile overhanging it is cut there.
mlir::Value buildSequenceView(mlir::ImplicitLocOpBuilder &b, mlir::Value buffer,
                              int64_t rowDim, mlir::Value start,
                              mlir::Value length);

/// A backward kernel's gpu.func `name` (a `kernel`) at `b`'s insertion
/// point, `b` set to build at the start of its body.
mlir::gpu::GPUFuncOp createBackwardKernel(mlir::ImplicitLocOpBuilder &b,
                                          llvm::StringRef name,
                                          mlir::TypeRange argTypes);
/// Bounds a kernel of `warpgroups` consumer warpgroups sharing tiles that
/// tile-warp-specialize gives a TMA producer and a register split
/// (setmaxnreg): 128 threads per warpgroup, and `.minnctapersm 1`, which
/// tells ptxas the registers at entry (with `.maxntid` alone it ignored
/// every setmaxnreg and spilled).
void setSharedTileBounds(mlir::gpu::GPUFuncOp func, int64_t warpgroups);
/// Ends a backward kernel (gpu.return) and moves `b` after it.
void finishBackwardKernel(mlir::ImplicitLocOpBuilder &b,
                          mlir::gpu::GPUFuncOp func);

} // namespace sinkattn::kernels

#endif // SINKATTN_LIB_KERNELS_SINKBWDLAYOUT_H
