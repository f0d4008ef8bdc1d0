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
  return linalg::FillOp::create(b, loc, floatConstant(b, loc, type, value),
                                empty)
      .getResult(0);
}

/// Rounds an accumulator tensor to `type`'s element type (or returns it).
Value roundTo(OpBuilder &b, Location loc, Value acc, RankedTensorType type) {
  if (acc.getType() == type)
    return acc;
  return buildElementwise(
      b, loc, type, {{acc, identityMap(b.getContext(), type.getRank())}},
      cast<RankedTensorType>(acc.getType()).getElementType(),
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
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
  Value padValue = floatConstant(b, loc, type.getElementType(), value);
  return tensor::PadOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), input, low,
      low, padValue);
}

/// The accumulator a contraction starts from: zeros, or a matmul's bias
/// broadcast over the rows and widened to the accumulator type (the bias is
/// added before the single rounding, like cuBLASLt's bias epilogue).
Value accumulatorInit(OpBuilder &b, Location loc, Operation *op,
                      ArrayRef<int64_t> shape, Type acc) {
  auto matmul = dyn_cast<MatmulOp>(op);
  if (!matmul || !matmul.getBias())
    return filledTensor(b, loc, shape, acc, 0.0);
  return buildElementwise(
      b, loc, RankedTensorType::get(shape, acc),
      {broadcastInput(b, loc, matmul.getBias(), shape)}, acc,
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

template <typename OpTy, typename LinalgOpTy>
struct ContractionToLinalg : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
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

struct Conv2dToLinalg : OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    Type acc = op.getAccumulatorType();
    Value input =
        padSpatial(rewriter, loc, op.getInput(), op.getPadding(), 0.0);
    Value init = filledTensor(rewriter, loc, type.getShape(), acc, 0.0);
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
        rewriter.getNamedAttr("dilations", rewriter.getI64TensorAttr({1, 1}))};
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
                                         floatConstant(b, l, acc, area));
          });
    }
    rewriter.replaceOp(op, roundTo(rewriter, loc, result, type));
    return success();
  }
};

} // namespace

void amp::populateTrainContractionToLinalgPatterns(
    RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ContractionToLinalg<MatmulOp, linalg::MatmulOp>,
               ContractionToLinalg<BatchMatmulOp, linalg::BatchMatmulOp>,
               Conv2dToLinalg,
               Pool2dToLinalg<MaxPool2dOp, linalg::PoolingNchwMaxOp, true>,
               Pool2dToLinalg<AvgPool2dOp, linalg::PoolingNchwSumOp, false>>(
      ctx);
}
