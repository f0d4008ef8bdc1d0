//===- TrainOps.cpp - Ops of the train dialect ----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Shape inference and verifiers. Every diagnostic names the op and the rule
// that failed; the rules themselves live in ShapeInference.cpp. Folders and
// canonicalization patterns are in TrainFolds.cpp.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/IR/ElementwiseBuilders.h"
#include "amp/Dialect/Train/IR/ShapeInference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace mlir;
using namespace amp::train;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Emits "'<opName>' op <message>" at `location` (if any) and fails.
static LogicalResult emitOpFailure(std::optional<Location> location,
                                   StringRef opName, const Twine &message) {
  return emitOptionalError(location, "'", opName, "' op ", message);
}

/// The type as a ranked tensor, or null (builders may pass anything).
static RankedTensorType asTensor(Type type) {
  return dyn_cast_or_null<RankedTensorType>(type);
}

/// Checks that the operands' element types agree; a mismatch names both.
static LogicalResult checkSameElementType(std::optional<Location> location,
                                          StringRef opName, RankedTensorType a,
                                          RankedTensorType b) {
  if (a.getElementType() == b.getElementType())
    return success();
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "operand element types '" << a.getElementType() << "' and '"
     << b.getElementType() << "' differ (insert a train.cast)";
  return emitOpFailure(location, opName, message);
}

/// Appends a tensor type of `result`'s shape and `elementType`, or reports the
/// rule's failure at the op.
static LogicalResult pushResult(std::optional<Location> location,
                                StringRef opName, const ShapeOrError &result,
                                Type elementType,
                                SmallVectorImpl<Type> &results) {
  if (!result.ok())
    return emitOpFailure(location, opName, result.getError());
  results.push_back(RankedTensorType::get(result.getShape(), elementType));
  return success();
}

/// Fails quietly (the ODS type constraints report it) when any type is not a
/// ranked tensor.
template <typename... Ts> static bool allRanked(Ts... types) {
  return (asTensor(types) && ...);
}

//===----------------------------------------------------------------------===//
// Element-wise binary ops, pooling, reductions (shared rules)
//===----------------------------------------------------------------------===//

LogicalResult amp::train::inferBroadcastResult(StringRef opName,
                                               std::optional<Location> location,
                                               Type lhsType, Type rhsType,
                                               SmallVectorImpl<Type> &results) {
  if (!allRanked(lhsType, rhsType))
    return failure();
  auto lhs = asTensor(lhsType), rhs = asTensor(rhsType);
  if (failed(checkSameElementType(location, opName, lhs, rhs)))
    return failure();
  return pushResult(location, opName,
                    inferBroadcastShape(lhs.getShape(), rhs.getShape()),
                    lhs.getElementType(), results);
}

LogicalResult amp::train::inferPool2dResult(
    StringRef opName, std::optional<Location> location, Type inputType,
    ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
    SmallVectorImpl<Type> &results) {
  auto input = asTensor(inputType);
  if (!input)
    return failure();
  return pushResult(
      location, opName,
      inferPool2dShape(input.getShape(), kernel, strides, padding, dilation),
      input.getElementType(), results);
}

LogicalResult amp::train::inferReduceResult(
    StringRef opName, std::optional<Location> location, Type inputType,
    ArrayRef<int64_t> axes, bool keepDims, SmallVectorImpl<Type> &results) {
  auto input = asTensor(inputType);
  if (!input)
    return failure();
  return pushResult(location, opName,
                    inferReduceShape(input.getShape(), axes, keepDims),
                    input.getElementType(), results);
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// Shared rule of matmul and batch_matmul.
template <typename AdaptorT>
static LogicalResult
inferContraction(StringRef opName, std::optional<Location> location,
                 AdaptorT adaptor, SmallVectorImpl<Type> &results,
                 bool batched) {
  if (!allRanked(adaptor.getLhs().getType(), adaptor.getRhs().getType()))
    return failure();
  auto lhs = asTensor(adaptor.getLhs().getType());
  auto rhs = asTensor(adaptor.getRhs().getType());
  if (failed(checkSameElementType(location, opName, lhs, rhs)))
    return failure();
  ShapeOrError shape =
      batched ? inferBatchMatmulShape(lhs.getShape(), rhs.getShape(),
                                      adaptor.getTransposeLhs(),
                                      adaptor.getTransposeRhs())
              : inferMatmulShape(lhs.getShape(), rhs.getShape(),
                                 adaptor.getTransposeLhs(),
                                 adaptor.getTransposeRhs());
  return pushResult(location, opName, shape, lhs.getElementType(), results);
}

/// A contraction's optional bias: `operand`'s element type, shape [size]
/// (`what` names the dimension it runs along).
static LogicalResult checkBias(std::optional<Location> location,
                               StringRef opName, RankedTensorType operand,
                               Value bias, int64_t size, StringRef what) {
  if (!bias)
    return success();
  auto biasType = asTensor(bias.getType());
  if (!biasType)
    return failure();
  if (failed(checkSameElementType(location, opName, operand, biasType)))
    return failure();
  if (biasType.getShape() != ArrayRef<int64_t>{size})
    return emitOpFailure(location, opName,
                         "bias shape " + formatShape(biasType.getShape()) +
                             " is not [" + Twine(size) + "] (" + what + ")");
  return success();
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (failed(inferContraction(getOperationName(), location, adaptor, results,
                              /*batched=*/false)))
    return failure();
  return checkBias(location, getOperationName(),
                   asTensor(adaptor.getLhs().getType()), adaptor.getBias(),
                   cast<RankedTensorType>(results.front()).getDimSize(1),
                   "the result's columns");
}

LogicalResult BatchMatmulOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> location,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  return inferContraction(getOperationName(), location, adaptor, results,
                          /*batched=*/true);
}

LogicalResult Conv2dOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (!allRanked(adaptor.getInput().getType(), adaptor.getFilter().getType()))
    return failure();
  auto input = asTensor(adaptor.getInput().getType());
  auto filter = asTensor(adaptor.getFilter().getType());
  if (failed(checkSameElementType(location, getOperationName(), input, filter)))
    return failure();
  if (failed(pushResult(location, getOperationName(),
                        inferConv2dShape(input.getShape(), filter.getShape(),
                                         adaptor.getStrides(),
                                         adaptor.getPadding(),
                                         adaptor.getDilation(),
                                         adaptor.getGroups()),
                        input.getElementType(), results)))
    return failure();
  return checkBias(location, getOperationName(), input, adaptor.getBias(),
                   filter.getDimSize(0), "the filter's output channels");
}

/// The accumulator of a contraction: the `accumulate` attribute, else f32 for
/// f16/bf16 operands and the operand type otherwise.
static Type accumulatorType(std::optional<Type> accumulate, Type element) {
  if (accumulate)
    return *accumulate;
  if (isa<Float16Type, BFloat16Type>(element))
    return Float32Type::get(element.getContext());
  return element;
}

/// An explicit accumulator must be f32 or the operand type.
static LogicalResult
verifyAccumulator(Operation *op, std::optional<Type> accumulate, Type element) {
  if (!accumulate || *accumulate == element || accumulate->isF32())
    return success();
  return op->emitOpError("accumulate type must be f32 or the operand type ")
         << element << ", got " << *accumulate;
}

Type MatmulOp::getAccumulatorType() {
  return accumulatorType(getAccumulate(), getLhs().getType().getElementType());
}
LogicalResult MatmulOp::verify() {
  return verifyAccumulator(*this, getAccumulate(),
                           getLhs().getType().getElementType());
}
Type BatchMatmulOp::getAccumulatorType() {
  return accumulatorType(getAccumulate(), getLhs().getType().getElementType());
}
LogicalResult BatchMatmulOp::verify() {
  return verifyAccumulator(*this, getAccumulate(),
                           getLhs().getType().getElementType());
}
Type Conv2dOp::getAccumulatorType() {
  return accumulatorType(getAccumulate(),
                         getInput().getType().getElementType());
}
LogicalResult Conv2dOp::verify() {
  return verifyAccumulator(*this, getAccumulate(),
                           getInput().getType().getElementType());
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The attention result's shape (inferAttentionShape's rules) for the
/// operand types, or the rule's message.
static ShapeOrError attentionShape(RankedTensorType query, RankedTensorType key,
                                   RankedTensorType value, Type mask) {
  std::optional<ArrayRef<int64_t>> maskShape;
  if (auto m = asTensor(mask))
    maskShape = m.getShape();
  return inferAttentionShape(query.getShape(), key.getShape(),
                             value.getShape(), maskShape);
}

/// Checks what train.attention and train.attention_grad share: one float
/// type for query, key and value; a mask of that type or i1; a positive
/// scale.
template <typename OpT> static LogicalResult verifyAttentionOperands(OpT op) {
  Type element = op.getQuery().getType().getElementType();
  Type key = op.getKey().getType().getElementType(),
       value = op.getValue().getType().getElementType();
  if (key != element || value != element)
    return op.emitOpError("query, key and value element types ")
           << element << ", " << key << " and " << value
           << " differ (insert a train.cast)";
  if (Value mask = op.getMask()) {
    Type m = cast<RankedTensorType>(mask.getType()).getElementType();
    if (m != element && !m.isInteger(1))
      return op.emitOpError("mask element type ")
             << m << " must be i1 (a keep-mask) or the query's " << element
             << " (an additive mask)";
  }
  if (!(op.getScale().convertToDouble() > 0.0))
    return op.emitOpError("scale must be positive, got ")
           << op.getScale().convertToDouble();
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *context,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto query = asTensor(adaptor.getQuery().getType());
  auto key = asTensor(adaptor.getKey().getType());
  auto value = asTensor(adaptor.getValue().getType());
  if (!query || !key || !value)
    return failure();
  Type mask = adaptor.getMask() ? adaptor.getMask().getType() : Type();
  ShapeOrError shape = attentionShape(query, key, value, mask);
  if (failed(pushResult(location, getOperationName(), shape,
                        query.getElementType(), results)))
    return failure();
  results.push_back(RankedTensorType::get(query.getShape().drop_back(),
                                          Float32Type::get(context)));
  return success();
}

Type AttentionOp::getAccumulatorType() {
  return accumulatorType(getAccumulate(),
                         getQuery().getType().getElementType());
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(*this)))
    return failure();
  return verifyAccumulator(*this, getAccumulate(),
                           getQuery().getType().getElementType());
}

LogicalResult AttentionGradOp::verify() {
  auto query = getQuery().getType(), key = getKey().getType(),
       value = getValue().getType();
  if (failed(verifyAttentionOperands(*this)))
    return failure();
  ShapeOrError shape =
      attentionShape(query, key, value, getMask() ? getMask().getType() : Type());
  if (!shape.ok())
    return emitOpError(shape.getError());
  auto output = getOutput().getType();
  if (output.getShape() != ArrayRef<int64_t>(shape.getShape()) ||
      output.getElementType() != query.getElementType())
    return emitOpError("output type ")
           << output << " is not the forward result's "
           << RankedTensorType::get(shape.getShape(), query.getElementType());
  if (getLse().getType().getShape() != query.getShape().drop_back())
    return emitOpError("lse shape ")
           << formatShape(getLse().getType().getShape())
           << " must be the query's leading dims "
           << formatShape(query.getShape().drop_back());
  return success();
}

//===----------------------------------------------------------------------===//
// Softmax, normalization, dropout
//===----------------------------------------------------------------------===//

/// Checks the softmax axis against the input rank.
template <typename OpT> static LogicalResult verifySoftmaxLike(OpT op) {
  std::string err = checkAxis(op.getAxis(), op.getInput().getType().getRank());
  if (!err.empty())
    return op.emitOpError(err);
  return success();
}

LogicalResult SoftmaxOp::verify() {
  if (failed(verifySoftmaxLike(*this)))
    return failure();
  if (!getCausal())
    return success();
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  if (shape.size() < 2 || shape[shape.size() - 1] != shape[shape.size() - 2] ||
      static_cast<int64_t>(getAxis()) != static_cast<int64_t>(shape.size()) - 1)
    return emitOpError("causal softmax needs square trailing [S, S] scores "
                       "and axis = the last dimension, got shape ")
           << formatShape(shape) << " and axis " << getAxis();
  return success();
}
LogicalResult LogSoftmaxOp::verify() { return verifySoftmaxLike(*this); }

/// Checks a normalization epsilon.
static LogicalResult verifyEpsilon(Operation *op, double epsilon) {
  if (!(epsilon > 0.0))
    return op->emitOpError("epsilon must be positive, got ") << epsilon;
  return success();
}

/// layer_norm's rule, shared by its gradient: scale (and bias) span a
/// non-empty trailing part of the input, in the input's element type.
template <typename OpT> static LogicalResult verifyLayerNormLike(OpT op) {
  RankedTensorType input = op.getInput().getType();
  RankedTensorType scale = op.getScale().getType();
  if (input.getElementType() != scale.getElementType())
    return op->emitOpError("input element type ")
           << input.getElementType() << " and scale/bias element type "
           << scale.getElementType() << " differ";
  ArrayRef<int64_t> in = input.getShape(), norm = scale.getShape();
  if (norm.empty() || norm.size() > in.size() ||
      in.take_back(norm.size()) != norm)
    return op->emitOpError("scale shape ")
           << formatShape(norm) << " is not a non-empty trailing part of the "
           << "input shape " << formatShape(in);
  return verifyEpsilon(op, op.getEpsilon().convertToDouble());
}

LogicalResult LayerNormOp::verify() { return verifyLayerNormLike(*this); }
LogicalResult LayerNormGradOp::verify() { return verifyLayerNormLike(*this); }

/// batch_norm's rule, shared by its gradient: an [N, C, ...] input with more
/// than one value per channel, [C] parameters.
template <typename OpT> static LogicalResult verifyBatchNormLike(OpT op) {
  RankedTensorType input = op.getInput().getType();
  RankedTensorType scale = op.getScale().getType();
  if (input.getRank() < 2)
    return op->emitOpError("input must have rank >= 2 ([N, C, ...]), got ")
           << formatShape(input.getShape());
  int64_t channels = input.getDimSize(1);
  if (scale.getRank() != 1 || scale.getDimSize(0) != channels)
    return op->emitOpError("scale, bias and running statistics must be [")
           << channels << "] (the input's channels), got "
           << formatShape(scale.getShape());
  if (op.getRanks() < 1)
    return op->emitOpError("ranks must be at least 1, got ") << op.getRanks();
  // The running variance is unbiased: it divides by (values per channel - 1).
  if (input.getNumElements() / channels * op.getRanks() < 2)
    return op->emitOpError("needs more than one value per channel (batch x "
                           "spatial = ")
           << input.getNumElements() / channels << ")";
  return verifyEpsilon(op, op.getEpsilon().convertToDouble());
}

LogicalResult BatchNormOp::verify() {
  if (failed(verifyBatchNormLike(*this)))
    return failure();
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0.0 && momentum <= 1.0))
    return emitOpError("momentum must be in [0, 1], got ") << momentum;
  return success();
}

LogicalResult BatchNormGradOp::verify() { return verifyBatchNormLike(*this); }

SmallVector<unsigned> BatchNormOp::getPrecisionOperands() {
  // Only the activation follows the arriving precision; the parameters and
  // running statistics keep their own type (fp32 under autocast).
  return {0};
}

bool BatchNormOp::keepsFp32AtO2() { return true; }

PrecisionCategory DivOp::getDefaultPrecision() {
  return cast<RankedTensorType>(getLhs().getType()).getRank() == 0
             ? PrecisionCategory::fp32
             : kDefaultPrecision;
}

LogicalResult PowOp::verify() {
  if (!std::isfinite(getExponent().convertToDouble()))
    return emitOpError("exponent must be finite, got ")
           << getExponent().convertToDouble();
  return success();
}

LogicalResult ClampOp::verify() {
  double lo = getMin().convertToDouble(), hi = getMax().convertToDouble();
  if (!(lo < hi))
    return emitOpError("min ") << lo << " must be below max " << hi;
  return success();
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0.0 && rate < 1.0))
    return emitOpError("rate must be in [0, 1), got ") << rate;
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  std::optional<int64_t> pad = getPaddingIdx();
  int64_t vocab = getTable().getType().getDimSize(0);
  if (pad && (*pad < 0 || *pad >= vocab))
    return emitOpError("padding_idx ")
           << *pad << " is not a row of the " << vocab << "-row table";
  return success();
}

LogicalResult EmbeddingOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  if (!allRanked(adaptor.getTable().getType(), adaptor.getIndices().getType()))
    return failure();
  auto table = asTensor(adaptor.getTable().getType());
  auto indices = asTensor(adaptor.getIndices().getType());
  return pushResult(location, getOperationName(),
                    inferEmbeddingShape(table.getShape(), indices.getShape()),
                    table.getElementType(), results);
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

/// Data-movement ops keep the element type; only train.cast converts.
static LogicalResult verifyKeepsElementType(Operation *op, ShapedType input,
                                            ShapedType result) {
  if (input.getElementType() == result.getElementType())
    return success();
  return op->emitOpError("element type ")
         << input.getElementType() << " of the input and "
         << result.getElementType()
         << " of the result differ (only train.cast converts)";
}

LogicalResult ReshapeOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (failed(verifyKeepsElementType(*this, input, result)))
    return failure();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError("cannot reshape ")
           << formatShape(input.getShape()) << " (" << input.getNumElements()
           << " elements) to " << formatShape(result.getShape()) << " ("
           << result.getNumElements() << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = asTensor(adaptor.getInput().getType());
  if (!input)
    return failure();
  return pushResult(
      location, getOperationName(),
      inferTransposeShape(input.getShape(), adaptor.getPermutation()),
      input.getElementType(), results);
}

LogicalResult BroadcastOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (failed(verifyKeepsElementType(*this, input, result)))
    return failure();
  if (!isBroadcastableTo(input.getShape(), result.getShape()))
    return emitOpError("input shape ")
           << formatShape(input.getShape()) << " does not broadcast to "
           << formatShape(result.getShape());
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  SmallVector<SmallVector<int64_t, 4>> shapes;
  RankedTensorType first;
  for (Value v : adaptor.getInputs()) {
    auto t = asTensor(v.getType());
    if (!t)
      return failure();
    if (!first)
      first = t;
    else if (failed(
                 checkSameElementType(location, getOperationName(), first, t)))
      return failure();
    shapes.emplace_back(t.getShape());
  }
  return pushResult(location, getOperationName(),
                    inferConcatShape(shapes, adaptor.getAxis()),
                    first ? first.getElementType() : Type(), results);
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> location,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  if (!allRanked(adaptor.getLogits().getType(), adaptor.getLabels().getType()))
    return failure();
  auto logits = asTensor(adaptor.getLogits().getType());
  auto labels = asTensor(adaptor.getLabels().getType());
  StringRef name = getOperationName();
  if (logits.getRank() != 2)
    return emitOpFailure(location, name,
                         "logits must be rank 2 [batch, classes], got " +
                             formatShape(logits.getShape()));
  if (labels.getRank() != 1)
    return emitOpFailure(location, name,
                         "labels must be rank 1 [batch], got " +
                             formatShape(labels.getShape()));
  if (labels.getDimSize(0) != logits.getDimSize(0))
    return emitOpFailure(location, name,
                         "labels batch " + Twine(labels.getDimSize(0)) +
                             " does not match logits batch " +
                             Twine(logits.getDimSize(0)));
  results.push_back(RankedTensorType::get({}, logits.getElementType()));
  return success();
}

/// A mean loss: a rank-0 tensor of the input's element type.
static LogicalResult inferMeanLoss(Type inputType,
                                   SmallVectorImpl<Type> &results) {
  auto input = asTensor(inputType);
  if (!input)
    return failure();
  results.push_back(RankedTensorType::get({}, input.getElementType()));
  return success();
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return inferMeanLoss(adaptor.getInput().getType(), results);
}

LogicalResult L1LossOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location>,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferMeanLoss(adaptor.getInput().getType(), results);
}

LogicalResult SmoothL1LossOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location>,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  return inferMeanLoss(adaptor.getInput().getType(), results);
}

LogicalResult SmoothL1LossOp::verify() {
  double beta = getBeta().convertToDouble();
  if (!(beta > 0) || !std::isfinite(beta))
    return emitOpError("beta must be positive and finite (beta = 0 is "
                       "train.l1_loss), got ")
           << beta;
  return success();
}

LogicalResult BceWithLogitsLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferMeanLoss(adaptor.getInput().getType(), results);
}

//===----------------------------------------------------------------------===//
// Backward helpers
//===----------------------------------------------------------------------===//

/// The softmax-grad axis must be a dimension of the operands.
template <typename OpT> static LogicalResult verifySoftmaxGradLike(OpT op) {
  std::string err = checkAxis(static_cast<int64_t>(op.getAxis()),
                              op.getGrad().getType().getRank());
  if (!err.empty())
    return op.emitOpError(err);
  return success();
}

LogicalResult SoftmaxGradOp::verify() { return verifySoftmaxGradLike(*this); }
LogicalResult LogSoftmaxGradOp::verify() {
  return verifySoftmaxGradLike(*this);
}

/// A conv2d gradient must match the forward conv2d it belongs to:
/// conv2d(input, filter) has the shape of `grad`.
static LogicalResult
verifyConvGrad(Operation *op, RankedTensorType grad, RankedTensorType input,
               RankedTensorType filter, ArrayRef<int64_t> strides,
               ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
               int64_t groups) {
  ShapeOrError forward = inferConv2dShape(input.getShape(), filter.getShape(),
                                          strides, padding, dilation, groups);
  if (!forward.ok())
    return op->emitOpError(forward.getError());
  if (forward.getShape() != grad.getShape())
    return op->emitOpError("gradient shape ")
           << formatShape(grad.getShape())
           << " is not the forward conv2d's output shape "
           << formatShape(forward.getShape());
  if (grad.getElementType() != input.getElementType() ||
      grad.getElementType() != filter.getElementType())
    return op->emitOpError("operand and result element types differ");
  return success();
}

Type Conv2dGradInputOp::getAccumulatorType() {
  return accumulatorType(getAccumulate(), getGrad().getType().getElementType());
}

LogicalResult Conv2dGradInputOp::verify() {
  return verifyConvGrad(*this, getGrad().getType(), getResult().getType(),
                        getFilter().getType(), getStrides(), getPadding(),
                        getDilation(), getGroups());
}

Type Conv2dGradFilterOp::getAccumulatorType() {
  return accumulatorType(getAccumulate(), getGrad().getType().getElementType());
}

LogicalResult Conv2dGradFilterOp::verify() {
  return verifyConvGrad(*this, getGrad().getType(), getInput().getType(),
                        getResult().getType(), getStrides(), getPadding(),
                        getDilation(), getGroups());
}

LogicalResult Pool2dGradOp::verify() {
  auto input = getInput().getType(), grad = getGrad().getType();
  ShapeOrError forward = inferPool2dShape(
      input.getShape(), getKernel(), getStrides(), getPadding(), getDilation());
  if (!forward.ok())
    return emitOpError(forward.getError());
  if (forward.getShape() != grad.getShape() ||
      input.getElementType() != grad.getElementType())
    return emitOpError("gradient ")
           << grad << " does not match the pooling output of " << input << ", "
           << formatShape(forward.getShape()) << " of "
           << input.getElementType();
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto table = getResult().getType();
  ShapeOrError forward =
      inferEmbeddingShape(table.getShape(), getIndices().getType().getShape());
  if (!forward.ok())
    return emitOpError(forward.getError());
  if (forward.getShape() != getGrad().getType().getShape() ||
      table.getElementType() != getGrad().getType().getElementType())
    return emitOpError("gradient ")
           << getGrad().getType() << " does not match an embedding lookup of "
           << table << " at " << getIndices().getType();
  return success();
}

LogicalResult SliceOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (failed(verifyKeepsElementType(*this, input, result)))
    return failure();
  ArrayRef<int64_t> offsets = getOffsets();
  if (int64_t(offsets.size()) != input.getRank() ||
      result.getRank() != input.getRank())
    return emitOpError("needs one offset per dimension and a result of the "
                       "input's rank, got ")
           << offsets.size() << " offsets for " << input << " -> " << result;
  for (int64_t d = 0; d < input.getRank(); ++d)
    if (offsets[d] < 0 ||
        offsets[d] + result.getDimSize(d) > input.getDimSize(d))
      return emitOpError("box at offsets ")
             << formatShape(offsets) << " of shape "
             << formatShape(result.getShape()) << " is not inside "
             << formatShape(input.getShape());
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  double e = getLabelSmoothing().convertToDouble();
  if (!(e >= 0.0 && e <= 1.0))
    return emitOpError("label_smoothing must be in [0, 1], got ") << e;
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  auto logits = getLogits().getType();
  auto labels = getLabels().getType();
  if (getGrad().getType().getElementType() != logits.getElementType())
    return emitOpError("loss gradient element type ")
           << getGrad().getType().getElementType()
           << " differs from the logits' " << logits.getElementType();
  if (logits.getRank() != 2 || labels.getRank() != 1 ||
      labels.getDimSize(0) != logits.getDimSize(0))
    return emitOpError("needs [N, C] logits and [N] labels, got ")
           << formatShape(logits.getShape()) << " and "
           << formatShape(labels.getShape());
  return success();
}

/// The operands of linear_cross_entropy(_grad): [N, K] input, [K, V] weight
/// ([V, K] transposed) of the input's float type, [N] labels.
static LogicalResult verifyLinearCrossEntropy(Operation *op, Value inputValue,
                                              Value weightValue,
                                              Value labelsValue,
                                              bool transposed,
                                              double smoothing) {
  auto input = cast<RankedTensorType>(inputValue.getType());
  auto weight = cast<RankedTensorType>(weightValue.getType());
  auto labels = cast<RankedTensorType>(labelsValue.getType());
  if (input.getRank() != 2 || weight.getRank() != 2)
    return op->emitOpError("needs a rank-2 input [N, K] and weight ")
           << (transposed ? "[V, K]" : "[K, V]") << ", got "
           << formatShape(input.getShape()) << " and "
           << formatShape(weight.getShape());
  if (input.getElementType() != weight.getElementType())
    return op->emitOpError("input element type ")
           << input.getElementType() << " differs from the weight's "
           << weight.getElementType();
  int64_t k = weight.getDimSize(transposed ? 1 : 0);
  if (input.getDimSize(1) != k)
    return op->emitOpError("input features ")
           << input.getDimSize(1) << " do not match the weight's " << k
           << (transposed ? " (weight [V, K])" : " (weight [K, V])");
  if (labels.getRank() != 1 || labels.getDimSize(0) != input.getDimSize(0))
    return op->emitOpError("needs [N] labels for ")
           << input.getDimSize(0) << " rows, got "
           << formatShape(labels.getShape());
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    return op->emitOpError("label_smoothing must be in [0, 1], got ")
           << smoothing;
  return success();
}

LogicalResult LinearCrossEntropyOp::verify() {
  return verifyLinearCrossEntropy(*this, getInput(), getWeight(), getLabels(),
                                  getTransposeWeight(),
                                  getLabelSmoothing().convertToDouble());
}

LogicalResult LinearCrossEntropyGradOp::verify() {
  return verifyLinearCrossEntropy(*this, getInput(), getWeight(), getLabels(),
                                  getTransposeWeight(),
                                  getLabelSmoothing().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// Every state list matches the parameters one to one in shape.
static LogicalResult
verifyParallelLists(Operation *op, ValueRange params,
                    ArrayRef<std::pair<StringRef, ValueRange>> lists) {
  for (auto [name, list] : lists) {
    if (list.size() != params.size())
      return op->emitOpError() << params.size() << " parameters but "
                               << list.size() << " " << name;
    for (auto [i, pair] : llvm::enumerate(llvm::zip(params, list))) {
      auto p = cast<RankedTensorType>(std::get<0>(pair).getType());
      auto v = cast<RankedTensorType>(std::get<1>(pair).getType());
      if (p.getShape() != v.getShape())
        return op->emitOpError()
               << name << " #" << i << " has shape "
               << formatShape(v.getShape()) << ", its parameter "
               << formatShape(p.getShape());
    }
  }
  return success();
}

/// A double as "%g" prints it ("0.9", "1e-08").
static std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/// Hyper-parameters must be in their ranges.
static LogicalResult verifyInRange(Operation *op, StringRef name, double value,
                                   double lo, double hi, bool hiOpen) {
  if (value >= lo && (hiOpen ? value < hi : value <= hi))
    return success();
  return op->emitOpError() << name << " must be in [" << shortNumber(lo) << ", "
                           << shortNumber(hi) << (hiOpen ? ")" : "]")
                           << ", got " << shortNumber(value);
}

/// Parameter groups of an update: a `[G]` learning rate needs `lr_groups`
/// (one group in [0, G) per parameter) and a scalar one has none; per-
/// parameter weight decays, one per parameter, each in [0, 1].
static LogicalResult
verifyParamGroups(Operation *op, Value lr, size_t numParams,
                  std::optional<ArrayRef<int64_t>> lrGroups,
                  std::optional<ArrayRef<double>> weightDecays) {
  auto lrType = cast<RankedTensorType>(lr.getType());
  if (lrType.getRank() == 1) {
    if (!lrGroups)
      return op->emitOpError("a learning rate per group (")
             << lrType << ") needs lr_groups, the group of each parameter";
    if (lrGroups->size() != numParams)
      return op->emitOpError("lr_groups has ")
             << lrGroups->size() << " entries for " << numParams
             << " parameters";
    for (auto [i, g] : llvm::enumerate(*lrGroups))
      if (g < 0 || g >= lrType.getDimSize(0))
        return op->emitOpError("lr_groups[")
               << i << "] = " << g << " is not a group of the "
               << lrType.getDimSize(0) << " learning rates";
  } else if (lrGroups) {
    return op->emitOpError(
        "lr_groups needs a learning rate per group (a rank-1 lr), got ")
           << lrType;
  }
  if (weightDecays) {
    if (weightDecays->size() != numParams)
      return op->emitOpError("weight_decays has ")
             << weightDecays->size() << " entries for " << numParams
             << " parameters";
    for (double w : *weightDecays)
      if (failed(verifyInRange(op, "each of weight_decays", w, 0.0, 1.0,
                               false)))
        return failure();
  }
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  if (failed(
          verifyParallelLists(*this, getParams(), {{"gradients", getGrads()}})))
    return failure();
  double momentum = getMomentum().convertToDouble();
  if (!getMomentumBuffers().empty() || momentum != 0.0)
    if (failed(verifyParallelLists(
            *this, getParams(), {{"momentum buffers", getMomentumBuffers()}})))
      return failure();
  if (failed(verifyInRange(*this, "momentum", momentum, 0.0, 1.0, true)) ||
      failed(verifyInRange(*this, "weight_decay",
                           getWeightDecay().convertToDouble(), 0.0, 1.0,
                           false)))
    return failure();
  if (getNesterov() && momentum == 0.0)
    return emitOpError("nesterov needs a non-zero momentum");
  return verifyParamGroups(*this, getLr(), getParams().size(), getLrGroups(),
                           getWeightDecays());
}

LogicalResult
SgdUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                              ValueRange operands, DictionaryAttr attributes,
                              OpaqueProperties properties, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  Adaptor adaptor(operands, attributes, properties, regions);
  for (Value v : adaptor.getParams())
    results.push_back(v.getType());
  for (Value v : adaptor.getMomentumBuffers())
    results.push_back(v.getType());
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(verifyParallelLists(*this, getParams(),
                                 {{"gradients", getGrads()},
                                  {"first moments", getExpAvgs()},
                                  {"second moments", getExpAvgSqs()}})))
    return failure();
  if (failed(verifyInRange(*this, "beta1", getBeta1().convertToDouble(), 0.0,
                           1.0, true)) ||
      failed(verifyInRange(*this, "beta2", getBeta2().convertToDouble(), 0.0,
                           1.0, true)) ||
      failed(verifyInRange(*this, "weight_decay",
                           getWeightDecay().convertToDouble(), 0.0, 1.0,
                           false)))
    return failure();
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError("epsilon must be positive, got ")
           << shortNumber(getEpsilon().convertToDouble());
  return verifyParamGroups(*this, getLr(), getParams().size(), getLrGroups(),
                           getWeightDecays());
}

LogicalResult
AdamUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                               ValueRange operands, DictionaryAttr attributes,
                               OpaqueProperties properties, RegionRange regions,
                               SmallVectorImpl<Type> &results) {
  Adaptor adaptor(operands, attributes, properties, regions);
  for (ValueRange list :
       {adaptor.getParams(), adaptor.getExpAvgs(), adaptor.getExpAvgSqs()})
    for (Value v : list)
      results.push_back(v.getType());
  results.push_back(adaptor.getStep().getType());
  return success();
}

LogicalResult ClipGradNormOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (!(getMaxNorm().convertToDouble() > 0.0))
    return emitOpError("max_norm must be positive, got ")
           << shortNumber(getMaxNorm().convertToDouble());
  return success();
}

LogicalResult ClipGradNormOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &results) {
  Adaptor adaptor(operands, attributes, properties, regions);
  for (Value g : adaptor.getGrads())
    results.push_back(g.getType());
  results.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

LogicalResult AccumulateGradsOp::verify() {
  if (failed(verifyParallelLists(*this, getAccumulators(),
                                 {{"gradients", getGrads()}})))
    return failure();
  if (getSteps() < 1)
    return emitOpError("steps must be at least 1, got ")
           << static_cast<int64_t>(getSteps());
  for (auto [a, g] : llvm::zip(getAccumulators(), getGrads()))
    if (a.getType() != g.getType())
      return emitOpError("accumulator ") << a.getType() << " and gradient "
                                         << g.getType() << " types differ";
  return success();
}

LogicalResult AccumulateGradsOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &results) {
  Adaptor adaptor(operands, attributes, properties, regions);
  for (Value a : adaptor.getAccumulators())
    results.push_back(a.getType());
  results.push_back(adaptor.getCount().getType());
  results.push_back(RankedTensorType::get({}, IntegerType::get(context, 1)));
  for (Value g : adaptor.getGrads())
    results.push_back(g.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

LogicalResult UnscaleGradsOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (getDivisor() < 1)
    return emitOpError("divisor must be at least 1, got ")
           << static_cast<int64_t>(getDivisor());
  return success();
}

LogicalResult UnscaleGradsOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &results) {
  Adaptor adaptor(operands, attributes, properties, regions);
  for (Value g : adaptor.getGrads())
    results.push_back(g.getType());
  results.push_back(RankedTensorType::get({}, IntegerType::get(context, 1)));
  return success();
}

LogicalResult FirstNonfiniteOp::verify() {
  if (getValues().empty())
    return emitOpError("needs at least one value");
  if (std::optional<ArrayRef<int64_t>> order = getOrder()) {
    int64_t n = static_cast<int64_t>(getValues().size());
    if (static_cast<int64_t>(order->size()) != n)
      return emitOpError("order has ")
             << order->size() << " entries for " << n << " values";
    SmallVector<bool> seen(n, false);
    for (int64_t i : *order) {
      if (i < 0 || i >= n || seen[i])
        return emitOpError("order must be a permutation of 0..")
               << n - 1 << ", got " << i
               << (i >= 0 && i < n ? " twice" : " out of range");
      seen[i] = true;
    }
  }
  return success();
}

LogicalResult FirstNonfiniteOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location>, ValueRange, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &results) {
  results.push_back(RankedTensorType::get({}, IntegerType::get(context, 32)));
  return success();
}

LogicalResult CheckNumericsOp::verify() {
  if (getValues().empty())
    return emitOpError("needs at least one value");
  return success();
}

LogicalResult CheckNumericsOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location>, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange,
    SmallVectorImpl<Type> &results) {
  bool smallest = false;
  if (properties)
    smallest = bool(properties.as<Properties *>()->smallest);
  else if (attributes)
    smallest = bool(attributes.get("smallest"));
  results.push_back(RankedTensorType::get(
      {static_cast<int64_t>(operands.size()) * (smallest ? 2 : 1)},
      Float32Type::get(context)));
  return success();
}

LogicalResult UpdateScaleOp::verify() {
  double growth = getGrowthFactor().convertToDouble();
  double backoff = getBackoffFactor().convertToDouble();
  if (!(growth > 1.0))
    return emitOpError("growth_factor must be greater than 1, got ")
           << shortNumber(growth);
  if (!(backoff > 0.0 && backoff < 1.0))
    return emitOpError("backoff_factor must be in (0, 1), got ")
           << shortNumber(backoff);
  if (getGrowthInterval() < 1)
    return emitOpError("growth_interval must be at least 1, got ")
           << static_cast<int64_t>(getGrowthInterval());
  if (getHysteresis() < 1)
    return emitOpError("hysteresis must be at least 1, got ")
           << static_cast<int64_t>(getHysteresis());
  if (!(getMinScale().convertToDouble() >= 0.0) ||
      !(getMaxScale().convertToDouble() > getMinScale().convertToDouble()))
    return emitOpError("needs 0 <= min_scale < max_scale, got ")
           << shortNumber(getMinScale().convertToDouble()) << " and "
           << shortNumber(getMaxScale().convertToDouble());
  return success();
}

LogicalResult UpdateScaleOp::inferReturnTypes(MLIRContext *context,
                                              std::optional<Location>,
                                              ValueRange operands,
                                              DictionaryAttr, OpaqueProperties,
                                              RegionRange,
                                              SmallVectorImpl<Type> &results) {
  results.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  results.push_back(RankedTensorType::get({}, IntegerType::get(context, 32)));
  results.push_back(RankedTensorType::get({}, IntegerType::get(context, 1)));
  return success();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  if (getRanks() < 1)
    return emitOpError("ranks must be at least 1, got ")
           << static_cast<int64_t>(getRanks());
  bool flags = getKind() == ReduceKind::max;
  for (Value v : getInputs()) {
    Type element = cast<RankedTensorType>(v.getType()).getElementType();
    if (element.isInteger(1) != flags)
      return emitOpError("'")
             << stringifyReduceKind(getKind()) << "' takes "
             << (flags ? "i1 flags" : "f32, f16 or bf16 tensors") << ", got "
             << v.getType();
  }
  if (std::optional<Type> wire = getWire()) {
    if (flags)
      return emitOpError("a wire type is for sums and means, not 'max'");
    if (!isa<Float32Type, Float16Type, BFloat16Type>(*wire))
      return emitOpError("wire type must be f32, f16 or bf16, got ") << *wire;
  }
  return success();
}

LogicalResult
AllReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                              ValueRange operands, DictionaryAttr attributes,
                              OpaqueProperties properties, RegionRange regions,
                              SmallVectorImpl<Type> &results) {
  Adaptor adaptor(operands, attributes, properties, regions);
  for (Value v : adaptor.getInputs())
    results.push_back(v.getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

LogicalResult CastOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  auto isTrainFloat = [](Type t) {
    return isa<Float16Type, BFloat16Type, Float32Type>(t);
  };
  if (!isTrainFloat(input.getElementType()) ||
      !isTrainFloat(result.getElementType()))
    return emitOpError("can only cast between f32, f16 and bf16, got ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.getShape() != result.getShape())
    return emitOpError("input shape ")
           << formatShape(input.getShape()) << " and result shape "
           << formatShape(result.getShape())
           << " differ (a cast keeps the shape)";
  return success();
}

//===----------------------------------------------------------------------===//
// RuntimeCall
//===----------------------------------------------------------------------===//

LogicalResult RuntimeCallOp::verify() {
  if (getResults().empty())
    return emitOpError("has no result: a runtime call fills at least one "
                       "new tensor");
  return success();
}

LogicalResult
RuntimeCallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee = symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(
      *this, getCalleeAttr());
  if (!callee)
    return emitOpError("calls @")
           << getCallee() << ", which is not a function in the module";
  // One index per input and result address, one i64 per param.
  MLIRContext *ctx = getContext();
  SmallVector<Type> expected(getInputs().size() + getResults().size(),
                             IndexType::get(ctx));
  expected.append(getParams().size(), IntegerType::get(ctx, 64));
  auto expectedType = FunctionType::get(ctx, expected, {});
  if (callee.getFunctionType() != expectedType)
    return emitOpError("calls @")
           << getCallee() << " of type " << callee.getFunctionType() << "; its "
           << getInputs().size() << " inputs, " << getResults().size()
           << " results and " << getParams().size() << " params need "
           << expectedType;
  return success();
}

//===----------------------------------------------------------------------===//
// Gradient transforms: what each needs of the loss scale
//===----------------------------------------------------------------------===//

/// Clipping's norm must be the true one.
GradientScaleUse ClipGradNormOp::getScaleUse() {
  return GradientScaleUse::unscaled;
}

/// Micro-batch gradients are summed scaled and unscaled once.
GradientScaleUse AccumulateGradsOp::getScaleUse() {
  return GradientScaleUse::scaled;
}

/// The mean gradients are the last results (after the accumulators, the
/// count and the pending flag).
ValueRange AccumulateGradsOp::getOutputGrads() {
  return getResults().take_back(getGrads().size());
}

/// A sum or mean across ranks is linear: scaled or not, it commutes with
/// unscaling.
GradientScaleUse AllReduceOp::getScaleUse() {
  return GradientScaleUse::either;
}

MutableOperandRange AllReduceOp::getInputGradsMutable() {
  return getInputsMutable();
}

ValueRange AllReduceOp::getOutputGrads() { return getResults(); }

/// Unscaling takes scaled gradients.
GradientScaleUse UnscaleGradsOp::getScaleUse() {
  return GradientScaleUse::scaled;
}

#include "amp/Dialect/Train/IR/TrainInterfaces.cpp.inc"

SmallVector<GradientTransformOpInterface>
amp::train::getGradientTransformChain(OptimizerUpdateOpInterface update) {
  SmallVector<GradientTransformOpInterface> chain;
  MutableOperandRange grads = update.getGradsMutable();
  while (!grads.empty()) {
    auto transform =
        grads[0].get().getDefiningOp<GradientTransformOpInterface>();
    if (!transform)
      break;
    chain.push_back(transform);
    grads = transform.getInputGradsMutable();
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

#define GET_OP_CLASSES
#include "amp/Dialect/Train/IR/TrainOps.cpp.inc"
