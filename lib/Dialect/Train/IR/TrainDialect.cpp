//===- TrainDialect.cpp - The train dialect -------------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainAttrNames.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace amp::train;

#include "amp/Dialect/Train/IR/TrainOpsDialect.cpp.inc"

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "amp/Dialect/Train/IR/TrainOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *TrainDialect::materializeConstant(OpBuilder &builder,
                                             Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// Where to report a problem with argument `argIndex` of region `regionIndex`:
/// the argument's own location when the region has a body, else the op's.
static Location argumentLoc(Operation *op, unsigned regionIndex,
                            unsigned argIndex) {
  Region &region = op->getRegion(regionIndex);
  if (!region.empty() && argIndex < region.getNumArguments())
    return region.getArgument(argIndex).getLoc();
  return op->getLoc();
}

LogicalResult TrainDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kAutocastAttrName) {
    auto config = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!config || !config.getAs<StringAttr>("opt_level") ||
        !config.getAs<StringAttr>("dtype"))
      return op->emitError()
             << "'" << kAutocastAttrName
             << "' must be a dictionary with string 'opt_level' and 'dtype' "
                "(what amp-autocast ran with), got "
             << attr.getValue();
    return success();
  }
  if (name == kGradientOfAttrName) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()) ||
        !isa<FunctionOpInterface>(op))
      return op->emitError()
             << "'" << kGradientOfAttrName
             << "' names the forward function of a gradient function, as "
                "@name, got "
             << attr.getValue();
    return success();
  }
  if (name == kDecisionAttrName) {
    auto value = dyn_cast<StringAttr>(attr.getValue());
    auto [category, reason] =
        value ? value.getValue().split('/') : std::make_pair("", "");
    // The model's own casts (`train.cast ... user`) carry one too.
    auto cast = dyn_cast<CastOp>(op);
    bool userCast = cast && cast.getUser();
    if ((!isa<PrecisionPolicyOpInterface>(op) && !userCast) || !value ||
        !symbolizePrecisionCategory(category) ||
        !llvm::is_contained(kDecisionReasons, reason))
      return op->emitError()
             << "'" << kDecisionAttrName
             << "' records amp-autocast's decision on a train op with a "
                "precision policy (or a user cast) as \"<category>/<reason>\" "
                "(e.g. \"lower/default\"), got "
             << attr.getValue();
    if (userCast != (reason == "user cast"))
      return op->emitError() << "'" << kDecisionAttrName
                             << "' has the reason \"user cast\" exactly on "
                                "user casts, got "
                             << attr.getValue();
    return success();
  }
  if (name == kCalibratedMagnitudeAttrName) {
    if (!isa<FloatAttr>(attr.getValue()) ||
        !op->getAttrOfType<StringAttr>(kDecisionAttrName))
      return op->emitError()
             << "'" << kCalibratedMagnitudeAttrName
             << "' is the measured magnitude (a float) of an op amp-autocast "
                "decided with a calibration (it has a '"
             << kDecisionAttrName << "'), got " << attr.getValue();
    return success();
  }
  if (name == kCheckNumericsAttrName) {
    auto fail = [&](const Twine &what) {
      return op->emitError()
             << "'" << kCheckNumericsAttrName
             << "' is amp-check-numerics' site table on a function: " << what;
    };
    auto sites = dyn_cast<ArrayAttr>(attr.getValue());
    if (!sites || !isa<FunctionOpInterface>(op))
      return fail("an array of dictionaries");
    for (auto [i, site] : llvm::enumerate(sites)) {
      auto fields = dyn_cast<DictionaryAttr>(site);
      auto kind = fields ? fields.getAs<StringAttr>("kind") : StringAttr();
      StringRef k = kind ? kind.getValue() : "";
      bool ok = k == "argument"   ? bool(fields.getAs<IntegerAttr>("argument"))
                : k == "constant" ? bool(fields.getAs<FloatAttr>("magnitude"))
                : k == "op"       ? fields.getAs<StringAttr>("op") &&
                                  fields.getAs<DenseI64ArrayAttr>("inputs") &&
                                  fields.getAs<StringAttr>("stage")
                            : false;
      if (!ok)
        return fail("entry " + Twine(i) +
                    " needs a kind (\"argument\" with its 'argument', "
                    "\"constant\" with its 'magnitude', or \"op\" with "
                    "'op', 'stage' and 'inputs')");
    }
    return success();
  }
  if (name != kPrecisionAttrName)
    return op->emitError() << "unknown train attribute '" << name
                           << "' (expected '" << kPrecisionAttrName << "')";
  if (!isa<PrecisionPolicyOpInterface>(op))
    return op->emitError() << "'" << kPrecisionAttrName
                           << "' applies to train ops with a precision policy, "
                              "not '"
                           << op->getName() << "'";
  auto value = dyn_cast<StringAttr>(attr.getValue());
  if (!value || (value.getValue() != "f32" &&
                 !symbolizePrecisionCategory(value.getValue())))
    return op->emitError() << "'" << kPrecisionAttrName
                           << "' must be \"lower\", \"fp32\" (or \"f32\"), "
                              "\"promote\" or \"follow\", got "
                           << attr.getValue();
  return success();
}

LogicalResult TrainDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name != kOutputAttrName)
    return op->emitError() << "unknown train result attribute '" << name
                           << "' (expected '" << kOutputAttrName << "')";
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'" << name << "' must be a unit attribute, got "
                           << attr.getValue();
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func)
    return op->emitError() << "'" << name << "' marks a function's result";
  // The loss comes first, then the state updates, then the outputs.
  if (resultIndex == 0)
    return op->emitError() << "'" << name
                           << "' on result #0: a forward function returns "
                              "its loss first, the model's outputs last";
  for (unsigned i = resultIndex + 1, e = func.getNumResults(); i < e; ++i)
    if (!func.getResultAttr(i, kOutputAttrName))
      return op->emitError()
             << "'" << name << "' on result #" << resultIndex
             << " but not on result #" << i
             << ": the model's outputs are the last results, after the "
                "state updates";
  return success();
}

/// True when `type` is known and is not an f32 tensor of rank `rank`.
static bool tensorTypeIsNot(Type type, int64_t rank) {
  if (!type)
    return false;
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor ? (tensor.getRank() != rank || !tensor.getElementType().isF32())
                : false;
}

LogicalResult TrainDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  Location loc = argumentLoc(op, regionIndex, argIndex);
  StringRef name = attr.getName().getValue();
  Region &region = op->getRegion(regionIndex);
  // Declarations have no block; the argument type is then unknown here.
  Type argType = !region.empty() && argIndex < region.getNumArguments()
                     ? region.getArgument(argIndex).getType()
                     : Type();
  // After bufferization a parameter is a memref, after LLVM lowering a
  // pointer: the marks stay on lowered functions and only shaped types are
  // checked.
  auto shapedType = dyn_cast_or_null<ShapedType>(argType);

  if (name == kParamAttrName || name == kStateAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return emitError(loc) << "'" << name << "' must be a unit attribute, got "
                            << attr.getValue();
    bool param = name == kParamAttrName;
    StringRef role = param ? "parameter" : "state";
    // State may also be an i32 counter (train.increment's).
    if (shapedType &&
        (!shapedType.hasStaticShape() ||
         !(isa<Float16Type, BFloat16Type, Float32Type>(
               shapedType.getElementType()) ||
           (!param && shapedType.getElementType().isSignlessInteger(32)))))
      return emitError(loc) << role << " #" << argIndex
                            << " must be a statically shaped f32, f16 or bf16 "
                            << (param ? "" : "(or i32) ") << "tensor, got "
                            << argType;
    auto func = dyn_cast<FunctionOpInterface>(op);
    StringRef other = name == kParamAttrName ? kStateAttrName : kParamAttrName;
    if (func && func.getArgAttr(argIndex, other))
      return emitError(loc) << "argument #" << argIndex
                            << " cannot be both a parameter and state";
    return success();
  }

  if (name == kOptStateAttrName || name == kMasterAttrName ||
      name == kLrAttrName || name == kScalerStateAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return emitError(loc) << "'" << name << "' must be a unit attribute, got "
                            << attr.getValue();
    if (name == kLrAttrName && tensorTypeIsNot(argType, /*rank=*/0) &&
        tensorTypeIsNot(argType, /*rank=*/1))
      return emitError(loc) << "'" << name
                            << "' marks a rank-0 f32 tensor (or a rank-1 one, "
                               "a rate per parameter group), got "
                            << argType;
    return success();
  }

  if (name == kParamGroupAttrName || name == kWeightDecayAttrName) {
    auto func = dyn_cast<FunctionOpInterface>(op);
    if (func && !func.getArgAttr(argIndex, kParamAttrName))
      return emitError(loc) << "'" << name << "' on argument #" << argIndex
                            << " needs '" << kParamAttrName
                            << "' (only parameters are in optimizer groups)";
    if (name == kParamGroupAttrName) {
      auto group = dyn_cast<IntegerAttr>(attr.getValue());
      if (!group || !group.getType().isInteger(64) || group.getInt() < 0)
        return emitError(loc) << "'" << name
                              << "' must be a non-negative i64, got "
                              << attr.getValue();
      return success();
    }
    auto decay = dyn_cast<FloatAttr>(attr.getValue());
    if (!decay || !decay.getType().isF64() || !(decay.getValueAsDouble() >= 0.0) ||
        decay.getValueAsDouble() > 1.0)
      return emitError(loc) << "'" << name
                            << "' must be an f64 in [0, 1], got "
                            << attr.getValue();
    return success();
  }

  if (name == kInitAttrName) {
    auto init = dyn_cast<InitAttr>(attr.getValue());
    if (!init)
      return emitError(loc)
             << "'" << kInitAttrName
             << "' must be a #train.init attribute, got " << attr.getValue();
    if (auto func = dyn_cast<FunctionOpInterface>(op)) {
      if (!func.getArgAttr(argIndex, kParamAttrName) &&
          !func.getArgAttr(argIndex, kStateAttrName) &&
          !func.getArgAttr(argIndex, kOptStateAttrName) &&
          !func.getArgAttr(argIndex, kScalerStateAttrName))
        return emitError(loc)
               << "'" << kInitAttrName << "' on argument #" << argIndex
               << " needs '" << kParamAttrName << "', '" << kStateAttrName
               << "' or '" << kOptStateAttrName
               << "' (only parameters and state are "
                  "initialized)";
    }
    if (init.getKind() == InitKind::seed &&
        (!shapedType || !shapedType.getElementType().isSignlessInteger(32)))
      return emitError(loc)
             << "#train.init<seed> starts an i32 counter (the step counter "
                "dropout masks are keyed by), not argument #"
             << argIndex << " of type " << argType;
    if (shapedType && shapedType.hasRank() && shapedType.hasStaticShape() &&
        failed(computeFans(init, shapedType.getShape(),
                           [&] { return emitError(loc); })))
      return failure();
    return success();
  }

  return emitError(loc) << "unknown train argument attribute '" << name
                        << "' (expected '" << kParamAttrName << "', '"
                        << kStateAttrName << "', '" << kInitAttrName << "', '"
                        << kOptStateAttrName << "', '" << kMasterAttrName
                        << "', '" << kScalerStateAttrName << "', '"
                        << kLrAttrName << "', '" << kParamGroupAttrName
                        << "' or '" << kWeightDecayAttrName << "')";
}
