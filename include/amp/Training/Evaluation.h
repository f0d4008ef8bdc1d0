//===- Evaluation.h - The forward function used for evaluation --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_EVALUATION_H
#define AMP_TRAINING_EVALUATION_H

#include "amp/Execution/CompiledStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace amp {
namespace train {
class BatchNormOp;
} // namespace train

/// Rewrites a training-mode batch norm into inference mode, computed in f32:
/// y = (x - running_mean) * (scale * (running_var + eps)^-1/2) + bias, each
/// [C] tensor reshaped to [C, 1, ...] to broadcast over the channel
/// dimension, and y cast back to x's type. Its running-statistics results
/// must be unused; the op itself is left for the caller to erase.
void toInferenceBatchNorm(train::BatchNormOp bn);

/// Adds @<name>_logits: `forward` (as autocast left it) returning the
/// model's outputs, for evaluation and prediction: the results `forward`
/// marks `train.output` (in order), or else the input of its one loss op
/// (the logits of a train.cross_entropy; a train.linear_cross_entropy's
/// input times its weight). Batch norms run in inference mode
/// (normalized by the running statistics, so a test example's prediction
/// does not depend on the rest of its batch) and dropout keeps everything.
/// Same arguments as `forward`. Fails, with an error at `forward`, when it
/// marks no outputs and has not exactly one loss op.
mlir::LogicalResult addLogitsFunction(mlir::ModuleOp module,
                                      mlir::func::FuncOp forward);

/// The options of `forward`'s cross-entropy (train.cross_entropy or
/// train.linear_cross_entropy) that evaluation scores by: its ignore_index
/// and label_smoothing; none for another loss or several.
StepAbi::EvalLoss describeEvalLoss(mlir::func::FuncOp forward);

} // namespace amp

#endif // AMP_TRAINING_EVALUATION_H
