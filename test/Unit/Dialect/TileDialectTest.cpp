//===- TileDialectTest.cpp - C++ API of the tile dialect ------------------===//
//
// What a project reusing the dialect from C++ relies on: type construction
// and checked construction, builders, verification of built ops.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace sinkattn::tile;

namespace {

class TileDialectTest : public ::testing::Test {
protected:
  TileDialectTest() {
    context.loadDialect<TileDialect, func::FuncDialect>();
  }
  MLIRContext context;
};

TEST_F(TileDialectTest, FragmentTypeAccessors) {
  auto f32 = Float32Type::get(&context);
  auto frag = FragmentType::get({64, 128}, f32);
  EXPECT_EQ(frag.getRank(), 2);
  EXPECT_EQ(frag.getNumElements(), 64 * 128);
  EXPECT_EQ(frag.getElementType(), f32);
  EXPECT_FALSE(frag.getLayout());

  // Through the ShapedType interface, as generic MLIR code sees it.
  auto shaped = cast<ShapedType>(frag);
  EXPECT_EQ(shaped.getShape(), ArrayRef<int64_t>({64, 128}));
  auto bf16 = cast<FragmentType>(shaped.cloneWith(std::nullopt, BFloat16Type::get(&context)));
  EXPECT_EQ(bf16.getShape(), frag.getShape());
  EXPECT_TRUE(bf16.getElementType().isBF16());
  auto row = cast<FragmentType>(shaped.cloneWith(ArrayRef<int64_t>{64}, f32));
  EXPECT_EQ(row.getRank(), 1);
}

TEST_F(TileDialectTest, FragmentTypeCheckedConstructionRejects) {
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  auto f64 = Float64Type::get(&context);
  auto bad = FragmentType::getChecked(
      [&] { return emitError(UnknownLoc::get(&context)); }, &context,
      ArrayRef<int64_t>{64, 64}, Type(f64), Attribute());
  EXPECT_FALSE(bad);
  EXPECT_EQ(message,
            "fragment element type must be f32, f16, bf16, i32 or i1, got 'f64'");

  auto rank3 = FragmentType::getChecked(
      [&] { return emitError(UnknownLoc::get(&context)); }, &context,
      ArrayRef<int64_t>{2, 64, 64}, Type(Float32Type::get(&context)), Attribute());
  EXPECT_FALSE(rank3);
  EXPECT_EQ(message, "fragments have rank 1 or 2, got rank 3");
}

TEST_F(TileDialectTest, BuiltBarrierOpsVerify) {
  OpBuilder builder(&context);
  Location loc = builder.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder, loc, "f", builder.getFunctionType({}, {}));
  builder.setInsertionPointToEnd(func.addEntryBlock());

  auto barriersType = BarrierArrayType::get(&context, 2);
  auto alloc = AllocBarrierOp::create(builder, loc, barriersType,
                                      builder.getDenseI64ArrayAttr({1, 128}));
  Value slot = arith::ConstantIndexOp::create(builder, loc, 1);
  MBarrierExpectTxOp::create(builder, loc, alloc, slot, 4096);
  MBarrierArriveOp::create(builder, loc, alloc, slot, 1);
  func::ReturnOp::create(builder, loc);
  EXPECT_TRUE(succeeded(verify(module)));

  // An out-of-range constant slot is caught by the verifier, with a message.
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    message = diag.str();
    return success();
  });
  builder.setInsertionPoint(func.getBody().front().getTerminator());
  Value outOfRange = arith::ConstantIndexOp::create(builder, loc, 2);
  MBarrierArriveOp::create(builder, loc, alloc, outOfRange, 1);
  EXPECT_TRUE(failed(verify(module)));
  EXPECT_NE(message.find("barrier index 2 is out of range for '!tile.barriers<2>'"),
            std::string::npos)
      << message;
  module->erase();
}

TEST_F(TileDialectTest, ParseAndQueryOps) {
  const char *source = R"mlir(
    func.func @f(%s: !tile.fragment<64x128xf32>) -> !tile.fragment<64xf32> {
      %m = tile.reduce max %s along 1 : !tile.fragment<64x128xf32> -> !tile.fragment<64xf32>
      return %m : !tile.fragment<64xf32>
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  ReduceOp reduce;
  module->walk([&](ReduceOp op) { reduce = op; });
  ASSERT_TRUE(reduce);
  EXPECT_EQ(reduce.getKind(), ReduceKind::max);
  EXPECT_EQ(reduce.getDim(), 1);
  EXPECT_EQ(stringifyReduceKind(ReduceKind::sum), "sum");
}

} // namespace
