//===- TrainToLinalg.cpp - The amp-convert-train-to-linalg pass -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/TrainAttrNames.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/DialectConversion.h"

namespace amp {
#define GEN_PASS_DEF_CONVERTTRAINTOLINALGPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;

void amp::populateTrainToLinalgPatterns(RewritePatternSet &patterns,
                                        FloatType normStatistics,
                                        StringRef allReduceCallee) {
  populateTrainElementwiseToLinalgPatterns(patterns);
  populateTrainContractionToLinalgPatterns(patterns);
  populateTrainReductionToLinalgPatterns(patterns, normStatistics,
                                         allReduceCallee);
  populateTrainShapeToLinalgPatterns(patterns);
  populateTrainOptimizerToLinalgPatterns(patterns);
}

namespace {
struct ConvertTrainToLinalgPass
    : public amp::impl::ConvertTrainToLinalgPassBase<ConvertTrainToLinalgPass> {
  using ConvertTrainToLinalgPassBase::ConvertTrainToLinalgPassBase;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    ConversionTarget target(*ctx);
    // Every train op must go; anything else may stay or be created.
    target.addIllegalDialect<train::TrainDialect>();
    // Backend runtime calls stay until bufferization.
    target.addLegalOp<train::RuntimeCallOp>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    FloatType normStatistics;
    if (normStatisticsType == "f32")
      normStatistics = Float32Type::get(ctx);
    else if (normStatisticsType == "f64")
      normStatistics = Float64Type::get(ctx);
    else {
      emitError(getOperation()->getLoc())
          << "amp-convert-train-to-linalg: norm-statistics must be f32 or "
             "f64, got '"
          << normStatisticsType << "'";
      return signalPassFailure();
    }
    // SyncBatchNorm needs a collective runtime to sum its statistics.
    if (allReduceCallee.empty()) {
      auto check = [](auto op) {
        if (op.getRanks() == 1)
          return WalkResult::advance();
        op.emitOpError("over ")
            << op.getRanks()
            << " ranks (SyncBatchNorm) needs a collective runtime to sum its "
               "statistics: lower it with amp-lower-cpu or amp-lower-cuda "
               "(this lowering has no all-reduce-callee)";
        return WalkResult::interrupt();
      };
      if (getOperation()
              ->walk([&](train::BatchNormOp op) { return check(op); })
              .wasInterrupted() ||
          getOperation()
              ->walk([&](train::BatchNormGradOp op) { return check(op); })
              .wasInterrupted())
        return signalPassFailure();
    }
    RewritePatternSet patterns(ctx);
    populateTrainToLinalgPatterns(patterns, normStatistics, allReduceCallee);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
    // What amp-autocast and amp-autodiff recorded describes train ops and
    // functions, which are gone or become plain code.
    getOperation()->removeAttr(train::kAutocastAttrName);
    // So do the forward's output marks (for evaluation), which would
    // become argument attributes when bufferization turns results into
    // out-parameters.
    getOperation()->walk([](FunctionOpInterface func) {
      func->removeAttr(train::kGradientOfAttrName);
      for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
        func.removeResultAttr(
            i, StringAttr::get(func->getContext(),
                               train::TrainDialect::kOutputAttrName));
    });
  }
};
} // namespace
