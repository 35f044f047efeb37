//===- Tune.cpp - tune: pick and cache sink-fwd's schedule per shape ------===//
//
// The autotuning space is small on purpose: the schedule (warp-specialized
// with two consumer warpgroups, three at D 64; the same with each
// warpgroup's softmax overlapped with its GEMMs; or plain with one), the
// pipeline depth (1 to 3 stages) and, for the two warp-specialized
// schedules, one block per tile or a persistent kernel of one block per SM
// are what the measurements showed to matter per head dimension and length
// (docs/PERF.md). Each
// problem's winner is cached in a JSON file that `compile`/`check`/`bench
// --tune-cache FILE` consult when the schedule is `auto`.
//
//===----------------------------------------------------------------------===//

#include "Tune.h"

#include "SinkAttn/Runtime/AttentionReference.h"
#include "Harness.h"
#include "KernelKinds.h"
#include "Preset.h"

#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/CudaDriver.h"
#include "SinkAttn/Runtime/Json.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {
constexpr const char *kCacheFormat = "sinkattn-tune-cache-1";
/// The schedules tune times (and a cache entry may name).
constexpr const char *kTunedSchedules[] = {"ws", "overlap", "plain"};

bool isTunedSchedule(const std::string &schedule) {
  return std::find(std::begin(kTunedSchedules), std::end(kTunedSchedules),
                   schedule) != std::end(kTunedSchedules);
}

/// The problem's key; the layout (and varlen lengths) only when not the
/// default BHSD, so caches written before layouts existed stay valid.
std::string makeKey(const std::string &dtype, int64_t batch, int64_t heads,
                    int64_t kvHeads, int64_t seqQ, int64_t seqKv,
                    int64_t headDim, int64_t window,
                    const std::string &sinkDtype, const std::string &layout,
                    const std::string &seqlensQ, const std::string &seqlensKv,
                    bool causal) {
  std::string key =
      "sink-fwd dtype=" + dtype + " batch=" + std::to_string(batch) +
      " heads=" + std::to_string(heads) + " kv_heads=" +
      std::to_string(kvHeads) + " seq_q=" + std::to_string(seqQ) +
      " seq_kv=" + std::to_string(seqKv) + " head_dim=" +
      std::to_string(headDim) + " window=" + std::to_string(window) +
      " sink_dtype=" + sinkDtype;
  if (layout != "bhsd")
    key += " layout=" + layout;
  if (layout == "varlen")
    key += " seqlens_q=" + seqlensQ + " seqlens_kv=" + seqlensKv;
  if (!causal)
    key += " causal=0";
  return key;
}

int fail(const rt::Status &status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 2;
}

/// The cache file's entries (empty when it does not exist).
rt::Expected<rt::JsonValue> readCache(const std::string &file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return rt::JsonValue::object();
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in)
    return rt::Status::error("cannot read the tuning cache '" + file + "'");
  rt::Expected<rt::JsonValue> json = rt::parseJson(text.str());
  if (!json.ok())
    return rt::Status::error("the tuning cache '" + file +
                             "' is not JSON: " + json.status().message());
  const rt::JsonValue *format = json->find("format");
  const rt::JsonValue *entries = json->find("entries");
  if (!json->isObject() || !format || !format->isString() ||
      format->asString() != kCacheFormat || !entries || !entries->isObject())
    return rt::Status::error("'" + file + "' is not a tuning cache (format \"" +
                             std::string(kCacheFormat) + "\" with \"entries\")");
  return *entries;
}
} // namespace

std::string runner::tuneKey(const Options &options) {
  return makeKey(options.dtype == "f16" ? "f16" : "bf16", options.batch,
                 options.heads, options.kvHeads, options.seqQ, options.seqKV,
                 options.headDim, options.window, options.sinkDtype,
                 options.layout, rt::formatLengths(options.seqlensQ),
                 rt::formatLengths(options.seqlensKv), options.causal);
}

rt::Expected<std::string> runner::tuneKey(const rt::Bundle &bundle) {
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t batch, rt::configInteger(bundle, "batch"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t heads, rt::configInteger(bundle, "heads"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t kvHeads, rt::configInteger(bundle, "kv_heads"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t seqQ, rt::configInteger(bundle, "seq_q"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t seqKv, rt::configInteger(bundle, "seq_kv"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t headDim, rt::configInteger(bundle, "head_dim"));
  SINKATTN_RT_ASSIGN_OR_RETURN(int64_t window, rt::configInteger(bundle, "window"));
  // Bundles from before these keys existed: bf16, f32 sinks, BHSD.
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string dtype, rt::configTextOr(bundle, "dtype", "bf16"));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string sinkDtype,
                               rt::configTextOr(bundle, "sink_dtype", "f32"));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string layout, rt::configTextOr(bundle, "layout", "bhsd"));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string seqlensQ, rt::configTextOr(bundle, "seqlens_q", ""));
  SINKATTN_RT_ASSIGN_OR_RETURN(std::string seqlensKv, rt::configTextOr(bundle, "seqlens_kv", ""));
  // Bundles from before non-causal kernels: causal.
  auto causal = bundle.config.find("causal");
  bool isCausal = causal == bundle.config.end() ||
                  std::get_if<int64_t>(&causal->second) == nullptr ||
                  std::get<int64_t>(causal->second) != 0;
  return makeKey(dtype, batch, heads, kvHeads, seqQ, seqKv, headDim, window,
                 sinkDtype, layout, seqlensQ, seqlensKv, isCausal);
}

rt::Expected<std::optional<TunedChoice>>
runner::lookupTuned(const std::string &file, const std::string &key) {
  SINKATTN_RT_ASSIGN_OR_RETURN(rt::JsonValue entries, readCache(file));
  const rt::JsonValue *entry = entries.find(key);
  if (!entry)
    return std::optional<TunedChoice>();
  const rt::JsonValue *schedule = entry->find("schedule");
  const rt::JsonValue *stages = entry->find("stages");
  const rt::JsonValue *ms = entry->find("median_ms");
  const rt::JsonValue *persistent = entry->find("persistent_blocks");
  if (!schedule || !schedule->isString() ||
      !isTunedSchedule(schedule->asString()) || !stages || !stages->isInt() ||
      stages->asInt() < 1 || stages->asInt() > 3)
    return rt::Status::error("the tuning cache '" + file + "' entry '" + key +
                             "' needs schedule ws|overlap|plain and stages "
                             "1..3");
  // Optional (caches written before it existed have none): 0 or 1..65535
  // blocks, and only for the warp-specialized schedules.
  int64_t persistentBlocks = 0;
  if (persistent) {
    if (!persistent->isInt() || persistent->asInt() < 0 ||
        persistent->asInt() > 65535 ||
        (persistent->asInt() > 0 && schedule->asString() == "plain"))
      return rt::Status::error(
          "the tuning cache '" + file + "' entry '" + key +
          "' has persistent_blocks that is not an integer 0..65535 for a "
          "ws or overlap schedule (0 for plain)");
    persistentBlocks = persistent->asInt();
  }
  return std::optional<TunedChoice>(TunedChoice{
      schedule->asString(), stages->asInt(),
      ms && ms->isNumber() ? ms->asDouble() : 0.0, persistentBlocks});
}

int runner::runTune(
    const Options &options,
    const std::function<rt::Expected<rt::Bundle>(const Options &)> &compile) {
  // Candidates per problem key, in the order they are timed.
  std::map<std::string, std::vector<std::pair<std::string, rt::Bundle>>> problems;
  if (!options.bundlesDir.empty()) {
    auto bundles = readBundleDirectory(options.bundlesDir);
    if (!bundles.ok())
      return fail(bundles.status());
    for (auto &[name, bundle] : *bundles) {
      const KernelKind *kind = findKernelKind(bundle.kernel);
      if (!kind || !kind->takes("tune-cache"))
        continue;
      rt::Expected<std::string> key = tuneKey(bundle);
      if (!key.ok())
        return fail(rt::Status::error("bundle '" + name + "': " +
                                      key.status().message()));
      problems[*key].emplace_back(name, std::move(bundle));
    }
    if (problems.empty())
      return fail(rt::Status::error("no sink-fwd bundle under '" +
                                    options.bundlesDir + "'"));
  } else {
    if (!compile)
      return fail(rt::Status::error(
          "this runtime-only build cannot compile the variants; pass "
          "--bundles DIR"));
    std::string key = tuneKey(options);
    // The persistent form exists for the warp-specialized schedules over
    // the BHSD and BSHD layouts, one query head per tile; it gets one block
    // per SM of the GPU being tuned (which tune needs anyway).
    bool persistentForm = options.layout != "varlen" && !options.packGqa;
    int64_t smCount = 0;
    if (persistentForm) {
      auto driver = rt::CudaDriver::load();
      if (!driver.ok())
        return fail(driver.status());
      auto info = rt::queryDevice(**driver, int(options.device));
      if (!info.ok())
        return fail(info.status());
      smCount = info->smCount;
    }
    for (const char *schedule : kTunedSchedules) {
      std::vector<int64_t> forms = {0};
      if (smCount > 0 && std::string(schedule) != "plain")
        forms.push_back(smCount);
      for (int64_t stages = 1; stages <= 3; ++stages)
        for (int64_t blocks : forms) {
          Options variant = options;
          variant.schedule = schedule;
          variant.stages = stages;
          variant.persistent = blocks;
          variant.given.push_back("persistent");
          rt::Expected<rt::Bundle> bundle = compile(variant);
          if (!bundle.ok())
            return fail(bundle.status());
          problems[key].emplace_back(
              std::string(schedule) + " stages=" + std::to_string(stages) +
                  (blocks ? " persistent=" + std::to_string(blocks) : ""),
              std::move(*bundle));
        }
    }
  }

  rt::Expected<rt::JsonValue> cache = readCache(options.tuneCache);
  if (!cache.ok())
    return fail(cache.status());
  rt::JsonValue entries = std::move(*cache);
  std::string gpu;
  for (auto &[key, candidates] : problems) {
    std::printf("tune %s\n", key.c_str());
    std::printf("  %-8s %6s %10s %10s\n", "schedule", "stages", "persistent",
                "median ms");
    std::optional<TunedChoice> best;
    rt::JsonValue timed = rt::JsonValue::array({});
    for (auto &[name, bundle] : candidates) {
      auto text = [&](const char *k) {
        auto it = bundle.config.find(k);
        return it != bundle.config.end() &&
                       std::holds_alternative<std::string>(it->second)
                   ? std::get<std::string>(it->second)
                   : std::string();
      };
      auto integer = [&](const char *k) -> int64_t {
        auto it = bundle.config.find(k);
        return it != bundle.config.end() &&
                       std::holds_alternative<int64_t>(it->second)
                   ? std::get<int64_t>(it->second)
                   : 0;
      };
      // A packed bundle is another problem's launch form (its tiles span
      // the query heads of a group), which a cache entry cannot say.
      if (integer("pack_gqa") != 0)
        return fail(rt::Status::error(
            "bundle '" + name + "' is not in the tuning space: its config "
            "has pack_gqa (the tuning space is tiles of one query head)"));
      TunedChoice choice{text("schedule"), integer("stages"), 0,
                         integer("persistent_blocks")};
      if (!isTunedSchedule(choice.schedule) || choice.stages < 1 ||
          choice.stages > 3)
        return fail(rt::Status::error(
            "bundle '" + name + "' is not in the tuning space (schedule ws, "
            "overlap or plain, stages 1 to 3; its config says schedule '" +
            choice.schedule + "', stages " + std::to_string(choice.stages) +
            ")"));
      auto session = Session::open(std::move(bundle), int(options.device),
                                   options.verbose);
      if (!session.ok())
        return fail(session.status());
      if (rt::Status prepared = (*session)->prepare(options.seed); !prepared.ok())
        return fail(prepared);
      rt::Expected<BenchReport> report = (*session)->bench(
          int(options.warmup), int(options.iters), options.flushL2);
      if (!report.ok())
        return fail(report.status());
      gpu = (*session)->device().name;
      choice.medianMs = report->medianMs;
      std::printf("  %-8s %6lld %10lld %10.4f\n", choice.schedule.c_str(),
                  (long long)choice.stages, (long long)choice.persistentBlocks,
                  choice.medianMs);
      rt::JsonValue row = rt::JsonValue::object();
      row.set("schedule", choice.schedule);
      row.set("stages", choice.stages);
      row.set("persistent_blocks", choice.persistentBlocks);
      row.set("median_ms", choice.medianMs);
      timed.push(std::move(row));
      if (!best || choice.medianMs < best->medianMs)
        best = choice;
    }
    std::printf("  fastest: schedule=%s stages=%lld persistent=%lld (%.4f ms)\n",
                best->schedule.c_str(), (long long)best->stages,
                (long long)best->persistentBlocks, best->medianMs);
    rt::JsonValue entry = rt::JsonValue::object();
    entry.set("schedule", best->schedule);
    entry.set("stages", best->stages);
    entry.set("persistent_blocks", best->persistentBlocks);
    entry.set("median_ms", best->medianMs);
    entry.set("gpu", gpu);
    entry.set("timed", std::move(timed));
    entries.set(key, std::move(entry));
  }
  rt::JsonValue file = rt::JsonValue::object();
  file.set("format", kCacheFormat);
  file.set("entries", std::move(entries));
  std::ofstream out(options.tuneCache);
  out << rt::writeJson(file) << "\n";
  if (!out)
    return fail(rt::Status::error("cannot write the tuning cache '" +
                                  options.tuneCache + "'"));
  std::printf("wrote %s\n", options.tuneCache.c_str());
  return 0;
}
