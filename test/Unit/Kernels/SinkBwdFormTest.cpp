//===- SinkBwdFormTest.cpp - The backward's form: auto and refusals -------===//
//
// SinkBwdForm::resolve is the one place that picks the backward's form and
// refuses what its kernels do not implement: auto's choice per problem,
// --deterministic, and every refusal with the reason it gives, including
// those the runner's own flag parsing catches first (a library caller sets
// KernelConfig directly).
//
//===----------------------------------------------------------------------===//

#include "../../../lib/Kernels/SinkBwdForm.h"
#include "../../../lib/Kernels/KernelBuilders.h"
#include "ReferenceTestSupport.h"

#include "mlir/IR/Diagnostics.h"

#include <gtest/gtest.h>

#include <functional>
#include <optional>

using namespace mlir;
using namespace sinkattn;
using sinkattn::kernels::SinkBwdForm;
using sinkattn::test::configOf;
using sinkattn::test::varlenConfigOf;

namespace {

class SinkBwdFormTest : public test::KernelContextTest {
protected:
  /// The form of `config` (a sink-bwd config); on a refusal, none, with the
  /// diagnostic in `message`.
  std::optional<SinkBwdForm> resolve(KernelConfig config) {
    config.kernel = "sink-bwd";
    message.clear();
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
      message = diagnostic.str();
      return success();
    });
    FailureOr<SinkBwdForm> form = SinkBwdForm::resolve(
        context, config, kernels::sinkAttentionShape(config));
    if (failed(form))
      return std::nullopt;
    return *form;
  }
  std::string message;
};

KernelConfig seedCell(int64_t seq, int64_t headDim) {
  return configOf(1, 64, 8, seq, seq, headDim, 0);
}

TEST_F(SinkBwdFormTest, AutoPicksTheSplitAtD128From2048Rows) {
  std::optional<SinkBwdForm> split = resolve(seedCell(2048, 128));
  ASSERT_TRUE(split);
  EXPECT_TRUE(split->atomicDq);
  EXPECT_FALSE(split->dqSplitDeferred);
  EXPECT_EQ(split->dkdvWarpgroups, 2);
  EXPECT_EQ(split->dqWarpgroups, 1);
  EXPECT_TRUE(split->kvAccumulate);
  // One block of 64 short, in the rows or in the keys: the deterministic
  // form.
  for (KernelConfig config : {configOf(1, 64, 8, 2047, 2048, 128, 0),
                              configOf(1, 64, 8, 2048, 2047, 128, 0)}) {
    std::optional<SinkBwdForm> form = resolve(config);
    ASSERT_TRUE(form);
    EXPECT_FALSE(form->atomicDq);
  }
}

TEST_F(SinkBwdFormTest, AutoPicksTheDeferredSplitAtD64From8192Rows) {
  std::optional<SinkBwdForm> deferred = resolve(seedCell(8192, 64));
  ASSERT_TRUE(deferred);
  EXPECT_TRUE(deferred->atomicDq);
  EXPECT_TRUE(deferred->dqSplitDeferred);
  EXPECT_EQ(deferred->dkdvWarpgroups, 2);
  EXPECT_TRUE(deferred->kvInRegisters);
  std::optional<SinkBwdForm> shorter = resolve(seedCell(4096, 64));
  ASSERT_TRUE(shorter);
  EXPECT_FALSE(shorter->atomicDq);
  EXPECT_EQ(shorter->dkdvWarpgroups, 1);
}

TEST_F(SinkBwdFormTest,
       AutoKeepsTheDeterministicFormWhereTheSplitWasNotMeasured) {
  KernelConfig window = seedCell(4096, 128);
  window.window = 128;
  KernelConfig plain = seedCell(4096, 128);
  plain.schedule = "plain";
  KernelConfig varlen =
      varlenConfigOf(8, 1, {4096, 4096}, {4096, 4096}, 128, 0);
  KernelConfig deterministic = seedCell(16384, 64);
  deterministic.deterministic = true;
  KernelConfig oneDkdv = seedCell(4096, 128);
  oneDkdv.dkdvWarpgroups = 1;
  for (const KernelConfig &config :
       {window, plain, varlen, deterministic, oneDkdv}) {
    std::optional<SinkBwdForm> form = resolve(config);
    ASSERT_TRUE(form) << message;
    EXPECT_FALSE(form->atomicDq);
  }
}

TEST_F(SinkBwdFormTest, NamingTheDeferredSplitAsksForItAtAnyLength) {
  KernelConfig config = configOf(1, 4, 2, 300, 300, 64, 0);
  config.dqSplit = "deferred";
  std::optional<SinkBwdForm> form = resolve(config);
  ASSERT_TRUE(form) << message;
  EXPECT_TRUE(form->atomicDq);
  EXPECT_TRUE(form->dqSplitDeferred);
}

TEST_F(SinkBwdFormTest, EveryRefusalSaysWhy) {
  struct Case {
    const char *what;
    std::function<void(KernelConfig &)> set;
    const char *message;
  };
  const Case cases[] = {
      {"unknown --dq", [](KernelConfig &c) { c.dq = "fast"; },
       "--dq must be auto, separate"},
      {"the split with --deterministic",
       [](KernelConfig &c) {
         c.dq = "atomic";
         c.dkdvWarpgroups = 2;
         c.deterministic = true;
       },
       "not bit-reproducible: drop --deterministic"},
      {"--dq-split keys", [](KernelConfig &c) { c.dqSplit = "keys"; },
       "--dq-split keys was removed"},
      {"unknown --dq-split", [](KernelConfig &c) { c.dqSplit = "rows"; },
       "--dq-split must be columns or deferred, got 'rows'"},
      {"the split with 64-key blocks",
       [](KernelConfig &c) {
         c.dq = "atomic";
         c.dkdvWarpgroups = 1;
       },
       "--dq atomic without --dkdv-warpgroups 2"},
      {"three warpgroups", [](KernelConfig &c) { c.dqWarpgroups = 3; },
       "--dq-warpgroups 3 was removed"},
      {"four warpgroups", [](KernelConfig &c) { c.dkdvWarpgroups = 4; },
       "--dkdv-warpgroups 4 is not supported: 1 or 2"},
      {"deferred without the split",
       [](KernelConfig &c) {
         c.dq = "separate";
         c.dqSplit = "deferred";
       },
       "--dq-split deferred divides dQ's share"},
      {"deferred at D 128",
       [](KernelConfig &c) {
         c.headDim = 128;
         c.dqSplit = "deferred";
       },
       "--dq-split deferred is supported at --head-dim 64 only"},
      {"a dQ kernel's warpgroups with the split",
       [](KernelConfig &c) {
         c.dq = "atomic";
         c.dkdvWarpgroups = 2;
         c.dqWarpgroups = 2;
       },
       "--dq-warpgroups 2 needs --dq separate"},
  };
  for (const Case &refused : cases) {
    KernelConfig config = configOf(1, 4, 2, 300, 300, 64, 0);
    refused.set(config);
    EXPECT_FALSE(resolve(config)) << refused.what;
    EXPECT_NE(message.find(refused.message), std::string::npos)
        << refused.what << ": " << message;
    EXPECT_EQ(message.rfind("sink-bwd: ", 0), 0u) << refused.what;
  }
}

} // namespace
