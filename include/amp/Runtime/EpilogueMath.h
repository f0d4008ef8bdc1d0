//===- EpilogueMath.h - Element math of the epilogue fallbacks --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The per-element functions of the runtime's fallback kernels for cuBLASLt's
// aux epilogues (EpilogueKernels.cu), in f32 like cuBLASLt's epilogues. Host
// and device code: the unit tests check them on the host against double.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_EPILOGUEMATH_H
#define AMP_RUNTIME_EPILOGUEMATH_H

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define AMP_HOST_DEVICE __host__ __device__
#else
#define AMP_HOST_DEVICE
#endif

namespace amp {
namespace cuda {

/// The tanh approximation of GELU: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715
/// x^3))), cuBLASLt's GELU epilogue.
AMP_HOST_DEVICE inline float geluTanh(float x) {
  const float c = 0.7978845608028654f; // sqrt(2 / pi)
  float t = tanhf(c * (x + 0.044715f * x * x * x));
  return 0.5f * x * (1.0f + t);
}

/// Its derivative, cuBLASLt's DGELU epilogue's factor.
AMP_HOST_DEVICE inline float geluTanhGrad(float x) {
  const float c = 0.7978845608028654f;
  float t = tanhf(c * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) +
         0.5f * x * (1.0f - t * t) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

/// The ReLU mask's bit of element `index` of a row-major m x n matrix (n a
/// multiple of 128): cuBLASLt's column-major view has n rows and a leading
/// dimension of n bits, so element (i, j) is bit i n + j, least significant
/// first, in little-endian 32-bit words.
AMP_HOST_DEVICE inline int64_t reluMaskWord(int64_t index) {
  return index / 32;
}
AMP_HOST_DEVICE inline uint32_t reluMaskBit(int64_t index) {
  return uint32_t(1) << (index % 32);
}

} // namespace cuda
} // namespace amp

#endif // AMP_RUNTIME_EPILOGUEMATH_H
