//===- ShapeInference.h - Shape rules of the train ops ----------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The shape rules of the train dialect as plain functions over static shapes.
// Each rule returns the result shape or a message saying why the operands have
// none; the ops' verifiers and `inferReturnTypes` turn that message into a
// diagnostic at the op, and unit tests call the rules directly.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_SHAPEINFERENCE_H
#define AMP_DIALECT_TRAIN_IR_SHAPEINFERENCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace amp {
namespace train {

/// A shape, or the reason no shape exists. Exactly one of the two is set.
class ShapeOrError {
public:
  /// A successful result.
  static ShapeOrError shape(llvm::ArrayRef<int64_t> dims) {
    ShapeOrError r;
    r.dims.assign(dims.begin(), dims.end());
    return r;
  }
  /// A failed result carrying `message` (no op name, no trailing period).
  static ShapeOrError error(std::string message) {
    ShapeOrError r;
    r.message = std::move(message);
    r.failed = true;
    return r;
  }

  /// True when a shape was computed.
  bool ok() const { return !failed; }
  /// The computed shape; only meaningful when ok().
  llvm::ArrayRef<int64_t> getShape() const { return dims; }
  /// The failure message; empty when ok().
  const std::string &getError() const { return message; }

private:
  llvm::SmallVector<int64_t, 4> dims;
  std::string message;
  bool failed = false;
};

/// Renders a shape as "[2, 3, 4]" for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// NumPy broadcasting of two shapes: trailing dimensions are aligned and each
/// pair must be equal or contain a 1.
ShapeOrError inferBroadcastShape(llvm::ArrayRef<int64_t> lhs,
                                 llvm::ArrayRef<int64_t> rhs);

/// True when `from` broadcasts to exactly `to` under NumPy rules.
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from,
                       llvm::ArrayRef<int64_t> to);

/// 2-D matrix product: [M, K] x [K, N] -> [M, N]; the transpose flags say the
/// operand is stored transposed ([K, M] resp. [N, K]).
ShapeOrError inferMatmulShape(llvm::ArrayRef<int64_t> lhs,
                              llvm::ArrayRef<int64_t> rhs, bool transposeLhs,
                              bool transposeRhs);

/// Batched matrix product: [..., M, K] x [..., K, N] -> [..., M, N], with the
/// transpose flags applied to the two trailing dimensions and the leading
/// (batch) dimensions broadcast with NumPy rules (each operand rank >= 3).
ShapeOrError inferBatchMatmulShape(llvm::ArrayRef<int64_t> lhs,
                                   llvm::ArrayRef<int64_t> rhs,
                                   bool transposeLhs, bool transposeRhs);

/// Attention: query [..., Sq, D], key [..., Sk, D], value [..., Sk, Dv] with
/// equal leading dimensions (rank >= 2) -> [..., Sq, Dv]; `mask`, when
/// given, broadcasts to the scores' [..., Sq, Sk].
ShapeOrError inferAttentionShape(llvm::ArrayRef<int64_t> query,
                                 llvm::ArrayRef<int64_t> key,
                                 llvm::ArrayRef<int64_t> value,
                                 std::optional<llvm::ArrayRef<int64_t>> mask);

/// NCHW convolution: input [N, C, H, W], filter [F, C / groups, KH, KW] ->
/// [N, F, OH, OW] with OH = (H + 2*padH - dilH*(KH-1) - 1) / strideH + 1
/// (likewise OW); `groups` divides C and F. `strides`, `padding` and
/// `dilation` each hold two values (H, W).
ShapeOrError inferConv2dShape(llvm::ArrayRef<int64_t> input,
                              llvm::ArrayRef<int64_t> filter,
                              llvm::ArrayRef<int64_t> strides,
                              llvm::ArrayRef<int64_t> padding,
                              llvm::ArrayRef<int64_t> dilation,
                              int64_t groups = 1);

/// NCHW pooling: input [N, C, H, W] -> [N, C, OH, OW] with
/// OH = (H + 2*padH - dilH*(KH-1) - 1) / strideH + 1. Padding may be at most
/// half the kernel.
ShapeOrError inferPool2dShape(llvm::ArrayRef<int64_t> input,
                              llvm::ArrayRef<int64_t> kernel,
                              llvm::ArrayRef<int64_t> strides,
                              llvm::ArrayRef<int64_t> padding,
                              llvm::ArrayRef<int64_t> dilation);

/// Permutes the dimensions: result[i] = input[permutation[i]].
ShapeOrError inferTransposeShape(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> permutation);

/// Reduction over `axes` (distinct, in [0, rank)); reduced dimensions are kept
/// as 1 when `keepDims`, else dropped.
ShapeOrError inferReduceShape(llvm::ArrayRef<int64_t> input,
                              llvm::ArrayRef<int64_t> axes, bool keepDims);

/// Concatenation along `axis`: all shapes have the same rank and agree on every
/// other dimension.
ShapeOrError
inferConcatShape(llvm::ArrayRef<llvm::SmallVector<int64_t, 4>> inputs,
                 int64_t axis);

/// Embedding lookup: table [V, D] and indices of any shape S -> S ++ [D].
ShapeOrError inferEmbeddingShape(llvm::ArrayRef<int64_t> table,
                                 llvm::ArrayRef<int64_t> indices);

/// Checks `axis` is a valid dimension of a rank-`rank` tensor; returns the
/// message for the diagnostic, or an empty string when valid.
std::string checkAxis(int64_t axis, int64_t rank);

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_SHAPEINFERENCE_H
