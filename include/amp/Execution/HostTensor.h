//===- HostTensor.h - Dense tensors in host memory --------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_HOSTTENSOR_H
#define AMP_EXECUTION_HOSTTENSOR_H

#include "amp/Runtime/Float16.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace amp {

/// The element types a compiled step exchanges with the host (i1 flags are
/// stored one byte each, as LLVM stores them in memory).
enum class ElementKind { F32, F16, BF16, I32, I1 };

/// The size of one element in bytes.
unsigned elementBytes(ElementKind kind);
/// "f32", "f16", "bf16", "i32" or "i1".
llvm::StringRef elementName(ElementKind kind);
/// The number of elements of a tensor of `shape`.
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// "tensor<2x3xf16>" for `kind` and `shape`.
std::string tensorTypeString(ElementKind kind, llvm::ArrayRef<int64_t> shape);

/// The kind named "f32", "f16", "bf16", "i32" or "i1".
std::optional<ElementKind> elementKindNamed(llvm::StringRef name);

/// A dense row-major tensor in host memory, 64-byte aligned. f16 and bf16
/// elements are stored as their bit patterns.
class HostTensor {
public:
  /// A zero-filled tensor.
  HostTensor(ElementKind kind, llvm::ArrayRef<int64_t> shape);

  /// Copies copy the elements (a view's copy is a view). Moves take them
  /// and are noexcept, so a growing std::vector<HostTensor> moves its
  /// tensors instead of copying every element of each.
  HostTensor(const HostTensor &) = default;
  HostTensor &operator=(const HostTensor &) = default;
  HostTensor(HostTensor &&other) noexcept
      : kind(other.kind), shape(std::move(other.shape)),
        storage(std::move(other.storage)), external(other.external) {}
  HostTensor &operator=(HostTensor &&other) noexcept {
    kind = other.kind;
    shape = std::move(other.shape);
    storage = std::move(other.storage);
    external = other.external;
    return *this;
  }

  /// A float tensor holding `values` rounded (RNE) to `kind`.
  static HostTensor fromFloats(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                               llvm::ArrayRef<float> values);
  /// An i32 tensor holding `values`.
  static HostTensor fromInts(llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int32_t> values);
  /// An i1 tensor holding `values`.
  static HostTensor fromBools(llvm::ArrayRef<int64_t> shape,
                              llvm::ArrayRef<bool> values);
  /// A view of `data`, which the caller owns and keeps alive while the view
  /// is used: nothing is allocated or copied, and copies of a view are views
  /// of the same memory. `data` holds the tensor row-major, 64-byte aligned.
  static HostTensor borrow(ElementKind kind, llvm::ArrayRef<int64_t> shape,
                           void *data);
  /// An owner of a copy of the elements (of a view's too, unlike a copy).
  HostTensor clone() const;
  /// Whether this is a view (borrow) rather than an owner of its elements.
  bool isBorrowed() const { return external != nullptr; }

  ElementKind getKind() const { return kind; }
  llvm::ArrayRef<int64_t> getShape() const { return shape; }
  int64_t getNumElements() const;
  size_t getSizeInBytes() const {
    return getNumElements() * elementBytes(kind);
  }

  /// The elements widened to f32 (exact for every kind but large i32).
  std::vector<float> toFloats() const;
  /// Element `i` (row-major) widened to f64.
  double getAsDouble(int64_t i) const;

  void *data() { return external ? external : storage.data(); }
  const void *data() const { return external ? external : storage.data(); }

  /// "tensor<2x3xf16>".
  std::string typeString() const;

private:
  ElementKind kind;
  llvm::SmallVector<int64_t, 4> shape;
  /// 64-byte blocks, so the data is aligned for any vector width.
  struct alignas(64) Block {
    unsigned char bytes[64];
  };
  std::vector<Block> storage;
  /// The elements of a view (borrow); null for an owner.
  void *external = nullptr;
};

static_assert(std::is_nothrow_move_constructible_v<HostTensor>,
              "std::vector<HostTensor> would copy every element on growth");

} // namespace amp

#endif // AMP_EXECUTION_HOSTTENSOR_H
