//===- Random.cpp - Deterministic host-side random data -------------------===//

#include "SinkAttn/Runtime/Random.h"

#include <cmath>

namespace sinkattn::rt {

uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Rng::Rng(uint64_t seed) {
  // splitmix64 expands any seed (including 0) into a non-zero state, as the
  // xoshiro authors recommend.
  uint64_t sm = seed;
  for (uint64_t &w : s)
    w = splitMix64(sm);
}

uint64_t Rng::next() {
  const uint64_t result = rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double Rng::nextDouble() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

float Rng::uniform(float lo, float hi) {
  float v = static_cast<float>(lo + (static_cast<double>(hi) - lo) * nextDouble());
  // Rounding to float can land exactly on `hi`; keep the interval half-open.
  return v < hi ? v : std::nextafter(hi, lo);
}

double Rng::normal() {
  if (hasSpare) {
    hasSpare = false;
    return spare;
  }
  // 1 - u lies in (0, 1], so log() never sees zero.
  const double u1 = 1.0 - nextDouble();
  const double u2 = nextDouble();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 6.283185307179586 * u2;
  spare = r * std::sin(theta);
  hasSpare = true;
  return r * std::cos(theta);
}

void fillUniform(std::vector<float> &out, Rng &rng, float lo, float hi) {
  for (float &v : out)
    v = rng.uniform(lo, hi);
}

void fillNormal(std::vector<float> &out, Rng &rng, float mean, float stddev) {
  for (float &v : out)
    v = static_cast<float>(mean + stddev * rng.normal());
}

std::vector<float> randomUniform(size_t count, uint64_t seed, float lo,
                                 float hi) {
  std::vector<float> out(count);
  Rng rng(seed);
  fillUniform(out, rng, lo, hi);
  return out;
}

std::vector<float> randomNormal(size_t count, uint64_t seed, float mean,
                                float stddev) {
  std::vector<float> out(count);
  Rng rng(seed);
  fillNormal(out, rng, mean, stddev);
  return out;
}

} // namespace sinkattn::rt
