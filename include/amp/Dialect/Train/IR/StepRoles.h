//===- StepRoles.h - The arguments a step's results update ------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The role record of a training step's results, read from the `train.*`
// roles of its arguments (docs/Autodiff.md, "The step's ABI"): result 0 is
// the loss; results 1.. are the new values of the `train.state` arguments,
// the parameters, the masters and the optimizer state, each group in
// argument order; then, with dynamic loss scaling, the new scale and growth
// tracker; then found_inf (and collapsed). The compiler writes the record on
// the step (`amp.result_arguments`) before the roles are stripped for LLVM;
// the lowering updates those arguments in place and the runtimes read it.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_STEPROLES_H
#define AMP_DIALECT_TRAIN_IR_STEPROLES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace amp {
namespace train {

/// The function attribute (a `DenseI64ArrayAttr`, one entry per result of
/// the step as amp-pipeline made it) recording, for each result, the
/// argument it updates, or -1. After `amp-drop-in-place-results` an entry
/// >= 0 means that result is written into its argument's buffer and is no
/// longer among the function's results.
inline constexpr llvm::StringLiteral kResultArgumentsAttrName =
    "amp.result_arguments";

/// The arguments of a step (or a forward function) by their `train.*`
/// role, each group in argument order. An argument has one role, the first
/// of this order that it carries.
struct StepArgumentRoles {
  llvm::SmallVector<unsigned> states, params, masters, optStates, scaler;
  std::optional<unsigned> lr;
  /// The arguments without a role (a step's data: inputs, then labels).
  llvm::SmallVector<unsigned> unmarked;

  /// The arguments results 1.. are the next values of, in order: the
  /// states, parameters, masters and optimizer state (then, with dynamic
  /// loss scaling, the scale and tracker follow).
  llvm::SmallVector<unsigned> getUpdated() const;
};
StepArgumentRoles getStepArgumentRoles(mlir::func::FuncOp step);

/// For each result of `step`, the index of the argument whose next value it
/// is, or -1 (the loss, found_inf, collapsed; and every result of a
/// function that is not a training step: one without a `train.lr`
/// argument). A result whose type differs from its argument's gets -1.
llvm::SmallVector<int64_t> getStepResultArguments(mlir::func::FuncOp step);

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_STEPROLES_H
