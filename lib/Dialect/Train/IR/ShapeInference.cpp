//===- ShapeInference.cpp - Shape rules of the train ops ------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/ShapeInference.h"

#include "mlir/Dialect/Traits.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace amp::train;
using llvm::ArrayRef;
using llvm::SmallVector;

std::string amp::train::formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << '[';
  llvm::interleaveComma(shape, os);
  os << ']';
  return s;
}

/// Formats the parts of a message into one string.
template <typename... Ts> static std::string msg(const Ts &...parts) {
  std::string s;
  llvm::raw_string_ostream os(s);
  (os << ... << parts);
  return s;
}

ShapeOrError amp::train::inferBroadcastShape(ArrayRef<int64_t> lhs,
                                             ArrayRef<int64_t> rhs) {
  // Upstream's NumPy rule; amp adds which dimensions disagree.
  SmallVector<int64_t, 4> result;
  if (mlir::OpTrait::util::getBroadcastedShape(lhs, rhs, result))
    return ShapeOrError::shape(result);
  size_t rank = std::max(lhs.size(), rhs.size());
  for (size_t i = 0; i < rank; ++i) {
    // Aligned from the trailing dimension; a missing dimension acts as 1.
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (l != r && l != 1 && r != 1)
      return ShapeOrError::error(
          msg("operands of shapes ", formatShape(lhs), " and ",
              formatShape(rhs), " are not broadcast-compatible (dimension ", l,
              " vs ", r, " at ", i + 1, " from the end)"));
  }
  return ShapeOrError::error(msg("operands of shapes ", formatShape(lhs),
                                 " and ", formatShape(rhs),
                                 " are not broadcast-compatible"));
}

bool amp::train::isBroadcastableTo(ArrayRef<int64_t> from,
                                   ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  ShapeOrError r = inferBroadcastShape(from, to);
  return r.ok() && r.getShape() == to;
}

/// The (rows, cols) of a stored matrix, swapped when `transposed`.
static std::pair<int64_t, int64_t> logicalDims(int64_t rows, int64_t cols,
                                               bool transposed) {
  return transposed ? std::make_pair(cols, rows) : std::make_pair(rows, cols);
}

ShapeOrError amp::train::inferMatmulShape(ArrayRef<int64_t> lhs,
                                          ArrayRef<int64_t> rhs,
                                          bool transposeLhs,
                                          bool transposeRhs) {
  if (lhs.size() != 2 || rhs.size() != 2)
    return ShapeOrError::error(msg("operands must be rank 2, got ",
                                   formatShape(lhs), " and ", formatShape(rhs),
                                   " (use train.batch_matmul for rank 3)"));
  auto [m, k1] = logicalDims(lhs[0], lhs[1], transposeLhs);
  auto [k2, n] = logicalDims(rhs[0], rhs[1], transposeRhs);
  if (k1 != k2)
    return ShapeOrError::error(
        msg("contracting dims ", k1, " and ", k2, " differ (lhs ",
            formatShape(lhs), transposeLhs ? " transposed" : "", ", rhs ",
            formatShape(rhs), transposeRhs ? " transposed" : "", ")"));
  return ShapeOrError::shape({m, n});
}

ShapeOrError amp::train::inferBatchMatmulShape(ArrayRef<int64_t> lhs,
                                               ArrayRef<int64_t> rhs,
                                               bool transposeLhs,
                                               bool transposeRhs) {
  if (lhs.size() < 3 || rhs.size() < 3)
    return ShapeOrError::error(msg("operands must be at least rank 3, got ",
                                   formatShape(lhs), " and ",
                                   formatShape(rhs)));
  // The leading (batch) dimensions broadcast (NumPy rules, as torch.matmul:
  // [B, H, S, D] x [B, 1, D, S]).
  SmallVector<int64_t, 4> batch;
  ArrayRef<int64_t> lb = lhs.drop_back(2), rb = rhs.drop_back(2);
  if (!mlir::OpTrait::util::getBroadcastedShape(lb, rb, batch))
    return ShapeOrError::error(msg("batch dims ", formatShape(lb), " and ",
                                   formatShape(rb),
                                   " are not broadcast-compatible"));
  auto [m, k1] = logicalDims(lhs[lhs.size() - 2], lhs.back(), transposeLhs);
  auto [k2, n] = logicalDims(rhs[rhs.size() - 2], rhs.back(), transposeRhs);
  if (k1 != k2)
    return ShapeOrError::error(
        msg("contracting dims ", k1, " and ", k2, " differ (lhs ",
            formatShape(lhs), transposeLhs ? " transposed" : "", ", rhs ",
            formatShape(rhs), transposeRhs ? " transposed" : "", ")"));
  batch.push_back(m);
  batch.push_back(n);
  return ShapeOrError::shape(batch);
}

ShapeOrError
amp::train::inferAttentionShape(ArrayRef<int64_t> query, ArrayRef<int64_t> key,
                                ArrayRef<int64_t> value,
                                std::optional<ArrayRef<int64_t>> mask) {
  if (query.size() < 2 || key.size() != query.size() ||
      value.size() != query.size())
    return ShapeOrError::error(
        msg("query, key and value must have one rank >= 2, got ",
            formatShape(query), ", ", formatShape(key), " and ",
            formatShape(value)));
  if (query.drop_back(2) != key.drop_back(2) ||
      query.drop_back(2) != value.drop_back(2))
    return ShapeOrError::error(
        msg("query, key and value must have the same leading dims, got ",
            formatShape(query), ", ", formatShape(key), " and ",
            formatShape(value), " (repeat grouped key/value heads first)"));
  if (query.back() != key.back())
    return ShapeOrError::error(msg("query dim ", query.back(),
                                   " and key dim ", key.back(), " differ"));
  int64_t sk = key[key.size() - 2];
  if (value[value.size() - 2] != sk)
    return ShapeOrError::error(msg("key length ", sk, " and value length ",
                                   value[value.size() - 2], " differ"));
  SmallVector<int64_t, 4> scores(query.drop_back());
  scores.push_back(sk);
  if (mask && !isBroadcastableTo(*mask, scores))
    return ShapeOrError::error(msg("mask ", formatShape(*mask),
                                   " does not broadcast to the scores ",
                                   formatShape(scores)));
  SmallVector<int64_t, 4> result(query.drop_back());
  result.push_back(value.back());
  return ShapeOrError::shape(result);
}

/// Checks that a window attribute holds two values, each at least `min`.
static std::string checkPair(llvm::StringRef name, ArrayRef<int64_t> values,
                             int64_t min) {
  if (values.size() != 2)
    return msg(name, " must have 2 values (H, W), got ", values.size());
  for (int64_t v : values)
    if (v < min)
      return msg(name, " values must be >= ", min, ", got ",
                 formatShape(values));
  return "";
}

ShapeOrError amp::train::inferConv2dShape(ArrayRef<int64_t> input,
                                          ArrayRef<int64_t> filter,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilation,
                                          int64_t groups) {
  if (input.size() != 4)
    return ShapeOrError::error(
        msg("input must be rank 4 (NCHW), got ", formatShape(input)));
  if (filter.size() != 4)
    return ShapeOrError::error(
        msg("filter must be rank 4 (FCHW), got ", formatShape(filter)));
  if (groups < 1)
    return ShapeOrError::error(msg("groups must be at least 1, got ", groups));
  if (groups != 1) {
    if (input[1] % groups || filter[0] % groups)
      return ShapeOrError::error(msg("groups ", groups, " must divide the input channels ",
                                     input[1], " and the filters ", filter[0]));
    if (input[1] != filter[1] * groups)
      return ShapeOrError::error(msg("input channels ", input[1], " are not groups ",
                                     groups, " x filter channels ", filter[1]));
  }
  for (auto [name, values, min] : {std::make_tuple("strides", strides, 1),
                                   std::make_tuple("padding", padding, 0),
                                   std::make_tuple("dilation", dilation, 1)})
    if (std::string err = checkPair(name, values, min); !err.empty())
      return ShapeOrError::error(err);
  if (groups == 1 && input[1] != filter[1])
    return ShapeOrError::error(msg("input channels ", input[1],
                                   " and filter channels ", filter[1],
                                   " differ"));
  SmallVector<int64_t, 4> result = {input[0], filter[0], 0, 0};
  for (int d = 0; d < 2; ++d) {
    int64_t padded = input[2 + d] + 2 * padding[d];
    int64_t window = dilation[d] * (filter[2 + d] - 1) + 1;
    if (window > padded)
      return ShapeOrError::error(msg("window ", window, " (kernel ",
                                     filter[2 + d], ", dilation ", dilation[d],
                                     ") exceeds padded input ", padded,
                                     " in dimension ", d == 0 ? "H" : "W"));
    result[2 + d] = (padded - window) / strides[d] + 1;
  }
  return ShapeOrError::shape(result);
}

ShapeOrError amp::train::inferPool2dShape(ArrayRef<int64_t> input,
                                          ArrayRef<int64_t> kernel,
                                          ArrayRef<int64_t> strides,
                                          ArrayRef<int64_t> padding,
                                          ArrayRef<int64_t> dilation) {
  if (input.size() != 4)
    return ShapeOrError::error(
        msg("input must be rank 4 (NCHW), got ", formatShape(input)));
  for (auto [name, values, min] : {std::make_tuple("kernel", kernel, 1),
                                   std::make_tuple("strides", strides, 1),
                                   std::make_tuple("padding", padding, 0),
                                   std::make_tuple("dilation", dilation, 1)})
    if (std::string err = checkPair(name, values, min); !err.empty())
      return ShapeOrError::error(err);
  SmallVector<int64_t, 4> result = {input[0], input[1], 0, 0};
  for (int d = 0; d < 2; ++d) {
    if (2 * padding[d] > kernel[d])
      return ShapeOrError::error(
          msg("padding ", padding[d], " is more than half the kernel ",
              kernel[d], " in dimension ", d == 0 ? "H" : "W"));
    int64_t padded = input[2 + d] + 2 * padding[d];
    int64_t window = dilation[d] * (kernel[d] - 1) + 1;
    if (window > padded)
      return ShapeOrError::error(
          dilation[d] == 1
              ? msg("kernel ", kernel[d], " exceeds padded input ", padded,
                    " in dimension ", d == 0 ? "H" : "W")
              : msg("window ", window, " (kernel ", kernel[d], ", dilation ",
                    dilation[d], ") exceeds padded input ", padded,
                    " in dimension ", d == 0 ? "H" : "W"));
    result[2 + d] = (padded - window) / strides[d] + 1;
  }
  return ShapeOrError::shape(result);
}

ShapeOrError amp::train::inferTransposeShape(ArrayRef<int64_t> input,
                                             ArrayRef<int64_t> permutation) {
  if (permutation.size() != input.size())
    return ShapeOrError::error(msg(
        "permutation ", formatShape(permutation), " has ", permutation.size(),
        " entries for a rank-", input.size(), " input"));
  llvm::SmallBitVector seen(input.size());
  SmallVector<int64_t, 4> result;
  for (int64_t p : permutation) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p])
      return ShapeOrError::error(msg("permutation ", formatShape(permutation),
                                     " is not a permutation of 0..",
                                     input.size() - 1));
    seen.set(p);
    result.push_back(input[p]);
  }
  return ShapeOrError::shape(result);
}

std::string amp::train::checkAxis(int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return msg("axis ", axis, " is out of range for a rank-", rank,
               " input (expected 0..", rank - 1, ")");
  return "";
}

ShapeOrError amp::train::inferReduceShape(ArrayRef<int64_t> input,
                                          ArrayRef<int64_t> axes,
                                          bool keepDims) {
  if (axes.empty())
    return ShapeOrError::error("axes must not be empty");
  llvm::SmallBitVector reduced(input.size());
  for (int64_t a : axes) {
    if (std::string err = checkAxis(a, input.size()); !err.empty())
      return ShapeOrError::error(err);
    if (reduced[a])
      return ShapeOrError::error(msg("axis ", a, " is listed twice"));
    reduced.set(a);
  }
  SmallVector<int64_t, 4> result;
  for (auto [i, d] : llvm::enumerate(input)) {
    if (!reduced[i])
      result.push_back(d);
    else if (keepDims)
      result.push_back(1);
  }
  return ShapeOrError::shape(result);
}

ShapeOrError
amp::train::inferConcatShape(ArrayRef<SmallVector<int64_t, 4>> inputs,
                             int64_t axis) {
  if (inputs.empty())
    return ShapeOrError::error("needs at least one operand");
  ArrayRef<int64_t> first = inputs.front();
  if (std::string err = checkAxis(axis, first.size()); !err.empty())
    return ShapeOrError::error(err);
  SmallVector<int64_t, 4> result(first.begin(), first.end());
  for (auto [i, shape] : llvm::enumerate(inputs.drop_front())) {
    if (shape.size() != first.size())
      return ShapeOrError::error(msg("operand ", i + 1, " has rank ",
                                     shape.size(), ", operand 0 has rank ",
                                     first.size()));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (static_cast<int64_t>(d) == axis)
        continue;
      if (shape[d] != first[d])
        return ShapeOrError::error(
            msg("operand ", i + 1, " shape ", formatShape(shape),
                " differs from operand 0 shape ", formatShape(first),
                " in dimension ", d, " (only axis ", axis, " may differ)"));
    }
    result[axis] += shape[axis];
  }
  return ShapeOrError::shape(result);
}

ShapeOrError amp::train::inferEmbeddingShape(ArrayRef<int64_t> table,
                                             ArrayRef<int64_t> indices) {
  if (table.size() != 2)
    return ShapeOrError::error(
        msg("table must be rank 2 [vocab, dim], got ", formatShape(table)));
  SmallVector<int64_t, 4> result(indices.begin(), indices.end());
  result.push_back(table[1]);
  return ShapeOrError::shape(result);
}
