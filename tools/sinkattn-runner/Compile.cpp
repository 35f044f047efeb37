//===- Compile.cpp - The compiler side of sinkattn-runner -----------------===//

#include "Compile.h"

#include "KernelKinds.h"
#include "SinkAttn/Runtime/AttentionReference.h"
#include "Tune.h"

#include "SinkAttn/Kernels/Kernels.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>

using namespace mlir;
using namespace sinkattn;
using namespace sinkattn::runner;

namespace {
/// An MLIR context with what the kernels need, whose diagnostics are
/// collected into one message instead of printed.
struct CompilerContext {
  CompilerContext() : context(makeRegistry()), handler(&context, [this](Diagnostic &diag) {
    if (!messages.empty())
      messages += "\n";
    messages += diag.str();
    for (const Diagnostic &note : diag.getNotes())
      messages += "\n  note: " + note.str();
    return success();
  }) {}

  static DialectRegistry makeRegistry() {
    DialectRegistry registry;
    registerKernelDialects(registry);
    return registry;
  }

  rt::Status error(const std::string &fallback) const {
    return rt::Status::error(messages.empty() ? fallback : messages);
  }

  MLIRContext context;
  std::string messages;
  ScopedDiagnosticHandler handler;
};

rt::Expected<KernelConfig> configFromOptions(const Options &options) {
  SINKATTN_RT_ASSIGN_OR_RETURN(const KernelKind *kind,
                               kernelKind(options.kernel));
  // A flag the kind has no use for is refused rather than ignored.
  SINKATTN_RT_TRY(checkFlagsApply(options, *kind));
  if (options.packGqa && options.wasGiven("tune-cache"))
    return rt::Status::error("--pack-gqa is not tuned: --tune-cache holds "
                             "choices for blocks of one query head; give "
                             "--schedule and --stages instead");
  KernelConfig config;
  config.kernel = options.kernel;
  config.m = options.m;
  config.n = options.n;
  config.k = options.k;
  config.dtype = options.dtype == "f16" ? rt::DType::F16 : rt::DType::BF16;
  config.stages = options.stages;
  config.startTile = options.startTile;
  config.schedule = options.schedule;
  // Without --persistent, a kind that decides gets kAutoPersistentBlocks.
  config.persistentBlocks =
      options.wasGiven("persistent") || !kind->decidesPersistence
          ? options.persistent
          : kAutoPersistentBlocks;
  // A tuned problem's fastest schedule, stages and persistent form, when
  // asked to choose (an explicit --persistent still wins: auto's own
  // persistence decision needs schedule auto, so the cache must say it).
  if (kind->takes("tune-cache") && !options.tuneCache.empty() &&
      options.schedule == "auto" && !options.wasGiven("stages")) {
    rt::Expected<std::optional<TunedChoice>> tuned =
        lookupTuned(options.tuneCache, tuneKey(options));
    if (!tuned.ok())
      return tuned.status();
    if (*tuned) {
      config.schedule = (*tuned)->schedule;
      config.stages = (*tuned)->stages;
      if (!options.wasGiven("persistent"))
        config.persistentBlocks = (*tuned)->persistentBlocks;
      std::fprintf(stderr,
                   "tuned: schedule=%s stages=%lld persistent=%lld%s (from "
                   "%s)\n",
                   config.schedule.c_str(), (long long)config.stages,
                   (long long)config.persistentBlocks,
                   options.wasGiven("persistent") ? " (given)" : "",
                   options.tuneCache.c_str());
    }
  }
  config.copyEngine = options.copyEngine;
  config.dq = options.dq;
  config.dqSplit = options.dqSplit;
  config.deterministic = options.deterministic;
  // Without --dq-warpgroups or --dkdv-warpgroups, sink-bwd decides
  // (kAutoWarpgroups).
  config.dqWarpgroups = options.wasGiven("dq-warpgroups")
                            ? options.dqWarpgroups
                            : kAutoWarpgroups;
  config.dkdvWarpgroups = options.wasGiven("dkdv-warpgroups")
                              ? options.dkdvWarpgroups
                              : kAutoWarpgroups;
  config.packGqa = options.packGqa;
  config.runTimeShapes = options.runTimeShapes;
  config.causal = options.causal;
  config.batch = options.batch;
  config.heads = options.heads;
  config.kvHeads = options.kvHeads;
  config.seqQ = options.seqQ;
  config.seqKv = options.seqKV;
  config.headDim = options.headDim;
  config.window = options.window;
  config.sinkDtype = options.sinkDtype == "bf16" ? rt::DType::BF16 : rt::DType::F32;
  config.layout = *rt::parseLayout(options.layout);
  config.seqlensQ = options.seqlensQ;
  config.seqlensKv = options.seqlensKv;
  config.target.chip = options.chip;
  return config;
}

rt::Status writeText(const std::string &path, const std::string &text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return rt::Status::success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return rt::Status::error("cannot write '" + path + "': " + ec.message());
  os << text;
  return rt::Status::success();
}
} // namespace

/// `bundle`'s PTX assembled by `ptxas` for `arch`, as a whole program (no
/// -c, like the runtime's JIT: docs/design.md).
static rt::Expected<rt::BundleSass> assembleSass(const rt::Bundle &bundle,
                                                 const std::string &ptxas,
                                                 const std::string &arch) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("sinkattn-ptxas", dir))
    return rt::Status::error("cannot create a temporary directory for ptxas: " +
                             ec.message());
  auto path = [&](const char *name) {
    llvm::SmallString<128> file = dir;
    llvm::sys::path::append(file, name);
    return std::string(file);
  };
  std::string ptxFile = path(rt::kBundlePtxFile),
              cubinFile = path(rt::kBundleCubinFile),
              logFile = path("ptxas.log");
  rt::Expected<rt::BundleSass> result = [&]() -> rt::Expected<rt::BundleSass> {
    SINKATTN_RT_TRY(writeText(ptxFile, bundle.ptx));
    llvm::SmallVector<llvm::StringRef> args = {ptxas, "-arch",   arch,
                                               "-o",  cubinFile, ptxFile};
    std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""),
                                                  llvm::StringRef(logFile),
                                                  llvm::StringRef(logFile)};
    std::string launchError;
    int exitCode = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt,
                                             redirects, 0, 0, &launchError);
    auto log = llvm::MemoryBuffer::getFile(logFile);
    std::string logText = log ? (*log)->getBuffer().trim().str() : "";
    if (exitCode != 0)
      return rt::Status::error(
          "ptxas (" + ptxas + ") failed to assemble the kernel for " + arch +
          (exitCode < 0 ? ": " + launchError
                        : " (exit " + std::to_string(exitCode) + ")") +
          (logText.empty() ? "" : ":\n" + logText));
    auto cubin = llvm::MemoryBuffer::getFile(cubinFile, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (!cubin)
      return rt::Status::error("ptxas (" + ptxas + ") wrote no " +
                               rt::kBundleCubinFile + ": " +
                               cubin.getError().message());
    rt::BundleSass sass;
    sass.arch = arch;
    sass.ptxFingerprint = rt::ptxFingerprint(bundle.ptx);
    sass.cubin = (*cubin)->getBuffer().str();
    return sass;
  }();
  for (const std::string &file : {ptxFile, cubinFile, logFile})
    (void)llvm::sys::fs::remove(file);
  (void)llvm::sys::fs::remove(dir);
  return result;
}

/// The ptxas `--ptxas` names: a path, or a name looked up on PATH.
static rt::Expected<std::string> findPtxas(const std::string &given) {
  std::string path = given;
  if (given.find('/') == std::string::npos) {
    llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(given);
    if (!found)
      return rt::Status::error("--ptxas: no '" + given + "' on PATH");
    path = *found;
  }
  if (!llvm::sys::fs::can_execute(path) || llvm::sys::fs::is_directory(path))
    return rt::Status::error("--ptxas: '" + given +
                             "' is not an executable file");
  return path;
}

rt::Expected<rt::Bundle> runner::compileFromOptions(const Options &options) {
  SINKATTN_RT_ASSIGN_OR_RETURN(KernelConfig config, configFromOptions(options));
  CompilerContext compiler;
  FailureOr<rt::Bundle> bundle = compileKernel(compiler.context, config);
  if (failed(bundle))
    return compiler.error("compiling kernel '" + options.kernel + "' failed");
  return std::move(*bundle);
}

int runner::runCompile(const Options &options) {
  rt::Expected<KernelConfig> config = configFromOptions(options);
  if (!config.ok()) {
    std::fprintf(stderr, "error: %s\n", config.status().message().c_str());
    return 2;
  }
  // A ptxas that cannot run is said before the compile.
  std::string ptxas;
  if (!options.ptxas.empty()) {
    rt::Expected<std::string> found = findPtxas(options.ptxas);
    if (!found.ok()) {
      std::fprintf(stderr, "error: %s\n", found.status().message().c_str());
      return 2;
    }
    ptxas = found.take();
  }
  CompilerContext compiler;
  auto fail = [&](const std::string &fallback) {
    std::fprintf(stderr, "error: %s\n", compiler.error(fallback).message().c_str());
    return 2;
  };
  rt::Status written;
  if (options.emit == "tile" || options.emit == "gpu" || options.emit == "llvm") {
    FailureOr<KernelModule> built = buildKernel(compiler.context, *config);
    if (failed(built))
      return fail("building kernel '" + options.kernel + "' failed");
    if (options.emit == "tile" && !built->tileIR) {
      std::fprintf(stderr,
                   "error: kernel '%s' is written in upstream nvgpu ops; it "
                   "has no tile-level IR (emit gpu, llvm, ptx or bundle)\n",
                   options.kernel.c_str());
      return 2;
    }
    if (options.emit != "tile" && failed(lowerKernelToNVGPU(*built)))
      return fail("lowering kernel '" + options.kernel + "' failed");
    std::string text;
    if (options.emit != "llvm") {
      llvm::raw_string_ostream os(text);
      built->module->print(os);
    } else {
      PTXTargetOptions target = config->target;
      target.barePointers = passesBarePointers(built->bundle);
      FailureOr<std::string> llvmIR = compileToLLVMIR(*built->module, target);
      if (failed(llvmIR))
        return fail("lowering kernel '" + options.kernel + "' failed");
      text = std::move(*llvmIR);
    }
    written = writeText(options.output, text);
  } else {
    FailureOr<rt::Bundle> bundle = compileKernel(compiler.context, *config);
    if (failed(bundle))
      return fail("compiling kernel '" + options.kernel + "' failed");
    if (!ptxas.empty()) {
      rt::Expected<rt::BundleSass> sass =
          assembleSass(*bundle, ptxas, config->target.chip);
      if (!sass.ok()) {
        std::fprintf(stderr, "error: %s\n", sass.status().message().c_str());
        return 2;
      }
      bundle->sass = sass.take();
      bundle->formatVersion =
          std::max(bundle->formatVersion, rt::kBundleSassFormatVersion);
    }
    written = options.emit == "ptx" ? writeText(options.output, bundle->ptx)
                                    : rt::writeBundle(options.output, *bundle);
  }
  if (!written.ok()) {
    std::fprintf(stderr, "error: %s\n", written.message().c_str());
    return 2;
  }
  if (options.output != "-")
    std::fprintf(stderr, "wrote %s (%s)\n", options.output.c_str(),
                 options.emit.c_str());
  return 0;
}
