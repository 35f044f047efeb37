//===- TileFragmentsToNVVM.cpp - Register tiles to per-thread registers ---===//
//
// Lowers fragments with a #tile.layout to the registers one thread holds: a
// `vector<R x T>` per fragment (R = getRegistersPerThread), in the register
// order the layout documents (TileAttrs.td). tile.fill, tile.map,
// tile.reduce, tile.cast and tile.store become vector/arith/gpu ops;
// tile.gemm becomes wgmma through inline PTX (SS: both operands from
// swizzled shared memory through descriptors; RS: A from registers, which
// no MLIR op expresses).
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Conversion/Passes.h"
#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::tile;

namespace sinkattn {
#define GEN_PASS_DEF_CONVERTTILEFRAGMENTSTONVVM
#include "SinkAttn/Conversion/Passes.h.inc"
} // namespace sinkattn

namespace {
//===----------------------------------------------------------------------===//
// Thread coordinates and register placement
//===----------------------------------------------------------------------===//

Value indexConstant(OpBuilder &builder, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(builder, loc, value);
}

/// Where the calling thread's registers sit inside every 64-row block:
/// rows rowBase + {0, 8}, columns colBase + 8j + {0, 1}.
struct ThreadCoordinates {
  Value rowBase; ///< 16 * warp + lane / 4
  Value colBase; ///< 2 * (lane % 4)
  Value quadLeader; ///< lane % 4 == 0: one thread per row of a quad
};

ThreadCoordinates getThreadCoordinates(OpBuilder &builder, Location loc) {
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  // Layouts are per warpgroup: thread t of the fragment is tid % 128.
  Value t = arith::RemUIOp::create(builder, loc, tid, indexConstant(builder, loc, 128));
  Value warp = arith::DivUIOp::create(builder, loc, t, indexConstant(builder, loc, 32));
  Value lane = arith::RemUIOp::create(builder, loc, t, indexConstant(builder, loc, 32));
  Value group = arith::DivUIOp::create(builder, loc, lane, indexConstant(builder, loc, 4));
  Value quad = arith::RemUIOp::create(builder, loc, lane, indexConstant(builder, loc, 4));
  Value rowBase = arith::AddIOp::create(
      builder, loc,
      arith::MulIOp::create(builder, loc, warp, indexConstant(builder, loc, 16)),
      group);
  Value colBase =
      arith::MulIOp::create(builder, loc, quad, indexConstant(builder, loc, 2));
  Value quadLeader = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                           quad, indexConstant(builder, loc, 0));
  return {rowBase, colBase, quadLeader};
}

/// Constant row/column offsets of register `r` relative to the thread's
/// base coordinates, and the register of the row vector covering that row.
struct Placement {
  int64_t row = 0, col = 0;
  int64_t rowRegister = 0;
};

Placement getPlacement(FragmentType type, int64_t r) {
  Placement placement;
  if (*getLayoutKind(type) == LayoutKind::rows) {
    placement.row = 64 * (r / 2) + 8 * (r % 2);
    placement.rowRegister = r;
    return placement;
  }
  int64_t perBlock = type.getShape()[1] / 2;
  int64_t block = r / perBlock, rest = r % perBlock;
  int64_t j = rest / 4, h = (rest % 4) / 2, e = rest % 2;
  placement.row = 64 * block + 8 * h;
  placement.col = 8 * j + e;
  placement.rowRegister = 2 * block + h;
  return placement;
}

Value addOffset(OpBuilder &builder, Location loc, Value base, int64_t offset) {
  if (offset == 0)
    return base;
  return arith::AddIOp::create(builder, loc, base,
                               indexConstant(builder, loc, offset));
}

Value extractRegister(OpBuilder &builder, Location loc, Value vector,
                      int64_t r) {
  return vector::ExtractOp::create(builder, loc, vector, ArrayRef<int64_t>{r});
}

/// Whether registers r and r + 1 of a 2-D fragment are one thread's two
/// adjacent columns of a row, starting at an even column (the accumulator
/// placement's e = 0, 1): they can be stored as one 2-element vector.
bool startsColumnPair(FragmentType type, int64_t r) {
  if (r + 1 >= getRegistersPerThread(type))
    return false;
  Placement placement = getPlacement(type, r), next = getPlacement(type, r + 1);
  return placement.col % 2 == 0 && next.row == placement.row &&
         next.col == placement.col + 1;
}

/// Stores registers r and r + 1 (startsColumnPair) as one vector at
/// `indices` of `dest`, aligned to the pair's size.
void storeColumnPair(OpBuilder &builder, Location loc, FragmentType type,
                     Value value, int64_t r, Value dest, ValueRange indices) {
  Type element = type.getElementType();
  Value pair = vector::FromElementsOp::create(
      builder, loc, VectorType::get({2}, element),
      ValueRange{extractRegister(builder, loc, value, r),
                 extractRegister(builder, loc, value, r + 1)});
  vector::StoreOp::create(
      builder, loc, pair, dest, indices, /*nontemporal=*/false,
      /*alignment=*/llvm::MaybeAlign(element.getIntOrFloatBitWidth() / 4));
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

struct FillLowering : public OpConversionPattern<FillOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(FillOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type type = getTypeConverter()->convertType(op.getType());
    if (!type)
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, type, adaptor.getValue());
    return success();
  }
};

struct CastLowering : public OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(op.getType()));
    if (!type)
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    FragmentType source = op.getSource().getType();
    if (getRegistersPerThread(source) != type.getNumElements())
      return op.emitOpError() << "changes the register placement ("
                              << source << " to " << op.getType() << ")";
    Value input = adaptor.getSource();
    Type from = source.getElementType(), to = type.getElementType();
    // accumulator -> operand_a keeps every element in place: only the
    // element type changes (the NVPTX backend packs 16-bit pairs).
    if (from == to)
      rewriter.replaceOp(op, input);
    else if (from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
      rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, type, input);
    else
      rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, type, input);
    return success();
  }
};

/// The hardware form of math ops on f32 in a map body: ex2.approx.ftz and
/// lg2.approx.ftz for math.exp2 / math.log2 (what attention's softmax
/// wants) and fma.rn for math.fma, instead of the libdevice calls the
/// upstream GPU lowering would emit (we link no libdevice).
Value createHardwareMath(OpBuilder &builder, Operation *op, IRMapping &mapping) {
  if (auto fma = dyn_cast<math::FmaOp>(op)) {
    if (!fma.getType().isF32())
      return Value();
    return LLVM::FMAOp::create(builder, op->getLoc(),
                               mapping.lookupOrDefault(fma.getA()),
                               mapping.lookupOrDefault(fma.getB()),
                               mapping.lookupOrDefault(fma.getC()));
  }
  if (op->getNumOperands() != 1 || op->getNumResults() != 1)
    return Value();
  Value operand = mapping.lookupOrDefault(op->getOperand(0));
  StringRef intrinsic;
  if (isa<math::Exp2Op>(op))
    intrinsic = "llvm.nvvm.ex2.approx.ftz.f";
  else if (isa<math::Log2Op>(op))
    intrinsic = "llvm.nvvm.lg2.approx.ftz.f";
  else
    return Value();
  if (!operand.getType().isF32())
    return Value();
  return LLVM::CallIntrinsicOp::create(builder, op->getLoc(),
                                       builder.getF32Type(),
                                       builder.getStringAttr(intrinsic),
                                       ValueRange{operand})
      .getResult(0);
}

struct MapLowering : public OpConversionPattern<MapOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MapOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FragmentType resultType = op.getResult().getType();
    auto vectorType = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(resultType));
    if (!vectorType)
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    Location loc = op.getLoc();
    ThreadCoordinates coordinates = getThreadCoordinates(rewriter, loc);
    Block &body = op.getBody().front();
    int64_t rank = resultType.getRank();
    SmallVector<Value> elements;
    for (int64_t r = 0, e = vectorType.getNumElements(); r < e; ++r) {
      Placement placement = getPlacement(resultType, r);
      IRMapping mapping;
      mapping.map(body.getArgument(0),
                  addOffset(rewriter, loc, coordinates.rowBase, placement.row));
      if (rank == 2)
        mapping.map(body.getArgument(1), addOffset(rewriter, loc,
                                                   coordinates.colBase,
                                                   placement.col));
      for (auto [position, input] : llvm::enumerate(adaptor.getInputs())) {
        auto inputType = cast<FragmentType>(op.getInputs()[position].getType());
        // Same rank: same placement. A row vector broadcast along the
        // columns: the register of this row.
        int64_t index = inputType.getRank() == rank ? r : placement.rowRegister;
        mapping.map(body.getArgument(rank + position),
                    extractRegister(rewriter, loc, input, index));
      }
      for (Operation &inner : body.without_terminator()) {
        if (Value hardware = createHardwareMath(rewriter, &inner, mapping)) {
          mapping.map(inner.getResult(0), hardware);
          continue;
        }
        rewriter.clone(inner, mapping);
      }
      elements.push_back(
          mapping.lookupOrDefault(body.getTerminator()->getOperand(0)));
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vectorType, elements);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Row reductions
//===----------------------------------------------------------------------===//

Value combine(OpBuilder &builder, Location loc, ReduceKind kind, Value a,
              Value b) {
  bool isFloat = isa<FloatType>(a.getType());
  switch (kind) {
  case ReduceKind::max:
    return isFloat ? arith::MaxNumFOp::create(builder, loc, a, b).getResult()
                   : arith::MaxSIOp::create(builder, loc, a, b).getResult();
  case ReduceKind::min:
    return isFloat ? arith::MinNumFOp::create(builder, loc, a, b).getResult()
                   : arith::MinSIOp::create(builder, loc, a, b).getResult();
  case ReduceKind::sum:
    return isFloat ? arith::AddFOp::create(builder, loc, a, b).getResult()
                   : arith::AddIOp::create(builder, loc, a, b).getResult();
  }
  llvm_unreachable("unknown reduction");
}

/// Pairwise (tree) combination: independent operations first, for ILP.
Value combineTree(OpBuilder &builder, Location loc, ReduceKind kind,
                  SmallVector<Value> values) {
  while (values.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < values.size(); i += 2)
      next.push_back(combine(builder, loc, kind, values[i], values[i + 1]));
    if (values.size() % 2)
      next.push_back(values.back());
    values = std::move(next);
  }
  return values.front();
}

struct ReduceLowering : public OpConversionPattern<ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FragmentType sourceType = op.getSource().getType();
    auto vectorType = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(op.getType()));
    if (!vectorType || !getLayoutKind(sourceType))
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    Location loc = op.getLoc();
    Value source = adaptor.getSource();
    int64_t perBlock = sourceType.getShape()[1] / 2;
    int64_t blocks = sourceType.getShape()[0] / 64;
    SmallVector<Value> rows;
    for (int64_t block = 0; block < blocks; ++block)
      for (int64_t h = 0; h < 2; ++h) {
        // In-thread: the row's registers 4j + 2h + e of this block.
        SmallVector<Value> values;
        for (int64_t j = 0; j < perBlock / 4; ++j)
          for (int64_t e = 0; e < 2; ++e)
            values.push_back(extractRegister(rewriter, loc, source,
                                             block * perBlock + 4 * j + 2 * h + e));
        Value value = combineTree(rewriter, loc, op.getKind(), values);
        // Across the quad that shares the row: butterfly over lanes ^1, ^2.
        for (int32_t offset : {1, 2}) {
          Value shuffled =
              gpu::ShuffleOp::create(rewriter, loc, value, offset, 32,
                                     gpu::ShuffleMode::XOR)
                  .getShuffleResult();
          value = combine(rewriter, loc, op.getKind(), value, shuffled);
        }
        rows.push_back(value);
      }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vectorType, rows);
    return success();
  }
};

/// Columns g * W + c of the source combine into column c of the result. In
/// the accumulator layout both hold columns 8j + 2q + e in register
/// b * N/2 + 4j + 2h + e, so source register (b, j, h, e) goes to result
/// register (b, j mod W/8, h, e): every thread combines its own registers.
struct PartialReduceLowering : public OpConversionPattern<PartialReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PartialReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FragmentType sourceType = op.getSource().getType();
    FragmentType resultType = op.getType();
    auto vectorType = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(resultType));
    if (!vectorType || !getLayoutKind(sourceType))
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    Location loc = op.getLoc();
    int64_t sourcePerBlock = sourceType.getShape()[1] / 2;
    int64_t resultPerBlock = resultType.getShape()[1] / 2;
    int64_t resultSteps = resultPerBlock / 4; // W / 8 column steps
    SmallVector<SmallVector<Value>> groups(getRegistersPerThread(resultType));
    for (int64_t r = 0, e = getRegistersPerThread(sourceType); r < e; ++r) {
      int64_t block = r / sourcePerBlock, rest = r % sourcePerBlock;
      int64_t step = rest / 4, within = rest % 4; // within = 2h + e
      int64_t target =
          block * resultPerBlock + 4 * (step % resultSteps) + within;
      groups[target].push_back(
          extractRegister(rewriter, loc, adaptor.getSource(), r));
    }
    SmallVector<Value> registers;
    for (SmallVector<Value> &group : groups)
      registers.push_back(
          combineTree(rewriter, loc, op.getKind(), std::move(group)));
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vectorType,
                                                        registers);
    return success();
  }
};

/// Each register times its row's factor (Placement::rowRegister), inside
/// an scf.if that only threads with a factor other than exactly 1 enter:
/// the others keep their registers (x * 1 == x, so the value is the same).
struct ScaleRowsLowering : public OpConversionPattern<ScaleRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScaleRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FragmentType type = op.getType();
    FragmentType factorType = op.getFactors().getType();
    auto vectorType = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(type));
    if (!vectorType || !getLayoutKind(type) || !getLayoutKind(factorType))
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    Location loc = op.getLoc();
    Value source = adaptor.getSource(), factors = adaptor.getFactors();
    Type element = type.getElementType();
    Value one = arith::ConstantOp::create(rewriter, loc, element,
                                          rewriter.getFloatAttr(element, 1.0));
    SmallVector<Value> rowFactors;
    Value needed;
    for (int64_t r = 0, e = getRegistersPerThread(factorType); r < e; ++r) {
      rowFactors.push_back(extractRegister(rewriter, loc, factors, r));
      // Unordered: a NaN factor multiplies too.
      Value differs = arith::CmpFOp::create(
          rewriter, loc, arith::CmpFPredicate::UNE, rowFactors.back(), one);
      needed = needed ? arith::OrIOp::create(rewriter, loc, needed, differs)
                            .getResult()
                      : differs;
    }
    auto branch = scf::IfOp::create(rewriter, loc, TypeRange{vectorType},
                                    needed, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(branch.thenBlock());
      SmallVector<Value> scaled;
      for (int64_t r = 0, e = getRegistersPerThread(type); r < e; ++r)
        scaled.push_back(arith::MulFOp::create(
            rewriter, loc, extractRegister(rewriter, loc, source, r),
            rowFactors[getPlacement(type, r).rowRegister]));
      Value vector =
          vector::FromElementsOp::create(rewriter, loc, vectorType, scaled);
      scf::YieldOp::create(rewriter, loc, vector);
      rewriter.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(rewriter, loc, source);
    }
    rewriter.replaceOp(op, branch.getResults());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Stores
//===----------------------------------------------------------------------===//

/// Stores a 2-D fragment into a 128-byte-swizzled shared view at trailing
/// `indices` (checkSwizzledStore holds: the view is a whole tile or rows of
/// a one-panel tile, row-major, starting on a swizzle period; the row index
/// a multiple of 8, the column index of the panel width P).
///
/// Element (row, col) of the view lies at
///   view + panel(col) * rows * P + row * P + (chunk(col) ^ row % 8) * C
///        + col % C
/// (C elements per 16-byte chunk). The view starts on a multiple of 1024
/// bytes, the rows and panels above the chunk field, so the swizzle is an
/// XOR of the chunk field of the plain panel-major offset with row % 8.
/// A thread's registers lie at its base (rowBase, colBase) plus constants:
/// rows 8·h apart (the same row % 8), columns 8·j + e with colBase + e < 8.
/// So each register's offset is
///   ((A + kc · C) ^ M) + K
/// with A = view + panel(colIndex) · rows · P + (rowIndex + rowBase) · P
/// + colBase and M = (rowIndex + rowBase) % 8 · C per thread, kc · C the
/// column of the register's group of 8 in its panel (P / 8 values), and K its
/// panel, row and e constants, which fall outside the chunk field (no
/// carry into it). The stores then take K as an immediate offset from one
/// of P / 8 XOR-ed bases, computed where the store is: the view's offset
/// (a stage that changes per iteration) is inside them, so no per-register
/// address is hoisted out of a loop into a register of its own.
///
/// 32-bit elements go out as 8-byte column pairs, which shared memory serves
/// half a warp (four rows of the fragment) at a time: in the plain order
/// rows r and r ^ 1 of a half-warp write the same two chunks (their XOR
/// masks differ only in the lowest chunk bit), a 2-way bank conflict on
/// every store (ncu on the split's dQ share: 4 wavefronts per store instead
/// of 2; PERF.md, session 30). So threads of odd rows store, in the
/// instruction where the others store their group at column kc · C of the
/// panel, their group at kc · C ^ 16 (the panel's other half): each
/// half-warp then writes four distinct chunk pairs, 32 banks. The data
/// takes a select per register, the address the permuted group (still
/// one base per instruction).
void storeSwizzled(OpBuilder &builder, Location loc, FragmentType type,
                   Value value, Value dest, ValueRange indices,
                   const ThreadCoordinates &coordinates) {
  auto destType = cast<MemRefType>(dest.getType());
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  int64_t panelColumns = getSwizzlePanelColumns(bits);
  int64_t chunkElements = panelColumns / 8; // 16-byte chunks
  int64_t rows = destType.getShape()[destType.getRank() - 2];
  auto c = [&](int64_t v) { return indexConstant(builder, loc, v); };
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, dest);
  memref::AllocOp alloc = getSharedAllocation(dest);
  assert(alloc && "checkSwizzledStore: a shared allocation");
  auto flatType = MemRefType::get({alloc.getType().getNumElements()},
                                  destType.getElementType(),
                                  MemRefLayoutAttrInterface(),
                                  destType.getMemorySpace());
  Value flat = memref::ReinterpretCastOp::create(
      builder, loc, flatType, metadata.getBaseBuffer(), /*offset=*/0,
      ArrayRef<int64_t>{flatType.getNumElements()}, ArrayRef<int64_t>{1});
  Value threadRow =
      arith::AddIOp::create(builder, loc, indices[0], coordinates.rowBase);
  Value panelStart = arith::MulIOp::create(
      builder, loc,
      arith::DivUIOp::create(builder, loc, indices[1], c(panelColumns)),
      c(rows * panelColumns));
  Value base = arith::AddIOp::create(builder, loc, metadata.getOffset(),
                                     panelStart);
  base = arith::AddIOp::create(
      builder, loc, base,
      arith::MulIOp::create(builder, loc, threadRow, c(panelColumns)));
  base = arith::AddIOp::create(builder, loc, base, coordinates.colBase);
  Value mask = arith::MulIOp::create(
      builder, loc, arith::RemUIOp::create(builder, loc, threadRow, c(8)),
      c(chunkElements));
  // 8-byte pairs of whole panels: odd rows store the panel's other half in
  // each instruction (see above); registers 4 apart per group of 8 columns.
  int64_t columns = type.getShape()[1];
  bool swapHalves = bits == 32 && columns % panelColumns == 0;
  Value oddRow, halfSwap;
  if (swapHalves) {
    Value rowParity = arith::AndIOp::create(builder, loc, threadRow, c(1));
    oddRow = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ne,
                                   rowParity, c(0));
    halfSwap = arith::MulIOp::create(builder, loc, rowParity,
                                     c(panelColumns / 2));
  }
  // By the group's column in its panel (kc · C).
  DenseMap<int64_t, Value> chunkBases;
  for (int64_t r = 0, e = getRegistersPerThread(type); r < e; ++r) {
    Placement placement = getPlacement(type, r);
    int64_t group = placement.col - placement.col % 8;
    int64_t inPanel = group % panelColumns;
    int64_t constant = group / panelColumns * rows * panelColumns +
                       placement.row * panelColumns + placement.col % 8;
    Value &chunkBase = chunkBases[inPanel];
    if (!chunkBase) {
      Value column = c(inPanel);
      if (swapHalves)
        column = arith::XOrIOp::create(builder, loc, column, halfSwap);
      chunkBase = arith::XOrIOp::create(
          builder, loc, arith::AddIOp::create(builder, loc, base, column),
          mask);
    }
    Value offset = arith::AddIOp::create(builder, loc, chunkBase, c(constant));
    if (swapHalves && startsColumnPair(type, r)) {
      // The same row and columns in the panel's other half: group kc ^ 2.
      int64_t partner = r + 4 * (((inPanel / 8) ^ 2) - inPanel / 8);
      auto pick = [&](int64_t own, int64_t other) -> Value {
        // Sequenced, so that the IR does not depend on the host compiler's
        // order of evaluating arguments.
        Value ownRegister = extractRegister(builder, loc, value, own);
        Value otherRegister = extractRegister(builder, loc, value, other);
        return arith::SelectOp::create(builder, loc, oddRow, otherRegister,
                                       ownRegister);
      };
      Value first = pick(r, partner);
      Value second = pick(r + 1, partner + 1);
      Value pair = vector::FromElementsOp::create(
          builder, loc, VectorType::get({2}, type.getElementType()),
          ValueRange{first, second});
      vector::StoreOp::create(builder, loc, pair, flat, offset,
                              /*nontemporal=*/false, llvm::MaybeAlign(8));
      ++r;
      continue;
    }
    // A thread's two adjacent columns are adjacent elements here too: one
    // 32- or 64-bit store.
    if (startsColumnPair(type, r)) {
      storeColumnPair(builder, loc, type, value, r, flat, offset);
      ++r;
      continue;
    }
    memref::StoreOp::create(builder, loc, extractRegister(builder, loc, value, r),
                            flat, offset);
  }
}

/// Whether a plain store of a 2-D fragment may write each thread's two
/// adjacent columns (2·(lane % 4) + 8·j and the next) as one 2-element
/// vector: the destination's rows start at even elements (hasAlignedRows)
/// and so does the pair (an even column index), and with an even last
/// dimension a pair lies inside or outside the tensor as a whole. A pair
/// is one store instruction where its elements would take two.
bool canStoreColumnPairs(StoreOp op) {
  if (op.getAdd() || op.getValue().getType().getRank() != 2 ||
      *getLayoutKind(op.getValue().getType()) == LayoutKind::rows)
    return false;
  int64_t columns = op.getDest().getType().getShape().back();
  return !ShapedType::isDynamic(columns) && columns % 2 == 0 &&
         hasAlignedRows(op.getDest(), 2) &&
         isProvableMultipleOf(op.getIndices().back(), 2);
}

/// Stores a fragment element by element into a plain (unswizzled) shared
/// tile or a global tensor at `indices`: elements outside a global tensor
/// are skipped, row vectors are stored by one thread per quad, `add`
/// makes each an atomic add, and adjacent columns go as pairs where
/// canStoreColumnPairs allows.
void storeByElement(OpBuilder &builder, Location loc, StoreOp op, Value value,
                    Value dest, ValueRange destIndices,
                    const ThreadCoordinates &coordinates) {
  FragmentType type = op.getValue().getType();
  MemRefType destType = op.getDest().getType();
  int64_t rank = type.getRank();
  int64_t lead = destType.getRank() - rank;
  SmallVector<Value> dims;
  if (!isSharedMemory(destType))
    for (int64_t d = lead; d < destType.getRank(); ++d)
      dims.push_back(memref::DimOp::create(builder, loc, dest, d));
  bool isRows = *getLayoutKind(type) == LayoutKind::rows;
  bool pairs = canStoreColumnPairs(op);
  for (int64_t r = 0, e = getRegistersPerThread(type); r < e; ++r) {
    Placement placement = getPlacement(type, r);
    SmallVector<Value> indices(destIndices);
    Value row = addOffset(builder, loc, coordinates.rowBase, placement.row);
    Value element = extractRegister(builder, loc, value, r);
    // colBase is even, so a pair's first column is too.
    bool pair = pairs && startsColumnPair(type, r);
    indices[lead] = arith::AddIOp::create(builder, loc, indices[lead], row);
    if (rank == 2)
      indices[lead + 1] = arith::AddIOp::create(
          builder, loc, indices[lead + 1],
          addOffset(builder, loc, coordinates.colBase, placement.col));
    // Global tiles may hang over the tensor's end: skip those elements.
    // Row vectors are replicated over a quad: one thread stores.
    Value condition = isRows ? coordinates.quadLeader : Value();
    for (auto [d, dim] : llvm::enumerate(dims)) {
      Value inBounds = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ult, indices[lead + d], dim);
      condition = condition ? arith::AndIOp::create(builder, loc, condition,
                                                    inBounds).getResult()
                            : inBounds;
    }
    OpBuilder::InsertionGuard insertion(builder);
    if (condition) {
      auto guard = scf::IfOp::create(builder, loc, condition, /*withElse=*/false);
      builder.setInsertionPointToStart(&guard.getThenRegion().front());
    }
    if (pair) {
      storeColumnPair(builder, loc, type, value, r, dest, indices);
      ++r;
    } else if (op.getAdd()) {
      memref::AtomicRMWOp::create(builder, loc, arith::AtomicRMWKind::addf,
                                  element, dest, indices);
    } else {
      memref::StoreOp::create(builder, loc, element, dest, indices);
    }
  }
}

struct StoreLowering : public OpConversionPattern<StoreOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FragmentType type = op.getValue().getType();
    if (!getLayoutKind(type))
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    Location loc = op.getLoc();
    bool shared = isSharedMemory(op.getDest().getType());
    ThreadCoordinates coordinates = getThreadCoordinates(rewriter, loc);
    if (shared && getSwizzleBytes(op.getDest()))
      storeSwizzled(rewriter, loc, type, adaptor.getValue(), adaptor.getDest(),
                    adaptor.getIndices().take_back(2), coordinates);
    else
      storeByElement(rewriter, loc, op, adaptor.getValue(), adaptor.getDest(),
                     adaptor.getIndices(), coordinates);
    // Each thread makes its shared-memory writes visible to the async proxy
    // (TMA, wgmma) that may read the tile next; the block sync that orders
    // them before the reader is the kernel's (tile.copy to global has one).
    if (shared)
      NVVM::FenceProxyOp::create(
          rewriter, loc, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(rewriter.getContext(),
                                     NVVM::SharedSpace::shared_cta));
    rewriter.eraseOp(op);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// wgmma
//===----------------------------------------------------------------------===//

/// The wgmma matrix descriptor of a 128-byte-swizzled shared tile whose
/// panels are `panelBytes` apart, without its start address: leading byte
/// offset = panel stride, stride byte offset = 1024 (8 rows of 128 bytes),
/// layout type 1 (128B swizzle), all in 16-byte units.
uint64_t descriptorTemplate(int64_t panelBytes) {
  uint64_t leading = uint64_t(panelBytes) >> 4;
  uint64_t stride = 1024 >> 4;
  return (leading & 0x3FFF) << 16 | (stride & 0x3FFF) << 32 | uint64_t(1) << 62;
}

/// Descriptor of `tile` with its start address filled in (14 bits of the
/// shared address in 16-byte units). `tile` is whole rows of a swizzled
/// allocation's `rows x cols` tiles (maybe of one stage of them), or whole
/// 64-column panels of them: its memref offset counts row-major elements,
/// but the rows are stored in panels of 128 bytes, so row r of a tile
/// starts r * 128 bytes into the tile's first panel, not r * cols * bytes,
/// and column c (a multiple of 64, tile-assign-layouts checked it) is the
/// start of panel c / 64, `panelBytes` apart.
Value createDescriptor(OpBuilder &builder, Location loc, Value tile,
                       int64_t panelBytes) {
  auto type = cast<MemRefType>(tile.getType());
  MemRefType allocType = getSharedAllocation(tile).getType();
  int64_t cols = allocType.getShape().back();
  int64_t tileElements = allocType.getShape()[allocType.getRank() - 2] * cols;
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  auto metadata = memref::ExtractStridedMetadataOp::create(builder, loc, tile);
  Value aligned = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, tile);
  Value offset = metadata.getOffset();
  Value inTile = arith::RemUIOp::create(builder, loc, offset,
                                        indexConstant(builder, loc, tileElements));
  Value tileStart = arith::SubIOp::create(builder, loc, offset, inTile);
  Value row = arith::DivUIOp::create(builder, loc, inTile,
                                     indexConstant(builder, loc, cols));
  Value bytes = arith::AddIOp::create(
      builder, loc,
      arith::MulIOp::create(builder, loc, tileStart,
                            indexConstant(builder, loc, elementBytes)),
      arith::MulIOp::create(builder, loc, row, indexConstant(builder, loc, 128)));
  // A column slice: add its panel's offset. (Whole-row operands skip this,
  // so their code does not change.)
  if (type.getShape().back() != cols) {
    Value col = arith::RemUIOp::create(builder, loc, inTile,
                                       indexConstant(builder, loc, cols));
    const int64_t columnsPerPanel =
        getSwizzlePanelColumns(type.getElementTypeBitWidth());
    Value panelColumns = indexConstant(builder, loc, columnsPerPanel);
    Value panel = arith::DivUIOp::create(builder, loc, col, panelColumns);
    bytes = arith::AddIOp::create(
        builder, loc, bytes,
        arith::MulIOp::create(builder, loc, panel,
                              indexConstant(builder, loc, panelBytes)));
    // A half-panel slice starts inside its panel's rows.
    if (type.getShape().back() < columnsPerPanel) {
      Value inPanel = arith::RemUIOp::create(builder, loc, col, panelColumns);
      bytes = arith::AddIOp::create(
          builder, loc, bytes,
          arith::MulIOp::create(builder, loc, inPanel,
                                indexConstant(builder, loc, elementBytes)));
    }
  }
  Value address = arith::AddIOp::create(builder, loc, aligned, bytes);
  Value address64 = arith::IndexCastUIOp::create(builder, loc,
                                                 builder.getI64Type(), address);
  auto i64 = [&](uint64_t v) {
    return arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), v);
  };
  Value field = arith::AndIOp::create(
      builder, loc, arith::ShRUIOp::create(builder, loc, address64, i64(4)),
      i64(0x3FFF));
  return arith::OrIOp::create(builder, loc, field,
                              i64(descriptorTemplate(panelBytes)));
}

/// Adds a byte offset to a descriptor's start address (the field does not
/// overflow: shared memory ends below 2^18 bytes), as an asm with side
/// effects that LLVM neither hoists nor folds: a loop's descriptors are
/// mostly loop-invariant, and hoisted, every k-step's 64-bit descriptor of
/// every gemm held two registers across the loop (the atomic D 128 dK/dV
/// kernel spilled 352 bytes; 36 with the adds beside their wgmma, which
/// ptxas then does on the uniform datapath).
Value advanceDescriptor(OpBuilder &builder, Location loc, Value descriptor,
                        int64_t bytes) {
  if (bytes == 0)
    return descriptor;
  return LLVM::InlineAsmOp::create(
             builder, loc, builder.getI64Type(), ValueRange{descriptor},
             "add.s64 $0, $1, " + std::to_string(bytes >> 4) + ";", "=l,l",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::TailCallKind::None,
             LLVM::AsmDialectAttr::get(builder.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getResult(0);
}

/// Keeps LLVM from moving uses of `value` above the wgmma wait (the asm
/// results are only valid once the group completed): an empty asm that
/// "redefines" each register, as CUTLASS's warpgroup_fence_operand does.
Value fenceOperand(OpBuilder &builder, Location loc, Value value) {
  return LLVM::InlineAsmOp::create(
             builder, loc, value.getType(), ValueRange{value}, "",
             value.getType().isF32() ? "=f,0" : "=r,0",
             /*has_side_effects=*/true, /*is_align_stack=*/false,
             LLVM::TailCallKind::None,
             LLVM::AsmDialectAttr::get(builder.getContext(),
                                       LLVM::AsmDialect::AD_ATT),
             ArrayAttr())
      .getResult(0);
}

struct GemmLowering : public OpConversionPattern<GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GemmOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FragmentType accType = op.getAcc().getType();
    auto vectorType = dyn_cast_or_null<VectorType>(
        getTypeConverter()->convertType(accType));
    if (!vectorType)
      return rewriter.notifyMatchFailure(op, "fragment without a layout");
    int64_t m = accType.getShape()[0], n = accType.getShape()[1];
    bool registerA = isa<FragmentType>(op.getA().getType());
    auto aShape = registerA ? cast<FragmentType>(op.getA().getType()).getShape()
                            : cast<MemRefType>(op.getA().getType()).getShape();
    bool transposeA = op.getTransposeA();
    int64_t k = transposeA ? aShape[0] : aShape[1];

    Location loc = op.getLoc();
    Type element = cast<MemRefType>(op.getB().getType()).getElementType();
    StringRef typeName = element.isBF16() ? "bf16" : "f16";
    bool transposeB = op.getTransposeB();
    // B's descriptor: K-major (transpose_b, N x K) panels of N rows, or
    // MN-major (K x N, N contiguous; wgmma's "transposed" B) panels of K rows.
    // Panels are as tall as the allocation's tiles (an operand may be some
    // of their rows).
    auto panelBytes = [](Value tile) {
      MemRefType allocType = getSharedAllocation(tile).getType();
      return allocType.getShape()[allocType.getRank() - 2] * 128;
    };
    int64_t bPanelBytes = panelBytes(op.getB());
    Value descriptorB = createDescriptor(rewriter, loc, adaptor.getB(), bPanelBytes);
    Value descriptorA;
    int64_t aPanelBytes = 0;
    if (!registerA) {
      aPanelBytes = panelBytes(op.getA());
      descriptorA = createDescriptor(rewriter, loc, adaptor.getA(), aPanelBytes);
    }
    Value one = arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(), 1);
    // A zero accumulator (tile.fill of 0.0) is never read: the first k step
    // runs with scale-d = 0 on undefined registers. Materializing the zeros
    // would cost a move per register, and ptxas, sharing one zero register
    // among them, makes a second in-flight wgmma wait for the first
    // (C7517) when both start from zero.
    bool zeroAccumulator = false;
    if (auto fill = op.getAcc().getDefiningOp<FillOp>())
      zeroAccumulator = matchPattern(fill.getValue(), m_AnyZeroFloat());
    Value zero = arith::ConstantIntOp::create(rewriter, loc, rewriter.getI32Type(), 0);

    int64_t perBlock = n / 2;
    SmallVector<Value> accumulators;
    for (int64_t r = 0; r < vectorType.getNumElements(); ++r)
      accumulators.push_back(
          zeroAccumulator
              ? LLVM::PoisonOp::create(rewriter, loc, rewriter.getF32Type())
                    .getResult()
              : extractRegister(rewriter, loc, adaptor.getAcc(), r));

    // The asm: outputs $0..$(perBlock-1), then A (descriptor or 4 registers),
    // B's descriptor, scale-d, and the accumulators tied to the outputs.
    std::string outputs, constraints;
    for (int64_t i = 0; i < perBlock; ++i) {
      outputs += (i ? ", $" : "$") + std::to_string(i);
      constraints += i ? ",=f" : "=f";
    }
    int64_t next = perBlock;
    std::string aText;
    if (registerA) {
      aText = "{$" + std::to_string(next) + ", $" + std::to_string(next + 1) +
              ", $" + std::to_string(next + 2) + ", $" + std::to_string(next + 3) + "}";
      constraints += ",r,r,r,r";
      next += 4;
    } else {
      aText = "$" + std::to_string(next);
      constraints += ",l";
      next += 1;
    }
    std::string bText = "$" + std::to_string(next);
    std::string scaleText = "$" + std::to_string(next + 1);
    constraints += ",l,r";
    for (int64_t i = 0; i < perBlock; ++i)
      constraints += "," + std::to_string(i);
    std::string shape = "m64n" + std::to_string(n) + "k16";
    std::string asmText =
        "{\n.reg .pred p;\nsetp.ne.b32 p, " + scaleText + ", 0;\n"
        "wgmma.mma_async.sync.aligned." + shape + ".f32." + typeName.str() + "." +
        typeName.str() + " {" + outputs + "}, " + aText + ", " + bText +
        ", p, 1, 1" + (registerA ? "" : transposeA ? ", 1" : ", 0") + ", " +
        (transposeB ? "0" : "1") + ";\n}";
    MLIRContext *context = op.getContext();
    auto structType = LLVM::LLVMStructType::getLiteral(
        context, SmallVector<Type>(perBlock, rewriter.getF32Type()));
    auto attDialect = LLVM::AsmDialectAttr::get(context, LLVM::AsmDialect::AD_ATT);

    NVVM::WgmmaFenceAlignedOp::create(rewriter, loc);
    for (int64_t step = 0; step < k / 16; ++step) {
      // Within a panel a k16 step is 32 bytes along the 128-byte row;
      // panels of 64 columns follow each other.
      int64_t panel = step / 4, inPanel = (step % 4) * 32;
      Value stepB = transposeB
                        ? advanceDescriptor(rewriter, loc, descriptorB,
                                            panel * bPanelBytes + inPanel)
                        : advanceDescriptor(rewriter, loc, descriptorB,
                                            step * 16 * 128);
      for (int64_t block = 0; block < m / 64; ++block) {
        SmallVector<Value> operands;
        if (registerA) {
          // Packed pairs 8s .. 8s+7 of the block: (g, 2q), (g+8, 2q),
          // (g, 2q+8), (g+8, 2q+8) as the PTX A fragment orders them.
          int64_t first = block * (k / 2) + 8 * step;
          SmallVector<Value> pairs;
          for (int64_t i = 0; i < 8; ++i)
            pairs.push_back(extractRegister(rewriter, loc, adaptor.getA(), first + i));
          Value slice = vector::FromElementsOp::create(
              rewriter, loc, VectorType::get({8}, element), pairs);
          Value words = vector::BitCastOp::create(
              rewriter, loc, VectorType::get({4}, rewriter.getI32Type()), slice);
          for (int64_t w = 0; w < 4; ++w)
            operands.push_back(extractRegister(rewriter, loc, words, w));
        } else if (transposeA) {
          // MN-major A (K x M, as B without transpose_b): a k16 step is 16
          // rows of 128 bytes; each 64-row block of M is a panel of its own.
          operands.push_back(advanceDescriptor(
              rewriter, loc, descriptorA, block * aPanelBytes + step * 16 * 128));
        } else {
          operands.push_back(advanceDescriptor(
              rewriter, loc, descriptorA,
              panel * aPanelBytes + block * 64 * 128 + inPanel));
        }
        operands.push_back(stepB);
        operands.push_back(step == 0 && zeroAccumulator ? zero : one);
        for (int64_t i = 0; i < perBlock; ++i)
          operands.push_back(accumulators[block * perBlock + i]);
        auto wgmma = LLVM::InlineAsmOp::create(
            rewriter, loc, structType, operands, asmText, constraints,
            /*has_side_effects=*/true, /*is_align_stack=*/false,
            LLVM::TailCallKind::None, attDialect, ArrayAttr());
        for (int64_t i = 0; i < perBlock; ++i)
          accumulators[block * perBlock + i] = LLVM::ExtractValueOp::create(
              rewriter, loc, wgmma.getResult(0), ArrayRef<int64_t>{i});
      }
    }
    NVVM::WgmmaGroupSyncAlignedOp::create(rewriter, loc);
    // An async gemm leaves waiting (and fencing) to its tile.gemm_wait.
    if (!op.getAsync()) {
      NVVM::WgmmaWaitGroupSyncOp::create(rewriter, loc, 0);
      for (Value &accumulator : accumulators)
        accumulator = fenceOperand(rewriter, loc, accumulator);
    }
    rewriter.replaceOpWithNewOp<vector::FromElementsOp>(op, vectorType,
                                                        accumulators);
    return success();
  }
};

struct GemmWaitLowering : public OpConversionPattern<GemmWaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GemmWaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    NVVM::WgmmaWaitGroupSyncOp::create(rewriter, loc, op.getPending());
    SmallVector<Value> results;
    for (Value fragment : adaptor.getFragments()) {
      auto type = cast<VectorType>(fragment.getType());
      SmallVector<Value> registers;
      for (int64_t r = 0; r < type.getNumElements(); ++r)
        registers.push_back(
            fenceOperand(rewriter, loc, extractRegister(rewriter, loc, fragment, r)));
      results.push_back(
          vector::FromElementsOp::create(rewriter, loc, type, registers));
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// What the patterns cannot lower, diagnosed before the conversion starts
/// (so the error is the reason, not "failed to legalize").
LogicalResult checkLowerable(Operation *op) {
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getAsync())
      for (Operation *user : gemm.getResult().getUsers()) {
        auto next = dyn_cast<GemmOp>(user);
        if (!isa<GemmWaitOp>(user) &&
            !(next && next.getAsync() && next.getAcc() == gemm.getResult()))
          return gemm.emitOpError()
                 << "is async, but its result is used by '"
                 << user->getName()
                 << "' before a tile.gemm_wait (only tile.gemm_wait or the "
                    "accumulator of another async gemm may read it)";
      }
    FragmentType accType = gemm.getAcc().getType();
    if (!accType.getElementType().isF32())
      return gemm.emitOpError() << "accumulates in " << accType.getElementType()
                                << "; the wgmma lowering supports f32 "
                                   "accumulators";
    bool registerA = isa<FragmentType>(gemm.getA().getType());
    auto aShape = registerA
                      ? cast<FragmentType>(gemm.getA().getType()).getShape()
                      : cast<MemRefType>(gemm.getA().getType()).getShape();
    int64_t n = accType.getShape()[1], k = aShape[1];
    if (n > 256 || k % 16 != 0)
      return gemm.emitOpError() << "needs N <= 256 and K a multiple of 16 for "
                                   "wgmma.m64nNk16, got N = "
                                << n << ", K = " << k;
    for (auto [name, tile] : {std::pair<StringRef, Value>{"B", gemm.getB()},
                              {"A", registerA ? Value() : gemm.getA()}})
      if (tile && (getSwizzleBytes(tile) != 128 || !getSharedAllocation(tile)))
        return gemm.emitOpError()
               << "operand " << name
               << " is not a 128-byte-swizzled shared tile; run "
                  "tile-assign-layouts (and tile-lower-copies) first";
  } else if (auto wait = dyn_cast<GemmWaitOp>(op)) {
    for (Value fragment : wait.getFragments())
      if (!cast<FragmentType>(fragment.getType()).getElementType().isF32())
        return wait.emitOpError()
               << "waits for " << fragment.getType()
               << "; gemm results (and what waits with them) are f32 "
                  "fragments";
  } else if (auto reduce = dyn_cast<ReduceOp>(op)) {
    Type element = reduce.getSource().getType().getElementType();
    if (!element.isF32() && !element.isInteger(32))
      return reduce.emitOpError() << "reduces " << element
                                  << " elements; the lowering shuffles 32-bit "
                                     "values (f32 or i32)";
  } else if (auto scale = dyn_cast<ScaleRowsOp>(op)) {
    if (getLayoutKind(scale.getType()) != LayoutKind::accumulator)
      return scale.emitOpError()
             << "scales the rows of " << scale.getType()
             << "; the lowering handles #tile.layout<accumulator> fragments "
                "only";
  } else if (auto partial = dyn_cast<PartialReduceOp>(op)) {
    for (FragmentType type :
         {partial.getSource().getType(), partial.getType()})
      if (getLayoutKind(type) != LayoutKind::accumulator)
        return partial.emitOpError()
               << "combines columns of " << type
               << "; the lowering handles #tile.layout<accumulator> "
                  "fragments only";
    // As tile.reduce: 32-bit values, so that a partial tile reduced later
    // gives the same row values (no 16-bit sums, no i1 max as signed).
    Type element = partial.getSource().getType().getElementType();
    if (!element.isF32() && !element.isInteger(32))
      return partial.emitOpError()
             << "combines " << element
             << " elements; the lowering handles f32 and i32";
  } else if (auto store = dyn_cast<StoreOp>(op)) {
    MemRefType destType = store.getDest().getType();
    FragmentType type = store.getValue().getType();
    if (isSharedMemory(destType) && getSwizzleBytes(store.getDest())) {
      std::string reason = checkSwizzledStore(store);
      if (!reason.empty())
        return store.emitOpError()
               << "stores " << type
               << " into a swizzled shared tile, which it cannot: " << reason;
    }
  }
  return success();
}

struct ConvertTileFragmentsToNVVMPass
    : public sinkattn::impl::ConvertTileFragmentsToNVVMBase<
          ConvertTileFragmentsToNVVMPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    // Every fragment needs its layout: say which one does not have it.
    WalkResult missing = getOperation()->walk([&](Operation *op) {
      for (Value result : op->getResults())
        if (auto type = dyn_cast<FragmentType>(result.getType()))
          if (!getLayoutKind(type)) {
            op->emitOpError() << "produces " << type
                              << ", which has no layout; run "
                                 "tile-assign-layouts first";
            return WalkResult::interrupt();
          }
      if (failed(checkLowerable(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (missing.wasInterrupted())
      return signalPassFailure();

    TypeConverter converter;
    converter.addConversion([](Type type) { return type; });
    converter.addConversion([](FragmentType type) -> std::optional<Type> {
      if (!getLayoutKind(type))
        return std::nullopt;
      return VectorType::get({getRegistersPerThread(type)},
                             type.getElementType());
    });
    auto materialize = [](OpBuilder &builder, Type type, ValueRange inputs,
                          Location loc) -> Value {
      return UnrealizedConversionCastOp::create(builder, loc, type, inputs)
          .getResult(0);
    };
    converter.addSourceMaterialization(materialize);
    converter.addTargetMaterialization(materialize);

    ConversionTarget target(*context);
    target.addLegalDialect<arith::ArithDialect, gpu::GPUDialect,
                           LLVM::LLVMDialect, math::MathDialect,
                           memref::MemRefDialect, NVVM::NVVMDialect,
                           scf::SCFDialect, vector::VectorDialect>();
    target.addIllegalOp<FillOp, MapOp, YieldOp, ReduceOp, PartialReduceOp,
                        ScaleRowsOp, CastOp, GemmOp, GemmWaitOp, StoreOp>();
    RewritePatternSet patterns(context);
    patterns.add<FillLowering, CastLowering, MapLowering, ReduceLowering,
                 PartialReduceLowering, ScaleRowsLowering, StoreLowering,
                 GemmLowering, GemmWaitLowering>(converter, context);
    scf::populateSCFStructuralTypeConversionsAndLegality(converter, patterns,
                                                         target);
    // Ops of the body of a tile.map are cloned by its lowering; tile ops
    // other than fragment ops (copies, barriers) stay for later passes.
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
