//===- OptimizerToLinalg.cpp - Optimizer and loss-scaling updates ---------===//
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

#include <limits>

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

/// With a skip flag, each output is its old value when the flag is set: a
/// skipped step leaves parameters and state bit-identical.
SmallVector<Value> keepOnSkip(OpBuilder &b, Location loc, Value skip,
                              SmallVector<Value> updated, ValueRange old) {
  if (!skip)
    return updated;
  for (size_t i = 0; i < updated.size(); ++i)
    if (updated[i])
      updated[i] = arith::SelectOp::create(b, loc, skip, old[i], updated[i]);
  return updated;
}

/// Arithmetic shorthands on f32 scalars.
struct F32Math {
  OpBuilder &b;
  Location loc;
  Value c(double v) { return scalarConstant(b, loc, b.getF32Type(), v); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
};

/// The learning rate and weight decay of each parameter of an update: the
/// op's scalars, or its parameter groups' (a rank-0 slice of a `[G]` lr, one
/// per group, and `weight_decays`).
class ParamGroups {
public:
  template <typename UpdateOp>
  ParamGroups(OpBuilder &b, UpdateOp op)
      : b(b), loc(op.getLoc()), lr(op.getLr()), decay(op.getWeightDecay()),
        lrGroups(op.getLrGroups()), weightDecays(op.getWeightDecays()) {}

  /// The group of parameter `i` (0 without groups).
  int64_t group(size_t i) const { return lrGroups ? (*lrGroups)[i] : 0; }

  /// The rank-0 learning rate of group `g`.
  Value lrOfGroup(int64_t g) {
    if (!lrGroups)
      return lr;
    Value &slice = slices[g];
    if (!slice) {
      auto type = RankedTensorType::get({1}, b.getF32Type());
      Value one = tensor::ExtractSliceOp::create(
          b, loc, type, lr, ValueRange(), ValueRange(), ValueRange(),
          b.getDenseI64ArrayAttr({g}), b.getDenseI64ArrayAttr({1}),
          b.getDenseI64ArrayAttr({1}));
      slice = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({}, b.getF32Type()), one,
          ArrayRef<ReassociationIndices>{});
    }
    return slice;
  }
  Value lrOf(size_t i) { return lrOfGroup(group(i)); }

  double weightDecayOf(size_t i) const {
    return weightDecays ? (*weightDecays)[i] : decay.convertToDouble();
  }

private:
  OpBuilder &b;
  Location loc;
  Value lr;
  APFloat decay;
  std::optional<ArrayRef<int64_t>> lrGroups;
  std::optional<ArrayRef<double>> weightDecays;
  llvm::DenseMap<int64_t, Value> slices;
};

struct SgdUpdateToLinalg : OpRewritePattern<SgdUpdateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SgdUpdateOp op,
                                PatternRewriter &rewriter) const override {
    double momentum = op.getMomentum().convertToDouble();
    bool nesterov = op.getNesterov();
    bool hasBuffers = !op.getMomentumBuffers().empty();
    Value skip = op.getSkip();
    ParamGroups groups(rewriter, op);
    SmallVector<Value> newParams, newBuffers;
    for (auto [i, p] : llvm::enumerate(op.getParams())) {
      double decay = groups.weightDecayOf(i);
      SmallVector<Value> scalars = {groups.lrOf(i)};
      if (skip)
        scalars.push_back(skip);
      SmallVector<Value> tensors = {p, op.getGrads()[i]};
      SmallVector<Type> outputs = {p.getType()};
      if (hasBuffers) {
        tensors.push_back(op.getMomentumBuffers()[i]);
        outputs.push_back(op.getMomentumBuffers()[i].getType());
      }
      SmallVector<Value> results = buildUpdate(
          rewriter, op.getLoc(), tensors, scalars, outputs,
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
            return keepOnSkip(b, l, skip ? s[1] : Value(), out,
                              {t[0], hasBuffers ? t[2] : Value()});
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
    bool decoupled = op.getDecoupled();
    ParamGroups groups(rewriter, op);
    // t = step + 1.
    auto stepType = cast<RankedTensorType>(op.getStep().getType());
    Value skip = op.getSkip();
    AffineMap scalarMap = AffineMap::get(0, 0, {}, op.getContext());
    SmallVector<GenericInput> stepInputs = {{op.getStep(), scalarMap}};
    if (skip)
      stepInputs.push_back({skip, scalarMap});
    // A skipped step does not count.
    Value newStep = buildElementwise(
        rewriter, loc, stepType, stepInputs, stepType.getElementType(),
        [&](OpBuilder &b, Location l, ValueRange in) -> Value {
          Value next = arith::AddIOp::create(
              b, l, in[0],
              arith::ConstantOp::create(b, l, b.getI32IntegerAttr(1)));
          if (!skip)
            return next;
          return arith::SelectOp::create(b, l, in[1], in[0], next);
        });
    // The per-step scalars, once, in f64 as PyTorch computes them (1 - beta^t
    // cancels badly in f32): step_size = lr / (1 - beta1^t) and
    // sqrt(1 - beta2^t).
    auto scalarType = RankedTensorType::get({}, rewriter.getF32Type());
    auto groupScalars = [&](Value lr) {
      return buildUpdate(
        rewriter, loc, {lr, newStep}, {}, {scalarType, scalarType},
        [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
          Type f64 = b.getF64Type();
          auto c = [&](double v) { return scalarConstant(b, l, f64, v); };
          Value steps = arith::SIToFPOp::create(b, l, f64, t[1]);
          Value lr = arith::ExtFOp::create(b, l, f64, t[0]);
          Value bc1 = arith::SubFOp::create(
              b, l, c(1.0), math::PowFOp::create(b, l, c(beta1), steps));
          Value bc2 = arith::SubFOp::create(
              b, l, c(1.0), math::PowFOp::create(b, l, c(beta2), steps));
          return SmallVector<Value>{arith::DivFOp::create(b, l, lr, bc1),
                                    math::SqrtOp::create(b, l, bc2)};
        });
    };
    llvm::DenseMap<int64_t, SmallVector<Value>> scalarsOfGroup;
    SmallVector<Value> params, firsts, seconds;
    for (auto [i, p] : llvm::enumerate(op.getParams())) {
      Value m0 = op.getExpAvgs()[i], v0 = op.getExpAvgSqs()[i];
      double decay = groups.weightDecayOf(i);
      SmallVector<Value> &scalars = scalarsOfGroup[groups.group(i)];
      if (scalars.empty())
        scalars = groupScalars(groups.lrOf(i));
      SmallVector<Value> perParamScalars = {groups.lrOf(i), scalars[0],
                                            scalars[1]};
      if (skip)
        perParamScalars.push_back(skip);
      SmallVector<Value> results = buildUpdate(
          rewriter, loc, {p, op.getGrads()[i], m0, v0}, perParamScalars,
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
            return keepOnSkip(b, l, skip ? s[3] : Value(),
                              {newParam, first, second}, {t[0], t[2], t[3]});
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

struct ClipGradNormToLinalg : OpRewritePattern<ClipGradNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ClipGradNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type f32 = rewriter.getF32Type();
    auto scalarType = RankedTensorType::get({}, f32);
    // Sum of squares of every gradient, then their total, in f32.
    SmallVector<Value> partials;
    for (Value g : op.getGrads()) {
      auto type = cast<RankedTensorType>(g.getType());
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < type.getRank(); ++d)
        dims.push_back(d);
      Value sq =
          dims.empty()
              ? buildElementwise(rewriter, loc, scalarType,
                                 {{g, AffineMap::get(0, 0, {}, ctx)}}, f32,
                                 [](OpBuilder &b, Location l, ValueRange in) {
                                   return arith::MulFOp::create(b, l, in[0],
                                                                in[0])
                                       .getResult();
                                 })
              : buildReduction(
                    rewriter, loc, type.getShape(), dims,
                    {{g, identityMap(ctx, type.getRank())}}, f32, 0.0,
                    [](OpBuilder &b, Location l, Value acc, ValueRange in) {
                      return arith::AddFOp::create(
                          b, l, acc, arith::MulFOp::create(b, l, in[0], in[0]));
                    });
      partials.push_back(sq);
    }
    double maxNorm = op.getMaxNorm().convertToDouble();
    SmallVector<Value> normAndCoef = buildUpdate(
        rewriter, loc, partials, {}, {scalarType, scalarType},
        [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
          F32Math m{b, l};
          Value total = t[0];
          for (Value v : t.drop_front())
            total = m.add(total, v);
          Value norm = math::SqrtOp::create(b, l, total);
          Value coef = arith::MinimumFOp::create(
              b, l, m.c(1.0), m.div(m.c(maxNorm), m.add(norm, m.c(1e-6))));
          return SmallVector<Value>{norm, coef};
        });
    SmallVector<Value> results;
    for (Value g : op.getGrads()) {
      auto type = cast<RankedTensorType>(g.getType());
      results.push_back(buildElementwise(
          rewriter, loc, type,
          {{g, identityMap(ctx, type.getRank())},
           {normAndCoef[1], AffineMap::get(type.getRank(), 0, {}, ctx)}},
          f32, [](OpBuilder &b, Location l, ValueRange in) {
            return arith::MulFOp::create(b, l, in[0], in[1]).getResult();
          }));
    }
    results.push_back(normAndCoef[0]);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct AccumulateGradsToLinalg : OpRewritePattern<AccumulateGradsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AccumulateGradsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t steps = op.getSteps();
    auto countType = cast<RankedTensorType>(op.getCount().getType());
    auto flagType = RankedTensorType::get({}, rewriter.getI1Type());
    // count + 1 == steps: ready; the new count wraps to 0 then.
    SmallVector<Value> counts = buildUpdate(
        rewriter, loc, {op.getCount()}, {}, {countType, flagType},
        [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
          auto c = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getI32IntegerAttr(v));
          };
          Value next = arith::AddIOp::create(b, l, t[0], c(1));
          Value ready = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              next, c(steps));
          Value pending = arith::XOrIOp::create(
              b, l, ready,
              arith::ConstantOp::create(b, l, b.getBoolAttr(true)));
          return SmallVector<Value>{
              arith::SelectOp::create(b, l, ready, c(0), next), pending};
        });
    SmallVector<Value> accs, means;
    for (auto [acc, g] : llvm::zip(op.getAccumulators(), op.getGrads())) {
      SmallVector<Value> r = buildUpdate(
          rewriter, loc, {acc, g}, {counts[1]}, {acc.getType(), g.getType()},
          [&](OpBuilder &b, Location l, ValueRange t, ValueRange s) {
            F32Math m{b, l};
            Value sum = m.add(t[0], t[1]);
            // pending: keep summing; ready: start over at zero.
            Value kept = arith::SelectOp::create(b, l, s[0], sum, m.c(0.0));
            return SmallVector<Value>{kept, m.div(sum, m.c(double(steps)))};
          });
      accs.push_back(r[0]);
      means.push_back(r[1]);
    }
    SmallVector<Value> results(accs);
    results.push_back(counts[0]);
    results.push_back(counts[1]);
    results.append(means);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// True when the f32 `x` is neither inf nor NaN: |x| < inf.
Value isFinite(OpBuilder &b, Location loc, Value x) {
  return arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OLT, math::AbsFOp::create(b, loc, x),
      scalarConstant(b, loc, x.getType(),
                    std::numeric_limits<double>::infinity()));
}

/// any(!isfinite(x)) over every element of `x`, as a rank-0 i1 tensor (an
/// i1 reduction over every dimension). unscale_grads and first_nonfinite
/// build it alike, so CSE merges the two over the same gradient.
Value hasNonfinite(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type(), i1 = b.getI1Type();
  auto type = cast<RankedTensorType>(x.getType());
  unsigned rank = type.getRank();
  Value falseInit =
      linalg::FillOp::create(
          b, loc,
          Value(arith::ConstantOp::create(b, loc, b.getBoolAttr(false))),
          Value(tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i1)))
          .getResult(0);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::reduction);
  auto check = linalg::GenericOp::create(
      b, loc, TypeRange{RankedTensorType::get({}, i1)}, ValueRange{x},
      ValueRange{falseInit},
      SmallVector<AffineMap>{identityMap(ctx, rank),
                             AffineMap::get(rank, 0, {}, ctx)},
      iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value bad = arith::XOrIOp::create(
            nb, l, isFinite(nb, l, convertFloat(nb, l, args[0], f32)),
            arith::ConstantOp::create(nb, l, nb.getBoolAttr(true)));
        linalg::YieldOp::create(
            nb, l, arith::OrIOp::create(nb, l, args[1], bad).getResult());
      });
  return check.getResult(0);
}

struct UnscaleGradsToLinalg : OpRewritePattern<UnscaleGradsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UnscaleGradsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type f32 = rewriter.getF32Type(), i1 = rewriter.getI1Type();
    auto scalarF32 = RankedTensorType::get({}, f32);
    auto flagType = RankedTensorType::get({}, i1);
    // 1 / (scale * divisor) in f64, rounded to f32 once (GradScaler's
    // inv_scale, with a data-parallel mean folded in).
    double divisor = double(op.getDivisor());
    Value inv =
        buildUpdate(rewriter, loc, {op.getScale()}, {}, {scalarF32},
                    [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
                      Type f64 = b.getF64Type();
                      Value s = arith::ExtFOp::create(b, l, f64, t[0]);
                      if (divisor != 1.0)
                        s = arith::MulFOp::create(
                            b, l, s, scalarConstant(b, l, f64, divisor));
                      return SmallVector<Value>{arith::DivFOp::create(
                          b, l, scalarConstant(b, l, f64, 1.0), s)};
                    })[0];
    SmallVector<Value> results, flags;
    for (Value g : op.getGrads()) {
      auto type = cast<RankedTensorType>(g.getType());
      unsigned rank = type.getRank();
      flags.push_back(hasNonfinite(rewriter, loc, g));
      results.push_back(buildElementwise(
          rewriter, loc, type,
          {{g, identityMap(ctx, rank)},
           {inv, AffineMap::get(rank, 0, {}, ctx)}},
          f32, [](OpBuilder &b, Location l, ValueRange in) {
            return arith::MulFOp::create(b, l, in[0], in[1]).getResult();
          }));
    }
    Value found =
        buildUpdate(rewriter, loc, flags, {}, {flagType},
                    [](OpBuilder &b, Location l, ValueRange t, ValueRange) {
                      Value any = t[0];
                      for (Value f : t.drop_front())
                        any = arith::OrIOp::create(b, l, any, f);
                      return SmallVector<Value>{any};
                    })[0];
    results.push_back(found);
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// The first operand (in `order`) with an inf or NaN, or -1: one flag per
/// operand, then a scalar pass over the flags from the last to the first.
struct FirstNonfiniteToLinalg : OpRewritePattern<FirstNonfiniteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(FirstNonfiniteOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<Value> flags;
    for (Value v : op.getValues())
      flags.push_back(hasNonfinite(rewriter, loc, v));
    SmallVector<int64_t> order;
    if (std::optional<ArrayRef<int64_t>> given = op.getOrder())
      order.assign(given->begin(), given->end());
    else
      for (int64_t i = 0, e = flags.size(); i < e; ++i)
        order.push_back(i);
    Value index = buildUpdate(
        rewriter, loc, flags, {}, {op.getType()},
        [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
          auto c = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getI32IntegerAttr(v))
                .getResult();
          };
          Value found = c(-1);
          for (int64_t i : llvm::reverse(order))
            found = arith::SelectOp::create(b, l, t[i], c(i), found);
          return SmallVector<Value>{found};
        })[0];
    rewriter.replaceOp(op, index);
    return success();
  }
};

/// Values of at least this many elements are reduced in two stages.
constexpr int64_t kSplitMagnitudeElements = 65536;

/// The largest |x| over `x` as a rank-0 f32 tensor, NaN when an element is
/// NaN and else +inf when one is an inf. Reduced on the bits: with the sign
/// bit cleared, an IEEE value's bits order as its magnitude, inf above
/// every finite value and NaN above inf; so an unsigned integer maximum
/// (which LLVM vectorizes, and which reads f16 as 16-bit lanes) finds it,
/// and one bitcast at the end gives the value back.
///
/// With `smallest`, the smallest nonzero finite |x| instead (0 when there
/// is none): an unsigned minimum over the same bits, zeros, infs and NaNs
/// counted as the all-ones pattern (above every magnitude).
Value largestMagnitude(OpBuilder &b, Location loc, Value x,
                       bool smallest = false) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(x.getType());
  auto element = cast<FloatType>(type.getElementType());
  unsigned width = element.getWidth();
  Type bits = b.getIntegerType(width);
  APInt infBits = APFloat::getInf(element.getFloatSemantics()).bitcastToAPInt();
  // The accumulator's identity: 0 for the maximum, all ones for the minimum.
  Value zero = arith::ConstantOp::create(
      b, loc,
      b.getIntegerAttr(bits, smallest ? APInt::getAllOnes(width)
                                      : APInt::getZero(width)));
  // max over the leading `kept` dimensions of `input` kept apart.
  auto reduceBits = [&](Value input, unsigned kept, bool rawFloats) {
    auto inputType = cast<RankedTensorType>(input.getType());
    unsigned rank = inputType.getRank();
    auto outType =
        RankedTensorType::get(inputType.getShape().take_front(kept), bits);
    Value init =
        linalg::FillOp::create(
            b, loc, zero,
            Value(tensor::EmptyOp::create(b, loc, outType.getShape(), bits)))
            .getResult(0);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    SmallVector<AffineExpr> outDims;
    for (unsigned d = 0; d < kept; ++d) {
      iterators[d] = utils::IteratorType::parallel;
      outDims.push_back(getAffineDimExpr(d, ctx));
    }
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{input}, ValueRange{init},
               SmallVector<AffineMap>{identityMap(ctx, rank),
                                      AffineMap::get(rank, 0, outDims, ctx)},
               iterators,
               [&](OpBuilder &nb, Location l, ValueRange args) {
                 Value magnitude = args[0];
                 if (rawFloats)
                   magnitude = arith::AndIOp::create(
                       nb, l, arith::BitcastOp::create(nb, l, bits, args[0]),
                       arith::ConstantOp::create(
                           nb, l,
                           nb.getIntegerAttr(bits,
                                             APInt::getSignedMaxValue(width))));
                 if (rawFloats && smallest) {
                   // Zeros, infs and NaNs: none of them is the smallest.
                   auto c = [&](const APInt &v) {
                     return arith::ConstantOp::create(
                         nb, l, nb.getIntegerAttr(bits, v));
                   };
                   Value none = arith::OrIOp::create(
                       nb, l,
                       arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                             magnitude,
                                             c(APInt::getZero(width))),
                       arith::CmpIOp::create(nb, l, arith::CmpIPredicate::uge,
                                             magnitude, c(infBits)));
                   magnitude = arith::SelectOp::create(
                       nb, l, none, c(APInt::getAllOnes(width)), magnitude);
                 }
                 Value combined = smallest ? Value(arith::MinUIOp::create(
                                                 nb, l, args[1], magnitude))
                                           : Value(arith::MaxUIOp::create(
                                                 nb, l, args[1], magnitude));
                 linalg::YieldOp::create(nb, l, combined);
               })
        .getResult(0);
  };
  // A large value in two stages, so that the CPU's threads share the first
  // (amp-parallelize-loops splits its parallel dimension; a maximum is
  // exact in any order): its elements as [parts, n / parts] rows, each
  // row's maximum, then the maximum of those.
  int64_t n = type.getNumElements(), parts = 1;
  if (n >= kSplitMagnitudeElements)
    for (int64_t p = 64; p >= 4 && parts == 1; --p)
      if (n % p == 0)
        parts = p;
  Value reduced;
  if (parts == 1) {
    reduced = reduceBits(x, 0, /*rawFloats=*/true);
  } else {
    Value flat = x;
    if (type.getRank() != 1) {
      SmallVector<ReassociationIndices> all(1);
      for (int64_t d = 0; d < type.getRank(); ++d)
        all[0].push_back(d);
      flat = tensor::CollapseShapeOp::create(b, loc, x, all);
    }
    Value rows = tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({parts, n / parts}, element), flat,
        SmallVector<ReassociationIndices>{{0, 1}});
    reduced = reduceBits(reduceBits(rows, 1, /*rawFloats=*/true), 0,
                         /*rawFloats=*/false);
  }
  // Back to a float, widened to f32 (inf and NaN stay what they are).
  Type f32 = b.getF32Type();
  auto scalarF32 = RankedTensorType::get({}, f32);
  auto none = AffineMap::get(0, 0, {}, ctx);
  return linalg::GenericOp::create(
             b, loc, TypeRange{scalarF32}, ValueRange{reduced},
             ValueRange{
                 tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, f32)},
             SmallVector<AffineMap>{none, none},
             SmallVector<utils::IteratorType>{},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value raw = args[0];
               // (The minimum's identity left: nothing nonzero and finite.)
               if (smallest)
                 raw = arith::SelectOp::create(
                     nb, l,
                     arith::CmpIOp::create(
                         nb, l, arith::CmpIPredicate::eq, raw,
                         arith::ConstantOp::create(
                             nb, l,
                             nb.getIntegerAttr(bits,
                                               APInt::getAllOnes(width)))),
                     arith::ConstantOp::create(
                         nb, l, nb.getIntegerAttr(bits, APInt::getZero(width))),
                     raw);
               Value value = arith::BitcastOp::create(nb, l, element, raw);
               linalg::YieldOp::create(nb, l, convertFloat(nb, l, value, f32));
             })
      .getResult(0);
}

/// One reduction per operand (largestMagnitude), each right after the
/// operand's producer, then one parallel op gathering the rank-0 results
/// into the vector: entry i selects operand i.
struct CheckNumericsToLinalg : OpRewritePattern<CheckNumericsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CheckNumericsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    // Each reduction right after its value is made, so the check keeps no
    // activation alive until the end of the step; with `smallest`, each
    // value's smallest nonzero magnitude after all the largest.
    SmallVector<Value> magnitudes;
    for (bool smallest : {false, true}) {
      if (smallest && !op.getSmallest())
        break;
      for (Value v : op.getValues()) {
        OpBuilder::InsertionGuard guard(rewriter);
        if (Operation *def = v.getDefiningOp())
          rewriter.setInsertionPointAfter(def);
        else
          rewriter.setInsertionPointToStart(v.getParentBlock());
        magnitudes.push_back(largestMagnitude(rewriter, loc, v, smallest));
      }
    }
    auto type = cast<RankedTensorType>(op.getType());
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    SmallVector<AffineMap> maps(magnitudes.size(),
                                AffineMap::get(1, 0, {}, ctx));
    maps.push_back(identityMap(ctx, 1));
    auto gather = linalg::GenericOp::create(
        rewriter, loc, TypeRange{type}, magnitudes, ValueRange{init}, maps,
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 0));
          Value picked = args[magnitudes.size() - 1];
          for (int64_t i = int64_t(magnitudes.size()) - 2; i >= 0; --i) {
            Value here = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::eq, index,
                arith::ConstantOp::create(b, l, b.getI64IntegerAttr(i)));
            picked = arith::SelectOp::create(b, l, here, args[i], picked);
          }
          linalg::YieldOp::create(b, l, picked);
        });
    rewriter.replaceOp(op, gather.getResult(0));
    return success();
  }
};

struct UpdateScaleToLinalg : OpRewritePattern<UpdateScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(UpdateScaleOp op,
                                PatternRewriter &rewriter) const override {
    double growth = op.getGrowthFactor().convertToDouble();
    double backoff = op.getBackoffFactor().convertToDouble();
    int64_t interval = op.getGrowthInterval();
    double minScale = op.getMinScale().convertToDouble();
    double maxScale = op.getMaxScale().convertToDouble();
    int64_t hysteresis = op.getHysteresis();
    SmallVector<Type> outputs(op->getResultTypes());
    Value skip = op.getSkip();
    SmallVector<Value> inputs = {op.getScale(), op.getTracker(),
                                 op.getFoundInf()};
    if (skip)
      inputs.push_back(skip);
    SmallVector<Value> results = buildUpdate(
        rewriter, op.getLoc(), inputs, {}, outputs,
        [&](OpBuilder &b, Location l, ValueRange t, ValueRange) {
          Type f32 = b.getF32Type(), f64 = b.getF64Type();
          auto c32 = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getI32IntegerAttr(v));
          };
          // scale * factor in f64, rounded to f32 (float * double in PyTorch).
          auto times = [&](double factor) {
            Value wide = arith::MulFOp::create(
                b, l, arith::ExtFOp::create(b, l, f64, t[0]),
                scalarConstant(b, l, f64, factor));
            return arith::TruncFOp::create(b, l, f32, wide).getResult();
          };
          Value scale = t[0], tracker = t[1], found = t[2];
          // The tracker counts clean steps (>= 0) or, below 0, consecutive
          // overflows not yet acted on (hysteresis > 1).
          Value zero = c32(0);
          Value cleanCount = arith::MaxSIOp::create(b, l, tracker, zero);
          Value overflows = arith::SubIOp::create(
              b, l, c32(1), arith::MinSIOp::create(b, l, tracker, zero));
          Value backoffNow = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::sge, overflows, c32(hysteresis));
          Value backed = times(backoff);
          Value minV = scalarConstant(b, l, f32, minScale);
          Value collapsed = arith::AndIOp::create(
              b, l, arith::AndIOp::create(b, l, found, backoffNow),
              arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, backed,
                                    minV));
          Value backedScale = arith::SelectOp::create(
              b, l, backoffNow, arith::MaximumFOp::create(b, l, backed, minV),
              scale);
          Value infTracker = arith::SelectOp::create(
              b, l, backoffNow, zero,
              arith::SubIOp::create(b, l, zero, overflows));
          Value succ = arith::AddIOp::create(b, l, cleanCount, c32(1));
          Value atInterval = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, succ, c32(interval));
          Value grown = times(growth);
          Value grow =
              arith::AndIOp::create(b, l, atInterval, isFinite(b, l, grown));
          Value capped = arith::MinimumFOp::create(
              b, l, grown, scalarConstant(b, l, f32, maxScale));
          Value cleanScale = arith::SelectOp::create(b, l, grow, capped, scale);
          Value cleanTracker =
              arith::SelectOp::create(b, l, atInterval, zero, succ);
          SmallVector<Value> updated = {
              arith::SelectOp::create(b, l, found, backedScale, cleanScale),
              arith::SelectOp::create(b, l, found, infTracker, cleanTracker),
              collapsed};
          if (!skip)
            return updated;
          // Pending micro-batches: nothing moves, nothing collapses.
          return keepOnSkip(
              b, l, t[3], updated,
              {scale, tracker,
               arith::ConstantOp::create(b, l, b.getBoolAttr(false))});
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct AnyToLinalg : OpRewritePattern<AnyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AnyOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, buildUpdate(rewriter, op.getLoc(), {op.getLhs(), op.getRhs()}, {},
                        {op.getType()},
                        [](OpBuilder &b, Location l, ValueRange t, ValueRange) {
                          return SmallVector<Value>{
                              arith::OrIOp::create(b, l, t[0], t[1])};
                        }));
    return success();
  }
};

} // namespace

void amp::populateTrainOptimizerToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<SgdUpdateToLinalg, AdamUpdateToLinalg, ClipGradNormToLinalg,
               AccumulateGradsToLinalg, UnscaleGradsToLinalg,
               FirstNonfiniteToLinalg, CheckNumericsToLinalg,
               UpdateScaleToLinalg, AnyToLinalg>(patterns.getContext());
}
