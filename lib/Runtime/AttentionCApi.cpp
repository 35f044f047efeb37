//===- AttentionCApi.cpp - C ABI of the attention kernel library ----------===//
//
// SinkAttn-c/Attention.h over rt::AttentionLibrary: converts the C structs,
// keeps each thread's last error, and maps failures to statuses (invalid
// arguments, a variant without a kernel, everything else).
//
//===----------------------------------------------------------------------===//

#include "SinkAttn-c/Attention.h"

#include "SinkAttn/Runtime/Attention.h"

#include <dlfcn.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

using namespace sinkattn::rt;

struct SinkAttnLibrary {
  explicit SinkAttnLibrary(Context context) : context(std::move(context)) {}
  // The library keeps a pointer to the context: neither moves after open.
  Context context;
  std::optional<AttentionLibrary> library;
  /// AttentionLibrary is not thread-safe (lazy JIT, the launches' events).
  mutable std::mutex mutex;
};

namespace {
thread_local std::string lastError;

SinkAttnStatus fail(SinkAttnStatus status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// The C tensor `t` (argument `name`) as a DeviceTensor.
Expected<DeviceTensor> toTensor(const char *name, const SinkAttnTensor &t) {
  std::string where = std::string(name) + ": ";
  if (t.rank < 0 || t.rank > SINKATTN_MAX_RANK)
    return Status::error(where + "rank " + std::to_string(t.rank) +
                         " is not in [0, " + std::to_string(SINKATTN_MAX_RANK) +
                         "]");
  // Indexed by SinkAttnDType.
  static constexpr DType kDTypes[] = {DType::BF16, DType::F16, DType::F32,
                                      DType::I32};
  static_assert(SINKATTN_DTYPE_I32 == 3, "kDTypes follows SinkAttnDType");
  if (t.dtype < 0 || t.dtype > SINKATTN_DTYPE_I32)
    return Status::error(where + "dtype " + std::to_string(t.dtype) +
                         " is not a SinkAttnDType (0 to 3)");
  DeviceTensor tensor;
  tensor.dtype = kDTypes[t.dtype];
  tensor.data = CUdeviceptr(t.data);
  tensor.sizes.assign(t.sizes, t.sizes + t.rank);
  bool dense = true;
  for (int32_t d = 0; d < t.rank; ++d)
    dense = dense && t.strides[d] == 0;
  if (!dense)
    tensor.strides.assign(t.strides, t.strides + t.rank);
  return tensor;
}

Expected<VarlenForwardArgs> toArgs(const SinkAttnVarlenForwardArgs *c) {
  if (!c)
    return Status::error("args: the pointer is null");
  VarlenForwardArgs args;
  SINKATTN_RT_ASSIGN_OR_RETURN(args.q, toTensor("q", c->q));
  SINKATTN_RT_ASSIGN_OR_RETURN(args.k, toTensor("k", c->k));
  SINKATTN_RT_ASSIGN_OR_RETURN(args.v, toTensor("v", c->v));
  SINKATTN_RT_ASSIGN_OR_RETURN(args.out, toTensor("out", c->out));
  SINKATTN_RT_ASSIGN_OR_RETURN(args.lse, toTensor("lse", c->lse));
  if (c->sinks.data != 0 || c->sinks.rank != 0) {
    SINKATTN_RT_ASSIGN_OR_RETURN(DeviceTensor sinks,
                                 toTensor("sinks", c->sinks));
    args.sinks = std::move(sinks);
  }
  SINKATTN_RT_ASSIGN_OR_RETURN(args.cuSeqlensQ,
                               toTensor("cu_seqlens_q", c->cu_seqlens_q));
  SINKATTN_RT_ASSIGN_OR_RETURN(args.cuSeqlensKv,
                               toTensor("cu_seqlens_k", c->cu_seqlens_k));
  args.maxSeqlenQ = c->max_seqlen_q;
  args.maxSeqlenKv = c->max_seqlen_k;
  args.causal = c->causal != 0;
  args.window = c->window;
  // 0 asks for the default; anything else, NaN included, is checked.
  if (!(c->softmax_scale == 0))
    args.softmaxScale = c->softmax_scale;
  return args;
}
} // namespace

extern "C" {

int32_t sinkattnApiVersion(void) { return SINKATTN_C_API_VERSION; }

const char *sinkattnLastError(void) { return lastError.c_str(); }

const char *sinkattnDefaultKernelLibrary(void) {
  static const std::string path = [] {
    Dl_info info;
    if (!dladdr(reinterpret_cast<void *>(&sinkattnApiVersion), &info) ||
        !info.dli_fname)
      return std::string(SINKATTN_KERNELS_FROM_LIBDIR);
    std::filesystem::path libdir =
        std::filesystem::path(info.dli_fname).parent_path();
    return (libdir / SINKATTN_KERNELS_FROM_LIBDIR).lexically_normal().string();
  }();
  return path.c_str();
}

SinkAttnStatus sinkattnLibraryOpen(const char *directory, int32_t device,
                                   SinkAttnLibrary **library) {
  if (!library)
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                "library: the pointer to store it in is null");
  *library = nullptr;
  if (!directory)
    directory = sinkattnDefaultKernelLibrary();
  if (device < 0)
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                "device: " + std::to_string(device) + " is negative");
  Expected<std::shared_ptr<const CudaDriver>> driver = CudaDriver::load();
  if (!driver.ok())
    return fail(SINKATTN_ERROR_RUNTIME, driver.message());
  Expected<Context> context = Context::create(*driver, device);
  if (!context.ok())
    return fail(SINKATTN_ERROR_RUNTIME, context.message());
  auto opened = std::make_unique<SinkAttnLibrary>(context.take());
  Expected<AttentionLibrary> kernels =
      AttentionLibrary::open(opened->context, directory);
  if (!kernels.ok())
    return fail(SINKATTN_ERROR_RUNTIME, kernels.message());
  opened->library.emplace(kernels.take());
  *library = opened.release();
  return SINKATTN_SUCCESS;
}

void sinkattnLibraryClose(SinkAttnLibrary *library) { delete library; }

SinkAttnStatus
sinkattnValidateVarlenForward(const SinkAttnVarlenForwardArgs *args) {
  Expected<VarlenForwardArgs> converted = toArgs(args);
  if (!converted.ok())
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT, converted.message());
  Expected<VarlenForwardProblem> problem = validateVarlenForward(*converted);
  if (!problem.ok())
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT, problem.message());
  return SINKATTN_SUCCESS;
}

SinkAttnStatus sinkattnVarlenForward(SinkAttnLibrary *library,
                                     const SinkAttnVarlenForwardArgs *args,
                                     void *stream) {
  if (!library)
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                "library: the pointer is null");
  Expected<VarlenForwardArgs> converted = toArgs(args);
  if (!converted.ok())
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT, converted.message());
  Expected<VarlenForwardProblem> problem = validateVarlenForward(*converted);
  if (!problem.ok())
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT, problem.message());
  std::lock_guard<std::mutex> lock(library->mutex);
  if (!library->library->serves(problem->variant, converted->sinks.has_value()))
    return fail(SINKATTN_ERROR_NOT_SUPPORTED,
                AttentionLibrary::noKernelMessage(problem->variant));
  // The caller's thread may not have the library's context current (a
  // framework's backward runs on threads of its own).
  if (Status current = library->context.makeCurrent(); !current.ok())
    return fail(SINKATTN_ERROR_RUNTIME, current.message());
  Status ran = library->library->forwardVarlen(*converted,
                                               static_cast<CUstream>(stream));
  if (!ran.ok())
    return fail(SINKATTN_ERROR_RUNTIME, ran.message());
  return SINKATTN_SUCCESS;
}

int64_t sinkattnLibraryCompiledKernels(const SinkAttnLibrary *library) {
  if (!library)
    return -1;
  std::lock_guard<std::mutex> lock(library->mutex);
  return int64_t(library->library->compiledKernels());
}

} // extern "C"
