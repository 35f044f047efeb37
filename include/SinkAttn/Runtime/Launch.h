//===- Launch.h - Kernel arguments and launches ----------------*- C++ -*-===//

#ifndef SINKATTN_RUNTIME_LAUNCH_H
#define SINKATTN_RUNTIME_LAUNCH_H

#include "SinkAttn/Runtime/Status.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace sinkattn::rt {

class DeviceBuffer;
class Function;

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t volume() const { return uint64_t(x) * y * z; }
  bool operator==(const Dim3 &o) const {
    return x == o.x && y == o.y && z == o.z;
  }
  bool operator!=(const Dim3 &o) const { return !(*this == o); }
};

/// Builds the `void **kernelParams` array of cuLaunchKernel.  Every argument
/// is copied into its own heap slot aligned to the argument's alignment, so
/// the pointers stay valid when more arguments are added or the builder is
/// moved.  CUtensorMap values are passed *by value* (the kernel declares them
/// `.param .align 64 .b8 name[128]`), hence the over-aligned slots.
class KernelArgs {
public:
  KernelArgs() = default;
  KernelArgs(KernelArgs &&) = default;
  KernelArgs &operator=(KernelArgs &&) = default;

  /// Copies `size` bytes; `align` must be a power of two.
  KernelArgs &addBytes(const void *data, size_t size, size_t align);

  template <typename T> KernelArgs &addScalar(const T &value) {
    static_assert(std::is_trivially_copyable_v<T>,
                  "kernel arguments are copied bytewise");
    return addBytes(&value, sizeof(T), alignof(T));
  }
  KernelArgs &addPointer(CUdeviceptr address) {
    return addScalar<CUdeviceptr>(address);
  }
  KernelArgs &addBuffer(const DeviceBuffer &buffer);
  /// 128-byte descriptor, 64-byte aligned at least (CUDA 13's CUtensorMap
  /// type is even 128-byte aligned; we keep whatever it asks for).
  KernelArgs &addTensorMap(const CUtensorMap &map) {
    return addBytes(&map, sizeof(CUtensorMap),
                    alignof(CUtensorMap) > 64 ? alignof(CUtensorMap) : 64);
  }

  size_t size() const { return slots.size(); }
  /// (pointer, size) for each argument, in order.
  std::vector<std::pair<const void *, size_t>> entries() const;
  /// The array cuLaunchKernel expects; valid until the next add*().
  void **kernelParams() { return pointers.data(); }

private:
  struct Slot {
    std::unique_ptr<unsigned char[]> storage;
    void *data = nullptr;
    size_t size = 0;
  };
  std::vector<Slot> slots;
  std::vector<void *> pointers;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  /// Thread-block cluster shape; (1,1,1) launches without clusters.
  Dim3 cluster;
  uint32_t dynamicSharedMemoryBytes = 0;
  CUstream stream = nullptr;
};

/// Hardware limits that do not depend on the device model: every dim >= 1,
/// block <= 1024 threads (z <= 64), grid.y/z <= 65535, grid divisible by the
/// cluster shape, cluster <= 16 blocks.  Pure; no driver needed.
Status validateLaunchConfig(const LaunchConfig &config);

/// Launches `function`.  Dynamic shared memory above 48 KB first raises
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (the driver refuses such
/// launches otherwise); clusters of more than 8 blocks set
/// CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED.  A cluster other than
/// (1,1,1) is launched with cuLaunchKernelEx and
/// CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, anything else with cuLaunchKernel.
/// The launch is asynchronous: errors inside the kernel surface at the next
/// synchronization.
Status launchKernel(const Function &function, const LaunchConfig &config,
                    KernelArgs &args);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_LAUNCH_H
