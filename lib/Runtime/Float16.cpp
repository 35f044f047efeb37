//===- Float16.cpp - bf16 / fp16 <-> fp32 conversions ---------------------===//

#include "SinkAttn/Runtime/Float16.h"

#include <cmath>
#include <cstring>

namespace sinkattn::rt {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

uint16_t floatToBf16(float value) {
  uint32_t u = floatBits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    // Truncating a NaN could clear every remaining mantissa bit and yield
    // infinity, so force the quiet bit.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even;
  // a carry into the exponent is the correct rounding up (to inf at most).
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float bf16ToFloat(uint16_t bits) {
  return floatFromBits(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToHalf(float value) {
  const uint32_t x = floatBits(value);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;

  if (absx > 0x7f800000u) // NaN: keep the top payload bits, force quiet.
    return sign | 0x7e00u | static_cast<uint16_t>((absx >> 13) & 0x3ffu);
  if (absx >= 0x477ff000u) // >= 65520 rounds (ties-to-even) to infinity.
    return sign | 0x7c00u;

  if (absx < 0x38800000u) { // Below 2^-14: half subnormal or zero.
    if (absx <= 0x33000000u) // <= 2^-25: rounds to zero (2^-25 is a tie).
      return sign;
    const uint32_t exp = absx >> 23;
    const uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    // value = mant * 2^(exp-150); in units of 2^-24 that is mant >> shift.
    const uint32_t shift = 126 - exp;
    uint32_t result = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (result & 1u)))
      ++result; // May carry into the smallest normal, which is correct.
    return sign | static_cast<uint16_t>(result);
  }

  // Normal range: rebias the exponent and round the 13 dropped bits.
  uint32_t result = ((absx >> 23) - 127 + 15) << 10 | ((absx >> 13) & 0x3ffu);
  const uint32_t rem = absx & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (result & 1u)))
    ++result; // A mantissa carry correctly bumps the exponent.
  return sign | static_cast<uint16_t>(result);
}

float halfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu;
  const uint32_t mant = bits & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in fp32.
    float magnitude = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exp == 31)
    return floatFromBits(sign | 0x7f800000u | (mant << 13));
  return floatFromBits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

std::vector<uint16_t> toBf16(const std::vector<float> &values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = floatToBf16(values[i]);
  return out;
}

std::vector<float> fromBf16(const std::vector<uint16_t> &bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    out[i] = bf16ToFloat(bits[i]);
  return out;
}

std::vector<uint16_t> toHalf(const std::vector<float> &values) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = floatToHalf(values[i]);
  return out;
}

std::vector<float> fromHalf(const std::vector<uint16_t> &bits) {
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    out[i] = halfToFloat(bits[i]);
  return out;
}

} // namespace sinkattn::rt
