//===- LoopShaping.cpp - Linalg generics shaped for CPU loops -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-lower-cpu turns each linalg generic into a loop nest with one loop per
// iteration dimension (convert-linalg-to-loops) and leaves vectorization to
// LLVM. Two rewrites on tensors make those loops vectorizable:
// amp-collapse-loop-dims merges dimensions that are contiguous in every
// operand (a long innermost loop instead of a 28-iteration one), and
// amp-reassociate-reductions lets a sum be computed in vector lanes.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace amp {
#define GEN_PASS_DEF_COLLAPSELOOPDIMSPASS
#define GEN_PASS_DEF_REASSOCIATEREDUCTIONSPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// The runs of adjacent iteration dimensions of `op` that can become one
/// dimension: the same iterator type, and contiguous (in order) in every
/// indexing map that uses them. Only runs of two or more are returned.
SmallVector<ReassociationIndices> collapsibleRuns(linalg::GenericOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (op.hasIndexSemantics() || !llvm::all_of(maps, [](AffineMap map) {
        return map.isProjectedPermutation();
      }))
    return {};
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<ReassociationIndices> runs;
  for (int64_t first = 0, n = iterators.size(); first < n;) {
    ReassociationIndices run = {first};
    for (int64_t d = first + 1; d < n && iterators[d] == iterators[first];
         ++d) {
      run.push_back(d);
      if (!linalg::areDimSequencesPreserved(maps, run)) {
        run.pop_back();
        break;
      }
    }
    first += run.size();
    if (run.size() > 1)
      runs.push_back(std::move(run));
  }
  return runs;
}

struct CollapseLoopDimsPass
    : public amp::impl::CollapseLoopDimsPassBase<CollapseLoopDimsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics())
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : candidates) {
      // A result the function returns stays in its shape: returned as a
      // reshaped view it could not become the caller's out-parameter
      // (buffer-results-to-out-params hoists only plain allocations) and
      // would be copied into it on every call.
      if (llvm::any_of(op->getUsers(), [](Operation *user) {
            return isa<func::ReturnOp>(user);
          }))
        continue;
      SmallVector<ReassociationIndices> runs = collapsibleRuns(op);
      if (runs.empty())
        continue;
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(op, runs, rewriter);
      // The runs satisfy collapseOpIterationDims' preconditions; should it
      // refuse anyway, the op simply keeps its loops.
      if (succeeded(collapsed))
        rewriter.replaceOp(op, collapsed->results);
    }
  }
};

struct ReassociateReductionsPass
    : public amp::impl::ReassociateReductionsPassBase<
          ReassociateReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](linalg::GenericOp op) {
      if (op.getNumReductionLoops() == 0)
        return;
      auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
      for (OpOperand &init : op.getDpsInitsMutable()) {
        BlockArgument acc = op.getMatchingBlockArgument(&init);
        auto add =
            yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs())
                .getDefiningOp<arith::AddFOp>();
        // Only a pure sum: the accumulator feeds nothing but this add.
        if (!add || !acc.hasOneUse() ||
            (add.getLhs() != acc && add.getRhs() != acc))
          continue;
        add.setFastmath(add.getFastmath() | arith::FastMathFlags::reassoc);
      }
    });
  }
};

} // namespace
