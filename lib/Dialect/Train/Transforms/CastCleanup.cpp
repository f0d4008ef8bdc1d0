//===- CastCleanup.cpp - The amp-cast-cleanup pass ------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainAttrNames.h"
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
    // The model's own casts have served autocast: from here they are casts
    // like any other (one of a value to its own type is nothing).
    getOperation()->walk([&](CastOp cast) {
      if (!cast.getUser())
        return;
      cast.setUser(false);
      cast->removeAttr(kDecisionAttrName);
      if (cast.getInput().getType() == cast.getType()) {
        cast.getResult().replaceAllUsesWith(cast.getInput());
        cast->erase();
      }
    });
    // Exact folds first: round trips, widening chains, constants.
    // Only the casts (and the ops their folds create) are visited: a walk
    // of every op of a large step costs more than the casts' folds.
    RewritePatternSet patterns(&getContext());
    CastOp::getCanonicalizationPatterns(patterns, &getContext());
    SmallVector<Operation *> seeds;
    getOperation()->walk([&](CastOp cast) { seeds.push_back(cast); });
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyOpPatternsGreedily(seeds, std::move(patterns), config)))
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
