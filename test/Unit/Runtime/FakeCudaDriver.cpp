//===- FakeCudaDriver.cpp - A CUDA driver without a GPU, for tests --------===//
//
// libsinkattn-fake-cuda.so exports the driver entry points the runtime
// resolves (SinkAttn/Runtime/CudaDriver.h) with cuda.h's signatures, so that
// CudaDriver::load(path) takes it for libcuda.so.1 and the library's calls
// run end to end on the CPU: one device reporting an H200's attributes
// (compute capability 9.0), device memory in host memory (copies work), and
// modules, tensor maps and launches recorded in a text log that the tests
// read (fakeCudaLog, or the file FAKE_CUDA_LOG_FILE names) instead of
// running anything; with FAKE_CUDA_QUIET set it records nothing.
//
//===----------------------------------------------------------------------===//

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {
std::mutex logMutex;
std::string eventLog;
int contextToken, moduleToken, streamToken, eventToken;
/// The calling thread's current context and the ones pushed under it.
thread_local CUcontext currentContext = nullptr;
thread_local std::vector<CUcontext> contextStack;

/// FAKE_CUDA_QUIET set: nothing is recorded (bench/host_overhead.cpp
/// times the library, not the log).
const bool quiet = std::getenv("FAKE_CUDA_QUIET") != nullptr;

/// The entry point whose next call fails (fakeCudaFailNext), or empty.
std::string failing;
/// Whether this call of `function` fails (once).
bool fails(const char *function) {
  std::lock_guard<std::mutex> lock(logMutex);
  if (failing != function)
    return false;
  failing.clear();
  return true;
}

/// FAKE_CUDA_LOG_FILE set: every line is also appended to that file, for
/// tests of programs (sinkattn-runner) that cannot read fakeCudaLog.
const char *const logFile = std::getenv("FAKE_CUDA_LOG_FILE");

void record(const std::string &line) {
  if (quiet)
    return;
  std::lock_guard<std::mutex> lock(logMutex);
  eventLog += line + "\n";
  if (logFile)
    if (FILE *file = std::fopen(logFile, "a")) {
      std::fputs((line + "\n").c_str(), file);
      std::fclose(file);
    }
}

template <typename T> std::string joined(const T *values, unsigned count) {
  std::ostringstream os;
  for (unsigned i = 0; i < count; ++i)
    os << (i ? "," : "") << values[i];
  return os.str();
}
} // namespace

extern "C" {

/// Everything recorded since the last fakeCudaClearLog, one event a line.
__attribute__((visibility("default"))) const char *fakeCudaLog() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(logMutex);
  copy = eventLog;
  return copy.c_str();
}
/// Makes the next call of the entry point `function` fail: its exported
/// name ("cuLaunchKernelEx", "cuMemAlloc_v2"), or
/// "cuModuleLoadDataEx(cubin)" for a load of a cubin only.
__attribute__((visibility("default"))) void
fakeCudaFailNext(const char *function) {
  std::lock_guard<std::mutex> lock(logMutex);
  failing = function;
}
__attribute__((visibility("default"))) void fakeCudaClearLog() {
  std::lock_guard<std::mutex> lock(logMutex);
  eventLog.clear();
}

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult error, const char **text) {
  *text = error == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult cuGetErrorString(CUresult, const char **text) {
  *text = "the fake driver refused the call";
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetName(char *name, int length, CUdevice) {
  std::strncpy(name, "Fake H200", size_t(length));
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                              CUdevice) {
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = 232448;
    break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *value = 60 << 20;
    break;
  default:
    *value = 0;
  }
  return CUDA_SUCCESS;
}
CUresult cuDeviceTotalMem(size_t *bytes, CUdevice) {
  *bytes = size_t(141) << 30;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice) {
  *context = reinterpret_cast<CUcontext>(&contextToken);
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }

CUresult cuCtxSetCurrent(CUcontext context) {
  currentContext = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *context) {
  *context = currentContext;
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext context) {
  contextStack.push_back(currentContext);
  currentContext = context;
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext *context) {
  if (contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (context)
    *context = currentContext;
  currentContext = contextStack.back();
  contextStack.pop_back();
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult cuMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  if (fails("cuMemAlloc_v2"))
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pointer = CUdeviceptr(memory);
  record("alloc " + std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr pointer) {
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr device, const void *host, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(device), host, bytes);
  record("copy to device " + std::to_string(bytes));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void *host, CUdeviceptr device, size_t bytes) {
  std::memcpy(host, reinterpret_cast<const void *>(device), bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8(CUdeviceptr device, unsigned char value, size_t bytes) {
  std::memset(reinterpret_cast<void *>(device), value, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr device, unsigned char value,
                         size_t bytes, CUstream) {
  std::memset(reinterpret_cast<void *>(device), value, bytes);
  return CUDA_SUCCESS;
}

/// A module remembers nothing; a function is its entry's name.
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int,
                            CUjit_option *, void **) {
  bool cubin = std::memcmp(image, "\x7f" "ELF", 4) == 0;
  if (fails(cubin ? "cuModuleLoadDataEx(cubin)" : "cuModuleLoadDataEx"))
    return CUDA_ERROR_INVALID_IMAGE;
  record(std::string("load module ") + (cubin ? "cubin" : "ptx"));
  *module = reinterpret_cast<CUmodule>(&moduleToken);
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult cuModuleGetFunction(CUfunction *function, CUmodule,
                             const char *name) {
  // Set elements stay where they are: the handle is the name's copy.
  static std::set<std::string> names;
  std::lock_guard<std::mutex> lock(logMutex);
  *function = reinterpret_cast<CUfunction>(
      const_cast<char *>(names.insert(name).first->c_str()));
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) {
  return CUDA_SUCCESS;
}
CUresult cuFuncGetAttribute(int *value, CUfunction_attribute, CUfunction) {
  *value = 0;
  return CUDA_SUCCESS;
}

namespace {
void recordLaunch(CUfunction function, const unsigned grid[3],
                  const unsigned block[3], unsigned sharedBytes) {
  record(std::string("launch ") + reinterpret_cast<const char *>(function) +
         " grid " + joined(grid, 3) + " block " + joined(block, 3) +
         " shared " + std::to_string(sharedBytes));
}
} // namespace

CUresult cuLaunchKernel(CUfunction function, unsigned int gridX,
                        unsigned int gridY, unsigned int gridZ,
                        unsigned int blockX, unsigned int blockY,
                        unsigned int blockZ, unsigned int sharedBytes,
                        CUstream, void **, void **) {
  if (fails("cuLaunchKernel"))
    return CUDA_ERROR_LAUNCH_FAILED;
  unsigned grid[3] = {gridX, gridY, gridZ}, block[3] = {blockX, blockY, blockZ};
  if (!quiet)
    recordLaunch(function, grid, block, sharedBytes);
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction function,
                          void **, void **) {
  if (fails("cuLaunchKernelEx"))
    return CUDA_ERROR_LAUNCH_FAILED;
  unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ},
           block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  if (!quiet)
    recordLaunch(function, grid, block, config->sharedMemBytes);
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent *event, unsigned int) {
  *event = reinterpret_cast<CUevent>(&eventToken);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *milliseconds, CUevent, CUevent) {
  *milliseconds = 0;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *stream, unsigned int) {
  *stream = reinterpret_cast<CUstream>(&streamToken);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int) {
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream) { return CUDA_SUCCESS; }

CUresult cuTensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType, cuuint32_t rank,
                                void *address, const cuuint64_t *dims,
                                const cuuint64_t *strides,
                                const cuuint32_t *box, const cuuint32_t *,
                                CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion,
                                CUtensorMapFloatOOBfill) {
  std::memset(map, 0, sizeof(*map));
  if (!quiet)
    record("tensor map at " + std::to_string(uintptr_t(address)) + " dims " +
           joined(dims, rank) + " strides " + joined(strides, rank - 1) +
           " box " + joined(box, rank));
  return CUDA_SUCCESS;
}
CUresult cuTensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType,
                                 cuuint32_t, void *, const cuuint64_t *,
                                 const cuuint64_t *, const int *, const int *,
                                 cuuint32_t, cuuint32_t, const cuuint32_t *,
                                 CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion,
                                 CUtensorMapFloatOOBfill) {
  std::memset(map, 0, sizeof(*map));
  return CUDA_SUCCESS;
}

} // extern "C"
