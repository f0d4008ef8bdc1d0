//===- StepAbi.h - Argument roles of a compiled training step ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_STEPABI_H
#define AMP_TRAINING_STEPABI_H

#include "amp/Execution/CompiledStep.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <utility>

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace amp {


/// Reads the ABI of `step`; errors on an argument without a role, a missing
/// learning rate or an unexpected number of results.
llvm::Expected<StepAbi> readStepAbi(mlir::func::FuncOp step);

} // namespace amp

#endif // AMP_TRAINING_STEPABI_H
