//===- LoadedBundle.h - A bundle's kernels, loaded and launched -*- C++ -*-===//
//
// A bundle on one GPU: its PTX JIT-compiled, each launch's function looked
// up and its shared memory checked against the GPU, and the launch sequence
// the manifest describes (setup launches apart from the others; a launch
// with `overlaps_next` on a second stream beside the next one, joined before
// anything after the pair). sinkattn-runner launches bundles through this;
// so can any program that links SinkAttnRuntime, without repeating the
// sequencing rules of docs/bundle.md.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_LOADEDBUNDLE_H
#define SINKATTN_RUNTIME_LOADEDBUNDLE_H

#include "SinkAttn/Runtime/Bundle.h"
#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/Module.h"
#include "SinkAttn/Runtime/Status.h"

#include <cuda.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sinkattn::rt {

/// Which of a bundle's launches LoadedBundle::run launches: the setup
/// launches (they compute inputs of the others, such as the forward's O and
/// LSE a backward reads) or the rest (what a benchmark times).
enum class LaunchPhase { Setup, Main };

class LoadedBundle {
public:
  /// Validates `bundle` (validateBundle), loads its kernels on `ctx`
  /// (current on the calling thread; it must outlive the result): its SASS
  /// when the bundle has some for this GPU, the driver takes it and
  /// `options` asks for no line info, else its PTX, JIT-compiled with
  /// `options`; then looks up every launch's entry. Errors: the
  /// validation's, the JIT's (with ptxas's log, naming the bundle's kernel), a
  /// missing entry, or a launch that needs more shared memory per block (static
  /// + dynamic) than the GPU allows, naming the kernel and both sizes.
  static Expected<LoadedBundle> load(const Context &ctx, Bundle bundle,
                                     const JitOptions &options = {});

  LoadedBundle(LoadedBundle &&) = default;
  LoadedBundle &operator=(LoadedBundle &&) = default;
  LoadedBundle(const LoadedBundle &) = delete;
  LoadedBundle &operator=(const LoadedBundle &) = delete;

  const Bundle &bundle() const { return bundle_; }
  /// What the JIT's messages call the bundle: its kernel kind for a
  /// multi-kernel bundle, its entry for a single one.
  const std::string &name() const { return name_; }
  /// launchesOf(bundle()): the launches in manifest order.
  const std::vector<BundleLaunch> &launches() const { return launches_; }
  /// ptxas's informational log of the JIT (registers, spills per kernel);
  /// empty when the bundle's SASS was loaded.
  const std::string &infoLog() const { return module_.infoLog(); }
  /// Where the kernels' code came from, on one line: "SASS for sm_90a
  /// (kernel.cubin)", or "PTX, JIT-compiled" with why the bundle's SASS
  /// was not taken.
  const std::string &codeSource() const { return codeSource_; }
  /// rt::launchedBlocks on this GPU: the grid x a single-kernel bundle is
  /// launched with (at most one block per SM for a persistent kernel that
  /// strides by its grid; all of them for one with tile lists).
  uint32_t launchedBlocks() const { return launchedBlocks_; }

  /// Launches the `phase`'s kernels in manifest order on `stream`
  /// (asynchronously), with the buffers' device addresses by param name.
  /// A launch with overlapsNext starts on a second, non-blocking stream
  /// once the work queued on `stream` before it is done, and runs beside
  /// the next launch, which goes to `stream`; the launch after the pair
  /// waits for both. When run returns, successful or not, the second
  /// stream's work is joined into `stream`: whatever the caller queues or
  /// records on `stream` next follows every launch of this call (after an
  /// error that even the join could not order, run waits for the second
  /// stream on the host). One call at a time: the fork and join events are
  /// the object's own, so concurrent calls from several host threads must
  /// be serialized by the caller.
  Status run(const std::map<std::string, CUdeviceptr> &bufferAddresses,
             CUstream stream, LaunchPhase phase = LaunchPhase::Main) const;
  /// run() for `shaped`: this bundle for tensors of other shapes
  /// (withTensorShapes, with the grids the caller computed for them), on
  /// the kernels loaded already, so nothing is compiled again. Its launches
  /// must be this bundle's but for their grids and the values of its
  /// params, which is checked (an error names what differs).
  Status run(const Bundle &shaped,
             const std::map<std::string, CUdeviceptr> &bufferAddresses,
             CUstream stream, LaunchPhase phase = LaunchPhase::Main) const;

  /// run(shaped, ...) for a `shaped` made from bundle() by withTensorShapes
  /// (which validated it) with grids and scalar values set, as the
  /// attention library's calls are: its launches are compared with the
  /// loaded ones but for their grids, its params by name and kind, so a call
  /// spends no host time validating the bundle twice.
  Status runReshaped(const Bundle &shaped,
                     const std::map<std::string, CUdeviceptr> &bufferAddresses,
                     CUstream stream) const;

private:
  /// Both run()s: `launches` (launchesOf(bundle)) with `bundle`'s params, a
  /// single persistent kernel with `launchedBlocks` blocks.
  Status runLaunches(const Bundle &bundle,
                     const std::vector<BundleLaunch> &launches,
                     uint32_t launchedBlocks,
                     const std::map<std::string, CUdeviceptr> &bufferAddresses,
                     CUstream stream, LaunchPhase phase) const;

  LoadedBundle(Bundle bundle, Module module)
      : bundle_(std::move(bundle)), module_(std::move(module)) {}

  Bundle bundle_;
  std::string name_;
  std::string codeSource_;
  Module module_;
  std::shared_ptr<const CudaDriver> driver_;
  std::vector<BundleLaunch> launches_;
  /// functions_[i] is launches_[i]'s entry in module_.
  std::vector<Function> functions_;
  uint32_t launchedBlocks_ = 0;
  int smCount_ = 0;
  /// The second stream of overlapping launches, the event it waits for
  /// there (the work before the launch) and the event the launch after the
  /// pair waits for (its end). Created by load() when a launch overlaps.
  struct SideStream {
    Stream stream;
    Event fork, join;
  };
  std::optional<SideStream> side_;
};

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_LOADEDBUNDLE_H
