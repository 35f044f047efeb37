//===- Utils.cpp - Helpers shared by the tile transformations -------------===//

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

sinkattn::tile::ThreadRole sinkattn::tile::getThreadRole(Operation *op) {
  for (Operation *parent = op; parent; parent = parent->getParentOp()) {
    auto base = parent->getAttrOfType<IntegerAttr>(kThreadBaseAttrName);
    auto count = parent->getAttrOfType<IntegerAttr>(kThreadCountAttrName);
    if (base && count) {
      ThreadRole role;
      role.base = base.getInt();
      role.count = count.getInt();
      // Barrier 0 is the block's; roles get 1 + their first warpgroup.
      role.barrierId = 1 + role.base / 128;
      return role;
    }
  }
  return ThreadRole();
}

Value sinkattn::tile::createLeaderPredicate(OpBuilder &builder, Location loc,
                                            Operation *anchor) {
  ThreadRole role = anchor ? getThreadRole(anchor) : ThreadRole();
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value leader = arith::ConstantIndexOp::create(builder, loc, role.base);
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, tid,
                               leader);
}

void sinkattn::tile::createRoleSync(OpBuilder &builder, Location loc,
                                    Operation *anchor) {
  ThreadRole role = getThreadRole(anchor);
  if (role.count == 0) {
    gpu::BarrierOp::create(builder, loc);
    return;
  }
  auto i32 = [&](int64_t v) {
    return arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), v);
  };
  NVVM::BarrierOp::create(builder, loc, TypeRange{}, i32(role.barrierId),
                          i32(role.count), NVVM::BarrierReductionAttr(),
                          Value());
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
