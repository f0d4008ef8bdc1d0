//===- StepRoles.cpp - The arguments a step's results update -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/StepRoles.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"

using namespace mlir;

SmallVector<int64_t> amp::train::getStepResultArguments(func::FuncOp step) {
  SmallVector<int64_t> routes(step.getNumResults(), -1);
  // In the order of the results after the loss: train.state, parameters,
  // masters, optimizer state (readStepAbi's order), then the scaler's.
  SmallVector<unsigned> states, params, masters, optStates, scaler;
  bool isStep = false;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    auto has = [&](StringRef name) { return bool(step.getArgAttr(i, name)); };
    if (has(TrainDialect::kStateAttrName))
      states.push_back(i);
    else if (has(TrainDialect::kParamAttrName))
      params.push_back(i);
    else if (has(TrainDialect::kMasterAttrName))
      masters.push_back(i);
    else if (has(TrainDialect::kOptStateAttrName))
      optStates.push_back(i);
    else if (has(TrainDialect::kScalerStateAttrName))
      scaler.push_back(i);
    else if (has(TrainDialect::kLrAttrName))
      isStep = true;
  }
  if (!isStep)
    return routes;
  SmallVector<unsigned> order;
  llvm::append_range(order, states);
  llvm::append_range(order, params);
  llvm::append_range(order, masters);
  llvm::append_range(order, optStates);
  if (scaler.size() == 2)
    llvm::append_range(order, scaler);
  ArrayRef<Type> results = step.getResultTypes();
  for (auto [k, i] : llvm::enumerate(order)) {
    size_t r = 1 + k;
    if (r < results.size() && results[r] == step.getArgumentTypes()[i])
      routes[r] = i;
  }
  return routes;
}
