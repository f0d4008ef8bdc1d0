//===- FuseLinearCrossEntropy.cpp - A head and its loss as one op --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// cross_entropy(cast(reshape(matmul(x, W)))) as one
// train.linear_cross_entropy, whose lowering never holds the [N, V] logits
// whole. Anchored at the loss; each value between the product and the loss
// must have that one use, so a head whose logits are also a result (the
// model's output) is left alone. Autodiff applies it to the gradient
// function it builds, after dropping the model's outputs; amp-fuse-lm-head
// applies it to any function (for tests and amp-opt).
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace amp::train {
#define GEN_PASS_DEF_FUSELMHEADPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The dimensions of `shape` other than 1, in order.
SmallVector<int64_t> nonUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> dims;
  for (int64_t d : shape)
    if (d != 1)
      dims.push_back(d);
  return dims;
}

/// A head's weight as a rank-2 matrix: `value` (the product's right operand,
/// [..., K, V] with unit leading dimensions) traced back through reshapes
/// that add or drop unit dimensions, a rank-2 transpose and a cast, to a
/// value those are views or conversions of. Rebuilds it as `element` [K, V]
/// or [V, K] (`transposed` says which) from that value, so a tied
/// embedding's [V, K] table is read as it is stored.
Value headWeight(PatternRewriter &rewriter, Location loc, Value value,
                 Type element, bool &transposed) {
  Value base = value;
  bool converted = false, flipped = false;
  for (;;) {
    Operation *def = base.getDefiningOp();
    if (auto reshape = dyn_cast_or_null<ReshapeOp>(def)) {
      if (nonUnitDims(tensorType(reshape.getInput()).getShape()) !=
          nonUnitDims(tensorType(reshape.getResult()).getShape()))
        break;
      base = reshape.getInput();
    } else if (auto transpose = dyn_cast_or_null<TransposeOp>(def)) {
      if (tensorType(transpose.getInput()).getRank() != 2)
        break;
      flipped = !flipped;
      base = transpose.getInput();
    } else if (auto cast = dyn_cast_or_null<CastOp>(def); cast && !converted) {
      converted = true;
      base = cast.getInput();
    } else {
      break;
    }
  }
  // The operand's matrix as stored ([K, V], or [V, K] when `transposed`),
  // the other way round past a transpose.
  auto operand = tensorType(value);
  int64_t rank = operand.getRank();
  SmallVector<int64_t> shape = {operand.getDimSize(rank - 2),
                                operand.getDimSize(rank - 1)};
  if (flipped) {
    std::swap(shape[0], shape[1]);
    transposed = !transposed;
  }
  auto baseType = tensorType(base);
  // Unit dimensions dropped by the views may stand for [1, V] or [K, 1]:
  // where the base is not the matrix itself, reshape it (a view).
  if (baseType.getShape() != ArrayRef<int64_t>(shape))
    base = ReshapeOp::create(rewriter, loc, baseType.clone(shape), base);
  if (baseType.getElementType() != element)
    base = CastOp::create(rewriter, loc, tensorType(base).clone(element), base);
  return base;
}

struct FuseLinearCrossEntropy : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp loss,
                                PatternRewriter &rewriter) const override {
    auto logits = tensorType(loss.getLogits());
    if (!logits.getElementType().isF32())
      return rewriter.notifyMatchFailure(loss, "the loss is not in f32");
    int64_t vocab = logits.getDimSize(1);
    // Back through single-use reshapes that keep the vocabulary last and at
    // most one widening cast, to the product.
    Value v = loss.getLogits();
    SmallVector<Operation *> chain;
    bool widened = false;
    Operation *product = nullptr;
    for (;;) {
      if (!v.hasOneUse())
        return rewriter.notifyMatchFailure(loss, "the logits are read twice");
      auto type = tensorType(v);
      if (type.getShape().back() != vocab)
        return rewriter.notifyMatchFailure(loss, "a view moves the classes");
      Operation *def = v.getDefiningOp();
      if (isa_and_nonnull<MatmulOp, BatchMatmulOp>(def)) {
        product = def;
        break;
      }
      if (auto reshape = dyn_cast_or_null<ReshapeOp>(def)) {
        chain.push_back(def);
        v = reshape.getInput();
        continue;
      }
      if (auto cast = dyn_cast_or_null<CastOp>(def); cast && !widened) {
        auto from = tensorType(cast.getInput()).getElementType();
        if (!type.getElementType().isF32() || from.isF32())
          return rewriter.notifyMatchFailure(loss, "not a widening cast");
        widened = true;
        chain.push_back(def);
        v = cast.getInput();
        continue;
      }
      return rewriter.notifyMatchFailure(loss, "the logits are not a product");
    }
    Type element = tensorType(v).getElementType();
    if (element.isF32() == widened)
      return rewriter.notifyMatchFailure(
          loss, "a 16-bit product needs its one widening cast, f32 none");

    Value lhs, rhs;
    bool transposeLhs = false, transposeRhs = false;
    Type accumulator;
    if (auto matmul = dyn_cast<MatmulOp>(product)) {
      if (matmul.getBias())
        return rewriter.notifyMatchFailure(loss, "a head with a bias");
      lhs = matmul.getLhs();
      rhs = matmul.getRhs();
      transposeLhs = matmul.getTransposeLhs();
      transposeRhs = matmul.getTransposeRhs();
      accumulator = matmul.getAccumulatorType();
    } else {
      auto batched = cast<BatchMatmulOp>(product);
      lhs = batched.getLhs();
      rhs = batched.getRhs();
      transposeLhs = batched.getTransposeLhs();
      transposeRhs = batched.getTransposeRhs();
      accumulator = batched.getAccumulatorType();
      // A weight shared by every batch index: [1, ..., K, V], the batch
      // dims of the input are rows.
      auto rhsShape = tensorType(rhs).getShape();
      if (llvm::any_of(rhsShape.drop_back(2), [](int64_t d) { return d != 1; }))
        return rewriter.notifyMatchFailure(loss, "a weight per batch index");
      if (tensorType(lhs).getRank() < tensorType(rhs).getRank())
        return rewriter.notifyMatchFailure(loss, "the weight broadcasts rows");
    }
    if (transposeLhs)
      return rewriter.notifyMatchFailure(loss, "a transposed input");
    if (!accumulator.isF32())
      return rewriter.notifyMatchFailure(loss, "products summed in 16 bits");
    if (tensorType(lhs).getElementType() != element ||
        tensorType(rhs).getElementType() != element)
      return rewriter.notifyMatchFailure(loss, "mixed operand types");

    Location loc = product->getLoc();
    rewriter.setInsertionPoint(loss);
    auto lhsType = tensorType(lhs);
    int64_t k = lhsType.getShape().back();
    int64_t rows = lhsType.getNumElements() / k;
    Value input = lhs;
    if (lhsType.getRank() != 2)
      input = ReshapeOp::create(rewriter, loc, lhsType.clone({rows, k}), lhs);
    bool transposed = transposeRhs;
    Value weight = headWeight(rewriter, loc, rhs, element, transposed);
    auto fused = LinearCrossEntropyOp::create(
        rewriter, loss.getLoc(), loss.getType(), input, weight,
        loss.getLabels(), transposed ? rewriter.getUnitAttr() : UnitAttr(),
        loss.getIgnoreIndexAttr(), loss.getLabelSmoothingAttr());
    rewriter.replaceOp(loss, fused.getResult());
    // The chain, then the product, and what only they read.
    for (Operation *op : chain)
      rewriter.eraseOp(op);
    SmallVector<Operation *> dead = {product};
    while (!dead.empty()) {
      Operation *op = dead.pop_back_val();
      if (!op->use_empty() || !isPure(op))
        continue;
      SmallVector<Value> operands(op->getOperands());
      rewriter.eraseOp(op);
      for (Value operand : operands)
        if (Operation *def = operand.getDefiningOp())
          dead.push_back(def);
    }
    return success();
  }
};

struct FuseLmHeadPass
    : public amp::train::impl::FuseLmHeadPassBase<FuseLmHeadPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      (void)amp::train::fuseLinearCrossEntropy(func);
    });
  }
};

} // namespace

int64_t amp::train::fuseLinearCrossEntropy(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  FuseLinearCrossEntropy pattern(ctx);
  PatternRewriter rewriter(ctx);
  int64_t fused = 0;
  SmallVector<CrossEntropyOp> losses;
  func.walk([&](CrossEntropyOp op) { losses.push_back(op); });
  for (CrossEntropyOp loss : losses)
    if (succeeded(pattern.matchAndRewrite(loss, rewriter)))
      ++fused;
  return fused;
}
