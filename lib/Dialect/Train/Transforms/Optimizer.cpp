//===- Optimizer.cpp - The amp-optimizer pass -----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace amp {
namespace train {
#define GEN_PASS_DEF_OPTIMIZERPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

struct OptimizerPass
    : public amp::train::impl::OptimizerPassBase<OptimizerPass> {
  using OptimizerPassBase::OptimizerPassBase;

  LogicalResult initialize(MLIRContext *context) override {
    if (optimizer != "sgd" && optimizer != "momentum" && optimizer != "adam" &&
        optimizer != "adamw")
      return emitError(UnknownLoc::get(context),
                       "amp-optimizer: optimizer must be sgd, momentum, adam "
                       "or adamw, got '" +
                           optimizer + "'");
    return success();
  }

  void runOnOperation() override;
  LogicalResult buildStep(func::FuncOp grad, func::FuncOp forward,
                          StringRef name);
};

/// Adds an argument of `type` with unit attribute `mark` (and an initializer)
/// to `func`, returning it.
BlockArgument addArgument(func::FuncOp func, Type type, StringRef mark,
                          Attribute init = {}) {
  MLIRContext *ctx = func.getContext();
  SmallVector<NamedAttribute> attrs = {
      NamedAttribute(StringAttr::get(ctx, mark), UnitAttr::get(ctx))};
  if (init)
    attrs.push_back(NamedAttribute(
        StringAttr::get(ctx, TrainDialect::kInitAttrName), init));
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, type, DictionaryAttr::get(ctx, attrs),
                                 func.getLoc())))
    return {};
  return func.getArgument(index);
}

LogicalResult OptimizerPass::buildStep(func::FuncOp grad, func::FuncOp forward,
                                       StringRef name) {
  MLIRContext *ctx = &getContext();
  auto step = cast<func::FuncOp>(grad->clone());
  step.setName(name);
  SymbolTable(getOperation()).insert(step, std::next(Block::iterator(grad)));

  // The parameters, and how many state results precede the gradients.
  SmallVector<BlockArgument> params;
  unsigned numState = 0;
  for (BlockArgument arg : step.getArguments()) {
    if (step.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttrName))
      params.push_back(arg);
    if (step.getArgAttr(arg.getArgNumber(), TrainDialect::kStateAttrName))
      ++numState;
  }
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  unsigned numForward = 1 + numState;
  if (ret.getNumOperands() != numForward + params.size())
    return grad.emitError("amp-optimizer: @")
           << grad.getName() << " does not return the loss, " << numState
           << " state values and " << params.size()
           << " gradients; was it made by amp-autodiff?";
  SmallVector<Value> forwardResults(ret.getOperands().take_front(numForward));
  SmallVector<Value> grads(ret.getOperands().drop_front(numForward));

  Type f32 = Float32Type::get(ctx);
  auto zeros = InitAttr::get(ctx, InitKind::zeros, APFloat(0.0), 0, 0);
  // f32 masters for low-precision parameters.
  SmallVector<Value> updated; // what the update reads: param or master
  SmallVector<BlockArgument> masters;
  SmallVector<bool> hasMaster;
  for (BlockArgument p : params) {
    auto type = cast<RankedTensorType>(p.getType());
    bool low = !type.getElementType().isF32();
    hasMaster.push_back(low);
    if (!low) {
      updated.push_back(p);
      continue;
    }
    BlockArgument master =
        addArgument(step, type.clone(f32), TrainDialect::kMasterAttrName);
    masters.push_back(master);
    updated.push_back(master);
  }
  // Optimizer state, f32, zero-initialized.
  bool adam = optimizer == "adam" || optimizer == "adamw";
  SmallVector<Value> buffers, firsts, seconds;
  for (Value p : updated) {
    Type type = cast<RankedTensorType>(p.getType()).clone(f32);
    if (optimizer == "momentum")
      buffers.push_back(
          addArgument(step, type, TrainDialect::kOptStateAttrName, zeros));
    if (adam)
      firsts.push_back(
          addArgument(step, type, TrainDialect::kOptStateAttrName, zeros));
  }
  if (adam)
    for (Value p : updated)
      seconds.push_back(
          addArgument(step, cast<RankedTensorType>(p.getType()).clone(f32),
                      TrainDialect::kOptStateAttrName, zeros));
  Value stepCount;
  if (adam)
    stepCount =
        addArgument(step, RankedTensorType::get({}, IntegerType::get(ctx, 32)),
                    TrainDialect::kOptStateAttrName, zeros);
  Value lr = addArgument(step, RankedTensorType::get({}, f32),
                         TrainDialect::kLrAttrName);

  // Gradients of low-precision parameters are widened for the f32 update.
  OpBuilder b(ret);
  Location loc = ret.getLoc();
  for (size_t i = 0; i < grads.size(); ++i) {
    auto type = cast<RankedTensorType>(updated[i].getType());
    if (grads[i].getType() != type)
      grads[i] = CastOp::create(b, loc, type, grads[i]);
  }

  SmallVector<Value> newUpdated, newState;
  if (adam) {
    auto update = AdamUpdateOp::create(
        b, loc, lr, stepCount, updated, grads, firsts, seconds,
        b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
        b.getF64FloatAttr(epsilon), b.getF64FloatAttr(weightDecay),
        optimizer == "adamw" ? b.getUnitAttr() : UnitAttr());
    ResultRange r = update.getResults();
    size_t n = updated.size();
    newUpdated.assign(r.begin(), r.begin() + n);
    newState.assign(r.begin() + n, r.end());
  } else {
    bool withMomentum = optimizer == "momentum";
    auto update = SgdUpdateOp::create(
        b, loc, lr, updated, grads, buffers,
        b.getF64FloatAttr(withMomentum ? momentum : 0.0),
        b.getF64FloatAttr(weightDecay),
        withMomentum && nesterov ? b.getUnitAttr() : UnitAttr());
    ResultRange r = update.getResults();
    size_t n = updated.size();
    newUpdated.assign(r.begin(), r.begin() + n);
    newState.assign(r.begin() + n, r.end());
  }

  // Results: loss and state, parameters, masters, optimizer state.
  SmallVector<Value> results(forwardResults);
  SmallVector<Value> newMasters;
  for (auto [i, p] : llvm::enumerate(params)) {
    Value v = newUpdated[i];
    if (hasMaster[i]) {
      newMasters.push_back(v);
      v = CastOp::create(b, loc, p.getType(), v);
    }
    results.push_back(v);
  }
  results.append(newMasters);
  results.append(newState);
  func::ReturnOp::create(b, loc, results);
  ret.erase();
  step.setType(FunctionType::get(ctx, step.getArgumentTypes(),
                                 TypeRange(ValueRange(results))));
  return success();
}

void OptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<std::pair<func::FuncOp, func::FuncOp>> pairs;
  for (auto func : module.getOps<func::FuncOp>()) {
    StringRef name = func.getName();
    if (!name.ends_with("_grad"))
      continue;
    if (auto forward =
            module.lookupSymbol<func::FuncOp>(name.drop_back(strlen("_grad"))))
      pairs.emplace_back(func, forward);
  }
  if (pairs.empty()) {
    module.emitError("amp-optimizer: no gradient function (@<name>_grad); run "
                     "amp-autodiff first");
    return signalPassFailure();
  }
  for (auto [grad, forward] : pairs) {
    std::string name = pairs.size() == 1 ? std::string("train_step")
                                         : (forward.getName() + "_step").str();
    if (module.lookupSymbol(name)) {
      grad.emitError("amp-optimizer: @") << name << " already exists";
      return signalPassFailure();
    }
    if (failed(buildStep(grad, forward, name)))
      return signalPassFailure();
  }
}

} // namespace
