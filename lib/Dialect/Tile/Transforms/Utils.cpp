//===- Utils.cpp - Helpers shared by the tile transformations -------------===//

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

Value sinkattn::tile::createLeaderPredicate(OpBuilder &builder, Location loc) {
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, tid,
                               zero);
}

Value sinkattn::tile::createIterationIndex(OpBuilder &builder,
                                           scf::ForOp loop) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(loop.getBody());
  Location loc = loop.getLoc();
  Value offset = arith::SubIOp::create(builder, loc, loop.getInductionVar(),
                                       loop.getLowerBound());
  return arith::DivUIOp::create(builder, loc, offset, loop.getStep());
}

int64_t sinkattn::tile::memrefBytes(MemRefType type) {
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

bool sinkattn::tile::isSameSlot(Value barriers, Value index,
                                Value otherBarriers, Value otherIndex) {
  if (barriers != otherBarriers)
    return false;
  if (index == otherIndex)
    return true;
  std::optional<int64_t> a = getConstantIntValue(index);
  std::optional<int64_t> b = getConstantIntValue(otherIndex);
  return a && b && *a == *b;
}
