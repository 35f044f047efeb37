//===- Context.cpp - Device, primary context and stream -------------------===//

#include "SinkAttn/Runtime/Context.h"

#include <utility>

namespace sinkattn::rt {

std::string DeviceInfo::smName() const {
  return "sm_" + std::to_string(computeMajor * 10 + computeMinor);
}

Status checkHopperOrNewer(const DeviceInfo &info) {
  if (info.computeMajor >= 9)
    return Status();
  return Status::error("GPU " + info.name + " is " + info.smName() +
                       "; SinkAttn kernels need sm_90 (Hopper) or newer");
}

Expected<int> deviceCount(const CudaDriver &driver) {
  SINKATTN_RT_TRY(SINKATTN_RT_CU(driver, cuInit, 0));
  int count = 0;
  SINKATTN_RT_TRY(SINKATTN_RT_CU(driver, cuDeviceGetCount, &count));
  return count;
}

Expected<DeviceInfo> queryDevice(const CudaDriver &driver, int ordinal) {
  SINKATTN_RT_ASSIGN_OR_RETURN(int count, deviceCount(driver));
  if (ordinal < 0 || ordinal >= count)
    return Status::error("GPU ordinal " + std::to_string(ordinal) +
                         " does not exist; this machine has " +
                         std::to_string(count) + " CUDA device(s)");
  CUdevice dev = 0;
  SINKATTN_RT_TRY(SINKATTN_RT_CU(driver, cuDeviceGet, &dev, ordinal));

  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  SINKATTN_RT_TRY(
      SINKATTN_RT_CU(driver, cuDeviceGetName, name, sizeof(name) - 1, dev));
  info.name = name;

  struct {
    CUdevice_attribute attr;
    int *out;
  } queries[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &info.computeMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &info.computeMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.smCount},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSharedMemoryPerBlockOptin},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info.l2CacheBytes},
  };
  for (auto &q : queries)
    SINKATTN_RT_TRY(
        SINKATTN_RT_CU(driver, cuDeviceGetAttribute, q.out, q.attr, dev));
  SINKATTN_RT_TRY(SINKATTN_RT_CU(driver, cuDeviceTotalMem_v2,
                                 &info.totalMemoryBytes, dev));
  return info;
}

Expected<Context> Context::create(std::shared_ptr<const CudaDriver> driver,
                                  int ordinal) {
  if (!driver)
    return Status::error("Context::create: no CUDA driver");
  SINKATTN_RT_ASSIGN_OR_RETURN(DeviceInfo info, queryDevice(*driver, ordinal));

  Context c;
  c.drv = std::move(driver);
  c.deviceInfo = std::move(info);
  SINKATTN_RT_TRY(SINKATTN_RT_CU(*c.drv, cuDeviceGet, &c.dev, ordinal));
  SINKATTN_RT_TRY(
      SINKATTN_RT_CU(*c.drv, cuDevicePrimaryCtxRetain, &c.ctx, c.dev));
  // From here on `c`'s destructor releases the retain if anything fails.
  SINKATTN_RT_TRY(c.makeCurrent());
  return c;
}

Context::Context(Context &&other) noexcept { *this = std::move(other); }

Context &Context::operator=(Context &&other) noexcept {
  if (this != &other) {
    reset();
    drv = std::move(other.drv);
    deviceInfo = std::move(other.deviceInfo);
    dev = other.dev;
    ctx = std::exchange(other.ctx, nullptr);
  }
  return *this;
}

Context::~Context() { reset(); }

void Context::reset() {
  if (ctx && drv)
    // Errors cannot be reported from a destructor; a failed release only
    // leaks the context until process exit.
    (void)drv->cuDevicePrimaryCtxRelease_v2(dev);
  ctx = nullptr;
}

Status Context::makeCurrent() const {
  return SINKATTN_RT_CU(*drv, cuCtxSetCurrent, ctx);
}

Status Context::pushCurrent() const {
  return SINKATTN_RT_CU(*drv, cuCtxPushCurrent_v2, ctx);
}

Status Context::popCurrent() const {
  CUcontext popped = nullptr;
  return SINKATTN_RT_CU(*drv, cuCtxPopCurrent_v2, &popped);
}

Status Context::synchronize() const {
  return SINKATTN_RT_CU(*drv, cuCtxSynchronize);
}

Expected<Stream> Stream::create(const Context &ctx, unsigned flags) {
  Stream s;
  s.drv = ctx.driverPtr();
  SINKATTN_RT_TRY(SINKATTN_RT_CU(*s.drv, cuStreamCreate, &s.stream, flags));
  return s;
}

Expected<Event> Event::create(const Context &ctx, unsigned flags) {
  Event e;
  e.drv = ctx.driverPtr();
  SINKATTN_RT_TRY(SINKATTN_RT_CU(*e.drv, cuEventCreate, &e.event, flags));
  return e;
}

Event::Event(Event &&other) noexcept { *this = std::move(other); }

Event &Event::operator=(Event &&other) noexcept {
  if (this != &other) {
    reset();
    drv = std::move(other.drv);
    event = std::exchange(other.event, nullptr);
  }
  return *this;
}

Event::~Event() { reset(); }

void Event::reset() {
  if (event && drv)
    (void)drv->cuEventDestroy_v2(event);
  event = nullptr;
}

Status Event::record(CUstream stream) const {
  if (!event)
    return Status::error("Event::record on a moved-from Event");
  return SINKATTN_RT_CU(*drv, cuEventRecord, event, stream);
}

Status Event::waitIn(CUstream stream) const {
  if (!event)
    return Status::error("Event::waitIn on a moved-from Event");
  return SINKATTN_RT_CU(*drv, cuStreamWaitEvent, stream, event, 0);
}

Stream::Stream(Stream &&other) noexcept { *this = std::move(other); }

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    reset();
    drv = std::move(other.drv);
    stream = std::exchange(other.stream, nullptr);
  }
  return *this;
}

Stream::~Stream() { reset(); }

void Stream::reset() {
  if (stream && drv)
    (void)drv->cuStreamDestroy_v2(stream);
  stream = nullptr;
}

Status Stream::synchronize() const {
  if (!drv)
    return Status::error("Stream::synchronize on a default-constructed "
                         "Stream; synchronize the Context instead");
  return SINKATTN_RT_CU(*drv, cuStreamSynchronize, stream);
}

} // namespace sinkattn::rt
