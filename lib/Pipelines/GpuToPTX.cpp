//===- GpuToPTX.cpp - The GPU-to-PTX pipeline -----------------------------===//
//
// Wraps upstream's gpu-lower-to-nvvm-pipeline with Hopper settings and the
// `isa` format, so that each gpu.module becomes a gpu.binary holding PTX.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Pipelines/Pipelines.h"

#include "SinkAttn/Conversion/Passes.h"
#include "SinkAttn/Dialect/Tile/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <mutex>

using namespace mlir;

namespace sinkattn {
#define GEN_PASS_REGISTRATION
#include "SinkAttn/Pipelines/Passes.h.inc"
} // namespace sinkattn

void sinkattn::buildGpuToNVVMPipeline(OpPassManager &pm,
                                      const PTXTargetOptions &options) {
  // Upstream's gpu-lower-to-nvvm-pipeline (GPUToNVVMPipeline.cpp) up to the
  // NVVM lowering of gpu.modules, plus sinkattn-tensor-map-arg-positions,
  // sinkattn-tensor-maps-by-value and sinkattn-reject-libdevice-calls.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  OpPassManager &gpuModule = pm.nest<gpu::GPUModuleOp>();
  gpuModule.addPass(createStripDebugInfoPass());
  TensorMapArgPositionsPassOptions positions;
  positions.barePointers = options.barePointers;
  gpuModule.addPass(createTensorMapArgPositionsPass(positions));
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.useBarePtrCallConv = options.barePointers;
  gpuModule.addPass(createConvertGpuOpsToNVVMOps(toNVVM));
  gpuModule.addPass(LLVM::createNVVMOptimizeForTargetPass());
  gpuModule.addPass(createCanonicalizerPass());
  gpuModule.addPass(createCSEPass());
  gpuModule.addPass(createReconcileUnrealizedCastsPass());
  gpuModule.addPass(createTensorMapsByValuePass());
  // Before serialization, which would link libdevice only where the
  // environment names a CUDA toolkit.
  gpuModule.addPass(createRejectLibdeviceCallsPass());
}

void sinkattn::buildTileToNVGPUPipeline(OpPassManager &pm) {
  // Warp specialization first (it restructures the kernel and stages its
  // buffers), software pipelining of the loops it declined, then layouts: they decide which shared tiles are swizzled, which the
  // copy lowering needs. Copies become TMA + barriers; multi-versioning then expands the
  // buffers and barrier arrays of pipelined loops; initialization comes
  // after it so that it covers every version. CSE + canonicalization merge
  // the single-thread regions of neighbouring copies (same condition), which
  // puts expect_tx and arrive side by side for the fusion.
  pm.addPass(tile::createTileWarpSpecialize());
  pm.addPass(tile::createTileSoftwarePipeline());
  pm.addPass(tile::createTileAssignLayouts());
  pm.addPass(tile::createTileThreadSync());
  pm.addPass(tile::createTileLowerCopies());
  pm.addPass(tile::createTileMultiVersionBuffers());
  pm.addPass(tile::createTileLowerBarriers());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(tile::createTileFuseArriveExpectTx());
  // Fragments become registers while shared tiles are still allocations
  // (swizzled stores look their swizzle up there).
  pm.addPass(createConvertTileFragmentsToNVVM());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertTileToNVGPU());
}

void sinkattn::buildGpuToPTXPipeline(OpPassManager &pm,
                                     const PTXTargetOptions &options) {
  // Then upstream's host lowering and serialization, in the `isa` (PTX
  // text) format.
  buildGpuToNVVMPipeline(pm, options);
  GpuToLLVMConversionPassOptions toLLVM;
  toLLVM.kernelBarePtrCallConv = options.barePointers;
  pm.addPass(createGpuToLLVMConversionPass(toLLVM));
  GpuModuleToBinaryPassOptions toBinary;
  toBinary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(toBinary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

FailureOr<std::map<std::string, std::string>>
sinkattn::extractPTX(ModuleOp module) {
  std::map<std::string, std::string> ptx;
  for (auto binary : module.getOps<gpu::BinaryOp>()) {
    ArrayRef<Attribute> objects = binary.getObjects().getValue();
    for (auto [index, attr] : llvm::enumerate(objects)) {
      auto object = cast<gpu::ObjectAttr>(attr);
      if (object.getFormat() != gpu::CompilationTarget::Assembly)
        return binary.emitError()
               << "object " << index << " of gpu.binary @" << binary.getName()
               << " is not PTX assembly (compile with format=isa)";
      std::string name = binary.getName().str();
      if (objects.size() > 1)
        name += "." + std::to_string(index);
      ptx[name] = object.getObject().getValue().str();
    }
  }
  return ptx;
}

FailureOr<std::map<std::string, std::string>>
sinkattn::compileToPTX(ModuleOp module, const PTXTargetOptions &options) {
  // The upstream pipeline is anchored on the module itself; nesting it under
  // builtin.module(...) would run it on nested modules only.
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  buildGpuToPTXPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  auto ptx = extractPTX(module);
  if (succeeded(ptx) && ptx->empty())
    return module.emitError("no gpu.module to compile: the module holds no "
                            "kernels");
  return ptx;
}

FailureOr<std::string> sinkattn::compileToLLVMIR(ModuleOp module,
                                                 const PTXTargetOptions &options) {
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  buildGpuToNVVMPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  std::string text;
  llvm::raw_string_ostream os(text);
  for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
    llvm::LLVMContext llvmContext;
    std::unique_ptr<llvm::Module> llvmModule =
        translateModuleToLLVMIR(gpuModule, llvmContext, gpuModule.getName());
    if (!llvmModule)
      return gpuModule.emitError("failed to translate to LLVM IR");
    llvmModule->print(os, nullptr);
  }
  if (text.empty())
    return module.emitError("no gpu.module to compile: the module holds no "
                            "kernels");
  return text;
}

namespace {
struct GpuToPTXPipelineOptions
    : public PassPipelineOptions<GpuToPTXPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("Target GPU (PTX .target)"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("LLVM NVPTX features (PTX ISA)"),
                               llvm::cl::init("+ptx80")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level"),
                       llvm::cl::init(3)};
  Option<bool> barePointers{
      *this, "bare-pointers",
      llvm::cl::desc("Pass statically shaped memref kernel arguments as one "
                     "pointer each"),
      llvm::cl::init(false)};

  sinkattn::PTXTargetOptions target() const {
    sinkattn::PTXTargetOptions options;
    options.chip = chip;
    options.features = features;
    options.optLevel = optLevel;
    options.barePointers = barePointers;
    return options;
  }
};
} // namespace

void sinkattn::registerAllSinkAttnPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerSinkAttnPipelines();
    tile::registerTilePasses();
    registerSinkAttnConversionPasses();
  });
}

void sinkattn::registerSinkAttnPipelines() {
  registerSinkAttnPipelinesPasses();
  PassPipelineRegistration<>(
      "sinkattn-tile-to-nvgpu",
      "Lower tile IR kernels to nvgpu/nvvm: tile-warp-specialize, "
      "tile-software-pipeline, tile-assign-layouts, tile-thread-sync, "
      "tile-lower-copies, tile-multi-version-buffers, tile-lower-barriers, "
      "cse, canonicalize, tile-fuse-arrive-expect-tx, "
      "convert-tile-fragments-to-nvvm, convert-tile-to-nvgpu",
      buildTileToNVGPUPipeline);
  PassPipelineRegistration<GpuToPTXPipelineOptions>(
      "sinkattn-tile-to-ptx",
      "sinkattn-tile-to-nvgpu followed by sinkattn-gpu-to-ptx: tile IR "
      "kernels to gpu.binary ops holding PTX",
      [](OpPassManager &pm, const GpuToPTXPipelineOptions &cl) {
        buildTileToNVGPUPipeline(pm);
        buildGpuToPTXPipeline(pm, cl.target());
      });
  PassPipelineRegistration<GpuToPTXPipelineOptions>(
      "sinkattn-gpu-to-ptx",
      "Lower gpu.module kernels (gpu/nvgpu/nvvm) to gpu.binary ops holding "
      "PTX for Hopper (sm_90a by default); tensor-map arguments listed in "
      "sinkattn.tensor_map_args are passed by value",
      [](OpPassManager &pm, const GpuToPTXPipelineOptions &cl) {
        buildGpuToPTXPipeline(pm, cl.target());
      });
}
