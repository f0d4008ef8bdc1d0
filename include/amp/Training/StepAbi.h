//===- StepAbi.h - Argument roles of a compiled training step ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_STEPABI_H
#define AMP_TRAINING_STEPABI_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace amp {

/// The roles of @train_step's arguments, read from their train.* attributes
/// (docs/Autodiff.md describes the ABI). Results: the loss, then the new
/// value of each `state` argument in that order, then (dynamic loss scaling)
/// the new scale and tracker, then found_inf and collapsed (static scaling:
/// found_inf only).
struct StepAbi {
  unsigned input = 0, labels = 1;
  /// Arguments updated by results 1.. in order: train.state, parameters,
  /// masters, optimizer state.
  llvm::SmallVector<unsigned> state;
  llvm::SmallVector<unsigned> params;  // train.param
  llvm::SmallVector<unsigned> masters; // train.master, in parameter order
  std::optional<unsigned> lr;
  llvm::SmallVector<unsigned> scaler; // scale, tracker
  unsigned numResults = 0;
  /// Checkpoint names of the arguments that persist across steps.
  llvm::SmallVector<std::pair<std::string, unsigned>> persistent;
};

/// Reads the ABI of `step`; errors on an argument without a role, a missing
/// learning rate or an unexpected number of results.
llvm::Expected<StepAbi> readStepAbi(mlir::func::FuncOp step);

} // namespace amp

#endif // AMP_TRAINING_STEPABI_H
