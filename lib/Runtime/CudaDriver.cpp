//===- CudaDriver.cpp - Run-time loaded CUDA driver API -------------------===//

#include "SinkAttn/Runtime/CudaDriver.h"

#include <cstdlib>

#include <dlfcn.h>

namespace sinkattn::rt {

std::string formatCudaError(const char *call, int code, const char *errorName,
                            const char *errorString) {
  std::string msg = std::string(call) + " failed: ";
  msg += errorName ? errorName : ("CUDA error " + std::to_string(code));
  if (errorString)
    msg += std::string(" (") + errorString + ")";
  return msg;
}

Status CudaDriver::check(CUresult result, const char *call) const {
  if (result == CUDA_SUCCESS)
    return Status();
  const char *name = nullptr;
  const char *description = nullptr;
  // Both lookups fail for codes the driver does not know; formatCudaError
  // then falls back to the numeric code.
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (cuGetErrorString(result, &description) != CUDA_SUCCESS)
    description = nullptr;
  return Status::error(
      formatCudaError(call, static_cast<int>(result), name, description));
}

std::string defaultCudaDriverLibrary() {
  const char *chosen = std::getenv("SINKATTN_CUDA_DRIVER");
  return chosen && *chosen ? chosen : kCudaDriverLibrary;
}

Expected<std::shared_ptr<const CudaDriver>>
CudaDriver::load(const std::string &library) {
  // RTLD_LOCAL keeps the driver's symbols out of the global namespace;
  // nothing else in the process should bind to them.
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return Status::error(
        "cannot load the CUDA driver library " + library + ": " +
        (why ? why : "unknown dlopen error") +
        (library != kCudaDriverLibrary && library == defaultCudaDriverLibrary()
             ? std::string(" (named by SINKATTN_CUDA_DRIVER)")
             : std::string(". SinkAttn needs an NVIDIA GPU driver (CUDA 12.0 "
                           "or newer) that provides ") +
                   kCudaDriverLibrary +
                   "; is the NVIDIA driver installed and on the loader "
                   "path?"));
  }

  std::shared_ptr<CudaDriver> driver(new CudaDriver());
  driver->library = library;

  auto missing = [&](const char *symbol) {
    return Status::error(library + " does not export " + symbol +
                         "; the installed NVIDIA driver is too old (SinkAttn "
                         "needs a CUDA 12.0 or newer driver for TMA and "
                         "cluster launches)");
  };

#define SINKATTN_RT_RESOLVE(name)                                              \
  driver->name = reinterpret_cast<decltype(driver->name)>(dlsym(handle, #name)); \
  if (!driver->name)                                                           \
    return missing(#name);
  SINKATTN_RT_CUDA_FUNCTIONS(SINKATTN_RT_RESOLVE)
#undef SINKATTN_RT_RESOLVE

  void *elapsed = dlsym(handle, "cuEventElapsedTime_v2");
  if (!elapsed)
    elapsed = dlsym(handle, "cuEventElapsedTime");
  if (!elapsed)
    return missing("cuEventElapsedTime_v2");
  driver->cuEventElapsedTime_v2 =
      reinterpret_cast<decltype(driver->cuEventElapsedTime_v2)>(elapsed);

  // cuDriverGetVersion works before cuInit, so failures here mean a broken
  // installation rather than "no GPU".
  SINKATTN_RT_TRY(SINKATTN_RT_CU(*driver, cuDriverGetVersion,
                                 &driver->driverVersion));
  return std::shared_ptr<const CudaDriver>(std::move(driver));
}

} // namespace sinkattn::rt
