//===- Module.cpp - PTX JIT compilation and kernel handles ----------------===//

#include "SinkAttn/Runtime/Module.h"

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace sinkattn::rt {

Expected<int> Function::getAttribute(CUfunction_attribute attribute) const {
  int value = 0;
  SINKATTN_RT_TRY(SINKATTN_RT_CU(*drv, cuFuncGetAttribute, &value, attribute, fn)
                      .withContext("kernel " + entry + ": "));
  return value;
}

Status Function::setAttribute(CUfunction_attribute attribute, int value) const {
  return SINKATTN_RT_CU(*drv, cuFuncSetAttribute, fn, attribute, value)
      .withContext("kernel " + entry + ": ");
}

namespace {
std::string logText(const std::vector<char> &buffer) {
  // The driver NUL-terminates, but never trust that with a full buffer.
  return std::string(buffer.data(), strnlen(buffer.data(), buffer.size()));
}

void *optionValue(uintptr_t v) { return reinterpret_cast<void *>(v); }
} // namespace

Expected<Module> Module::loadImage(const Context &ctx, const void *image,
                                   const JitOptions &options,
                                   const std::string &failure) {
  const CudaDriver &driver = ctx.driver();
  size_t logBytes = options.logBufferBytes < 1024 ? 1024 : options.logBufferBytes;
  std::vector<char> infoLog(logBytes, '\0');
  std::vector<char> errorLog(logBytes, '\0');

  std::vector<CUjit_option> keys = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_LOG_VERBOSE};
  std::vector<void *> values = {
      infoLog.data(), optionValue(logBytes - 1), errorLog.data(),
      optionValue(logBytes - 1), optionValue(options.verbose ? 1 : 0)};
  if (options.generateLineInfo) {
    keys.push_back(CU_JIT_GENERATE_LINE_INFO);
    values.push_back(optionValue(1));
  }

  Module m;
  m.drv = ctx.driverPtr();
  Status st = SINKATTN_RT_CU(driver, cuModuleLoadDataEx, &m.mod, image,
                             static_cast<unsigned>(keys.size()), keys.data(),
                             values.data());
  if (!st.ok()) {
    std::string msg = failure + ": " + st.message();
    std::string err = logText(errorLog);
    std::string inf = logText(infoLog);
    if (!err.empty())
      msg += "\nptxas error log:\n" + err;
    if (!inf.empty())
      msg += "\nptxas info log:\n" + inf;
    return Status::error(msg);
  }
  m.info = logText(infoLog);
  m.errors = logText(errorLog);
  return m;
}

Expected<Module> Module::loadPtx(const Context &ctx, const std::string &ptx,
                                 const JitOptions &options,
                                 const std::string &sourceName) {
  if (ptx.empty())
    return Status::error("cannot JIT-compile " + sourceName + ": it is empty");
  // Compiled as a whole program (not through cuLink*, whose relocatable
  // compile spilled the warp-specialized kernels: docs/design.md). The PTX
  // is passed with its terminating NUL, which the JIT requires.
  return loadImage(ctx, ptx.c_str(), options,
                   "JIT compiling " + sourceName + " failed");
}

Expected<Module> Module::loadCubin(const Context &ctx, const std::string &cubin,
                                   const std::string &sourceName) {
  if (cubin.empty())
    return Status::error("cannot load " + sourceName + ": it is empty");
  return loadImage(ctx, cubin.data(), JitOptions{},
                   "loading " + sourceName + " failed");
}

Module::Module(Module &&other) noexcept { *this = std::move(other); }

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    reset();
    drv = std::move(other.drv);
    mod = std::exchange(other.mod, nullptr);
    info = std::move(other.info);
    errors = std::move(other.errors);
  }
  return *this;
}

Module::~Module() { reset(); }

void Module::reset() {
  if (mod && drv)
    (void)drv->cuModuleUnload(mod);
  mod = nullptr;
}

Expected<Function> Module::getFunction(const std::string &name) const {
  Function f;
  f.drv = drv;
  f.entry = name;
  Status st = SINKATTN_RT_CU(*drv, cuModuleGetFunction, &f.fn, mod, name.c_str());
  if (!st.ok())
    return Status::error("kernel entry '" + name +
                         "' not found in the compiled module: " + st.message());
  return f;
}

} // namespace sinkattn::rt
