//===- KernelTemplate.cpp - Kernels written as MLIR text ------------------===//

#include "KernelTemplate.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

OwningOpRef<ModuleOp> sinkattn::kernels::parseKernelTemplate(
    MLIRContext &context, llvm::StringRef name, llvm::StringRef text,
    const std::map<std::string, std::string> &values) {
  std::string source;
  source.reserve(text.size());
  while (!text.empty()) {
    size_t open = text.find('@');
    source += text.take_front(open).str();
    if (open == llvm::StringRef::npos)
      break;
    text = text.drop_front(open + 1);
    size_t close = text.find('@');
    llvm::StringRef key = text.take_front(close);
    auto value = values.find(key.str());
    if (close == llvm::StringRef::npos || value == values.end()) {
      // '@' also starts symbol names (@gemm): keep it when no key matches.
      source += '@';
      continue;
    }
    source += value->second;
    text = text.drop_front(close + 1);
  }
  ParserConfig config(&context);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, config, name);
  if (!module)
    emitError(UnknownLoc::get(&context))
        << "internal error: the " << name << " kernel template did not parse";
  return module;
}

int sinkattn::kernels::replaceAll(std::string &text, llvm::StringRef from,
                                  llvm::StringRef to) {
  int count = 0;
  for (size_t at = text.find(from.str()); at != std::string::npos;
       at = text.find(from.str(), at + to.size()), ++count)
    text.replace(at, from.size(), to.str());
  return count;
}

std::string sinkattn::kernels::withSuffix(std::string text,
                                          llvm::ArrayRef<llvm::StringRef> names,
                                          llvm::StringRef suffix) {
  auto continuesName = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '$' || c == '-';
  };
  for (llvm::StringRef name : names) {
    for (size_t at = text.find(name.str()); at != std::string::npos;
         at = text.find(name.str(), at + 1)) {
      size_t end = at + name.size();
      if (end < text.size() && continuesName(text[end]))
        continue;
      text.insert(end, suffix.str());
      at = end + suffix.size() - 1;
    }
  }
  return text;
}

std::string sinkattn::kernels::mlirTypeName(rt::DType type) {
  switch (type) {
  case rt::DType::BF16:
    return "bf16";
  case rt::DType::F16:
    return "f16";
  case rt::DType::F32:
    return "f32";
  default:
    return rt::dtypeName(type);
  }
}
