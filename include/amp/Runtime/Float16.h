//===- Float16.h - f16 and bf16 conversions on the host ---------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Bit-exact IEEE conversions between f32 and the two 16-bit formats, in
// portable C++ (no F16C or AVX512-FP16 needed). Shared by the runtime and
// the host side of amp-run; no MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_FLOAT16_H
#define AMP_RUNTIME_FLOAT16_H

#include <cstdint>

namespace amp {

/// f32 -> f16 bits, round to nearest even (overflow to inf, NaN kept).
uint16_t floatToHalf(float value);
/// f16 bits -> f32 (exact).
float halfToFloat(uint16_t bits);
/// f32 -> bf16 bits, round to nearest even (NaN kept quiet).
uint16_t floatToBFloat(float value);
/// bf16 bits -> f32 (exact).
float bfloatToFloat(uint16_t bits);

} // namespace amp

#endif // AMP_RUNTIME_FLOAT16_H
