//===- CaptureScalarInputs.cpp - Rank-0 generic inputs read once ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A rank-0 input of a linalg.generic with loops becomes a scalar read once
// (tensor.extract after its definition) that the body captures, so that a
// step's few scalars shared by every parameter update have one use each
// when one-shot bufferization analyses them (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

namespace amp {
#define GEN_PASS_DEF_CAPTURESCALARINPUTSPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

struct CaptureScalarInputsPass
    : public amp::impl::CaptureScalarInputsPassBase<CaptureScalarInputsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    OpBuilder b(&getContext());
    // One read per tensor, shared by all the generics that take it.
    llvm::DenseMap<Value, Value> scalars;
    auto scalarOf = [&](Value tensor) {
      Value &scalar = scalars[tensor];
      if (!scalar) {
        b.setInsertionPointAfterValue(tensor);
        scalar = tensor::ExtractOp::create(b, tensor.getLoc(), tensor,
                                           ValueRange{});
      }
      return scalar;
    };
    for (linalg::GenericOp op : generics) {
      if (!op.hasPureTensorSemantics() || op.getNumLoops() == 0)
        continue;
      Block *body = op.getBody();
      SmallVector<Attribute> maps(op.getIndexingMaps().begin(),
                                  op.getIndexingMaps().end());
      // Last input first, so that the indices still to visit stay valid.
      for (int64_t i = op.getNumDpsInputs() - 1; i >= 0; --i) {
        Value input = op.getDpsInputOperand(i)->get();
        auto type = dyn_cast<RankedTensorType>(input.getType());
        if (!type || type.getRank() != 0)
          continue;
        body->getArgument(i).replaceAllUsesWith(scalarOf(input));
        body->eraseArgument(i);
        maps.erase(maps.begin() + i);
        op.getInputsMutable().erase(i);
      }
      if (maps.size() != op.getIndexingMaps().size())
        op.setIndexingMapsAttr(b.getArrayAttr(maps));
    }
  }
};

} // namespace
