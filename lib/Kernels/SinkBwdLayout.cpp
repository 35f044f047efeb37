//===- SinkBwdLayout.cpp - The backward's buffers and sequences -----------===//

#include "SinkBwdLayout.h"

#include "AttentionBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

namespace {
/// SinkBwdConstants::build with run-time shapes: the scalars are the
/// kernel's arguments and the sizes its buffers'.
SinkBwdConstants buildForRunTimeShapes(ImplicitLocOpBuilder &b,
                                       const SinkBwdProblem &problem,
                                       const SinkBwdTrailingArgs &trailing,
                                       Value qSide, Value kvSide,
                                       bool groupFromGrid) {
  const bool windowed = problem.config.window > 0;
  SinkBwdConstants constants;
  constants.c0 = constantIndex(b, 0);
  constants.c1 = constantIndex(b, 1);
  constants.c63 = constantIndex(b, 63);
  constants.c64 = constantIndex(b, 64);
  // Token rows (dim 0) and H * D or HK * D columns (dim 1): H / HK is the
  // columns' ratio.
  if (!windowed && groupFromGrid)
    constants.group = gpu::GridDimOp::create(b, gpu::Dimension::x);
  else if (qSide && kvSide) {
    Value qColumns = memref::DimOp::create(b, qSide, constants.c1);
    Value kvColumns = memref::DimOp::create(b, kvSide, constants.c1);
    constants.group = divUI32(b, qColumns, kvColumns);
  }
  // Without a window no distance a 32-bit position can have reaches it.
  Value window32 =
      windowed
          ? trailing.window
          : Value(arith::ConstantIntOp::create(b, b.getI32Type(), INT32_MAX));
  constants.window =
      arith::IndexCastUIOp::create(b, b.getIndexType(), window32);
  constants.window32 = window32;
  constants.hasWindow =
      arith::ConstantIntOp::create(b, b.getI1Type(), windowed);
  constants.zero = constantF32(b, 0.0f);
  constants.negInf = constantF32(b, -std::numeric_limits<float>::infinity());
  constants.log2e = constantF32(b, float(1.44269504088896340736));
  constants.scale = trailing.scale;
  constants.scaleLog2 = trailing.scaleLog2;
  constants.unitQ =
      arith::IndexCastUIOp::create(b, b.getIndexType(), trailing.unitQ);
  constants.unitK =
      arith::IndexCastUIOp::create(b, b.getIndexType(), trailing.unitK);
  if (qSide) {
    Value tokens = memref::DimOp::create(b, qSide, constants.c0);
    constants.lastToken = arith::SubIOp::create(b, tokens, constants.c1);
  }
  return constants;
}
} // namespace

SinkBwdConstants SinkBwdConstants::build(ImplicitLocOpBuilder &b,
                                         const SinkBwdProblem &problem,
                                         const SinkBwdTrailingArgs &trailing,
                                         Value qSide, Value kvSide,
                                         bool groupFromGrid) {
  if (problem.config.runTimeShapes)
    return buildForRunTimeShapes(b, problem, trailing, qSide, kvSide,
                                 groupFromGrid);
  const rt::SinkAttentionShape &shape = problem.shape;
  const bool windowed = problem.config.window > 0;
  // Without a window the distance test must always pass.
  const int64_t window = windowed ? problem.config.window : shape.seqKv + 1;
  SinkBwdConstants constants;
  constants.c0 = constantIndex(b, 0);
  constants.c1 = constantIndex(b, 1);
  constants.c63 = constantIndex(b, 63);
  constants.c64 = constantIndex(b, 64);
  constants.group = constantIndex(b, problem.form.group);
  constants.window = constantIndex(b, window);
  // No distance reaches seqKv, so a longer window is the same as seqKv + 1,
  // which fits in 32 bits.
  constants.window32 = arith::ConstantIntOp::create(
      b, b.getI32Type(), std::min<int64_t>(window, shape.seqKv + 1));
  constants.hasWindow =
      arith::ConstantIntOp::create(b, b.getI1Type(), windowed);
  constants.zero = constantF32(b, 0.0f);
  constants.negInf = constantF32(b, -std::numeric_limits<float>::infinity());
  constants.log2e = constantF32(b, float(1.44269504088896340736));
  constants.scale = constantF32(b, float(shape.scale));
  constants.scaleLog2 = constantF32(b, float(shape.scale * 1.4426950408889634));
  return constants;
}

/// SinkBwdLayout::get with run-time shapes (varlen): every size dynamic;
/// the q- and kv-side buffers token rows at any stride (views of a fused
/// QKV tensor or its gradient).
static SinkBwdLayout getForRunTimeShapes(SinkBwdLayout layout,
                                         MLIRContext *context,
                                         const SinkBwdProblem &problem) {
  const int64_t d = problem.shape.headDim;
  const int64_t dynamic = ShapedType::kDynamic;
  Type f32 = Float32Type::get(context);
  Type i32 = IntegerType::get(context, 32);
  auto tokenRows = StridedLayoutAttr::get(context, 0, {dynamic, 1});
  layout.runTimeShapes = true;
  layout.q = MemRefType::get({dynamic, dynamic}, problem.element, tokenRows);
  layout.kv = layout.q;
  layout.qAcc = MemRefType::get({dynamic, dynamic}, f32);
  layout.offsets = MemRefType::get({dynamic}, i32);
  layout.lse = MemRefType::get({dynamic, dynamic}, f32);
  layout.keyTerms = layout.lse;
  layout.shares = MemRefType::get({dynamic, dynamic, d}, f32);
  layout.kvAcc = layout.shares;
  layout.shareCounts = MemRefType::get({dynamic}, i32);
  layout.terms = MemRefType::get({dynamic}, f32);
  layout.stats = MemRefType::get(
      {dynamic, dynamic, dynamic, problem.form.statsRows, kSinkBwdBlock}, f32);
  // The dsinks sum's run is the token count, the terms' dim 1.
  layout.run = dynamic;
  layout.runBatches = 1;
  layout.batchRows = 0;
  return layout;
}

SinkBwdLayout SinkBwdLayout::get(MLIRContext *context,
                                 const SinkBwdProblem &problem) {
  const rt::SinkAttentionShape &shape = problem.shape;
  const SinkBwdForm &form = problem.form;
  const int64_t d = shape.headDim;
  Type f32 = Float32Type::get(context);
  Type element = problem.element;
  SinkBwdLayout layout;
  layout.kind = shape.layout;
  layout.headDim = d;
  layout.seqQ = shape.seqQ;
  layout.seqKv = shape.seqKv;
  layout.lastRow = (shape.varlen() ? shape.tokensQ() : shape.seqQ) - 1;
  layout.windowed = problem.config.window > 0;
  if (problem.config.runTimeShapes)
    return getForRunTimeShapes(layout, context, problem);
  switch (shape.layout) {
  case rt::AttentionLayout::BHSD:
    layout.q =
        MemRefType::get({shape.batch, shape.heads, shape.seqQ, d}, element);
    layout.kv =
        MemRefType::get({shape.batch, shape.kvHeads, shape.seqKv, d}, element);
    layout.qAcc = MemRefType::get(layout.q.getShape(), f32);
    break;
  case rt::AttentionLayout::BSHD:
    layout.q =
        MemRefType::get({shape.batch, shape.seqQ, shape.heads * d}, element);
    layout.kv =
        MemRefType::get({shape.batch, shape.seqKv, shape.kvHeads * d}, element);
    layout.qAcc = MemRefType::get(layout.q.getShape(), f32);
    break;
  case rt::AttentionLayout::Varlen:
    layout.q = MemRefType::get({shape.tokensQ(), shape.heads * d}, element);
    layout.kv = MemRefType::get({shape.tokensKv(), shape.kvHeads * d}, element);
    layout.qAcc = MemRefType::get(layout.q.getShape(), f32);
    layout.offsets =
        MemRefType::get({shape.batch + 1}, IntegerType::get(context, 32));
    break;
  }
  if (shape.varlen()) {
    layout.lse = MemRefType::get({shape.heads, shape.tokensQ()}, f32);
    layout.keyTerms = MemRefType::get({shape.heads, shape.tokensKv()}, f32);
    layout.shares = MemRefType::get({shape.heads, shape.tokensKv(), d}, f32);
    layout.kvAcc = MemRefType::get({shape.kvHeads, shape.tokensKv(), d}, f32);
  } else {
    layout.lse = MemRefType::get({shape.batch, shape.heads, shape.seqQ}, f32);
    layout.keyTerms =
        MemRefType::get({shape.batch, shape.heads, shape.seqKv}, f32);
    layout.shares =
        MemRefType::get({shape.heads, shape.batch, shape.seqKv, d}, f32);
    layout.kvAcc =
        MemRefType::get({shape.kvHeads, shape.batch, shape.seqKv, d}, f32);
  }
  const int64_t keyBlocks = (shape.seqKv + kSinkBwdBlock - 1) / kSinkBwdBlock;
  layout.shareCounts = MemRefType::get(
      {shape.batch * shape.kvHeads * keyBlocks}, IntegerType::get(context, 32));
  // The sink terms: per query row (separate) or per key row (atomic).
  std::vector<uint64_t> termDims =
      form.atomicDq ? shape.keyRowDims() : shape.lseDims();
  int64_t termRows = std::accumulate(termDims.begin(), termDims.end(),
                                     int64_t(1), std::multiplies<int64_t>());
  layout.terms = MemRefType::get({termRows}, f32);
  const int64_t queryBlocks = (shape.seqQ + kSinkBwdBlock - 1) / kSinkBwdBlock;
  layout.stats = MemRefType::get(
      {shape.batch, shape.heads, queryBlocks, form.statsRows, kSinkBwdBlock},
      f32);
  const int64_t rows = form.atomicDq ? shape.seqKv : shape.seqQ;
  if (shape.varlen()) {
    layout.run = form.atomicDq ? shape.tokensKv() : shape.tokensQ();
    layout.runBatches = 1;
    layout.batchRows = 0;
  } else {
    layout.run = rows;
    layout.runBatches = shape.batch;
    layout.batchRows = shape.heads * rows;
  }
  return layout;
}

void SinkBwdLayout::appendSequenceArgs(SmallVectorImpl<Type> &types) const {
  if (varlen())
    types.append({offsets, offsets});
  if (!runTimeShapes)
    return;
  MLIRContext *context = offsets.getContext();
  Type f32 = Float32Type::get(context), i32 = IntegerType::get(context, 32);
  types.append({f32, f32});
  if (windowed)
    types.push_back(i32);
  types.append({i32, i32});
}

SinkBwdTrailingArgs SinkBwdLayout::trailingArgs(ArrayRef<BlockArgument> args,
                                                size_t next) const {
  SinkBwdTrailingArgs trailing;
  if (varlen())
    trailing.cuQ = args[next++], trailing.cuK = args[next++];
  if (!runTimeShapes)
    return trailing;
  trailing.scale = args[next++], trailing.scaleLog2 = args[next++];
  if (windowed)
    trailing.window = args[next++];
  trailing.unitQ = args[next++], trailing.unitK = args[next++];
  return trailing;
}

SinkBwdSequence SinkBwdLayout::buildSequence(ImplicitLocOpBuilder &b,
                                             const SinkBwdConstants &constants,
                                             Value batch, Value head, Value cuQ,
                                             Value cuK, Value kvHead) const {
  SinkBwdSequence sequence;
  sequence.batch = batch, sequence.head = head;
  if (runTimeShapes)
    sequence.kvHead = kvHead            ? kvHead
                      : constants.group ? divUI32(b, head, constants.group)
                                        : Value();
  else
    sequence.kvHead = arith::DivUIOp::create(b, head, constants.group);
  auto buildColumns = [&] {
    sequence.headDim = constantIndex(b, headDim);
    sequence.headColumn = arith::MulIOp::create(b, head, sequence.headDim);
    if (sequence.kvHead)
      sequence.kvHeadColumn =
          arith::MulIOp::create(b, sequence.kvHead, sequence.headDim);
  };
  if (varlen()) {
    SequenceBounds bounds = buildSequenceBounds(
        b, batch, cuQ, cuK, constants.c1, constants.unitQ, constants.unitK);
    sequence.qStart = bounds.qStart, sequence.kStart = bounds.kStart;
    sequence.seqQ = bounds.seqQ, sequence.seqKv = bounds.seqKv;
    buildColumns();
    sequence.lastRow =
        runTimeShapes ? constants.lastToken : constantIndex(b, lastRow);
  } else {
    sequence.seqQ = constantIndex(b, seqQ);
    sequence.seqKv = constantIndex(b, seqKv);
    sequence.qStart = constantIndex(b, 0);
    sequence.kStart = constantIndex(b, 0);
    sequence.lastRow = constantIndex(b, lastRow);
    buildColumns();
  }
  sequence.past = arith::SubIOp::create(b, sequence.seqKv, sequence.seqQ);
  return sequence;
}

SmallVector<Value> SinkBwdLayout::rowAt(const SinkBwdSequence &sequence,
                                        Value row) const {
  if (varlen())
    return {sequence.head, row};
  return {sequence.batch, sequence.head, row};
}

SmallVector<Value> SinkBwdLayout::elementAt(const SinkBwdSequence &sequence,
                                            Value row, Value column,
                                            Value headColumn) const {
  switch (kind) {
  case rt::AttentionLayout::BHSD:
    return {sequence.batch, sequence.head, row, column};
  case rt::AttentionLayout::BSHD:
    return {sequence.batch, row, headColumn};
  case rt::AttentionLayout::Varlen:
    return {row, headColumn};
  }
  llvm_unreachable("unknown layout");
}

SmallVector<Value> SinkBwdLayout::kvElementAt(const SinkBwdSequence &sequence,
                                              Value row, Value column,
                                              Value headColumn) const {
  switch (kind) {
  case rt::AttentionLayout::BHSD:
    return {sequence.batch, sequence.kvHead, row, column};
  case rt::AttentionLayout::BSHD:
    return {sequence.batch, row, headColumn};
  case rt::AttentionLayout::Varlen:
    return {row, headColumn};
  }
  llvm_unreachable("unknown layout");
}

SmallVector<Value> SinkBwdLayout::qTile(const SinkBwdSequence &sequence,
                                        Value row, Value c0) const {
  switch (kind) {
  case rt::AttentionLayout::BHSD:
    return {sequence.batch, sequence.head, row, c0};
  case rt::AttentionLayout::BSHD:
    return {sequence.batch, row, sequence.headColumn};
  case rt::AttentionLayout::Varlen:
    return {row, sequence.headColumn};
  }
  llvm_unreachable("unknown layout");
}

SmallVector<Value> SinkBwdLayout::kvTile(const SinkBwdSequence &sequence,
                                         Value row, Value c0) const {
  switch (kind) {
  case rt::AttentionLayout::BHSD:
    return {sequence.batch, sequence.kvHead, row, c0};
  case rt::AttentionLayout::BSHD:
    return {sequence.batch, row, sequence.kvHeadColumn};
  case rt::AttentionLayout::Varlen:
    return {row, sequence.kvHeadColumn};
  }
  llvm_unreachable("unknown layout");
}

Value sinkattn::kernels::buildSequenceView(ImplicitLocOpBuilder &b,
                                           Value buffer, int64_t rowDim,
                                           Value start, Value length) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t dim = 0; dim < type.getRank(); ++dim) {
    offsets.push_back(dim == rowDim ? OpFoldResult(start)
                                    : OpFoldResult(b.getIndexAttr(0)));
    // The other sizes as the buffer has them: static, or its run-time dims.
    sizes.push_back(dim == rowDim
                        ? OpFoldResult(length)
                        : memref::getMixedSize(b, b.getLoc(), buffer, dim));
    strides.push_back(b.getIndexAttr(1));
  }
  return memref::SubViewOp::create(b, buffer, offsets, sizes, strides);
}

void SinkBwdLayout::storeRows(ImplicitLocOpBuilder &b,
                              const SinkBwdSequence &sequence, Value rows,
                              Value dest, Value firstRow) const {
  if (!varlen()) {
    tile::StoreOp::create(b, rows, dest,
                          ValueRange{sequence.batch, sequence.head, firstRow});
    return;
  }
  Value view = buildSequenceView(b, dest, 1, sequence.qStart, sequence.seqQ);
  tile::StoreOp::create(b, rows, view, ValueRange{sequence.head, firstRow});
}

void SinkBwdLayout::storeQTile(ImplicitLocOpBuilder &b,
                               const SinkBwdSequence &sequence, Value tile,
                               Value dest, Value row, Value firstRow,
                               Value c0) const {
  if (!varlen()) {
    tile::StoreOp::create(b, tile, dest, qTile(sequence, row, c0));
    return;
  }
  Value view = buildSequenceView(b, dest, 0, sequence.qStart, sequence.seqQ);
  tile::StoreOp::create(b, tile, view,
                        ValueRange{firstRow, sequence.headColumn});
}

void SinkBwdLayout::storeQTileThroughShared(ImplicitLocOpBuilder &b,
                                            const SinkBwdSequence &sequence,
                                            Value tile, Value staging,
                                            Value dest, Value row,
                                            Value firstRow, Value c0) const {
  if (varlen()) {
    storeQTile(b, sequence, tile, dest, row, firstRow, c0);
    return;
  }
  tile::StoreOp::create(b, tile, staging, ValueRange{c0, c0});
  buildStoreTile(b, staging, dest, qTile(sequence, row, c0));
}

gpu::GPUFuncOp sinkattn::kernels::createBackwardKernel(ImplicitLocOpBuilder &b,
                                                       StringRef name,
                                                       TypeRange argTypes) {
  auto func = gpu::GPUFuncOp::create(b, name, b.getFunctionType(argTypes, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  // Run-time shapes: the launcher takes token rows 16 bytes apart (the
  // tensor maps need it), which lets register stores pair columns.
  for (auto [index, type] : llvm::enumerate(argTypes)) {
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref || !isa<StridedLayoutAttr>(memref.getLayout()))
      continue;
    const int64_t elementBytes = memref.getElementTypeBitWidth() / 8;
    func.setArgAttr(index, tile::TileDialect::kStrideMultipleAttrName,
                    b.getI64IntegerAttr(16 / elementBytes));
  }
  b.setInsertionPointToStart(&func.front());
  return func;
}

void sinkattn::kernels::setSharedTileBounds(gpu::GPUFuncOp func,
                                            int64_t warpgroups) {
  Builder b(func.getContext());
  func.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(128 * warpgroups), 1, 1}));
  func->setAttr("nvvm.minctasm", b.getI32IntegerAttr(1));
}

void sinkattn::kernels::finishBackwardKernel(ImplicitLocOpBuilder &b,
                                             gpu::GPUFuncOp func) {
  gpu::ReturnOp::create(b);
  b.setInsertionPointAfter(func);
}
