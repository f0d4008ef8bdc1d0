//===- DecomposeAttention.cpp - train.attention unfused ------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-decompose-attention: train.attention and train.attention_grad as the
// train ops autocast and autodiff make of a hand-written attention
// (Passes.td says which). The gradients are rewritten first: they do not
// read the forward op's log-sum-exp, which is then dead.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/ElementwiseBuilders.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

namespace amp {
#define GEN_PASS_DEF_DECOMPOSEATTENTIONPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

/// softmax(query key^T * scale + mask) in f32, causal as the op says.
Value probabilities(OpBuilder &b, Location loc, Value query, Value key,
                    Value mask, bool causal, double scale, TypeAttr acc) {
  Type f32 = b.getF32Type();
  UnitAttr on = b.getUnitAttr();
  Value s = BatchMatmulOp::create(b, loc, query, key, UnitAttr(), on, acc);
  s = castTo(b, loc, s, f32);
  s = MulOp::create(b, loc, s, scalarLike(b, loc, s, scale));
  auto scores = cast<RankedTensorType>(s.getType());
  int64_t rank = scores.getRank();
  int64_t sq = scores.getDimSize(rank - 2), sk = scores.getDimSize(rank - 1);
  Value negInf =
      scalarLike(b, loc, s, -std::numeric_limits<double>::infinity());
  if (mask) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    if (maskType.getElementType().isInteger(1))
      s = SelectOp::create(b, loc, mask, s, negInf);
    else
      s = AddOp::create(b, loc, s, castTo(b, loc, mask, f32));
  }
  bool squareCausal = causal && sq == sk;
  if (causal && !squareCausal) {
    // Top-left aligned: key j is kept for query i where j <= i.
    SmallVector<bool> keep;
    keep.reserve(sq * sk);
    for (int64_t i = 0; i < sq; ++i)
      for (int64_t j = 0; j < sk; ++j)
        keep.push_back(j <= i);
    auto keepType = RankedTensorType::get({sq, sk}, b.getI1Type());
    Value keepMask = ConstantOp::create(
        b, loc, DenseElementsAttr::get(keepType, ArrayRef<bool>(keep)));
    s = SelectOp::create(b, loc, keepMask, s, negInf);
  }
  if (!mask && !(causal && !squareCausal))
    return SoftmaxOp::create(b, loc, s, uint64_t(rank - 1), squareCausal);
  // A mask may hide every key of a query: PyTorch's convention (its math
  // backend's _safe_softmax) is a zero row, not softmax's NaN. The masked
  // scores become the lowest f32 for the softmax (a fully masked row is
  // then uniform, any other row unchanged: exp underflows to 0 there as
  // from -inf) and their probabilities 0 afterwards.
  Value masked = CompareOp::create(b, loc, s, negInf, ComparePredicate::eq);
  Value lowest = scalarLike(b, loc, s, -std::numeric_limits<float>::max());
  Value finite = SelectOp::create(b, loc, masked, lowest, s);
  Value p = SoftmaxOp::create(b, loc, finite, uint64_t(rank - 1), squareCausal);
  return SelectOp::create(b, loc, masked, scalarLike(b, loc, s, 0.0), p);
}

void decompose(AttentionGradOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  // Products accumulate in f32 (attention_grad's rule).
  Type element = op.getQuery().getType().getElementType();
  TypeAttr accumulate;
  if (isa<Float16Type, BFloat16Type>(element))
    accumulate = TypeAttr::get(b.getF32Type());
  double scale = op.getScale().convertToDouble();
  Value p = probabilities(b, loc, op.getQuery(), op.getKey(), op.getMask(),
                          op.getCausal(), scale, accumulate);
  int64_t axis = cast<RankedTensorType>(p.getType()).getRank() - 1;
  UnitAttr on = b.getUnitAttr(), off;
  Value dout = op.getGrad();
  // dV = P^T dO, with P rounded as the forward product saw it.
  Value pLow = castTo(b, loc, p, element);
  Value dv = BatchMatmulOp::create(b, loc, pLow, dout, on, off, accumulate);
  // dP = dO V^T; dS = softmax_grad(dP, P) * scale.
  Value dp = BatchMatmulOp::create(b, loc, dout, op.getValue(), off, on,
                                   accumulate);
  Value ds = SoftmaxGradOp::create(b, loc, castTo(b, loc, dp, b.getF32Type()),
                                   p, b.getI64IntegerAttr(axis));
  ds = MulOp::create(b, loc, ds, scalarLike(b, loc, ds, scale));
  ds = castTo(b, loc, ds, element);
  Value dq = BatchMatmulOp::create(b, loc, ds, op.getKey(), off, off,
                                   accumulate);
  Value dk = BatchMatmulOp::create(b, loc, ds, op.getQuery(), on, off,
                                   accumulate);
  op.getQueryGrad().replaceAllUsesWith(dq);
  op.getKeyGrad().replaceAllUsesWith(dk);
  op.getValueGrad().replaceAllUsesWith(dv);
  op.erase();
}

LogicalResult decompose(AttentionOp op) {
  if (!op.getLse().use_empty())
    return op.emitOpError("amp-decompose-attention: the log-sum-exp is read "
                          "by ")
           << (*op.getLse().user_begin())->getName()
           << "; only train.attention_grad may read it";
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type element = op.getQuery().getType().getElementType();
  TypeAttr acc = op.getAccumulateAttr();
  Value p = probabilities(b, loc, op.getQuery(), op.getKey(), op.getMask(),
                          op.getCausal(), op.getScale().convertToDouble(), acc);
  Value out = BatchMatmulOp::create(b, loc, castTo(b, loc, p, element),
                                    op.getValue(), UnitAttr(), UnitAttr(), acc);
  op.getResult().replaceAllUsesWith(out);
  op.erase();
  return success();
}

struct DecomposeAttentionPass
    : public amp::impl::DecomposeAttentionPassBase<DecomposeAttentionPass> {
  void runOnOperation() override {
    SmallVector<AttentionGradOp> grads;
    getOperation().walk([&](AttentionGradOp op) { grads.push_back(op); });
    for (AttentionGradOp op : grads)
      decompose(op);
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    for (AttentionOp op : ops)
      if (failed(decompose(op)))
        return signalPassFailure();
  }
};

} // namespace
