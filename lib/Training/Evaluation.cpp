//===- Evaluation.cpp - The forward function used for evaluation ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Evaluation.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace amp;

void amp::toInferenceBatchNorm(train::BatchNormOp bn) {
  OpBuilder b(bn);
  Location loc = bn.getLoc();
  auto xType = cast<RankedTensorType>(bn.getInput().getType());
  Type f32 = b.getF32Type();
  auto asF32 = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getElementType() == f32)
      return v;
    return train::CastOp::create(b, loc, type.clone(f32), v);
  };
  SmallVector<int64_t> channelShape = {xType.getDimSize(1)};
  channelShape.append(xType.getRank() - 2, 1);
  auto perChannel = [&](Value v) -> Value {
    return train::ReshapeOp::create(
        b, loc, RankedTensorType::get(channelShape, f32), asF32(v));
  };
  auto scalar = [&](double value) -> Value {
    auto type = RankedTensorType::get({}, f32);
    return train::ConstantOp::create(
        b, loc, DenseElementsAttr::get(type, float(value)));
  };
  Value var = train::AddOp::create(b, loc, asF32(bn.getRunningVar()),
                                   scalar(bn.getEpsilon().convertToDouble()));
  Value invStd = train::ExpOp::create(
      b, loc,
      train::MulOp::create(b, loc, train::LogOp::create(b, loc, var),
                           scalar(-0.5)));
  Value factor = train::MulOp::create(b, loc, invStd, asF32(bn.getScale()));
  Value centered = train::SubOp::create(b, loc, asF32(bn.getInput()),
                                        perChannel(bn.getRunningMean()));
  Value y = train::AddOp::create(
      b, loc, train::MulOp::create(b, loc, centered, perChannel(factor)),
      perChannel(bn.getBias()));
  if (xType.getElementType() != f32)
    y = train::CastOp::create(b, loc, xType, y);
  bn.getOutput().replaceAllUsesWith(y);
}

/// The loss ops (cross_entropy, mse_loss: the IsLoss trait) of `func`.
static SmallVector<Operation *> lossOps(func::FuncOp func) {
  SmallVector<Operation *> losses;
  func.walk([&](Operation *op) {
    if (op->hasTrait<train::IsLoss>())
      losses.push_back(op);
  });
  return losses;
}

StepAbi::EvalLoss amp::describeEvalLoss(func::FuncOp forward) {
  StepAbi::EvalLoss loss;
  SmallVector<Operation *> losses = lossOps(forward);
  if (losses.size() != 1)
    return loss;
  auto describe = [&](auto op) {
    if (IntegerAttr ignore = op.getIgnoreIndexAttr())
      loss.ignoreIndex = ignore.getInt();
    loss.labelSmoothing = op.getLabelSmoothing().convertToDouble();
  };
  if (auto ce = dyn_cast<train::CrossEntropyOp>(losses.front()))
    describe(ce);
  else if (auto lce = dyn_cast<train::LinearCrossEntropyOp>(losses.front()))
    describe(lce);
  return loss;
}

LogicalResult amp::addLogitsFunction(ModuleOp module, func::FuncOp forward) {
  // The model's outputs: the results marked train.output (the importer's),
  // or else the input of the one loss op (logits, predictions).
  SmallVector<unsigned> outputs;
  for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i)
    if (forward.getResultAttr(i, train::TrainDialect::kOutputAttrName))
      outputs.push_back(i);
  SmallVector<Operation *> losses = lossOps(forward);
  if (outputs.empty() && losses.size() != 1)
    return forward.emitError("evaluation needs the model's outputs: results "
                             "marked '")
           << train::TrainDialect::kOutputAttrName
           << "', or one loss op (train.cross_entropy, train.mse_loss) whose "
              "input they are; @"
           << forward.getName() << " has neither (" << losses.size()
           << " loss ops)";
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto clone = cast<func::FuncOp>(b.clone(*forward));
  clone.setName((forward.getName() + "_logits").str());
  auto ret = cast<func::ReturnOp>(clone.getBody().front().getTerminator());
  SmallVector<Value> results;
  for (unsigned i : outputs)
    results.push_back(ret.getOperand(i));
  if (outputs.empty()) {
    Operation *loss = lossOps(clone).front();
    if (auto head = dyn_cast<train::LinearCrossEntropyOp>(loss)) {
      // The logits the fused head never makes whole: input x weight(^T),
      // as the op computes them.
      b.setInsertionPoint(head);
      results.push_back(train::MatmulOp::create(
          b, head.getLoc(), head.getInput(), head.getWeight(), Value(),
          /*transpose_lhs=*/false, head.getTransposeWeight(), TypeAttr()));
    } else {
      results.push_back(loss->getOperand(0));
    }
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  clone.setType(FunctionType::get(module.getContext(), clone.getArgumentTypes(),
                                  TypeRange(ValueRange(results))));
  clone.removeResAttrsAttr();
  // Batch norm on its running statistics (a module that tracks none keeps
  // normalizing by the batch's, as PyTorch's eval does).
  for (auto bn : llvm::to_vector(clone.getOps<train::BatchNormOp>()))
    if (bn.getTrackRunningStats())
      toInferenceBatchNorm(bn);
  // Evaluation keeps every element: dropout is the identity.
  for (auto dropout : llvm::to_vector(clone.getOps<train::DropoutOp>()))
    dropout.getResult().replaceAllUsesWith(dropout.getInput());
  // Drop what no longer feeds the logits (the loss).
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(
             llvm::reverse(clone.getBody().front().getOperations()))) {
      if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty() &&
          isMemoryEffectFree(&op)) {
        op.erase();
        changed = true;
      }
    }
  }
  return success();
}
