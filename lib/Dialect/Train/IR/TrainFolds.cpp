//===- TrainFolds.cpp - Folders and canonicalizations of train ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Every rewrite here is exact: the folded IR computes bit-identical results
// (NaN payloads aside) for every input. Rewrites that only hold up to rounding
// (x + 0 with x = -0, f32 -> f16 -> f32 round trips, reassociation) are left
// to passes that decide precision on purpose.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APFloat.h"

using namespace mlir;
using namespace amp::train;

/// True when `value` is a constant whose every element is the float `x`.
static bool isSplatFloat(Value value, double x) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return false;
  return attr.getSplatValue<APFloat>().isExactlyValue(x);
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

OpFoldResult ReluOp::fold(FoldAdaptor) {
  // relu(relu(x)) == relu(x).
  if (getInput().getDefiningOp<ReluOp>())
    return getInput();
  return {};
}

OpFoldResult MulOp::fold(FoldAdaptor) {
  // x * 1 == x when broadcasting does not change x's shape.
  if (isSplatFloat(getRhs(), 1.0) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatFloat(getLhs(), 1.0) && getRhs().getType() == getType())
    return getRhs();
  return {};
}

OpFoldResult DivOp::fold(FoldAdaptor) {
  // x / 1 == x when broadcasting does not change x's shape.
  if (isSplatFloat(getRhs(), 1.0) && getLhs().getType() == getType())
    return getLhs();
  return {};
}

/// A reduction over axes of size 1 that keeps its dimensions is the identity.
template <typename OpT> static OpFoldResult foldTrivialReduce(OpT op) {
  if (!op.getKeepDims())
    return {};
  ArrayRef<int64_t> shape = op.getInput().getType().getShape();
  for (int64_t axis : op.getAxes())
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size()) ||
        shape[axis] != 1)
      return {};
  return op.getInput();
}

OpFoldResult ReduceSumOp::fold(FoldAdaptor) { return foldTrivialReduce(*this); }
OpFoldResult ReduceMeanOp::fold(FoldAdaptor) {
  return foldTrivialReduce(*this);
}

OpFoldResult DropoutOp::fold(FoldAdaptor) {
  // Dropout with rate 0 keeps every element and scales by 1.
  if (getRate().isZero())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// Constants and shape ops
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) == reshape(x): row-major order is kept by both.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) == transpose(x, r) with r[i] = p[q[i]].
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t q : perm)
      composed.push_back(innerPerm[q]);
    if (llvm::equal(composed, llvm::seq<int64_t>(0, composed.size())))
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    return getResult();
  }
  // A splat is the same in any layout.
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (dense.isSplat())
      return dense.resizeSplat(getType());
  return {};
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // broadcast(broadcast(x)) == broadcast(x): broadcasting composes.
  if (auto inner = getInput().getDefiningOp<BroadcastOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (dense.isSplat())
      return dense.resizeSplat(getType());
  return {};
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// True when every value of float type `from` is exactly representable in
/// float type `to` (f16 -> f32, bf16 -> f32, any type to itself).
static bool isExactConversion(Type from, Type to) {
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  return f && t &&
         llvm::APFloatBase::isRepresentableBy(f.getFloatSemantics(),
                                              t.getFloatSemantics());
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  // A user cast marks where the model fixed its type: kept for autocast
  // (amp-cast-cleanup removes it once autocast has run).
  if (getUser())
    return {};
  if (getInput().getType() == getType())
    return getInput();
  // A constant is converted at compile time, rounding to nearest even exactly
  // as the cast does at run time.
  if (auto dense = dyn_cast_or_null<DenseFPElementsAttr>(adaptor.getInput())) {
    auto to = cast<FloatType>(getType().getElementType());
    return dense.mapValues(to, [&](const APFloat &value) {
      APFloat converted = value;
      bool losesInfo;
      converted.convert(to.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                        &losesInfo);
      return converted.bitcastToAPInt();
    });
  }
  // cast(cast(x : A -> B) : B -> A) == x when A -> B is exact (widening).
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Value source = inner.getInput();
    if (source.getType() == getType() &&
        isExactConversion(getType().getElementType(),
                          inner.getType().getElementType()))
      return source;
  }
  return {};
}

namespace {
/// cast(cast(x : A -> B) : B -> C) -> cast(x : A -> C) when A -> B is exact:
/// the value reaching the outer cast is x itself, so one rounding to C remains.
struct ComposeExactCasts : public OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<CastOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "input is not a cast");
    if (op.getUser() || inner.getUser())
      return rewriter.notifyMatchFailure(op, "a user cast (kept for autocast)");
    if (!isExactConversion(inner.getInput().getType().getElementType(),
                           inner.getType().getElementType()))
      return rewriter.notifyMatchFailure(op, "inner cast rounds");
    rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), inner.getInput());
    return success();
  }
};
} // namespace

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *context) {
  results.add<ComposeExactCasts>(context);
}
