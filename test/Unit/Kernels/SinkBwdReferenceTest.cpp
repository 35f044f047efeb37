//===- SinkBwdReferenceTest.cpp - The fp32 GPU reference of the backward
//---===//
//
// The backward's reference kernels (rows, keys, sinks) are what a backward
// kernel will be checked against, so they are tested here without a GPU:
// they build from plain ops into one PTX module with three entries that
// ptxas assembles, and their code, run on the CPU in launch order, matches
// the float64 backward (itself checked against finite differences) for
// GQA, a past, a window, BSHD, varlen with an empty sequence and with more
// queries than keys, fp16 and bf16 sinks. One module compiled for run-time
// shapes takes memref descriptors and the attention's parameters, and runs
// problems of several sizes, windows and causalities.
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

/// A backward problem's inputs as uploaded (bits of the input type; sinks
/// as f32, or bf16 bits) and as float, with a stored O and the exact one.
struct BackwardInputs {
  std::vector<uint16_t> qBits, kBits, vBits, dOBits, oBits, sinkBits;
  std::vector<float> q, k, v, dO, o, sinks;
  std::vector<double> exactO;
  void *sinkData() {
    return sinkBits.empty() ? static_cast<void *>(sinks.data())
                            : static_cast<void *>(sinkBits.data());
  }
};

/// Random inputs from seeds `seed` to `seed + 4`. With `infiniteSink`
/// head 0's sink is -inf: rows that see nothing at all must not turn into
/// NaN, and its dsink is 0. The stored O (in the input type) is 25% off
/// the exact one: the reference must take dS's delta from it and dsinks
/// from its own O, which it also writes out.
BackwardInputs randomBackwardInputs(const rt::SinkAttentionShape &shape,
                                    rt::DType dtype, rt::DType sinkDtype,
                                    uint64_t seed, bool infiniteSink) {
  auto rounded = [&](std::vector<float> values, std::vector<uint16_t> &bits) {
    bits = dtype == rt::DType::BF16 ? rt::toBf16(values) : rt::toHalf(values);
    return dtype == rt::DType::BF16 ? rt::fromBf16(bits) : rt::fromHalf(bits);
  };
  BackwardInputs in;
  in.q =
      rounded(rt::randomNormal(shape.qElements(), seed, 0.f, 1.5f), in.qBits);
  in.k = rounded(rt::randomNormal(shape.kvElements(), seed + 1, 0.f, 1.5f),
                 in.kBits);
  in.v = rounded(rt::randomUniform(shape.kvElements(), seed + 2), in.vBits);
  in.dO = rounded(rt::randomUniform(shape.qElements(), seed + 3), in.dOBits);
  in.sinks = rt::randomUniform(size_t(shape.heads), seed + 4, -1.f, 3.f);
  if (infiniteSink)
    in.sinks[0] = -INFINITY;
  if (sinkDtype == rt::DType::BF16) {
    in.sinkBits = rt::toBf16(in.sinks);
    in.sinks = rt::fromBf16(in.sinkBits);
  }
  std::vector<double> exactLse;
  rt::Status forward = rt::sinkAttentionForward(shape, in.q, in.k, in.v,
                                                in.sinks, in.exactO, exactLse);
  EXPECT_TRUE(forward.ok()) << forward.message();
  std::vector<float> scaledO(in.exactO.size());
  for (size_t e = 0; e < in.exactO.size(); ++e)
    scaledO[e] = float(1.25 * in.exactO[e]);
  in.o = rounded(scaledO, in.oBits);
  return in;
}

/// The reference's outputs and scratch, poisoned: an element that no
/// kernel writes stays NaN and fails the comparison.
struct BackwardOutputs {
  explicit BackwardOutputs(const rt::SinkAttentionShape &shape)
      : dq(shape.qElements(), NAN), dk(shape.kvElements(), NAN),
        dv(shape.kvElements(), NAN), dsinks(size_t(shape.heads), NAN),
        refO(shape.qElements(), NAN), lse(size_t(shape.rows()), NAN),
        delta(size_t(shape.rows()), NAN), terms(size_t(shape.rows()), NAN) {}
  std::vector<float> dq, dk, dv, dsinks, refO, lse, delta, terms;
};

/// dq, dk, dv, dsinks and the reference's O against the float64 backward
/// and forward; the gradients must be far from zero and every finite sink
/// must matter, so that the comparison is not vacuous.
void expectMatchesFloat64Backward(const rt::SinkAttentionShape &shape,
                                  const BackwardInputs &in,
                                  const BackwardOutputs &out,
                                  bool infiniteSink) {
  rt::SinkAttentionGradients expected;
  rt::Status st = rt::sinkAttentionBackward(shape, in.q, in.k, in.v, in.sinks,
                                            in.dO, expected, &in.o);
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
  compare("dq", out.dq, expected.dq);
  compare("dk", out.dk, expected.dk);
  compare("dv", out.dv, expected.dv);
  compare("dsinks", out.dsinks, expected.dsinks);
  compare("o", out.refO, in.exactO);
  EXPECT_GT(largest, 0.1);
  for (size_t h = 0; h < expected.dsinks.size(); ++h)
    if (infiniteSink && h == 0)
      EXPECT_EQ(expected.dsinks[h], 0.0);
    else
      EXPECT_GT(std::fabs(expected.dsinks[h]), 1e-3);
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

    bool infiniteSink = config.seqQ > config.seqKv;
    BackwardInputs in = randomBackwardInputs(
        shape, config.dtype, config.sinkDtype, seed, infiniteSink);
    seed += 10;
    BackwardOutputs out(shape);
    std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end());
    std::vector<int32_t> cuK(shape.cuSeqlensKv.begin(), shape.cuSeqlensKv.end());
    for (const auto &[name, blocks] : kernelsInOrder) {
      auto address = (*engine)->lookup("host_" + name);
      ASSERT_TRUE(bool(address)) << llvm::toString(address.takeError());
      void *args[] = {
          in.qBits.data(),  in.kBits.data(),   in.vBits.data(), in.sinkData(),
          in.dOBits.data(), in.oBits.data(),   out.dq.data(),   out.dk.data(),
          out.dv.data(),    out.dsinks.data(), out.refO.data(), out.lse.data(),
          out.delta.data(), out.terms.data(),  cuQ.data(),      cuK.data()};
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
    expectMatchesFloat64Backward(shape, in, out, infiniteSink);
  }
}

/// A varlen backward reference compiled for run-time shapes: bf16, D 64.
KernelConfig runTimeConfig() {
  KernelConfig config = varlenConfigOf(4, 2, {3, 5}, {4, 5}, 64, 0);
  config.runTimeShapes = true;
  return config;
}

TEST_F(SinkBwdReferenceTest, RunTimeShapesTakeDescriptorsAndParameters) {
  auto module = kernels::buildSinkBwdReference(context, runTimeConfig());
  ASSERT_TRUE(succeeded(module));
  unsigned kernelCount = 0;
  (**module).walk([&](gpu::GPUFuncOp f) {
    if (!f.isKernel())
      return;
    ++kernelCount;
    // The 16 buffers of every size, then heads, kv_heads, window, causal
    // and scale.
    ASSERT_EQ(f.getNumArguments(), 21u);
    for (unsigned i = 0; i < 16; ++i) {
      auto type = cast<MemRefType>(f.getArgument(i).getType());
      EXPECT_EQ(type.getShape(), (ArrayRef<int64_t>{ShapedType::kDynamic}))
          << i;
    }
    for (unsigned i = 16; i < 20; ++i)
      EXPECT_TRUE(f.getArgument(i).getType().isInteger(32)) << i;
    EXPECT_TRUE(f.getArgument(20).getType().isF32());
  });
  EXPECT_EQ(kernelCount, 3u);

  // Descriptors whatever the target says: five parameters per buffer.
  PTXTargetOptions target;
  target.barePointers = true;
  FailureOr<std::string> ptx =
      kernels::compileSinkBwdReferencePTX(context, runTimeConfig(), target);
  ASSERT_TRUE(succeeded(ptx));
  for (const char *entry :
       {rt::kSinkBwdReferenceRowsEntry, rt::kSinkBwdReferenceKeysEntry,
        rt::kSinkBwdReferenceSinksEntry}) {
    EXPECT_EQ(count(*ptx, ".entry " + std::string(entry) + "("), 1u);
    EXPECT_EQ(count(*ptx, ".param .f32 " + std::string(entry) + "_param_84"),
              1u)
        << entry;
    EXPECT_EQ(count(*ptx, std::string(entry) + "_param_85"), 0u) << entry;
  }
  EXPECT_EQ(count(*ptx, "__nv_"), 0u);
  const char *ptxas = "/usr/local/cuda/bin/ptxas";
  if (access(ptxas, X_OK) != 0)
    return;
  std::string base = testing::TempDir() + "sink_bwd_reference_run_time_" +
                     std::to_string(getpid());
  {
    std::ofstream file(base + ".ptx");
    file << *ptx;
  }
  std::string command = std::string(ptxas) + " -arch=sm_90a " + base +
                        ".ptx -o " + base + ".cubin";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::remove((base + ".ptx").c_str());
  std::remove((base + ".cubin").c_str());
}

TEST_F(SinkBwdReferenceTest, OneRunTimeShapeModuleMatchesFloat64Backward) {
  // One module runs problems of other lengths, heads, windows, causality
  // and scales than it was built with, passed as a launch passes them.
  KernelConfig config = runTimeConfig();
  auto module = kernels::buildSinkBwdReference(context, config);
  ASSERT_TRUE(succeeded(module));
  struct Problem {
    int64_t heads, kvHeads;
    std::vector<int64_t> seqlensQ, seqlensKv;
    int64_t window;
    bool causal;
    double scale;
    /// Head 0's sink is -inf (see randomBackwardInputs).
    bool infiniteSink;
  };
  const Problem problems[] = {
      // GQA 2:1: an empty sequence, one of one token, one with more queries
      // than keys.
      {4, 2, {5, 0, 1, 9, 3}, {7, 3, 1, 4, 12}, 0, true, 0.125, true},
      // GQA 4:1 with a window, more rows than one block of threads, an
      // empty sequence and more queries than keys.
      {4, 1, {40, 1, 0, 6}, {50, 1, 2, 2}, 5, true, 0.1, false},
      // Without the causal mask, one head per kv head.
      {2, 2, {4, 7}, {9, 3}, 0, false, 0.2, false},
  };
  std::vector<std::pair<rt::SinkAttentionShape, bool>> shapes;
  // The emulated grids cover the largest problem: the others' spare
  // threads must find no work.
  int64_t rowBlocks = 0, keyBlocks = 0, headBlocks = 0;
  for (const Problem &p : problems) {
    rt::SinkAttentionShape shape;
    shape.layout = rt::AttentionLayout::Varlen;
    shape.batch = int64_t(p.seqlensQ.size());
    shape.heads = p.heads;
    shape.kvHeads = p.kvHeads;
    shape.seqQ = *std::max_element(p.seqlensQ.begin(), p.seqlensQ.end());
    shape.seqKv = *std::max_element(p.seqlensKv.begin(), p.seqlensKv.end());
    shape.headDim = config.headDim;
    shape.window = p.window;
    shape.causal = p.causal;
    shape.scale = p.scale;
    shape.cuSeqlensQ = rt::offsetsOf(p.seqlensQ);
    shape.cuSeqlensKv = rt::offsetsOf(p.seqlensKv);
    rt::Expected<rt::SinkBwdReferenceLaunches> launches =
        rt::sinkBwdReferenceLaunches(shape);
    ASSERT_TRUE(launches.ok()) << launches.message();
    rowBlocks = std::max<int64_t>(rowBlocks, launches->rows.grid.x);
    keyBlocks = std::max<int64_t>(keyBlocks, launches->keys.grid.x);
    headBlocks = std::max<int64_t>(headBlocks, launches->sinks.grid.x);
    shapes.emplace_back(std::move(shape), p.infiniteSink);
  }
  EXPECT_GT(rowBlocks, 1);
  const std::pair<std::string, int64_t> kernelsInOrder[] = {
      {rt::kSinkBwdReferenceRowsEntry, rowBlocks},
      {rt::kSinkBwdReferenceKeysEntry, keyBlocks},
      {rt::kSinkBwdReferenceSinksEntry, headBlocks}};
  ASSERT_TRUE(succeeded(test::emulateOnHost(**module, kernelsInOrder)));
  auto engine = test::jitForHost(**module, /*barePointers=*/false);
  ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());

  uint64_t seed = 71;
  for (const auto &[shape, infiniteSink] : shapes) {
    SCOPED_TRACE("H=" + std::to_string(shape.heads) +
                 " HK=" + std::to_string(shape.kvHeads) + " seqlens_q " +
                 rt::formatLengths(rt::lengthsOf(shape.cuSeqlensQ)) +
                 " seqlens_kv " +
                 rt::formatLengths(rt::lengthsOf(shape.cuSeqlensKv)) +
                 " W=" + std::to_string(shape.window) +
                 (shape.causal ? "" : " non-causal"));
    BackwardInputs in = randomBackwardInputs(
        shape, config.dtype, config.sinkDtype, seed, infiniteSink);
    seed += 10;
    BackwardOutputs out(shape);
    std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end());
    std::vector<int32_t> cuK(shape.cuSeqlensKv.begin(),
                             shape.cuSeqlensKv.end());
    // The arguments exactly as the runner's launch builds them, host
    // addresses in place of device ones.
    rt::KernelArgs args;
    auto buffer = [&](const void *data, uint64_t elements) {
      rt::addReferenceBuffer(args,
                             CUdeviceptr(reinterpret_cast<uintptr_t>(data)),
                             elements, /*descriptor=*/true);
    };
    buffer(in.qBits.data(), shape.qElements());
    buffer(in.kBits.data(), shape.kvElements());
    buffer(in.vBits.data(), shape.kvElements());
    buffer(in.sinkData(), uint64_t(shape.heads));
    buffer(in.dOBits.data(), shape.qElements());
    buffer(in.oBits.data(), shape.qElements());
    for (std::vector<float> *output :
         {&out.dq, &out.dk, &out.dv, &out.dsinks, &out.refO, &out.lse,
          &out.delta, &out.terms})
      buffer(output->data(), output->size());
    buffer(cuQ.data(), cuQ.size());
    buffer(cuK.data(), cuK.size());
    rt::addReferenceParameters(args, shape);
    // Each buffer's five descriptor fields, then the five scalars.
    ASSERT_EQ(args.size(), 16u * 5 + 5);
    for (const auto &[name, blocks] : kernelsInOrder) {
      llvm::Error error = (*engine)->invokePacked(
          "host_" + name, {args.kernelParams(), args.size()});
      ASSERT_FALSE(error) << llvm::toString(std::move(error));
    }
    expectMatchesFloat64Backward(shape, in, out, infiniteSink);
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
  KernelConfig runTimeBhsd = configOf(1, 1, 1, 8, 8, 64, 0);
  runTimeBhsd.runTimeShapes = true;
  EXPECT_TRUE(failed(kernels::buildSinkBwdReference(context, runTimeBhsd)));
  EXPECT_NE(
      text.find("sink-bwd reference: run-time shapes need --layout varlen"),
      std::string::npos);
}

} // namespace
