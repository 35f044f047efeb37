//===- Float16.h - bf16 / fp16 <-> fp32 conversions ------------*- C++ -*-===//
//
// Bit-exact host conversions for preparing inputs and checking outputs.
// Half-precision values are carried as their raw uint16_t bits; the host
// compiler's own _Float16/__bf16 support is not relied upon.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_FLOAT16_H
#define SINKATTN_RUNTIME_FLOAT16_H

#include <cstdint>
#include <vector>

namespace sinkattn::rt {

/// fp32 -> bf16, round to nearest even; NaN stays NaN (quieted, sign and
/// top payload bits kept); overflow rounds to infinity.
uint16_t floatToBf16(float value);
/// bf16 -> fp32 (exact).
float bf16ToFloat(uint16_t bits);

/// fp32 -> IEEE binary16, round to nearest even, with subnormals; values
/// >= 65520 in magnitude become infinity; NaN stays NaN (quieted).
uint16_t floatToHalf(float value);
/// IEEE binary16 -> fp32 (exact, including subnormals, inf and NaN).
float halfToFloat(uint16_t bits);

std::vector<uint16_t> toBf16(const std::vector<float> &values);
std::vector<float> fromBf16(const std::vector<uint16_t> &bits);
std::vector<uint16_t> toHalf(const std::vector<float> &values);
std::vector<float> fromHalf(const std::vector<uint16_t> &bits);

/// Bit casts (memcpy-based, so well-defined).
uint32_t floatBits(float value);
float floatFromBits(uint32_t bits);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_FLOAT16_H
