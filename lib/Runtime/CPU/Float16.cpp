//===- Float16.cpp - f16 and bf16 conversions on the host -----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Float16.h"

#include <cstring>

static uint32_t bitsOf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}

static float floatOf(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t amp::floatToHalf(float value) {
  uint32_t x = bitsOf(value);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t exponent = (x >> 23) & 0xFF;
  uint32_t mantissa = x & 0x7FFFFF;
  if (exponent == 0xFF) // inf, or NaN made quiet with its top payload bits
    return sign | 0x7C00 | (mantissa ? 0x200 | (mantissa >> 13) : 0);
  int32_t e = int32_t(exponent) - 127 + 15; // f16 biased exponent
  if (e >= 31)
    return sign | 0x7C00;
  if (e <= 0) {
    // An f16 subnormal (or zero): m * 2^-24 with m = full >> (14 - e).
    if (e < -10)
      return sign;
    uint32_t full = mantissa | 0x800000;
    uint32_t shift = 14 - e;
    uint32_t m = full >> shift;
    uint32_t rem = full & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (m & 1)))
      ++m; // may carry into the smallest normal, which is correct
    return sign | m;
  }
  uint32_t result = sign | (uint32_t(e) << 10) | (mantissa >> 13);
  uint32_t rem = mantissa & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (result & 1)))
    ++result; // may carry into the exponent, up to inf
  return result;
}

float amp::halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1F;
  uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31)
    return floatOf(sign | 0x7F800000 | (mantissa << 13));
  return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t amp::floatToBFloat(float value) {
  uint32_t x = bitsOf(value);
  if ((x & 0x7FFFFFFF) > 0x7F800000)
    return (x >> 16) | 0x40; // quiet NaN
  uint32_t bias = 0x7FFF + ((x >> 16) & 1);
  return (x + bias) >> 16;
}

float amp::bfloatToFloat(uint16_t bits) {
  return floatOf(uint32_t(bits) << 16);
}
