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

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Dialect/Train/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

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

struct AutocastPass : public amp::train::impl::AutocastPassBase<AutocastPass> {
  using AutocastPassBase::AutocastPassBase;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  LogicalResult autocastFunction(func::FuncOp func);
  LogicalResult autocastOp(PrecisionPolicyOpInterface op, bool afterModelOutput,
                           CastCache &casts, DenseMap<Value, Type> &original);

  std::optional<PrecisionPolicy> policy;
  FloatType low;
};

LogicalResult AutocastPass::initialize(MLIRContext *context) {
  // Bad options are one diagnostic naming the option, before any IR changes.
  auto fail = [&](const Twine &message) {
    return emitError(UnknownLoc::get(context), "amp-autocast: " + message);
  };
  if (dtype == "f16")
    low = Float16Type::get(context);
  else if (dtype == "bf16")
    low = BFloat16Type::get(context);
  else
    return fail("dtype must be f16 or bf16, got '" + dtype + "'");
  std::string error;
  policy = PrecisionPolicy::fromOptions(optLevel, policyFile, context, error);
  if (!policy)
    return fail(error);
  return success();
}

void AutocastPass::runOnOperation() {
  if (policy->getOptLevel() == OptLevel::O0)
    return;
  for (auto func : getOperation().getOps<func::FuncOp>())
    if (!func.isExternal() && failed(autocastFunction(func)))
      return signalPassFailure();
}

LogicalResult AutocastPass::autocastOp(PrecisionPolicyOpInterface op,
                                       bool afterModelOutput, CastCache &casts,
                                       DenseMap<Value, Type> &original) {
  PrecisionDecision decision = policy->decide(op, afterModelOutput);
  SmallVector<unsigned> governed = getGovernedOperands(op, decision);
  if (governed.empty())
    return success();

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
  // CUBLAS_COMPUTE_32F the CUDA backend emits).
  if (target == low)
    op.setAccumulatorType(Float32Type::get(op->getContext()));

  // Result types follow the new operand types.
  auto setResultTypes = [&](TypeRange types) {
    for (auto [result, type] : llvm::zip(op->getResults(), types)) {
      if (result.getType() == type)
        continue;
      original.try_emplace(result, result.getType());
      result.setType(type);
    }
  };
  if (auto infer = dyn_cast<InferTypeOpInterface>(op.getOperation())) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return op->emitOpError("autocast could not infer the result types");
    setResultTypes(types);
  } else {
    // Ops with explicit result types (reshape, broadcast) keep their shape and
    // take their input's element type.
    SmallVector<Type> types;
    for (Value result : op->getResults())
      types.push_back(
          cast<RankedTensorType>(result.getType())
              .clone(cast<RankedTensorType>(op->getOperand(0).getType())
                         .getElementType()));
    setResultTypes(types);
  }
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
  for (PrecisionPolicyOpInterface op : ops)
    if (failed(autocastOp(op, lossTail.contains(op), casts, original)))
      return failure();

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
