//===- KernelValidationTest.cpp - Refusals a library caller can reach -----===//
//
// The kernel builders refuse configurations the runner's flag parsing
// already keeps out; a program that fills KernelConfig itself reaches them,
// so each says which value is wrong.
//
//===----------------------------------------------------------------------===//

#include "ReferenceTestSupport.h"

#include "SinkAttn/Kernels/Kernels.h"

#include "mlir/IR/Diagnostics.h"

#include <gtest/gtest.h>

#include <functional>

using namespace mlir;
using namespace sinkattn;
using sinkattn::test::configOf;

namespace {

class KernelValidationTest : public test::KernelContextTest {
protected:
  /// The diagnostic buildKernel reports for `config`, or "" if it builds.
  std::string refusal(const KernelConfig &config) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
      message = diagnostic.str();
      return success();
    });
    if (succeeded(buildKernel(context, config)))
      return "";
    return message;
  }
};

TEST_F(KernelValidationTest, EachRefusalNamesTheValue) {
  struct Case {
    const char *kernel;
    std::function<void(KernelConfig &)> set;
    const char *message;
  };
  const Case cases[] = {
      {"sink-fwd", [](KernelConfig &c) { c.batch = 0; },
       "sink-fwd: batch, heads, kv-heads, seq-q and seq-kv must be positive, "
       "got B=0"},
      {"sink-bwd", [](KernelConfig &c) { c.packGqa = true; },
       "sink-bwd: --pack-gqa applies to sink-fwd only"},
      {"sink-fwd",
       [](KernelConfig &c) {
         c.batch = 8;
         c.heads = 64;
         c.seqQ = 65536;
         c.seqKv = 65536;
       },
       "sink-fwd: the tensors have more than 2^31-1 elements"},
      {"sink-fwd", [](KernelConfig &c) { c.schedule = "fast"; },
       "sink-fwd: unknown schedule 'fast' (auto, ws, overlap or plain)"},
      {"sink-bwd", [](KernelConfig &c) { c.schedule = "fast"; },
       "sink-bwd: unknown schedule 'fast' (auto or plain)"},
      {"gemm", [](KernelConfig &c) { c.schedule = "fast"; },
       "gemm: unknown schedule 'fast' (auto, ws or plain)"},
      {"gemm", [](KernelConfig &c) { c.copyEngine = "dma"; },
       "gemm: unknown copy engine 'dma' (tma, cp-async or mixed)"},
  };
  for (const Case &refused : cases) {
    KernelConfig config = configOf(1, 4, 2, 256, 256, 128, 0);
    config.kernel = refused.kernel;
    if (config.kernel == "gemm") {
      config.m = 256;
      config.n = 256;
      config.k = 128;
    }
    refused.set(config);
    EXPECT_EQ(refusal(config).rfind(refused.message, 0), 0u)
        << refused.message << "\n  got: " << refusal(config);
  }
}

} // namespace
