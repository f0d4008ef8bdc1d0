//===- ScfToCf.cpp - SCF to CFG, last loop first --------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Upstream's SCF-to-ControlFlow patterns, driven over a block's outermost
// SCF ops from the last to the first, so that the block split each loop
// needs moves only the ops up to the next loop (already lowered), not the
// rest of a function of thousands of loops.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

namespace amp {
#define GEN_PASS_DEF_CONVERTSCFTOCFPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

struct ConvertScfToCfPass
    : public amp::impl::ConvertScfToCfPassBase<ConvertScfToCfPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateSCFToControlFlowConversionPatterns(patterns);
    ConversionTarget target(*ctx);
    target
        .addIllegalOp<scf::ForallOp, scf::ForOp, scf::IfOp, scf::IndexSwitchOp,
                      scf::ParallelOp, scf::WhileOp, scf::ExecuteRegionOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    // The outermost SCF ops in program order; nested ones are converted with
    // their root.
    SmallVector<Operation *> roots;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (!isa<scf::SCFDialect>(op->getDialect()))
        return WalkResult::advance();
      roots.push_back(op);
      return WalkResult::skip();
    });
    std::reverse(roots.begin(), roots.end());
    ConversionConfig config;
    config.allowPatternRollback = false;
    if (failed(
            applyPartialConversion(roots, target, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
