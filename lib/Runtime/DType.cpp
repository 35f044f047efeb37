//===- DType.cpp - Element types -------------------------------------------===//

#include "SinkAttn/Runtime/DType.h"

namespace sinkattn::rt {

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::U8, "u8", 1},         {DType::U16, "u16", 2},
    {DType::U32, "u32", 4},       {DType::I32, "i32", 4},
    {DType::U64, "u64", 8},       {DType::I64, "i64", 8},
    {DType::F16, "f16", 2},       {DType::BF16, "bf16", 2},
    {DType::F32, "f32", 4},       {DType::F64, "f64", 8},
    {DType::F32Ftz, "f32_ftz", 4}, {DType::TF32, "tf32", 4},
    {DType::TF32Ftz, "tf32_ftz", 4},
};
const DTypeInfo &info(DType type) {
  for (const DTypeInfo &i : kDTypes)
    if (i.type == type)
      return i;
  return kDTypes[0]; // Unreachable for valid enumerators.
}
} // namespace

const char *dtypeName(DType type) { return info(type).name; }
size_t dtypeSize(DType type) { return info(type).size; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &i : kDTypes)
    if (name == i.name)
      return i.type;
  return std::nullopt;
}

std::string allDTypeNames() {
  std::string out;
  for (const DTypeInfo &i : kDTypes) {
    if (!out.empty())
      out += ", ";
    out += i.name;
  }
  return out;
}

bool isFloatingPoint(DType type) {
  switch (type) {
  case DType::F16:
  case DType::BF16:
  case DType::F32:
  case DType::F64:
  case DType::F32Ftz:
  case DType::TF32:
  case DType::TF32Ftz:
    return true;
  default:
    return false;
  }
}

bool isSignedInteger(DType type) {
  return type == DType::I32 || type == DType::I64;
}

} // namespace sinkattn::rt
