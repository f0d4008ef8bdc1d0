//===- TrainDialect.h - The train dialect -----------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINDIALECT_H
#define AMP_DIALECT_TRAIN_IR_TRAINDIALECT_H

#include "mlir/IR/Dialect.h"

#include "amp/Dialect/Train/IR/TrainOpsDialect.h.inc"

#endif // AMP_DIALECT_TRAIN_IR_TRAINDIALECT_H
