//===- RuntimeCallBufferization.cpp - Bufferizing train.runtime_call ------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// train.runtime_call reads its inputs and allocates its result. Bufferized,
// it becomes
//
//   %p0 = memref.extract_aligned_pointer_as_index %in0   (dense, offset 0)
//   %out = memref.alloc() {alignment = 64} : memref<..xf32>
//   %po = memref.extract_aligned_pointer_as_index %out
//   func.call @callee(%p0, ..., %po, <params as i64>)
//
// An input whose buffer is strided is first copied into a dense one. The
// buffers stay alive until the end of their block: ownership-based buffer
// deallocation frees there, after the call.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"
#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace amp::train;

namespace {

struct RuntimeCallOpInterface
    : public BufferizableOpInterface::ExternalModel<RuntimeCallOpInterface,
                                                    RuntimeCallOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto call = cast<RuntimeCallOp>(op);
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value input : call.getInputs()) {
      FailureOr<Value> buffer = getBuffer(rewriter, input, options, state);
      if (failed(buffer))
        return failure();
      Value dense = *buffer;
      auto type = cast<MemRefType>(dense.getType());
      if (!type.getLayout().isIdentity()) {
        auto denseType =
            MemRefType::get(type.getShape(), type.getElementType());
        FailureOr<Value> copy =
            options.createAlloc(rewriter, loc, denseType, ValueRange{});
        if (failed(copy) ||
            failed(options.createMemCpy(rewriter, loc, *buffer, *copy)))
          return failure();
        dense = *copy;
      }
      operands.push_back(
          memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, dense));
    }
    SmallVector<Value> results;
    for (Value value : call.getResults()) {
      auto resultType = cast<RankedTensorType>(value.getType());
      auto memrefType =
          MemRefType::get(resultType.getShape(), resultType.getElementType());
      results.push_back(memref::AllocOp::create(
          rewriter, loc, memrefType, rewriter.getI64IntegerAttr(64)));
      operands.push_back(memref::ExtractAlignedPointerAsIndexOp::create(
          rewriter, loc, results.back()));
    }
    for (int64_t param : call.getParams())
      operands.push_back(arith::ConstantOp::create(
          rewriter, loc, rewriter.getI64IntegerAttr(param)));
    auto runtimeCall = func::CallOp::create(rewriter, loc, call.getCallee(),
                                            TypeRange{}, operands);
    if (Attribute workspace = op->getAttr(amp::kWorkspaceBytesAttrName))
      runtimeCall->setAttr(amp::kWorkspaceBytesAttrName, workspace);
    replaceOpWithBufferizedValues(rewriter, op, results);
    return success();
  }
};

} // namespace

void amp::registerRuntimeCallBufferizationModel(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, TrainDialect *) {
    RuntimeCallOp::attachInterface<RuntimeCallOpInterface>(*ctx);
  });
}
