//===- HostEmulation.cpp - Run reference kernels' code on the CPU ---------===//

#include "HostEmulation.h"

#include "SinkAttn/Runtime/AttentionReference.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"

using namespace mlir;

LogicalResult sinkattn::test::emulateOnHost(
    ModuleOp module, ArrayRef<std::pair<std::string, int64_t>> kernels,
    int64_t blockSize) {
  gpu::GPUModuleOp gpuModule;
  module.walk([&](gpu::GPUModuleOp m) { gpuModule = m; });
  if (!gpuModule)
    return failure();
  OpBuilder b(module.getContext());
  for (const auto &[name, blocks] : kernels) {
    auto kernel = gpuModule.lookupSymbol<gpu::GPUFuncOp>(name);
    if (!kernel)
      return failure();
    Location loc = kernel.getLoc();
    b.setInsertionPointToEnd(module.getBody());
    auto host = func::FuncOp::create(
        b, loc, "host_" + name,
        b.getFunctionType(kernel.getArgumentTypes(), {}));
    Block *entry = host.addEntryBlock();
    b.setInsertionPointToStart(entry);
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    Value grid = arith::ConstantIndexOp::create(b, loc, blocks);
    Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
    auto blockLoop = scf::ForOp::create(b, loc, c0, grid, c1);
    b.setInsertionPointToStart(blockLoop.getBody());
    auto threadLoop = scf::ForOp::create(b, loc, c0, block, c1);
    b.setInsertionPointToStart(threadLoop.getBody());
    IRMapping map;
    for (auto [from, to] : llvm::zip(kernel.getArguments(), host.getArguments()))
      map.map(from, to);
    for (Operation &op : kernel.getBody().front().without_terminator())
      b.clone(op, map);
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
    SmallVector<Operation *> ids;
    host.walk([&](Operation *op) {
      if (isa<gpu::ThreadIdOp>(op)) {
        op->getResult(0).replaceAllUsesWith(threadLoop.getInductionVar());
        ids.push_back(op);
      } else if (isa<gpu::BlockIdOp>(op)) {
        op->getResult(0).replaceAllUsesWith(blockLoop.getInductionVar());
        ids.push_back(op);
      }
    });
    for (Operation *op : ids)
      op->erase();
    // The per-thread arrays (static allocas) move to the function's entry:
    // one stack slot reused by every emulated thread, which initializes it
    // before reading, instead of a fresh slot per loop iteration.
    SmallVector<memref::AllocaOp> allocas;
    host.walk([&](memref::AllocaOp alloca) { allocas.push_back(alloca); });
    for (memref::AllocaOp alloca : allocas)
      alloca->moveBefore(&entry->front());
  }
  // Helper functions called by the kernels.
  for (auto function :
       llvm::make_early_inc_range(gpuModule.getOps<func::FuncOp>()))
    function->moveBefore(gpuModule);
  bool unknown = false;
  SmallVector<Operation *> replaced;
  module.walk([&](LLVM::CallIntrinsicOp call) {
    OpBuilder at(call);
    Value x = call.getArgs()[0];
    Value result;
    if (call.getIntrin() == "llvm.nvvm.ex2.approx.f32")
      result = math::Exp2Op::create(at, call.getLoc(), x);
    else if (call.getIntrin() == "llvm.nvvm.lg2.approx.f")
      result = math::Log2Op::create(at, call.getLoc(), x);
    else
      unknown = true;
    if (result) {
      call->getResult(0).replaceAllUsesWith(result);
      replaced.push_back(call);
    }
  });
  for (Operation *op : replaced)
    op->erase();
  gpuModule.erase();
  return failure(unknown);
}

llvm::Expected<std::unique_ptr<ExecutionEngine>>
sinkattn::test::jitForHost(ModuleOp module, bool barePointers) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  // bf16 conversions as integer code: the JIT has no compiler-rt helpers
  // (__truncsfbf2).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = barePointers;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module)))
    return llvm::createStringError("lowering the emulated module failed");
  auto engine = ExecutionEngine::create(module);
  if (!engine)
    return engine.takeError();
  (*engine)->initialize();
  return std::move(*engine);
}
