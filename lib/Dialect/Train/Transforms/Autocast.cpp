//===- Autocast.cpp - The amp-autocast pass -------------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Walks each function's train ops in order (producers before users), decides
// each op's compute type from its precision category, casts the operands that
// differ (one cached cast per value and type, placed after the definition),
// and re-infers the op's result types. Values whose type changed are cast back
// where a non-train op uses them.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/Locations.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Dialect/Train/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <tuple>

namespace amp {
namespace train {
#define GEN_PASS_DEF_AUTOCASTPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

/// The element type of a float tensor value, or null.
FloatType floatElementType(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type ? dyn_cast<FloatType>(type.getElementType()) : FloatType();
}

/// The wider of two float types: f32 wins; f16 and bf16 together give f32
/// (neither holds the other's values).
FloatType widest(FloatType a, FloatType b) {
  if (!a || a == b)
    return b;
  if (!b)
    return a;
  if (a.getWidth() != b.getWidth() || a.getWidth() == 16)
    return Float32Type::get(a.getContext());
  return a;
}

/// One cast per (value, type) in a function, right after the definition.
class CastCache {
public:
  Value get(Value value, Type elementType) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getElementType() == elementType)
      return value;
    auto target = type.clone(elementType);
    auto key = std::make_pair(value, Type(target));
    auto it = casts.find(key);
    if (it != casts.end())
      return it->second;
    OpBuilder b(value.getContext());
    if (auto arg = dyn_cast<BlockArgument>(value))
      b.setInsertionPointToStart(arg.getOwner());
    else
      b.setInsertionPointAfterValue(value);
    Value result = CastOp::create(b, value.getLoc(), target, value);
    casts[key] = result;
    return result;
  }

private:
  DenseMap<std::pair<Value, Type>, Value> casts;
};

/// A calibration (amp.calibrate's JSON): the largest magnitude measured for
/// each op instance of the forward, at O0 over a few batches, keyed by the
/// op's module path, its name and its index among the ops of that name in
/// that module (program order).
struct Calibration {
  struct Entry {
    double output = 0.0, inputs = 0.0;
    std::string file;
    int64_t line = 0;
    /// Not finite already in f32 (an attention mask's -inf): its range
    /// decides nothing.
    bool nonfinite = false;
    /// Its place in the file (program order).
    size_t order = 0;
    bool used = false;
  };
  using Key = std::tuple<std::string, std::string, int64_t>;
  std::map<Key, Entry> entries;

  /// Reads `path`; on error returns nullopt and sets `error`.
  static std::optional<Calibration> load(StringRef path, std::string &error) {
    std::string message;
    std::unique_ptr<llvm::MemoryBuffer> file = openInputFile(path, &message);
    if (!file) {
      error = "cannot read the calibration '" + path.str() + "': " + message;
      return std::nullopt;
    }
    auto bad = [&](const Twine &what) {
      error = ("the calibration '" + path + "' " + what).str();
      return std::nullopt;
    };
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse(file->getBuffer());
    if (!json)
      return bad("is not JSON: " + llvm::toString(json.takeError()));
    const llvm::json::Object *root = json->getAsObject();
    std::optional<StringRef> format =
        root ? root->getString("format") : std::nullopt;
    if (!format || *format != "amp-calibration-1")
      return bad("is not an amp calibration (its \"format\" is not "
                 "\"amp-calibration-1\")");
    const llvm::json::Array *ops = root->getArray("ops");
    if (!ops)
      return bad("has no \"ops\" list");
    Calibration calibration;
    for (auto [i, value] : llvm::enumerate(*ops)) {
      const llvm::json::Object *op = value.getAsObject();
      std::optional<StringRef> module =
          op ? op->getString("module") : std::nullopt;
      std::optional<StringRef> name = op ? op->getString("op") : std::nullopt;
      std::optional<int64_t> index =
          op ? op->getInteger("index") : std::nullopt;
      std::optional<double> output =
          op ? op->getNumber("output") : std::nullopt;
      if (!module || !name || !index || !output)
        return bad("entry " + Twine(i) +
                   " needs \"module\", \"op\", \"index\" and \"output\"");
      Entry entry;
      entry.output = *output;
      entry.inputs = op->getNumber("inputs").value_or(0.0);
      entry.file = op->getString("file").value_or("").str();
      entry.line = op->getInteger("line").value_or(0);
      entry.nonfinite = op->getBoolean("nonfinite").value_or(false);
      entry.order = i;
      calibration.entries[{module->str(), name->str(), *index}] = entry;
    }
    return calibration;
  }
};

struct AutocastPass : public amp::train::impl::AutocastPassBase<AutocastPass> {
  using AutocastPassBase::AutocastPassBase;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  LogicalResult autocastFunction(func::FuncOp func);
  void updateCallSites();
  LogicalResult autocastOp(PrecisionPolicyOpInterface op, bool afterModelOutput,
                           CastCache &casts, DenseMap<Value, Type> &original,
                           std::optional<double> calibrated, double magnitude);
  /// With a calibration, the magnitude that keeps `op` in fp32 (its entry
  /// `index` among its module's ops of its name), or nullopt.
  std::optional<double> calibratedMagnitude(PrecisionPolicyOpInterface op,
                                            int64_t index,
                                            double &measuredMagnitude);

  std::optional<PrecisionPolicy> policy;
  std::optional<Calibration> measured;
  FloatType low;
};

LogicalResult AutocastPass::initialize(MLIRContext *context) {
  // Bad options are one diagnostic naming the option, before any IR changes.
  auto fail = [&](const Twine &message) {
    return emitError(UnknownLoc::get(context), "amp-autocast: " + message);
  };
  low = dtype == LowType::bf16 ? FloatType(BFloat16Type::get(context))
                               : FloatType(Float16Type::get(context));
  std::string error;
  policy = PrecisionPolicy::fromOptions(optLevel, policyFile, context, error);
  if (!policy)
    return fail(error);
  if (!(calibrationMargin >= 1.0) || !std::isfinite(calibrationMargin))
    return fail("calibration-margin must be at least 1");
  if (!calibration.empty()) {
    measured = Calibration::load(calibration, error);
    if (!measured)
      return fail(error);
  }
  return success();
}

std::optional<double>
AutocastPass::calibratedMagnitude(PrecisionPolicyOpInterface op, int64_t index,
                                  double &measuredMagnitude) {
  measuredMagnitude = -1.0;
  if (!measured)
    return std::nullopt;
  auto it = measured->entries.find({amp::modulePath(op->getLoc()),
                                    op->getName().getStringRef().str(), index});
  if (it == measured->entries.end())
    return std::nullopt;
  it->second.used = true;
  if (it->second.nonfinite)
    return std::nullopt;
  // Its inputs count too: a `lower` op would take them in the low type
  // (an f32 producer feeding a GEMM whose input would overflow keeps the
  // GEMM in f32); the others compute in f32 from such an input anyway.
  double magnitude = std::max(it->second.output, it->second.inputs);
  measuredMagnitude = magnitude;
  double largest =
      llvm::APFloat::getLargest(low.getFloatSemantics()).convertToDouble();
  if (std::isnan(magnitude) || magnitude * calibrationMargin > largest)
    return magnitude;
  return std::nullopt;
}

void AutocastPass::runOnOperation() {
  // The configuration, for amp-precision-report and later readers.
  Builder b(&getContext());
  SmallVector<NamedAttribute> config = {
      b.getNamedAttr("dtype", b.getStringAttr(stringifyLowType(dtype))),
      b.getNamedAttr("opt_level",
                     b.getStringAttr(stringifyOptLevel(optLevel)))};
  if (!policyFile.empty())
    config.push_back(b.getNamedAttr("policy", b.getStringAttr(policyFile)));
  if (!calibration.empty())
    config.push_back(
        b.getNamedAttr("calibration", b.getStringAttr(calibration)));
  getOperation()->setAttr(kAutocastAttrName, b.getDictionaryAttr(config));
  if (policy->getOptLevel() == OptLevel::O0)
    return;
  if (measured)
    for (auto &entry : measured->entries)
      entry.second.used = false;
  for (auto func : getOperation().getOps<func::FuncOp>())
    if (!func.isExternal() && failed(autocastFunction(func)))
      return signalPassFailure();
  updateCallSites();
  // Every entry of the calibration names an op of this model (of a kind
  // autocast decides): one that does not is a calibration of another model.
  // The first such entry in the file's (program) order is named.
  const Calibration::Key *missing = nullptr;
  if (measured)
    for (auto &[key, entry] : measured->entries) {
      std::optional<RegisteredOperationName> registered =
          RegisteredOperationName::lookup(std::get<1>(key), &getContext());
      if (entry.used || !registered ||
          !registered->hasInterface<PrecisionPolicyOpInterface>())
        continue;
      if (!missing || entry.order < measured->entries[*missing].order)
        missing = &key;
    }
  if (missing) {
    auto &[module, name, index] = *missing;
    const Calibration::Entry &entry = measured->entries[*missing];
    emitError(getOperation().getLoc())
        << "amp-autocast: the calibration '" << calibration << "' measured "
        << name << " #" << index << " of "
        << (module.empty() ? "the top level" : "module " + module)
        << (entry.file.empty()
                ? std::string()
                : " (" + entry.file + ":" + std::to_string(entry.line) + ")")
        << ", which this model does not have: is it a calibration of "
           "another model? (amp.calibrate this one)";
    return signalPassFailure();
  }
}

void AutocastPass::updateCallSites() {
  // O2/O3 store a function's parameters (O3: its state) in the low type;
  // callers keep passing what they pass and get back what they got: a cast
  // on each operand and result whose type changed.
  SymbolTable symbols(getOperation());
  getOperation().walk([&](func::CallOp call) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee)
      return;
    FunctionType type = callee.getFunctionType();
    OpBuilder b(call);
    for (auto [operand, argType] :
         llvm::zip(call->getOpOperands(), type.getInputs()))
      if (operand.get().getType() != argType)
        operand.set(CastOp::create(b, call.getLoc(), argType, operand.get()));
    b.setInsertionPointAfter(call);
    for (auto [result, resultType] :
         llvm::zip(call->getResults(), type.getResults())) {
      Type old = result.getType();
      if (old == resultType)
        continue;
      result.setType(resultType);
      Value back = CastOp::create(b, call.getLoc(), old, result);
      result.replaceAllUsesExcept(back, back.getDefiningOp());
    }
  });
  // A call's result a caller returns as its own low-precision result (O3
  // state) arrives through the cast back: each return gives its function's
  // result types.
  getOperation().walk([&](func::ReturnOp ret) {
    auto func = ret->getParentOfType<func::FuncOp>();
    if (!func)
      return;
    OpBuilder b(ret);
    for (auto [operand, type] :
         llvm::zip(ret->getOpOperands(), func.getResultTypes()))
      if (operand.get().getType() != type &&
          isa<RankedTensorType>(operand.get().getType()))
        operand.set(CastOp::create(b, ret.getLoc(), type, operand.get()));
  });
}

LogicalResult AutocastPass::autocastOp(PrecisionPolicyOpInterface op,
                                       bool afterModelOutput, CastCache &casts,
                                       DenseMap<Value, Type> &original,
                                       std::optional<double> calibrated,
                                       double magnitude) {
  PrecisionDecision decision = policy->decide(op, afterModelOutput);
  // A measured range that does not fit the low type overrides the lists
  // and the policy file; an attribute on the op still wins.
  if (calibrated && decision.reason < PrecisionReason::Attribute)
    decision = {PrecisionCategory::fp32, PrecisionReason::Calibrated, true};
  else
    calibrated.reset();
  SmallVector<unsigned> governed = getGovernedOperands(op, decision);
  if (governed.empty())
    return success();
  op->setAttr(kDecisionAttrName,
              StringAttr::get(op->getContext(), formatDecision(decision)));
  // Every op the calibration measured carries its magnitude (what it
  // decided for the ops kept in fp32; for the others, what
  // check-numerics' report compares against when one later overflows).
  if (magnitude >= 0.0)
    op->setAttr(kCalibratedMagnitudeAttrName,
                FloatAttr::get(Float64Type::get(op->getContext()), magnitude));

  // The compute type of the op.
  FloatType target;
  switch (decision.category) {
  case PrecisionCategory::lower:
    target = low;
    break;
  case PrecisionCategory::fp32:
    target = Float32Type::get(op->getContext());
    break;
  case PrecisionCategory::promote:
  case PrecisionCategory::follow: {
    // The widest non-scalar operand decides; rank-0 operands (scalars) only
    // when every operand is one.
    FloatType tensors, scalars;
    for (unsigned i : governed) {
      Value v = op->getOperand(i);
      if (cast<RankedTensorType>(v.getType()).getRank() == 0)
        scalars = widest(scalars, floatElementType(v));
      else
        tensors = widest(tensors, floatElementType(v));
    }
    target = tensors ? tensors : scalars;
    break;
  }
  }

  for (unsigned i : governed) {
    Value v = op->getOperand(i);
    if (floatElementType(v) != target)
      op->setOperand(i, casts.get(v, target));
  }
  // Low-precision contractions state their f32 accumulator in the IR (the
  // CUBLAS_COMPUTE_32F the CUDA backend emits); an accumulator narrower than
  // a wider compute type (an f16 contraction moved to fp32) is dropped, so
  // the op accumulates in its operand type again.
  if (target == low) {
    op.setAccumulatorType(Float32Type::get(op->getContext()));
  } else if (auto acc =
                 dyn_cast_or_null<FloatType>(op.getAccumulatorOverride());
             acc && acc.getWidth() < target.getWidth()) {
    op.setAccumulatorType(Type());
  }

  // Result types follow the new operand types: inferred where the op can
  // infer them; otherwise (reshape, broadcast, slice: explicit result types)
  // each float result keeps its shape and takes the compute type.
  SmallVector<Type> types;
  if (auto infer = dyn_cast<InferTypeOpInterface>(op.getOperation())) {
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return op->emitOpError("autocast could not infer the result types");
  } else {
    for (Value result : op->getResults()) {
      auto type = cast<RankedTensorType>(result.getType());
      types.push_back(isa<FloatType>(type.getElementType()) ? type.clone(target)
                                                            : Type(type));
    }
  }
  for (auto [result, type] : llvm::zip(op->getResults(), types)) {
    if (result.getType() == type)
      continue;
    original.try_emplace(result, result.getType());
    result.setType(type);
  }
  // Never leave invalid IR behind: an op its verifier rejects in the new
  // types is an error at the op, not a crash or a miscompile later.
  if (failed(mlir::verify(op, /*verifyRecursively=*/false)))
    return op->emitOpError("cannot compute in ")
           << target << " (decided by autocast); override its precision "
           << "with a train.precision attribute or the policy file";
  return success();
}

LogicalResult AutocastPass::autocastFunction(func::FuncOp func) {
  CastCache casts;
  DenseMap<Value, Type> original;

  // O2 and O3 store parameters in the low type (O2 keeps the parameters of
  // ops that stay fp32, batch norm's, in f32); O3 stores state (running
  // statistics) in the low type too, as Apex's model.half() does.
  if (policy->getOptLevel() >= OptLevel::O2) {
    bool o3 = policy->getOptLevel() == OptLevel::O3;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (!func.getArgAttr(i, TrainDialect::kParamAttrName) &&
          !(o3 && func.getArgAttr(i, TrainDialect::kStateAttrName)))
        continue;
      bool keep = policy->getOptLevel() == OptLevel::O2 &&
                  llvm::any_of(arg.getUsers(), [](Operation *user) {
                    auto op = dyn_cast<PrecisionPolicyOpInterface>(user);
                    return op && op.keepsFp32AtO2();
                  });
      auto type = cast<RankedTensorType>(arg.getType());
      if (keep || type.getElementType() == low)
        continue;
      original.try_emplace(arg, type);
      arg.setType(type.clone(low));
    }
    func.setType(FunctionType::get(func.getContext(),
                                   func.getBody().getArgumentTypes(),
                                   func.getResultTypes()));
  }

  // Producers before users: collect first, since casts are inserted as we go.
  SmallVector<PrecisionPolicyOpInterface> ops;
  func.walk<WalkOrder::PreOrder>(
      [&](PrecisionPolicyOpInterface op) { ops.push_back(op); });
  llvm::DenseSet<Operation *> lossTail = findLossTail(func);
  // Each op's index among its module's ops of its name (a calibration's key).
  std::map<std::pair<std::string, std::string>, int64_t> seen;
  for (PrecisionPolicyOpInterface op : ops) {
    int64_t index = seen[{amp::modulePath(op->getLoc()),
                          op->getName().getStringRef().str()}]++;
    double magnitude = -1.0;
    std::optional<double> calibrated =
        calibratedMagnitude(op, index, magnitude);
    if (failed(autocastOp(op, lossTail.contains(op), casts, original,
                          calibrated, magnitude)))
      return failure();
  }
  // The model's own casts keep their type (their users saw it above); the
  // report names them: fp32 for `x.float()`, lower for `x.half()`.
  func.walk([&](CastOp cast) {
    if (!cast.getUser())
      return;
    PrecisionCategory category =
        isa<Float32Type>(cast.getType().getElementType())
            ? PrecisionCategory::fp32
            : PrecisionCategory::lower;
    cast->setAttr(kDecisionAttrName,
                  StringAttr::get(cast->getContext(),
                                  formatDecision({category,
                                                  PrecisionReason::UserCast,
                                                  true})));
  });

  // At O3 state is stored in the low type, so the new state a forward
  // function returns (result 1 + k for the k-th state argument) is too.
  DenseSet<OpOperand *> keepLow;
  if (policy->getOptLevel() == OptLevel::O3) {
    SmallVector<Type> results(func.getResultTypes());
    unsigned k = 0;
    for (BlockArgument arg : func.getArguments()) {
      if (!func.getArgAttr(arg.getArgNumber(), TrainDialect::kStateAttrName))
        continue;
      unsigned r = 1 + k++;
      if (r >= results.size() || arg.getType() == results[r])
        continue;
      results[r] = arg.getType();
      func.walk([&](func::ReturnOp ret) {
        if (r < ret.getNumOperands() &&
            ret.getOperand(r).getType() == results[r])
          keepLow.insert(&ret->getOpOperand(r));
      });
    }
    func.setType(
        FunctionType::get(func.getContext(), func.getArgumentTypes(), results));
  }

  // Non-train users keep seeing the types they were written against.
  for (auto [value, type] : original) {
    for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
      Operation *user = use.getOwner();
      if (isa<PrecisionPolicyOpInterface, CastOp>(user) ||
          keepLow.contains(&use))
        continue;
      use.set(casts.get(value, cast<RankedTensorType>(type).getElementType()));
    }
  }
  return success();
}

} // namespace
