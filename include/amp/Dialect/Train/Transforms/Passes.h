//===- Passes.h - Transformations of the train dialect ----------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H
#define AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/Transforms/PassEnums.h"

#include "mlir/Pass/Pass.h"

namespace mlir::func {
class FuncOp;
} // namespace mlir::func

namespace amp {
namespace train {

#define GEN_PASS_DECL
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

/// amp-fuse-lm-head's rewrite on one function: each cross_entropy of a
/// bias-free head's logits that only it reads becomes one
/// train.linear_cross_entropy. Returns how many did.
int64_t fuseLinearCrossEntropy(mlir::func::FuncOp func);

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H
