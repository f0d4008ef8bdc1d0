//===- CheckNumerics.cpp - The amp-check-numerics pass --------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Makes a training step say where an inf or NaN was born: one
// train.check_numerics over the step's float arguments and the outputs of
// every op that can make a non-finite value from finite inputs, returned as
// the step's last result, with a table of what each entry is (the site
// table, kCheckNumericsAttrName) for the host (docs/Numerics.md).
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Locations.h"
#include "amp/Dialect/Train/IR/StepRoles.h"
#include "amp/Dialect/Train/IR/TrainAttrNames.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>
#include <limits>

namespace amp {
namespace train {
#define GEN_PASS_DEF_CHECKNUMERICSPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Ops whose float results are finite whenever their float operands are:
/// they move, pick, widen or take the maximum of values, so an inf or NaN
/// in their output was born before them. They get no entry of their own;
/// their results stand for their operands' entries.
bool passesFiniteThrough(Operation *op) {
  if (auto castOp = dyn_cast<CastOp>(op)) {
    auto from = cast<FloatType>(getElementTypeOrSelf(castOp.getInput()));
    auto to = cast<FloatType>(getElementTypeOrSelf(castOp.getType()));
    // Widening (f16/bf16 -> f32) is exact; narrowing can overflow.
    return to.getWidth() > from.getWidth() || from == to;
  }
  // (relu_grad selects its incoming gradient or 0.)
  return isa<ReshapeOp, TransposeOp, BroadcastOp, ConcatOp, SliceOp, SelectOp,
             ReluOp, ReluGradOp, MaxPool2dOp>(op);
}

/// The loss-scaling and update machinery (and everything computed from
/// it): what the step does with the gradients, not how it makes them.
bool isMachinery(Operation *op) {
  return isa<OptimizerUpdateOpInterface, UnscaleGradsOp, FirstNonfiniteOp,
             UpdateScaleOp, AnyOp, ClipGradNormOp, AccumulateGradsOp,
             IncrementOp, CheckNumericsOp>(op);
}

/// The largest magnitude of a constant's elements: NaN when one is NaN,
/// else +inf when one is an inf (train.check_numerics' convention).
std::optional<double> constantMagnitude(Operation *op) {
  DenseElementsAttr dense;
  if (auto c = dyn_cast<ConstantOp>(op))
    dense = dyn_cast<DenseElementsAttr>(c.getValue());
  else if (auto c = dyn_cast<arith::ConstantOp>(op))
    dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  double largest = 0.0;
  auto visit = [&](const APFloat &value) {
    double v = std::fabs(value.convertToDouble());
    if (std::isnan(v) || std::isnan(largest))
      largest = std::numeric_limits<double>::quiet_NaN();
    else
      largest = std::max(largest, v);
  };
  if (dense.isSplat())
    visit(dense.getSplatValue<APFloat>());
  else
    for (const APFloat &value : dense.getValues<APFloat>())
      visit(value);
  return largest;
}

struct CheckNumericsPass
    : public amp::train::impl::CheckNumericsPassBase<CheckNumericsPass> {
  using CheckNumericsPassBase::CheckNumericsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>()) {
      bool isStep = false;
      func.walk([&](OptimizerUpdateOpInterface) {
        isStep = true;
        return WalkResult::interrupt();
      });
      if (isStep)
        steps.push_back(func);
    }
    if (steps.empty()) {
      module.emitError("amp-check-numerics: no training step (a function "
                       "with an optimizer update) to check; run "
                       "amp-optimizer first");
      return signalPassFailure();
    }
    for (func::FuncOp step : steps)
      if (failed(instrument(step)))
        return signalPassFailure();
  }

  LogicalResult instrument(func::FuncOp step) {
    if (step->hasAttr(kCheckNumericsAttrName))
      return step.emitError("amp-check-numerics: @")
             << step.getName() << " is checked already; was the pass run "
             << "twice?";
    MLIRContext *ctx = step.getContext();
    Builder b(ctx);
    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    SmallVector<Attribute> sites;
    SmallVector<Value> checked;
    // The entries each float value stands for (a pass-through op's result:
    // its operands' entries).
    DenseMap<Value, SmallVector<int64_t>> entries;
    auto addSite = [&](SmallVector<NamedAttribute> fields,
                       Value runtime) -> int64_t {
      if (runtime) {
        fields.push_back(
            b.getNamedAttr("check", b.getI64IntegerAttr(checked.size())));
        checked.push_back(runtime);
      }
      sites.push_back(b.getDictionaryAttr(fields));
      return int64_t(sites.size()) - 1;
    };

    // The float arguments the forward reads: data, parameters, state.
    StepArgumentRoles roles = getStepArgumentRoles(step);
    SmallVector<unsigned> read(roles.unmarked);
    llvm::append_range(read, roles.params);
    llvm::append_range(read, roles.states);
    llvm::sort(read);
    for (unsigned i : read) {
      BlockArgument arg = step.getArgument(i);
      if (!isFloatTensor(arg) || arg.use_empty())
        continue;
      entries[arg] = {
          addSite({b.getNamedAttr("kind", b.getStringAttr("argument")),
                   b.getNamedAttr("argument", b.getI64IntegerAttr(i))},
                  arg)};
    }

    // What the machinery computes is not checked: the update ops and
    // everything that reads their results.
    DenseSet<Operation *> machinery;
    for (Operation &op : body.without_terminator()) {
      bool fromMachinery = isMachinery(&op);
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp())
          fromMachinery |= machinery.contains(def);
      if (fromMachinery)
        machinery.insert(&op);
    }

    auto inputsOf = [&](Operation *op) {
      llvm::SetVector<int64_t> inputs;
      for (Value operand : op->getOperands()) {
        auto it = entries.find(operand);
        if (it != entries.end())
          inputs.insert(it->second.begin(), it->second.end());
      }
      return inputs.takeVector();
    };

    for (Operation &op : body.without_terminator()) {
      if (machinery.contains(&op) ||
          llvm::none_of(op.getResults(), isFloatTensor))
        continue;
      if (std::optional<double> magnitude = constantMagnitude(&op)) {
        entries[op.getResult(0)] = {addSite(
            {b.getNamedAttr("kind", b.getStringAttr("constant")),
             b.getNamedAttr("magnitude", b.getF64FloatAttr(*magnitude))},
            Value())};
        continue;
      }
      if (isa<LossSeedOp>(op))
        continue;
      SmallVector<int64_t> inputs = inputsOf(&op);
      // relu_grad passes its incoming gradient on; the forward value only
      // says where.
      if (auto reluGrad = dyn_cast<ReluGradOp>(op)) {
        auto it = entries.find(reluGrad->getOperand(0));
        inputs = it == entries.end() ? SmallVector<int64_t>() : it->second;
      }
      if (passesFiniteThrough(&op)) {
        for (Value result : op.getResults())
          if (isFloatTensor(result))
            entries[result] = inputs;
        continue;
      }
      Location loc = op.getLoc();
      bool backward = amp::isBackwardLocation(loc);
      Location forward = amp::forwardLocation(loc);
      SmallVector<NamedAttribute> common = {
          b.getNamedAttr("kind", b.getStringAttr("op")),
          b.getNamedAttr("op", b.getStringAttr(op.getName().getStringRef())),
          b.getNamedAttr("stage",
                         b.getStringAttr(backward ? "backward" : "forward")),
          b.getNamedAttr("inputs", b.getDenseI64ArrayAttr(inputs))};
      std::string module = amp::modulePath(forward);
      if (!module.empty())
        common.push_back(b.getNamedAttr("module", b.getStringAttr(module)));
      // What a calibration measured for it (calibrated autocast): the
      // report says to recalibrate an op that outgrew it.
      if (auto measured =
              op.getAttrOfType<FloatAttr>(kCalibratedMagnitudeAttrName);
          measured && !backward)
        common.push_back(b.getNamedAttr("calibrated", measured));
      if (auto file = forward->findInstanceOf<FileLineColLoc>()) {
        common.push_back(b.getNamedAttr("file", file.getFilename()));
        common.push_back(
            b.getNamedAttr("line", b.getI64IntegerAttr(file.getLine())));
      }
      unsigned floats = llvm::count_if(op.getResults(), isFloatTensor);
      for (OpResult result : op.getResults()) {
        if (!isFloatTensor(result))
          continue;
        SmallVector<NamedAttribute> fields(common);
        if (floats > 1)
          fields.push_back(b.getNamedAttr(
              "result", b.getI64IntegerAttr(result.getResultNumber())));
        entries[result] = {addSite(fields, result)};
      }
    }

    if (checked.empty())
      return step.emitError("amp-check-numerics: @")
             << step.getName() << " has no float value to check";
    OpBuilder builder(ret);
    Value magnitudes =
        CheckNumericsOp::create(builder, step.getLoc(), checked,
                                smallestMagnitudes ? builder.getUnitAttr()
                                                   : UnitAttr())
            .getResult();
    SmallVector<Value> results(ret.getOperands());
    results.push_back(magnitudes);
    func::ReturnOp::create(builder, ret.getLoc(), results);
    ret.erase();
    // The result attributes keep their places; the new result has none.
    ArrayAttr resultAttrs = step.getResAttrsAttr();
    step.setType(FunctionType::get(ctx, step.getArgumentTypes(),
                                   TypeRange(ValueRange(results))));
    if (resultAttrs) {
      SmallVector<Attribute> extended(resultAttrs.begin(), resultAttrs.end());
      extended.push_back(b.getDictionaryAttr({}));
      step.setResAttrsAttr(b.getArrayAttr(extended));
    }
    step->setAttr(kCheckNumericsAttrName, b.getArrayAttr(sites));
    return success();
  }
};

} // namespace
