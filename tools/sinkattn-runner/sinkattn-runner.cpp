//===- sinkattn-runner.cpp - Compile, run, check and time kernels ---------===//
//
// Exit codes: 0 success, 1 a check failed, 2 usage, configuration or
// environment error (no driver, no GPU, JIT failure, bad bundle).
//
//===----------------------------------------------------------------------===//

#include "Harness.h"
#include "KernelKinds.h"
#include "Options.h"
#include "Preset.h"
#include "Tune.h"
#if SINKATTN_RUNNER_HAS_COMPILER
#include "Compile.h"
#endif

#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/CudaDriver.h"
#include "SinkAttn/Runtime/Json.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {
#if SINKATTN_RUNNER_HAS_COMPILER
constexpr bool kHasCompiler = true;
#else
constexpr bool kHasCompiler = false;
#endif

int environmentError(const rt::Status &status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 2;
}

int runDevices(const Options &options) {
  auto driver = rt::CudaDriver::load();
  if (!driver.ok())
    return environmentError(driver.status());
  rt::Expected<int> count = rt::deviceCount(**driver);
  if (!count.ok())
    return environmentError(count.status());
  if (*count == 0)
    return environmentError(rt::Status::error("the CUDA driver reports no devices"));
  std::printf("%-3s %-24s %-6s %5s %9s %12s %9s  %s\n", "id", "name", "arch",
              "SMs", "memory", "smem/block", "L2", "SinkAttn");
  for (int ordinal = 0; ordinal < *count; ++ordinal) {
    rt::Expected<rt::DeviceInfo> info = rt::queryDevice(**driver, ordinal);
    if (!info.ok())
      return environmentError(info.status());
    rt::Status hopper = rt::checkHopperOrNewer(*info);
    std::printf("%-3d %-24s %-6s %5d %6.1f GiB %9d KiB %6d MiB  %s\n", ordinal,
                info->name.c_str(), info->smName().c_str(), info->smCount,
                info->totalMemoryBytes / double(1ull << 30),
                info->maxSharedMemoryPerBlockOptin / 1024,
                info->l2CacheBytes / (1 << 20),
                hopper.ok() ? "supported" : hopper.message().c_str());
  }
  (void)options;
  return 0;
}

rt::Expected<rt::Bundle> loadBundle(const Options &options) {
  if (!options.bundleDir.empty()) {
    SINKATTN_RT_ASSIGN_OR_RETURN(rt::Bundle bundle,
                                 rt::readBundle(options.bundleDir));
    // Shape flags with a bundle: the same kernel for another shape.
    const char *shapeFlag = nullptr;
    for (const char *flag : {"m", "n", "seqlens-q", "seqlens-kv", "heads",
                             "kv-heads", "window", "softmax-scale"})
      if (!shapeFlag && options.wasGiven(flag))
        shapeFlag = flag;
    if (!shapeFlag)
      return bundle;
    const KernelKind *kind = findKernelKind(bundle.kernel);
    if (!kind || !kind->reshape)
      return rt::Status::error(std::string("--") + shapeFlag +
                               " cannot be combined with --bundle of a " +
                               bundle.kernel +
                               " kernel (the bundle fixes its shape)");
    // The attention's shape flags, given for a kind without them.
    if (rt::Status applies = checkFlagsApply(options, *kind); !applies.ok())
      return applies;
    return kind->reshape(bundle, options);
  }
#if SINKATTN_RUNNER_HAS_COMPILER
  return compileFromOptions(options);
#else
  return rt::Status::error("this runtime-only build cannot compile; pass --bundle DIR");
#endif
}

int runCheckOrBench(const Options &options) {
  rt::Expected<rt::Bundle> bundle = loadBundle(options);
  if (!bundle.ok())
    return environmentError(bundle.status());
  // Before the GPU is touched: a bad --sinks is a usage error.
  if (!options.sinks.empty())
    if (auto sinks = sinkLogitsFor(*bundle, options.sinks); !sinks.ok())
      return environmentError(sinks.status());
  auto session = Session::open(std::move(*bundle), int(options.device),
                               options.verbose);
  if (!session.ok())
    return environmentError(session.status());
  Session &s = **session;
  if (!options.sinks.empty())
    if (rt::Status fixed = s.fixSinks(options.sinks); !fixed.ok())
      return environmentError(fixed);
  if (rt::Status prepared = s.prepare(options.seed); !prepared.ok())
    return environmentError(prepared);
  std::string title = s.bundle().kernel + " " + s.describeConfig() + " on " +
                      s.device().name + " (" + s.device().smName() + ")";
  // The fixed sink logits, as given (one value, or one per head).
  if (!options.sinks.empty())
    title += ", sinks " + formatSinkLogits(options.sinks);

  int exitCode = 0;
  rt::JsonValue json = rt::JsonValue::object();
  if (options.command == "check") {
    rt::Expected<CheckReport> report = s.check();
    if (!report.ok())
      return environmentError(report.status());
    std::printf("check %s, seed %llu\n", title.c_str(),
                (unsigned long long)options.seed);
    if (s.launchedBlocks() != s.bundle().grid.x)
      std::printf("  persistent: %u blocks launched of the bundle's %u (one "
                  "per SM)\n",
                  s.launchedBlocks(), s.bundle().grid.x);
    std::printf("  rel-L2 %.3e  max-abs %.3e  checked %llu  mismatches %llu  "
                "non-finite %llu\n",
                report->relL2, report->maxAbs,
                (unsigned long long)report->checked,
                (unsigned long long)report->mismatches,
                (unsigned long long)report->nonFinite);
    for (const std::string &note : report->notes)
      std::printf("  %s\n", note.c_str());
    std::printf("  %s (%s)\n", report->passed ? "PASS" : "FAIL",
                report->criterion.c_str());
    exitCode = report->passed ? 0 : 1;
  } else {
    rt::Expected<BenchReport> report =
        s.bench(int(options.warmup), int(options.iters), options.flushL2);
    if (!report.ok())
      return environmentError(report.status());
    std::printf("bench %s\n", title.c_str());
    std::printf("%-10s %-40s %10s %10s %10s %10s\n", "kernel", "config",
                "median ms", "min ms", "TFLOP/s", "GB/s");
    std::printf("%-10s %-40s %10.4f %10.4f %10.1f %10.1f\n",
                s.bundle().kernel.c_str(), s.describeConfig().c_str(),
                report->medianMs, report->minMs, report->tflops, report->gbps);
    for (const auto &[name, value] : report->metrics)
      std::printf("  %s %.6g\n", name.c_str(), value);
    json.set("gpu", s.device().name);
    json.set("results", rt::JsonValue::array(
                            {benchJsonRow(s, *report, options.flushL2)}));
  }

  if (!options.saveIoDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.saveIoDir, ec);
    if (ec)
      return environmentError(rt::Status::error(
          "cannot create '" + options.saveIoDir + "': " + ec.message()));
    if (rt::Status saved = s.saveIo(options.saveIoDir); !saved.ok())
      return environmentError(saved);
  }
  if (!options.jsonFile.empty()) {
    std::ofstream file(options.jsonFile);
    file << rt::writeJson(json) << "\n";
    if (!file)
      return environmentError(
          rt::Status::error("cannot write '" + options.jsonFile + "'"));
  }
  return exitCode;
}
} // namespace

int main(int argc, char **argv) {
  rt::Expected<Options> options = parseOptions(argc, argv, kHasCompiler);
  if (!options.ok()) {
    std::fprintf(stderr, "error: %s\n\n%s", options.status().message().c_str(),
                 usage(kHasCompiler).c_str());
    return 2;
  }
  if (options->command == "help") {
    std::fputs(usage(kHasCompiler).c_str(), stdout);
    return 0;
  }
  if (options->command == "devices")
    return runDevices(*options);
#if SINKATTN_RUNNER_HAS_COMPILER
  if (options->command == "compile")
    return runCompile(*options);
#endif
  if (options->command == "tune") {
#if SINKATTN_RUNNER_HAS_COMPILER
    return runTune(*options, compileFromOptions);
#else
    return runTune(*options, nullptr);
#endif
  }
  if (!options->preset.empty()) {
#if SINKATTN_RUNNER_HAS_COMPILER
    return runPreset(*options, compileFromOptions);
#else
    return runPreset(*options, nullptr);
#endif
  }
  return runCheckOrBench(*options);
}
