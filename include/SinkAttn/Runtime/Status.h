//===- Status.h - Error handling for the SinkAttn runtime -------*- C++ -*-===//
//
// Error-handling policy of the runtime library
// -------------------------------------------
// No function in sinkattn::rt throws.  Every operation that can fail returns
// either a `Status` (success, or failure carrying a human-readable message) or
// an `Expected<T>` (a value, or a failure message).  We chose this over
// exceptions because the tools that link this library are LLVM/MLIR-style
// tools, which are commonly built with -fno-exceptions; a status type works in
// both worlds.  The only exception that can still escape is std::bad_alloc,
// exactly as in LLVM.
//
// Messages are complete sentences meant to be printed as-is by the CLI, e.g.
//   "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_STATUS_H
#define SINKATTN_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace sinkattn::rt {

/// Success, or a failure with a message.
class [[nodiscard]] Status {
public:
  /// Default-constructed Status is success.
  Status() = default;

  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }

  bool ok() const { return !failed; }
  /// Empty on success.
  const std::string &message() const { return msg; }

  /// Returns a copy whose message is prefixed by `prefix` (no-op on success).
  /// Used to add "where" information while an error travels up the stack.
  Status withContext(const std::string &prefix) const {
    if (ok())
      return *this;
    return error(prefix + msg);
  }

private:
  bool failed = false;
  std::string msg;
};

/// A value of type T, or a failure message.  Construct from a T for success
/// and from a failed Status for an error.
template <typename T> class [[nodiscard]] Expected {
public:
  // Two overloads rather than one by-value parameter so that `return local;`
  // moves a move-only local (C++17's implicit move needs a T&& parameter).
  Expected(T &&v) : value(std::move(v)) {}
  Expected(const T &v) : value(v) {}
  Expected(Status status) : err(std::move(status)) {
    // Building an Expected from a *successful* Status is a programming
    // error; turn it into a visible failure rather than an empty value.
    assert(!err.ok() && "Expected<T> constructed from a success Status");
    if (err.ok())
      err = Status::error("internal error: Expected<T> holds neither a value "
                          "nor an error");
  }

  bool ok() const { return value.has_value(); }
  const std::string &message() const { return err.message(); }
  /// Success if a value is held, otherwise the error.
  Status status() const { return ok() ? Status() : err; }

  T &operator*() & {
    assert(ok());
    return *value;
  }
  const T &operator*() const & {
    assert(ok());
    return *value;
  }
  T *operator->() {
    assert(ok());
    return &*value;
  }
  const T *operator->() const {
    assert(ok());
    return &*value;
  }
  /// Moves the value out; only valid when ok().
  T take() {
    assert(ok());
    return std::move(*value);
  }

private:
  std::optional<T> value;
  Status err;
};

} // namespace sinkattn::rt

#define SINKATTN_RT_CONCAT_IMPL(a, b) a##b
#define SINKATTN_RT_CONCAT(a, b) SINKATTN_RT_CONCAT_IMPL(a, b)

/// Evaluates a Status expression and returns it from the enclosing function
/// if it failed.  The enclosing function may return Status or Expected<U>.
#define SINKATTN_RT_TRY(expr)                                                  \
  do {                                                                         \
    ::sinkattn::rt::Status sinkattnTryStatus = (expr);                         \
    if (!sinkattnTryStatus.ok())                                               \
      return sinkattnTryStatus;                                                \
  } while (false)

/// `SINKATTN_RT_ASSIGN_OR_RETURN(auto x, makeX());` declares x from an
/// Expected, or returns its error from the enclosing function.
#define SINKATTN_RT_ASSIGN_OR_RETURN(decl, expr)                               \
  auto SINKATTN_RT_CONCAT(sinkattnExpected, __LINE__) = (expr);                \
  if (!SINKATTN_RT_CONCAT(sinkattnExpected, __LINE__).ok())                    \
    return SINKATTN_RT_CONCAT(sinkattnExpected, __LINE__).status();            \
  decl = SINKATTN_RT_CONCAT(sinkattnExpected, __LINE__).take()

#endif // SINKATTN_RUNTIME_STATUS_H
