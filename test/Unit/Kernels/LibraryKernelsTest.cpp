//===- LibraryKernelsTest.cpp - The kernel library's kernels on demand ----===//
//
// kernels::compileLibraryKernel compiles what make-kernel-library.sh
// compiles, and an rt::AttentionLibrary given it as its compiler runs a
// variant it lacks (on the tests' CUDA driver without a GPU,
// FakeCudaDriver.cpp: what a call loads and launches, read from its log);
// without a compiler the call is refused, saying so.
//
//===----------------------------------------------------------------------===//

#include "SinkAttn/Kernels/Kernels.h"

#include "gtest/gtest.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

using namespace sinkattn;
using namespace sinkattn::rt;

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "'" << (haystack) << "' does not contain '" << (needle) << "'"

namespace {
SinkFwdVariant variant(DType dtype, int64_t headDim, bool causal = true,
                       bool windowed = false) {
  SinkFwdVariant v;
  v.dtype = dtype;
  v.headDim = headDim;
  v.causal = causal;
  v.windowed = windowed;
  return v;
}

/// The fake driver's log lines that start with `prefix`, since the last
/// clear.
std::vector<std::string> logLines(const std::string &prefix) {
  void *handle = dlopen(SINKATTN_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
  auto text = reinterpret_cast<const char *(*)()>(dlsym(handle, "fakeCudaLog"));
  std::vector<std::string> lines;
  std::istringstream in(text());
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0)
      lines.push_back(line);
  return lines;
}

void clearLog() {
  void *handle = dlopen(SINKATTN_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_NOLOAD);
  reinterpret_cast<void (*)()>(dlsym(handle, "fakeCudaClearLog"))();
}
} // namespace

TEST(LibraryKernels, CompilesTheLibrarysForms) {
  Expected<Bundle> plain =
      kernels::compileLibraryKernel(variant(DType::F16, 64), "plain", false);
  ASSERT_TRUE(plain.ok()) << plain.message();
  Expected<SinkFwdVariant> served = sinkFwdVariantOf(*plain);
  ASSERT_TRUE(served.ok()) << served.message();
  EXPECT_EQ(served->describe(), "f16 D=64 causal f32 sinks");
  EXPECT_FALSE(plain->ptx.empty());
  EXPECT_EQ(findParam(*plain, "tiles"), nullptr);

  SinkFwdVariant fullBf16Sinks = variant(DType::BF16, 128, /*causal=*/false);
  fullBf16Sinks.sinkDtype = DType::BF16;
  Expected<Bundle> persistent =
      kernels::compileLibraryKernel(fullBf16Sinks, "overlap", true);
  ASSERT_TRUE(persistent.ok()) << persistent.message();
  EXPECT_EQ(sinkFwdVariantOf(*persistent)->describe(),
            "bf16 D=128 non-causal bf16 sinks");
  EXPECT_EQ(std::get<std::string>(persistent->config.at("schedule")),
            "overlap");
  EXPECT_NE(findParam(*persistent, "tiles"), nullptr);
  EXPECT_EQ(std::get<int64_t>(persistent->config.at("persistent_blocks")),
            kPersistentSMs);

  Expected<Bundle> windowed = kernels::compileLibraryKernel(
      variant(DType::BF16, 128, true, /*windowed=*/true), "ws", false);
  ASSERT_TRUE(windowed.ok()) << windowed.message();
  EXPECT_TRUE(sinkFwdVariantOf(*windowed)->windowed);

  // What the compiler does not support, in its words.
  Expected<Bundle> odd =
      kernels::compileLibraryKernel(variant(DType::BF16, 96), "ws", false);
  ASSERT_FALSE(odd.ok());
  EXPECT_CONTAINS(odd.message(), "96");
}

TEST(LibraryKernels, ALibraryCompilesWhatItLacks) {
  Expected<std::shared_ptr<const CudaDriver>> driver =
      CudaDriver::load(SINKATTN_FAKE_CUDA_DRIVER);
  ASSERT_TRUE(driver.ok()) << driver.message();
  Expected<Context> context = Context::create(*driver, 0);
  ASSERT_TRUE(context.ok()) << context.message();

  // A library of one kernel: bf16 D 64 causal.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 ("sinkattn-on-demand-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Expected<Bundle> held =
      kernels::compileLibraryKernel(variant(DType::BF16, 64), "plain", false);
  ASSERT_TRUE(held.ok()) << held.message();
  ASSERT_TRUE(writeBundle((dir / "fwd").string(), *held).ok());
  Expected<AttentionLibrary> library =
      AttentionLibrary::open(*context, dir.string());
  ASSERT_TRUE(library.ok()) << library.message();

  // An f16 D 128 call, B 1, 300 x 300 tokens, H 4 over HK 2, no sinks.
  const int64_t t = 300, h = 4, hk = 2, d = 128;
  std::vector<DeviceBuffer> memory;
  auto allocate = [&](size_t bytes) {
    Expected<DeviceBuffer> buffer = DeviceBuffer::allocate(*context, bytes);
    EXPECT_TRUE(buffer.ok()) << buffer.message();
    memory.push_back(buffer.take());
    return memory.back().address();
  };
  VarlenForwardArgs args;
  args.q = {allocate(t * h * d * 2), DType::F16, {t, h, d}, {}};
  args.k = {allocate(t * hk * d * 2), DType::F16, {t, hk, d}, {}};
  args.v = {allocate(t * hk * d * 2), DType::F16, {t, hk, d}, {}};
  args.out = {allocate(t * h * d * 2), DType::F16, {t, h, d}, {}};
  args.lse = {allocate(h * t * 4), DType::F32, {h, t}, {}};
  CUdeviceptr offsets = allocate(2 * 4);
  args.cuSeqlensQ = args.cuSeqlensKv = {offsets, DType::I32, {2}, {}};
  args.maxSeqlenQ = args.maxSeqlenKv = t;

  Status refused = library->forwardVarlen(args, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_CONTAINS(refused.message(),
                  "no kernel for f16 D=128 causal f32 sinks in the kernel "
                  "library, and this program has no SinkAttn compiler to "
                  "build one on demand");

  library->setCompiler(kernels::libraryKernelCompiler());
  clearLog();
  Status ran = library->forwardVarlen(args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_EQ(logLines("load module"),
            std::vector<std::string>{"load module ptx"});
  EXPECT_EQ(logLines("launch").size(), 1u);
  EXPECT_EQ(library->compiledKernels(), 1u);
  // Compiled once: the next call of the variant, of another shape, loads
  // nothing.
  args.maxSeqlenQ = 200;
  clearLog();
  ran = library->forwardVarlen(args, nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message();
  EXPECT_TRUE(logLines("load module").empty());
  EXPECT_EQ(library->compiledKernels(), 1u);
  fs::remove_all(dir);
}
