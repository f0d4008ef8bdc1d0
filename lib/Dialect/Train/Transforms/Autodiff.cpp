//===- Autodiff.cpp - The amp-autodiff pass -------------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Locations.h"
#include "amp/Dialect/Train/IR/TrainAttrNames.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

namespace amp {
namespace train {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

/// A constant tensor of `type` filled with `value`.
Value filled(OpBuilder &b, Location loc, RankedTensorType type, double value) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type,
                             b.getFloatAttr(type.getElementType(), value)));
}

/// Checks that `func` returns its loss first.
LogicalResult checkReturnsLoss(func::FuncOp func) {
  TypeRange results = func.getResultTypes();
  auto loss = results.empty() ? RankedTensorType()
                              : dyn_cast<RankedTensorType>(results.front());
  if (!loss || loss.getRank() != 0 || !isa<FloatType>(loss.getElementType()))
    return func.emitError("amp-autodiff: @")
           << func.getName()
           << " must return the loss (a rank-0 float tensor) first";
  return success();
}

/// Records the ops a builder creates.
struct CreatedOps : public OpBuilder::Listener {
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  SmallVector<Operation *> ops;
};

/// Differentiates `func` (a clone of the forward function) in place: appends
/// the backward graph and one gradient result per parameter.
LogicalResult differentiate(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // The model's outputs first: only evaluation returns them, and a head
  // whose logits nothing else reads is then one fused op with its loss.
  SmallVector<Value> kept;
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (!func.getResultAttr(i, TrainDialect::kOutputAttrName))
      kept.push_back(value);
  if (kept.size() != ret.getNumOperands()) {
    OpBuilder b(ret);
    func::ReturnOp old = ret;
    ret = func::ReturnOp::create(b, old.getLoc(), kept);
    old.erase();
    func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                   TypeRange(ValueRange(kept))));
    func.removeResAttrsAttr();
  }
  // What only the outputs read is not computed for the gradients.
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isPure(op))
      op->erase();
  amp::train::fuseLinearCrossEntropy(func);
  Value loss = ret.getOperand(0);

  SmallVector<BlockArgument> params;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttrName))
      params.push_back(arg);

  // Activity: values that depend on a parameter and reach the loss.
  DenseSet<Value> varied(params.begin(), params.end()), useful = {loss};
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitError("amp-autodiff: control flow ('")
             << op.getName() << "') is not differentiable yet";
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return varied.contains(v); }))
      varied.insert(op.getResults().begin(), op.getResults().end());
  }
  for (Operation &op : llvm::reverse(body.without_terminator()))
    if (llvm::any_of(op.getResults(),
                     [&](Value v) { return useful.contains(v); }))
      useful.insert(op.getOperands().begin(), op.getOperands().end());
  auto active = [&](Value v) {
    return varied.contains(v) && useful.contains(v);
  };

  // Reverse sweep, emitting the backward graph before the return.
  CreatedOps created;
  OpBuilder b(ret, &created);
  DenseMap<Value, Value> grads;
  auto accumulate = [&](Value value, Value grad) {
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = AddOp::create(b, value.getLoc(), it->second, grad);
  };
  if (active(loss)) {
    Value seed = LossSeedOp::create(b, loss.getLoc(), loss.getType());
    accumulate(loss, seed);
  }
  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    if (llvm::none_of(op->getResults(), active))
      continue;
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(grads.lookup(result));
    if (llvm::all_of(resultGrads, [](Value v) { return !v; }))
      continue;
    auto diff = dyn_cast<DifferentiableOpInterface>(op);
    if (!diff)
      return op->emitError("amp-autodiff: no gradient rule for '")
             << op->getName() << "' (it lies between a parameter and the loss)";
    SmallVector<Value> operandGrads;
    if (failed(diff.buildVJP(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && active(operand))
        accumulate(operand, grad);
  }

  // Results: the forward results (the model's outputs were dropped above),
  // then one gradient per parameter.
  SmallVector<Value> results(ret.getOperands());
  for (BlockArgument param : params) {
    Value grad = grads.lookup(param);
    if (!grad)
      grad = filled(b, param.getLoc(), cast<RankedTensorType>(param.getType()),
                    0.0);
    results.push_back(grad);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  // VJP rules build every operand's gradient; those of values that reach no
  // parameter are unused: no gradient work is left for them.
  // The rest is the backward: its ops keep their forward op's location,
  // marked (amp::backwardLocation) so that later readers (amp-check-numerics,
  // the precision report) tell the two apart.
  for (Operation *op : llvm::reverse(created.ops)) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (op->use_empty())
      op->erase();
    else
      op->setLoc(amp::backwardLocation(op->getLoc()));
  }
  func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                 TypeRange(ValueRange(results))));
  func.removeResAttrsAttr();
  return success();
}

struct AutodiffPass : public amp::train::impl::AutodiffPassBase<AutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> forwards;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() &&
          llvm::any_of(func.getArguments(), [&](BlockArgument arg) {
            return func.getArgAttr(arg.getArgNumber(),
                                   TrainDialect::kParamAttrName);
          }))
        forwards.push_back(func);
    for (func::FuncOp forward : forwards) {
      if (failed(checkReturnsLoss(forward)))
        return signalPassFailure();
      std::string name = (forward.getName() + "_grad").str();
      if (symbols.lookup(name)) {
        forward.emitError("amp-autodiff: @")
            << name << " already exists; was the pass run twice?";
        return signalPassFailure();
      }
      auto grad = cast<func::FuncOp>(forward->clone());
      grad.setName(name);
      grad->setAttr(kGradientOfAttrName,
                    FlatSymbolRefAttr::get(forward.getNameAttr()));
      symbols.insert(grad, std::next(Block::iterator(forward)));
      if (failed(differentiate(grad)))
        return signalPassFailure();
    }
  }
};

} // namespace
