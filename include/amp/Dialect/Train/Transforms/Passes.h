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

namespace amp {
namespace train {

#define GEN_PASS_DECL
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "amp/Dialect/Train/Transforms/Passes.h.inc"

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_H
