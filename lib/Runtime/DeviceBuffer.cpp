//===- DeviceBuffer.cpp - RAII device memory ------------------------------===//

#include "SinkAttn/Runtime/DeviceBuffer.h"

#include <string>
#include <utility>

namespace sinkattn::rt {

Expected<DeviceBuffer> DeviceBuffer::allocate(const Context &ctx,
                                              size_t bytes) {
  DeviceBuffer b;
  b.drv = ctx.driverPtr();
  if (bytes == 0)
    return b;
  Status st = SINKATTN_RT_CU(*b.drv, cuMemAlloc_v2, &b.ptr, bytes);
  if (!st.ok())
    return st.withContext("allocating " + std::to_string(bytes) +
                          " bytes of device memory: ");
  b.bytes = bytes;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept {
  *this = std::move(other);
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    (void)release();
    drv = std::move(other.drv);
    ptr = std::exchange(other.ptr, 0);
    bytes = std::exchange(other.bytes, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { (void)release(); }

Status DeviceBuffer::release() {
  Status st;
  if (ptr && drv)
    st = SINKATTN_RT_CU(*drv, cuMemFree_v2, ptr);
  ptr = 0;
  bytes = 0;
  return st;
}

Status DeviceBuffer::checkRange(const char *what, size_t count,
                                size_t offset) const {
  if (offset > bytes || count > bytes - offset)
    return Status::error(std::string(what) + " of " + std::to_string(count) +
                         " bytes at offset " + std::to_string(offset) +
                         " exceeds the " + std::to_string(bytes) +
                         "-byte device buffer");
  return Status();
}

Status DeviceBuffer::copyFromHost(const void *src, size_t count,
                                  size_t offset) {
  SINKATTN_RT_TRY(checkRange("host-to-device copy", count, offset));
  if (count == 0)
    return Status();
  return SINKATTN_RT_CU(*drv, cuMemcpyHtoD_v2, ptr + offset, src, count);
}

Status DeviceBuffer::copyToHost(void *dst, size_t count, size_t offset) const {
  SINKATTN_RT_TRY(checkRange("device-to-host copy", count, offset));
  if (count == 0)
    return Status();
  return SINKATTN_RT_CU(*drv, cuMemcpyDtoH_v2, dst, ptr + offset, count);
}

Status DeviceBuffer::fill(uint8_t value) {
  if (bytes == 0)
    return Status();
  return SINKATTN_RT_CU(*drv, cuMemsetD8_v2, ptr, value, bytes);
}

Status DeviceBuffer::fillAsync(uint8_t value, CUstream stream) {
  if (bytes == 0)
    return Status();
  return SINKATTN_RT_CU(*drv, cuMemsetD8Async, ptr, value, bytes, stream);
}

} // namespace sinkattn::rt
