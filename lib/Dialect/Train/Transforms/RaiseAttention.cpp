//===- RaiseAttention.cpp - Hand-written attention to train.attention ----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-raise-attention: batch_matmul(softmax(batch_matmul(q, k^T) * c
// [+ mask]), v) as one train.attention (Passes.td gives the form). Anchored
// at the second product; each intermediate must have that one use, so the
// rewrite removes the whole chain and keeps every other value.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <optional>

namespace amp::train {
#define GEN_PASS_DEF_RAISEATTENTIONPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace amp::train

using namespace mlir;
using namespace amp::train;

namespace {

/// The value of a rank-0 float constant.
std::optional<double> scalarConstant(Value v) {
  DenseFPElementsAttr attr;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || type.getRank() != 0 || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

bool sameShape(Value a, Value b) {
  return cast<RankedTensorType>(a.getType()).getShape() ==
         cast<RankedTensorType>(b.getType()).getShape();
}

/// Whether `v` is computed from a parameter (a `train.param` argument of
/// its function): a learned additive mask, which train.attention would give
/// no gradient.
bool dependsOnParameter(Value v) {
  SmallVector<Value> stack = {v};
  DenseSet<Value> seen;
  while (!stack.empty()) {
    Value x = stack.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
      if (func && func.getArgAttr(arg.getArgNumber(),
                                  TrainDialect::kParamAttrName))
        return true;
      continue;
    }
    llvm::append_range(stack, x.getDefiningOp()->getOperands());
  }
  return false;
}

/// What was matched below the softmax: the scores' product, the scale, the
/// mask.
struct Scores {
  BatchMatmulOp product;
  double scale = 1.0;
  Value mask;
};

/// The scaled product q k^T behind `v` (a mul or div by a constant, or the
/// product itself), each op with one use and the scores' shape.
std::optional<Scores> matchScaledProduct(Value v) {
  Scores scores;
  Operation *def = v.getDefiningOp();
  if (!def || !v.hasOneUse())
    return std::nullopt;
  if (auto mul = dyn_cast<MulOp>(def)) {
    for (auto [scores_, factor] : {std::pair(mul.getLhs(), mul.getRhs()),
                                   std::pair(mul.getRhs(), mul.getLhs())})
      if (std::optional<double> c = scalarConstant(factor))
        if (auto inner = matchScaledProduct(scores_);
            inner && sameShape(scores_, v)) {
          inner->scale *= *c;
          return inner;
        }
    return std::nullopt;
  }
  if (auto div = dyn_cast<DivOp>(def)) {
    std::optional<double> c = scalarConstant(div.getRhs());
    auto inner = matchScaledProduct(div.getLhs());
    if (!c || *c == 0.0 || !inner || !sameShape(div.getLhs(), v))
      return std::nullopt;
    inner->scale /= *c;
    return inner;
  }
  auto product = dyn_cast<BatchMatmulOp>(def);
  if (!product || product.getTransposeLhs() || !product.getTransposeRhs())
    return std::nullopt;
  scores.product = product;
  return scores;
}

/// The scores behind the softmax input `v`, with an optional mask: an
/// additive one (`train.add`, the mask not widening the scores) or a
/// boolean one (`train.select %keep, %scores, -inf`).
std::optional<Scores> matchMaskedScores(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || !v.hasOneUse())
    return std::nullopt;
  if (auto add = dyn_cast<AddOp>(def)) {
    for (auto [scores_, mask] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())})
      if (auto scores = matchScaledProduct(scores_);
          scores && sameShape(scores_, v)) {
        scores->mask = mask;
        return scores;
      }
    return std::nullopt;
  }
  if (auto select = dyn_cast<SelectOp>(def)) {
    std::optional<double> otherwise = scalarConstant(select.getRhs());
    if (!otherwise || !std::isinf(*otherwise) || *otherwise > 0)
      return std::nullopt;
    auto scores = matchScaledProduct(select.getLhs());
    if (!scores || !sameShape(select.getLhs(), v))
      return std::nullopt;
    scores->mask = select.getCondition();
    return scores;
  }
  return matchScaledProduct(v);
}

struct RaiseAttention : OpRewritePattern<BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getTransposeLhs() || op.getTransposeRhs())
      return failure();
    auto softmax = op.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || !softmax->hasOneUse() ||
        int64_t(softmax.getAxis()) != softmax.getType().getRank() - 1)
      return rewriter.notifyMatchFailure(op, "not softmax(...) @ v");
    std::optional<Scores> scores = matchMaskedScores(softmax.getInput());
    if (!scores || !(scores->scale > 0.0))
      return rewriter.notifyMatchFailure(op, "not softmax(q k^T * c) @ v");
    Value q = scores->product.getLhs(), k = scores->product.getRhs(),
          v = op.getRhs();
    auto qt = cast<RankedTensorType>(q.getType());
    auto kt = cast<RankedTensorType>(k.getType());
    auto vt = cast<RankedTensorType>(v.getType());
    if (qt.getRank() != kt.getRank() || qt.getRank() != vt.getRank() ||
        qt.getShape().drop_back(2) != kt.getShape().drop_back(2) ||
        qt.getShape().drop_back(2) != vt.getShape().drop_back(2))
      return rewriter.notifyMatchFailure(op, "broadcast leading dims");
    if (qt.getElementType() != kt.getElementType() ||
        qt.getElementType() != vt.getElementType() ||
        scores->product.getAccumulate() || op.getAccumulate())
      return rewriter.notifyMatchFailure(op, "mixed types or accumulators");
    if (Value mask = scores->mask) {
      Type m = cast<RankedTensorType>(mask.getType()).getElementType();
      if (m != qt.getElementType() && !m.isInteger(1))
        return rewriter.notifyMatchFailure(op, "mask of another type");
      if (!m.isInteger(1) && dependsOnParameter(mask))
        return rewriter.notifyMatchFailure(op, "a learned mask");
    }
    auto attention = AttentionOp::create(
        rewriter, op.getLoc(), q, k, v, scores->mask,
        softmax.getCausal() ? rewriter.getUnitAttr() : UnitAttr(),
        rewriter.getF64FloatAttr(scores->scale), TypeAttr());
    if (attention.getResult().getType() != op.getType()) {
      rewriter.eraseOp(attention);
      return rewriter.notifyMatchFailure(op, "result type differs");
    }
    rewriter.replaceOp(op, attention.getResult());
    return success();
  }
};

struct RaiseAttentionPass
    : public amp::train::impl::RaiseAttentionPassBase<RaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseAttention>(&getContext());
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    // Only the rewrite: the rest of the model stays as written.
    config.enableFolding(false);
    config.enableConstantCSE(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      signalPassFailure();
  }
};

} // namespace
