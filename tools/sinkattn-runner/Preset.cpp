//===- Preset.cpp - bench --preset: a table of configurations -------------===//
//
// `bench --preset seed` reproduces the seed's benchmark table: the
// attention-sink forward in bf16 at B = 1, H = 64, HK = 8, causal, for
// S in {2k, 4k, 8k, 16k} and D in {64, 128}, with TFLOP/s by the seed's
// formula (4·B·H·S·S·D/2 over the time), plus the same shapes with a
// 128-token sliding window (TFLOP/s from the exact attended-pair count;
// the seed's formula does not apply).
//
//===----------------------------------------------------------------------===//

#include "Preset.h"
#include "Harness.h"
#include "KernelKinds.h"

#include "SinkAttn/Runtime/Json.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace sinkattn;
using namespace sinkattn::runner;

std::string PresetCell::mask() const {
  return window == 0 ? "causal" : "window " + std::to_string(window);
}

std::string PresetCell::compileFlags() const {
  std::string flags = "--kernel " + kernel + " --batch " +
                      std::to_string(batch) + " --heads " +
                      std::to_string(heads) + " --kv-heads " +
                      std::to_string(kvHeads) + " --seq-q " +
                      std::to_string(seqQ) + " --seq-kv " +
                      std::to_string(seqKv) + " --head-dim " +
                      std::to_string(headDim) + " --dtype " + dtype;
  if (window != 0)
    flags += " --window " + std::to_string(window);
  return flags;
}

std::string runner::scheduleLabel(const rt::Bundle &bundle) {
  rt::Expected<std::string> schedule = rt::configTextOr(bundle, "schedule", "-");
  rt::Expected<int64_t> stages = rt::configInteger(bundle, "stages");
  std::string label = (schedule.ok() ? *schedule : "-") + " s" +
                      (stages.ok() ? std::to_string(*stages) : "-");
  rt::Expected<int64_t> persistent =
      rt::configInteger(bundle, "persistent_blocks");
  if (persistent.ok() && *persistent > 0)
    label += " persistent=" + std::to_string(*persistent);
  const KernelKind *kind = findKernelKind(bundle.kernel);
  if (kind && kind->describeForm)
    label += kind->describeForm(bundle);
  return label;
}

rt::Expected<std::vector<PresetCell>>
runner::presetCells(const std::string &name, const std::string &kernel) {
  if (name != "seed")
    return rt::Status::error("unknown preset '" + name +
                             "'; the presets are: seed");
  const KernelKind *kind = findKernelKind(kernel);
  if (!kind || kind->seedWindows.empty())
    return rt::Status::error(
        "--preset " + name + " times " +
        kindNames([](const KernelKind &k) { return !k.seedWindows.empty(); },
                  " or ") +
        ", not '" + kernel + "'");
  std::vector<PresetCell> cells;
  for (int64_t window : kind->seedWindows)
    for (int64_t headDim : {64, 128})
      for (int64_t seq : {2048, 4096, 8192, 16384})
        cells.push_back({kernel, 1, 64, 8, seq, seq, headDim, window, "bf16"});
  return cells;
}

namespace {
/// Whether `bundle` was compiled for `cell` (its manifest's config).
bool matches(const rt::Bundle &bundle, const PresetCell &cell) {
  if (bundle.kernel != cell.kernel)
    return false;
  auto integer = [&](const char *key, int64_t value) {
    rt::Expected<int64_t> got = rt::configInteger(bundle, key);
    return got.ok() && *got == value;
  };
  auto text = [&](const char *key, const char *fallback, const std::string &value) {
    rt::Expected<std::string> got = rt::configTextOr(bundle, key, fallback);
    return got.ok() && *got == value;
  };
  // Bundles from before sinks could be bf16 have f32 sinks; from before
  // layouts, BHSD (the seed table's layout). dtype has always been there.
  return text("sink_dtype", "f32", "f32") && text("layout", "bhsd", "bhsd") &&
         text("dtype", "", cell.dtype) && integer("batch", cell.batch) &&
         integer("heads", cell.heads) && integer("kv_heads", cell.kvHeads) &&
         integer("seq_q", cell.seqQ) && integer("seq_kv", cell.seqKv) &&
         integer("head_dim", cell.headDim) && integer("window", cell.window);
}

int fail(const rt::Status &status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 2;
}
} // namespace

rt::Expected<std::vector<std::pair<std::string, rt::Bundle>>>
runner::readBundleDirectory(const std::string &directory) {
  std::error_code ec;
  if (!std::filesystem::is_directory(directory, ec))
    return rt::Status::error("--bundles '" + directory +
                             "' is not a directory");
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(directory, ec))
    if (entry.is_directory() &&
        std::filesystem::exists(entry.path() / "manifest.json"))
      names.push_back(entry.path().string());
  if (ec)
    return rt::Status::error("cannot list '" + directory + "': " + ec.message());
  std::sort(names.begin(), names.end());
  std::vector<std::pair<std::string, rt::Bundle>> bundles;
  for (const std::string &name : names) {
    rt::Expected<rt::Bundle> bundle = rt::readBundle(name);
    if (!bundle.ok())
      return rt::Status::error("bundle '" + name +
                               "': " + bundle.status().message());
    bundles.emplace_back(name, std::move(*bundle));
  }
  return bundles;
}

int runner::runPreset(
    const Options &options,
    const std::function<rt::Expected<rt::Bundle>(const Options &)> &compile) {
  rt::Expected<std::vector<PresetCell>> cells = presetCells(
      options.preset, options.wasGiven("kernel") ? options.kernel : "sink-fwd");
  if (!cells.ok())
    return fail(cells.status());
  std::vector<std::pair<std::string, rt::Bundle>> available;
  if (!options.bundlesDir.empty()) {
    auto bundles = readBundleDirectory(options.bundlesDir);
    if (!bundles.ok())
      return fail(bundles.status());
    available = std::move(*bundles);
  } else if (!compile) {
    return fail(rt::Status::error(
        "this runtime-only build cannot compile the preset's kernels; pass "
        "--bundles DIR (a directory of bundles from `compile --emit bundle`)"));
  }

  // Every cell's bundle first (found or compiled), so that a missing bundle
  // or a form a cell does not support (--dq-split deferred at D 128) stops
  // the table before anything is timed.
  std::vector<rt::Bundle> cellBundles;
  for (const PresetCell &cell : *cells) {
    rt::Bundle bundle;
    if (!options.bundlesDir.empty()) {
      auto found = std::find_if(available.begin(), available.end(),
                                [&](const auto &b) { return matches(b.second, cell); });
      // Two bundles of one shape (other schedules or stages): which one
      // the table shows must not depend on directory order.
      if (found != available.end()) {
        auto other = std::find_if(std::next(found), available.end(),
                                  [&](const auto &b) { return matches(b.second, cell); });
        if (other != available.end())
          return fail(rt::Status::error(
              "two bundles under '" + options.bundlesDir + "' match " +
              cell.kernel + " S=" + std::to_string(cell.seqQ) +
              " D=" + std::to_string(cell.headDim) + " " + cell.mask() +
              ": '" + found->first + "' and '" + other->first +
              "'; give --bundles a directory with one per configuration"));
      }
      if (found == available.end())
        return fail(rt::Status::error(
            "no bundle under '" + options.bundlesDir + "' was compiled for " +
            cell.kernel + " S=" + std::to_string(cell.seqQ) +
            " D=" + std::to_string(cell.headDim) + " " + cell.mask() +
            "; build it with: sinkattn-runner compile " + cell.compileFlags() +
            " --emit bundle -o DIR"));
      bundle = found->second;
    } else {
      Options cellOptions = options;
      cellOptions.kernel = cell.kernel;
      cellOptions.batch = cell.batch;
      cellOptions.heads = cell.heads;
      cellOptions.kvHeads = cell.kvHeads;
      cellOptions.seqQ = cell.seqQ;
      cellOptions.seqKV = cell.seqKv;
      cellOptions.headDim = cell.headDim;
      cellOptions.window = cell.window;
      cellOptions.dtype = cell.dtype;
      rt::Expected<rt::Bundle> compiled = compile(cellOptions);
      if (!compiled.ok())
        return fail(compiled.status());
      bundle = std::move(*compiled);
    }
    cellBundles.push_back(std::move(bundle));
  }

  rt::JsonValue rows = rt::JsonValue::array({});
  std::string gpu;
  bool header = false;
  for (size_t i = 0; i < cells->size(); ++i) {
    const PresetCell &cell = (*cells)[i];
    auto session = Session::open(std::move(cellBundles[i]), int(options.device),
                                 options.verbose);
    if (!session.ok())
      return fail(session.status());
    Session &s = **session;
    if (rt::Status prepared = s.prepare(options.seed); !prepared.ok())
      return fail(prepared);
    // No table times a kernel that computes the wrong answer.
    if (!options.checked) {
      rt::Expected<CheckReport> checked = s.check();
      if (!checked.ok())
        return fail(checked.status());
      if (!checked->passed) {
        std::fprintf(stderr,
                     "error: %s S=%lld D=%lld %s fails its check, so the "
                     "table stops before timing it:\n",
                     cell.kernel.c_str(), (long long)cell.seqQ,
                     (long long)cell.headDim, cell.mask().c_str());
        for (const std::string &note : checked->notes)
          std::fprintf(stderr, "  %s\n", note.c_str());
        std::fprintf(stderr, "  FAIL (%s)\n", checked->criterion.c_str());
        return 1;
      }
    }
    rt::Expected<BenchReport> report =
        s.bench(int(options.warmup), int(options.iters), options.flushL2);
    if (!report.ok())
      return fail(report.status());
    double seedFormula = 0;
    for (const auto &[name, value] : report->metrics)
      if (name == "tflops_seed_formula")
        seedFormula = value;
    if (!header) {
      gpu = s.device().name;
      std::printf("bench --preset %s: %s %s, B=%lld H=%lld HK=%lld, on %s (%s)\n",
                  options.preset.c_str(), cell.kernel.c_str(),
                  cell.dtype.c_str(), (long long)cell.batch,
                  (long long)cell.heads, (long long)cell.kvHeads, gpu.c_str(),
                  s.device().smName().c_str());
      std::printf("%s\n", options.checked
                               ? "cells checked by the caller in this run"
                               : "each cell passed its check before it was "
                                 "timed");
      std::printf("%6s %4s  %-11s %-20s %10s %10s %16s %17s\n", "S", "D",
                  "mask", "schedule", "median ms", "min ms", "TFLOP/s (seed)",
                  "TFLOP/s (exact)");
      header = true;
    }
    // The seed's formula assumes S·S/2 pairs: only the causal rows have it.
    char seedText[32] = "-";
    if (cell.window == 0)
      std::snprintf(seedText, sizeof(seedText), "%.1f", seedFormula);
    const std::string schedule = scheduleLabel(s.bundle());
    std::printf("%6lld %4lld  %-11s %-20s %10.4f %10.4f %16s %17.1f\n",
                (long long)cell.seqQ, (long long)cell.headDim,
                cell.mask().c_str(), schedule.c_str(), report->medianMs,
                report->minMs, seedText, report->tflops);
    std::fflush(stdout);
    rt::JsonValue row = benchJsonRow(s, *report, options.flushL2);
    row.set("seq", cell.seqQ);
    row.set("head_dim", cell.headDim);
    row.set("window", cell.window);
    row.set("schedule", schedule);
    rows.push(std::move(row));
  }
  if (!cells->empty())
    std::printf("%s\n", findKernelKind(cells->front().kernel)->seedFormula);
  if (!options.jsonFile.empty()) {
    rt::JsonValue json = rt::JsonValue::object();
    json.set("gpu", gpu);
    json.set("preset", options.preset);
    json.set("results", std::move(rows));
    std::ofstream file(options.jsonFile);
    file << rt::writeJson(json) << "\n";
    if (!file)
      return fail(rt::Status::error("cannot write '" + options.jsonFile + "'"));
  }
  return 0;
}
