//===- OneShotBufferize.cpp - One-shot bufferization, amp's options --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// One-Shot Module Bufferization with amp's options; optionally without the
// in-place analysis in functions above a size (a copy before each in-place
// write instead).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
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
    // A copy between dense buffers stays memref.copy (an llvm.memcpy); one
    // with a strided side (into a padded buffer's interior, out of a slice)
    // is a linalg.copy, which becomes loops on the CPU and a kernel on the
    // GPU. memref.copy would call MLIR's generic memrefCopy from
    // libmlir_c_runner_utils, which an artifact does not link and a device
    // buffer cannot take.
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from,
                          Value to) -> LogicalResult {
      auto dense = [](Value v) {
        return cast<MemRefType>(v.getType()).getLayout().isIdentity();
      };
      if (dense(from) && dense(to))
        memref::CopyOp::create(b, loc, from, to);
      else
        linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    // The functions too large for the analysis, by name.
    SmallVector<std::string> unanalyzed;
    if (!copyBeforeWrite && analysisLimit > 0)
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
