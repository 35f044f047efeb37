//===- Launch.cpp - Kernel arguments and launches -------------------------===//

#include "SinkAttn/Runtime/Launch.h"
#include "SinkAttn/Runtime/DeviceBuffer.h"
#include "SinkAttn/Runtime/Module.h"

#include <cstring>
#include <string>

namespace sinkattn::rt {

KernelArgs &KernelArgs::addBytes(const void *data, size_t size, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0)
    align = alignof(std::max_align_t);
  Slot slot;
  // Over-allocate and align by hand: operator new[] only guarantees
  // max_align_t alignment, tensor maps need 64 (128 in CUDA 13 headers).
  size_t capacity = size + align;
  slot.storage.reset(new unsigned char[capacity]);
  auto base = reinterpret_cast<uintptr_t>(slot.storage.get());
  uintptr_t aligned = (base + align - 1) & ~(uintptr_t(align) - 1);
  slot.data = reinterpret_cast<void *>(aligned);
  slot.size = size;
  if (size)
    std::memcpy(slot.data, data, size);
  pointers.push_back(slot.data);
  slots.push_back(std::move(slot));
  return *this;
}

KernelArgs &KernelArgs::addBuffer(const DeviceBuffer &buffer) {
  return addPointer(buffer.address());
}

std::vector<std::pair<const void *, size_t>> KernelArgs::entries() const {
  std::vector<std::pair<const void *, size_t>> out;
  out.reserve(slots.size());
  for (const Slot &s : slots)
    out.emplace_back(s.data, s.size);
  return out;
}

static std::string dimString(const Dim3 &d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " +
         std::to_string(d.z) + ")";
}

Status validateLaunchConfig(const LaunchConfig &c) {
  auto positive = [](const Dim3 &d) { return d.x && d.y && d.z; };
  if (!positive(c.grid))
    return Status::error("grid " + dimString(c.grid) +
                         " has a zero dimension; every dimension must be >= 1");
  if (!positive(c.block))
    return Status::error("block " + dimString(c.block) +
                         " has a zero dimension; every dimension must be >= 1");
  if (!positive(c.cluster))
    return Status::error("cluster " + dimString(c.cluster) +
                         " has a zero dimension; every dimension must be >= 1");
  if (c.block.volume() > 1024)
    return Status::error("block " + dimString(c.block) + " has " +
                         std::to_string(c.block.volume()) +
                         " threads; CUDA allows at most 1024 per block");
  if (c.block.z > 64)
    return Status::error("block z dimension is " + std::to_string(c.block.z) +
                         "; CUDA allows at most 64");
  if (c.grid.x > 0x7fffffffu)
    return Status::error("grid x dimension is " + std::to_string(c.grid.x) +
                         "; CUDA allows at most 2^31-1");
  if (c.grid.y > 65535 || c.grid.z > 65535)
    return Status::error("grid " + dimString(c.grid) +
                         " exceeds 65535 blocks in y or z");
  if (c.grid.x % c.cluster.x || c.grid.y % c.cluster.y ||
      c.grid.z % c.cluster.z)
    return Status::error("grid " + dimString(c.grid) +
                         " is not a multiple of the cluster shape " +
                         dimString(c.cluster));
  if (c.cluster.volume() > 16)
    return Status::error("cluster " + dimString(c.cluster) + " has " +
                         std::to_string(c.cluster.volume()) +
                         " blocks; Hopper supports at most 16 (8 portable)");
  return Status();
}

Status launchKernel(const Function &function, const LaunchConfig &c,
                    KernelArgs &args) {
  SINKATTN_RT_TRY(validateLaunchConfig(c).withContext(
      "cannot launch " + function.name() + ": "));
  const CudaDriver &driver = function.driver();

  // Kernels may use at most 48 KB of dynamic shared memory unless they opt
  // in; the opt-in value must cover the requested size.
  if (c.dynamicSharedMemoryBytes > function.dynamicSmemOptIn) {
    SINKATTN_RT_TRY(function.setAttribute(
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(c.dynamicSharedMemoryBytes)));
    function.dynamicSmemOptIn = c.dynamicSharedMemoryBytes;
  }

  Status st;
  if (c.cluster == Dim3{}) {
    st = SINKATTN_RT_CU(driver, cuLaunchKernel, function.handle(), c.grid.x,
                        c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z,
                        c.dynamicSharedMemoryBytes, c.stream,
                        args.kernelParams(), nullptr);
  } else {
    if (c.cluster.volume() > 8 && !function.nonPortableClusters) {
      SINKATTN_RT_TRY(function.setAttribute(
          CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
      function.nonPortableClusters = true;
    }
    CUlaunchAttribute attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = c.cluster.x;
    attr.value.clusterDim.y = c.cluster.y;
    attr.value.clusterDim.z = c.cluster.z;
    CUlaunchConfig config;
    std::memset(&config, 0, sizeof(config));
    config.gridDimX = c.grid.x;
    config.gridDimY = c.grid.y;
    config.gridDimZ = c.grid.z;
    config.blockDimX = c.block.x;
    config.blockDimY = c.block.y;
    config.blockDimZ = c.block.z;
    config.sharedMemBytes = c.dynamicSharedMemoryBytes;
    config.hStream = c.stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    st = SINKATTN_RT_CU(driver, cuLaunchKernelEx, &config, function.handle(),
                        args.kernelParams(), nullptr);
  }
  return st.withContext("launching " + function.name() + ": ");
}

} // namespace sinkattn::rt
