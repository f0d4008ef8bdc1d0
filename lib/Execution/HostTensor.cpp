//===- HostTensor.cpp - Dense tensors in host memory ----------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/HostTensor.h"

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

std::optional<ElementKind> amp::elementKindNamed(llvm::StringRef name) {
  for (ElementKind kind :
       {ElementKind::F32, ElementKind::F16, ElementKind::BF16, ElementKind::I32,
        ElementKind::I1})
    if (elementName(kind) == name)
      return kind;
  return std::nullopt;
}

HostTensor::HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape)
    : kind(kind), shape(shape.begin(), shape.end()) {
  size_t bytes = getSizeInBytes();
  storage.resize((bytes + sizeof(Block) - 1) / sizeof(Block) + 1);
  std::memset(storage.data(), 0, storage.size() * sizeof(Block));
}

HostTensor HostTensor::borrow(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                              void *data) {
  HostTensor view(kind, llvm::ArrayRef<int64_t>{});
  view.shape.assign(shape.begin(), shape.end());
  view.storage.clear();
  view.external = data;
  return view;
}

int64_t amp::numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string amp::tensorTypeString(ElementKind kind,
                                  llvm::ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "tensor<";
  for (int64_t d : shape)
    os << d << 'x';
  os << elementName(kind) << '>';
  return s;
}

HostTensor HostTensor::clone() const {
  HostTensor copy(kind, shape);
  std::memcpy(copy.data(), data(), getSizeInBytes());
  return copy;
}

int64_t HostTensor::getNumElements() const { return numElements(shape); }

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
  return tensorTypeString(kind, shape);
}
