//===- Harness.h - Run, check and time a kernel bundle ----------*- C++ -*-===//
//
// The part of sinkattn-runner that needs no compiler: given a bundle, it
// allocates the buffers the manifest describes, fills inputs with seeded
// random data, poisons outputs (NaN), launches, compares against an
// independent reference for the bundle's kernel kind, and times launches.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_TOOLS_RUNNER_HARNESS_H
#define SINKATTN_TOOLS_RUNNER_HARNESS_H

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/DeviceBuffer.h"
#include "SinkAttn/Runtime/Module.h"
#include "SinkAttn/Runtime/Status.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sinkattn::runner {

struct CheckReport {
  bool passed = false;
  double relL2 = 0;    ///< ||out - ref|| / ||ref|| over the checked elements
  double maxAbs = 0;   ///< max |out - ref|
  uint64_t checked = 0;    ///< elements compared
  uint64_t mismatches = 0; ///< elements outside tolerance (or not bit-equal)
  uint64_t nonFinite = 0;  ///< NaN/inf outputs (unwritten outputs are NaN)
  std::string criterion;   ///< what "pass" meant
};

struct BenchReport {
  double medianMs = 0, minMs = 0;
  double tflops = 0; ///< 0 when the kernel is not arithmetic-bound
  double gbps = 0;   ///< bytes moved / time, for copies
  int iterations = 0;
};

/// One bundle loaded on one GPU, with its buffers.
class Session {
public:
  /// Loads the driver, checks the GPU is Hopper, JIT-links the PTX (the
  /// ptxas log is in the error on failure; with `verbose` the info log is
  /// printed).
  static rt::Expected<std::unique_ptr<Session>>
  open(rt::Bundle bundle, int device, bool verbose);

  /// Allocates every buffer, fills inputs from `seed`, poisons outputs.
  rt::Status prepare(uint64_t seed);
  /// One launch on `stream` (asynchronous).
  rt::Status launch(CUstream stream);
  /// Poisons outputs, launches once, synchronizes and compares.
  rt::Expected<CheckReport> check();
  rt::Expected<BenchReport> bench(int warmup, int iterations, bool flushL2);
  /// Writes each buffer as <dir>/<name>.npy (outputs as last computed).
  rt::Status saveIo(const std::string &directory) const;

  const rt::Bundle &bundle() const { return bundle_; }
  const rt::DeviceInfo &device() const { return context_->info(); }
  /// "m=4096 n=4096 k=4096 dtype=bf16" from the bundle's config.
  std::string describeConfig() const;

private:
  Session() = default;
  int64_t configInt(const std::string &key) const;
  rt::Expected<std::vector<float>> downloadAsFloat(const std::string &name) const;

  rt::Bundle bundle_;
  std::unique_ptr<rt::Context> context_;
  std::unique_ptr<rt::Module> module_;
  std::unique_ptr<rt::Function> function_;
  std::map<std::string, rt::DeviceBuffer> buffers_;
  /// Input values as float (after rounding to the buffer's dtype).
  std::map<std::string, std::vector<float>> inputs_;
  /// Input bytes exactly as uploaded.
  std::map<std::string, std::vector<uint8_t>> inputBytes_;
};

/// The kernel kinds this harness can check and time.
bool harnessSupports(const std::string &kernel);

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_HARNESS_H
