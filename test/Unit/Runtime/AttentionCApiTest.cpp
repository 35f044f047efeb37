//===- AttentionCApiTest.cpp - The C ABI's checks, without a GPU ----------===//

#include "SinkAttn-c/Attention.h"

#include "SinkAttn/Runtime/Attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <thread>

extern "C" void sinkattnLayoutAsC(size_t layout[12]);

using namespace sinkattn::rt;

namespace {

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos)             \
      << "message: " << (haystack)

SinkAttnTensor tensor(uint64_t data, SinkAttnDType dtype,
                      std::initializer_list<int64_t> sizes) {
  SinkAttnTensor t = {};
  t.data = data;
  t.dtype = dtype;
  t.rank = int32_t(sizes.size());
  int32_t d = 0;
  for (int64_t size : sizes)
    t.sizes[d++] = size;
  return t;
}

/// Two sequences, 300 query and 500 key tokens, H 8, HK 2, D 64, f32 sinks.
SinkAttnVarlenForwardArgs validArgs() {
  SinkAttnVarlenForwardArgs a = {};
  a.q = tensor(0x100000000, SINKATTN_DTYPE_BF16, {300, 8, 64});
  a.k = tensor(0x200000000, SINKATTN_DTYPE_BF16, {500, 2, 64});
  a.v = tensor(0x300000000, SINKATTN_DTYPE_BF16, {500, 2, 64});
  a.out = tensor(0x400000000, SINKATTN_DTYPE_BF16, {300, 8, 64});
  a.lse = tensor(0x500000000, SINKATTN_DTYPE_F32, {8, 300});
  a.sinks = tensor(0x600000000, SINKATTN_DTYPE_F32, {8});
  a.cu_seqlens_q = tensor(0x700000000, SINKATTN_DTYPE_I32, {3});
  a.cu_seqlens_k = tensor(0x800000000, SINKATTN_DTYPE_I32, {3});
  a.max_seqlen_q = 200;
  a.max_seqlen_k = 400;
  a.causal = 1;
  return a;
}

/// The message of validating `args` after `edit`, which must be refused.
std::string refusal(void (*edit)(SinkAttnVarlenForwardArgs &)) {
  SinkAttnVarlenForwardArgs a = validArgs();
  edit(a);
  EXPECT_EQ(sinkattnValidateVarlenForward(&a), SINKATTN_ERROR_INVALID_ARGUMENT);
  return sinkattnLastError();
}

TEST(AttentionCApi, Version) {
  EXPECT_EQ(sinkattnApiVersion(), SINKATTN_C_API_VERSION);
}

/// The layout a binding copies (ctypes, for instance): fixed by version 1
/// of the ABI, and the same from C and C++.
TEST(AttentionCApi, StructLayout) {
  size_t layout[12] = {};
  sinkattnLayoutAsC(layout);
  EXPECT_EQ(layout[0], sizeof(SinkAttnTensor));
  EXPECT_EQ(layout[1], sizeof(SinkAttnVarlenForwardArgs));
  EXPECT_EQ(layout[2], offsetof(SinkAttnVarlenForwardArgs, window));
  EXPECT_EQ(layout[3], offsetof(SinkAttnVarlenForwardArgs, softmax_scale));
  EXPECT_EQ(sizeof(SinkAttnTensor), 80u);
  EXPECT_EQ(offsetof(SinkAttnVarlenForwardArgs, max_seqlen_q), 640u);
  EXPECT_EQ(offsetof(SinkAttnVarlenForwardArgs, causal), 656u);
  EXPECT_EQ(offsetof(SinkAttnVarlenForwardArgs, window), 664u);
  EXPECT_EQ(offsetof(SinkAttnVarlenForwardArgs, softmax_scale), 672u);
  EXPECT_EQ(sizeof(SinkAttnVarlenForwardArgs), 680u);
  // Version 2's BSHD call.
  EXPECT_EQ(layout[4], sizeof(SinkAttnForwardArgs));
  EXPECT_EQ(layout[5], offsetof(SinkAttnForwardArgs, window));
  EXPECT_EQ(layout[6], offsetof(SinkAttnForwardArgs, softmax_scale));
  EXPECT_EQ(offsetof(SinkAttnForwardArgs, causal), 480u);
  EXPECT_EQ(offsetof(SinkAttnForwardArgs, window), 488u);
  EXPECT_EQ(offsetof(SinkAttnForwardArgs, softmax_scale), 496u);
  EXPECT_EQ(sizeof(SinkAttnForwardArgs), 504u);
  // Version 3's backward: 13 tensors, the lengths, causal, window, scale
  // and the workspace.
  EXPECT_EQ(layout[7], sizeof(SinkAttnVarlenBackwardArgs));
  EXPECT_EQ(layout[8], offsetof(SinkAttnVarlenBackwardArgs, window));
  EXPECT_EQ(layout[9], offsetof(SinkAttnVarlenBackwardArgs, workspace_bytes));
  EXPECT_EQ(offsetof(SinkAttnVarlenBackwardArgs, max_seqlen_q), 1040u);
  EXPECT_EQ(offsetof(SinkAttnVarlenBackwardArgs, window), 1064u);
  EXPECT_EQ(offsetof(SinkAttnVarlenBackwardArgs, workspace_bytes), 1088u);
  EXPECT_EQ(sizeof(SinkAttnVarlenBackwardArgs), 1096u);
  // Version 3's BSHD backward: 11 tensors, causal, window, scale and the
  // workspace.
  EXPECT_EQ(layout[10], sizeof(SinkAttnBackwardArgs));
  EXPECT_EQ(layout[11], offsetof(SinkAttnBackwardArgs, workspace_bytes));
  EXPECT_EQ(offsetof(SinkAttnBackwardArgs, causal), 880u);
  EXPECT_EQ(offsetof(SinkAttnBackwardArgs, workspace_bytes), 912u);
  EXPECT_EQ(sizeof(SinkAttnBackwardArgs), 920u);
}

/// A BSHD call: 3 sequences of 200 queries and 300 keys, H 8, HK 2, D 64.
SinkAttnForwardArgs validBshdArgs() {
  SinkAttnForwardArgs a = {};
  a.q = tensor(0x100000000, SINKATTN_DTYPE_BF16, {3, 200, 8, 64});
  a.k = tensor(0x200000000, SINKATTN_DTYPE_BF16, {3, 300, 2, 64});
  a.v = tensor(0x300000000, SINKATTN_DTYPE_BF16, {3, 300, 2, 64});
  a.out = tensor(0x400000000, SINKATTN_DTYPE_BF16, {3, 200, 8, 64});
  a.lse = tensor(0x500000000, SINKATTN_DTYPE_F32, {3, 8, 200});
  a.lse.strides[0] = 200;
  a.lse.strides[1] = 600;
  a.lse.strides[2] = 1;
  a.sinks = tensor(0x600000000, SINKATTN_DTYPE_F32, {8});
  a.causal = 1;
  return a;
}

TEST(AttentionCApi, ValidatesBshdWithoutAGpu) {
  SinkAttnForwardArgs a = validBshdArgs();
  EXPECT_EQ(sinkattnValidateForward(&a), SINKATTN_SUCCESS)
      << sinkattnLastError();
  a.sinks = SinkAttnTensor{};
  a.softmax_scale = 0.3;
  EXPECT_EQ(sinkattnValidateForward(&a), SINKATTN_SUCCESS)
      << sinkattnLastError();
  EXPECT_EQ(sinkattnValidateForward(nullptr), SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "args: the pointer is null");
  a = validBshdArgs();
  a.lse.strides[0] = a.lse.strides[1] = a.lse.strides[2] = 0;
  EXPECT_EQ(sinkattnValidateForward(&a), SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "lse: a dense [B, H, SQ] tensor");
  a = validBshdArgs();
  a.q.dtype = 9;
  EXPECT_EQ(sinkattnValidateForward(&a), SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "q: dtype 9 is not a SinkAttnDType");
  a = validBshdArgs();
  a.causal = 0;
  a.window = 3;
  EXPECT_EQ(sinkattnValidateForward(&a), SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "window: a sliding window of 3 keys");
  a = validBshdArgs();
  EXPECT_EQ(sinkattnForward(nullptr, &a, nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "library: the pointer is null");
}

TEST(AttentionCApi, ValidatesWithoutAGpu) {
  SinkAttnVarlenForwardArgs a = validArgs();
  EXPECT_EQ(sinkattnValidateVarlenForward(&a), SINKATTN_SUCCESS)
      << sinkattnLastError();
  // No sinks, explicit dense strides, another scale, non-causal.
  a.sinks = SinkAttnTensor{};
  a.q.strides[0] = 512;
  a.q.strides[1] = 64;
  a.q.strides[2] = 1;
  a.softmax_scale = 0.1;
  a.causal = 0;
  EXPECT_EQ(sinkattnValidateVarlenForward(&a), SINKATTN_SUCCESS)
      << sinkattnLastError();

  EXPECT_EQ(sinkattnValidateVarlenForward(nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "args: the pointer is null");
  EXPECT_CONTAINS(refusal([](auto &a) { a.q.dtype = 7; }),
                  "q: dtype 7 is not a SinkAttnDType (0 to 3)");
  EXPECT_CONTAINS(refusal([](auto &a) { a.k.rank = 5; }),
                  "k: rank 5 is not in [0, 4]");
  EXPECT_CONTAINS(refusal([](auto &a) { a.v.rank = -1; }),
                  "v: rank -1 is not in [0, 4]");
  EXPECT_CONTAINS(refusal([](auto &a) { a.sinks.data = 0; }),
                  "sinks: the device address is null");
  EXPECT_CONTAINS(refusal([](auto &a) { a.lse.dtype = SINKATTN_DTYPE_BF16; }),
                  "lse: has dtype bf16; expected f32");
  EXPECT_CONTAINS(refusal([](auto &a) {
                    a.q.strides[0] = 1024;
                    a.q.strides[1] = 128;
                    a.q.strides[2] = 1;
                  }),
                  "q: strides [1024, 128, 1] are not dense within a token");
  EXPECT_CONTAINS(refusal([](auto &a) { a.softmax_scale = -1; }),
                  "softmax_scale: -1.000000 is not a positive finite number");
  EXPECT_CONTAINS(refusal([](auto &a) { a.softmax_scale = NAN; }),
                  "softmax_scale: nan is not a positive finite number");
  EXPECT_CONTAINS(refusal([](auto &a) {
                    a.causal = 0;
                    a.window = 128;
                  }),
                  "window: a sliding window of 128 keys needs causal=true");
  EXPECT_CONTAINS(refusal([](auto &a) { a.max_seqlen_q = 301; }),
                  "max_seqlen_q: 301 is not in [1, Tq = 300]");
  EXPECT_CONTAINS(
      refusal([](auto &a) { a.cu_seqlens_k.dtype = SINKATTN_DTYPE_F32; }),
      "cu_seqlens_k: has dtype f32; expected i32");
}

TEST(AttentionCApi, LastErrorIsPerThread) {
  EXPECT_EQ(sinkattnValidateVarlenForward(nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  std::string seenByOther = "unset";
  std::thread other([&] {
    seenByOther = sinkattnLastError();
    SinkAttnVarlenForwardArgs a = validArgs();
    a.k.rank = 9;
    (void)sinkattnValidateVarlenForward(&a);
  });
  other.join();
  EXPECT_EQ(seenByOther, "");
  EXPECT_CONTAINS(sinkattnLastError(), "args: the pointer is null");
}

TEST(AttentionCApi, LibraryErrors) {
  SinkAttnLibrary *library = reinterpret_cast<SinkAttnLibrary *>(0x1);
  EXPECT_EQ(sinkattnLibraryOpen(nullptr, -1, &library),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(library, nullptr);
  EXPECT_CONTAINS(sinkattnLastError(), "device: -1 is negative");
  EXPECT_EQ(sinkattnLibraryOpen("/nonexistent", -1, &library),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "device: -1 is negative");
  EXPECT_EQ(sinkattnLibraryOpen("/nonexistent", 0, nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(),
                  "library: the pointer to store it in is null");
  // Without a driver (this machine) or without the directory (a GPU
  // machine): a runtime error with a message, no library.
  EXPECT_EQ(sinkattnLibraryOpen("/nonexistent/kernels", 0, &library),
            SINKATTN_ERROR_RUNTIME);
  EXPECT_EQ(library, nullptr);
  EXPECT_STRNE(sinkattnLastError(), "");

  SinkAttnVarlenForwardArgs a = validArgs();
  EXPECT_EQ(sinkattnVarlenForward(nullptr, &a, nullptr),
            SINKATTN_ERROR_INVALID_ARGUMENT);
  EXPECT_CONTAINS(sinkattnLastError(), "library: the pointer is null");
  EXPECT_EQ(sinkattnLibraryCompiledKernels(nullptr), -1);
  sinkattnLibraryClose(nullptr);
}

/// The kernel library built (and installed) with libsinkattn.so: every
/// variant in the forms auto picks between.
TEST(AttentionCApi, InstalledKernelLibrary) {
  std::string path = sinkattnDefaultKernelLibrary();
  EXPECT_CONTAINS(path, "share/sinkattn/kernels");
#ifdef SINKATTN_HAS_KERNEL_LIBRARY
  Expected<std::vector<KernelLibraryEntry>> entries = scanKernelLibrary(path);
  ASSERT_TRUE(entries.ok()) << entries.message();
  // bf16/f16 x D 64/128 x causal/window/non-causal x f32/bf16 sinks, two
  // forms each; at D 128 without a window each also persistent; and the
  // backward of each causal and windowed variant, compiled for GQA.
  EXPECT_EQ(entries->size(), 48u + 16u + 16u);
  std::map<std::string, std::set<std::string>> forms;
  std::set<std::string> backward;
  for (const KernelLibraryEntry &entry : *entries) {
    if (entry.kernel == "sink-bwd") {
      EXPECT_TRUE(entry.gqa) << entry.directory;
      EXPECT_EQ(entry.schedule, "separate") << entry.directory;
      backward.insert(entry.variant.describe());
      continue;
    }
    forms[entry.variant.describe()].insert(
        entry.schedule + (entry.persistent ? "-persistent" : ""));
  }
  EXPECT_EQ(backward.size(), 16u);
  EXPECT_EQ(backward.count("f16 D=128 causal sliding-window bf16 sinks"), 1u);
  EXPECT_EQ(forms.size(), 24u);
  for (const auto &[variant, schedules] : forms) {
    bool d64 = variant.find("D=64") != std::string::npos;
    bool windowed = variant.find("sliding-window") != std::string::npos;
    EXPECT_EQ(schedules,
              (d64 ? std::set<std::string>{"plain", "ws"}
               : windowed
                   ? std::set<std::string>{"ws", "overlap"}
                   : std::set<std::string>{"ws", "overlap", "ws-persistent",
                                           "overlap-persistent"}))
        << variant;
  }
  EXPECT_EQ(forms.count("f16 D=128 non-causal bf16 sinks"), 1u);
  EXPECT_EQ(forms.count("bf16 D=64 causal sliding-window f32 sinks"), 1u);
#ifdef SINKATTN_KERNEL_LIBRARY_HAS_SASS
  // Each kernel assembled for the H100/H200, from its own PTX (the reader
  // checked the fingerprint): no JIT on the GPUs the kernels are for.
  for (const KernelLibraryEntry &entry : *entries) {
    ASSERT_TRUE(entry.bundle.sass.has_value()) << entry.directory;
    EXPECT_EQ(entry.bundle.sass->arch, "sm_90a") << entry.directory;
    EXPECT_TRUE(sassRunsOn(*entry.bundle.sass, 9, 0));
    EXPECT_GT(entry.bundle.sass->cubin.size(), 10000u) << entry.directory;
  }
#endif
#endif
}

} // namespace
