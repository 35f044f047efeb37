//===- Timing.cpp - CUDA-event based kernel benchmarking ------------------===//

#include "SinkAttn/Runtime/Timing.h"
#include "SinkAttn/Runtime/DeviceBuffer.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace sinkattn::rt {

TimingStats summarizeTimes(std::vector<double> timesMs) {
  TimingStats s;
  s.timesMs = std::move(timesMs);
  if (s.timesMs.empty())
    return s;
  std::vector<double> sorted = s.timesMs;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  s.minMs = sorted.front();
  s.maxMs = sorted.back();
  s.medianMs = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  s.meanMs = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(n);
  return s;
}

size_t l2FlushBytes(const DeviceInfo &info) {
  size_t bytes = 2 * static_cast<size_t>(info.l2CacheBytes > 0 ? info.l2CacheBytes : 0);
  return std::max<size_t>(bytes, 1 << 20);
}

Expected<TimingStats> benchmark(const Context &ctx,
                                const std::function<Status(CUstream)> &fn,
                                int warmup, int iterations, bool flushL2,
                                CUstream stream) {
  if (iterations < 1)
    return Status::error("benchmark needs at least one timed iteration, got " +
                         std::to_string(iterations));
  const CudaDriver &driver = ctx.driver();

  DeviceBuffer flush;
  if (flushL2) {
    SINKATTN_RT_ASSIGN_OR_RETURN(
        flush, DeviceBuffer::allocate(ctx, l2FlushBytes(ctx.info())));
  }

  for (int i = 0; i < warmup; ++i)
    SINKATTN_RT_TRY(fn(stream).withContext("warm-up iteration " +
                                           std::to_string(i) + ": "));
  SINKATTN_RT_TRY(ctx.synchronize());

  std::vector<std::pair<Event, Event>> pairs;
  for (int i = 0; i < iterations; ++i) {
    SINKATTN_RT_ASSIGN_OR_RETURN(Event start, Event::create(ctx, CU_EVENT_DEFAULT));
    SINKATTN_RT_ASSIGN_OR_RETURN(Event stop, Event::create(ctx, CU_EVENT_DEFAULT));
    pairs.emplace_back(std::move(start), std::move(stop));
  }

  for (int i = 0; i < iterations; ++i) {
    if (flushL2) {
      // Alternate the fill value so no layer can elide a repeated memset.
      SINKATTN_RT_TRY(flush.fillAsync(static_cast<uint8_t>(i & 1), stream));
    }
    SINKATTN_RT_TRY(pairs[i].first.record(stream));
    SINKATTN_RT_TRY(fn(stream).withContext("timed iteration " +
                                           std::to_string(i) + ": "));
    SINKATTN_RT_TRY(pairs[i].second.record(stream));
  }

  std::vector<double> times;
  times.reserve(pairs.size());
  for (auto &[start, stop] : pairs) {
    SINKATTN_RT_TRY(SINKATTN_RT_CU(driver, cuEventSynchronize, stop.handle()));
    float ms = 0;
    SINKATTN_RT_TRY(SINKATTN_RT_CU(driver, cuEventElapsedTime_v2, &ms,
                                   start.handle(), stop.handle()));
    times.push_back(ms);
  }
  return summarizeTimes(std::move(times));
}

} // namespace sinkattn::rt
