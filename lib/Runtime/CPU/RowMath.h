//===- RowMath.h - Vectorized row loops of the CPU kernels ------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// exp, exp-and-sum and maximum over a row of f32 values, shared by the
// runtime's attention and LM-head kernels (Attention.cpp,
// LinearCrossEntropy.cpp). Static: each kernel's file has its own copy of
// the target_clones functions.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_LIB_RUNTIME_CPU_ROWMATH_H
#define AMP_LIB_RUNTIME_CPU_ROWMATH_H

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace amp::runtime {

// The element-wise work of the kernels, one row at a time, in functions
// GCC compiles for AVX-512, AVX2 + FMA and the baseline and picks among at
// load time (target_clones): the loops vectorize, exp included.
#define AMP_VECTOR_CLONES                                                      \
  __attribute__((target_clones("avx512f", "arch=haswell", "default")))

/// exp(x) within 2 ulps for x in [-87, 88] (Cephes' expf: x = n ln2 + r,
/// |r| <= ln2 / 2, a degree-6 polynomial, 2^n from the exponent bits);
/// exactly 0 below -87.3 (-inf included), as the kernels need for masked
/// scores. Plain arithmetic, so a loop of it vectorizes.
static inline float vectorExp(float x) {
  float xc = std::min(std::max(x, -87.0f), 88.0f);
  // Round to nearest by adding and subtracting 1.5 * 2^23.
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  int32_t bits = (int32_t(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return x < -87.3f ? 0.0f : p * scale;
}

/// row[c] = exp(row[c] - m), returning their sum.
AMP_VECTOR_CLONES static float expAndSum(float *row, int64_t cols, float m) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < cols; ++c) {
    float e = vectorExp(row[c] - m);
    row[c] = e;
    sum += e;
  }
  return sum;
}

/// row[c] = exp(row[c] - l).
[[maybe_unused]] AMP_VECTOR_CLONES static void
expShifted(float *row, int64_t cols, float l) {
  for (int64_t c = 0; c < cols; ++c)
    row[c] = vectorExp(row[c] - l);
}

/// The largest of `cols` values and `m` (-inf for none). Sixteen running
/// maxima, one per lane, element-wise (a loop GCC vectorizes, where a
/// max reduction, `omp simd` or not, stayed scalar), then combined.
AMP_VECTOR_CLONES static float rowMaximum(const float *row, int64_t cols,
                                          float m) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l)
    lanes[l] = m;
  int64_t c = 0;
  for (; c + kLanes <= cols; c += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      lanes[l] = row[c + l] > lanes[l] ? row[c + l] : lanes[l];
  for (; c < cols; ++c)
    m = std::max(m, row[c]);
  for (int64_t l = 0; l < kLanes; ++l)
    m = std::max(m, lanes[l]);
  return m;
}

/// x rounded to bf16 (to nearest, ties to even), into `out`; NaN stays NaN.
AMP_VECTOR_CLONES static void toBFloat(const float *x, uint16_t *out,
                                       int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    out[i] = uint16_t(x[i] != x[i] ? (bits >> 16) | 0x40u : rounded);
  }
}

/// Rounds `count` floats to bf16 (to nearest, ties to even) and back, in
/// place; NaN stays NaN.
AMP_VECTOR_CLONES static void roundToBFloat(float *x, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], sizeof(bits));
    uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
    float y;
    std::memcpy(&y, &rounded, sizeof(y));
    x[i] = x[i] != x[i] ? x[i] : y;
  }
}

} // namespace amp::runtime

#endif // AMP_LIB_RUNTIME_CPU_ROWMATH_H
