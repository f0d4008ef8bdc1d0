//===- TrainingModule.h - A model compiled to a training step ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_TRAININGMODULE_H
#define AMP_TRAINING_TRAININGMODULE_H

#include "amp/Execution/Artifact.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Training/Initializers.h"
#include "amp/Training/StepAbi.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <utility>
#include <vector>

namespace llvm {
class SourceMgr;
} // namespace llvm

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

  /// The artifact manifest of this step, compiled from `modelPath` with
  /// `options` (function types and backend are filled by compileArtifact).
  ArtifactManifest getManifest(llvm::StringRef modelPath,
                               const AmpPipelineOptions &options) const;
};

/// Runs amp-pipeline with `options` on `model` (one function: the forward),
/// adds @<forward>_logits and reads the step's ABI and initializers.
/// Pipeline diagnostics go to the context's handler; the error says which
/// stage failed.
llvm::Expected<TrainingModule>
buildTrainingModule(mlir::OwningOpRef<mlir::ModuleOp> model,
                    const AmpPipelineOptions &options);

/// Checks what the pipeline cannot: every argument of the model after its
/// data (inputs, labels) is a parameter or state, and every parameter has an
/// initializer. The error starts with the argument's file:line:col and says
/// the fix.
llvm::Error checkModelArguments(mlir::ModuleOp model);

/// Parses the model at `path` (diagnostics go to `sourceMgr`'s handler on
/// the context). Errors: the file cannot be opened or does not parse.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
parseModelFile(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
               llvm::StringRef path);

/// checkModelArguments, then buildTrainingModule of `model` (read from
/// `path`). Errors: the arguments, or the pipeline fails ("PATH: ...").
llvm::Expected<TrainingModule>
buildCheckedTrainingModule(mlir::OwningOpRef<mlir::ModuleOp> model,
                           llvm::StringRef path,
                           const AmpPipelineOptions &options);

/// Parses the model at `path` (diagnostics go to `sourceMgr`'s handler on
/// the context) and builds its training module. Errors: the file cannot be
/// opened, does not parse, or the pipeline fails ("PATH: ...").
llvm::Expected<TrainingModule>
loadTrainingModule(mlir::MLIRContext &context, llvm::SourceMgr &sourceMgr,
                   llvm::StringRef path, const AmpPipelineOptions &options);

} // namespace amp

#endif // AMP_TRAINING_TRAININGMODULE_H
