//===- TrainingModule.h - A model compiled to a training step ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_TRAININGMODULE_H
#define AMP_TRAINING_TRAININGMODULE_H

#include "amp/Pipelines/Pipelines.h"
#include "amp/Training/Initializers.h"
#include "amp/Training/StepAbi.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <utility>
#include <vector>

namespace amp {

/// A model after amp-pipeline, with the logits function evaluation runs and
/// what a run reads from the step's argument attributes.
struct TrainingModule {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string stepName = "train_step";
  std::string logitsName;
  StepAbi abi;
  /// The initializer of each #train.init argument, in argument order.
  std::vector<std::pair<unsigned, InitSpec>> inits;
};

/// Runs amp-pipeline with `options` on `model` (one function: the forward),
/// adds @<forward>_logits and reads the step's ABI and initializers.
/// Pipeline diagnostics go to the context's handler; the error says which
/// stage failed.
llvm::Expected<TrainingModule>
buildTrainingModule(mlir::OwningOpRef<mlir::ModuleOp> model,
                    const AmpPipelineOptions &options);

} // namespace amp

#endif // AMP_TRAINING_TRAININGMODULE_H
