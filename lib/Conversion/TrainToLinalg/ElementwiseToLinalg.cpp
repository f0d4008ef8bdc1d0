//===- ElementwiseToLinalg.cpp - Element-wise train ops to linalg ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Element-wise ops: those defined by their scalar formula (every
// ElementwiseOpInterface op) through one generic pattern; gelu, cast,
// dropout, broadcast and the activation gradients by their own. Each is one
// parallel linalg.generic computing in f32 for f16/bf16 and rounding once.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

//===----------------------------------------------------------------------===//
// Scalar formulas (x in the compute type)
//===----------------------------------------------------------------------===//

/// gelu(x) = x * Phi(x): 0.5 x (1 + erf(x / sqrt 2)), or the tanh form.
Value gelu(OpBuilder &b, Location loc, Value x, bool tanhForm) {
  Type t = x.getType();
  auto c = [&](double v) { return scalarConstant(b, loc, t, v); };
  Value inner;
  if (tanhForm) {
    // sqrt(2/pi) * (x + 0.044715 x^3)
    Value x3 =
        arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, c(0.044715), x3));
    inner = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, c(std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = math::ErfOp::create(b, loc,
                                arith::MulFOp::create(b, loc, x, c(M_SQRT1_2)));
  }
  Value half = arith::MulFOp::create(b, loc, c(0.5), x);
  return arith::MulFOp::create(b, loc, half,
                               arith::AddFOp::create(b, loc, c(1.0), inner));
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Every op defined by its scalar formula (ElementwiseOpInterface): one
/// parallel linalg.generic over the operands broadcast to the result's shape,
/// computing in f32 for f16/bf16 and rounding once.
struct ElementwiseToLinalg
    : OpInterfaceRewritePattern<ElementwiseOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(ElementwiseOpInterface op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    Location loc = op->getLoc();
    SmallVector<GenericInput> inputs;
    for (Value operand : op->getOperands())
      inputs.push_back(
          broadcastInput(rewriter, loc, operand, type.getShape()));
    Value result = buildElementwise(
        rewriter, loc, type, inputs, getComputeType(type.getElementType()),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return op.buildScalar(b, l, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct GeluToLinalg : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    bool tanhForm = op.getApproximate() == GeluApproximation::tanh;
    Value result = buildElementwise(
        rewriter, op.getLoc(), type,
        {{op.getInput(), identityMap(op.getContext(), type.getRank())}},
        getComputeType(type.getElementType()),
        [&](OpBuilder &b, Location l, ValueRange args) {
          return gelu(b, l, args[0], tanhForm);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// clamp: maximumf(minimumf(x, max), min) in the compute type (NaN kept).
struct ClampToLinalg : OpRewritePattern<ClampOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClampOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Type compute = getComputeType(type.getElementType());
    double lo = op.getMin().convertToDouble(), hi = op.getMax().convertToDouble();
    Value result = buildElementwise(
        rewriter, op.getLoc(), type,
        {{op.getInput(), identityMap(op.getContext(), type.getRank())}},
        compute, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value upper = arith::MinimumFOp::create(
              b, l, args[0], scalarConstant(b, l, compute, hi));
          return arith::MaximumFOp::create(b, l, upper,
                                           scalarConstant(b, l, compute, lo));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// pow with PyTorch's CPU special cases (exact products, sqrt, reciprocals),
/// math.powf otherwise; in the compute type.
struct PowToLinalg : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    Type compute = getComputeType(type.getElementType());
    double c = op.getExponent().convertToDouble();
    Value result = buildElementwise(
        rewriter, op.getLoc(), type,
        {{op.getInput(), identityMap(op.getContext(), type.getRank())}},
        compute, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value x = args[0];
          auto one = [&]() { return scalarConstant(b, l, compute, 1.0); };
          auto square = [&]() { return arith::MulFOp::create(b, l, x, x); };
          if (c == 0.0)
            return one();
          if (c == 1.0)
            return x;
          if (c == 2.0)
            return square();
          if (c == 3.0)
            return arith::MulFOp::create(b, l, square(), x);
          if (c == 0.5)
            return math::SqrtOp::create(b, l, x);
          if (c == -0.5)
            return arith::DivFOp::create(b, l, one(),
                                         math::SqrtOp::create(b, l, x));
          if (c == -1.0)
            return arith::DivFOp::create(b, l, one(), x);
          if (c == -2.0)
            return arith::DivFOp::create(b, l, one(), square());
          return math::PowFOp::create(b, l, x,
                                      scalarConstant(b, l, compute, c));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CastToLinalg : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    auto inputType = cast<RankedTensorType>(op.getInput().getType());
    // One rounding: the input is read as is and converted to the result type.
    Value result = buildElementwise(
        rewriter, op.getLoc(), type,
        {{op.getInput(), identityMap(op.getContext(), type.getRank())}},
        inputType.getElementType(),
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct BroadcastToLinalg : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    GenericInput in =
        broadcastInput(rewriter, op.getLoc(), op.getInput(), type.getShape());
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, {in}, type.getElementType(),
        [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ReluGradToLinalg : OpRewritePattern<ReluGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluGradOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    AffineMap id = identityMap(op.getContext(), type.getRank());
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, {{op.getGrad(), id}, {op.getInput(), id}},
        getComputeType(type.getElementType()),
        [](OpBuilder &b, Location loc, ValueRange in) {
          Value zero = scalarConstant(b, loc, in[0].getType(), 0.0);
          Value positive = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OGT, in[1], zero);
          return arith::SelectOp::create(b, loc, positive, in[0], zero);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// gelu'(x): Phi(x) + x phi(x), or the derivative of the tanh form
/// 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3c x^2), t = tanh(k (x + c x^3)).
Value geluDerivative(OpBuilder &b, Location loc, Value x, bool tanhForm) {
  Type t = x.getType();
  auto c = [&](double v) { return scalarConstant(b, loc, t, v); };
  auto mul = [&](Value l, Value r) {
    return arith::MulFOp::create(b, loc, l, r);
  };
  auto add = [&](Value l, Value r) {
    return arith::AddFOp::create(b, loc, l, r);
  };
  Value x2 = mul(x, x);
  if (tanhForm) {
    double k = std::sqrt(2.0 / M_PI), cc = 0.044715;
    Value th =
        math::TanhOp::create(b, loc, mul(c(k), add(x, mul(c(cc), mul(x2, x)))));
    Value left = mul(c(0.5), add(c(1.0), th));
    Value sech2 = arith::SubFOp::create(b, loc, c(1.0), mul(th, th));
    Value inner = mul(c(k), add(c(1.0), mul(c(3 * cc), x2)));
    return add(left, mul(mul(c(0.5), x), mul(sech2, inner)));
  }
  Value cdf = mul(
      c(0.5), add(c(1.0), math::ErfOp::create(b, loc, mul(x, c(M_SQRT1_2)))));
  Value pdf = mul(c(1.0 / std::sqrt(2.0 * M_PI)),
                  math::ExpOp::create(b, loc, mul(c(-0.5), x2)));
  return add(cdf, mul(x, pdf));
}

struct GeluGradToLinalg : OpRewritePattern<GeluGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GeluGradOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    AffineMap id = identityMap(op.getContext(), type.getRank());
    bool tanhForm = op.getApproximate() == GeluApproximation::tanh;
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, {{op.getGrad(), id}, {op.getInput(), id}},
        getComputeType(type.getElementType()),
        [&](OpBuilder &b, Location loc, ValueRange in) {
          return arith::MulFOp::create(b, loc, in[0],
                                       geluDerivative(b, loc, in[1], tanhForm));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// i64 constant.
Value i64Constant(OpBuilder &b, Location loc, uint64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}

/// The dropout mask's uniform number for row-major element `index` of the
/// mask keyed `key` (the seed, plus the step counter times kStepStride):
/// splitmix64(index + key * golden) >> 40, scaled to [0, 1) in f32.
/// docs/TrainDialect.md states the formula; the backward pass reuses it.
Value dropoutUniform(OpBuilder &b, Location loc, Value index, Value key) {
  auto mix = [&](Value z, unsigned shift, uint64_t mul) {
    Value shifted =
        arith::ShRUIOp::create(b, loc, z, i64Constant(b, loc, shift));
    Value x = arith::XOrIOp::create(b, loc, z, shifted);
    return mul ? arith::MulIOp::create(b, loc, x, i64Constant(b, loc, mul))
                     .getResult()
               : x;
  };
  Value z = arith::AddIOp::create(
      b, loc, index,
      arith::MulIOp::create(b, loc, key,
                            i64Constant(b, loc, 0x9E3779B97F4A7C15ULL)));
  z = mix(z, 30, 0xBF58476D1CE4E5B9ULL);
  z = mix(z, 27, 0x94D049BB133111EBULL);
  z = mix(z, 31, 0);
  Value top24 = arith::ShRUIOp::create(b, loc, z, i64Constant(b, loc, 40));
  Type f32 = b.getF32Type();
  Value u = arith::UIToFPOp::create(b, loc, f32, top24);
  return arith::MulFOp::create(b, loc, u,
                               scalarConstant(b, loc, f32, 1.0 / (1 << 24)));
}

/// What one step of the counter adds to a dropout's key: odd, far from the
/// seeds' small integers, so (seed, step) pairs give distinct keys.
constexpr uint64_t kStepStride = 0xD1B54A32D192ED03ULL;

struct DropoutToLinalg : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    double rate = op.getRate().convertToDouble();
    uint64_t seed = op.getSeed();
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<GenericInput> inputs = {
        {op.getInput(), identityMap(op.getContext(), type.getRank())}};
    if (Value step = op.getStep()) // rank 0: read by every element
      inputs.push_back(
          {step, AffineMap::get(type.getRank(), 0, {}, op.getContext())});
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, inputs,
        getComputeType(type.getElementType()),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          // Row-major linear index of the element.
          Value linear = arith::ConstantIndexOp::create(b, loc, 0);
          for (auto [d, size] : llvm::enumerate(shape)) {
            Value idx = linalg::IndexOp::create(b, loc, d);
            linear = arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(
                    b, loc, linear,
                    arith::ConstantIndexOp::create(b, loc, size)),
                idx);
          }
          Value index =
              arith::IndexCastOp::create(b, loc, b.getI64Type(), linear);
          Value key = i64Constant(b, loc, seed);
          if (args.size() > 1) {
            Value step =
                arith::ExtUIOp::create(b, loc, b.getI64Type(), args[1]);
            key = arith::AddIOp::create(
                b, loc, key,
                arith::MulIOp::create(b, loc, step,
                                      i64Constant(b, loc, kStepStride)));
          }
          Value u = dropoutUniform(b, loc, index, key);
          Value keep = arith::CmpFOp::create(
              b, loc, arith::CmpFPredicate::OGE, u,
              scalarConstant(b, loc, b.getF32Type(), rate));
          Type t = args[0].getType();
          Value scaled = arith::MulFOp::create(
              b, loc, args[0], scalarConstant(b, loc, t, 1.0 / (1.0 - rate)));
          return arith::SelectOp::create(b, loc, keep, scaled,
                                         scalarConstant(b, loc, t, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// train.increment: a rank-0 generic adding 1 (wrapping).
struct IncrementToLinalg : OpRewritePattern<IncrementOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IncrementOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), type,
        {{op.getInput(), identityMap(op.getContext(), 0)}},
        type.getElementType(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value one = arith::ConstantOp::create(
              b, loc, b.getIntegerAttr(type.getElementType(), 1));
          return arith::AddIOp::create(b, loc, args[0], one);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void amp::populateTrainElementwiseToLinalgPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ElementwiseToLinalg, GeluToLinalg, ClampToLinalg, PowToLinalg,
               CastToLinalg,
               BroadcastToLinalg, DropoutToLinalg, IncrementToLinalg,
               ReluGradToLinalg, GeluGradToLinalg>(ctx);
}
