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
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

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

/// Runs `body`, turning an exception (out of memory, a filesystem error)
/// into a runtime error: none may cross the C ABI.
template <typename Body> SinkAttnStatus guarded(Body &&body) {
  try {
    return body();
  } catch (const std::exception &e) {
    return fail(SINKATTN_ERROR_RUNTIME,
                std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(SINKATTN_ERROR_RUNTIME, "internal error: unknown exception");
  }
}

/// The library's context current on the calling thread for a scope, and
/// the caller's own current again after it: a framework's threads keep
/// their device.
class ScopedContext {
public:
  explicit ScopedContext(const Context &context)
      : context_(context), status_(context.pushCurrent()) {}
  ~ScopedContext() {
    if (status_.ok())
      (void)context_.popCurrent();
  }
  const Status &status() const { return status_; }

private:
  const Context &context_;
  Status status_;
};

/// An address in this library, for dladdr: a function of its own, which
/// no program's PLT stands in for.
void anchor() {}

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
Expected<ForwardArgs> toArgs(const SinkAttnForwardArgs *c) {
  if (!c)
    return Status::error("args: the pointer is null");
  ForwardArgs args;
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
  args.causal = c->causal != 0;
  args.window = c->window;
  if (!(c->softmax_scale == 0))
    args.softmaxScale = c->softmax_scale;
  return args;
}

Expected<VarlenBackwardArgs> toArgs(const SinkAttnVarlenBackwardArgs *c) {
  if (!c)
    return Status::error("args: the pointer is null");
  VarlenBackwardArgs args;
  const std::pair<const char *,
                  std::pair<const SinkAttnTensor *, DeviceTensor *>>
      tensors[] = {{"q", {&c->q, &args.q}},
                   {"k", {&c->k, &args.k}},
                   {"v", {&c->v, &args.v}},
                   {"out", {&c->out, &args.out}},
                   {"lse", {&c->lse, &args.lse}},
                   {"dout", {&c->dout, &args.dout}},
                   {"dq", {&c->dq, &args.dq}},
                   {"dk", {&c->dk, &args.dk}},
                   {"dv", {&c->dv, &args.dv}},
                   {"cu_seqlens_q", {&c->cu_seqlens_q, &args.cuSeqlensQ}},
                   {"cu_seqlens_k", {&c->cu_seqlens_k, &args.cuSeqlensKv}}};
  for (const auto &[name, pair] : tensors) {
    SINKATTN_RT_ASSIGN_OR_RETURN(*pair.second, toTensor(name, *pair.first));
  }
  for (auto [name, from, to] : {std::tuple{"sinks", &c->sinks, &args.sinks},
                                std::tuple{"dsinks", &c->dsinks, &args.dsinks}})
    if (from->data != 0 || from->rank != 0) {
      SINKATTN_RT_ASSIGN_OR_RETURN(DeviceTensor tensor, toTensor(name, *from));
      *to = std::move(tensor);
    }
  args.maxSeqlenQ = c->max_seqlen_q;
  args.maxSeqlenKv = c->max_seqlen_k;
  args.causal = c->causal != 0;
  args.window = c->window;
  if (!(c->softmax_scale == 0))
    args.softmaxScale = c->softmax_scale;
  args.workspace = CUdeviceptr(c->workspace);
  args.workspaceBytes = size_t(c->workspace_bytes);
  return args;
}

Expected<BackwardArgs> toArgs(const SinkAttnBackwardArgs *c) {
  if (!c)
    return Status::error("args: the pointer is null");
  BackwardArgs args;
  const std::pair<const char *,
                  std::pair<const SinkAttnTensor *, DeviceTensor *>>
      tensors[] = {
          {"q", {&c->q, &args.q}},       {"k", {&c->k, &args.k}},
          {"v", {&c->v, &args.v}},       {"out", {&c->out, &args.out}},
          {"lse", {&c->lse, &args.lse}}, {"dout", {&c->dout, &args.dout}},
          {"dq", {&c->dq, &args.dq}},    {"dk", {&c->dk, &args.dk}},
          {"dv", {&c->dv, &args.dv}}};
  for (const auto &[name, pair] : tensors) {
    SINKATTN_RT_ASSIGN_OR_RETURN(*pair.second, toTensor(name, *pair.first));
  }
  for (auto [name, from, to] : {std::tuple{"sinks", &c->sinks, &args.sinks},
                                std::tuple{"dsinks", &c->dsinks, &args.dsinks}})
    if (from->data != 0 || from->rank != 0) {
      SINKATTN_RT_ASSIGN_OR_RETURN(DeviceTensor tensor, toTensor(name, *from));
      *to = std::move(tensor);
    }
  args.causal = c->causal != 0;
  args.window = c->window;
  if (!(c->softmax_scale == 0))
    args.softmaxScale = c->softmax_scale;
  args.workspace = CUdeviceptr(c->workspace);
  args.workspaceBytes = size_t(c->workspace_bytes);
  return args;
}

/// A call's arguments converted and validated, and its problem.
template <typename Args> struct CheckedCall {
  Args args;
  VarlenForwardProblem problem;
};
Expected<CheckedCall<VarlenForwardArgs>>
checkCall(const SinkAttnVarlenForwardArgs *c) {
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardArgs args, toArgs(c));
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardProblem problem,
                               validateVarlenForward(args));
  return CheckedCall<VarlenForwardArgs>{std::move(args), std::move(problem)};
}
Expected<CheckedCall<ForwardArgs>> checkCall(const SinkAttnForwardArgs *c) {
  SINKATTN_RT_ASSIGN_OR_RETURN(ForwardArgs args, toArgs(c));
  SINKATTN_RT_ASSIGN_OR_RETURN(VarlenForwardProblem problem,
                               validateForward(args));
  return CheckedCall<ForwardArgs>{std::move(args), std::move(problem)};
}

Status launch(AttentionLibrary &kernels,
              const CheckedCall<VarlenForwardArgs> &call, CUstream stream) {
  return kernels.forwardVarlen(call.args, call.problem, stream);
}
Status launch(AttentionLibrary &kernels, const CheckedCall<ForwardArgs> &call,
              CUstream stream) {
  return kernels.forward(call.args, call.problem, stream);
}

/// sinkattnValidate*: the call's arguments checked, nothing run.
template <typename CArgs> SinkAttnStatus validateCall(const CArgs *args) {
  return guarded([&]() -> SinkAttnStatus {
    auto call = checkCall(args);
    if (!call.ok())
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT, call.message());
    return SINKATTN_SUCCESS;
  });
}

/// sinkattn*Forward: the call checked, then run on `library`:
/// NOT_SUPPORTED where it has no kernel for the call's variant, RUNTIME
/// when the launch fails.
template <typename CArgs>
SinkAttnStatus runCall(SinkAttnLibrary *library, const CArgs *args,
                       void *stream) {
  return guarded([&]() -> SinkAttnStatus {
    if (!library)
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                  "library: the pointer is null");
    auto call = checkCall(args);
    if (!call.ok())
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT, call.message());
    std::lock_guard<std::mutex> lock(library->mutex);
    if (!library->library->serves(call->problem.variant,
                                  call->args.sinks.has_value()))
      return fail(SINKATTN_ERROR_NOT_SUPPORTED,
                  AttentionLibrary::noKernelMessage(call->problem.variant));
    // The caller's thread may have another context current, or none (a
    // framework's backward runs on threads of its own).
    ScopedContext current(library->context);
    if (!current.status().ok())
      return fail(SINKATTN_ERROR_RUNTIME, current.status().message());
    Status ran =
        launch(*library->library, *call, static_cast<CUstream>(stream));
    if (!ran.ok())
      return fail(SINKATTN_ERROR_RUNTIME, ran.message());
    return SINKATTN_SUCCESS;
  });
}

/// A backward call on `library`: `run` with the call checked, the
/// library's lock held and its context current; NOT_SUPPORTED where the
/// library has no backward kernel for the call's variant.
Expected<VarlenBackwardProblem> validateCall(const VarlenBackwardArgs &args) {
  return validateVarlenBackward(args);
}
Expected<VarlenBackwardProblem> validateCall(const BackwardArgs &args) {
  return validateBackward(args);
}

template <typename CArgs, typename Args>
SinkAttnStatus runBackward(
    SinkAttnLibrary *library, const CArgs *c,
    const std::function<Status(AttentionLibrary &, const Args &)> &run) {
  return guarded([&]() -> SinkAttnStatus {
    if (!library)
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                  "library: the pointer is null");
    Expected<Args> args = toArgs(c);
    if (!args.ok())
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT, args.message());
    Expected<VarlenBackwardProblem> problem = validateCall(*args);
    if (!problem.ok())
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT, problem.message());
    std::lock_guard<std::mutex> lock(library->mutex);
    if (Status served =
            library->library->servesBackward(*problem, args->sinks.has_value());
        !served.ok())
      return fail(SINKATTN_ERROR_NOT_SUPPORTED, served.message());
    ScopedContext current(library->context);
    if (!current.status().ok())
      return fail(SINKATTN_ERROR_RUNTIME, current.status().message());
    Status ran = run(*library->library, *args);
    if (!ran.ok())
      return fail(ran.message().rfind("workspace: ", 0) == 0
                      ? SINKATTN_ERROR_INVALID_ARGUMENT
                      : SINKATTN_ERROR_RUNTIME,
                  ran.message());
    return SINKATTN_SUCCESS;
  });
}

/// The C ABI's args struct's C++ arguments.
template <typename CArgs> struct BackwardArgsOf;
template <> struct BackwardArgsOf<SinkAttnVarlenBackwardArgs> {
  using type = VarlenBackwardArgs;
};
template <> struct BackwardArgsOf<SinkAttnBackwardArgs> {
  using type = BackwardArgs;
};

template <typename CArgs>
SinkAttnStatus validateBackwardCall(const CArgs *args) {
  return guarded([&]() -> SinkAttnStatus {
    auto converted = toArgs(args);
    if (!converted.ok())
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT, converted.message());
    Expected<VarlenBackwardProblem> problem = validateCall(*converted);
    if (!problem.ok())
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT, problem.message());
    return SINKATTN_SUCCESS;
  });
}

template <typename CArgs>
SinkAttnStatus backwardWorkspaceBytesCall(SinkAttnLibrary *library,
                                          const CArgs *args, uint64_t *bytes) {
  using Args = typename BackwardArgsOf<CArgs>::type;
  if (!bytes)
    return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                "bytes: the pointer to store them in is null");
  return runBackward<CArgs, Args>(
      library, args,
      [&](AttentionLibrary &kernels, const Args &call) -> Status {
        SINKATTN_RT_ASSIGN_OR_RETURN(size_t needed,
                                     kernels.backwardWorkspaceBytes(call));
        *bytes = uint64_t(needed);
        return Status();
      });
}

template <typename CArgs>
SinkAttnStatus backwardCall(SinkAttnLibrary *library, const CArgs *args,
                            void *stream) {
  using Args = typename BackwardArgsOf<CArgs>::type;
  return runBackward<CArgs, Args>(
      library, args, [&](AttentionLibrary &kernels, const Args &call) {
        if constexpr (std::is_same_v<Args, BackwardArgs>)
          return kernels.backward(call, static_cast<CUstream>(stream));
        else
          return kernels.backwardVarlen(call, static_cast<CUstream>(stream));
      });
}

} // namespace

extern "C" {

int32_t sinkattnApiVersion(void) { return SINKATTN_C_API_VERSION; }

const char *sinkattnLastError(void) { return lastError.c_str(); }

const char *sinkattnDefaultKernelLibrary(void) {
  static const std::string path = []() -> std::string {
    try {
      Dl_info info;
      if (!dladdr(reinterpret_cast<void *>(&anchor), &info) || !info.dli_fname)
        return "";
      namespace fs = std::filesystem;
      fs::path libdir = fs::absolute(fs::path(info.dli_fname)).parent_path();
      // The installed layout, else the build tree's (lib/ beside share/).
      fs::path installed =
          (libdir / SINKATTN_KERNELS_FROM_LIBDIR).lexically_normal();
      fs::path built =
          (libdir / "../share/sinkattn/kernels").lexically_normal();
      std::error_code ec;
      return (fs::is_directory(installed, ec) || !fs::is_directory(built, ec)
                  ? installed
                  : built)
          .string();
    } catch (...) {
      return "";
    }
  }();
  return path.c_str();
}

SinkAttnStatus sinkattnLibraryOpen(const char *directory, int32_t device,
                                   SinkAttnLibrary **library) {
  return guarded([&]() -> SinkAttnStatus {
    if (!library)
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                  "library: the pointer to store it in is null");
    *library = nullptr;
    if (!directory)
      directory = sinkattnDefaultKernelLibrary();
    if (device < 0)
      return fail(SINKATTN_ERROR_INVALID_ARGUMENT,
                  "device: " + std::to_string(device) + " is negative");
    if (directory[0] == '\0')
      return fail(SINKATTN_ERROR_RUNTIME,
                  "directory: no kernel library was installed with this "
                  "libsinkattn.so; give its directory");
    Expected<std::shared_ptr<const CudaDriver>> driver = CudaDriver::load();
    if (!driver.ok())
      return fail(SINKATTN_ERROR_RUNTIME, driver.message());
    // Context::create makes the library's context current: the caller's
    // comes back after.
    CUcontext callers = nullptr;
    Status initialized = SINKATTN_RT_CU(**driver, cuInit, 0u);
    if (!initialized.ok())
      return fail(SINKATTN_ERROR_RUNTIME, initialized.message());
    Status got = SINKATTN_RT_CU(**driver, cuCtxGetCurrent, &callers);
    if (!got.ok())
      return fail(SINKATTN_ERROR_RUNTIME, got.message());
    Expected<Context> context = Context::create(*driver, device);
    (void)SINKATTN_RT_CU(**driver, cuCtxSetCurrent, callers);
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
  });
}

void sinkattnLibraryClose(SinkAttnLibrary *library) {
  if (!library)
    return;
  try {
    std::lock_guard<std::mutex> lock(library->mutex);
    // The kernels and buffers are freed in the library's context, whatever
    // the calling thread has current.
    ScopedContext current(library->context);
    library->library.reset();
  } catch (...) {
  }
  delete library;
}

SinkAttnStatus
sinkattnValidateVarlenForward(const SinkAttnVarlenForwardArgs *args) {
  return validateCall(args);
}

SinkAttnStatus sinkattnVarlenForward(SinkAttnLibrary *library,
                                     const SinkAttnVarlenForwardArgs *args,
                                     void *stream) {
  return runCall(library, args, stream);
}

SinkAttnStatus sinkattnValidateForward(const SinkAttnForwardArgs *args) {
  return validateCall(args);
}

SinkAttnStatus sinkattnForward(SinkAttnLibrary *library,
                               const SinkAttnForwardArgs *args, void *stream) {
  return runCall(library, args, stream);
}

SinkAttnStatus
sinkattnValidateVarlenBackward(const SinkAttnVarlenBackwardArgs *args) {
  return validateBackwardCall(args);
}

SinkAttnStatus
sinkattnVarlenBackwardWorkspaceBytes(SinkAttnLibrary *library,
                                     const SinkAttnVarlenBackwardArgs *args,
                                     uint64_t *bytes) {
  return backwardWorkspaceBytesCall(library, args, bytes);
}

SinkAttnStatus sinkattnVarlenBackward(SinkAttnLibrary *library,
                                      const SinkAttnVarlenBackwardArgs *args,
                                      void *stream) {
  return backwardCall(library, args, stream);
}

SinkAttnStatus sinkattnValidateBackward(const SinkAttnBackwardArgs *args) {
  return validateBackwardCall(args);
}

SinkAttnStatus sinkattnBackwardWorkspaceBytes(SinkAttnLibrary *library,
                                              const SinkAttnBackwardArgs *args,
                                              uint64_t *bytes) {
  return backwardWorkspaceBytesCall(library, args, bytes);
}

SinkAttnStatus sinkattnBackward(SinkAttnLibrary *library,
                                const SinkAttnBackwardArgs *args,
                                void *stream) {
  return backwardCall(library, args, stream);
}

int64_t sinkattnLibraryCompiledKernels(const SinkAttnLibrary *library) {
  if (!library)
    return -1;
  std::lock_guard<std::mutex> lock(library->mutex);
  return int64_t(library->library->compiledKernels());
}

} // extern "C"
