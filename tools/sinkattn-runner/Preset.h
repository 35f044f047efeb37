//===- Preset.h - bench --preset: a table of configurations -----*- C++ -*-===//

#ifndef SINKATTN_TOOLS_RUNNER_PRESET_H
#define SINKATTN_TOOLS_RUNNER_PRESET_H

#include "Options.h"

#include "SinkAttn/Runtime/Bundle.h"

#include <functional>
#include <string>
#include <vector>

namespace sinkattn::runner {

/// One configuration of a preset: the flags that differ from the runner's
/// defaults, applied to a copy of the command line's options.
struct PresetCell {
  std::string kernel;
  int64_t batch, heads, kvHeads, seqQ, seqKv, headDim, window;
  std::string dtype;
  /// The row's label in the table's mask column.
  std::string mask() const;
  /// The `compile` flags that build this cell's bundle.
  std::string compileFlags() const;
};

/// The bundles in the subdirectories of `directory` (each with a
/// manifest.json), in name order, with their directory names.
rt::Expected<std::vector<std::pair<std::string, rt::Bundle>>>
readBundleDirectory(const std::string &directory);

/// The cells of preset `name` for `kernel` (or an error naming the presets
/// there are): the seed table's shapes,
/// causal and window 128 for sink-fwd, causal for sink-bwd.
rt::Expected<std::vector<PresetCell>> presetCells(const std::string &name,
                                                  const std::string &kernel);

/// How `bundle` was scheduled, for the table's schedule column: its
/// schedule and stages ("plain s2", "ws s3"), and a backward's dQ mode,
/// shared-tile warpgroups and how the split divides dQ ("plain s2
/// dq=separate", "plain s2 dq=atomic dkdv-wg=2 dq-split=deferred"); "-" for
/// what the manifest does not say.
std::string scheduleLabel(const rt::Bundle &bundle);

/// Runs `bench --preset`: each cell's bundle (compiled with `compile`, or
/// found by its configuration among the bundles under --bundles), timed as
/// `bench` times one kernel, printed as one table (and --json). Returns the
/// process exit code.
int runPreset(const Options &options,
              const std::function<rt::Expected<rt::Bundle>(const Options &)>
                  &compile);

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_PRESET_H
