//===- PrecisionPolicy.cpp - Which precision each op runs in --------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/Transforms/PrecisionPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace amp::train;

std::optional<PrecisionCategory>
amp::train::parsePrecisionCategory(StringRef text) {
  if (text == "f32")
    return PrecisionCategory::fp32;
  return symbolizePrecisionCategory(text);
}

// The spellings are the dialect's (kDecisionReasons, which its verifier
// checks `train.decision` against), in PrecisionReason's order.
static_assert(std::size(kDecisionReasons) ==
                  size_t(PrecisionReason::UserCast) + 1,
              "one spelling per PrecisionReason");

StringRef amp::train::stringifyPrecisionReason(PrecisionReason reason) {
  return kDecisionReasons[size_t(reason)];
}

std::optional<PrecisionPolicy>
PrecisionPolicy::fromOptions(OptLevel level, StringRef policyFile,
                             MLIRContext *context, std::string &error) {
  PrecisionPolicy policy(level);
  if (policyFile.empty())
    return policy;
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(policyFile, &message);
  if (!file) {
    error = "cannot read policy file: " + message;
    return std::nullopt;
  }
  if (!policy.loadJson(file->getBuffer(), context, message)) {
    error = "policy file '" + policyFile.str() + "' " + message;
    return std::nullopt;
  }
  return policy;
}

bool PrecisionPolicy::loadJson(StringRef text, MLIRContext *context,
                               std::string &error) {
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json) {
    error = "is not valid JSON: " + llvm::toString(json.takeError());
    return false;
  }
  const llvm::json::Object *object = json->getAsObject();
  if (!object) {
    error = "must be a JSON object from categories to arrays of op names";
    return false;
  }
  for (const auto &[key, value] : *object) {
    std::optional<PrecisionCategory> category = parsePrecisionCategory(key);
    if (!category) {
      error = "unknown category '" + key.str() +
              "' (expected lower, fp32, promote or follow)";
      return false;
    }
    const llvm::json::Array *names = value.getAsArray();
    if (!names) {
      error = "category '" + key.str() + "' must map to an array of op names";
      return false;
    }
    for (const llvm::json::Value &entry : *names) {
      std::optional<StringRef> name = entry.getAsString();
      if (!name) {
        error = "entries of '" + key.str() + "' must be op-name strings";
        return false;
      }
      std::optional<RegisteredOperationName> op =
          RegisteredOperationName::lookup(*name, context);
      if (!op || !op->hasInterface<PrecisionPolicyOpInterface>()) {
        error = "'" + name->str() + "' under '" + key.str() +
                "' is not a train op with a precision policy";
        return false;
      }
      overrides[*name] = *category;
    }
  }
  return true;
}

std::string amp::train::formatDecision(const PrecisionDecision &decision) {
  return (stringifyPrecisionCategory(decision.category) + "/" +
          stringifyPrecisionReason(decision.reason))
      .str();
}

std::optional<std::pair<PrecisionCategory, PrecisionReason>>
amp::train::parseDecision(StringRef text) {
  auto [category, reason] = text.split('/');
  std::optional<PrecisionCategory> c = symbolizePrecisionCategory(category);
  const auto *r = llvm::find(kDecisionReasons, reason);
  if (!c || r == std::end(kDecisionReasons))
    return std::nullopt;
  return std::make_pair(*c,
                        PrecisionReason(r - std::begin(kDecisionReasons)));
}

llvm::DenseSet<Operation *> amp::train::findLossTail(Operation *root) {
  llvm::DenseSet<Operation *> tail;
  // The op computing a function's returned loss (its first result, rank 0)
  // is a loss too, whatever it is (a model may end in a reduction).
  root->walk([&](func::ReturnOp ret) {
    if (ret.getNumOperands() == 0)
      return;
    auto type = dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
    if (type && type.getRank() == 0 && isa<FloatType>(type.getElementType()))
      if (Operation *def = ret.getOperand(0).getDefiningOp())
        tail.insert(def);
  });
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op->hasTrait<IsLoss>() || llvm::any_of(op->getOperands(), [&](Value v) {
          Operation *def = v.getDefiningOp();
          return def && tail.contains(def);
        }))
      tail.insert(op);
  });
  return tail;
}

PrecisionDecision PrecisionPolicy::decide(PrecisionPolicyOpInterface op,
                                          bool afterModelOutput) const {
  if (auto attr =
          op->getAttrOfType<StringAttr>(TrainDialect::kPrecisionAttrName))
    if (std::optional<PrecisionCategory> c = parsePrecisionCategory(attr))
      return {*c, PrecisionReason::Attribute, true};
  auto it = overrides.find(op->getName().getStringRef());
  if (it != overrides.end())
    return {it->second, PrecisionReason::PolicyFile, true};
  switch (level) {
  case OptLevel::O0:
  case OptLevel::O1:
    return {op.getDefaultPrecision(), PrecisionReason::Default, false};
  case OptLevel::O2:
    // Apex O2: the model runs in the low type; its outputs are cast to fp32,
    // so the loss and what follows it run in fp32. Batch norm keeps its
    // parameters and statistics in fp32 (keep_batchnorm_fp32, kept by
    // autocast) and takes the activation in the type that arrives, as
    // cuDNN's batch norm does (f32 statistics inside).
    if (afterModelOutput)
      return {PrecisionCategory::fp32, PrecisionReason::OptLevel, true};
    if (op.keepsFp32AtO2())
      return {PrecisionCategory::follow, PrecisionReason::OptLevel, false};
    return {PrecisionCategory::lower, PrecisionReason::OptLevel, true};
  case OptLevel::O3:
    return {PrecisionCategory::lower, PrecisionReason::OptLevel, true};
  }
  return {op.getDefaultPrecision(), PrecisionReason::Default, false};
}

SmallVector<unsigned>
amp::train::getGovernedOperands(PrecisionPolicyOpInterface op,
                                const PrecisionDecision &decision) {
  if (!decision.allOperands)
    return op.getPrecisionOperands();
  SmallVector<unsigned> governed;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (auto type = dyn_cast<ShapedType>(operand.getType()))
      if (isa<FloatType>(type.getElementType()))
        governed.push_back(i);
  return governed;
}
