//===- LossScaling.cpp - The amp-loss-scaling pass ------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <limits>

namespace amp {
namespace train {
#define GEN_PASS_DEF_LOSSSCALINGPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

struct LossScalingPass
    : public amp::train::impl::LossScalingPassBase<LossScalingPass> {
  using LossScalingPassBase::LossScalingPassBase;

  LogicalResult initialize(MLIRContext *context) override {
    auto fail = [&](const Twine &message) {
      return emitError(UnknownLoc::get(context),
                       "amp-loss-scaling: " + message);
    };
    if (mode == LossScaleMode::automatic)
      return fail("mode must be dynamic, static or none, got 'auto' (an "
                  "amp-pipeline setting)");
    if (!(initScale > 0.0) || !std::isfinite(initScale))
      return fail("init-scale must be positive and finite");
    if (!(growthFactor > 1.0))
      return fail("growth-factor must be greater than 1");
    if (!(backoffFactor > 0.0 && backoffFactor < 1.0))
      return fail("backoff-factor must be in (0, 1)");
    if (growthInterval < 1)
      return fail("growth-interval must be at least 1");
    if (hysteresis < 1)
      return fail("hysteresis must be at least 1");
    if (!(minScale >= 0.0 && maxScale > minScale))
      return fail("needs 0 <= min-scale < max-scale");
    return success();
  }

  void runOnOperation() override {
    if (mode == LossScaleMode::none)
      return;
    // Each function on its own: the pass runs on a function (amp-pipeline
    // nests it under func.func, so the pass manager runs functions in
    // parallel) or on a module's functions in turn. A training step is a
    // function with an optimizer update.
    SmallVector<FunctionOpInterface> functions;
    if (auto func = dyn_cast<FunctionOpInterface>(getOperation()))
      functions.push_back(func);
    else
      getOperation()->walk(
          [&](FunctionOpInterface func) { functions.push_back(func); });
    for (FunctionOpInterface func : functions) {
      if (func.isExternal())
        continue;
      SmallVector<OptimizerUpdateOpInterface> updates;
      func.walk([&](OptimizerUpdateOpInterface op) { updates.push_back(op); });
      if (!updates.empty() && failed(scaleStep(func, updates)))
        return signalPassFailure();
    }
  }

  LogicalResult scaleStep(FunctionOpInterface func,
                          ArrayRef<OptimizerUpdateOpInterface> updates);
};

/// Adds a scaler-state argument with initializer `init`.
Value addScalerArgument(FunctionOpInterface func, Type type, Attribute init) {
  MLIRContext *ctx = func.getContext();
  SmallVector<NamedAttribute> attrs = {
      NamedAttribute(StringAttr::get(ctx, TrainDialect::kScalerStateAttrName),
                     UnitAttr::get(ctx)),
      NamedAttribute(StringAttr::get(ctx, TrainDialect::kInitAttrName), init)};
  unsigned index = func.getNumArguments();
  if (failed(func.insertArgument(index, type, DictionaryAttr::get(ctx, attrs),
                                 func.getLoc())))
    return {};
  return func.getArgument(index);
}

/// Where unscaling goes: the gradients of the first transform on the way
/// from backward to the update that needs true values, after every one that
/// keeps them scaled; the update's own gradients when none needs them. The
/// transforms are found by walking the chain back from the update
/// (GradientTransformOpInterface), whatever they are.
FailureOr<MutableOperandRange>
findUnscalePoint(OptimizerUpdateOpInterface update, Operation *&consumer) {
  consumer = update;
  std::optional<MutableOperandRange> point;
  for (GradientTransformOpInterface transform :
       getGradientTransformChain(update)) {
    GradientScaleUse use = transform.getScaleUse();
    if (use == GradientScaleUse::unscaled && !point) {
      point = transform.getInputGradsMutable();
      consumer = transform;
    } else if (use == GradientScaleUse::scaled && point) {
      return consumer->emitError("amp-loss-scaling: '")
             << consumer->getName()
             << "' needs unscaled gradients but comes before '"
             << transform->getName()
             << "', which needs them scaled; no place to unscale";
    }
  }
  return point ? *point : update.getGradsMutable();
}

/// The order backward reaches the `n` gradients (one per train.param
/// argument, in argument order): the reverse of the order the forward first
/// uses their parameters (through autocast's casts, which sit at the top),
/// the later parameter first where one op uses two (a bias before its
/// weight). Plain reverse argument order where the count differs.
SmallVector<int64_t> backwardOrder(FunctionOpInterface func, size_t n) {
  SmallVector<int64_t> order;
  for (int64_t k = int64_t(n) - 1; k >= 0; --k)
    order.push_back(k);
  SmallVector<BlockArgument> params;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), TrainDialect::kParamAttrName))
      params.push_back(arg);
  if (params.size() != n)
    return order;
  Block &body = func.getFunctionBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = int64_t(i);
  std::function<int64_t(Value)> firstUse = [&](Value v) {
    int64_t first = std::numeric_limits<int64_t>::max();
    for (OpOperand &use : v.getUses()) {
      Operation *user = body.findAncestorOpInBlock(*use.getOwner());
      if (!user)
        continue;
      first = std::min(first, isa<CastOp>(user) ? firstUse(user->getResult(0))
                                                : position[user]);
    }
    return first;
  };
  SmallVector<int64_t> key;
  for (BlockArgument p : params)
    key.push_back(firstUse(p));
  llvm::stable_sort(order,
                    [&](int64_t a, int64_t b) { return key[a] > key[b]; });
  return order;
}

LogicalResult
LossScalingPass::scaleStep(FunctionOpInterface func,
                           ArrayRef<OptimizerUpdateOpInterface> updates) {
  MLIRContext *ctx = &getContext();
  if (updates.size() != 1)
    return func.emitError("amp-loss-scaling: @")
           << func.getName() << " has " << updates.size()
           << " optimizer updates; expected one (made by amp-optimizer)";
  OptimizerUpdateOpInterface update = updates.front();
  SmallVector<LossSeedOp> seeds;
  func.walk([&](LossSeedOp seed) { seeds.push_back(seed); });
  if (!func.getFunctionBody().getOps<UnscaleGradsOp>().empty() ||
      llvm::any_of(func.getArguments(), [&](BlockArgument arg) {
        return func.getArgAttr(arg.getArgNumber(),
                               TrainDialect::kScalerStateAttrName);
      }))
    return func.emitError("amp-loss-scaling: @")
           << func.getName() << " is already loss-scaled";
  if (seeds.empty())
    return func.emitError("amp-loss-scaling: @")
           << func.getName()
           << " has no backward seed (train.loss_seed); run amp-autodiff and "
              "amp-optimizer first";
  if (seeds.size() > 1)
    return func.emitError("amp-loss-scaling: @")
           << func.getName() << " has " << seeds.size()
           << " backward seeds (train.loss_seed); expected one";
  LossSeedOp seed = seeds.front();

  // The seed carries the scale in the loss's type, and through the casts
  // between the loss and the returned value (an f16 loss is returned as
  // f32): a loss computed in f16 (O3, or an override) cannot hold a scale
  // above 65504, which would make every step's gradients inf. O1 and O2
  // compute losses in f32.
  Value loss = func.getFunctionBody().front().getTerminator()->getOperand(0);
  auto narrowest =
      cast<FloatType>(cast<RankedTensorType>(seed.getType()).getElementType());
  auto largestOf = [](FloatType type) {
    return APFloat::getLargest(type.getFloatSemantics()).convertToDouble();
  };
  Location where = seed.getLoc();
  while (auto castOp = loss.getDefiningOp<CastOp>()) {
    loss = castOp.getInput();
    where = loss.getLoc();
    auto type = dyn_cast<FloatType>(
        cast<RankedTensorType>(loss.getType()).getElementType());
    if (type && largestOf(type) < largestOf(narrowest))
      narrowest = type;
  }
  double largest = largestOf(narrowest);
  double reachable = mode == LossScaleMode::dynamic ? maxScale.getValue()
                                                    : initScale.getValue();
  if (reachable > largest) {
    auto show = [](double v) {
      std::string text;
      llvm::raw_string_ostream(text) << llvm::format("%.17g", v);
      return text;
    };
    return emitError(where, "amp-loss-scaling: the loss is computed "
                            "in ")
           << narrowest << ", whose largest value is " << show(largest)
           << ", but the loss scale "
           << (mode == LossScaleMode::dynamic ? "can reach " : "is ")
           << show(reachable)
           << (mode == LossScaleMode::dynamic ? " (max-scale)" : "")
           << "; compute the loss in f32 (its default category at O1 and "
              "O2) or use a static scale of at most "
           << show(largest);
  }

  // The scale: a step argument (dynamic) or a constant (static).
  Type f32 = Float32Type::get(ctx);
  auto scalarF32 = RankedTensorType::get({}, f32);
  Value scale, tracker;
  OpBuilder b(ctx);
  if (mode == LossScaleMode::dynamic) {
    scale = addScalerArgument(
        func, scalarF32,
        InitAttr::get(ctx, InitKind::constant, APFloat(initScale), 0, 0));
    tracker = addScalerArgument(
        func, RankedTensorType::get({}, IntegerType::get(ctx, 32)),
        InitAttr::get(ctx, InitKind::zeros, APFloat(0.0), 0, 0));
  } else {
    b.setInsertionPointToStart(&func.getFunctionBody().front());
    scale = ConstantOp::create(
        b, func.getLoc(),
        DenseElementsAttr::get(scalarF32, b.getFloatAttr(f32, initScale)));
  }

  // The seed becomes the scale (in the loss's type).
  b.setInsertionPoint(seed);
  Value scaledSeed = scale;
  if (seed.getType() != scale.getType())
    scaledSeed = CastOp::create(b, seed.getLoc(), seed.getType(), scale);
  seed.getResult().replaceAllUsesWith(scaledSeed);
  seed->erase();

  // Unscale once: after accumulation, before clipping (findUnscalePoint).
  Operation *consumer = nullptr;
  FailureOr<MutableOperandRange> point = findUnscalePoint(update, consumer);
  if (failed(point))
    return failure();
  MutableOperandRange grads = *point;
  b.setInsertionPoint(consumer);
  Location loc = update->getLoc();
  SmallVector<Value> scaled;
  for (OpOperand &g : grads)
    scaled.push_back(g.get());
  auto unscale = UnscaleGradsOp::create(b, loc, scale, scaled);
  for (auto [i, g] : llvm::enumerate(grads))
    g.set(unscale.getResult(i));
  Value found = unscale.getResults().back();

  // The terminator, whatever the function op's return is.
  Operation *ret = func.getFunctionBody().front().getTerminator();
  SmallVector<Value> results(ret->getOperands());

  // What a skip reports, looked at before unscaling writes the gradients
  // over (CSE merges its flags with unscale_grads'): the loss, the new float
  // state (batch norm's running statistics: results 1.. in argument order),
  // then the gradients in backward's order (the last layer's first).
  // A state the step returns unchanged (a frozen parameter or buffer) keeps
  // its slot, but holds the loss there: never looked at on its own (the
  // loss comes first) and its check CSE'd with the loss's.
  // (result position, argument) of each float train.state: results 1.. are
  // the train.state arguments' new values, in argument order.
  SmallVector<std::pair<unsigned, BlockArgument>> floatStates;
  unsigned numStates = 0;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), TrainDialect::kStateAttrName)) {
      unsigned r = 1 + numStates++;
      if (r < results.size() && results[r].getType() == arg.getType() &&
          isa<FloatType>(
              cast<RankedTensorType>(arg.getType()).getElementType()))
        floatStates.push_back({r, arg});
    }
  Value loss0 = results.front();
  SmallVector<Value> forward = {loss0}, moving = {loss0};
  for (auto [r, arg] : floatStates) {
    bool unchanged = results[r] == arg;
    forward.push_back(unchanged ? loss0 : results[r]);
    if (!unchanged)
      moving.push_back(results[r]);
  }
  b.setInsertionPoint(unscale);
  Value forwardCheck;
  if (moving.size() > 1)
    forwardCheck = FirstNonfiniteOp::create(b, loc, moving, nullptr);
  SmallVector<Value> watched(forward);
  watched.append(scaled);
  SmallVector<int64_t> order;
  for (unsigned i = 0; i < forward.size(); ++i)
    order.push_back(i);
  SmallVector<int64_t> backward = backwardOrder(func, scaled.size());
  for (int64_t k : backward)
    order.push_back(int64_t(forward.size()) + k);
  auto source =
      FirstNonfiniteOp::create(b, loc, watched, b.getDenseI64ArrayAttr(order));

  // A non-finite forward never reaches the state: the running statistics
  // keep their values when the loss or one of them is inf or NaN. (When
  // only the gradients overflow they update, as PyTorch's do.)
  if (forwardCheck) {
    b.setInsertionPoint(ret);
    auto scalarI32 = RankedTensorType::get({}, b.getI32Type());
    Value none = ConstantOp::create(
        b, loc, DenseElementsAttr::get(scalarI32, b.getI32IntegerAttr(-1)));
    Value bad =
        CompareOp::create(b, loc, forwardCheck, none, ComparePredicate::ne);
    for (auto [r, arg] : floatStates)
      if (results[r] != arg)
        results[r] = SelectOp::create(b, loc, bad, arg, results[r]);
  }

  // Skip on inf/NaN (and while micro-batches are pending).
  b.setInsertionPoint(update);
  MutableOperandRange skip = update.getSkipMutable();
  Value pending = skip.empty() ? Value() : skip[0].get();
  Value skipFlag =
      pending ? AnyOp::create(b, loc, found, pending).getResult() : found;
  skip.assign(skipFlag);

  // New results: the scaler's state and flags, then what a skip reports.
  b.setInsertionPoint(ret);
  if (mode == LossScaleMode::dynamic) {
    auto next = UpdateScaleOp::create(
        b, loc, scale, tracker, found, pending, b.getF64FloatAttr(growthFactor),
        b.getF64FloatAttr(backoffFactor), b.getI64IntegerAttr(growthInterval),
        b.getF64FloatAttr(minScale), b.getF64FloatAttr(maxScale),
        b.getI64IntegerAttr(hysteresis));
    results.push_back(next.getNewScale());
    results.push_back(next.getNewTracker());
    results.push_back(found);
    results.push_back(next.getCollapsed());
  } else {
    results.push_back(found);
  }
  results.push_back(source);
  ret->setOperands(results);
  func.setFunctionTypeAttr(TypeAttr::get(FunctionType::get(
      ctx, func.getArgumentTypes(), TypeRange(ValueRange(results)))));
  return success();
}

} // namespace
