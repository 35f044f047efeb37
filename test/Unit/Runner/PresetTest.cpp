//===- PresetTest.cpp - bench --preset's cells and schedule labels --------===//

#include "Preset.h"

#include <gtest/gtest.h>

using namespace sinkattn;
using namespace sinkattn::runner;

namespace {
rt::Bundle bundleOf(std::string kernel,
                    std::map<std::string, rt::ConfigValue> config) {
  rt::Bundle bundle;
  bundle.kernel = std::move(kernel);
  bundle.config = std::move(config);
  return bundle;
}
} // namespace

TEST(PresetSchedule, NamesScheduleStagesAndDqMode) {
  EXPECT_EQ(scheduleLabel(bundleOf(
                "sink-fwd", {{"schedule", std::string("ws")}, {"stages", 3}})),
            "ws s3");
  EXPECT_EQ(scheduleLabel(bundleOf("sink-bwd", {{"schedule", std::string("plain")},
                                                {"stages", 2},
                                                {"dq", std::string("atomic")}})),
            "plain s2 dq=atomic");
  // The split and the shared-tile forms name their warpgroups.
  EXPECT_EQ(scheduleLabel(bundleOf("sink-bwd", {{"schedule", std::string("plain")},
                                                {"stages", 2},
                                                {"dq", std::string("atomic")},
                                                {"dkdv_warpgroups", 2}})),
            "plain s2 dq=atomic dkdv-wg=2");
  // ... and how they divide dQ's share, where not by columns.
  EXPECT_EQ(scheduleLabel(bundleOf("sink-bwd", {{"schedule", std::string("plain")},
                                                {"stages", 2},
                                                {"dq", std::string("atomic")},
                                                {"dkdv_warpgroups", 2},
                                                {"dq_split", std::string("deferred")}})),
            "plain s2 dq=atomic dkdv-wg=2 dq-split=deferred");
  EXPECT_EQ(scheduleLabel(bundleOf("sink-bwd", {{"schedule", std::string("plain")},
                                                {"stages", 2},
                                                {"dq", std::string("separate")},
                                                {"dq_warpgroups", 2},
                                                {"dkdv_warpgroups", 2}})),
            "plain s2 dq=separate dq-wg=2 dkdv-wg=2");
  // Backward bundles from before --dq computed dQ separately; what a
  // manifest does not say shows as "-".
  EXPECT_EQ(scheduleLabel(bundleOf("sink-bwd", {{"schedule", std::string("plain")},
                                                {"stages", 2}})),
            "plain s2 dq=separate");
  EXPECT_EQ(scheduleLabel(bundleOf("sink-fwd", {})), "- s-");
}

TEST(PresetCells, SeedTables) {
  auto forward = presetCells("seed", "sink-fwd");
  ASSERT_TRUE(forward.ok());
  // Causal and window 128, D 64 and 128, S 2k..16k.
  ASSERT_EQ(forward->size(), 16u);
  EXPECT_EQ(forward->front().compileFlags(),
            "--kernel sink-fwd --batch 1 --heads 64 --kv-heads 8 --seq-q 2048 "
            "--seq-kv 2048 --head-dim 64 --dtype bf16");
  EXPECT_EQ(forward->back().mask(), "window 128");
  auto backward = presetCells("seed", "sink-bwd");
  ASSERT_TRUE(backward.ok());
  EXPECT_EQ(backward->size(), 8u);
  EXPECT_FALSE(presetCells("other", "sink-fwd").ok());
}
