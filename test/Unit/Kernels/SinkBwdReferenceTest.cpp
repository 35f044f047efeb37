//===- SinkBwdReferenceTest.cpp - The fp32 GPU reference of the backward ---===//
//
// The backward's reference kernels (rows, keys, sinks) are what a backward
// kernel will be checked against, so they are tested here without a GPU:
// they build from plain ops into one PTX module with three entries that
// ptxas assembles, and their code, run on the CPU in launch order, matches
// the float64 backward (itself checked against finite differences) for
// GQA, a past, a window, BSHD, varlen with an empty sequence and with more
// queries than keys, fp16 and bf16 sinks.
//
//===----------------------------------------------------------------------===//

#include "../../../lib/Kernels/KernelBuilders.h"
#include "HostEmulation.h"
#include "ReferenceTestSupport.h"

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Random.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

using namespace mlir;
using namespace sinkattn;
using sinkattn::test::configOf;
using sinkattn::test::count;
using sinkattn::test::varlenConfigOf;

namespace {

class SinkBwdReferenceTest : public test::KernelContextTest {};

TEST_F(SinkBwdReferenceTest, ThreeKernelsInOnePtxModule) {
  for (const KernelConfig &config :
       {configOf(2, 4, 2, 64, 128, 128, 0),
        varlenConfigOf(4, 1, {5, 0, 9}, {7, 3, 9}, 64, 16)}) {
    auto module = kernels::buildSinkBwdReference(context, config);
    ASSERT_TRUE(succeeded(module));
    std::vector<std::string> names;
    (**module).walk([&](gpu::GPUFuncOp f) {
      if (f.isKernel()) {
        names.push_back(f.getName().str());
        // q k v sinks do o dq dk dv dsinks refO lse delta terms [cu_q cu_kv]
        EXPECT_EQ(f.getNumArguments(), config.seqlensQ.empty() ? 14u : 16u);
      }
    });
    EXPECT_EQ(names, (std::vector<std::string>{rt::kSinkBwdReferenceRowsEntry,
                                               rt::kSinkBwdReferenceKeysEntry,
                                               rt::kSinkBwdReferenceSinksEntry}));
    PTXTargetOptions target;
    target.barePointers = true;
    FailureOr<std::map<std::string, std::string>> ptx =
        compileToPTX(**module, target);
    ASSERT_TRUE(succeeded(ptx));
    ASSERT_EQ(ptx->size(), 1u);
    const std::string &text = ptx->begin()->second;
    for (const std::string &name : names)
      EXPECT_EQ(count(text, ".entry " + name + "("), 1u) << name;
    EXPECT_EQ(count(text, "__nv_"), 0u);
    EXPECT_GE(count(text, "ex2.approx.f32"), 1u);
    const char *ptxas = "/usr/local/cuda/bin/ptxas";
    if (access(ptxas, X_OK) != 0)
      continue;
    std::string base = testing::TempDir() + "sink_bwd_reference_" +
                       std::to_string(getpid());
    {
      std::ofstream file(base + ".ptx");
      file << text;
    }
    std::string command = std::string(ptxas) + " -arch=sm_90a " + base +
                          ".ptx -o " + base + ".cubin";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
    std::remove((base + ".ptx").c_str());
    std::remove((base + ".cubin").c_str());
  }
}

TEST_F(SinkBwdReferenceTest, KernelCodeMatchesFloat64BackwardOnCpu) {
  KernelConfig bshd = configOf(2, 4, 2, 13, 21, 16, 6, rt::DType::F16);
  bshd.layout = rt::AttentionLayout::BSHD;
  KernelConfig bf16Sinks = configOf(1, 2, 2, 9, 4, 8, 0);
  bf16Sinks.sinkDtype = rt::DType::BF16;
  const KernelConfig configs[] = {
      // GQA 2:1 with a past, more rows than one block of threads.
      configOf(2, 4, 2, 20, 33, 16, 0),
      // BSHD, fp16, window 6.
      bshd,
      // More queries than keys, bf16 sinks.
      bf16Sinks,
      // Varlen: an empty sequence, one with more queries than keys, a
      // window.
      varlenConfigOf(4, 2, {5, 0, 9, 3}, {7, 3, 4, 12}, 16, 5),
  };
  uint64_t seed = 3;
  for (const KernelConfig &config : configs) {
    SCOPED_TRACE(std::string(rt::layoutName(config.layout)) + " B=" +
                 std::to_string(config.batch) + " H=" +
                 std::to_string(config.heads) + " SQ=" +
                 std::to_string(config.seqQ) + " SKV=" +
                 std::to_string(config.seqKv) + " W=" +
                 std::to_string(config.window));
    rt::SinkAttentionShape shape = kernels::sinkAttentionShape(config);
    auto module = kernels::buildSinkBwdReference(context, config);
    ASSERT_TRUE(succeeded(module));
    rt::Expected<rt::SinkBwdReferenceLaunches> launches =
        rt::sinkBwdReferenceLaunches(shape);
    ASSERT_TRUE(launches.ok()) << launches.message();
    const std::pair<std::string, int64_t> kernelsInOrder[] = {
        {rt::kSinkBwdReferenceRowsEntry, launches->rows.grid.x},
        {rt::kSinkBwdReferenceKeysEntry, launches->keys.grid.x},
        {rt::kSinkBwdReferenceSinksEntry, launches->sinks.grid.x}};
    ASSERT_TRUE(succeeded(test::emulateOnHost(**module, kernelsInOrder)));
    auto engine = test::jitForHost(**module);
    ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());

    // Inputs rounded to the kernel's types.
    auto rounded = [&](std::vector<float> values, std::vector<uint16_t> &bits) {
      bits = config.dtype == rt::DType::BF16 ? rt::toBf16(values)
                                             : rt::toHalf(values);
      return config.dtype == rt::DType::BF16 ? rt::fromBf16(bits)
                                             : rt::fromHalf(bits);
    };
    std::vector<uint16_t> qBits, kBits, vBits, dOBits, sinkBits;
    std::vector<float> q = rounded(rt::randomNormal(shape.qElements(), seed, 0.f, 1.5f), qBits);
    std::vector<float> k = rounded(rt::randomNormal(shape.kvElements(), seed + 1, 0.f, 1.5f), kBits);
    std::vector<float> v = rounded(rt::randomUniform(shape.kvElements(), seed + 2), vBits);
    std::vector<float> dO = rounded(rt::randomUniform(shape.qElements(), seed + 3), dOBits);
    std::vector<float> sinks = rt::randomUniform(size_t(shape.heads), seed + 4, -1.f, 3.f);
    // With more queries than keys, head 0's sink is -inf: rows that see
    // nothing at all must not turn into NaN, and its dsink is 0.
    bool infiniteSink = config.seqQ > config.seqKv;
    if (infiniteSink)
      sinks[0] = -INFINITY;
    if (config.sinkDtype == rt::DType::BF16) {
      sinkBits = rt::toBf16(sinks);
      sinks = rt::fromBf16(sinkBits);
    }
    // A stored O (in the input type) 25% off the exact one: the reference
    // must take dS's delta from it and dsinks from its own O, which it
    // also writes out.
    std::vector<double> exactO, exactLse;
    ASSERT_TRUE(
        rt::sinkAttentionForward(shape, q, k, v, sinks, exactO, exactLse).ok());
    std::vector<float> scaledO(exactO.size());
    for (size_t e = 0; e < exactO.size(); ++e)
      scaledO[e] = float(1.25 * exactO[e]);
    std::vector<uint16_t> oBits;
    std::vector<float> o = rounded(scaledO, oBits);
    seed += 10;
    void *sinkData = config.sinkDtype == rt::DType::BF16
                         ? static_cast<void *>(sinkBits.data())
                         : static_cast<void *>(sinks.data());
    std::vector<float> dq(shape.qElements(), NAN), dk(shape.kvElements(), NAN),
        dv(shape.kvElements(), NAN), dsinks(size_t(shape.heads), NAN),
        refO(shape.qElements(), NAN),
        lse(size_t(shape.rows()), NAN), delta(size_t(shape.rows()), NAN),
        terms(size_t(shape.rows()), NAN);
    std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end());
    std::vector<int32_t> cuK(shape.cuSeqlensKv.begin(), shape.cuSeqlensKv.end());
    for (const auto &[name, blocks] : kernelsInOrder) {
      auto address = (*engine)->lookup("host_" + name);
      ASSERT_TRUE(bool(address)) << llvm::toString(address.takeError());
      void *args[] = {qBits.data(), kBits.data(), vBits.data(), sinkData,
                      dOBits.data(), oBits.data(), dq.data(), dk.data(),
                      dv.data(), dsinks.data(), refO.data(), lse.data(),
                      delta.data(), terms.data(), cuQ.data(), cuK.data()};
      using Ptr = void *;
      if (shape.varlen())
        reinterpret_cast<void (*)(Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr,
                                  Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr)>(
            *address)(args[0], args[1], args[2], args[3], args[4], args[5],
                      args[6], args[7], args[8], args[9], args[10], args[11],
                      args[12], args[13], args[14], args[15]);
      else
        reinterpret_cast<void (*)(Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr, Ptr,
                                  Ptr, Ptr, Ptr, Ptr, Ptr)>(*address)(
            args[0], args[1], args[2], args[3], args[4], args[5], args[6],
            args[7], args[8], args[9], args[10], args[11], args[12], args[13]);
    }

    rt::SinkAttentionGradients expected;
    rt::Status st =
        rt::sinkAttentionBackward(shape, q, k, v, sinks, dO, expected, &o);
    ASSERT_TRUE(st.ok()) << st.message();
    double largest = 0;
    int reported = 0;
    auto compare = [&](const char *name, const std::vector<float> &got,
                       const std::vector<double> &want) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t e = 0; e < got.size(); ++e) {
        largest = std::max(largest, std::fabs(want[e]));
        if (!(std::fabs(got[e] - want[e]) <= 1e-4 + 1e-4 * std::fabs(want[e])) &&
            reported++ < 8)
          ADD_FAILURE() << name << "[" << e << "] = " << got[e]
                        << ", float64 backward " << want[e];
      }
    };
    compare("dq", dq, expected.dq);
    compare("dk", dk, expected.dk);
    compare("dv", dv, expected.dv);
    compare("dsinks", dsinks, expected.dsinks);
    compare("o", refO, exactO);
    // Not vacuous: gradients far from zero, sinks that matter.
    EXPECT_GT(largest, 0.1);
    for (size_t h = 0; h < expected.dsinks.size(); ++h)
      if (infiniteSink && h == 0)
        EXPECT_EQ(expected.dsinks[h], 0.0);
      else
        EXPECT_GT(std::fabs(expected.dsinks[h]), 1e-3);
  }
}

TEST_F(SinkBwdReferenceTest, RejectsUnsupportedConfigs) {
  std::string text;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    text += d.str() + "\n";
    return success();
  });
  EXPECT_TRUE(failed(kernels::buildSinkBwdReference(
      context, configOf(1, 1, 1, 8, 8, 64, 0, rt::DType::F32))));
  EXPECT_NE(text.find("sink-bwd reference: --dtype f32 is not supported"),
            std::string::npos);
  EXPECT_TRUE(failed(
      kernels::buildSinkBwdReference(context, configOf(1, 6, 4, 8, 8, 64, 0))));
  EXPECT_NE(text.find("sink-bwd reference: kv_heads 4 does not divide heads 6"),
            std::string::npos);
}

} // namespace
