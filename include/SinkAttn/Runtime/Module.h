//===- Module.h - PTX JIT compilation and kernel handles -------*- C++ -*-===//

#ifndef SINKATTN_RUNTIME_MODULE_H
#define SINKATTN_RUNTIME_MODULE_H

#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/Launch.h"

#include <memory>
#include <string>

namespace sinkattn::rt {

struct JitOptions {
  /// CU_JIT_LOG_VERBOSE: ptxas reports registers/spills/smem per kernel in
  /// the info log, which the runner prints with --verbose.
  bool verbose = true;
  /// CU_JIT_GENERATE_LINE_INFO, for profilers.
  bool generateLineInfo = false;
  /// Capacity of each of the info and error log buffers.
  size_t logBufferBytes = 64 * 1024;
};

/// A kernel entry point.  Only valid while its Module is alive.
class Function {
public:
  CUfunction handle() const { return fn; }
  const std::string &name() const { return entry; }
  const CudaDriver &driver() const { return *drv; }

  Expected<int> getAttribute(CUfunction_attribute attribute) const;
  Status setAttribute(CUfunction_attribute attribute, int value) const;

private:
  friend class Module;
  friend Status launchKernel(const Function &, const LaunchConfig &,
                             KernelArgs &);
  std::shared_ptr<const CudaDriver> drv;
  CUfunction fn = nullptr;
  std::string entry;
  // Launch-time opt-ins already applied to `fn`, so that launches in a
  // benchmark loop do not add a driver call (and host latency) each time.
  mutable uint32_t dynamicSmemOptIn = 48 * 1024;
  mutable bool nonPortableClusters = false;
};

/// A JIT-compiled module (cuModuleLoadDataEx on the PTX: a whole-program
/// compile, like `ptxas` without -c; the driver's linker would compile the
/// PTX as relocatable code, which spills registers in kernels that use
/// setmaxnreg). Unloaded on destruction.
class Module {
public:
  /// Compiles `ptx` for the context's device.  On failure the message names
  /// `sourceName` and holds the failing call and ptxas's error log.  The
  /// context must be current.
  static Expected<Module> loadPtx(const Context &ctx, const std::string &ptx,
                                  const JitOptions &options = {},
                                  const std::string &sourceName = "kernel.ptx");
  /// Loads SASS assembled ahead of time (a cubin for the context's GPU):
  /// nothing is compiled. On failure (a cubin for another GPU, or newer than
  /// the driver) the message names `sourceName` and the failing call.
  static Expected<Module>
  loadCubin(const Context &ctx, const std::string &cubin,
            const std::string &sourceName = "kernel.cubin");

  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  Expected<Function> getFunction(const std::string &name) const;

  /// ptxas informational output (register counts, spills...).
  const std::string &infoLog() const { return info; }
  /// Warnings (errors make loadPtx fail, so this holds warnings only).
  const std::string &errorLog() const { return errors; }
  CUmodule handle() const { return mod; }

private:
  Module() = default;
  void reset();
  /// cuModuleLoadDataEx of a PTX or cubin image; `failure` starts the error.
  static Expected<Module> loadImage(const Context &ctx, const void *image,
                                    const JitOptions &options,
                                    const std::string &failure);

  std::shared_ptr<const CudaDriver> drv;
  CUmodule mod = nullptr;
  std::string info;
  std::string errors;
};

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_MODULE_H
