//===- KernelKinds.h - What the runner knows about each kernel kind -*- C++ -*-===//
//
// One KernelKind per kernel kind (gemm, sink-fwd, ...), registered once in
// kernelKinds(): the runner looks a bundle's or --kernel's kind up there and
// calls through it instead of comparing kind names.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_TOOLS_RUNNER_KERNELKINDS_H
#define SINKATTN_TOOLS_RUNNER_KERNELKINDS_H

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sinkattn::runner {

struct CheckReport;
struct Options;
struct BenchReport;
class Session;

struct KernelKind {
  /// The kind's name, as in --kernel and a bundle manifest's "kernel".
  std::string_view name;
  /// The kind-specific flags (spelled without "--") it takes; Options marks
  /// which flags are kind-specific, and every kind takes the others.
  std::vector<std::string_view> flags;
  /// Without --persistent the kernel builder decides whether to be
  /// persistent (otherwise it gets --persistent's default).
  bool decidesPersistence = false;
  /// Fills input buffer `buffer` with `count` values from random stream
  /// `stream` (before rounding to the buffer's type).
  std::vector<float> (*randomInput)(std::string_view buffer, size_t count,
                                    uint64_t stream) = nullptr;
  /// The values of integer input `buffer`; null: the kind has none.
  rt::Expected<std::vector<int32_t>> (*integerInput)(
      const rt::Bundle &bundle, const std::string &buffer) = nullptr;
  /// Checks that the manifest describes a kernel of this kind the harness
  /// can run (needs no GPU); null: nothing beyond the manifest's own checks.
  rt::Status (*validate)(const rt::Bundle &bundle) = nullptr;
  /// Compares the outputs of the launch Session::check just ran with a
  /// reference.
  rt::Expected<CheckReport> (Session::*check)() = nullptr;
  /// Fills the throughput (TFLOP/s or GB/s) and the kind's own metrics of a
  /// launch of `bundle` that took `seconds`.
  rt::Status (*countWork)(const rt::Bundle &bundle, double seconds,
                          BenchReport &report) = nullptr;
  /// The kernel's form beyond schedule and stages, as " key=value" words
  /// for preset tables; null: nothing to add.
  std::string (*describeForm)(const rt::Bundle &bundle) = nullptr;
  /// check/bench --bundle of a bundle compiled for run-time shapes: the
  /// bundle for the shape flags given (--m, --n); null: the kind has no
  /// run-time shapes, and those flags cannot go with --bundle.
  rt::Expected<rt::Bundle> (*reshape)(const rt::Bundle &bundle,
                                      const Options &options) = nullptr;
  /// bench --preset seed: the sliding windows of its table (0: causal);
  /// empty: the kind has no seed table.
  std::vector<int64_t> seedWindows;
  /// bench --preset seed: how the table counts TFLOP/s (its last line).
  const char *seedFormula = nullptr;

  /// Whether the kind takes kind-specific flag `flag` (without "--").
  bool takes(std::string_view flag) const;
};

/// Every kernel kind, each once.
const std::vector<KernelKind> &kernelKinds();

/// The kind named `name`; null when there is none.
const KernelKind *findKernelKind(std::string_view name);

/// The kind named `name`, or the error "unknown kernel 'NAME' (known: ...)".
rt::Expected<const KernelKind *> kernelKind(const std::string &name);

/// The names of the kinds for which `pred` holds, joined by `separator`.
template <typename Pred>
std::string kindNames(Pred pred, const char *separator = ", ") {
  std::string names;
  for (const KernelKind &kind : kernelKinds())
    if (pred(kind))
      names += (names.empty() ? "" : separator) + std::string(kind.name);
  return names;
}

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_KERNELKINDS_H
