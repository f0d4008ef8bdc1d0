//===- ShapeToLinalg.cpp - Data-movement train ops to tensor/linalg -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

struct ConstantToArith : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getValue());
    return success();
  }
};

/// Without loss scaling the backward seed is the constant 1.
struct LossSeedToArith : OpRewritePattern<LossSeedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LossSeedOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, DenseElementsAttr::get(
                type, rewriter.getFloatAttr(type.getElementType(), 1.0)));
    return success();
  }
};

struct ReshapeToTensor : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshapeTensor(rewriter, op.getLoc(), op.getInput(),
                                         op.getType().getShape()));
    return success();
  }
};

struct TransposeToLinalg : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    Value init = tensor::EmptyOp::create(rewriter, op.getLoc(), type.getShape(),
                                         type.getElementType());
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       op.getInput(), init,
                                                       op.getPermutation())
                               .getResult());
    return success();
  }
};

struct ConcatToTensor : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t axis = op.getAxis();
    Value result = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                           type.getElementType());
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      auto inType = cast<RankedTensorType>(input.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes, strides;
      for (int64_t size : inType.getShape()) {
        sizes.push_back(rewriter.getIndexAttr(size));
        strides.push_back(rewriter.getIndexAttr(1));
      }
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
      offset += inType.getDimSize(axis);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct EmbeddingToLinalg : OpRewritePattern<EmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    unsigned rank = type.getRank();
    Value table = op.getTable();
    int64_t vocab = op.getTable().getType().getDimSize(0);
    // The indices are read at every position but the last (the row element).
    GenericInput indices =
        reducedInput(ctx, op.getIndices(), rank, {int64_t(rank - 1)});
    Value result = buildElementwise(
        rewriter, loc, type, {indices}, type.getElementType(),
        [&](OpBuilder &b, Location l, ValueRange in) {
          // Indices are clamped into [0, vocab) so no read leaves the table.
          Type i32 = in[0].getType();
          auto c = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getIntegerAttr(i32, v));
          };
          Value clamped = arith::MinSIOp::create(
              b, l, arith::MaxSIOp::create(b, l, in[0], c(0)), c(vocab - 1));
          Value row =
              arith::IndexCastOp::create(b, l, b.getIndexType(), clamped);
          Value col = linalg::IndexOp::create(b, l, rank - 1);
          return tensor::ExtractOp::create(b, l, table, ValueRange{row, col})
              .getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// dtable[v, d] = sum over positions p of (clamp(indices[p]) == v) * dy[p, d],
/// a gather over positions (no scatter, no atomics).
struct EmbeddingGradToLinalg : OpRewritePattern<EmbeddingGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto type = cast<RankedTensorType>(op.getType());
    int64_t vocab = type.getDimSize(0), dim = type.getDimSize(1);
    int64_t positions = op.getIndices().getType().getNumElements();
    Value dy = reshapeTensor(rewriter, loc, op.getGrad(), {positions, dim});
    Value ids = reshapeTensor(rewriter, loc, op.getIndices(), {positions});
    Type f32 = rewriter.getF32Type();
    Value result = buildReduction(
        rewriter, loc, {vocab, dim, positions}, {2},
        {{ids, AffineMap::get(3, 0, {getAffineDimExpr(2, ctx)}, ctx)},
         {dy, AffineMap::get(
                  3, 0, {getAffineDimExpr(2, ctx), getAffineDimExpr(1, ctx)},
                  ctx)}},
        f32, 0.0, [&](OpBuilder &b, Location l, Value acc, ValueRange in) {
          Type i32 = in[0].getType();
          auto c = [&](int64_t v) {
            return arith::ConstantOp::create(b, l, b.getIntegerAttr(i32, v));
          };
          Value clamped = arith::MinSIOp::create(
              b, l, arith::MaxSIOp::create(b, l, in[0], c(0)), c(vocab - 1));
          Value row = arith::IndexCastOp::create(
              b, l, i32, linalg::IndexOp::create(b, l, 0));
          Value hit = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                            clamped, row);
          return arith::AddFOp::create(
              b, l, acc,
              arith::SelectOp::create(b, l, hit, in[1],
                                      scalarConstant(b, l, f32, 0.0)));
        });
    result = buildElementwise(
        rewriter, loc, type, {{result, identityMap(ctx, 2)}}, f32,
        [](OpBuilder &, Location, ValueRange in) { return in[0]; });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SliceToTensor : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<int64_t> strides(type.getRank(), 1);
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, op.getInput(), ValueRange{}, ValueRange{}, ValueRange{},
        op.getOffsets(), type.getShape(), strides);
    return success();
  }
};

} // namespace

void amp::populateTrainShapeToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<ConstantToArith, LossSeedToArith, ReshapeToTensor,
               TransposeToLinalg, ConcatToTensor, EmbeddingToLinalg,
               EmbeddingGradToLinalg, SliceToTensor>(patterns.getContext());
}
