//===- Random.h - Deterministic host-side random data ----------*- C++ -*-===//
//
// Test inputs must be identical on every machine and standard library, so
// we do not use <random>'s distributions (their algorithms are unspecified
// and differ between libstdc++ and libc++).  The generator is xoshiro256**
// seeded through splitmix64; uniform floats come from the top 53 bits;
// normals use Box-Muller with only +,*,log,sqrt,cos in double precision.
//
//===----------------------------------------------------------------------===//

#ifndef SINKATTN_RUNTIME_RANDOM_H
#define SINKATTN_RUNTIME_RANDOM_H

#include "SinkAttn/Runtime/Float16.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sinkattn::rt {

/// splitmix64 step: advances `state` and returns the next output.
uint64_t splitMix64(uint64_t &state);

class Rng {
public:
  explicit Rng(uint64_t seed);

  /// Next raw 64-bit output of xoshiro256**.
  uint64_t next();
  /// Uniform double in [0, 1) with 53 random bits.
  double nextDouble();
  /// Uniform float in [lo, hi).
  float uniform(float lo, float hi);
  /// Standard normal (mean 0, stddev 1).
  double normal();

private:
  uint64_t s[4];
  bool hasSpare = false;
  double spare = 0;
};

void fillUniform(std::vector<float> &out, Rng &rng, float lo, float hi);
void fillNormal(std::vector<float> &out, Rng &rng, float mean, float stddev);

/// `count` values uniform in [lo, hi) from a fresh Rng(seed).
std::vector<float> randomUniform(size_t count, uint64_t seed, float lo = -1.f,
                                 float hi = 1.f);
/// `count` normal values from a fresh Rng(seed).
std::vector<float> randomNormal(size_t count, uint64_t seed, float mean = 0.f,
                                float stddev = 1.f);

} // namespace sinkattn::rt

#endif // SINKATTN_RUNTIME_RANDOM_H
