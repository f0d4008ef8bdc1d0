//===- OneShotBufferize.cpp - One-shot bufferization with a size limit ----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// One-Shot Module Bufferization with amp's options, analyzing only the
// functions small enough for its analysis (which grows faster than
// quadratically with a function's ops); larger ones get a copy before each
// in-place write instead.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace amp {
#define GEN_PASS_DEF_ONESHOTBUFFERIZEPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

struct OneShotBufferizePass
    : public amp::impl::OneShotBufferizePassBase<OneShotBufferizePass> {
  using OneShotBufferizePassBase::OneShotBufferizePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    options.copyBeforeWrite = copyBeforeWrite;
    // The functions too large for the analysis, by name.
    SmallVector<std::string> unanalyzed;
    if (!copyBeforeWrite)
      for (auto func : module.getOps<func::FuncOp>()) {
        int64_t ops = 0;
        func.walk([&](Operation *) { ++ops; });
        if (ops > analysisLimit)
          unanalyzed.push_back(func.getSymName().str());
      }
    options.noAnalysisFuncFilter = unanalyzed;
    bufferization::BufferizationState state;
    if (failed(
            bufferization::runOneShotModuleBufferize(module, options, state)))
      signalPassFailure();
  }
};

} // namespace
