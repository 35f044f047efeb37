//===- KernelKindsTest.cpp - The runner's registry of kernel kinds --------===//

#include "KernelKinds.h"
#include "Options.h"

#include <gtest/gtest.h>

#include <set>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {
const char *const kKinds[] = {"gemm",     "sink-fwd",   "sink-bwd",
                              "tma-copy", "tma-stream", "tma-im2col"};

/// Options as parsed from `compile --kernel KIND ARGS... --emit tile -o -`.
Options parse(const std::string &kind, std::vector<std::string> args) {
  std::vector<std::string> words = {"sinkattn-runner", "compile", "--kernel",
                                    kind};
  words.insert(words.end(), args.begin(), args.end());
  for (const char *tail : {"--emit", "tile", "-o", "-"})
    words.push_back(tail);
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  rt::Expected<Options> options =
      parseOptions(int(argv.size()), argv.data(), /*hasCompiler=*/true);
  EXPECT_TRUE(options.ok()) << options.message();
  return options.ok() ? *options : Options();
}
} // namespace

TEST(KernelKinds, EveryKindRegisteredOnce) {
  std::vector<std::string> names;
  for (const KernelKind &kind : kernelKinds())
    names.emplace_back(kind.name);
  EXPECT_EQ(names, std::vector<std::string>(std::begin(kKinds), std::end(kKinds)));
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(),
            names.size());
  for (const KernelKind &kind : kernelKinds()) {
    // What the harness calls on every kind.
    EXPECT_TRUE(kind.randomInput) << kind.name;
    EXPECT_TRUE(kind.check) << kind.name;
    EXPECT_TRUE(kind.countWork) << kind.name;
    EXPECT_EQ(kind.seedWindows.empty(), kind.seedFormula == nullptr)
        << kind.name;
  }
}

TEST(KernelKinds, LookupByName) {
  for (const char *name : kKinds) {
    const KernelKind *kind = findKernelKind(name);
    ASSERT_NE(kind, nullptr) << name;
    EXPECT_EQ(kind->name, name);
    rt::Expected<const KernelKind *> found = kernelKind(name);
    ASSERT_TRUE(found.ok()) << found.message();
    EXPECT_EQ(*found, kind);
  }
}

TEST(KernelKinds, UnknownName) {
  EXPECT_EQ(findKernelKind("attention"), nullptr);
  EXPECT_EQ(findKernelKind(""), nullptr);
  EXPECT_EQ(kernelKind("attention").message(),
            "unknown kernel 'attention' (known: gemm, sink-fwd, sink-bwd, "
            "tma-copy, tma-stream, tma-im2col)");
}

TEST(KernelKinds, FlagsOfEachKind) {
  std::vector<std::string_view> attention = attentionFlags();
  EXPECT_EQ(attention.size(), 11u);
  auto takesAttention = [&](const KernelKind &kind) {
    for (std::string_view flag : attention)
      if (!kind.takes(flag))
        return false;
    return true;
  };
  auto flags = [](const char *name) {
    std::set<std::string_view> set;
    for (std::string_view flag : findKernelKind(name)->flags)
      set.insert(flag);
    return set;
  };
  using Set = std::set<std::string_view>;
  EXPECT_EQ(flags("gemm"), (Set{"schedule", "persistent", "copy-engine"}));
  EXPECT_TRUE(takesAttention(*findKernelKind("sink-fwd")));
  EXPECT_TRUE(takesAttention(*findKernelKind("sink-bwd")));
  Set fwd = flags("sink-fwd"), bwd = flags("sink-bwd");
  for (std::string_view flag : attention) {
    fwd.erase(flag);
    bwd.erase(flag);
  }
  EXPECT_EQ(fwd, (Set{"schedule", "persistent", "pack-gqa", "tune-cache",
                      "run-time-shapes", "non-causal", "softmax-scale"}));
  EXPECT_EQ(bwd, (Set{"schedule", "dq", "dq-split", "dq-warpgroups",
                      "dkdv-warpgroups", "deterministic", "run-time-shapes",
                      "softmax-scale"}));
  EXPECT_EQ(flags("tma-copy"), (Set{"run-time-shapes"}));
  for (const char *name : {"tma-stream", "tma-im2col"})
    EXPECT_TRUE(flags(name).empty()) << name;
}

TEST(KernelKinds, FlagsAKindDoesNotTakeAreRefused) {
  const KernelKind &gemm = *findKernelKind("gemm");
  const KernelKind &fwd = *findKernelKind("sink-fwd");
  const KernelKind &copy = *findKernelKind("tma-copy");
  EXPECT_TRUE(checkFlagsApply(parse("gemm", {"--copy-engine", "mixed"}), gemm).ok());
  EXPECT_TRUE(checkFlagsApply(parse("sink-fwd", {"--heads", "8", "--kv-heads", "8"}), fwd).ok());
  // Flags every kind takes.
  EXPECT_TRUE(checkFlagsApply(parse("tma-copy", {"--m", "128", "--stages", "3"}), copy).ok());
  EXPECT_EQ(checkFlagsApply(parse("sink-fwd", {"--copy-engine", "mixed"}), fwd).message(),
            "--copy-engine does not apply to kernel 'sink-fwd': only gemm "
            "chooses its copy engine");
  EXPECT_EQ(checkFlagsApply(parse("gemm", {"--head-dim", "64"}), gemm).message(),
            "--head-dim does not apply to kernel 'gemm': it is a parameter of "
            "the attention kernels");
  EXPECT_EQ(checkFlagsApply(parse("sink-fwd", {"--dq", "atomic"}), fwd).message(),
            "--dq does not apply to kernel 'sink-fwd': only sink-bwd computes dQ");
  EXPECT_EQ(checkFlagsApply(parse("tma-copy", {"--schedule", "ws"}), copy).message(),
            "--schedule does not apply to kernel 'tma-copy': only gemm and the "
            "attention kernels have schedules");
}
