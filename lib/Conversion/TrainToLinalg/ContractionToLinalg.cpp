//===- ContractionToLinalg.cpp - GEMM-like and windowed train ops ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// matmul, batch_matmul and conv2d become linalg's named contractions with an
// f32 accumulator (f16/bf16 operands are widened exactly, as Tensor Cores
// do), rounded once to the result type; pooling becomes linalg's NCHW
// pooling ops. The backends map the named ops onto BLAS / cuBLASLt.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

/// A tensor of `shape` and `type` filled with `value`.
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type type, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, shape, type);
  return linalg::FillOp::create(b, loc, scalarConstant(b, loc, type, value),
                                empty)
      .getResult(0);
}

/// Pads the two spatial dimensions of an NCHW tensor by `padding` on both
/// sides with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value input,
                 ArrayRef<int64_t> padding, double value) {
  if (llvm::all_of(padding, [](int64_t p) { return p == 0; }))
    return input;
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[2] += 2 * padding[0];
  shape[3] += 2 * padding[1];
  SmallVector<OpFoldResult> low = {b.getIndexAttr(0), b.getIndexAttr(0),
                                   b.getIndexAttr(padding[0]),
                                   b.getIndexAttr(padding[1])};
  Value padValue = scalarConstant(b, loc, type.getElementType(), value);
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), input, low,
      low, padValue);
}

/// The accumulator a contraction starts from: zeros, or its bias (a
/// matmul's [N] broadcast over the rows, a convolution's [F] over batch and
/// positions) widened to the accumulator type (the bias is added before the
/// single rounding, like cuBLASLt's bias epilogue).
Value accumulatorInit(OpBuilder &b, Location loc, Operation *op,
                      ArrayRef<int64_t> shape, Type acc) {
  Value bias;
  GenericInput input;
  if (auto matmul = dyn_cast<MatmulOp>(op); matmul && matmul.getBias()) {
    bias = matmul.getBias();
    input = broadcastInput(b, loc, bias, shape);
  } else if (auto conv = dyn_cast<Conv2dOp>(op); conv && conv.getBias()) {
    bias = conv.getBias();
    input = {bias, AffineMap::get(4, 0, {getAffineDimExpr(1, b.getContext())},
                                  b.getContext())};
  }
  if (!bias)
    return filledTensor(b, loc, shape, acc, 0.0);
  return buildElementwise(
      b, loc, RankedTensorType::get(shape, acc), {input}, acc,
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

/// Sets the indexing maps of a (batch) matmul for the transpose flags.
/// Dimensions are (batch?, m, n, k).
template <typename ContractionOp>
void setContractionMaps(ContractionOp op, bool batched, bool transposeLhs,
                        bool transposeRhs) {
  MLIRContext *ctx = op.getContext();
  unsigned nb = batched ? 1 : 0;
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  AffineExpr m = d(nb), n = d(nb + 1), k = d(nb + 2);
  auto map = [&](AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> exprs;
    if (batched)
      exprs.push_back(d(0));
    exprs.push_back(r);
    exprs.push_back(c);
    return AffineMap::get(nb + 3, 0, exprs, ctx);
  };
  SmallVector<AffineMap> maps = {transposeLhs ? map(k, m) : map(m, k),
                                 transposeRhs ? map(n, k) : map(k, n),
                                 map(m, n)};
  Builder b(ctx);
  op.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
}

/// batch_matmul in its general form -> the rank-3 form (see the header).
struct BatchMatmulToRank3 : OpRewritePattern<BatchMatmulOp> {
  BatchMatmulToRank3(MLIRContext *ctx)
      : OpRewritePattern<BatchMatmulOp>(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (isRank3BatchMatmul(op))
      return failure();
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> batch = type.getShape().drop_back(2);
    int64_t count = 1;
    for (int64_t d : batch)
      count *= d;
    auto toRank3 = [&](Value operand) {
      auto t = cast<RankedTensorType>(operand.getType());
      ArrayRef<int64_t> matrix = t.getShape().take_back(2);
      SmallVector<int64_t> full(batch);
      full.append(matrix.begin(), matrix.end());
      if (t.getShape() != ArrayRef<int64_t>(full))
        operand = BroadcastOp::create(rewriter, loc, t.clone(full), operand);
      return ReshapeOp::create(
          rewriter, loc, t.clone({count, matrix[0], matrix[1]}), operand);
    };
    Value lhs = toRank3(op.getLhs()), rhs = toRank3(op.getRhs());
    auto product = BatchMatmulOp::create(
        rewriter, loc, lhs, rhs, op.getTransposeLhsAttr(),
        op.getTransposeRhsAttr(), op.getAccumulateAttr());
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, type, product);
    return success();
  }
};

template <typename OpTy, typename LinalgOpTy>
struct ContractionToLinalg : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if constexpr (std::is_same_v<OpTy, BatchMatmulOp>)
      if (!isRank3BatchMatmul(op))
        return rewriter.notifyMatchFailure(op, "not rank 3 (decomposed)");
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = op.getAccumulatorType();
    Value init = accumulatorInit(rewriter, loc, op, type.getShape(), acc);
    auto contraction = LinalgOpTy::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{op.getLhs(), op.getRhs()}, ValueRange{init});
    setContractionMaps(contraction, std::is_same_v<OpTy, BatchMatmulOp>,
                       op.getTransposeLhs(), op.getTransposeRhs());
    rewriter.replaceOp(op,
                       roundTo(rewriter, loc, contraction.getResult(0), type));
    return success();
  }
};

/// Index arithmetic helpers for the gathering gradient bodies.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t y) {
    return arith::MulIOp::create(b, loc, x, c(y));
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value index(unsigned d) { return linalg::IndexOp::create(b, loc, d); }

  /// For an input coordinate `in` and window offset `k`: whether some output
  /// position o has o * stride + k * dilation - pad == in, and that o
  /// (clamped into range when there is none).
  std::pair<Value, Value> outputOf(Value in, Value k, int64_t stride,
                                   int64_t dilation, int64_t pad,
                                   int64_t outSize) {
    Value numerator = sub(add(in, c(pad)), mul(k, dilation));
    Value nonNegative = cmp(arith::CmpIPredicate::sge, numerator, c(0));
    Value safe = arith::MaxSIOp::create(b, loc, numerator, c(0));
    Value divisible =
        cmp(arith::CmpIPredicate::eq,
            arith::RemSIOp::create(b, loc, safe, c(stride)), c(0));
    Value o = arith::DivSIOp::create(b, loc, safe, c(stride));
    Value inRange = cmp(arith::CmpIPredicate::slt, o, c(outSize));
    Value clamped = arith::MinSIOp::create(b, loc, o, c(outSize - 1));
    return {both(both(nonNegative, divisible), inRange), clamped};
  }
};

/// A generic summing a * b of its two inputs into `init`, products in `acc`.
Value multiplyAccumulate(OpBuilder &b, Location loc, ValueRange inputs,
                         Value init, ArrayRef<AffineMap> maps,
                         ArrayRef<utils::IteratorType> iterators, Type acc) {
  return linalg::GenericOp::create(
             b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value prod = arith::MulFOp::create(
                   nb, l, convertFloat(nb, l, args[0], acc),
                   convertFloat(nb, l, args[1], acc));
               linalg::YieldOp::create(
                   nb, l,
                   arith::AddFOp::create(nb, l, args[2], prod).getResult());
             })
      .getResult(0);
}

/// The body of conv2d_grad_input's gather (grouped or not): generic
/// dimensions `hDim`, `hDim + 1` are the input position (h, w), `kDim`,
/// `kDim + 1` the window offset (kh, kw); the filter element args[0] times
/// dy at `dyIndex(oh, ow)`, for the output position (oh, ow) whose window
/// reads (h, w) if there is one, is added to args[1].
void convGradInputGather(
    OpBuilder &b, Location l, ValueRange args, Value dy, Type acc,
    ArrayRef<int64_t> s, ArrayRef<int64_t> p, ArrayRef<int64_t> dil,
    unsigned hDim, unsigned kDim,
    llvm::function_ref<SmallVector<Value>(IndexMath &, Value, Value)>
        dyIndex) {
  auto dyType = cast<RankedTensorType>(dy.getType());
  int64_t rank = dyType.getRank();
  IndexMath m{b, l};
  auto [validH, oh] = m.outputOf(m.index(hDim), m.index(kDim), s[0], dil[0],
                                 p[0], dyType.getDimSize(rank - 2));
  auto [validW, ow] = m.outputOf(m.index(hDim + 1), m.index(kDim + 1), s[1],
                                 dil[1], p[1], dyType.getDimSize(rank - 1));
  Value g = tensor::ExtractOp::create(b, l, dy, dyIndex(m, oh, ow));
  Value prod = arith::MulFOp::create(b, l, convertFloat(b, l, g, acc),
                                     convertFloat(b, l, args[0], acc));
  Value contrib = arith::SelectOp::create(b, l, m.both(validH, validW), prod,
                                          scalarConstant(b, l, acc, 0.0));
  linalg::YieldOp::create(
      b, l, arith::AddFOp::create(b, l, args[1], contrib).getResult());
}

/// `value` with dimension `dim` split into (groups, size / groups).
Value splitGroups(OpBuilder &b, Location loc, Value value, unsigned dim,
                  int64_t groups) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<int64_t> shape;
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0, j = 0; i < type.getRank(); ++i) {
    if (i == dim) {
      shape.append({groups, type.getDimSize(i) / groups});
      reassociation.push_back({j, j + 1});
      j += 2;
      continue;
    }
    shape.push_back(type.getDimSize(i));
    reassociation.push_back({j++});
  }
  return tensor::ExpandShapeOp::create(b, loc, type.clone(shape), value,
                                       reassociation);
}

/// `value` with dimensions `dim` and `dim + 1` merged (splitGroups undone).
Value mergeGroups(OpBuilder &b, Location loc, Value value, unsigned dim) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<ReassociationIndices> reassociation;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (i == dim) {
      reassociation.push_back({i, i + 1});
      ++i;
      continue;
    }
    reassociation.push_back({i});
  }
  return tensor::CollapseShapeOp::create(b, loc, value, reassociation);
}

/// The grouped (and depthwise) convolution and its gradients as affine
/// generics over the group-split operands: input [N, G, C/G, H, W], filter
/// [G, F/G, C/G, KH, KW], output [N, G, F/G, OH, OW], reshaped from and back
/// to NCHW / FCHW without moving data.
struct GroupedConv {
  PatternRewriter &b;
  Location loc;
  MLIRContext *ctx;
  int64_t groups;
  ArrayRef<int64_t> s, p, dil;
  Type acc;

  AffineExpr d(unsigned i) { return getAffineDimExpr(i, ctx); }
  AffineMap map(ArrayRef<AffineExpr> exprs) {
    return AffineMap::get(8, 0, exprs, ctx);
  }
  /// 5 parallel dimensions, then 3 summed.
  SmallVector<utils::IteratorType> iterators() {
    SmallVector<utils::IteratorType> it(5, utils::IteratorType::parallel);
    it.append(3, utils::IteratorType::reduction);
    return it;
  }
  /// acc += a * b over two inputs read through `maps`.
  Value contract(ValueRange inputs, Value init, ArrayRef<AffineMap> maps) {
    return multiplyAccumulate(b, loc, inputs, init, maps, iterators(), acc);
  }

  /// y[n, g, fg, oh, ow] = bias + sum over (cg, kh, kw) of
  /// x[n, g, cg, oh*s + kh*d, ow*s + kw*d] * w[g, fg, cg, kh, kw].
  Value forward(Conv2dOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    Value x = splitGroups(b, loc, padSpatial(b, loc, op.getInput(), p, 0.0), 1,
                          groups);
    Value w = splitGroups(b, loc, op.getFilter(), 0, groups);
    SmallVector<int64_t> out = {type.getDimSize(0), groups,
                                type.getDimSize(1) / groups,
                                type.getDimSize(2), type.getDimSize(3)};
    Value init = filledTensor(b, loc, out, acc, 0.0);
    if (Value bias = op.getBias())
      init = buildElementwise(
          b, loc, RankedTensorType::get(out, acc),
          {{splitGroups(b, loc, bias, 0, groups),
            AffineMap::get(5, 0, {d(1), d(2)}, ctx)}},
          acc, [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    // (n, g, fg, oh, ow | cg, kh, kw)
    Value y = contract(
        {x, w}, init,
        {map({d(0), d(1), d(5), d(3) * s[0] + d(6) * dil[0],
              d(4) * s[1] + d(7) * dil[1]}),
         map({d(1), d(2), d(5), d(6), d(7)}),
         map({d(0), d(1), d(2), d(3), d(4)})});
    return roundTo(b, loc, mergeGroups(b, loc, y, 1), type);
  }

  /// dw[g, fg, cg, kh, kw] = sum over (n, oh, ow) of dy[n, g, fg, oh, ow] *
  /// x[n, g, cg, oh*s + kh*d, ow*s + kw*d].
  Value gradFilter(Conv2dGradFilterOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    Value dy = splitGroups(b, loc, op.getGrad(), 1, groups);
    Value x = splitGroups(b, loc, padSpatial(b, loc, op.getInput(), p, 0.0), 1,
                          groups);
    SmallVector<int64_t> out = {groups, type.getDimSize(0) / groups,
                                type.getDimSize(1), type.getDimSize(2),
                                type.getDimSize(3)};
    // (g, fg, cg, kh, kw | n, oh, ow)
    Value dw = contract(
        {dy, x}, filledTensor(b, loc, out, acc, 0.0),
        {map({d(5), d(0), d(1), d(6), d(7)}),
         map({d(5), d(0), d(2), d(6) * s[0] + d(3) * dil[0],
              d(7) * s[1] + d(4) * dil[1]}),
         map({d(0), d(1), d(2), d(3), d(4)})});
    return roundTo(b, loc, mergeGroups(b, loc, dw, 0), type);
  }

  /// dx[n, g, cg, h, w] = sum over (fg, kh, kw) of dy[n, g, fg, oh, ow] *
  /// w[g, fg, cg, kh, kw] for the (oh, ow) whose window reads (h, w): a
  /// gather, as the ungrouped form.
  Value gradInput(Conv2dGradInputOp op) {
    auto type = cast<RankedTensorType>(op.getType());
    Value dy = splitGroups(b, loc, op.getGrad(), 1, groups);
    Value w = splitGroups(b, loc, op.getFilter(), 0, groups);
    SmallVector<int64_t> out = {type.getDimSize(0), groups,
                                type.getDimSize(1) / groups,
                                type.getDimSize(2), type.getDimSize(3)};
    Value init = filledTensor(b, loc, out, acc, 0.0);
    // (n, g, cg, h, w | fg, kh, kw)
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ValueRange{w}, ValueRange{init},
        {map({d(1), d(5), d(2), d(6), d(7)}),
         map({d(0), d(1), d(2), d(3), d(4)})},
        iterators(), [&](OpBuilder &nb, Location l, ValueRange args) {
          convGradInputGather(
              nb, l, args, dy, acc, s, p, dil, /*hDim=*/3, /*kDim=*/6,
              [](IndexMath &m, Value oh, Value ow) -> SmallVector<Value> {
                return {m.index(0), m.index(1), m.index(5), oh, ow};
              });
        });
    return roundTo(b, loc, mergeGroups(b, loc, generic.getResult(0), 1), type);
  }
};

struct Conv2dToLinalg : OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = op.getAccumulatorType();
    if (op.getGroups() != 1) {
      GroupedConv grouped{rewriter,         loc,           op.getContext(),
                          op.getGroups(),   op.getStrides(), op.getPadding(),
                          op.getDilation(), acc};
      rewriter.replaceOp(op, grouped.forward(op));
      return success();
    }
    Value input =
        padSpatial(rewriter, loc, op.getInput(), op.getPadding(), 0.0);
    Value init = accumulatorInit(rewriter, loc, op, type.getShape(), acc);
    SmallVector<NamedAttribute> attrs = {
        rewriter.getNamedAttr("strides",
                              rewriter.getI64TensorAttr(op.getStrides())),
        rewriter.getNamedAttr("dilations",
                              rewriter.getI64TensorAttr(op.getDilation()))};
    auto conv = linalg::Conv2DNchwFchwOp::create(
        rewriter, loc, TypeRange{init.getType()},
        ValueRange{input, op.getFilter()}, ValueRange{init}, attrs);
    rewriter.replaceOp(op, roundTo(rewriter, loc, conv.getResult(0), type));
    return success();
  }
};

template <typename OpTy, typename LinalgPoolOp, bool IsMax>
struct Pool2dToLinalg : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = getComputeType(type.getElementType());
    double identity = IsMax ? -std::numeric_limits<double>::infinity() : 0.0;
    // Padded positions never win a max and add zero to an average.
    Value input =
        padSpatial(rewriter, loc, op.getInput(), op.getPadding(), identity);
    ArrayRef<int64_t> kernel = op.getKernel();
    Value window = tensor::EmptyOp::create(rewriter, loc, kernel, acc);
    Value init = filledTensor(rewriter, loc, type.getShape(), acc, identity);
    SmallVector<NamedAttribute> attrs = {
        rewriter.getNamedAttr("strides",
                              rewriter.getI64TensorAttr(op.getStrides())),
        rewriter.getNamedAttr("dilations",
                              rewriter.getI64TensorAttr(op.getDilation()))};
    auto pool = LinalgPoolOp::create(rewriter, loc, TypeRange{init.getType()},
                                     ValueRange{input, window},
                                     ValueRange{init}, attrs);
    Value result = pool.getResult(0);
    if (!IsMax) {
      // count_include_pad: divide by the full window.
      double area = static_cast<double>(kernel[0] * kernel[1]);
      result = buildElementwise(
          rewriter, loc, RankedTensorType::get(type.getShape(), acc),
          {{result, identityMap(op.getContext(), type.getRank())}}, acc,
          [&](OpBuilder &b, Location l, ValueRange args) {
            return arith::DivFOp::create(b, l, args[0],
                                         scalarConstant(b, l, acc, area));
          });
    }
    rewriter.replaceOp(op, roundTo(rewriter, loc, result, type));
    return success();
  }
};

/// dx[n, c, h, w] = sum over f, kh, kw of dy[n, f, oh, ow] * w[f, c, kh, kw]
/// for the (oh, ow) whose window reads (h, w): a gather, no scatter.
struct Conv2dGradInputToLinalg : OpRewritePattern<Conv2dGradInputOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2dGradInputOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = op.getAccumulatorType();
    ArrayRef<int64_t> s = op.getStrides(), p = op.getPadding(),
                      dil = op.getDilation();
    if (op.getGroups() != 1) {
      GroupedConv grouped{rewriter, loc, ctx, op.getGroups(), s, p, dil, acc};
      rewriter.replaceOp(op, grouped.gradInput(op));
      return success();
    }
    Value init = filledTensor(rewriter, loc, type.getShape(), acc, 0.0);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    // (n, c, h, w | f, kh, kw)
    SmallVector<AffineMap> maps = {
        AffineMap::get(7, 0, {d(4), d(1), d(5), d(6)}, ctx),
        AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx)};
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    Value dy = op.getGrad();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{op.getFilter()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          convGradInputGather(
              b, l, args, dy, acc, s, p, dil, /*hDim=*/2, /*kDim=*/5,
              [](IndexMath &m, Value oh, Value ow) -> SmallVector<Value> {
                return {m.index(0), m.index(4), oh, ow};
              });
        });
    rewriter.replaceOp(op, roundTo(rewriter, loc, generic.getResult(0), type));
    return success();
  }
};

/// dw[f, c, kh, kw] = sum over n, oh, ow of dy[n, f, oh, ow] *
/// xpad[n, c, oh*s + kh*d, ow*s + kw*d]: an affine contraction.
struct Conv2dGradFilterToLinalg : OpRewritePattern<Conv2dGradFilterOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2dGradFilterOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = op.getAccumulatorType();
    ArrayRef<int64_t> s = op.getStrides(), dil = op.getDilation();
    if (op.getGroups() != 1) {
      GroupedConv grouped{rewriter,       loc, ctx,
                          op.getGroups(), s,   op.getPadding(),
                          dil,            acc};
      rewriter.replaceOp(op, grouped.gradFilter(op));
      return success();
    }
    Value x = padSpatial(rewriter, loc, op.getInput(), op.getPadding(), 0.0);
    Value init = filledTensor(rewriter, loc, type.getShape(), acc, 0.0);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    // (f, c, kh, kw | n, oh, ow)
    SmallVector<AffineMap> maps = {
        AffineMap::get(7, 0, {d(4), d(0), d(5), d(6)}, ctx),
        AffineMap::get(7, 0,
                       {d(4), d(1), d(5) * s[0] + d(2) * dil[0],
                        d(6) * s[1] + d(3) * dil[1]},
                       ctx),
        AffineMap::get(7, 0, {d(0), d(1), d(2), d(3)}, ctx)};
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    iterators.append(3, utils::IteratorType::reduction);
    Value dw = multiplyAccumulate(rewriter, loc, ValueRange{op.getGrad(), x},
                                  init, maps, iterators, acc);
    rewriter.replaceOp(op, roundTo(rewriter, loc, dw, type));
    return success();
  }
};

/// Pooling gradients as gathers: each input position sums the output
/// gradients of the windows it lies in (where it is the window's first
/// maximum, for max pooling).
struct Pool2dGradToLinalg : OpRewritePattern<Pool2dGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Pool2dGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    auto dyType = cast<RankedTensorType>(op.getGrad().getType());
    ArrayRef<int64_t> k = op.getKernel(), s = op.getStrides(),
                      p = op.getPadding(), dil = op.getDilation();
    Type f32 = rewriter.getF32Type();
    Type i64 = rewriter.getI64Type();
    int64_t paddedW = type.getDimSize(3) + 2 * p[1];
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    AffineMap out4 = AffineMap::get(6, 0, {d(0), d(1), d(2), d(3)}, ctx);
    AffineMap window = AffineMap::get(6, 0, {d(4), d(5)}, ctx);
    SmallVector<utils::IteratorType> iterators(4,
                                               utils::IteratorType::parallel);
    iterators.append(2, utils::IteratorType::reduction);
    Value windowTensor = tensor::EmptyOp::create(rewriter, loc, k, f32);

    // Max pooling: the flat padded position of each window's first maximum.
    Value argmax;
    if (op.getMax()) {
      Value x = padSpatial(rewriter, loc, op.getInput(), p,
                           -std::numeric_limits<double>::infinity());
      Value maxInit = filledTensor(rewriter, loc, dyType.getShape(), f32,
                                   -std::numeric_limits<double>::infinity());
      Value idxEmpty =
          tensor::EmptyOp::create(rewriter, loc, dyType.getShape(), i64);
      Value idxInit = linalg::FillOp::create(
                          rewriter, loc,
                          Value(arith::ConstantOp::create(
                              rewriter, loc, rewriter.getI64IntegerAttr(-1))),
                          idxEmpty)
                          .getResult(0);
      SmallVector<AffineMap> maps = {
          AffineMap::get(
              6, 0,
              {d(0), d(1), d(2) * s[0] + d(4) * dil[0],
               d(3) * s[1] + d(5) * dil[1]},
              ctx),
          window, out4, out4};
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{maxInit.getType(), idxInit.getType()},
          ValueRange{x, windowTensor}, ValueRange{maxInit, idxInit}, maps,
          iterators, [&](OpBuilder &b, Location l, ValueRange args) {
            IndexMath m{b, l};
            Value v = convertFloat(b, l, args[0], f32);
            Value row = m.add(m.mul(m.index(2), s[0]),
                              m.mul(m.index(4), dil[0]));
            Value col = m.add(m.mul(m.index(3), s[1]),
                              m.mul(m.index(5), dil[1]));
            Value pos = arith::IndexCastOp::create(
                b, l, i64, m.add(m.mul(row, paddedW), col));
            Value better = arith::CmpFOp::create(
                b, l, arith::CmpFPredicate::OGT, v, args[2]);
            linalg::YieldOp::create(
                b, l,
                ValueRange{
                    arith::SelectOp::create(b, l, better, v, args[2]),
                    arith::SelectOp::create(b, l, better, pos, args[3])});
          });
      argmax = generic.getResult(1);
    }

    Value dy = op.getGrad();
    double area = double(k[0] * k[1]);
    // Windows that tile the input exactly (stride = kernel, no padding, the
    // kernel dividing the size: 2x2 pooling of an even image): each input
    // position lies in exactly one window, so its gradient is element-wise,
    // read from the window's gradient at (h / kh, w / kw).
    if (k[0] == s[0] && k[1] == s[1] && p[0] == 0 && p[1] == 0 &&
        dil[0] == 1 && dil[1] == 1 &&
        type.getDimSize(2) == k[0] * dyType.getDimSize(2) &&
        type.getDimSize(3) == k[1] * dyType.getDimSize(3)) {
      AffineMap ident = AffineMap::getMultiDimIdentityMap(4, ctx);
      AffineMap windowOf = AffineMap::get(
          4, 0, {d(0), d(1), d(2).floorDiv(k[0]), d(3).floorDiv(k[1])}, ctx);
      SmallVector<Value> ins = {dy};
      SmallVector<AffineMap> maps = {windowOf};
      if (argmax) {
        ins.push_back(argmax);
        maps.push_back(windowOf);
      }
      maps.push_back(ident);
      Value empty =
          tensor::EmptyOp::create(rewriter, loc, type.getShape(), f32);
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{empty.getType()}, ins, ValueRange{empty},
          maps,
          SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
          [&](OpBuilder &b, Location l, ValueRange args) {
            IndexMath m{b, l};
            Value g = convertFloat(b, l, args[0], f32);
            if (!argmax) {
              linalg::YieldOp::create(
                  b, l,
                  arith::DivFOp::create(b, l, g, scalarConstant(b, l, f32, area))
                      .getResult());
              return;
            }
            Value mine = arith::IndexCastOp::create(
                b, l, i64, m.add(m.mul(m.index(2), paddedW), m.index(3)));
            Value won = m.cmp(arith::CmpIPredicate::eq, mine, args[1]);
            linalg::YieldOp::create(
                b, l,
                arith::SelectOp::create(b, l, won, g,
                                        scalarConstant(b, l, f32, 0.0))
                    .getResult());
          });
      rewriter.replaceOp(op,
                         roundTo(rewriter, loc, generic.getResult(0), type));
      return success();
    }

    Value init = filledTensor(rewriter, loc, type.getShape(), f32, 0.0);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{windowTensor},
        ValueRange{init}, {window, out4}, iterators,
        [&](OpBuilder &b, Location l, ValueRange args) {
          IndexMath m{b, l};
          Value h = m.index(2), w = m.index(3);
          auto [validH, oh] =
              m.outputOf(h, m.index(4), s[0], dil[0], p[0], dyType.getDimSize(2));
          auto [validW, ow] =
              m.outputOf(w, m.index(5), s[1], dil[1], p[1], dyType.getDimSize(3));
          Value valid = m.both(validH, validW);
          SmallVector<Value, 4> at = {m.index(0), m.index(1), oh, ow};
          Value g =
              convertFloat(b, l, tensor::ExtractOp::create(b, l, dy, at), f32);
          if (argmax) {
            Value mine = arith::IndexCastOp::create(
                b, l, i64,
                m.add(m.mul(m.add(h, m.c(p[0])), paddedW),
                      m.add(w, m.c(p[1]))));
            Value winner = tensor::ExtractOp::create(b, l, argmax, at);
            valid =
                m.both(valid, m.cmp(arith::CmpIPredicate::eq, mine, winner));
          } else {
            g = arith::DivFOp::create(b, l, g, scalarConstant(b, l, f32, area));
          }
          Value contrib = arith::SelectOp::create(
              b, l, valid, g, scalarConstant(b, l, f32, 0.0));
          linalg::YieldOp::create(
              b, l, arith::AddFOp::create(b, l, args[1], contrib).getResult());
        });
    rewriter.replaceOp(op, roundTo(rewriter, loc, generic.getResult(0), type));
    return success();
  }
};

} // namespace

bool amp::isRank3BatchMatmul(BatchMatmulOp op) {
  auto lhs = cast<RankedTensorType>(op.getLhs().getType());
  auto rhs = cast<RankedTensorType>(op.getRhs().getType());
  return lhs.getRank() == 3 && rhs.getRank() == 3 &&
         lhs.getDimSize(0) == rhs.getDimSize(0);
}

void amp::populateBatchMatmulToRank3Patterns(RewritePatternSet &patterns) {
  patterns.add<BatchMatmulToRank3>(patterns.getContext());
}

void amp::populateTrainContractionToLinalgPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<
      ContractionToLinalg<MatmulOp, linalg::MatmulOp>,
      ContractionToLinalg<BatchMatmulOp, linalg::BatchMatmulOp>, Conv2dToLinalg,
      Pool2dToLinalg<MaxPool2dOp, linalg::PoolingNchwMaxOp, true>,
      Pool2dToLinalg<AvgPool2dOp, linalg::PoolingNchwSumOp, false>,
      Conv2dGradInputToLinalg, Conv2dGradFilterToLinalg, Pool2dGradToLinalg,
      BatchMatmulToRank3>(
      ctx);
}
