//===- DeviceBuffer.h - RAII device memory ---------------------*- C++ -*-===//

#ifndef SINKATTN_RUNTIME_DEVICEBUFFER_H
#define SINKATTN_RUNTIME_DEVICEBUFFER_H

#include "SinkAttn/Runtime/Context.h"

#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

namespace sinkattn::rt {

/// Owns one cuMemAlloc_v2 allocation; move-only.  Copies are synchronous
/// (legacy default stream), which is what a correctness harness wants.
class DeviceBuffer {
public:
  /// An empty buffer (no allocation, address 0).
  DeviceBuffer() = default;
  /// Allocates `bytes` bytes.  Zero bytes yields an empty buffer (the driver
  /// rejects zero-sized allocations).  cuMemAlloc returns memory aligned to
  /// at least 256 bytes, which satisfies TMA's 16-byte rule.
  static Expected<DeviceBuffer> allocate(const Context &ctx, size_t bytes);

  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  CUdeviceptr address() const { return ptr; }
  size_t size() const { return bytes; }

  /// Copies host -> device at byte `offset`; the range must fit.
  Status copyFromHost(const void *src, size_t count, size_t offset = 0);
  /// Copies device -> host from byte `offset`; the range must fit.
  Status copyToHost(void *dst, size_t count, size_t offset = 0) const;

  template <typename T> Status upload(const std::vector<T> &host) {
    static_assert(std::is_trivially_copyable_v<T>);
    return copyFromHost(host.data(), host.size() * sizeof(T));
  }
  /// Downloads the whole buffer as size()/sizeof(T) elements.
  template <typename T> Expected<std::vector<T>> download() const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> host(bytes / sizeof(T));
    SINKATTN_RT_TRY(copyToHost(host.data(), host.size() * sizeof(T)));
    return host;
  }

  /// Sets every byte to `value` (cuMemsetD8_v2).
  Status fill(uint8_t value);
  /// Sets every byte to `value`, ordered on `stream` and not waited for
  /// (cuMemsetD8Async).
  Status fillAsync(uint8_t value, CUstream stream);
  /// Fills with 0xFF bytes: NaN in fp32, fp16 and bf16, so output elements a
  /// kernel forgets to write are caught by the comparison.
  Status poison() { return fill(0xFF); }

  /// Frees now (also done by the destructor) and reports any error.
  Status release();

private:
  Status checkRange(const char *what, size_t count, size_t offset) const;

  std::shared_ptr<const CudaDriver> drv;
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
};

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_DEVICEBUFFER_H
