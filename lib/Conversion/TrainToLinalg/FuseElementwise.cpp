//===- FuseElementwise.cpp - Element-wise fusion that keeps 16-bit values -===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Upstream's linalg-fuse-elementwise-ops (the same patterns) with a control
// function that decides where a mixed-precision value is materialized:
//
// - a generic that only widens floats (`arith.extf` of its inputs) is fused
//   into every consumer, even with several: an f32 twin of a 16-bit tensor
//   is never stored, each consumer widens as it reads;
// - a generic whose result is narrower than one of its inputs (a rounding:
//   an f32 accumulator rounded to f16) is not fused into a consumer with a
//   wider result: the 16-bit value is stored and the f32 one dies there,
//   instead of being kept alive until a distant consumer (a gradient read
//   by the optimizer at the end of the step);
// - anything else fuses when the producer has one use, as upstream.
//
// Fused or not, every element goes through the same operations; only what
// is stored, and for how long, changes (a reduction that now widens its
// 16-bit input itself may be vectorized differently, so its f32 sum can be
// reassociated differently, as any change of a reassociable loop can).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace amp {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// The bit width of a ranked tensor's float element type, else 0.
unsigned floatWidth(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0;
  auto f = dyn_cast<FloatType>(tensor.getElementType());
  return f ? f.getWidth() : 0;
}

/// Whether `op` is an all-parallel generic whose every result is one of its
/// inputs widened (`arith.extf` of a block argument), nothing else.
bool isPureWidening(linalg::GenericOp op) {
  if (op.getNumReductionLoops() != 0)
    return false;
  Block &body = op.getRegion().front();
  for (Operation &inner : body.without_terminator()) {
    auto ext = dyn_cast<arith::ExtFOp>(inner);
    if (!ext || !isa<BlockArgument>(ext.getIn()))
      return false;
  }
  for (Value yielded : body.getTerminator()->getOperands())
    if (!yielded.getDefiningOp<arith::ExtFOp>())
      return false;
  return true;
}

/// Whether the generic `op` rounds: a float result narrower than one of its
/// float inputs.
bool rounds(linalg::GenericOp op, unsigned resultWidth) {
  for (Value input : op.getDpsInputs())
    if (floatWidth(input.getType()) > resultWidth)
      return true;
  return false;
}

bool shouldFuse(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  if (!producer)
    return false;
  if (isPureWidening(producer))
    return true;
  unsigned width = floatWidth(fused->get().getType());
  if (width && rounds(producer, width))
    for (Type result : fused->getOwner()->getResultTypes())
      if (floatWidth(result) > width)
        return false;
  return producer->hasOneUse();
}

struct FuseElementwisePass
    : public amp::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::ControlFusionFn control = shouldFuse;
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::ControlFusionFn oneUse = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      return producer && producer->hasOneUse();
    };
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, oneUse);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, oneUse);
    GreedyRewriteConfig config;
    config.setUseTopDownTraversal(true);
    (void)applyPatternsGreedily(getOperation(), std::move(patterns), config);
  }
};

} // namespace
