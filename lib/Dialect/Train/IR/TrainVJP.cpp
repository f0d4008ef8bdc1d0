//===- TrainVJP.cpp - Vector-Jacobian products of train ops ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// DifferentiableOpInterface::buildVJP for each op: given dy, the gradient of
// the result, build the gradient of every operand. A gradient has the type of
// its value, so every backward op runs in the precision of its forward op.
// docs/Autodiff.md tabulates the rules.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/IR/ElementwiseBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace amp::train;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A rank-0 constant `value` of float element type `elementType`.
static Value scalar(OpBuilder &b, Location loc, Type elementType,
                    double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

/// The element type of a tensor value.
static Type elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

Value amp::train::scalarConstant(OpBuilder &b, Location loc, Type type,
                                 double value) {
  return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
}

Value amp::train::scalarLike(OpBuilder &b, Location loc, Value like,
                             double value) {
  return scalar(b, loc, elementOf(like), value);
}

Value amp::train::unbroadcast(OpBuilder &b, Location loc, Value grad,
                              Type operandType) {
  auto target = cast<RankedTensorType>(operandType);
  auto type = cast<RankedTensorType>(grad.getType());
  if (type.getShape() == target.getShape())
    return grad;
  int64_t offset = type.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (d < offset ||
        (target.getDimSize(d - offset) == 1 && type.getDimSize(d) != 1))
      axes.push_back(d);
  Value sum = grad;
  if (!axes.empty())
    sum = ReduceSumOp::create(b, loc, grad, b.getDenseI64ArrayAttr(axes));
  if (cast<RankedTensorType>(sum.getType()).getShape() == target.getShape())
    return sum;
  return ReshapeOp::create(b, loc, target, sum);
}

Value amp::train::castTo(OpBuilder &b, Location loc, Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getElementType() == element)
    return v;
  return CastOp::create(b, loc, type.clone(element), v);
}

Value amp::train::scaledBy(OpBuilder &b, Location loc, Value x,
                           double factor) {
  return MulOp::create(b, loc, x, scalar(b, loc, elementOf(x), factor));
}

Value amp::train::extremumGrad(OpBuilder &b, Location loc, Value dy,
                               Value self, Value other, bool maximum) {
  // relu_grad(dy, d) is dy where d > 0; the difference of two unequal IEEE
  // values is never zero, so `wins` and `loses` are exact masks and what
  // neither takes is the tie.
  Value ahead = maximum ? SubOp::create(b, loc, self, other)
                        : SubOp::create(b, loc, other, self);
  Value wins = ReluGradOp::create(b, loc, dy, ahead);
  Value loses = ReluGradOp::create(b, loc, dy, scaledBy(b, loc, ahead, -1.0));
  Value tie = SubOp::create(b, loc, SubOp::create(b, loc, dy, wins), loses);
  return AddOp::create(b, loc, wins, scaledBy(b, loc, tie, 0.5));
}

/// `x * factor` for a float constant factor.
static Value scaled(OpBuilder &b, Location loc, Value x, double factor) {
  return scaledBy(b, loc, x, factor);
}

/// The common shape of a single-result VJP: one (null) gradient slot per
/// operand, nothing to build when the result gets no gradient, else `rule`
/// fills the slots from dy.
template <typename Rule>
static LogicalResult singleResultVJP(Operation *op, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads,
                                     Rule rule) {
  operandGrads.assign(op->getNumOperands(), Value());
  if (Value dy = resultGrads.front())
    rule(dy, MutableArrayRef<Value>(operandGrads));
  return success();
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] =
                               GeluGradOp::create(b, getLoc(), dy, getInput(),
                                                  getApproximateAttr());
                         });
}

LogicalResult PowOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        Location loc = getLoc();
        double c = getExponent().convertToDouble();
        auto type = cast<RankedTensorType>(dy.getType());
        if (c == 0.0) { // x ** 0 is constant: no gradient, as PyTorch's
          grads[0] = ConstantOp::create(
              b, loc,
              DenseElementsAttr::get(
                  type, b.getFloatAttr(type.getElementType(), 0.0)));
          return;
        }
        // dy * (c * x ** (c - 1))
        Value power = c == 1.0 ? getInput()
                               : Value(PowOp::create(b, loc, getInput(),
                                                     b.getF64FloatAttr(c - 1.0)));
        grads[0] = MulOp::create(
            b, loc, dy, MulOp::create(b, loc, power, scalarLike(b, loc, power, c)));
      });
}

LogicalResult ClampOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        // dy where min < x < max: x - min > 0 and max - x > 0 exactly when
        // x lies strictly inside (IEEE differences of unequal values are
        // never zero), so two relu_grads give hardtanh's mask.
        Location loc = getLoc();
        Value x = getInput();
        auto bound = [&](double v) {
          auto type = RankedTensorType::get({}, elementOf(x));
          return ConstantOp::create(b, loc,
                                    DenseElementsAttr::get(
                                        type, b.getFloatAttr(type.getElementType(), v)));
        };
        Value aboveMin =
            SubOp::create(b, loc, x, bound(getMin().convertToDouble()));
        Value belowMax =
            SubOp::create(b, loc, bound(getMax().convertToDouble()), x);
        grads[0] = ReluGradOp::create(
            b, loc, ReluGradOp::create(b, loc, dy, aboveMin), belowMax);
      });
}

LogicalResult DropoutOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           // The same seeded mask and scale: dropout is linear
                           // in its input.
                           grads[0] = DropoutOp::create(
                               b, getLoc(), dy.getType(), dy, getRateAttr(),
                               getSeedAttr(), getStep());
                         });
}

LogicalResult CastOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                               SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           // Cast back: gradients of f32 values arrive as f32.
                           grads[0] = CastOp::create(b, getLoc(),
                                                     getInput().getType(), dy);
                         });
}

//===----------------------------------------------------------------------===//
// Element-wise ops defined by their formula (ElementwiseOpInterface)
//===----------------------------------------------------------------------===//

LogicalResult
amp::train::buildElementwiseVJP(ElementwiseOpInterface op, OpBuilder &b,
                                ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      op, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        for (auto [i, operand] : llvm::enumerate(op->getOperands()))
          if (Value g = op.buildOperandGrad(b, i, dy))
            grads[i] = unbroadcast(b, op->getLoc(), g, operand.getType());
      });
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

/// dA and dB of C = op(A) op(B) for the transpose flags (see docs/Autodiff.md):
/// each is one matmul with flags, so no transpose is materialized.
template <typename OpT>
static void contractionGrads(OpT op, OpBuilder &b, Value dc,
                             MutableArrayRef<Value> operandGrads) {
  Location loc = op.getLoc();
  bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
  Value a = op.getLhs(), bm = op.getRhs();
  UnitAttr on = b.getUnitAttr(), off;
  TypeAttr acc = op.getAccumulateAttr();
  auto make = [&](Value l, Value r, bool tl, bool tr) -> Value {
    if constexpr (std::is_same_v<OpT, MatmulOp>)
      return MatmulOp::create(b, loc, l, r, Value(), tl ? on : off,
                              tr ? on : off, acc);
    else
      return BatchMatmulOp::create(b, loc, l, r, tl ? on : off, tr ? on : off,
                                   acc);
  };
  operandGrads[0] =
      !ta ? (tb ? make(dc, bm, false, false) : make(dc, bm, false, true))
          : (tb ? make(bm, dc, true, true) : make(bm, dc, false, true));
  operandGrads[1] =
      !tb ? (ta ? make(a, dc, false, false) : make(a, dc, true, false))
          : (ta ? make(dc, a, true, true) : make(dc, a, true, false));
}

LogicalResult MatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           contractionGrads(*this, b, dy, grads);
                           if (getBias())
                             grads[2] = ReduceSumOp::create(
                                 b, getLoc(), dy, b.getDenseI64ArrayAttr({0}));
                         });
}

LogicalResult BatchMatmulOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        contractionGrads(*this, b, dy, grads);
        // An operand broadcast over batch dims gets the sum over them.
        grads[0] = unbroadcast(b, getLoc(), grads[0], getLhs().getType());
        grads[1] = unbroadcast(b, getLoc(), grads[1], getRhs().getType());
      });
}

//===----------------------------------------------------------------------===//
// Softmax, reductions, losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = SoftmaxGradOp::create(
                               b, getLoc(), dy, getResult(), getAxisAttr());
                         });
}

LogicalResult LogSoftmaxOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = LogSoftmaxGradOp::create(
                               b, getLoc(), dy, getResult(), getAxisAttr());
                         });
}

/// The gradient of a sum or mean over `axes`: dy broadcast back over them
/// (times 1/count for a mean).
template <typename OpT>
static Value reductionGrad(OpT op, OpBuilder &b, Value dy, bool mean) {
  Location loc = op.getLoc();
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  SmallVector<int64_t> kept(inputType.getShape());
  int64_t count = 1;
  for (int64_t axis : op.getAxes()) {
    count *= kept[axis];
    kept[axis] = 1;
  }
  Value g = dy;
  if (cast<RankedTensorType>(g.getType()).getShape() != ArrayRef(kept))
    g = ReshapeOp::create(b, loc, inputType.clone(kept), g);
  g = BroadcastOp::create(b, loc, inputType, g);
  return mean ? scaled(b, loc, g, 1.0 / double(count)) : g;
}

LogicalResult ReduceSumOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] =
                               reductionGrad(*this, b, dy, /*mean=*/false);
                         });
}

LogicalResult ReduceMeanOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] =
                               reductionGrad(*this, b, dy, /*mean=*/true);
                         });
}

LogicalResult CrossEntropyOp::buildVJP(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = CrossEntropyGradOp::create(
                               b, getLoc(), dy, getLogits(), getLabels(),
                               getIgnoreIndexAttr(), getLabelSmoothingAttr());
                         });
}

LogicalResult LinearCrossEntropyOp::buildVJP(
    OpBuilder &b, ArrayRef<Value> resultGrads,
    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           auto grad = LinearCrossEntropyGradOp::create(
                               b, getLoc(), dy, getInput(), getWeight(),
                               getLabels(), getTransposeWeightAttr(),
                               getIgnoreIndexAttr(), getLabelSmoothingAttr());
                           grads[0] = grad.getInputGrad();
                           grads[1] = grad.getWeightGrad();
                         });
}

LogicalResult MseLossOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        // d input = dy * 2 (input - target) / n;  d target = -d input.
        Location loc = getLoc();
        int64_t n = getInput().getType().getNumElements();
        Value diff = SubOp::create(b, loc, getInput(), getTarget());
        Value dInput =
            MulOp::create(b, loc, scaled(b, loc, diff, 2.0 / double(n)), dy);
        grads[0] = dInput;
        grads[1] = scaled(b, loc, dInput, -1.0);
      });
}

/// The gradients of a mean element-wise loss whose derivative in the input
/// is `perElement` (of the input's shape): d input = perElement * dy / n,
/// d target = `targetSign` * d input unless `targetGrad` is given.
static LogicalResult
meanLossVJP(Operation *op, OpBuilder &b, ArrayRef<Value> resultGrads,
            SmallVectorImpl<Value> &operandGrads,
            llvm::function_ref<Value()> perElement,
            llvm::function_ref<Value(Value scaledDy)> targetGrad) {
  return singleResultVJP(
      op, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        Location loc = op->getLoc();
        int64_t n =
            cast<RankedTensorType>(op->getOperand(0).getType()).getNumElements();
        Value scaledDy = scaled(b, loc, dy, 1.0 / double(n));
        grads[0] = MulOp::create(b, loc, perElement(), scaledDy);
        grads[1] = targetGrad ? targetGrad(scaledDy)
                              : scaled(b, loc, grads[0], -1.0);
      });
}

LogicalResult L1LossOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  // sign(input - target): two relu_grad masks of a tensor of ones (0 where
  // the two are equal, as PyTorch's sign).
  return meanLossVJP(
      *this, b, resultGrads, operandGrads,
      [&]() -> Value {
        Location loc = getLoc();
        Value d = SubOp::create(b, loc, getInput(), getTarget());
        auto type = cast<RankedTensorType>(d.getType());
        Value ones = ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(type,
                                   b.getFloatAttr(type.getElementType(), 1.0)));
        return SubOp::create(b, loc, ReluGradOp::create(b, loc, ones, d),
                             ReluGradOp::create(b, loc, ones,
                                                scaled(b, loc, d, -1.0)));
      },
      nullptr);
}

LogicalResult SmoothL1LossOp::buildVJP(OpBuilder &b,
                                       ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  // d / beta where |d| < beta, else sign(d): clamp(d / beta, -1, 1).
  return meanLossVJP(
      *this, b, resultGrads, operandGrads,
      [&]() -> Value {
        Location loc = getLoc();
        Value d = SubOp::create(b, loc, getInput(), getTarget());
        Value ratio =
            DivOp::create(b, loc, d,
                          scalarLike(b, loc, d, getBeta().convertToDouble()));
        return ClampOp::create(b, loc, ratio, b.getF64FloatAttr(-1.0),
                               b.getF64FloatAttr(1.0));
      },
      nullptr);
}

LogicalResult
BceWithLogitsLossOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  // d input = sigmoid(input) - target; d target = -input.
  return meanLossVJP(
      *this, b, resultGrads, operandGrads,
      [&]() -> Value {
        Location loc = getLoc();
        return SubOp::create(b, loc, SigmoidOp::create(b, loc, getInput()),
                             getTarget());
      },
      [&](Value scaledDy) -> Value {
        Location loc = getLoc();
        return MulOp::create(b, loc, scaled(b, loc, getInput(), -1.0),
                             scaledDy);
      });
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = ReshapeOp::create(
                               b, getLoc(), getInput().getType(), dy);
                         });
}

LogicalResult TransposeOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           ArrayRef<int64_t> perm = getPermutation();
                           SmallVector<int64_t> inverse(perm.size());
                           for (auto [i, p] : llvm::enumerate(perm))
                             inverse[p] = i;
                           grads[0] = TransposeOp::create(
                               b, getLoc(), dy,
                               b.getDenseI64ArrayAttr(inverse));
                         });
}

LogicalResult BroadcastOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = unbroadcast(b, getLoc(), dy,
                                                  getInput().getType());
                         });
}

//===----------------------------------------------------------------------===//
// Convolution, pooling, normalization, embedding
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        Location loc = getLoc();
        grads[0] = Conv2dGradInputOp::create(
            b, loc, getInput().getType(), dy, getFilter(), getStridesAttr(),
            getPaddingAttr(), getDilationAttr(), getAccumulateAttr(),
            getGroupsAttr());
        grads[1] = Conv2dGradFilterOp::create(
            b, loc, getFilter().getType(), dy, getInput(), getStridesAttr(),
            getPaddingAttr(), getDilationAttr(), getAccumulateAttr(),
            getGroupsAttr());
        if (getBias()) // summed over the batch and every position
          grads[2] = ReduceSumOp::create(b, loc, dy,
                                         b.getDenseI64ArrayAttr({0, 2, 3}));
      });
}

/// The gradient of a pooling op.
template <typename OpT>
static Value poolGrad(OpT op, OpBuilder &b, Value dy, bool isMax) {
  return Pool2dGradOp::create(
      b, op.getLoc(), dy, op.getInput(), isMax ? b.getUnitAttr() : UnitAttr(),
      op.getKernelAttr(), op.getStridesAttr(), op.getPaddingAttr(),
      op.getDilationAttr());
}

LogicalResult MaxPool2dOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = poolGrad(*this, b, dy, /*isMax=*/true);
                         });
}

LogicalResult AvgPool2dOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = poolGrad(*this, b, dy, /*isMax=*/false);
                         });
}

LogicalResult LayerNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           auto g = LayerNormGradOp::create(
                               b, getLoc(), dy, getInput(), getScale(),
                               getEpsilonAttr());
                           grads[0] = g.getInputGrad();
                           grads[1] = g.getScaleGrad();
                           grads[2] = g.getBiasGrad();
                         });
}

LogicalResult AttentionOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[1])
    return emitOpError("amp-autodiff: the loss depends on the attention's "
                       "log-sum-exp, which only its gradient may read");
  // The mask gets no gradient (PyTorch's SDPA gives none to a boolean mask;
  // amp's importer folds additive masks built from shapes).
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           auto g = AttentionGradOp::create(
                               b, getLoc(), dy, getQuery(), getKey(),
                               getValue(), getResult(), getLse(), getMask(),
                               getCausalAttr(), getScaleAttr());
                           grads[0] = g.getQueryGrad();
                           grads[1] = g.getKeyGrad();
                           grads[2] = g.getValueGrad();
                         });
}

LogicalResult BatchNormOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  if (resultGrads[1] || resultGrads[2])
    return emitOpError("amp-autodiff: the loss depends on the running "
                       "statistics, which are state and not differentiable");
  // The running statistics get no gradient.
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           auto g = BatchNormGradOp::create(
                               b, getLoc(), dy, getInput(), getScale(),
                               getEpsilonAttr(), getRanksAttr());
                           grads[0] = g.getInputGrad();
                           grads[1] = g.getScaleGrad();
                           grads[2] = g.getBiasGrad();
                         });
}

LogicalResult EmbeddingOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(*this, resultGrads, operandGrads,
                         [&](Value dy, MutableArrayRef<Value> grads) {
                           grads[0] = EmbeddingGradOp::create(
                               b, getLoc(), getTable().getType(), dy,
                               getIndices());
                           // padding_idx: its row's gradient is zeroed
                           // by a constant [V, 1] row mask.
                           if (std::optional<int64_t> pad = getPaddingIdx()) {
                             auto table = getTable().getType();
                             auto type = RankedTensorType::get(
                                 {table.getDimSize(0), 1},
                                 table.getElementType());
                             SmallVector<Attribute> mask(
                                 table.getDimSize(0),
                                 b.getFloatAttr(table.getElementType(), 1.0));
                             mask[*pad] =
                                 b.getFloatAttr(table.getElementType(), 0.0);
                             grads[0] = MulOp::create(
                                 b, getLoc(), grads[0],
                                 ConstantOp::create(
                                     b, getLoc(),
                                     DenseElementsAttr::get(type, mask)));
                           }
                         });
}

LogicalResult ConcatOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        int64_t axis = getAxis(), offset = 0;
        for (auto [i, input] : llvm::enumerate(getInputs())) {
          auto type = cast<RankedTensorType>(input.getType());
          SmallVector<int64_t> offsets(type.getRank(), 0);
          offsets[axis] = offset;
          grads[i] = SliceOp::create(b, getLoc(), type, dy,
                                     b.getDenseI64ArrayAttr(offsets));
          offset += type.getDimSize(axis);
        }
      });
}

LogicalResult SliceOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                SmallVectorImpl<Value> &operandGrads) {
  return singleResultVJP(
      *this, resultGrads, operandGrads,
      [&](Value dy, MutableArrayRef<Value> grads) {
        // Zeros around the box, one dimension at a time: the gradient of a
        // slice is the gradient placed back where the box was.
        Location loc = getLoc();
        auto inputType = cast<RankedTensorType>(getInput().getType());
        Value g = dy;
        for (int64_t d = 0; d < inputType.getRank(); ++d) {
          auto type = cast<RankedTensorType>(g.getType());
          int64_t before = getOffsets()[d];
          int64_t after = inputType.getDimSize(d) - before - type.getDimSize(d);
          if (before == 0 && after == 0)
            continue;
          SmallVector<Value> parts;
          auto zeros = [&](int64_t size) {
            SmallVector<int64_t> shape(type.getShape());
            shape[d] = size;
            auto zt = type.clone(shape);
            return ConstantOp::create(
                b, loc,
                DenseElementsAttr::get(
                    zt, b.getFloatAttr(zt.getElementType(), 0.0)));
          };
          if (before)
            parts.push_back(zeros(before));
          parts.push_back(g);
          if (after)
            parts.push_back(zeros(after));
          g = ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(d));
        }
        grads[0] = g;
      });
}
