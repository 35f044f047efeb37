//===- Context.h - Device, primary context and stream ----------*- C++ -*-===//

#ifndef SINKATTN_RUNTIME_CONTEXT_H
#define SINKATTN_RUNTIME_CONTEXT_H

#include "SinkAttn/Runtime/CudaDriver.h"

#include <cstddef>
#include <memory>
#include <string>

namespace sinkattn::rt {

/// Static properties of one GPU, queried once when a Context is created.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0;
  int computeMinor = 0;
  int smCount = 0;
  /// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: the most dynamic
  /// shared memory a kernel may request after opting in (227 KB on H100).
  int maxSharedMemoryPerBlockOptin = 0;
  int l2CacheBytes = 0;
  size_t totalMemoryBytes = 0;

  /// "sm_90" for compute capability 9.0.
  std::string smName() const;
};

/// Success when the device is Hopper (sm_90) or newer; otherwise the error
/// "GPU <name> is sm_NN; SinkAttn kernels need sm_90 (Hopper) or newer".
/// Note: PTX compiled for sm_90a uses arch-specific instructions (wgmma,
/// setmaxnreg) and only JIT-compiles on compute capability 9.0 exactly; on
/// newer GPUs the JIT reports that through the ptxas error log.
Status checkHopperOrNewer(const DeviceInfo &info);

/// Number of CUDA devices (calls cuInit first).
Expected<int> deviceCount(const CudaDriver &driver);
/// Queries a device's DeviceInfo without creating a context (calls cuInit).
Expected<DeviceInfo> queryDevice(const CudaDriver &driver, int ordinal);

/// RAII owner of a device's *primary* context (retained on creation,
/// released on destruction) which is made current on the calling thread.
/// We use the primary context, not cuCtxCreate, because it is the context
/// the CUDA runtime and profilers (nsys/ncu) share, and it is reference
/// counted so several owners in one process are harmless.
class Context {
public:
  static Expected<Context> create(std::shared_ptr<const CudaDriver> driver,
                                  int ordinal = 0);

  Context(Context &&other) noexcept;
  Context &operator=(Context &&other) noexcept;
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ~Context();

  const CudaDriver &driver() const { return *drv; }
  const std::shared_ptr<const CudaDriver> &driverPtr() const { return drv; }
  const DeviceInfo &info() const { return deviceInfo; }
  CUcontext handle() const { return ctx; }
  CUdevice device() const { return dev; }

  /// Binds the context to the calling thread (needed only for threads other
  /// than the creating one).
  Status makeCurrent() const;
  /// Pushes the context onto the calling thread's stack (current until
  /// popCurrent), leaving whatever was current underneath: a library
  /// called from a framework's threads must not change their context.
  Status pushCurrent() const;
  /// Pops the context pushCurrent pushed.
  Status popCurrent() const;
  /// cuCtxSynchronize: waits for all work and surfaces asynchronous errors
  /// (e.g. an illegal address in a kernel).
  Status synchronize() const;

private:
  Context() = default;
  void reset();

  std::shared_ptr<const CudaDriver> drv;
  DeviceInfo deviceInfo;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
};

/// RAII CUDA stream (cuStreamCreate / cuStreamDestroy_v2).  A
/// default-constructed Stream is the legacy default stream (null handle).
class Stream {
public:
  Stream() = default;
  /// Creates a blocking stream (CU_STREAM_DEFAULT) so it stays ordered with
  /// the legacy default stream that synchronous memcpy/memset use; with
  /// CU_STREAM_NON_BLOCKING it runs beside that stream (ordered with it
  /// only through events).
  static Expected<Stream> create(const Context &ctx,
                                 unsigned flags = CU_STREAM_DEFAULT);

  Stream(Stream &&other) noexcept;
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream();

  CUstream handle() const { return stream; }
  Status synchronize() const;

private:
  void reset();
  std::shared_ptr<const CudaDriver> drv;
  CUstream stream = nullptr;
};

/// RAII CUDA event (cuEventCreate / cuEventDestroy_v2). By default without
/// timing (CU_EVENT_DISABLE_TIMING), to order work across streams;
/// CU_EVENT_DEFAULT for cuEventElapsedTime.
class Event {
public:
  static Expected<Event> create(const Context &ctx,
                                unsigned flags = CU_EVENT_DISABLE_TIMING);

  Event(Event &&other) noexcept;
  Event &operator=(Event &&other) noexcept;
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  ~Event();

  /// Marks the point in `stream` that waitIn waits for.
  Status record(CUstream stream) const;
  /// Makes the work queued on `stream` after this call wait until the
  /// recorded point has been reached (cuStreamWaitEvent; no host wait).
  Status waitIn(CUstream stream) const;
  CUevent handle() const { return event; }

private:
  Event() = default;
  void reset();
  std::shared_ptr<const CudaDriver> drv;
  CUevent event = nullptr;
};

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_CONTEXT_H
