//===- CastCleanup.cpp - The amp-cast-cleanup pass ------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace amp {
namespace train {
#define GEN_PASS_DEF_CASTCLEANUPPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

/// Moves `cast` to right after its input's definition.
void hoistToDefinition(CastOp cast) {
  Value input = cast.getInput();
  if (auto arg = dyn_cast<BlockArgument>(input))
    cast->moveBefore(&arg.getOwner()->front());
  else
    cast->moveAfter(input.getDefiningOp());
}

struct CastCleanupPass
    : public amp::train::impl::CastCleanupPassBase<CastCleanupPass> {
  void runOnOperation() override {
    // Exact folds first: round trips, widening chains, constants.
    RewritePatternSet patterns(&getContext());
    CastOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // Then one cast per (value, type), right after the value's definition,
    // where it dominates every use of the value.
    DenseMap<std::pair<Value, Type>, CastOp> kept;
    SmallVector<CastOp> casts;
    getOperation()->walk([&](CastOp cast) { casts.push_back(cast); });
    for (CastOp cast : casts) {
      auto key = std::make_pair(cast.getInput(), cast.getType());
      auto [it, inserted] = kept.try_emplace(key, cast);
      if (inserted) {
        hoistToDefinition(cast);
        continue;
      }
      cast.getResult().replaceAllUsesWith(it->second.getResult());
      cast->erase();
    }
  }
};

} // namespace
