//===- Timing.h - CUDA-event based kernel benchmarking ---------*- C++ -*-===//

#ifndef SINKATTN_RUNTIME_TIMING_H
#define SINKATTN_RUNTIME_TIMING_H

#include "SinkAttn/Runtime/Context.h"

#include <functional>
#include <vector>

namespace sinkattn::rt {

struct TimingStats {
  /// One entry per timed iteration, in launch order, milliseconds.
  std::vector<double> timesMs;
  double medianMs = 0;
  double minMs = 0;
  double maxMs = 0;
  double meanMs = 0;
};

/// Computes median (mean of the two middle values for even counts), min,
/// max and mean.  Pure; an empty input gives all-zero statistics.
TimingStats summarizeTimes(std::vector<double> timesMs);

/// Bytes of the scratch buffer written between iterations to evict L2:
/// twice the L2 size (at least 1 MiB) so that, whatever the replacement
/// policy, none of the kernel's data survives.
size_t l2FlushBytes(const DeviceInfo &info);

/// Runs `fn(stream)` `warmup` times untimed, then `iterations` times, each
/// bracketed by its own pair of CUDA events recorded on `stream` (which `fn`
/// must launch into), without host waits between iterations.  With
/// `flushL2`, a buffer of l2FlushBytes() is memset on `stream` before every
/// iteration, outside the event pair, so each iteration starts with a cold
/// L2 — and behind GPU work, so the host has queued the iteration's
/// launches before the GPU reaches them and the events time the kernels,
/// not the launch overhead.  (bench/compare_torch.py's time_ms times the
/// PyTorch baselines the same way.)  Errors from `fn` abort the benchmark.
Expected<TimingStats> benchmark(const Context &ctx,
                                const std::function<Status(CUstream)> &fn,
                                int warmup, int iterations, bool flushL2,
                                CUstream stream = nullptr);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_TIMING_H
