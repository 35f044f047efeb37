//===- Options.cpp - sinkattn-runner command line -------------------------===//

#include "Options.h"

#include "KernelKinds.h"

#include "SinkAttn/Runtime/AttentionReference.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {
/// One flag: its name (without --), whether it takes a value, which
/// commands accept it, its help line and, for a flag only some kernel kinds
/// take (KernelKind::flags), why the others do not.
struct FlagSpec {
  const char *name;
  const char *valueName; ///< nullptr: a switch
  const char *commands;  ///< space-separated list
  const char *help;
  const char *onlyFor = nullptr; ///< nullptr: every kind takes it
};

/// Why a kind without an attention shape refuses the shape's flags.
constexpr const char *kAttentionParameter =
    "it is a parameter of the attention kernels";

const FlagSpec kFlags[] = {
    {"kernel", "NAME", "compile check bench tune", "kernel kind"},
    {"m", "N", "compile check bench", "rows (gemm: of A and D; tma-copy: of the matrix, also with --bundle of a --run-time-shapes bundle)"},
    {"n", "N", "compile check bench", "columns (gemm: of B and D; tma-copy: of the matrix, also with --bundle of a --run-time-shapes bundle)"},
    {"k", "N", "compile check bench", "reduction size (gemm; tma-stream: columns streamed)"},
    {"stages", "S", "compile check bench", "pipeline stages of the main loop (gemm, sink-fwd, sink-bwd, tma-copy, tma-stream; default 2)"},
    {"schedule", "NAME", "compile check bench", "gemm, sink-fwd, sink-bwd: auto (default), ws (gemm, sink-fwd: warp-specialized: TMA producer warpgroup + consumers), overlap (sink-fwd: ws whose consumers also overlap each block's softmax with their GEMMs; auto's choice for D 128 when the longest row sees at least 17 key blocks of 128) or plain",
     "only gemm and the attention kernels have schedules"},
    {"persistent", "N", "compile check bench", "a persistent kernel of min(N, tiles) blocks looping over the tiles (0: one block per tile, gemm's default): gemm's 128x256 tiles; sink-fwd's blocks of 128 query rows (192 at D 64), each block with its own list of tiles fixed at build time (ws and overlap schedules, bhsd and bshd; varlen with --run-time-shapes, whose launcher builds the lists for each call; without it, auto: 132 blocks where ws or overlap runs causal rows of at most 32 key blocks without a window and there are more tiles, else one block per tile); a gemm launch takes at most the GPU's SM count of blocks, a sink-fwd launch all N",
     "only gemm and sink-fwd have a persistent form"},
    {"copy-engine", "E", "compile check bench", "gemm: how the main loop loads A and B: tma (default), cp-async (both), or mixed (A by cp.async, B by TMA)",
     "only gemm chooses its copy engine"},
    {"dq", "MODE", "compile check bench", "sink-bwd: how dQ is summed over the key blocks: auto (default: the fastest measured form for the problem, docs/runner.md), separate (deterministic: a dQ kernel of its own, bit-identical runs) or atomic (the dK/dV kernel adds it by fp32 TMA reduce-add: fewer GEMMs, rounding varies run to run; needs --dkdv-warpgroups 2: each warpgroup computes one panel of D / 2 columns of it over the block's 128 keys)",
     "only sink-bwd computes dQ"},
    {"dq-split", "HOW", "compile check bench", "sink-bwd, --dq atomic --dkdv-warpgroups 2: how the two warpgroups divide dQ's share of the block's 128 keys: columns (FlashAttention 3's: each D / 2 columns over all 128 keys, one reduce-add per block, the warpgroups meeting at a barrier every iteration) or deferred (D 64: columns, each warpgroup computing and adding its panel of the previous query block's share from a double-buffered dS tile handed over through mbarriers: the warpgroups never meet in the loop, one reduce-add's traffic per block; naming it with --dq auto asks for the split); without it, auto's choice, else columns",
     "only sink-bwd computes dQ"},
    {"deterministic", nullptr, "compile check bench", "sink-bwd: bit-reproducible gradients: --dq auto picks only deterministic forms (--dq separate), and --dq atomic is refused",
     "only sink-bwd has non-deterministic forms"},
    {"dq-warpgroups", "N", "compile check bench", "sink-bwd, --dq separate: the consumer warpgroups of the dQ and dK/dV kernels, one count for both (give this flag, --dkdv-warpgroups or both, equal): 1 (blocks of 64 query rows and 64 keys, the schedule's) or 2 (D 128: warp-specialized blocks of 64 rows or keys per warpgroup sharing each K/V or Q/dO tile: they cross L2 once per 128); without either, auto: 2 at D 128 when query rows and keys are both at least 12288 (auto schedule, no window, bhsd or bshd), else 1",
     "only sink-bwd has a dQ kernel"},
    {"dkdv-warpgroups", "N", "compile check bench", "sink-bwd: the dK/dV kernel's consumer warpgroups: 1 (a block of 64 keys, the schedule's) or 2 (a warp-specialized block of 64 keys per warpgroup sharing each Q/dO tile: Q/dO cross L2 once per 128 keys; GQA shares summed by a kernel of their own); with --dq separate one count with --dq-warpgroups's (2 at D 128 only; one flag sets both); --dq atomic needs 2 (its 128-key blocks, at D 64 too); without it, auto, as for --dq-warpgroups",
     "only sink-bwd has a dK/dV kernel"},
    {"run-time-shapes", nullptr, "compile", "tma-copy, sink-fwd and sink-bwd --layout varlen: the kernel reads its tensors' sizes at launch (memref descriptors), so one bundle serves every shape: tma-copy any M x N whose rows are a multiple of 16 bytes, sink-fwd and sink-bwd any batch of sequence lengths, heads, window size (compiled with --window: any >= 1; without: none) and softmax scale (sink-bwd: causal, its deterministic one-warpgroup form or --dq atomic; compiled with --kv-heads below --heads for any group, else for one query head per kv head); check and bench take the shape flags (--m and --n; --seqlens-q, --seqlens-kv, --heads, --kv-heads, --window, --softmax-scale) with --bundle (the compile's are its default shape)",
     "only tma-copy, sink-fwd and sink-bwd take run-time shapes"},
    {"non-causal", nullptr, "compile", "sink-fwd --run-time-shapes: no causal mask, every query attends every key of its sequence (no window)",
     "only sink-fwd compiles attention without the causal mask"},
    {"softmax-scale", "X", "check bench", "sink-fwd and sink-bwd, with --bundle of a --run-time-shapes bundle: the softmax scale (default 1/sqrt(head dim))",
     "only sink-fwd and sink-bwd take a softmax scale"},
    {"pack-gqa", nullptr, "compile check bench", "sink-fwd, BHSD, GQA: each block computes rows of all the query heads of one kv head, so K/V tiles serve the whole group (for short query lengths: decoding)",
     "only sink-fwd packs query heads"},
    {"batch", "B", "compile check bench tune", "attention: batch size",
     kAttentionParameter},
    {"heads", "H", "compile check bench tune", "attention: query heads",
     kAttentionParameter},
    {"kv-heads", "HK", "compile check bench tune", "attention: key/value heads (divides --heads)",
     kAttentionParameter},
    {"seq-q", "SQ", "compile check bench tune", "attention: query length",
     kAttentionParameter},
    {"seq-kv", "SKV", "compile check bench tune", "attention: key/value length",
     kAttentionParameter},
    {"head-dim", "D", "compile check bench tune", "attention: head dimension (64 or 128)",
     kAttentionParameter},
    {"window", "W", "compile check bench tune", "attention: sliding window (>= 1)",
     kAttentionParameter},
    {"sink-dtype", "T", "compile check bench tune", "attention: how the per-head sink logits are stored: f32 (default) or bf16",
     kAttentionParameter},
    {"layout", "L", "compile check bench tune", "attention: bhsd (default: q/o [B,H,S,D]), bshd (q/o [B,S,H,D]) or varlen (packed sequences, with --seqlens-q)",
     kAttentionParameter},
    {"seqlens-q", "L,L,..", "compile check bench", "attention, varlen: each sequence's query length (sets --layout varlen; the batch is their count; with --bundle of a --run-time-shapes bundle, the lengths to run it for)",
     kAttentionParameter},
    {"seqlens-kv", "L,L,..", "compile check bench", "attention, varlen: each sequence's key/value length (default: --seqlens-q)",
     kAttentionParameter},
    {"sinks", "X,X,..", "check bench", "attention: the sink logits, one for every head or one per head (finite or -inf: no sink), instead of random ones"},
    {"start-tile", "T", "compile check bench", "tma-stream: first 64-column tile of the loop (default 0)"},
    {"dtype", "T", "compile check bench tune", "element type: bf16 (default) or fp16"},
    {"chip", "SM", "compile check bench tune", "PTX target (default sm_90a)"},
    {"emit", "LEVEL", "compile", "tile | gpu | llvm | ptx | bundle"},
    {"o", "PATH", "compile", "output file, or directory for --emit bundle ('-': stdout)"},
    {"ptxas", "PATH", "compile", "with --emit bundle: also assemble the kernel for the --chip GPU with this ptxas (kernel.cubin), so that loading the bundle there compiles nothing"},
    {"bundle", "DIR", "check bench", "run a compiled bundle instead of compiling"},
    {"preset", "NAME", "bench", "time a table of configurations: seed (bf16 B1 H64 HK8, S 2k..16k x D 64/128; sink-fwd causal and window 128, or with --kernel sink-bwd the causal backward, in the form --dq, --dq-split, --dq-warpgroups and --dkdv-warpgroups pick)"},
    {"tune-cache", "FILE", "compile check bench tune", "sink-fwd: the tuning cache; tune records each problem's fastest schedule, stages and persistent form in it, and --schedule auto (without --stages) uses them (an explicit --persistent wins)",
     "only sink-fwd is tuned"},
    {"bundles", "DIR", "bench tune", "with --preset: take each configuration's bundle from the bundles under DIR (found by their manifests) instead of compiling; tune: time the sink-fwd bundles under DIR"},
    {"seed", "N", "check bench tune", "seed of the random inputs (default 0)"},
    {"iters", "N", "bench tune", "timed iterations (default 50; median reported)"},
    {"warmup", "N", "bench tune", "untimed warm-up iterations (default 5)"},
    {"no-l2-flush", nullptr, "bench tune", "do not flush L2 between iterations"},
    {"checked", nullptr, "bench", "with --preset: the caller checked the bundles in this run (scripts/gpu-round.sh); without it each cell is checked, as `check` does, before it is timed"},
    {"json", "FILE", "bench", "also write the results as JSON (per kernel: config, median_ms, min_ms, times_ms of every timed iteration, throughput)"},
    {"save-io", "DIR", "check bench", "write inputs and outputs as .npy files"},
    {"device", "N", "devices check bench tune", "GPU ordinal (default 0)"},
    {"verbose", nullptr, "devices compile check bench tune", "print the JIT (ptxas) log"},
};

/// How a flag is written: -o, --kernel.
std::string spelled(const std::string &name) {
  return (name == "o" ? "-" : "--") + name;
}

bool commandAccepts(const FlagSpec &flag, const std::string &command) {
  std::string list = std::string(" ") + flag.commands + " ";
  return list.find(" " + command + " ") != std::string::npos;
}

rt::Expected<int64_t> parseInteger(const std::string &flag,
                                   const std::string &text, int64_t min,
                                   int64_t max) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE)
    return rt::Status::error(spelled(flag) + " expects an integer, got '" +
                             text + "'");
  if (value < min || value > max)
    return rt::Status::error(spelled(flag) + " must be in [" +
                             std::to_string(min) + ", " + std::to_string(max) +
                             "], got " + text);
  return int64_t(value);
}

/// The largest |sink| --sinks takes: times log2(e) it stays below FLT_MAX.
constexpr float kMaxSinkLogit = 1e38f;
} // namespace

rt::Expected<std::vector<float>>
runner::parseSinkLogits(const std::string &text) {
  std::vector<float> values;
  for (std::string_view view : rt::splitCommaList(text)) {
    std::string item(view);
    const char *begin = item.c_str();
    char *end = nullptr;
    errno = 0;
    float value = std::strtof(begin, &end);
    // strtof also reads "nan", "inf" and hex floats: only finite values
    // and -inf (a head without a sink) are sink logits.
    // (An overflowing literal such as -1e50 is out of range, not -inf.)
    bool overflow = errno == ERANGE && std::isinf(value);
    if (item.empty() || end != begin + item.size() || std::isnan(value) ||
        (std::isinf(value) && value > 0) || overflow)
      return rt::Status::error("--sinks: '" + item +
                               "' is not a sink logit (a finite number or "
                               "-inf, comma-separated)");
    // The kernels scale sinks by log2(e) in f32: that must stay finite.
    if (std::isfinite(value) && std::fabs(value) > kMaxSinkLogit)
      return rt::Status::error("--sinks: '" + item +
                               "' is out of range (|sink| <= 1e38, or -inf)");
    values.push_back(value);
  }
  return values;
}

bool Options::wasGiven(const std::string &flag) const {
  return std::find(given.begin(), given.end(), flag) != given.end();
}

std::vector<std::string_view> runner::attentionFlags() {
  std::vector<std::string_view> flags;
  for (const FlagSpec &flag : kFlags)
    if (flag.onlyFor == kAttentionParameter)
      flags.push_back(flag.name);
  return flags;
}

std::vector<std::string> Options::attentionFlagsGiven() const {
  std::vector<std::string> flags;
  for (std::string_view flag : attentionFlags())
    if (wasGiven(std::string(flag)))
      flags.push_back("--" + std::string(flag));
  return flags;
}

rt::Status runner::checkFlagsApply(const Options &options,
                                   const KernelKind &kind) {
  for (const FlagSpec &flag : kFlags)
    if (flag.onlyFor && options.wasGiven(flag.name) && !kind.takes(flag.name))
      return rt::Status::error(spelled(flag.name) +
                               " does not apply to kernel '" +
                               std::string(kind.name) + "': " + flag.onlyFor);
  return rt::Status::success();
}

std::string runner::usage(bool hasCompiler) {
  std::string text =
      "usage: sinkattn-runner <command> [flags]\n"
      "\n"
      "commands:\n"
      "  devices   list CUDA devices\n";
  if (hasCompiler)
    text += "  compile   build a kernel: --kernel NAME [shape flags] --emit LEVEL -o PATH\n";
  text +=
      "  check     run a kernel on random inputs and compare with a reference\n"
      "            (exit 0: pass, 1: fail)\n"
      "  bench     time a kernel (median of --iters runs), print a table\n"
      "  tune      time sink-fwd's schedules x stages (x persistent) per problem\n"
      "            and record the fastest in --tune-cache\n"
      "  help      this text\n";
  if (!hasCompiler)
    text += "\nThis is a runtime-only build: check and bench need --bundle DIR\n"
            "(bundles come from `sinkattn-runner compile --emit bundle` of a\n"
            "full build).\n";
  text += "\nflags:\n";
  for (const FlagSpec &flag : kFlags) {
    if (!hasCompiler && std::string(flag.commands) == "compile")
      continue;
    std::string left = "  " + spelled(flag.name);
    if (flag.valueName)
      left += std::string(" ") + flag.valueName;
    left.resize(std::max<size_t>(left.size() + 1, 22), ' ');
    std::string help = flag.help;
    if (std::string_view(flag.name) == "kernel")
      help += " (" + kindNames([](const KernelKind &) { return true; }) + ")";
    text += left + help + "  [" + flag.commands + "]\n";
  }
  text += "\nexit codes: 0 success, 1 check failed, 2 usage, configuration or "
          "environment error\n";
  return text;
}

rt::Expected<Options> runner::parseOptions(int argc, char **argv,
                                           bool hasCompiler) {
  Options options;
  if (argc < 2)
    return rt::Status::error("no command given");
  options.command = argv[1];
  if (options.command == "-h" || options.command == "--help")
    options.command = "help";
  static const char *kCommands[] = {"devices", "compile", "check", "bench",
                                    "tune", "help"};
  if (std::find(std::begin(kCommands), std::end(kCommands), options.command) ==
      std::end(kCommands))
    return rt::Status::error("unknown command '" + options.command + "'");
  if (options.command == "compile" && !hasCompiler)
    return rt::Status::error(
        "compile needs the full build (this runtime-only build has no "
        "compiler); compile elsewhere with --emit bundle and pass --bundle");

  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-", 0) != 0)
      return rt::Status::error("unexpected argument '" + arg + "'");
    std::string name = arg.substr(arg.rfind("--", 0) == 0 ? 2 : 1);
    std::string value;
    bool hasInlineValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasInlineValue = true;
    }
    const FlagSpec *flag = nullptr;
    for (const FlagSpec &candidate : kFlags)
      if (name == candidate.name)
        flag = &candidate;
    if (!flag)
      return rt::Status::error("unknown flag '" + arg + "'");
    if (!commandAccepts(*flag, options.command))
      return rt::Status::error(spelled(name) + " does not apply to '" +
                               options.command + "'");
    if (flag->valueName && !hasInlineValue) {
      if (i + 1 >= argc)
        return rt::Status::error(spelled(name) + " needs a value (" +
                                 flag->valueName + ")");
      value = argv[++i];
    } else if (!flag->valueName && hasInlineValue) {
      return rt::Status::error(spelled(name) + " takes no value");
    }
    options.given.push_back(name);

    constexpr int64_t kMaxDim = int64_t(1) << 31;
    auto integer = [&](int64_t min, int64_t max) {
      return parseInteger(name, value, min, max);
    };
    rt::Expected<int64_t> number = int64_t(0);
    if (name == "kernel") {
      options.kernel = value;
    } else if (name == "m" || name == "n" || name == "k") {
      number = integer(1, kMaxDim);
      if (number.ok())
        (name == "m" ? options.m : name == "n" ? options.n : options.k) = *number;
    } else if (name == "stages") {
      number = integer(1, 64);
      if (number.ok())
        options.stages = *number;
    } else if (name == "persistent") {
      number = integer(0, 65535);
      if (number.ok())
        options.persistent = *number;
    } else if (name == "dq-warpgroups") {
      number = integer(1, 3);
      if (number.ok())
        options.dqWarpgroups = *number;
    } else if (name == "dkdv-warpgroups") {
      number = integer(1, 3);
      if (number.ok())
        options.dkdvWarpgroups = *number;
    } else if (name == "start-tile") {
      number = integer(0, kMaxDim);
      if (number.ok())
        options.startTile = *number;
    } else if (name == "batch" || name == "heads" || name == "kv-heads" ||
               name == "seq-q" || name == "seq-kv" || name == "window") {
      number = integer(1, kMaxDim);
      if (number.ok())
        (name == "batch"    ? options.batch
         : name == "heads"  ? options.heads
         : name == "kv-heads" ? options.kvHeads
         : name == "seq-q"  ? options.seqQ
         : name == "seq-kv" ? options.seqKV
                            : options.window) = *number;
    } else if (name == "head-dim") {
      number = integer(1, kMaxDim);
      if (number.ok() && *number != 64 && *number != 128)
        return rt::Status::error("--head-dim must be 64 or 128 (the head "
                                 "dimensions SinkAttn compiles), got " +
                                 value);
      if (number.ok())
        options.headDim = *number;
    } else if (name == "dtype") {
      if (value == "fp16" || value == "f16")
        value = "f16";
      else if (value != "bf16")
        return rt::Status::error("--dtype must be bf16 or fp16, got '" + value +
                                 "'");
      options.dtype = value;
    } else if (name == "chip") {
      options.chip = value;
    } else if (name == "schedule") {
      if (value != "auto" && value != "ws" && value != "plain" &&
          value != "overlap")
        return rt::Status::error(
            "--schedule must be auto, ws, overlap or plain, got '" + value +
            "'");
      options.schedule = value;
    } else if (name == "copy-engine") {
      if (value != "tma" && value != "cp-async" && value != "mixed")
        return rt::Status::error(
            "--copy-engine must be tma, cp-async or mixed, got '" + value + "'");
      options.copyEngine = value;
    } else if (name == "dq") {
      if (value != "auto" && value != "separate" && value != "atomic")
        return rt::Status::error(
            "--dq must be auto, separate or atomic, got '" + value + "'");
      options.dq = value;
    } else if (name == "dq-split") {
      // keys (removed) reaches sink-bwd's builder, which says so.
      if (value != "columns" && value != "keys" && value != "deferred")
        return rt::Status::error("--dq-split must be columns or deferred, got '" +
                                 value + "'");
      options.dqSplit = value;
    } else if (name == "emit") {
      static const char *kLevels[] = {"tile", "gpu", "llvm", "ptx", "bundle"};
      if (std::find(std::begin(kLevels), std::end(kLevels), value) ==
          std::end(kLevels))
        return rt::Status::error(
            "--emit must be one of tile, gpu, llvm, ptx, bundle; got '" +
            value + "'");
      options.emit = value;
    } else if (name == "o") {
      options.output = value;
    } else if (name == "sink-dtype") {
      if (value != "f32" && value != "bf16")
        return rt::Status::error("--sink-dtype must be f32 or bf16, got '" +
                                 value + "'");
      options.sinkDtype = value;
    } else if (name == "layout") {
      if (!rt::parseLayout(value))
        return rt::Status::error("--layout must be bhsd, bshd or varlen, got '" +
                                 value + "'");
      options.layout = value;
    } else if (name == "seqlens-q" || name == "seqlens-kv") {
      rt::Expected<std::vector<int64_t>> lengths =
          rt::parseLengths(value, spelled(name));
      if (!lengths.ok())
        return lengths.status();
      for (int64_t length : *lengths)
        if (length > kMaxDim)
          return rt::Status::error(spelled(name) + ": length " +
                                   std::to_string(length) + " is above 2^31");
      (name == "seqlens-q" ? options.seqlensQ : options.seqlensKv) = *lengths;
    } else if (name == "sinks") {
      rt::Expected<std::vector<float>> sinks = parseSinkLogits(value);
      if (!sinks.ok())
        return sinks.status();
      options.sinks = *sinks;
    } else if (name == "tune-cache") {
      options.tuneCache = value;
    } else if (name == "preset") {
      options.preset = value;
    } else if (name == "bundles") {
      options.bundlesDir = value;
    } else if (name == "bundle") {
      options.bundleDir = value;
    } else if (name == "ptxas") {
      options.ptxas = value;
    } else if (name == "seed") {
      number = integer(0, INT64_MAX);
      if (number.ok())
        options.seed = uint64_t(*number);
    } else if (name == "iters") {
      number = integer(1, 100000);
      if (number.ok())
        options.iters = *number;
    } else if (name == "warmup") {
      number = integer(0, 100000);
      if (number.ok())
        options.warmup = *number;
    } else if (name == "pack-gqa") {
      options.packGqa = true;
    } else if (name == "run-time-shapes") {
      options.runTimeShapes = true;
    } else if (name == "non-causal") {
      options.causal = false;
    } else if (name == "softmax-scale") {
      char *end = nullptr;
      double scale = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !std::isfinite(scale) ||
          scale <= 0)
        return rt::Status::error(
            "--softmax-scale must be a positive finite number, got '" +
            value + "'");
      options.softmaxScale = scale;
    } else if (name == "deterministic") {
      options.deterministic = true;
    } else if (name == "no-l2-flush") {
      options.flushL2 = false;
    } else if (name == "checked") {
      options.checked = true;
    } else if (name == "json") {
      options.jsonFile = value;
    } else if (name == "save-io") {
      options.saveIoDir = value;
    } else if (name == "device") {
      number = integer(0, 1023);
      if (number.ok())
        options.device = *number;
    } else if (name == "verbose") {
      options.verbose = true;
    }
    if (!number.ok())
      return number.status();
  }

  // Varlen: the lengths fix the batch and the longest sequences.
  if (!options.seqlensKv.empty() && options.seqlensQ.empty())
    return rt::Status::error("--seqlens-kv needs --seqlens-q");
  if (!options.seqlensQ.empty()) {
    for (const char *flag : {"batch", "seq-q", "seq-kv"})
      if (options.wasGiven(flag))
        return rt::Status::error(std::string("--") + flag +
                                 " cannot be combined with --seqlens-q (the "
                                 "lengths give the batch and the longest "
                                 "sequences)");
    if (options.wasGiven("layout") && options.layout != "varlen")
      return rt::Status::error("--seqlens-q packs the sequences (--layout "
                               "varlen), not --layout " + options.layout);
    options.layout = "varlen";
    if (options.seqlensKv.empty())
      options.seqlensKv = options.seqlensQ;
    if (options.seqlensKv.size() != options.seqlensQ.size())
      return rt::Status::error(
          "--seqlens-q has " + std::to_string(options.seqlensQ.size()) +
          " sequences but --seqlens-kv " +
          std::to_string(options.seqlensKv.size()));
    options.batch = int64_t(options.seqlensQ.size());
    options.seqQ = std::max<int64_t>(
        1, *std::max_element(options.seqlensQ.begin(), options.seqlensQ.end()));
    options.seqKV = std::max<int64_t>(
        1, *std::max_element(options.seqlensKv.begin(), options.seqlensKv.end()));
  } else if (options.layout == "varlen") {
    return rt::Status::error("--layout varlen needs --seqlens-q (each "
                             "sequence's length)");
  }
  // With --bundle the heads not given are the bundle's (its reshape checks).
  if (options.bundleDir.empty() && options.heads % options.kvHeads != 0)
    return rt::Status::error("--kv-heads " + std::to_string(options.kvHeads) +
                             " must divide --heads " +
                             std::to_string(options.heads));
  // Element offsets of one tensor must fit the 32-bit indices kernels use.
  auto elements = [](int64_t a, int64_t b, int64_t c, int64_t d) {
    return double(a) * double(b) * double(c) * double(d);
  };
  auto total = [](const std::vector<int64_t> &lengths) {
    double sum = 0;
    for (int64_t length : lengths)
      sum += double(length);
    return sum;
  };
  // Packed (varlen) tensors hold the sum of the lengths, padded ones batch
  // x the longest.
  double tokens = options.seqlensQ.empty()
                      ? double(options.batch) *
                            double(std::max(options.seqQ, options.seqKV))
                      : std::max(total(options.seqlensQ), total(options.seqlensKv));
  if (elements(1, options.heads, 1, options.headDim) * tokens > double(INT32_MAX))
    return rt::Status::error(
        "the attention tensors have more than 2^31-1 elements (heads x tokens "
        "x head-dim, tokens = batch x length or the varlen total); 32-bit "
        "indices cannot address them");
  if (!options.seqlensQ.empty() &&
      (total(options.seqlensQ) == 0 || total(options.seqlensKv) == 0))
    return rt::Status::error(
        std::string(total(options.seqlensQ) == 0 ? "--seqlens-q" : "--seqlens-kv") +
        " has no tokens at all (every sequence is empty)");

  if (options.command == "compile") {
    if (options.kernel.empty())
      return rt::Status::error("compile needs --kernel NAME");
    if (options.emit.empty())
      return rt::Status::error("compile needs --emit LEVEL");
    if (options.output.empty())
      return rt::Status::error("compile needs -o PATH");
    if (options.emit == "bundle" && options.output == "-")
      return rt::Status::error("--emit bundle writes a directory; -o - is not "
                               "possible");
    if (!options.ptxas.empty() && options.emit != "bundle")
      return rt::Status::error("--ptxas goes with --emit bundle (the SASS is "
                               "stored in the bundle)");
  }
  if (options.command == "tune") {
    if (options.tuneCache.empty())
      return rt::Status::error("tune needs --tune-cache FILE (where the "
                               "fastest variants are recorded)");
    const KernelKind *kind = findKernelKind(options.kernel);
    if (options.wasGiven("kernel") && !(kind && kind->takes("tune-cache")))
      return rt::Status::error(
          "tune tunes " +
          kindNames([](const KernelKind &k) { return k.takes("tune-cache"); },
                    " or ") +
          ", not '" + options.kernel + "'");
    if (!options.bundlesDir.empty()) {
      std::vector<std::string> shape = options.attentionFlagsGiven();
      for (const char *flag : {"dtype", "chip"})
        if (options.wasGiven(flag))
          shape.push_back(std::string("--") + flag);
      if (!shape.empty())
        return rt::Status::error(shape.front() + " cannot be combined with "
                                 "--bundles (tune times every sink-fwd "
                                 "problem among the bundles)");
      return options;
    }
    if (!hasCompiler)
      return rt::Status::error("this runtime-only build cannot compile; pass "
                               "--bundles DIR to tune");
    if (options.kernel.empty())
      return rt::Status::error("tune needs --kernel sink-fwd and its shape, or "
                               "--bundles DIR");
    return options;
  }
  if (!options.bundlesDir.empty() && options.preset.empty())
    return rt::Status::error("--bundles goes with --preset (one bundle: --bundle DIR)");
  if (options.checked && options.bundlesDir.empty())
    return rt::Status::error("--checked goes with --preset --bundles DIR (bundles "
                             "the caller checked in this run)");
  if (!options.preset.empty()) {
    // The preset fixes the kernel and every shape; only how to time and
    // where to run are the caller's.
    const KernelKind *kind = findKernelKind(options.kernel);
    if (options.wasGiven("kernel") && !(kind && !kind->seedWindows.empty()))
      return rt::Status::error(
          "--preset " + options.preset + " times " +
          kindNames([](const KernelKind &k) { return !k.seedWindows.empty(); },
                    " or ") +
          ", not '" + options.kernel + "'");
    for (const char *flag :
         {"bundle", "m", "n", "k", "dtype", "chip", "stages", "schedule",
          "copy-engine", "pack-gqa", "persistent", "start-tile", "batch", "heads",
          "kv-heads", "seq-q", "seq-kv", "head-dim", "window", "sink-dtype",
          "layout", "seqlens-q", "seqlens-kv", "save-io", "sinks",
          "softmax-scale"})
      if (options.wasGiven(flag))
        return rt::Status::error(std::string("--") + flag +
                                 " cannot be combined with --preset (the "
                                 "preset fixes the configurations)");
    // The backward's form (how dQ is summed, the warpgroups) is the
    // caller's: docs/PERF.md's seed tables time D 128 in the split
    // (--dq atomic --dkdv-warpgroups 2). It applies to every cell, and
    // only where the runner compiles them.
    for (const char *flag :
         {"dq", "dq-split", "dq-warpgroups", "dkdv-warpgroups",
          "deterministic"}) {
      if (!options.wasGiven(flag))
        continue;
      if (!(kind && kind->takes(flag)))
        return rt::Status::error(
            std::string("--") + flag + " goes with --preset " +
            options.preset + " --kernel " +
            kindNames([&](const KernelKind &k) { return k.takes(flag); },
                      " or ") +
            " (the backward's form)");
      if (!options.bundlesDir.empty())
        return rt::Status::error(std::string("--") + flag +
                                 " chooses how to compile; with --bundles "
                                 "the bundles are already compiled");
    }
    if (options.bundlesDir.empty() && !hasCompiler)
      return rt::Status::error("this runtime-only build cannot compile; pass "
                               "--bundles DIR with --preset");
    if (!options.bundlesDir.empty() && options.wasGiven("tune-cache"))
      return rt::Status::error("--tune-cache chooses how to compile; with "
                               "--bundles the bundles are already compiled");
    return options;
  }
  if (options.command == "check" || options.command == "bench") {
    if (options.bundleDir.empty() && options.kernel.empty())
      return rt::Status::error(options.command +
                               " needs --kernel NAME or --bundle DIR");
    if (!options.bundleDir.empty() && !hasCompiler) {
      // fine: runtime-only builds run bundles
    } else if (options.bundleDir.empty() && !hasCompiler) {
      return rt::Status::error(
          "this runtime-only build cannot compile; pass --bundle DIR");
    }
    if (!options.bundleDir.empty())
      for (const char *flag :
           {"kernel", "k", "dtype", "chip", "stages", "schedule", "copy-engine", "dq", "dq-split", "dq-warpgroups", "dkdv-warpgroups", "deterministic", "pack-gqa", "persistent", "start-tile",
            "batch", "seq-q", "seq-kv", "head-dim", "sink-dtype",
            "layout", "tune-cache"})
        if (options.wasGiven(flag))
          return rt::Status::error(
              std::string("--") + flag +
              " cannot be combined with --bundle (the bundle fixes the "
              "kernel and its configuration)");
    if (options.wasGiven("softmax-scale") && options.bundleDir.empty())
      return rt::Status::error(
          "--softmax-scale goes with --bundle of a sink-fwd or sink-bwd "
          "--run-time-shapes bundle (a kernel compiled for one problem "
          "computes with 1/sqrt(head dim))");
  }
  return options;
}
