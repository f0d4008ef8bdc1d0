//===- Optimizer.cpp - The amp-optimizer pass -----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainAttrNames.h"
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
    if (optimizer == OptimizerKind::none)
      return emitError(UnknownLoc::get(context),
                       "amp-optimizer: optimizer must be sgd, momentum, adam "
                       "or adamw, got 'none'");
    if (accumulate < 1)
      return emitError(UnknownLoc::get(context),
                       "amp-optimizer: accumulate must be at least 1, got " +
                           std::to_string(accumulate));
    if (clipNorm < 0.0)
      return emitError(UnknownLoc::get(context),
                       "amp-optimizer: clip-norm must not be negative");
    return success();
  }

  void runOnOperation() override;
  LogicalResult buildStep(func::FuncOp grad, func::FuncOp forward,
                          StringRef name);
};

/// Arguments added to a function while building it: block arguments at
/// once, the function type and argument attributes once, in `finish`.
/// (func.insertArgument rebuilds both each time: quadratic time and, since
/// types and attributes live as long as the context, quadratic memory: 24 GB
/// for a 10 000-layer MLP.)
class ArgumentBuilder {
public:
  explicit ArgumentBuilder(func::FuncOp func) : func(func) {
    MLIRContext *ctx = func.getContext();
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
      DictionaryAttr d = func.getArgAttrDict(i);
      attrs.push_back(d ? d : DictionaryAttr::get(ctx));
    }
  }

  unsigned size() const { return attrs.size(); }

  /// Inserts an argument of `type` at `index` with unit attribute `mark`
  /// (and an initializer).
  BlockArgument insert(unsigned index, Type type, StringRef mark,
                       Attribute init = {}) {
    MLIRContext *ctx = func.getContext();
    SmallVector<NamedAttribute> named = {
        NamedAttribute(StringAttr::get(ctx, mark), UnitAttr::get(ctx))};
    if (init)
      named.push_back(NamedAttribute(
          StringAttr::get(ctx, TrainDialect::kInitAttrName), init));
    attrs.insert(attrs.begin() + index, DictionaryAttr::get(ctx, named));
    return func.getBody().front().insertArgument(index, type, func.getLoc());
  }
  BlockArgument append(Type type, StringRef mark, Attribute init = {}) {
    return insert(size(), type, mark, init);
  }

  /// Sets the function's type (the block's argument types, `results`) and
  /// argument attributes.
  void finish(TypeRange results) {
    func.setType(FunctionType::get(
        func.getContext(), func.getBody().front().getArgumentTypes(),
        results));
    func.setAllArgAttrs(attrs);
  }

private:
  func::FuncOp func;
  SmallVector<DictionaryAttr> attrs;
};

LogicalResult OptimizerPass::buildStep(func::FuncOp grad, func::FuncOp forward,
                                       StringRef name) {
  MLIRContext *ctx = &getContext();
  auto step = cast<func::FuncOp>(grad->clone());
  step.setName(name);
  // The step is not a gradient function (amp-optimizer pairs by this).
  step->removeAttr(kGradientOfAttrName);
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
  ArgumentBuilder arguments(step);
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
        arguments.append(type.clone(f32), TrainDialect::kMasterAttrName);
    masters.push_back(master);
    updated.push_back(master);
  }
  // Optimizer state, f32, zero-initialized; accumulation state (if any) is
  // inserted before it.
  unsigned firstStateIndex = arguments.size();
  bool adam =
      optimizer == OptimizerKind::adam || optimizer == OptimizerKind::adamw;
  SmallVector<Value> buffers, firsts, seconds;
  for (Value p : updated) {
    Type type = cast<RankedTensorType>(p.getType()).clone(f32);
    if (optimizer == OptimizerKind::momentum)
      buffers.push_back(
          arguments.append(type, TrainDialect::kOptStateAttrName, zeros));
    if (adam)
      firsts.push_back(
          arguments.append(type, TrainDialect::kOptStateAttrName, zeros));
  }
  if (adam)
    for (Value p : updated)
      seconds.push_back(
          arguments.append(cast<RankedTensorType>(p.getType()).clone(f32),
                           TrainDialect::kOptStateAttrName, zeros));
  Value stepCount;
  if (adam)
    stepCount =
        arguments.append(RankedTensorType::get({}, IntegerType::get(ctx, 32)),
                         TrainDialect::kOptStateAttrName, zeros);
  // Parameter groups (train.param_group on the parameters): one learning
  // rate each, in a [G] lr argument; per-parameter weight decays
  // (train.weight_decay) in place of the option's.
  SmallVector<int64_t> lrGroups;
  SmallVector<double> weightDecays;
  bool anyDecay = false;
  int64_t numGroups = 1;
  for (BlockArgument p : params) {
    unsigned i = p.getArgNumber();
    auto group = step.getArgAttrOfType<IntegerAttr>(
        i, TrainDialect::kParamGroupAttrName);
    lrGroups.push_back(group ? group.getInt() : 0);
    numGroups = std::max(numGroups, lrGroups.back() + 1);
    auto decay = step.getArgAttrOfType<FloatAttr>(
        i, TrainDialect::kWeightDecayAttrName);
    anyDecay |= bool(decay);
    weightDecays.push_back(decay ? decay.getValueAsDouble()
                                 : weightDecay.getValue());
  }
  Value lr = arguments.append(numGroups > 1
                                  ? RankedTensorType::get({numGroups}, f32)
                                  : RankedTensorType::get({}, f32),
                              TrainDialect::kLrAttrName);

  // Gradients of low-precision parameters are widened for the f32 update.
  OpBuilder b(ret);
  Location loc = ret.getLoc();
  for (size_t i = 0; i < grads.size(); ++i) {
    auto type = cast<RankedTensorType>(updated[i].getType());
    if (grads[i].getType() != type)
      grads[i] = CastOp::create(b, loc, type, grads[i]);
  }

  // Gradient accumulation: accumulators and a micro-batch count in the
  // optimizer state; the update runs on the mean every `accumulate` calls.
  Value skip;
  SmallVector<Value> newAccumulation;
  if (accumulate > 1) {
    SmallVector<Value> accumulators;
    for (Value p : updated)
      accumulators.push_back(arguments.insert(
          firstStateIndex++, cast<RankedTensorType>(p.getType()).clone(f32),
          TrainDialect::kOptStateAttrName, zeros));
    Value count = arguments.insert(
        firstStateIndex++, RankedTensorType::get({}, IntegerType::get(ctx, 32)),
        TrainDialect::kOptStateAttrName, zeros);
    auto acc = AccumulateGradsOp::create(b, loc, count, accumulators, grads,
                                         b.getI64IntegerAttr(accumulate));
    ResultRange r = acc.getResults();
    size_t n = accumulators.size();
    newAccumulation.assign(r.begin(), r.begin() + n + 1); // accumulators, count
    skip = r[n + 1];
    grads.assign(r.begin() + n + 2, r.end());
  }
  // Clipping by global norm, in f32, on the (mean) gradients.
  if (clipNorm > 0.0) {
    auto clip =
        ClipGradNormOp::create(b, loc, grads, b.getF64FloatAttr(clipNorm));
    ResultRange clipped = clip.getResults().drop_back();
    grads.assign(clipped.begin(), clipped.end());
  }

  DenseI64ArrayAttr lrGroupsAttr =
      numGroups > 1 ? b.getDenseI64ArrayAttr(lrGroups) : nullptr;
  DenseF64ArrayAttr weightDecaysAttr =
      anyDecay ? b.getDenseF64ArrayAttr(weightDecays) : nullptr;
  SmallVector<Value> newUpdated, newState;
  if (adam) {
    auto update = AdamUpdateOp::create(
        b, loc, lr, stepCount, updated, grads, firsts, seconds, skip,
        b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
        b.getF64FloatAttr(epsilon), b.getF64FloatAttr(weightDecay),
        optimizer == OptimizerKind::adamw ? b.getUnitAttr() : UnitAttr(),
        lrGroupsAttr, weightDecaysAttr);
    ResultRange r = update.getResults();
    size_t n = updated.size();
    newUpdated.assign(r.begin(), r.begin() + n);
    newState.assign(r.begin() + n, r.end());
  } else {
    bool withMomentum = optimizer == OptimizerKind::momentum;
    auto update = SgdUpdateOp::create(
        b, loc, lr, updated, grads, buffers, skip,
        b.getF64FloatAttr(withMomentum ? momentum : 0.0),
        b.getF64FloatAttr(weightDecay),
        withMomentum && nesterov ? b.getUnitAttr() : UnitAttr(), lrGroupsAttr,
        weightDecaysAttr);
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
  results.append(newAccumulation);
  results.append(newState);
  func::ReturnOp::create(b, loc, results);
  ret.erase();
  arguments.finish(TypeRange(ValueRange(results)));
  return success();
}

void OptimizerPass::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<std::pair<func::FuncOp, func::FuncOp>> pairs;
  for (auto func : module.getOps<func::FuncOp>()) {
    auto of = func->getAttrOfType<FlatSymbolRefAttr>(kGradientOfAttrName);
    if (!of)
      continue;
    auto forward = module.lookupSymbol<func::FuncOp>(of);
    if (!forward) {
      func.emitError("amp-optimizer: @")
          << func.getName() << " is the gradient of " << of
          << ", which the module does not define";
      return signalPassFailure();
    }
    pairs.emplace_back(func, forward);
  }
  if (pairs.empty()) {
    // Say why there is nothing to train, at the function that should have
    // been the forward when there is one.
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal()) {
        func.emitError("amp-optimizer: @")
            << func.getName()
            << " is only declared; a forward function needs a body";
        return signalPassFailure();
      }
      bool hasParams = llvm::any_of(func.getArguments(), [&](BlockArgument a) {
        return func.getArgAttr(a.getArgNumber(), TrainDialect::kParamAttrName);
      });
      if (!hasParams) {
        func.emitError("amp-optimizer: @")
            << func.getName()
            << " has no train.param arguments: nothing to train";
        return signalPassFailure();
      }
    }
    module.emitError("amp-optimizer: no gradient function (@<name>_grad); run "
                     "amp-autodiff first (on a module with a forward function)");
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
