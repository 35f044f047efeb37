//===- SinkBwdBuilding.cpp - Pieces of the backward's kernels -------------===//
//
// What more than one kernel of the attention-sink backward builds the same
// way: the per-element mask, the block-masked probabilities and the
// election of the last block to arrive (the head sink sum, which the
// dsinks, dQ and dQ-conversion kernels share, is in SinkBwdRowKernels.cpp
// beside the row kernels' other pieces).
//
//===----------------------------------------------------------------------===//

#include "SinkBwdBuilding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::kernels;

Value sinkattn::kernels::buildKeepByDistance(ImplicitLocOpBuilder &b,
                                             Value distanceBase, Value offset,
                                             Value window32) {
  Value distance = arith::AddIOp::create(b, distanceBase, offset);
  Value distance32 = arith::IndexCastOp::create(b, b.getI32Type(), distance);
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, distance32,
                               window32);
}

Value sinkattn::kernels::buildBlockMaskedMap(
    ImplicitLocOpBuilder &b, Type type, Value needsMask, ValueRange inputs,
    Value zero, function_ref<Value(ValueRange, ValueRange)> keep,
    function_ref<Value(ValueRange, ValueRange)> value) {
  return buildIfThenElse(
             b, type, needsMask,
             [&]() -> SmallVector<Value> {
               return {buildMap(
                   b, type, inputs, [&](ValueRange idx, ValueRange x) -> Value {
                     Value kept = keep(idx, x);
                     Value e = value(idx, x);
                     return arith::SelectOp::create(b, kept, e, zero);
                   })};
             },
             [&]() -> SmallVector<Value> {
               return {buildMap(b, type, inputs, value)};
             })
      .getResult(0);
}

LastArrival sinkattn::kernels::buildLastArrival(ImplicitLocOpBuilder &b,
                                                Value counter, Value index,
                                                Value lastCount, Value c0) {
  // Release: this block's global writes are visible before it counts.
  NVVM::MembarOp::create(b, NVVM::MemScopeKind::GPU);
  gpu::BarrierOp::create(b);
  LastArrival arrival;
  arrival.thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value firstThread =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, arrival.thread, c0);
  auto slotType = getSharedMemRefType({1}, b.getI32Type());
  Value slot = allocShared(b, slotType);
  buildIfThen(b, firstThread, [&] {
    Value one = arith::ConstantIntOp::create(b, b.getI32Type(), 1);
    Value before = memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi,
                                               one, counter, index);
    memref::StoreOp::create(b, before, slot, c0);
  });
  gpu::BarrierOp::create(b);
  Value ticket = memref::LoadOp::create(b, slot, c0);
  arrival.isLast =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, ticket, lastCount);
  return arrival;
}
