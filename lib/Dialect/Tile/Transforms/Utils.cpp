//===- Utils.cpp - Helpers shared by the tile transformations -------------===//

#include "Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

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

void sinkattn::tile::createWarpgroupSync(OpBuilder &builder, Location loc) {
  // One op per statement: argument evaluation order differs between
  // compilers, and the IR's order should not.
  Type i32 = builder.getI32Type();
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value threads = arith::ConstantIndexOp::create(builder, loc, 128);
  Value warpgroup = arith::DivUIOp::create(builder, loc, tid, threads);
  Value first =
      arith::ConstantIntOp::create(builder, loc, i32, kFirstWarpgroupBarrier);
  Value warpgroup32 = arith::IndexCastUIOp::create(builder, loc, i32, warpgroup);
  Value id = arith::AddIOp::create(builder, loc, warpgroup32, first);
  Value count = arith::ConstantIntOp::create(builder, loc, i32, 128);
  NVVM::BarrierOp::create(builder, loc, TypeRange{}, id, count,
                          NVVM::BarrierReductionAttr(), Value());
}

Value sinkattn::tile::createWarpgroupLeaderPredicate(OpBuilder &builder,
                                                     Location loc) {
  Value tid = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value threads = arith::ConstantIndexOp::create(builder, loc, 128);
  Value lane = arith::RemUIOp::create(builder, loc, tid, threads);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  return arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, lane,
                               zero);
}

Value sinkattn::tile::createIterationIndex(OpBuilder &builder,
                                           scf::ForOp loop) {
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(loop.getBody());
  Location loc = loop.getLoc();
  Value offset = arith::SubIOp::create(builder, loc, loop.getInductionVar(),
                                       loop.getLowerBound());
  Value iteration = arith::DivUIOp::create(builder, loc, offset, loop.getStep());
  // Loops may count in any integer type; stages and parities are indices.
  if (!iteration.getType().isIndex())
    iteration = arith::IndexCastUIOp::create(builder, loc,
                                             builder.getIndexType(), iteration);
  return iteration;
}

FailureOr<Value> sinkattn::tile::createExecutionCount(RewriterBase &rewriter,
                                                     Operation *op,
                                                     std::string &why) {
  // The region ops between `op` and the function body, innermost first.
  SmallVector<Operation *> ancestors;
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<FunctionOpInterface>(parent))
      break;
    if (!isa<scf::ForOp, scf::IfOp>(parent)) {
      why = "'" + parent->getName().getStringRef().str() + "'";
      return failure();
    }
    ancestors.push_back(parent);
  }
  Location loc = op->getLoc();
  auto func = op->getParentOfType<FunctionOpInterface>();
  rewriter.setInsertionPointToStart(&func.getFunctionBody().front());
  Value before = arith::ConstantIndexOp::create(rewriter, loc, 0);
  // Top-down: every enclosing op gets a slot holding the count, its body
  // sees the count before it; the slots' yields are patched bottom-up.
  // `child` is the ancestor (or `op`) inside the op being rebuilt.
  struct Level {
    Operation *rebuilt;
    Region *childRegion; ///< the region of `rebuilt` that holds the child
  };
  SmallVector<Level> levels;
  for (Operation *ancestor : llvm::reverse(ancestors)) {
    Operation *child = ancestors.front() == ancestor
                           ? op
                           : *std::prev(llvm::find(ancestors, ancestor));
    if (auto loop = dyn_cast<scf::ForOp>(ancestor)) {
      rewriter.setInsertionPoint(loop);
      auto grown = cast<scf::ForOp>(*loop.replaceWithAdditionalYields(
          rewriter, before, /*replaceInitOperandUsesInLoop=*/false,
          [](OpBuilder &, Location, ArrayRef<BlockArgument> current) {
            return SmallVector<Value>(current.begin(), current.end());
          }));
      levels.push_back({grown, &grown.getRegion()});
      before = grown.getRegionIterArgs().back();
      // The ancestors list still names the old op.
      std::replace(ancestors.begin(), ancestors.end(), ancestor,
                   grown.getOperation());
      continue;
    }
    auto branch = cast<scf::IfOp>(ancestor);
    // Decided before `branch` is replaced (and freed).
    bool childInThen = child->getParentRegion() == &branch.getThenRegion();
    SmallVector<Type> types(branch.getResultTypes());
    types.push_back(rewriter.getIndexType());
    rewriter.setInsertionPoint(branch);
    auto grown = scf::IfOp::create(rewriter, branch.getLoc(), types,
                                   branch.getCondition(), /*withElse=*/true);
    grown->setAttrs(branch->getAttrs());
    for (auto [from, to] : llvm::zip(branch->getRegions(), grown->getRegions())) {
      if (!to.empty())
        rewriter.eraseBlock(&to.front());
      rewriter.inlineRegionBefore(from, to, to.end());
    }
    if (grown.getElseRegion().empty()) {
      Block *block = rewriter.createBlock(&grown.getElseRegion());
      rewriter.setInsertionPointToStart(block);
      scf::YieldOp::create(rewriter, branch.getLoc());
    }
    // Both branches pass the count through; the child's branch is patched.
    for (Region *region : {&grown.getThenRegion(), &grown.getElseRegion()}) {
      auto yield = cast<scf::YieldOp>(region->front().getTerminator());
      rewriter.modifyOpInPlace(yield,
                               [&] { yield->insertOperands(yield->getNumOperands(), before); });
    }
    rewriter.replaceOp(branch, grown.getResults().drop_back());
    Region *newChildRegion =
        childInThen ? &grown.getThenRegion() : &grown.getElseRegion();
    levels.push_back({grown, newChildRegion});
    std::replace(ancestors.begin(), ancestors.end(), ancestor,
                 grown.getOperation());
  }
  Value count = before;
  rewriter.setInsertionPointAfter(op);
  Value after = arith::AddIOp::create(
      rewriter, loc, count, arith::ConstantIndexOp::create(rewriter, loc, 1));
  // Bottom-up: each level's child region yields the count after its child.
  for (Level &level : llvm::reverse(levels)) {
    auto yield =
        cast<scf::YieldOp>(level.childRegion->front().getTerminator());
    rewriter.modifyOpInPlace(yield, [&] {
      yield->setOperand(yield->getNumOperands() - 1, after);
    });
    after = level.rebuilt->getResults().back();
  }
  return count;
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
