//===- ReductionToLinalg.cpp - Reducing train ops to linalg ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// softmax, log_softmax, layer_norm, batch_norm, reduce_sum/mean and the losses.
// Every statistic accumulates in f32 whatever the element type, the
// normalizations' in the accumulator type the target asks for (f32, or f64
// on the CPU: as PyTorch's CPU batch norm); variances are two-pass (sum of
// squared deviations from the mean), never E[x^2] - E[x]^2.
//
//===----------------------------------------------------------------------===//

#include "amp/ABI/Collectives.h"
#include "amp/ABI/ElementTypes.h"
#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>
#include <limits>

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// The dimensions [from, rank) as a list.
SmallVector<int64_t> dimRange(int64_t from, int64_t rank) {
  SmallVector<int64_t> dims;
  for (int64_t d = from; d < rank; ++d)
    dims.push_back(d);
  return dims;
}

/// The number of elements the dimensions `dims` of `shape` span.
int64_t countOf(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= shape[d];
  return n;
}

/// 1 / sqrt(x).
Value invSqrt(OpBuilder &b, Location loc, Value x) {
  return arith::DivFOp::create(b, loc, scalarConstant(b, loc, x.getType(), 1.0),
                               math::SqrtOp::create(b, loc, x));
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// In a generic over [..., S, S] scores: true where column <= row (the
/// positions a causal softmax keeps).
Value causalKeep(OpBuilder &b, Location loc, unsigned rank) {
  Value row = linalg::IndexOp::create(b, loc, rank - 2);
  Value col = linalg::IndexOp::create(b, loc, rank - 1);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule, col, row);
}

/// Row statistics of a (possibly causal) softmax along `axis`: the maximum
/// and the sum of exp(x - max), both f32 with the axis dropped.
std::pair<Value, Value> softmaxStats(OpBuilder &b, Location loc, Value input,
                                     int64_t axis, bool causal) {
  auto type = cast<RankedTensorType>(input.getType());
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  Type f32 = b.getF32Type();
  GenericInput x = {input, identityMap(ctx, rank)};
  Value max = buildReduction(
      b, loc, type.getShape(), {axis}, {x}, f32, -kInf,
      [&](OpBuilder &nb, Location l, Value acc, ValueRange in) {
        Value v = in[0];
        if (causal)
          v = arith::SelectOp::create(nb, l, causalKeep(nb, l, rank), v,
                                      scalarConstant(nb, l, f32, -kInf));
        return arith::MaximumFOp::create(nb, l, acc, v);
      });
  Value sum = buildReduction(
      b, loc, type.getShape(), {axis},
      {x, reducedInput(ctx, max, rank, {axis})}, f32, 0.0,
      [&](OpBuilder &nb, Location l, Value acc, ValueRange in) {
        Value e = math::ExpOp::create(
            nb, l, arith::SubFOp::create(nb, l, in[0], in[1]));
        if (causal)
          e = arith::SelectOp::create(nb, l, causalKeep(nb, l, rank), e,
                                      scalarConstant(nb, l, f32, 0.0));
        return arith::AddFOp::create(nb, l, acc, e);
      });
  return {max, sum};
}

/// softmax (exp(x - max) / sum) or log_softmax (x - max - log(sum)) of
/// `input` along `axis`, in f32, rounded once to `type`.
Value lowerSoftmaxLike(OpBuilder &b, Location loc, Value input,
                       RankedTensorType type, int64_t axis, bool causal,
                       bool logForm) {
  unsigned rank = type.getRank();
  auto [max, sum] = softmaxStats(b, loc, input, axis, causal);
  MLIRContext *ctx = b.getContext();
  return buildElementwise(
      b, loc, type,
      {{input, identityMap(ctx, rank)},
       reducedInput(ctx, max, rank, {axis}),
       reducedInput(ctx, sum, rank, {axis})},
      b.getF32Type(), [&](OpBuilder &nb, Location l, ValueRange in) -> Value {
        Value shifted = arith::SubFOp::create(nb, l, in[0], in[1]);
        if (logForm)
          return arith::SubFOp::create(nb, l, shifted,
                                       math::LogOp::create(nb, l, in[2]));
        Value p = arith::DivFOp::create(
            nb, l, math::ExpOp::create(nb, l, shifted), in[2]);
        if (!causal)
          return p;
        return arith::SelectOp::create(
            nb, l, causalKeep(nb, l, rank), p,
            scalarConstant(nb, l, nb.getF32Type(), 0.0));
      });
}

struct SoftmaxToLinalg : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, lowerSoftmaxLike(rewriter, op.getLoc(), op.getInput(), op.getType(),
                             op.getAxis(), op.getCausal(), /*logForm=*/false));
    return success();
  }
};

struct LogSoftmaxToLinalg : OpRewritePattern<LogSoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LogSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       lowerSoftmaxLike(rewriter, op.getLoc(), op.getInput(),
                                        op.getType(), op.getAxis(),
                                        /*causal=*/false, /*logForm=*/true));
    return success();
  }
};

/// softmax_grad: y (dy - sum(dy y)); log_softmax_grad: dy - exp(y) sum(dy).
template <typename OpT, bool LogForm>
struct SoftmaxGradToLinalg : OpRewritePattern<OpT> {
  using OpRewritePattern<OpT>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    unsigned rank = type.getRank();
    int64_t axis = op.getAxis();
    GenericInput dy = {op.getGrad(), identityMap(ctx, rank)};
    GenericInput y = {op.getOutput(), identityMap(ctx, rank)};
    Type f32 = rewriter.getF32Type();
    Value sum = buildReduction(
        rewriter, loc, type.getShape(), {axis}, {dy, y}, f32, 0.0,
        [](OpBuilder &b, Location l, Value acc, ValueRange in) {
          Value term =
              LogForm ? in[0] : arith::MulFOp::create(b, l, in[0], in[1]);
          return arith::AddFOp::create(b, l, acc, term);
        });
    Value result = buildElementwise(
        rewriter, loc, type, {dy, y, reducedInput(ctx, sum, rank, {axis})}, f32,
        [](OpBuilder &b, Location l, ValueRange in) -> Value {
          if (LogForm)
            return arith::SubFOp::create(
                b, l, in[0],
                arith::MulFOp::create(b, l, math::ExpOp::create(b, l, in[1]),
                                      in[2]));
          return arith::MulFOp::create(
              b, l, in[1], arith::SubFOp::create(b, l, in[0], in[2]));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Whether an i32 `label` names one of `classes` columns.
static Value isClass(OpBuilder &b, Location l, Value label, int64_t classes) {
  auto c = [&](int64_t v) {
    return arith::ConstantOp::create(b, l,
                                     b.getIntegerAttr(label.getType(), v));
  };
  return arith::AndIOp::create(
      b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, label, c(0)),
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, label,
                            c(classes)));
}

/// A cross-entropy row's f32 `value` (its loss term or gradient) as the
/// row's label decides: itself for a class (`valid`), 0 for the ignored
/// label, NaN for any other.
static Value byLabel(OpBuilder &b, Location l, Value value, Value label,
                     Value valid, std::optional<int64_t> ignore) {
  Type f32 = value.getType();
  Value out = arith::SelectOp::create(
      b, l, valid, value,
      scalarConstant(b, l, f32, std::numeric_limits<double>::quiet_NaN()));
  if (!ignore)
    return out;
  Value ignored = arith::CmpIOp::create(
      b, l, arith::CmpIPredicate::eq, label,
      arith::ConstantOp::create(b, l,
                                b.getIntegerAttr(label.getType(), *ignore)));
  return arith::SelectOp::create(b, l, ignored, scalarConstant(b, l, f32, 0.0),
                                 out);
}

/// The number of `labels` (rank 1, i32) other than `ignore`, as a rank-0 f32
/// tensor.
static Value countUnignored(OpBuilder &b, Location loc, Value labels,
                            int64_t ignore) {
  auto type = cast<RankedTensorType>(labels.getType());
  return buildReduction(
      b, loc, type.getShape(), {0},
      {{labels, identityMap(b.getContext(), 1)}}, b.getF32Type(), 0.0,
      [&](OpBuilder &b, Location l, Value acc, ValueRange in) {
        Value kept = arith::CmpIOp::create(
            b, l, arith::CmpIPredicate::ne, in[0],
            arith::ConstantOp::create(
                b, l, b.getIntegerAttr(in[0].getType(), ignore)));
        return arith::AddFOp::create(
            b, l, acc,
            arith::SelectOp::create(b, l, kept,
                                    scalarConstant(b, l, acc.getType(), 1.0),
                                    scalarConstant(b, l, acc.getType(), 0.0)));
      });
}

struct CrossEntropyGradToLinalg : OpRewritePattern<CrossEntropyGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t batch = type.getDimSize(0), classes = type.getDimSize(1);
    auto [max, sum] = softmaxStats(rewriter, loc, op.getLogits(), 1, false);
    Type f32 = rewriter.getF32Type();
    AffineMap id = identityMap(ctx, 2);
    AffineMap row = reducedInput(ctx, max, 2, {1}).map;
    AffineMap none = AffineMap::get(2, 0, {}, ctx);
    // grad * (softmax - onehot(label)) / N; NaN in rows with a bad label;
    // 0 in ignored rows, N then counting the others.
    std::optional<int64_t> ignore = op.getIgnoreIndex();
    double smoothing = op.getLabelSmoothing().convertToDouble();
    Value count = ignore ? countUnignored(rewriter, loc, op.getLabels(), *ignore)
                         : Value();
    SmallVector<GenericInput> inputs = {{op.getLogits(), id},
                                        {max, row},
                                        {sum, row},
                                        {op.getLabels(), row},
                                        {op.getGrad(), none}};
    if (count)
      inputs.push_back({count, none});
    Value result = buildElementwise(
        rewriter, loc, type, inputs,
        f32, [&](OpBuilder &b, Location l, ValueRange in) {
          Value p = arith::DivFOp::create(
              b, l,
              math::ExpOp::create(b, l,
                                  arith::SubFOp::create(b, l, in[0], in[1])),
              in[2]);
          Value label = in[3];
          Type i32 = label.getType();
          Value column = arith::IndexCastOp::create(
              b, l, i32, linalg::IndexOp::create(b, l, 1));
          Value hot = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            column, label);
          // (1 - e) * onehot + e / C: label smoothing's target.
          Value target = arith::SelectOp::create(
              b, l, hot, scalarConstant(b, l, f32, 1.0 - smoothing + smoothing / classes),
              scalarConstant(b, l, f32, smoothing / classes));
          Value rows = count ? in[5] : scalarConstant(b, l, f32, double(batch));
          Value g = arith::MulFOp::create(
              b, l, arith::SubFOp::create(b, l, p, target),
              arith::DivFOp::create(b, l, in[4], rows));
          return byLabel(b, l, g, label, isClass(b, l, label, classes),
                         ignore);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Sums a per-channel tensor of statistics over the ranks of a SyncBatchNorm
/// (null: one rank, nothing to sum).
using AcrossRanks = std::function<Value(Value)>;

/// Sum and sum of squared deviations over `dims` of `input` (two passes),
/// accumulated in `accType`. With `across`, over the shards of every rank
/// (`count` values in all): the deviations are from the global mean, and
/// each sum is summed across the ranks.
std::pair<Value, Value> sumAndDeviation(OpBuilder &b, Location loc, Value input,
                                        ArrayRef<int64_t> dims, int64_t count,
                                        FloatType accType,
                                        const AcrossRanks &across = nullptr) {
  auto type = cast<RankedTensorType>(input.getType());
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  GenericInput x = {input, identityMap(ctx, rank)};
  Value sum =
      buildReduction(b, loc, type.getShape(), dims, {x}, accType, 0.0,
                     [](OpBuilder &nb, Location l, Value acc, ValueRange in) {
                       return arith::AddFOp::create(nb, l, acc, in[0]);
                     });
  if (across)
    sum = across(sum);
  Value dev = buildReduction(
      b, loc, type.getShape(), dims, {x, reducedInput(ctx, sum, rank, dims)},
      accType, 0.0, [&](OpBuilder &nb, Location l, Value acc, ValueRange in) {
        Value mean = arith::DivFOp::create(
            nb, l, in[1], scalarConstant(nb, l, accType, double(count)));
        Value d = arith::SubFOp::create(nb, l, in[0], mean);
        return arith::AddFOp::create(nb, l, acc,
                                     arith::MulFOp::create(nb, l, d, d));
      });
  if (across)
    dev = across(dev);
  return {sum, dev};
}

/// (x - sum/n) / sqrt(dev/n + eps) * scale + bias, all in f32.
Value normalize(OpBuilder &b, Location loc, ValueRange in, double count,
                double epsilon) {
  Type f32 = b.getF32Type();
  Value n = scalarConstant(b, loc, f32, count);
  Value mean = arith::DivFOp::create(b, loc, in[1], n);
  Value var = arith::DivFOp::create(b, loc, in[2], n);
  Value inv = invSqrt(
      b, loc,
      arith::AddFOp::create(b, loc, var, scalarConstant(b, loc, f32, epsilon)));
  Value xhat = arith::MulFOp::create(
      b, loc, arith::SubFOp::create(b, loc, in[0], mean), inv);
  return arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, xhat, in[3]), in[4]);
}

/// A normalization's lowering, with the accumulator type of its statistics
/// and the runtime function that sums them across ranks (SyncBatchNorm).
template <typename Op> struct NormPattern : OpRewritePattern<Op> {
  NormPattern(MLIRContext *ctx, FloatType statistics, StringRef allReduce)
      : OpRewritePattern<Op>(ctx), statistics(statistics),
        allReduce(allReduce.str()) {}
  FloatType statistics;
  std::string allReduce;

  /// Fails on a batch norm over several ranks that this lowering has no
  /// collective for (amp-convert-train-to-linalg reports it first).
  LogicalResult checkRanks(Op op, PatternRewriter &rewriter) const {
    if (op.getRanks() == 1 || !allReduce.empty())
      return success();
    return rewriter.notifyMatchFailure(op, "no all-reduce-callee");
  }

  /// The per-channel sums' reduction across `op`'s ranks: a runtime
  /// all-reduce of each (a [C] tensor in the statistics' type), or null for
  /// one rank.
  std::function<Value(Value)> across(OpBuilder &b, Op op) const {
    if (op.getRanks() == 1)
      return nullptr;
    Operation *anchor = op.getOperation();
    int64_t ranks = op.getRanks();
    std::string callee = allReduce;
    return [&b, anchor, ranks, callee](Value sums) -> Value {
      auto type = cast<RankedTensorType>(sums.getType());
      int64_t dtype = int64_t(type.getElementType().isF64()
                                  ? RuntimeDType::F64
                                  : RuntimeDType::F32);
      return createAllReduceCall(b, anchor, callee, sums, dtype,
                                 int64_t(CollectiveOp::Sum), ranks);
    };
  }
};

struct LayerNormToLinalg : NormPattern<LayerNormOp> {
  using NormPattern::NormPattern;
  LogicalResult matchAndRewrite(LayerNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    unsigned rank = type.getRank();
    int64_t normRank = op.getScale().getType().getRank();
    SmallVector<int64_t> dims = dimRange(rank - normRank, rank);
    int64_t count = countOf(type.getShape(), dims);
    auto [sum, dev] =
        sumAndDeviation(rewriter, loc, op.getInput(), dims, count, statistics);
    MLIRContext *ctx = op.getContext();
    double eps = op.getEpsilon().convertToDouble();
    Value result = buildElementwise(
        rewriter, loc, type,
        {{op.getInput(), identityMap(ctx, rank)},
         reducedInput(ctx, sum, rank, dims),
         reducedInput(ctx, dev, rank, dims),
         broadcastInput(rewriter, loc, op.getScale(), type.getShape()),
         broadcastInput(rewriter, loc, op.getBias(), type.getShape())},
        rewriter.getF32Type(), [&](OpBuilder &b, Location l, ValueRange in) {
          return normalize(b, l, in, double(count), eps);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct BatchNormToLinalg : NormPattern<BatchNormOp> {
  using NormPattern::NormPattern;
  LogicalResult matchAndRewrite(BatchNormOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getOutput().getType());
    auto statType = cast<RankedTensorType>(op.getRunningMean().getType());
    unsigned rank = type.getRank();
    SmallVector<int64_t> dims = {0};
    llvm::append_range(dims, dimRange(2, rank));
    if (failed(checkRanks(op, rewriter)))
      return failure();
    // The values per channel, over every rank's shard.
    int64_t count = countOf(type.getShape(), dims) * op.getRanks();
    std::function<Value(Value)> sync = across(rewriter, op);
    auto [sum, dev] = sumAndDeviation(rewriter, loc, op.getInput(), dims,
                                      count, statistics, sync);
    double eps = op.getEpsilon().convertToDouble();
    auto perChannel = [&](Value v) { return reducedInput(ctx, v, rank, dims); };
    Value output = buildElementwise(
        rewriter, loc, type,
        {{op.getInput(), identityMap(ctx, rank)},
         perChannel(sum),
         perChannel(dev),
         perChannel(op.getScale()),
         perChannel(op.getBias())},
        rewriter.getF32Type(), [&](OpBuilder &b, Location l, ValueRange in) {
          return normalize(b, l, in, double(count), eps);
        });
    if (!op.getTrackRunningStats()) { // nothing tracked: returned unchanged
      rewriter.replaceOp(op, {output, op.getRunningMean(), op.getRunningVar()});
      return success();
    }
    // Running statistics: (1 - m) * running + m * batch statistic, with the
    // unbiased variance (PyTorch).
    double m = op.getMomentum().convertToDouble();
    auto update = [&](Value running, Value stat, double divisor) {
      AffineMap id = identityMap(ctx, 1);
      return buildElementwise(
          rewriter, loc, statType, {{running, id}, {stat, id}},
          rewriter.getF32Type(), [&](OpBuilder &b, Location l, ValueRange in) {
            Type f32 = b.getF32Type();
            Value kept = arith::MulFOp::create(
                b, l, scalarConstant(b, l, f32, 1.0 - m), in[0]);
            Value fresh = arith::MulFOp::create(
                b, l, scalarConstant(b, l, f32, m),
                arith::DivFOp::create(b, l, in[1],
                                      scalarConstant(b, l, f32, divisor)));
            return arith::AddFOp::create(b, l, kept, fresh);
          });
    };
    Value newMean = update(op.getRunningMean(), sum, double(count));
    Value newVar = update(op.getRunningVar(), dev, double(count - 1));
    rewriter.replaceOp(op, {output, newMean, newVar});
    return success();
  }
};

Value scaleAndRound(OpBuilder &b, Location loc, Value acc,
                    RankedTensorType accShapeType, double divisor);

/// Gradients of a normalization with statistics over `statDims` of `x` (count
/// elements each) and a scale read through `scaleMap` whose shape spans the
/// dimensions that `paramDims` (the complement) leave: dx, dscale, dbias.
/// With xhat = (x - mean) * rstd and dyg = dy * scale:
///   dx = rstd * (dyg - mean(dyg) - xhat * mean(dyg * xhat))   (over statDims)
///   dscale = sum(dy * xhat), dbias = sum(dy)                  (over paramDims)
/// With `across` (batch norm over `ranks` ranks), the statistics and the
/// means in dx are over every rank's shard; dscale and dbias stay this
/// rank's sums.
SmallVector<Value> normGrads(OpBuilder &b, Location loc, Value dy, Value x,
                             Value scale, ArrayRef<int64_t> statDims,
                             ArrayRef<int64_t> paramDims, double epsilon,
                             FloatType accType, int64_t ranks = 1,
                             const AcrossRanks &across = nullptr) {
  // Across ranks only batch norm's form (below) sums what dx needs.
  assert((!across || statDims == paramDims) && "only batch norm spans ranks");
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(x.getType());
  auto scaleType = cast<RankedTensorType>(scale.getType());
  unsigned rank = type.getRank();
  int64_t count = countOf(type.getShape(), statDims) * ranks;
  Type f32 = b.getF32Type();
  auto [sum, dev] =
      sumAndDeviation(b, loc, x, statDims, count, accType, across);
  AffineMap id = identityMap(ctx, rank);
  GenericInput sumIn = reducedInput(ctx, sum, rank, statDims);
  GenericInput devIn = reducedInput(ctx, dev, rank, statDims);
  GenericInput scaleIn = reducedInput(ctx, scale, rank, paramDims);
  // xhat from (x, sum, dev), in their type (the accumulator's in the
  // reductions, f32 in dx).
  auto xhat = [&](OpBuilder &nb, Location l, Value xv, Value s, Value d) {
    Type t = xv.getType();
    Value n = scalarConstant(nb, l, t, double(count));
    Value mean = arith::DivFOp::create(nb, l, s, n);
    Value var = arith::DivFOp::create(nb, l, d, n);
    Value rstd = invSqrt(
        nb, l,
        arith::AddFOp::create(nb, l, var, scalarConstant(nb, l, t, epsilon)));
    return std::make_pair(
        arith::MulFOp::create(nb, l, arith::SubFOp::create(nb, l, xv, mean),
                              rstd)
            .getResult(),
        rstd);
  };
  SmallVector<GenericInput> all = {{dy, id}, {x, id}, sumIn, devIn, scaleIn};
  auto round = [&](Value v) {
    return scaleAndRound(b, loc, v, scaleType, 1.0);
  };
  if (statDims == paramDims) {
    // Batch norm: the scale is constant over the statistics dimensions, so
    // sum(dyg) = scale * dbias and sum(dyg * xhat) = scale * dscale. One pass
    // computes both parameter gradients, one more dx:
    //   dx = rstd * scale * (dy - dbias / n - xhat * dscale / n).
    SmallVector<Value> sums = buildReductions(
        b, loc, type.getShape(), paramDims, all, accType, 2, 0.0,
        [&](OpBuilder &nb, Location l, ValueRange acc, ValueRange in) {
          Value xh = xhat(nb, l, in[1], in[2], in[3]).first;
          return SmallVector<Value>{
              arith::AddFOp::create(nb, l, acc[0],
                                    arith::MulFOp::create(nb, l, in[0], xh)),
              arith::AddFOp::create(nb, l, acc[1], in[0])};
        });
    SmallVector<GenericInput> withSums = all;
    withSums.push_back(
        reducedInput(ctx, across ? across(sums[0]) : sums[0], rank, statDims));
    withSums.push_back(
        reducedInput(ctx, across ? across(sums[1]) : sums[1], rank, statDims));
    Value dx = buildElementwise(
        b, loc, type, withSums, f32,
        [&](OpBuilder &nb, Location l, ValueRange in) {
          auto [xh, rstd] = xhat(nb, l, in[1], in[2], in[3]);
          Value n = scalarConstant(nb, l, f32, double(count));
          Value t = arith::SubFOp::create(
              nb, l,
              arith::SubFOp::create(nb, l, in[0],
                                    arith::DivFOp::create(nb, l, in[6], n)),
              arith::MulFOp::create(nb, l, xh,
                                    arith::DivFOp::create(nb, l, in[5], n)));
          return arith::MulFOp::create(
              nb, l, arith::MulFOp::create(nb, l, rstd, in[4]), t);
        });
    return {dx, round(sums[0]), round(sums[1])};
  }
  // mean(dyg) and mean(dyg * xhat) over the statistics dimensions (as sums).
  Value sumDyg = buildReduction(
      b, loc, type.getShape(), statDims, all, accType, 0.0,
      [&](OpBuilder &nb, Location l, Value acc, ValueRange in) {
        return arith::AddFOp::create(
            nb, l, acc, arith::MulFOp::create(nb, l, in[0], in[4]));
      });
  Value sumDygXhat =
      buildReduction(b, loc, type.getShape(), statDims, all, accType, 0.0,
                     [&](OpBuilder &nb, Location l, Value acc, ValueRange in) {
                       Value dyg = arith::MulFOp::create(nb, l, in[0], in[4]);
                       Value xh = xhat(nb, l, in[1], in[2], in[3]).first;
                       return arith::AddFOp::create(
                           nb, l, acc, arith::MulFOp::create(nb, l, dyg, xh));
                     });
  SmallVector<GenericInput> withSums = all;
  withSums.push_back(reducedInput(ctx, sumDyg, rank, statDims));
  withSums.push_back(reducedInput(ctx, sumDygXhat, rank, statDims));
  Value dx = buildElementwise(
      b, loc, type, withSums, f32,
      [&](OpBuilder &nb, Location l, ValueRange in) {
        auto [xh, rstd] = xhat(nb, l, in[1], in[2], in[3]);
        Value n = scalarConstant(nb, l, f32, double(count));
        Value dyg = arith::MulFOp::create(nb, l, in[0], in[4]);
        Value t = arith::SubFOp::create(
            nb, l,
            arith::SubFOp::create(nb, l, dyg,
                                  arith::DivFOp::create(nb, l, in[5], n)),
            arith::MulFOp::create(nb, l, xh,
                                  arith::DivFOp::create(nb, l, in[6], n)));
        return arith::MulFOp::create(nb, l, rstd, t);
      });
  // Parameter gradients, summed over the dimensions the scale does not span.
  Value dscale =
      buildReduction(b, loc, type.getShape(), paramDims, all, accType, 0.0,
                     [&](OpBuilder &nb, Location l, Value acc, ValueRange in) {
                       Value xh = xhat(nb, l, in[1], in[2], in[3]).first;
                       return arith::AddFOp::create(
                           nb, l, acc, arith::MulFOp::create(nb, l, in[0], xh));
                     });
  Value dbias =
      buildReduction(b, loc, type.getShape(), paramDims, {{dy, id}}, accType,
                     0.0,
                     [](OpBuilder &nb, Location l, Value acc, ValueRange in) {
                       return arith::AddFOp::create(nb, l, acc, in[0]);
                     });
  return {dx, round(dscale), round(dbias)};
}

//===----------------------------------------------------------------------===//
// Reductions and losses
//===----------------------------------------------------------------------===//

/// Divides a rank-any f32 tensor by `divisor` and rounds it to `type`'s
/// element type; `divisor` 1 just rounds.
Value scaleAndRound(OpBuilder &b, Location loc, Value acc,
                    RankedTensorType accShapeType, double divisor) {
  MLIRContext *ctx = b.getContext();
  return buildElementwise(
      b, loc, accShapeType, {{acc, identityMap(ctx, accShapeType.getRank())}},
      b.getF32Type(), [&](OpBuilder &nb, Location l, ValueRange in) {
        if (divisor == 1.0)
          return in[0];
        return arith::DivFOp::create(
                   nb, l, in[0], scalarConstant(nb, l, nb.getF32Type(), divisor))
            .getResult();
      });
}

template <typename OpTy, bool IsMean>
struct ReduceToLinalg : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<int64_t> dims(op.getAxes());
    llvm::sort(dims);
    Value sum = buildReduction(
        rewriter, loc, inType.getShape(), dims,
        {{op.getInput(), identityMap(op.getContext(), inType.getRank())}},
        rewriter.getF32Type(), 0.0,
        [](OpBuilder &b, Location l, Value acc, ValueRange in) {
          return arith::AddFOp::create(b, l, acc, in[0]);
        });
    auto sumType = cast<RankedTensorType>(sum.getType());
    double divisor = IsMean ? double(countOf(inType.getShape(), dims)) : 1.0;
    Value result = scaleAndRound(
        rewriter, loc, sum,
        RankedTensorType::get(sumType.getShape(), type.getElementType()),
        divisor);
    rewriter.replaceOp(op,
                       reshapeTensor(rewriter, loc, result, type.getShape()));
    return success();
  }
};

struct LayerNormGradToLinalg : NormPattern<LayerNormGradOp> {
  using NormPattern::NormPattern;
  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    int64_t rank = type.getRank();
    int64_t normRank =
        cast<RankedTensorType>(op.getScale().getType()).getRank();
    rewriter.replaceOp(op, normGrads(rewriter, op.getLoc(), op.getGrad(),
                                     op.getInput(), op.getScale(),
                                     dimRange(rank - normRank, rank),
                                     dimRange(0, rank - normRank),
                                     op.getEpsilon().convertToDouble(),
                                     statistics));
    return success();
  }
};

struct BatchNormGradToLinalg : NormPattern<BatchNormGradOp> {
  using NormPattern::NormPattern;
  LogicalResult matchAndRewrite(BatchNormGradOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getInput().getType());
    SmallVector<int64_t> dims = {0};
    llvm::append_range(dims, dimRange(2, type.getRank()));
    if (failed(checkRanks(op, rewriter)))
      return failure();
    std::function<Value(Value)> sync = across(rewriter, op);
    rewriter.replaceOp(
        op, normGrads(rewriter, op.getLoc(), op.getGrad(), op.getInput(),
                      op.getScale(), dims, dims,
                      op.getEpsilon().convertToDouble(), statistics,
                      op.getRanks(), sync));
    return success();
  }
};

struct CrossEntropyToLinalg : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value logits = op.getLogits();
    auto logitsType = cast<RankedTensorType>(logits.getType());
    int64_t batch = logitsType.getDimSize(0);
    int64_t classes = logitsType.getDimSize(1);
    auto [max, sum] = softmaxStats(rewriter, loc, logits, 1, false);
    Type f32 = rewriter.getF32Type();
    AffineMap id = identityMap(ctx, 1);
    // sum_n log(sum_n) + max_n - logits[n, labels[n]]; a label outside
    // [0, classes) makes the loss NaN instead of reading out of bounds; an
    // ignored label adds 0 and is not counted.
    std::optional<int64_t> ignore = op.getIgnoreIndex();
    // Label smoothing e: each row's loss is lse - (1 - e) logit[label]
    // - e mean_c(logit), with the row sums of the logits.
    double smoothing = op.getLabelSmoothing().convertToDouble();
    SmallVector<GenericInput> inputs = {
        {op.getLabels(), id}, {max, id}, {sum, id}};
    if (smoothing != 0.0)
      inputs.push_back(
          {buildReduction(rewriter, loc, {batch, classes}, {1},
                          {{logits, identityMap(ctx, 2)}}, f32, 0.0,
                          [](OpBuilder &b, Location l, Value acc,
                             ValueRange in) -> Value {
                            return arith::AddFOp::create(b, l, acc, in[0]);
                          }),
           id});
    Value total = buildReduction(
        rewriter, loc, {batch}, {0}, inputs, f32, 0.0,
        [&](OpBuilder &b, Location l, Value acc, ValueRange in) {
          Value label = in[0];
          Type i32 = label.getType();
          auto c = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getIntegerAttr(i32, v));
          };
          Value valid = isClass(b, l, label, classes);
          Value safe = arith::SelectOp::create(b, l, valid, label, c(0));
          Value column =
              arith::IndexCastOp::create(b, l, b.getIndexType(), safe);
          Value row = linalg::IndexOp::create(b, l, 0);
          Value picked = convertFloat(
              b, l,
              tensor::ExtractOp::create(b, l, logits, ValueRange{row, column}),
              f32);
          Value lse = arith::AddFOp::create(
              b, l, math::LogOp::create(b, l, in[2]), in[1]);
          if (smoothing != 0.0)
            picked = arith::AddFOp::create(
                b, l,
                arith::MulFOp::create(
                    b, l, scalarConstant(b, l, f32, 1.0 - smoothing), picked),
                arith::MulFOp::create(
                    b, l, scalarConstant(b, l, f32, smoothing / classes),
                    in[3]));
          Value term = byLabel(b, l, arith::SubFOp::create(b, l, lse, picked),
                               label, valid, ignore);
          return arith::AddFOp::create(b, l, acc, term);
        });
    auto resultType = cast<RankedTensorType>(op.getType());
    Value result;
    if (ignore) {
      // The mean over the rows that count (0 / 0 = NaN when none does).
      Value count = countUnignored(rewriter, loc, op.getLabels(), *ignore);
      AffineMap scalar = AffineMap::get(0, 0, {}, ctx);
      result = buildElementwise(
          rewriter, loc, resultType, {{total, scalar}, {count, scalar}}, f32,
          [](OpBuilder &b, Location l, ValueRange in) -> Value {
            return arith::DivFOp::create(b, l, in[0], in[1]);
          });
    } else {
      result = scaleAndRound(rewriter, loc, total, resultType, double(batch));
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The per-element terms of the mean element-wise losses, in f32.
Value elementLoss(OpBuilder &b, Location l, MseLossOp, Value x, Value t) {
  Value d = arith::SubFOp::create(b, l, x, t);
  return arith::MulFOp::create(b, l, d, d);
}

Value elementLoss(OpBuilder &b, Location l, L1LossOp, Value x, Value t) {
  return math::AbsFOp::create(b, l, arith::SubFOp::create(b, l, x, t));
}

Value elementLoss(OpBuilder &b, Location l, SmoothL1LossOp op, Value x,
                  Value t) {
  // PyTorch's: d < beta ? 0.5 * d * d / beta : d - 0.5 * beta.
  Type f32 = x.getType();
  double beta = op.getBeta().convertToDouble();
  auto c = [&](double v) {
    return arith::ConstantOp::create(b, l, b.getFloatAttr(f32, v));
  };
  Value d = math::AbsFOp::create(b, l, arith::SubFOp::create(b, l, x, t));
  Value quadratic = arith::DivFOp::create(
      b, l, arith::MulFOp::create(b, l, arith::MulFOp::create(b, l, c(0.5), d), d),
      c(beta));
  Value linear = arith::SubFOp::create(b, l, d, c(0.5 * beta));
  Value inside =
      arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, d, c(beta));
  return arith::SelectOp::create(b, l, inside, quadratic, linear);
}

Value elementLoss(OpBuilder &b, Location l, BceWithLogitsLossOp, Value x,
                  Value t) {
  // PyTorch's (1 - t) * x - log_sigmoid(x), with
  // log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)).
  Type f32 = x.getType();
  auto c = [&](double v) {
    return arith::ConstantOp::create(b, l, b.getFloatAttr(f32, v));
  };
  Value logSigmoid = arith::SubFOp::create(
      b, l, arith::MinimumFOp::create(b, l, x, c(0.0)),
      math::Log1pOp::create(
          b, l,
          math::ExpOp::create(
              b, l, arith::NegFOp::create(b, l, math::AbsFOp::create(b, l, x)))));
  return arith::SubFOp::create(
      b, l,
      arith::MulFOp::create(b, l, arith::SubFOp::create(b, l, c(1.0), t), x),
      logSigmoid);
}

/// mean(elementLoss(input, target)), accumulated in f32.
template <typename Op>
struct MeanLossToLinalg : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    unsigned rank = inType.getRank();
    AffineMap id = identityMap(op.getContext(), rank);
    Value total = buildReduction(
        rewriter, loc, inType.getShape(), dimRange(0, rank),
        {{op.getInput(), id}, {op.getTarget(), id}}, rewriter.getF32Type(), 0.0,
        [&](OpBuilder &b, Location l, Value acc, ValueRange in) {
          return arith::AddFOp::create(b, l, acc,
                                       elementLoss(b, l, op, in[0], in[1]));
        });
    Value result = scaleAndRound(rewriter, loc, total,
                                 cast<RankedTensorType>(op.getType()),
                                 double(inType.getNumElements()));
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void amp::populateTrainReductionToLinalgPatterns(RewritePatternSet &patterns,
                                                 FloatType normStatistics,
                                                 StringRef allReduceCallee) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<LayerNormToLinalg, BatchNormToLinalg, LayerNormGradToLinalg,
               BatchNormGradToLinalg>(ctx, normStatistics, allReduceCallee);
  patterns.add<SoftmaxToLinalg, LogSoftmaxToLinalg,
               ReduceToLinalg<ReduceSumOp, false>,
               ReduceToLinalg<ReduceMeanOp, true>, CrossEntropyToLinalg,
               MeanLossToLinalg<MseLossOp>, MeanLossToLinalg<L1LossOp>,
               MeanLossToLinalg<SmoothL1LossOp>,
               MeanLossToLinalg<BceWithLogitsLossOp>,
               SoftmaxGradToLinalg<SoftmaxGradOp, false>,
               SoftmaxGradToLinalg<LogSoftmaxGradOp, true>,
               CrossEntropyGradToLinalg>(ctx);
}
