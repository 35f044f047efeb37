//===- CudaDriver.h - Run-time loaded CUDA driver API ----------*- C++ -*-===//
//
// The runtime never links against libcuda: the driver is dlopen'ed at run
// time so that SinkAttn tools build and start on machines without a GPU
// driver (and can print a clear message instead of failing in the dynamic
// loader).  Function pointers are resolved with dlsym using the exact
// versioned symbol names exported by the driver (cuMemAlloc_v2, ...), which
// are the names cuda.h's `#define cuX cuX_vN` macros select.
//
// Each pointer member is named after its exported symbol, so
// `driver.cuMemAlloc_v2(&p, n)` reads like the C API (and, because of the
// cuda.h macros, `driver.cuMemAlloc(&p, n)` resolves to the same member).
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_CUDADRIVER_H
#define SINKATTN_RUNTIME_CUDADRIVER_H

#include "SinkAttn/Runtime/Status.h"

#include <cuda.h>

#include <memory>
#include <string>

/// Driver entry points the runtime uses.  Every one of them must be exported
/// by the loaded libcuda; cuEventElapsedTime_v2 is handled separately (see
/// CudaDriver::cuEventElapsedTime_v2).
#define SINKATTN_RT_CUDA_FUNCTIONS(X)                                          \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem_v2)                                                       \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease_v2)                                              \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxGetCurrent)                                                           \
  X(cuCtxPushCurrent_v2)                                                       \
  X(cuCtxPopCurrent_v2)                                                        \
  X(cuCtxSynchronize)                                                          \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemcpyHtoD_v2)                                                           \
  X(cuMemcpyDtoH_v2)                                                           \
  X(cuMemsetD8_v2)                                                             \
  X(cuMemsetD8Async)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuFuncGetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuLaunchKernelEx)                                                          \
  X(cuEventCreate)                                                             \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventDestroy_v2)                                                         \
  X(cuStreamCreate)                                                            \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamDestroy_v2)                                                        \
  X(cuTensorMapEncodeTiled)                                                    \
  X(cuTensorMapEncodeIm2col)

namespace sinkattn::rt {

/// Name of the driver library load() opens by default.
inline constexpr const char *kCudaDriverLibrary = "libcuda.so.1";
/// The library load() opens by default: $SINKATTN_CUDA_DRIVER where it is
/// set and not empty (tests load a driver without a GPU so), else
/// kCudaDriverLibrary.
std::string defaultCudaDriverLibrary();

/// Formats a failed driver call the way every runtime error does:
/// "<call> failed: <ERROR_NAME> (<error string>)".  Pure; used by
/// CudaDriver::check and directly testable without a driver.
std::string formatCudaError(const char *call, int code, const char *errorName,
                            const char *errorString);

class CudaDriver {
public:
  /// dlopen()s `library` and resolves every entry point.  Fails with a
  /// message naming the library (and dlerror()) when it cannot be opened, or
  /// naming the missing symbol when the driver is too old.  The library is
  /// never dlclose()d: libcuda starts threads and registers exit handlers,
  /// so unloading it while the process lives is unsafe.
  static Expected<std::shared_ptr<const CudaDriver>>
  load(const std::string &library = defaultCudaDriverLibrary());

  /// Success for CUDA_SUCCESS; otherwise an error built by formatCudaError
  /// with the driver's own error name and description.
  Status check(CUresult result, const char *call) const;

  /// CUDA driver version as reported by cuDriverGetVersion (e.g. 12040).
  int version() const { return driverVersion; }
  /// The name/path that was passed to dlopen.
  const std::string &libraryName() const { return library; }

#define SINKATTN_RT_DECLARE_POINTER(name) decltype(&::name) name = nullptr;
  SINKATTN_RT_CUDA_FUNCTIONS(SINKATTN_RT_DECLARE_POINTER)
#undef SINKATTN_RT_DECLARE_POINTER

  /// Resolved to cuEventElapsedTime_v2 when exported (CUDA 12.8+ drivers),
  /// otherwise to the older cuEventElapsedTime, which has the same
  /// signature.  cuda.h (CUDA 13) maps cuEventElapsedTime to this name.
  decltype(&::cuEventElapsedTime_v2) cuEventElapsedTime_v2 = nullptr;

private:
  CudaDriver() = default;
  std::string library;
  int driverVersion = 0;
};

/// Convenience: `SINKATTN_RT_CU(driver, cuMemFree_v2, ptr)` calls the entry
/// point and converts its CUresult to a Status naming the call.
#define SINKATTN_RT_CU(driver, fn, ...) (driver).check((driver).fn(__VA_ARGS__), #fn)

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_CUDADRIVER_H
