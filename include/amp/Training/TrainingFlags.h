//===- TrainingFlags.h - Command-line flags of a training run ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The flags amp-run and amp-train share (--lr, --epochs, --dataset, --save,
// ...), registered by linking AMPTrainingFlags: only tools link it.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_TRAININGFLAGS_H
#define AMP_TRAINING_TRAININGFLAGS_H

#include "amp/Training/Trainer.h"

#include "llvm/Support/CommandLine.h"

namespace amp {

/// The category the training flags are in (for cl::HideUnrelatedOptions).
llvm::cl::OptionCategory &getTrainingFlagsCategory();

/// The parsed flags as a configuration of `tool`; the compile-side fields
/// (model, opt level, dtype, optimizer, backend) are left for the tool.
TrainingConfig readTrainingFlags(llvm::StringRef tool);

} // namespace amp

#endif // AMP_TRAINING_TRAININGFLAGS_H
