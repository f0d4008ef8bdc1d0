//===- HostTensor.cpp - Dense tensors in host memory ----------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/HostTensor.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cstring>

using namespace amp;

unsigned amp::elementBytes(ElementKind kind) {
  switch (kind) {
  case ElementKind::F16:
  case ElementKind::BF16:
    return 2;
  case ElementKind::I1:
    return 1;
  default:
    return 4;
  }
}

llvm::StringRef amp::elementName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "f32";
  case ElementKind::F16:
    return "f16";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::I32:
    return "i32";
  case ElementKind::I1:
    return "i1";
  }
  return "?";
}

std::optional<ElementKind> amp::elementKindOf(mlir::Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  if (type.isSignlessInteger(1))
    return ElementKind::I1;
  return std::nullopt;
}

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

HostTensor::HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape)
    : kind(kind), shape(shape.begin(), shape.end()) {
  size_t bytes = getSizeInBytes();
  storage.resize((bytes + sizeof(Block) - 1) / sizeof(Block) + 1);
  std::memset(storage.data(), 0, storage.size() * sizeof(Block));
}

int64_t HostTensor::getNumElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::fromFloats(ElementKind kind,
                                  llvm::ArrayRef<int64_t> shape,
                                  llvm::ArrayRef<float> values) {
  HostTensor t(kind, shape);
  assert(int64_t(values.size()) == t.getNumElements() && "size mismatch");
  assert(kind != ElementKind::I32 && kind != ElementKind::I1 &&
         "use fromInts / fromBools for integers");
  for (auto [i, v] : llvm::enumerate(values)) {
    if (kind == ElementKind::F32)
      static_cast<float *>(t.data())[i] = v;
    else
      static_cast<uint16_t *>(t.data())[i] =
          kind == ElementKind::F16 ? floatToHalf(v) : floatToBFloat(v);
  }
  return t;
}

HostTensor HostTensor::fromInts(llvm::ArrayRef<int64_t> shape,
                                llvm::ArrayRef<int32_t> values) {
  HostTensor t(ElementKind::I32, shape);
  assert(int64_t(values.size()) == t.getNumElements() && "size mismatch");
  std::memcpy(t.data(), values.data(), values.size() * sizeof(int32_t));
  return t;
}

HostTensor HostTensor::fromBools(llvm::ArrayRef<int64_t> shape,
                                 llvm::ArrayRef<bool> values) {
  HostTensor t(ElementKind::I1, shape);
  assert(int64_t(values.size()) == t.getNumElements() && "size mismatch");
  for (auto [i, v] : llvm::enumerate(values))
    static_cast<uint8_t *>(t.data())[i] = v ? 1 : 0;
  return t;
}

double HostTensor::getAsDouble(int64_t i) const {
  switch (kind) {
  case ElementKind::F32:
    return static_cast<const float *>(data())[i];
  case ElementKind::F16:
    return halfToFloat(static_cast<const uint16_t *>(data())[i]);
  case ElementKind::BF16:
    return bfloatToFloat(static_cast<const uint16_t *>(data())[i]);
  case ElementKind::I32:
    return static_cast<const int32_t *>(data())[i];
  case ElementKind::I1:
    return static_cast<const uint8_t *>(data())[i] & 1;
  }
  return 0.0;
}

std::vector<float> HostTensor::toFloats() const {
  std::vector<float> values(getNumElements());
  for (int64_t i = 0, e = getNumElements(); i < e; ++i)
    values[i] = static_cast<float>(getAsDouble(i));
  return values;
}

std::string HostTensor::typeString() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "tensor<";
  for (int64_t d : shape)
    os << d << 'x';
  os << elementName(kind) << '>';
  return s;
}
