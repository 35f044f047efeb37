//===- DriverTest.cpp - Driver loading and GPU-free launch logic ----------===//

#include "SinkAttn/Runtime/Context.h"
#include "SinkAttn/Runtime/CudaDriver.h"
#include "SinkAttn/Runtime/DType.h"
#include "SinkAttn/Runtime/Launch.h"
#include "SinkAttn/Runtime/Timing.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace sinkattn::rt;

namespace {

TEST(CudaDriver, LoadFailsWithClearMessageWithoutLibcuda) {
  Expected<std::shared_ptr<const CudaDriver>> driver = CudaDriver::load();
  if (driver.ok())
    GTEST_SKIP() << "libcuda.so.1 is present on this machine (driver "
                 << (*driver)->version() << ")";
  EXPECT_NE(driver.message().find("libcuda.so.1"), std::string::npos)
      << driver.message();
  EXPECT_NE(driver.message().find("cannot load the CUDA driver library"),
            std::string::npos)
      << driver.message();
}

TEST(CudaDriver, LoadNamesTheLibraryItTried) {
  Expected<std::shared_ptr<const CudaDriver>> driver =
      CudaDriver::load("/nonexistent/libcuda-test.so");
  ASSERT_FALSE(driver.ok());
  EXPECT_NE(driver.message().find("/nonexistent/libcuda-test.so"),
            std::string::npos);
}

TEST(CudaDriver, ErrorFormat) {
  EXPECT_EQ(formatCudaError("cuMemAlloc_v2", 2, "CUDA_ERROR_OUT_OF_MEMORY",
                            "out of memory"),
            "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  EXPECT_EQ(formatCudaError("cuInit", 9999, nullptr, nullptr),
            "cuInit failed: CUDA error 9999");
}

TEST(Context, HopperCheck) {
  DeviceInfo a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.computeMajor = 8;
  a100.computeMinor = 0;
  Status st = checkHopperOrNewer(a100);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "GPU NVIDIA A100-SXM4-80GB is sm_80; SinkAttn "
                          "kernels need sm_90 (Hopper) or newer");
  DeviceInfo h100;
  h100.name = "NVIDIA H100";
  h100.computeMajor = 9;
  EXPECT_TRUE(checkHopperOrNewer(h100).ok());
  EXPECT_EQ(h100.smName(), "sm_90");
}

TEST(Launch, ValidateConfig) {
  LaunchConfig c;
  c.grid = {132, 1, 1};
  c.block = {384, 1, 1};
  EXPECT_TRUE(validateLaunchConfig(c).ok());
  c.cluster = {2, 1, 1};
  EXPECT_TRUE(validateLaunchConfig(c).ok());
  c.grid = {133, 1, 1};
  EXPECT_NE(validateLaunchConfig(c).message().find(
                "not a multiple of the cluster shape"),
            std::string::npos);
  c.grid = {128, 1, 1};
  c.cluster = {32, 1, 1};
  EXPECT_NE(validateLaunchConfig(c).message().find("at most 16"),
            std::string::npos);
  c.cluster = {1, 1, 1};
  c.block = {1025, 1, 1};
  EXPECT_NE(validateLaunchConfig(c).message().find("at most 1024"),
            std::string::npos);
  c.block = {0, 1, 1};
  EXPECT_NE(validateLaunchConfig(c).message().find("zero dimension"),
            std::string::npos);
  c.block = {128, 1, 1};
  c.grid = {1, 70000, 1};
  EXPECT_NE(validateLaunchConfig(c).message().find("65535"),
            std::string::npos);
}

TEST(Launch, KernelArgsLayout) {
  KernelArgs args;
  CUtensorMap map;
  std::memset(&map, 0xAB, sizeof(map));
  args.addPointer(0x1234500).addScalar<float>(0.125f).addScalar<int32_t>(-3);
  args.addTensorMap(map).addScalar<uint64_t>(99);
  ASSERT_EQ(args.size(), 5u);
  auto e = args.entries();
  EXPECT_EQ(e[0].second, 8u);
  EXPECT_EQ(e[1].second, 4u);
  EXPECT_EQ(e[2].second, 4u);
  EXPECT_EQ(e[3].second, 128u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(e[3].first) % 64, 0u);
  EXPECT_EQ(std::memcmp(e[3].first, &map, sizeof(map)), 0);
  CUdeviceptr p;
  std::memcpy(&p, e[0].first, 8);
  EXPECT_EQ(p, 0x1234500u);
  float f;
  std::memcpy(&f, e[1].first, 4);
  EXPECT_EQ(f, 0.125f);
  // kernelParams() points at the same slots, which survive further adds.
  void **params = args.kernelParams();
  const void *first = params[0];
  for (int i = 0; i < 100; ++i)
    args.addScalar<int>(i);
  EXPECT_EQ(args.kernelParams()[0], first);
  KernelArgs moved = std::move(args);
  EXPECT_EQ(moved.kernelParams()[0], first);
}

TEST(Timing, Summary) {
  TimingStats s = summarizeTimes({3.0, 1.0, 2.0, 10.0});
  EXPECT_EQ(s.timesMs, (std::vector<double>{3.0, 1.0, 2.0, 10.0}));
  EXPECT_DOUBLE_EQ(s.medianMs, 2.5);
  EXPECT_DOUBLE_EQ(s.minMs, 1.0);
  EXPECT_DOUBLE_EQ(s.maxMs, 10.0);
  EXPECT_DOUBLE_EQ(s.meanMs, 4.0);
  EXPECT_DOUBLE_EQ(summarizeTimes({5.0, 1.0, 3.0}).medianMs, 3.0);
  EXPECT_EQ(summarizeTimes({}).medianMs, 0.0);
  DeviceInfo h100;
  h100.l2CacheBytes = 50 * 1024 * 1024;
  EXPECT_EQ(l2FlushBytes(h100), size_t(100) * 1024 * 1024);
  EXPECT_EQ(l2FlushBytes(DeviceInfo()), size_t(1) << 20);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::U8, DType::U16, DType::U32, DType::I32, DType::U64,
                  DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64,
                  DType::F32Ftz, DType::TF32, DType::TF32Ftz})
    EXPECT_EQ(parseDType(dtypeName(t)), t);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::TF32), 4u);
  EXPECT_FALSE(parseDType("float").has_value());
  EXPECT_TRUE(isFloatingPoint(DType::BF16));
  EXPECT_FALSE(isFloatingPoint(DType::I32));
}

TEST(Status, ExpectedAndMacros) {
  auto half = [](int x) -> Expected<int> {
    if (x % 2)
      return Status::error("odd: " + std::to_string(x));
    return x / 2;
  };
  auto quarter = [&](int x) -> Expected<int> {
    SINKATTN_RT_ASSIGN_OR_RETURN(int h, half(x));
    SINKATTN_RT_ASSIGN_OR_RETURN(int q, half(h));
    return q;
  };
  EXPECT_EQ(*quarter(8), 2);
  Expected<int> bad = quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "odd: 3");
  EXPECT_EQ(Status::error("x").withContext("ctx: ").message(), "ctx: x");
  EXPECT_TRUE(Status().withContext("ctx: ").ok());
}

} // namespace
