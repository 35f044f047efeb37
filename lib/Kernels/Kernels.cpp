//===- Kernels.cpp - Kernel registry and compilation ----------------------===//

#include "SinkAttn/Kernels/Kernels.h"

#include "KernelBuilders.h"
#include "SinkAttn/Runtime/AttentionReference.h"

#include "SinkAttn/Conversion/Passes.h"
#include "SinkAttn/Dialect/Tile/IR/TileDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include <cmath>

using namespace mlir;
using namespace sinkattn;

namespace {
/// sink-fwd's independent SIMT reference (no tile ops), one kernel.
FailureOr<rt::BundleReference>
sinkFwdReference(MLIRContext &context, const KernelConfig &config,
                 const PTXTargetOptions &target) {
  FailureOr<std::string> reference =
      kernels::compileSinkFwdReferencePTX(context, config, target);
  if (failed(reference))
    return failure();
  rt::BundleReference ref;
  ref.entry = rt::kSinkFwdReferenceEntry;
  ref.ptx = std::move(*reference);
  return ref;
}

/// sink-bwd's reference: three kernels in one PTX; the manifest names the
/// first (the rest of the ABI is fixed in AttentionReference.h).
FailureOr<rt::BundleReference>
sinkBwdReference(MLIRContext &context, const KernelConfig &config,
                 const PTXTargetOptions &target) {
  FailureOr<std::string> reference =
      kernels::compileSinkBwdReferencePTX(context, config, target);
  if (failed(reference))
    return failure();
  rt::BundleReference ref;
  ref.entry = rt::kSinkBwdReferenceRowsEntry;
  ref.ptx = std::move(*reference);
  return ref;
}

using Builder = FailureOr<KernelModule> (*)(MLIRContext &, const KernelConfig &);
using ReferenceCompiler = FailureOr<rt::BundleReference> (*)(
    MLIRContext &, const KernelConfig &, const PTXTargetOptions &);
/// One kernel kind: its name, what it computes, its builder and, for the
/// kinds the runner checks against a GPU reference, that reference's
/// compiler.
struct KernelEntry {
  const char *name;
  const char *description;
  Builder build;
  ReferenceCompiler reference = nullptr;
};
const KernelEntry kKernels[] = {
    {"gemm", "D = A*B, bf16/f16 in, f32 out (TMA + mbarrier + wgmma)",
     kernels::buildGemm},
    {"sink-fwd",
     "attention-sink forward (GPT-OSS sinks): causal, optional sliding "
     "window, MHA/GQA, D 64/128; O and LSE (tile IR, wgmma)",
     kernels::buildSinkFwd, sinkFwdReference},
    {"sink-bwd",
     "attention-sink backward: dQ, dK, dV and dsinks (the forward as setup, "
     "then preprocess, dK/dV, dQ and dsinks kernels; tile IR, wgmma; "
     "deterministic, or --dq atomic: dQ by TMA reduce-add)",
     kernels::buildSinkBwd, sinkBwdReference},
    {"tma-copy",
     "out = in through shared memory: pipelined tile.copy loads and stores "
     "of 64x64 tiles (tile IR)",
     kernels::buildTmaCopy},
    {"tma-stream",
     "out = row sums of 64-column tiles of A + B, streamed through a "
     "pipelined tile.tma_copy loop (tile IR)",
     kernels::buildTmaStream},
    {"tma-im2col",
     "the im2col tiles of a 3x3 filter over an NHWC input, loaded with "
     "tile.im2col_copy (TMA im2col mode; tile IR)",
     kernels::buildTmaIm2col},
};
} // namespace

std::vector<std::pair<std::string, std::string>> sinkattn::kernelNames() {
  std::vector<std::pair<std::string, std::string>> names;
  for (const KernelEntry &entry : kKernels)
    names.emplace_back(entry.name, entry.description);
  return names;
}

/// The entry of `config`'s kernel kind, or an error naming the known ones.
static FailureOr<const KernelEntry *> findEntry(MLIRContext &context,
                                                const KernelConfig &config) {
  for (const KernelEntry &entry : kKernels)
    if (config.kernel == entry.name)
      return &entry;
  std::string known;
  for (const KernelEntry &entry : kKernels)
    known += std::string(known.empty() ? "" : ", ") + entry.name;
  return emitError(UnknownLoc::get(&context))
         << "unknown kernel '" << config.kernel << "' (known: " << known << ")";
}

FailureOr<KernelModule> sinkattn::buildKernel(MLIRContext &context,
                                              const KernelConfig &config) {
  FailureOr<const KernelEntry *> entry = findEntry(context, config);
  if (failed(entry))
    return failure();
  return (*entry)->build(context, config);
}

namespace {
/// Copies what the tile passes decided for `func` into its launch: the block
/// size (warp specialization adds a producer warpgroup), the dynamic shared
/// memory and the tensor maps, which become params named
/// `<mapPrefix><buffer>_map<i>` appended to `args`. Before lowering, kernel
/// argument i is the buffer or scalar param named args[i].
LogicalResult recordLaunchResources(gpu::GPUFuncOp func, rt::Bundle &bundle,
                                    std::vector<std::string> &args,
                                    rt::Dim3 &block, uint32_t &sharedMemoryBytes,
                                    const std::string &mapPrefix) {
  if (DenseI32ArrayAttr blockSize = func.getKnownBlockSizeAttr())
    block = {uint32_t(blockSize[0]), uint32_t(blockSize[1]),
             uint32_t(blockSize[2])};
  if (auto bytes = func->getAttrOfType<IntegerAttr>(kDynamicSharedMemoryAttrName))
    sharedMemoryBytes = uint32_t(bytes.getInt());
  auto maps = func->getAttrOfType<ArrayAttr>(kTensorMapsAttrName);
  if (!maps)
    return success();
  std::vector<rt::BundleParam> arguments;
  for (const std::string &name : args) {
    const rt::BundleParam *param = rt::findParam(bundle, name);
    if (!param || param->kind == rt::ParamKind::TensorMap)
      return func.emitError() << "internal error: kernel argument '" << name
                              << "' is not a buffer or scalar of the bundle";
    arguments.push_back(*param);
  }
  std::vector<rt::BundleParam> mapParams;
  for (auto [index, attr] : llvm::enumerate(maps)) {
    auto info = cast<DictionaryAttr>(attr);
    int64_t source = cast<IntegerAttr>(info.get("source")).getInt();
    if (source < 0 || source >= int64_t(arguments.size()) ||
        arguments[source].kind != rt::ParamKind::Buffer)
      return func.emitError() << "internal error: tensor map " << index
                              << " reads argument " << source
                              << ", which is not a buffer of the bundle";
    const rt::BundleParam &buffer = arguments[source];
    std::string name = mapPrefix + buffer.name + "_map" + std::to_string(index);
    if (auto mode = info.getAs<StringAttr>("mode"); mode && mode == "im2col") {
      mapParams.push_back(kernels::tensorMap(name, buffer.name, buffer.dtype,
                                             buffer.shape, {},
                                             rt::TensorMapSwizzle::None));
      rt::TensorMapSpec &spec = mapParams.back().tensorMap;
      spec.boxDims.clear();
      // Corners innermost spatial dimension first: (w, h).
      ArrayRef<int64_t> lower = cast<DenseI64ArrayAttr>(info.get("lower")).asArrayRef();
      ArrayRef<int64_t> upper = cast<DenseI64ArrayAttr>(info.get("upper")).asArrayRef();
      spec.im2col = rt::Im2colSpec{
          {int32_t(lower[1]), int32_t(lower[0])},
          {int32_t(upper[1]), int32_t(upper[0])},
          uint32_t(cast<IntegerAttr>(info.get("channels")).getInt()),
          uint32_t(cast<IntegerAttr>(info.get("pixels")).getInt())};
      continue;
    }
    ArrayRef<int64_t> box = cast<DenseI64ArrayAttr>(info.get("box")).asArrayRef();
    auto swizzle = info.getAs<IntegerAttr>("swizzle");
    auto view = info.getAs<DenseI64ArrayAttr>("shape");
    rt::TensorMapSwizzle mapSwizzle = swizzle && swizzle.getInt() == 128
                                          ? rt::TensorMapSwizzle::B128
                                          : rt::TensorMapSwizzle::None;
    if (buffer.descriptor) {
      // The map describes the buffer as the kernel's memref does, from the
      // sizes and strides given at launch.
      bool sameView = view && view.size() == int64_t(buffer.shape.size());
      for (int64_t d = 0; sameView && d < view.size(); ++d)
        sameView = ShapedType::isDynamic(view[d]) ||
                   uint64_t(view[d]) == buffer.shape[d];
      if (!sameView)
        return func.emitError()
               << "internal error: tensor map " << index << " views buffer '"
               << buffer.name
               << "', passed as a descriptor, with another shape";
      mapParams.push_back(kernels::tensorMap(
          name, buffer.name, buffer.dtype, buffer.shape,
          std::vector<uint32_t>(box.begin(), box.end()), mapSwizzle));
      rt::TensorMapSpec &spec = mapParams.back().tensorMap;
      spec = rt::tensorMapOverBuffer(spec, buffer);
      continue;
    }
    if (info.get("strides") ||
        (view && llvm::any_of(view.asArrayRef(), ShapedType::isDynamic)))
      return func.emitError()
             << "tensor map " << index << " of buffer '" << buffer.name
             << "' has run-time sizes or strides, which a bundle's tensor "
                "maps cannot describe yet";
    // The kernel's view of the buffer: same elements, maybe fewer dims.
    std::vector<uint64_t> shape = buffer.shape;
    if (view) {
      uint64_t viewElements = 1, bufferElements = 1;
      for (int64_t dim : view.asArrayRef())
        viewElements *= uint64_t(dim);
      for (uint64_t dim : buffer.shape)
        bufferElements *= dim;
      if (viewElements != bufferElements)
        return func.emitError()
               << "internal error: tensor map " << index << " views buffer '"
               << buffer.name << "' with " << viewElements
               << " elements, but it has " << bufferElements;
      shape.assign(view.asArrayRef().begin(), view.asArrayRef().end());
    }
    mapParams.push_back(kernels::tensorMap(
        name, buffer.name, buffer.dtype, shape,
        std::vector<uint32_t>(box.begin(), box.end()), mapSwizzle));
  }
  for (const rt::BundleParam &map : mapParams)
    args.push_back(map.name);
  bundle.params.insert(bundle.params.end(), mapParams.begin(), mapParams.end());
  return success();
}
} // namespace

LogicalResult sinkattn::lowerKernelToNVGPU(KernelModule &kernel) {
  if (!kernel.tileIR)
    return success();
  ModuleOp module = *kernel.module;
  PassManager pm = PassManager::on<ModuleOp>(module.getContext());
  buildTileToNVGPUPipeline(pm);
  if (failed(pm.run(module)))
    return failure();
  kernel.tileIR = false;

  rt::Bundle &bundle = kernel.bundle;
  if (!bundle.launches.empty()) {
    // Several kernels: each launch's resources, its maps named after it.
    for (rt::BundleLaunch &launch : bundle.launches) {
      gpu::GPUFuncOp func;
      module.walk([&](gpu::GPUFuncOp candidate) {
        if (candidate.isKernel() && candidate.getName() == launch.entry)
          func = candidate;
      });
      if (!func)
        return module.emitError("internal error: the kernel module has no "
                                "kernel '")
               << launch.entry << "'";
      if (failed(recordLaunchResources(func, bundle, launch.args, launch.block,
                                       launch.sharedMemoryBytes,
                                       launch.entry + "_")))
        return failure();
    }
    return success();
  }
  gpu::GPUFuncOp func;
  module.walk([&](gpu::GPUFuncOp candidate) {
    if (candidate.isKernel())
      func = candidate;
  });
  if (!func)
    return module.emitError("internal error: the kernel module has no kernel");
  // Before lowering every param is a buffer: kernel argument i is the
  // single launch's i-th.
  std::vector<std::string> args = rt::launchesOf(bundle).front().args;
  return recordLaunchResources(func, bundle, args, bundle.block,
                               bundle.sharedMemoryBytes, "");
}

bool sinkattn::passesBarePointers(const rt::Bundle &bundle) {
  return llvm::none_of(bundle.params, [](const rt::BundleParam &param) {
    return param.descriptor;
  });
}

FailureOr<rt::Bundle> sinkattn::compileKernel(MLIRContext &context,
                                              const KernelConfig &config) {
  FailureOr<const KernelEntry *> entry = findEntry(context, config);
  if (failed(entry))
    return failure();
  FailureOr<KernelModule> built = (*entry)->build(context, config);
  if (failed(built) || failed(lowerKernelToNVGPU(*built)))
    return failure();
  PTXTargetOptions target = config.target;
  target.barePointers = passesBarePointers(built->bundle);
  FailureOr<std::map<std::string, std::string>> ptx =
      compileToPTX(*built->module, target);
  if (failed(ptx))
    return failure();
  if (ptx->size() != 1)
    return emitError(UnknownLoc::get(&context))
           << "internal error: kernel '" << config.kernel << "' produced "
           << ptx->size() << " PTX modules, expected 1";
  rt::Bundle bundle = std::move(built->bundle);
  bundle.ptx = ptx->begin()->second;
  bundle.config["chip"] = target.chip;
  // The attention kernels carry an independent SIMT reference (no tile ops)
  // that the runner checks them against on the GPU.
  if ((*entry)->reference) {
    FailureOr<rt::BundleReference> reference =
        (*entry)->reference(context, config, target);
    if (failed(reference))
      return failure();
    bundle.reference = std::move(*reference);
  }
  return bundle;
}

void sinkattn::registerKernelDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registry.insert<tile::TileDialect>();
}

rt::BundleParam kernels::inputBuffer(std::string name, rt::DType dtype,
                                     std::vector<uint64_t> shape,
                                     bool kernelArg) {
  rt::BundleParam param;
  param.name = std::move(name);
  param.kind = rt::ParamKind::Buffer;
  param.dtype = dtype;
  param.shape = std::move(shape);
  param.role = rt::BufferRole::Input;
  param.kernelArg = kernelArg;
  return param;
}

rt::BundleParam kernels::outputBuffer(std::string name, rt::DType dtype,
                                      std::vector<uint64_t> shape,
                                      bool kernelArg) {
  rt::BundleParam param =
      inputBuffer(std::move(name), dtype, std::move(shape), kernelArg);
  param.role = rt::BufferRole::Output;
  return param;
}

rt::SinkAttentionShape kernels::sinkAttentionShape(const KernelConfig &config) {
  rt::SinkAttentionShape shape;
  shape.batch = config.batch;
  shape.heads = config.heads;
  shape.kvHeads = config.kvHeads;
  shape.seqQ = config.seqQ;
  shape.seqKv = config.seqKv;
  shape.headDim = config.headDim;
  shape.window = config.window;
  shape.causal = config.causal;
  shape.scale = config.headDim > 0 ? 1.0 / std::sqrt(double(config.headDim)) : 0;
  shape.layout = config.layout;
  if (!config.seqlensQ.empty() || !config.seqlensKv.empty() ||
      shape.varlen()) {
    shape.cuSeqlensQ = rt::offsetsOf(config.seqlensQ);
    shape.cuSeqlensKv = rt::offsetsOf(config.seqlensKv);
  }
  return shape;
}

rt::BundleParam kernels::tensorMap(std::string name, std::string buffer,
                                   rt::DType dtype, std::vector<uint64_t> shape,
                                   std::vector<uint32_t> box,
                                   rt::TensorMapSwizzle swizzle) {
  rt::BundleParam param;
  param.name = std::move(name);
  param.kind = rt::ParamKind::TensorMap;
  param.dtype = dtype;
  param.buffer = std::move(buffer);
  // OOB fill "none" reads zeros past the end, so ragged lengths need no
  // special case in the load path.
  param.tensorMap = rt::makeRowMajorTiledSpec(dtype, shape, box, swizzle);
  return param;
}
