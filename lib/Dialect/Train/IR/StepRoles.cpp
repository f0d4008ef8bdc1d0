//===- StepRoles.cpp - The arguments a step's results update -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/StepRoles.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"

using namespace mlir;

amp::train::StepArgumentRoles
amp::train::getStepArgumentRoles(func::FuncOp step) {
  StepArgumentRoles roles;
  for (unsigned i = 0, e = step.getNumArguments(); i < e; ++i) {
    auto has = [&](StringRef name) { return bool(step.getArgAttr(i, name)); };
    if (has(TrainDialect::kStateAttrName))
      roles.states.push_back(i);
    else if (has(TrainDialect::kParamAttrName))
      roles.params.push_back(i);
    else if (has(TrainDialect::kMasterAttrName))
      roles.masters.push_back(i);
    else if (has(TrainDialect::kOptStateAttrName))
      roles.optStates.push_back(i);
    else if (has(TrainDialect::kLrAttrName))
      roles.lr = i;
    else if (has(TrainDialect::kScalerStateAttrName))
      roles.scaler.push_back(i);
    else
      roles.unmarked.push_back(i);
  }
  return roles;
}

SmallVector<unsigned> amp::train::StepArgumentRoles::getUpdated() const {
  SmallVector<unsigned> order;
  llvm::append_range(order, states);
  llvm::append_range(order, params);
  llvm::append_range(order, masters);
  llvm::append_range(order, optStates);
  return order;
}

SmallVector<int64_t> amp::train::getStepResultArguments(func::FuncOp step) {
  SmallVector<int64_t> routes(step.getNumResults(), -1);
  StepArgumentRoles roles = getStepArgumentRoles(step);
  if (!roles.lr)
    return routes;
  SmallVector<unsigned> order = roles.getUpdated();
  if (roles.scaler.size() == 2)
    llvm::append_range(order, roles.scaler);
  ArrayRef<Type> results = step.getResultTypes();
  for (auto [k, i] : llvm::enumerate(order)) {
    size_t r = 1 + k;
    if (r < results.size() && results[r] == step.getArgumentTypes()[i])
      routes[r] = i;
  }
  return routes;
}
