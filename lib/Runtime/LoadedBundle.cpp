//===- LoadedBundle.cpp - A bundle's kernels, loaded and launched ---------===//

#include "SinkAttn/Runtime/LoadedBundle.h"

namespace sinkattn::rt {

namespace {
/// What a shaped bundle must share with the loaded one of `param`: all but
/// a descriptor buffer's run-time sizes and strides, the global sizes and
/// strides of a tensor map over one, and scalar values.
BundleParam compiledPart(BundleParam param, const Bundle &bundle) {
  switch (param.kind) {
  case ParamKind::Buffer:
    if (param.descriptor) {
      for (uint64_t d : param.dynamicDims)
        if (d < param.shape.size())
          param.shape[d] = 0;
      if (!param.strides.empty())
        param.strides.assign(param.strides.size(), 0);
    }
    break;
  case ParamKind::Scalar:
    param.intValue = 0;
    param.floatValue = 0;
    break;
  case ParamKind::TensorMap:
    if (const BundleParam *buffer = findParam(bundle, param.buffer);
        buffer && buffer->descriptor) {
      param.tensorMap.globalDims.clear();
      param.tensorMap.globalStridesBytes.clear();
    }
    break;
  }
  return param;
}
} // namespace

Expected<LoadedBundle> LoadedBundle::load(const Context &ctx, Bundle bundle,
                                          const JitOptions &options) {
  // run() relies on the launch rules (setup launches first, an
  // overlapping launch followed by one that is not, in the same phase).
  SINKATTN_RT_TRY(validateBundle(bundle));
  std::vector<BundleLaunch> launches = launchesOf(bundle);
  std::string name =
      bundle.launches.empty() ? launches.front().entry : bundle.kernel;
  const DeviceInfo &info = ctx.info();
  // SASS assembled for this GPU skips the JIT; one the driver refuses (built
  // by a newer ptxas than the driver knows) falls back to the PTX, and so
  // does a load for profiling, whose line info only the JIT adds.
  std::optional<Module> module;
  std::string codeSource = "PTX, JIT-compiled";
  if (bundle.sass && options.generateLineInfo) {
    codeSource += " (line info asked for)";
  } else if (bundle.sass &&
             sassRunsOn(*bundle.sass, info.computeMajor, info.computeMinor)) {
    Expected<Module> assembled =
        Module::loadCubin(ctx, bundle.sass->cubin, bundle.sass->cubinFile);
    if (assembled.ok()) {
      module = assembled.take();
      codeSource = "SASS for " + bundle.sass->arch + " (" +
                   bundle.sass->cubinFile + ")";
    } else {
      // The failing call; the driver's log, if any, stays out of a one-line
      // report.
      std::string why = assembled.status().message();
      codeSource += " (" + why.substr(0, why.find('\n')) + ")";
    }
  } else if (bundle.sass) {
    codeSource += " (" + bundle.sass->cubinFile + " is for " +
                  bundle.sass->arch + ", this GPU is " + info.smName() + ")";
  }
  if (!module) {
    SINKATTN_RT_ASSIGN_OR_RETURN(
        Module jitted,
        Module::loadPtx(ctx, bundle.ptx, options, name + ".ptx"));
    module = std::move(jitted);
  }
  LoadedBundle loaded(std::move(bundle), std::move(*module));
  loaded.name_ = std::move(name);
  loaded.codeSource_ = std::move(codeSource);
  loaded.driver_ = ctx.driverPtr();
  loaded.launches_ = std::move(launches);
  loaded.launchedBlocks_ = rt::launchedBlocks(loaded.bundle_, info.smCount);
  loaded.smCount_ = info.smCount;
  for (const BundleLaunch &launch : loaded.launches_) {
    SINKATTN_RT_ASSIGN_OR_RETURN(Function function,
                                 loaded.module_.getFunction(launch.entry));
    // Say which kernel asks for too much shared memory, and how much the
    // GPU has, before the driver's opt-in fails with "invalid argument".
    SINKATTN_RT_ASSIGN_OR_RETURN(
        int staticBytes,
        function.getAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    uint64_t needed = uint64_t(staticBytes) + launch.sharedMemoryBytes;
    if (needed > uint64_t(info.maxSharedMemoryPerBlockOptin))
      return Status::error(
          "kernel " + launch.entry + " needs " + std::to_string(needed) +
          " bytes of shared memory per block (" +
          std::to_string(launch.sharedMemoryBytes) + " dynamic + " +
          std::to_string(staticBytes) + " static); " + info.name +
          " allows at most " +
          std::to_string(info.maxSharedMemoryPerBlockOptin) + " per block" +
          (loaded.bundle_.config.count("stages")
               ? ": compile it with fewer --stages"
               : ""));
    loaded.functions_.push_back(std::move(function));
    // Non-blocking: callers time launches on the legacy default stream,
    // which a blocking stream would wait for (and it for them).
    if (launch.overlapsNext && !loaded.side_) {
      SINKATTN_RT_ASSIGN_OR_RETURN(Stream side,
                                   Stream::create(ctx, CU_STREAM_NON_BLOCKING));
      SINKATTN_RT_ASSIGN_OR_RETURN(Event fork, Event::create(ctx));
      SINKATTN_RT_ASSIGN_OR_RETURN(Event join, Event::create(ctx));
      loaded.side_ =
          SideStream{std::move(side), std::move(fork), std::move(join)};
    }
  }
  return loaded;
}

Status LoadedBundle::run(const std::map<std::string, CUdeviceptr> &addresses,
                         CUstream stream, LaunchPhase phase) const {
  return runLaunches(bundle_, launches_, launchedBlocks_, addresses, stream,
                     phase);
}

Status LoadedBundle::run(const Bundle &shaped,
                         const std::map<std::string, CUdeviceptr> &addresses,
                         CUstream stream, LaunchPhase phase) const {
  SINKATTN_RT_TRY(validateBundle(shaped));
  std::vector<BundleLaunch> launches = launchesOf(shaped);
  if (launches.size() != launches_.size())
    return Status::error(
        "the shaped bundle has " + std::to_string(launches.size()) +
        " launches; the loaded one " + std::to_string(launches_.size()));
  for (size_t i = 0; i < launches.size(); ++i) {
    BundleLaunch same = launches[i];
    same.grid = launches_[i].grid;
    if (same != launches_[i])
      return Status::error("launch " + std::to_string(i) + " ('" +
                           launches[i].entry +
                           "') of the shaped bundle differs from the loaded "
                           "one in more than its grid");
  }
  if (shaped.params.size() != bundle_.params.size())
    return Status::error("the shaped bundle has other params than the loaded "
                         "one");
  for (size_t i = 0; i < shaped.params.size(); ++i)
    if (compiledPart(shaped.params[i], shaped) !=
        compiledPart(bundle_.params[i], bundle_))
      return Status::error(
          "param " + std::to_string(i) + " ('" + shaped.params[i].name +
          "') of the shaped bundle differs from the loaded one's in what the "
          "kernel compiled in (only run-time sizes, strides and values may "
          "change)");
  return runLaunches(shaped, launches, rt::launchedBlocks(shaped, smCount_),
                     addresses, stream, phase);
}

Status
LoadedBundle::runReshaped(const Bundle &shaped,
                          const std::map<std::string, CUdeviceptr> &addresses,
                          CUstream stream) const {
  std::vector<BundleLaunch> launches = launchesOf(shaped);
  bool same = launches.size() == launches_.size() &&
              shaped.params.size() == bundle_.params.size();
  // The launches as loaded but for their grids (blocks, shared memory,
  // clusters and overlaps are what the kernels and side stream were set up
  // for); the params by name and kind.
  for (size_t i = 0; same && i < launches.size(); ++i) {
    const BundleLaunch &a = launches[i], &b = launches_[i];
    same = a.entry == b.entry && a.block == b.block && a.cluster == b.cluster &&
           a.sharedMemoryBytes == b.sharedMemoryBytes && a.args == b.args &&
           a.setup == b.setup && a.overlapsNext == b.overlapsNext;
  }
  for (size_t i = 0; same && i < shaped.params.size(); ++i)
    same = shaped.params[i].name == bundle_.params[i].name &&
           shaped.params[i].kind == bundle_.params[i].kind;
  if (!same)
    return Status::error("the re-shaped bundle's launches or params are not "
                         "the loaded bundle's");
  return runLaunches(shaped, launches, rt::launchedBlocks(shaped, smCount_),
                     addresses, stream, LaunchPhase::Main);
}

Status
LoadedBundle::runLaunches(const Bundle &bundle,
                          const std::vector<BundleLaunch> &launches,
                          uint32_t launchedBlocks,
                          const std::map<std::string, CUdeviceptr> &addresses,
                          CUstream stream, LaunchPhase phase) const {
  bool setup = phase == LaunchPhase::Setup;
  // An overlapping pair (validateBundle: launch i overlapsNext, i + 1 not,
  // both in the same phase): i on the side stream after the work before
  // it, i + 1 on `stream`, and whatever comes after them (the next launch,
  // or the caller's next work) waits for i's end.
  bool joinPending = false;
  // Orders the side launch before what comes next on `stream`; if even
  // that fails, waits for it on the host, so that nothing of this call is
  // left running unordered.
  auto join = [&]() -> Status {
    Status joined = side_->join.waitIn(stream);
    if (!joined.ok())
      (void)side_->stream.synchronize();
    return joined;
  };
  for (size_t i = 0; i < launches.size(); ++i) {
    const BundleLaunch &launch = launches[i];
    if (launch.setup != setup)
      continue;
    if (joinPending && !launches[i - 1].overlapsNext) {
      joinPending = false;
      SINKATTN_RT_TRY(join());
    }
    CUstream launchStream = stream;
    if (launch.overlapsNext) {
      launchStream = side_->stream.handle();
      SINKATTN_RT_TRY(side_->fork.record(stream));
      SINKATTN_RT_TRY(side_->fork.waitIn(launchStream));
    }
    Expected<KernelArgs> args =
        buildKernelArgs(bundle, launch, addresses, driver_.get());
    Status launched = args.status();
    if (launched.ok()) {
      LaunchConfig config = launchConfigFor(launch, launchStream);
      if (launch.entry == bundle.entry)
        config.grid.x = launchedBlocks;
      launched = launchKernel(functions_[i], config, *args);
    }
    if (!launched.ok()) {
      if (joinPending)
        (void)join();
      return launches.size() == 1
                 ? launched
                 : launched.withContext("launch of " + launch.entry + ": ");
    }
    if (launch.overlapsNext) {
      if (Status recorded = side_->join.record(launchStream); !recorded.ok()) {
        (void)side_->stream.synchronize();
        return recorded.withContext("launch of " + launch.entry + ": ");
      }
      joinPending = true;
    }
  }
  if (joinPending)
    SINKATTN_RT_TRY(join());
  return Status();
}

} // namespace sinkattn::rt
