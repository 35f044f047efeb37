//===- GpuToPTX.cpp - The GPU-to-PTX pipeline -----------------------------===//
//
// Wraps upstream's gpu-lower-to-nvvm-pipeline with Hopper settings and the
// `isa` format, so that each gpu.module becomes a gpu.binary holding PTX.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Pipelines/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace sinkattn {
#define GEN_PASS_REGISTRATION
#include "SinkAttn/Pipelines/Passes.h.inc"
} // namespace sinkattn

void sinkattn::buildGpuToPTXPipeline(OpPassManager &pm,
                                     const PTXTargetOptions &options) {
  gpu::GPUToNVVMPipelineOptions nvvmOptions;
  nvvmOptions.cubinChip = options.chip;
  nvvmOptions.cubinFeatures = options.features;
  nvvmOptions.cubinFormat = "isa";
  nvvmOptions.optLevel = options.optLevel;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvmOptions);
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
};
} // namespace

void sinkattn::registerSinkAttnPipelines() {
  registerSinkAttnPipelinesPasses();
  PassPipelineRegistration<GpuToPTXPipelineOptions>(
      "sinkattn-gpu-to-ptx",
      "Lower gpu.module kernels (gpu/nvgpu/nvvm) to gpu.binary ops holding "
      "PTX for Hopper (sm_90a by default)",
      [](OpPassManager &pm, const GpuToPTXPipelineOptions &cl) {
        PTXTargetOptions options;
        options.chip = cl.chip;
        options.features = cl.features;
        options.optLevel = cl.optLevel;
        buildGpuToPTXPipeline(pm, options);
      });
}
