//===- SinkFwdReferenceTest.cpp - The fp32 GPU reference of sink-fwd ------===//
//
// The reference kernel is what every sink-fwd check trusts, so it is tested
// here without a GPU in two ways:
//   * it builds from plain gpu/scf/arith/memref ops (no tile dialect), goes
//     through our PTX pipeline to PTX with the expected entry, ABI and
//     approximations, and (where ptxas is installed) assembles for sm_90a;
//   * its code runs on the CPU: the kernel body is moved into loops over
//     (block, thread), exp2/log2 replace the NVVM approximations, the result
//     is JIT-compiled for the host and compared with the float64 reference
//     of SinkAttn/Runtime/AttentionReference.h on small problems covering
//     GQA, causal offsets, windows and both input types.
//
//===----------------------------------------------------------------------===//

#include "../../../lib/Kernels/KernelBuilders.h"
#include "HostEmulation.h"
#include "ReferenceTestSupport.h"

#include "SinkAttn/Runtime/AttentionReference.h"
#include "SinkAttn/Runtime/Float16.h"
#include "SinkAttn/Runtime/Random.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/TargetSelect.h"

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

class SinkFwdReferenceTest : public test::KernelContextTest {
protected:
  /// Runs `body`, returning the diagnostics it emitted.
  template <typename Fn> std::string diagnosticsOf(Fn body) {
    std::string text;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      text += d.str() + "\n";
      return success();
    });
    body();
    return text;
  }
};

KernelConfig bshdConfigOf(KernelConfig config) {
  config.layout = rt::AttentionLayout::BSHD;
  return config;
}

rt::SinkAttentionShape shapeOf(const KernelConfig &c) {
  return kernels::sinkAttentionShape(c);
}

TEST_F(SinkFwdReferenceTest, PlainSimtModule) {
  auto module = kernels::buildSinkFwdReference(
      context, configOf(2, 4, 2, 64, 128, 128, 0));
  ASSERT_TRUE(succeeded(module));
  gpu::GPUFuncOp kernel;
  bool onlyPlainOps = true;
  (**module).walk([&](Operation *op) {
    if (auto f = dyn_cast<gpu::GPUFuncOp>(op))
      kernel = f;
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if (!llvm::is_contained({StringRef("builtin"), StringRef("gpu"),
                             StringRef("scf"), StringRef("arith"),
                             StringRef("memref"), StringRef("llvm")},
                            ns)) {
      ADD_FAILURE() << "unexpected op " << op->getName().getStringRef().str();
      onlyPlainOps = false;
    }
  });
  EXPECT_TRUE(onlyPlainOps);
  ASSERT_TRUE(kernel);
  EXPECT_EQ(kernel.getName(), rt::kSinkFwdReferenceEntry);
  EXPECT_TRUE(kernel.isKernel());
  // q, k, v, sinks, o, lse, flat (one body serves every layout), with the
  // config's sizes.
  ASSERT_EQ(kernel.getNumArguments(), 6u);
  auto type = [&](unsigned i) {
    return cast<MemRefType>(kernel.getArgument(i).getType());
  };
  EXPECT_EQ(type(0).getShape(), (ArrayRef<int64_t>{2 * 4 * 64 * 128}));
  EXPECT_TRUE(type(0).getElementType().isBF16());
  EXPECT_EQ(type(1).getShape(), (ArrayRef<int64_t>{2 * 2 * 128 * 128}));
  EXPECT_EQ(type(2).getShape(), (ArrayRef<int64_t>{2 * 2 * 128 * 128}));
  EXPECT_EQ(type(3).getShape(), (ArrayRef<int64_t>{4}));
  EXPECT_TRUE(type(3).getElementType().isF32());
  EXPECT_EQ(type(4).getShape(), (ArrayRef<int64_t>{2 * 4 * 64 * 128}));
  EXPECT_TRUE(type(4).getElementType().isF32());
  EXPECT_EQ(type(5).getShape(), (ArrayRef<int64_t>{2 * 4 * 64}));

  // Varlen adds the two i32 offset vectors (B + 1 each).
  auto varlen = kernels::buildSinkFwdReference(
      context, varlenConfigOf(4, 2, {5, 0, 9}, {7, 3, 9}, 64, 0));
  ASSERT_TRUE(succeeded(varlen));
  (**varlen).walk([&](gpu::GPUFuncOp f) { kernel = f; });
  ASSERT_EQ(kernel.getNumArguments(), 8u);
  EXPECT_EQ(type(0).getShape(), (ArrayRef<int64_t>{14 * 4 * 64}));
  EXPECT_EQ(type(1).getShape(), (ArrayRef<int64_t>{19 * 2 * 64}));
  EXPECT_EQ(type(5).getShape(), (ArrayRef<int64_t>{4 * 14}));
  EXPECT_EQ(type(6).getShape(), (ArrayRef<int64_t>{4}));
  EXPECT_TRUE(type(6).getElementType().isInteger(32));
  EXPECT_EQ(type(7).getShape(), (ArrayRef<int64_t>{4}));
}

TEST_F(SinkFwdReferenceTest, CompilesToPTX) {
  for (const KernelConfig &config :
       {configOf(1, 8, 2, 256, 256, 128, 0),
        configOf(2, 4, 4, 100, 300, 64, 32, rt::DType::F16)}) {
    FailureOr<std::string> ptx =
        kernels::compileSinkFwdReferencePTX(context, config, PTXTargetOptions());
    ASSERT_TRUE(succeeded(ptx));
    EXPECT_EQ(count(*ptx, ".entry sink_fwd_reference("), 1u);
    EXPECT_EQ(count(*ptx, ".target sm_90a"), 1u);
    // Bare pointers: exactly six .u64 parameters.
    EXPECT_EQ(count(*ptx, ".param .u64"), 6u);
    EXPECT_EQ(count(*ptx, "sink_fwd_reference_param_6"), 0u);
    // Full-range approximations, no flush-to-zero, no libdevice calls.
    EXPECT_GE(count(*ptx, "ex2.approx.f32"), 2u);
    EXPECT_EQ(count(*ptx, "lg2.approx.f32"), 1u);
    EXPECT_EQ(count(*ptx, ".ftz"), 0u);
    EXPECT_EQ(count(*ptx, "__nv_"), 0u);
    EXPECT_EQ(count(*ptx, "call"), 0u);

    const char *ptxas = "/usr/local/cuda/bin/ptxas";
    if (access(ptxas, X_OK) != 0)
      continue;
    std::string base = testing::TempDir() + "sink_fwd_reference_" +
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
}

TEST_F(SinkFwdReferenceTest, RejectsUnsupportedConfigs) {
  auto error = [&](const KernelConfig &config) {
    return diagnosticsOf([&] {
      EXPECT_TRUE(failed(kernels::buildSinkFwdReference(context, config)));
    });
  };
  EXPECT_NE(error(configOf(1, 6, 4, 8, 8, 64, 0)).find(
                "sink-fwd reference: kv_heads 4 does not divide heads 6"),
            std::string::npos);
  KernelConfig badOffsets = varlenConfigOf(1, 1, {4, 9}, {4, 9}, 64, 0);
  badOffsets.seqQ = 8; // below the longest sequence
  EXPECT_NE(error(badOffsets).find(
                "cu_seqlens_q: sequence 1 has length 9 > seq_q 8"),
            std::string::npos);
  KernelConfig lengthsWithoutVarlen = configOf(1, 1, 1, 8, 8, 64, 0);
  lengthsWithoutVarlen.seqlensQ = lengthsWithoutVarlen.seqlensKv = {8};
  EXPECT_NE(error(lengthsWithoutVarlen)
                .find("sequence offsets need the varlen layout, not bhsd"),
            std::string::npos);
  EXPECT_NE(error(configOf(1, 1, 1, 8, 8, 64, 0, rt::DType::F32))
                .find("--dtype f32 is not supported"),
            std::string::npos);
  EXPECT_NE(error(configOf(1, 1, 1, 8, 8, 512, 0)).find("head_dim 512"),
            std::string::npos);
  EXPECT_NE(error(configOf(1, 1, 1, 8, 8, 64, -2)).find("window must be"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// Running the kernel's code on the CPU
//===----------------------------------------------------------------------===//

/// Inputs as uploaded (bits of the input type) and as float.
struct Inputs {
  std::vector<uint16_t> q, k, v;
  std::vector<float> qf, kf, vf, sinks;
};

Inputs randomInputs(const rt::SinkAttentionShape &s, rt::DType dtype,
                    uint64_t seed) {
  auto round = [&](std::vector<float> values, std::vector<uint16_t> &bits,
                   std::vector<float> &asFloat) {
    bits = dtype == rt::DType::BF16 ? rt::toBf16(values) : rt::toHalf(values);
    asFloat = dtype == rt::DType::BF16 ? rt::fromBf16(bits) : rt::fromHalf(bits);
  };
  Inputs in;
  // Logits with a spread of about 2, so the softmax is far from uniform.
  round(rt::randomNormal(s.qElements(), seed, 0.f, 1.5f), in.q, in.qf);
  round(rt::randomNormal(s.kvElements(), seed + 1, 0.f, 1.5f), in.k, in.kf);
  round(rt::randomUniform(s.kvElements(), seed + 2), in.v, in.vf);
  in.sinks = rt::randomUniform(size_t(s.heads), seed + 3, -1.f, 3.f);
  return in;
}

TEST_F(SinkFwdReferenceTest, KernelCodeMatchesFloat64ReferenceOnCpu) {
  const KernelConfig configs[] = {
      // GQA, right-aligned causal (SQ < SKV), more rows than one block.
      configOf(2, 4, 2, 20, 33, 16, 0),
      // Sliding window, square.
      configOf(1, 3, 1, 40, 40, 8, 5),
      // fp16, window longer than some prefixes, one head per kv head.
      configOf(1, 2, 2, 7, 19, 64, 12, rt::DType::F16),
      // Decode-like: a single query row per head.
      configOf(3, 2, 1, 1, 50, 8, 0),
      // More queries than keys: the first rows attend nothing.
      configOf(2, 2, 1, 9, 4, 8, 0),
      // BSHD, GQA, window.
      bshdConfigOf(configOf(2, 4, 2, 13, 21, 16, 6)),
      // Varlen: an empty sequence, one with more queries than keys, GQA,
      // window; and fp16 without a window.
      varlenConfigOf(4, 2, {5, 0, 9, 3}, {7, 3, 4, 12}, 16, 5),
      [] {
        KernelConfig c = varlenConfigOf(2, 1, {17, 1}, {17, 30}, 8, 0);
        c.dtype = rt::DType::F16;
        return c;
      }(),
  };
  uint64_t seed = 11;
  for (const KernelConfig &config : configs) {
    SCOPED_TRACE(std::string(rt::layoutName(config.layout)) + " B=" +
                 std::to_string(config.batch) + " H=" +
                 std::to_string(config.heads) + " HK=" +
                 std::to_string(config.kvHeads) + " SQ=" +
                 std::to_string(config.seqQ) + " SKV=" +
                 std::to_string(config.seqKv) + " D=" +
                 std::to_string(config.headDim) + " W=" +
                 std::to_string(config.window));
    rt::SinkAttentionShape shape = shapeOf(config);
    auto module = kernels::buildSinkFwdReference(context, config);
    ASSERT_TRUE(succeeded(module));
    rt::Expected<rt::LaunchConfig> launch = rt::sinkFwdReferenceLaunch(shape);
    ASSERT_TRUE(launch.ok());
    ASSERT_TRUE(succeeded(test::emulateOnHost(
        **module, {{rt::kSinkFwdReferenceEntry, int64_t(launch->grid.x)}})));
    auto engine = test::jitForHost(**module);
    ASSERT_TRUE(bool(engine)) << llvm::toString(engine.takeError());
    auto address = (*engine)->lookup(std::string("host_") +
                                     rt::kSinkFwdReferenceEntry);
    ASSERT_TRUE(bool(address)) << llvm::toString(address.takeError());
    Inputs in = randomInputs(shape, config.dtype, seed += 10);
    // With more queries than keys, head 0's sink is -inf: its first rows
    // see nothing at all (O = 0, LSE = -inf, no NaN).
    if (config.seqQ > config.seqKv)
      in.sinks[0] = -INFINITY;
    // Poisoned outputs: a row the kernel skips stays NaN and fails.
    std::vector<float> o(shape.qElements(), NAN), lse(size_t(shape.rows()), NAN);
    if (shape.varlen()) {
      using HostFn = void (*)(void *, void *, void *, void *, void *, void *,
                              void *, void *);
      std::vector<int32_t> cuQ(shape.cuSeqlensQ.begin(), shape.cuSeqlensQ.end());
      std::vector<int32_t> cuK(shape.cuSeqlensKv.begin(),
                               shape.cuSeqlensKv.end());
      reinterpret_cast<HostFn>(*address)(in.q.data(), in.k.data(), in.v.data(),
                                         in.sinks.data(), o.data(), lse.data(),
                                         cuQ.data(), cuK.data());
    } else {
      using HostFn = void (*)(void *, void *, void *, void *, void *, void *);
      reinterpret_cast<HostFn>(*address)(in.q.data(), in.k.data(), in.v.data(),
                                         in.sinks.data(), o.data(), lse.data());
    }

    std::vector<double> refO, refLse;
    rt::Status st = rt::sinkAttentionForward(shape, in.qf, in.kf, in.vf,
                                             in.sinks, refO, refLse);
    ASSERT_TRUE(st.ok()) << st.message();
    // f32 sums of at most 50 terms: far inside the check's 1e-4.
    int reported = 0;
    for (size_t e = 0; e < o.size(); ++e) {
      double diff = std::fabs(o[e] - refO[e]);
      if (!(diff <= 1e-5 + 1e-5 * std::fabs(refO[e])) && reported++ < 5)
        ADD_FAILURE() << "o[" << e << "] = " << o[e] << ", float64 reference "
                      << refO[e];
    }
    for (size_t r = 0; r < lse.size(); ++r)
      if (!(lse[r] == refLse[r] ||
            std::fabs(lse[r] - refLse[r]) <= 1e-5 + 1e-5 * std::fabs(refLse[r])) &&
          reported++ < 10)
        ADD_FAILURE() << "lse[" << r << "] = " << lse[r]
                      << ", float64 reference " << refLse[r];
    // Not vacuous: outputs are far from zero and the sink matters.
    double norm = 0;
    for (double x : refO)
      norm = std::max(norm, std::fabs(x));
    EXPECT_GT(norm, 0.1);
  }
}

} // namespace
