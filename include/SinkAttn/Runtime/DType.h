//===- DType.h - Element types shared by buffers, scalars, TMA --*- C++ -*-===//
//
// One element-type vocabulary for the whole runtime: bundle manifests, kernel
// scalar arguments and tensor-map descriptors all spell types the same way.
// The set mirrors CUtensorMapDataType (minus the packed 4/6-bit types, which
// SinkAttn does not use).
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_DTYPE_H
#define SINKATTN_RUNTIME_DTYPE_H

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sinkattn::rt {

enum class DType {
  U8,
  U16,
  U32,
  I32,
  U64,
  I64,
  F16,
  BF16,
  F32,
  F64,
  F32Ftz,  // fp32 storage; TMA flushes denormals to zero.
  TF32,    // fp32 storage; TMA rounds to tf32.
  TF32Ftz, // fp32 storage; TMA rounds to tf32 and flushes denormals.
};

/// Manifest spelling: "u8", "u16", "u32", "i32", "u64", "i64", "f16", "bf16",
/// "f32", "f64", "f32_ftz", "tf32", "tf32_ftz".
const char *dtypeName(DType type);
std::optional<DType> parseDType(std::string_view name);
/// Comma-separated list of every accepted spelling (for error messages).
std::string allDTypeNames();
/// Storage size of one element in bytes.
size_t dtypeSize(DType type);
bool isFloatingPoint(DType type);
bool isSignedInteger(DType type);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_DTYPE_H
