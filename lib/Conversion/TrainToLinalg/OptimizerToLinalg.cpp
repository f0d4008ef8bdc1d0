//===- OptimizerToLinalg.cpp - Optimizer updates to linalg ----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// One multi-output linalg.generic per parameter: the parameter and its
// optimizer state are read once and written once (the fusion the "fused
// multi-tensor" update names), all arithmetic in f32.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

/// The per-element body of an update: f32 values of the tensors, then of the
/// scalars, in; f32 new values of the outputs out.
using UpdateBody = llvm::function_ref<SmallVector<Value>(
    OpBuilder &, Location, ValueRange tensors, ValueRange scalars)>;

/// A parallel generic over `tensors[0]`'s shape reading `tensors` and the
/// rank-0 `scalars`, producing one result per `outputs` type.
SmallVector<Value> buildUpdate(OpBuilder &b, Location loc, ValueRange tensors,
                               ValueRange scalars, TypeRange outputs,
                               UpdateBody body) {
  MLIRContext *ctx = b.getContext();
  auto shapeType = cast<RankedTensorType>(tensors.front().getType());
  unsigned rank = shapeType.getRank();
  AffineMap id = identityMap(ctx, rank),
            none = AffineMap::get(rank, 0, {}, ctx);
  SmallVector<Value> inputs(tensors.begin(), tensors.end());
  inputs.append(scalars.begin(), scalars.end());
  SmallVector<AffineMap> maps(tensors.size(), id);
  maps.append(scalars.size(), none);
  SmallVector<Value> inits;
  for (Type t : outputs) {
    auto type = cast<RankedTensorType>(t);
    inits.push_back(tensor::EmptyOp::create(b, loc, type.getShape(),
                                            type.getElementType()));
    maps.push_back(id);
  }
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Type f32 = b.getF32Type();
  auto generic = linalg::GenericOp::create(
      b, loc, outputs, inputs, inits, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange args) {
        SmallVector<Value> values;
        for (Value a : args.take_front(inputs.size()))
          values.push_back(
              isa<FloatType>(a.getType()) ? convertFloat(nb, l, a, f32) : a);
        SmallVector<Value> results =
            body(nb, l, ArrayRef(values).take_front(tensors.size()),
                 ArrayRef(values).drop_front(tensors.size()));
        SmallVector<Value> rounded;
        for (auto [r, init] :
             llvm::zip(results, args.drop_front(inputs.size())))
          rounded.push_back(convertFloat(nb, l, r, init.getType()));
        linalg::YieldOp::create(nb, l, rounded);
      });
  return generic.getResults();
}

/// Arithmetic shorthands on f32 scalars.
struct F32Math {
  OpBuilder &b;
  Location loc;
  Value c(double v) { return floatConstant(b, loc, b.getF32Type(), v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
};

struct SgdUpdateToLinalg : OpRewritePattern<SgdUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SgdUpdateOp op,
                                PatternRewriter &rewriter) const override {
    double momentum = op.getMomentum().convertToDouble();
    double decay = op.getWeightDecay().convertToDouble();
    bool nesterov = op.getNesterov();
    bool hasBuffers = !op.getMomentumBuffers().empty();
    SmallVector<Value> newParams, newBuffers;
    for (auto [i, p] : llvm::enumerate(op.getParams())) {
      SmallVector<Value> tensors = {p, op.getGrads()[i]};
      SmallVector<Type> outputs = {p.getType()};
      if (hasBuffers) {
        tensors.push_back(op.getMomentumBuffers()[i]);
        outputs.push_back(op.getMomentumBuffers()[i].getType());
      }
      SmallVector<Value> results = buildUpdate(
          rewriter, op.getLoc(), tensors, {op.getLr()}, outputs,
          [&](OpBuilder &b, Location l, ValueRange t, ValueRange s) {
            F32Math m{b, l};
            Value g = t[1];
            if (decay != 0.0)
              g = m.add(g, m.mul(m.c(decay), t[0]));
            SmallVector<Value> out;
            Value step = g;
            Value buffer;
            if (hasBuffers) {
              buffer = m.add(m.mul(m.c(momentum), t[2]), g);
              step = nesterov ? m.add(g, m.mul(m.c(momentum), buffer)) : buffer;
            }
            out.push_back(m.sub(t[0], m.mul(s[0], step)));
            if (hasBuffers)
              out.push_back(buffer);
            return out;
          });
      newParams.push_back(results[0]);
      if (hasBuffers)
        newBuffers.push_back(results[1]);
    }
    SmallVector<Value> all(newParams);
    all.append(newBuffers);
    rewriter.replaceOp(op, all);
    return success();
  }
};

struct AdamUpdateToLinalg : OpRewritePattern<AdamUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AdamUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    double beta1 = op.getBeta1().convertToDouble();
    double beta2 = op.getBeta2().convertToDouble();
    double eps = op.getEpsilon().convertToDouble();
    double decay = op.getWeightDecay().convertToDouble();
    bool decoupled = op.getDecoupled();
    // t = step + 1.
    auto stepType = cast<RankedTensorType>(op.getStep().getType());
    Value newStep = buildElementwise(
        rewriter, loc, stepType,
        {{op.getStep(), AffineMap::get(0, 0, {}, op.getContext())}},
        stepType.getElementType(), [](OpBuilder &b, Location l, ValueRange in) {
          return arith::AddIOp::create(
              b, l, in[0],
              arith::ConstantOp::create(b, l, b.getI32IntegerAttr(1)));
        });
    // The per-step scalars, once, in f64 as PyTorch computes them (1 - beta^t
    // cancels badly in f32): step_size = lr / (1 - beta1^t) and
    // sqrt(1 - beta2^t).
    auto scalarType = RankedTensorType::get({}, rewriter.getF32Type());
    SmallVector<Value> scalars = buildUpdate(
        rewriter, loc, {op.getLr(), newStep}, {}, {scalarType, scalarType},
        [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
          Type f64 = b.getF64Type();
          auto c = [&](double v) { return floatConstant(b, l, f64, v); };
          Value steps = arith::SIToFPOp::create(b, l, f64, t[1]);
          Value lr = arith::ExtFOp::create(b, l, f64, t[0]);
          Value bc1 = arith::SubFOp::create(
              b, l, c(1.0), math::PowFOp::create(b, l, c(beta1), steps));
          Value bc2 = arith::SubFOp::create(
              b, l, c(1.0), math::PowFOp::create(b, l, c(beta2), steps));
          return SmallVector<Value>{arith::DivFOp::create(b, l, lr, bc1),
                                    math::SqrtOp::create(b, l, bc2)};
        });
    SmallVector<Value> params, firsts, seconds;
    for (auto [i, p] : llvm::enumerate(op.getParams())) {
      Value m0 = op.getExpAvgs()[i], v0 = op.getExpAvgSqs()[i];
      SmallVector<Value> results = buildUpdate(
          rewriter, loc, {p, op.getGrads()[i], m0, v0},
          {op.getLr(), scalars[0], scalars[1]},
          {p.getType(), m0.getType(), v0.getType()},
          [&](OpBuilder &b, Location l, ValueRange t, ValueRange s) {
            F32Math m{b, l};
            Value lr = s[0], stepSize = s[1], bc2Sqrt = s[2];
            Value param = t[0], g = t[1];
            if (decay != 0.0) {
              if (decoupled)
                param = m.mul(param, m.sub(m.c(1.0), m.mul(lr, m.c(decay))));
              else
                g = m.add(g, m.mul(m.c(decay), param));
            }
            Value first =
                m.add(m.mul(m.c(beta1), t[2]), m.mul(m.c(1.0 - beta1), g));
            Value second = m.add(m.mul(m.c(beta2), t[3]),
                                 m.mul(m.c(1.0 - beta2), m.mul(g, g)));
            Value denom = m.add(
                m.div(math::SqrtOp::create(b, l, second), bc2Sqrt), m.c(eps));
            Value newParam = m.sub(param, m.mul(stepSize, m.div(first, denom)));
            return SmallVector<Value>{newParam, first, second};
          });
      params.push_back(results[0]);
      firsts.push_back(results[1]);
      seconds.push_back(results[2]);
    }
    SmallVector<Value> all(params);
    all.append(firsts);
    all.append(seconds);
    all.push_back(newStep);
    rewriter.replaceOp(op, all);
    return success();
  }
};

} // namespace

void amp::populateTrainOptimizerToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<SgdUpdateToLinalg, AdamUpdateToLinalg>(patterns.getContext());
}
