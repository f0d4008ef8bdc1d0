//===- DecomposeLmHead.cpp - train.linear_cross_entropy unfused ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-decompose-lm-head: train.linear_cross_entropy(_grad) as the matmul,
// cast and cross_entropy autocast and autodiff make of an unfused head
// (Passes.td). The gradient computes the logits again; each op is
// rewritten on its own.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/ElementwiseBuilders.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/PatternMatch.h"

namespace amp {
#define GEN_PASS_DEF_DECOMPOSELMHEADPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

/// The products' accumulator attribute: f32 stated for 16-bit operands (as
/// autocast states it), none for f32 ones.
TypeAttr accumulator(OpBuilder &b, Type element) {
  return element.isF32() ? TypeAttr() : TypeAttr::get(b.getF32Type());
}

/// The head's logits, rounded to the operands' type, then widened to f32.
template <typename OpT> Value logits(OpBuilder &b, OpT op) {
  Location loc = op.getLoc();
  Type element = op.getInput().getType().getElementType();
  Value l = MatmulOp::create(
      b, loc, op.getInput(), op.getWeight(), Value(), UnitAttr(),
      op.getTransposeWeight() ? b.getUnitAttr() : UnitAttr(),
      accumulator(b, element));
  return castTo(b, loc, l, b.getF32Type());
}

void decompose(LinearCrossEntropyOp op) {
  OpBuilder b(op);
  Value loss =
      CrossEntropyOp::create(b, op.getLoc(), logits(b, op), op.getLabels(),
                             op.getIgnoreIndexAttr(), op.getLabelSmoothingAttr());
  op.getResult().replaceAllUsesWith(loss);
  op.erase();
}

void decompose(LinearCrossEntropyGradOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type element = op.getInput().getType().getElementType();
  TypeAttr acc = accumulator(b, element);
  UnitAttr on = b.getUnitAttr(), off;
  bool transposed = op.getTransposeWeight();
  Value dl = CrossEntropyGradOp::create(b, loc, op.getGrad(), logits(b, op),
                                        op.getLabels(), op.getIgnoreIndexAttr(),
                                        op.getLabelSmoothingAttr());
  dl = castTo(b, loc, dl, element);
  // dx = dl w^T ([K, V] weight) or dl w ([V, K]).
  Value dx = MatmulOp::create(b, loc, dl, op.getWeight(), Value(), off,
                              transposed ? off : on, acc);
  // dw = x^T dl, or dl^T x.
  Value dw = transposed
                 ? MatmulOp::create(b, loc, dl, op.getInput(), Value(), on,
                                    off, acc)
                 : MatmulOp::create(b, loc, op.getInput(), dl, Value(), on,
                                    off, acc);
  op.getInputGrad().replaceAllUsesWith(dx);
  op.getWeightGrad().replaceAllUsesWith(dw);
  op.erase();
}

struct DecomposeLmHeadPass
    : public amp::impl::DecomposeLmHeadPassBase<DecomposeLmHeadPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<LinearCrossEntropyOp, LinearCrossEntropyGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto grad = dyn_cast<LinearCrossEntropyGradOp>(op))
        decompose(grad);
      else
        decompose(cast<LinearCrossEntropyOp>(op));
    }
  }
};

} // namespace
