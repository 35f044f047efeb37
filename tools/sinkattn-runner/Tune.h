//===- Tune.h - tune: pick and cache sink-fwd's schedule per shape -*- C++ -*-===//

#ifndef SINKATTN_TOOLS_RUNNER_TUNE_H
#define SINKATTN_TOOLS_RUNNER_TUNE_H

#include "Options.h"

#include "SinkAttn/Runtime/Bundle.h"

#include <functional>
#include <optional>
#include <string>

namespace sinkattn::runner {

/// A tuned sink-fwd variant: what `--schedule auto` uses for its shape.
struct TunedChoice {
  std::string schedule; ///< ws | overlap | plain
  int64_t stages = 0;
  double medianMs = 0;
  /// Blocks of the persistent form (ws and overlap; 0: one block per tile).
  int64_t persistentBlocks = 0;
};

/// The tuning-cache key of the sink-fwd problem the flags describe: every
/// value that changes the problem (not the schedule or the stages).
std::string tuneKey(const Options &options);
/// The same key from a compiled bundle's config; an error when the config
/// lacks a value.
rt::Expected<std::string> tuneKey(const rt::Bundle &bundle);

/// The choice cached for `key` in `file`: nullopt when the file does not
/// exist or has no entry; an error when it is not a tuning cache.
rt::Expected<std::optional<TunedChoice>> lookupTuned(const std::string &file,
                                                     const std::string &key);

/// `tune`: times every variant (schedule ws/overlap/plain x stages 1..3,
/// and ws/overlap also persistent with one block per SM where the layout
/// allows it) of each sink-fwd problem (the one the flags describe,
/// compiled with `compile`; or each problem among the bundles under
/// --bundles), prints them, and records the fastest per problem in
/// --tune-cache. Returns the exit code.
int runTune(const Options &options,
            const std::function<rt::Expected<rt::Bundle>(const Options &)>
                &compile);

} // namespace sinkattn::runner

#endif // SINKATTN_TOOLS_RUNNER_TUNE_H
