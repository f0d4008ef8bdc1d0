//===- TrainOps.td - Ops of the train dialect --------------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The ops are grouped by role, one file per family; this file includes them all
// so that one TableGen invocation generates the op classes.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainAttributes.td"
include "amp/Dialect/Train/IR/TrainComputeOps.td"
include "amp/Dialect/Train/IR/TrainShapeOps.td"
include "amp/Dialect/Train/IR/TrainLogicOps.td"
include "amp/Dialect/Train/IR/TrainLossOps.td"
include "amp/Dialect/Train/IR/TrainPrecisionOps.td"
include "amp/Dialect/Train/IR/TrainGradOps.td"
include "amp/Dialect/Train/IR/TrainOptimizerOps.td"
include "amp/Dialect/Train/IR/TrainLossScalingOps.td"
include "amp/Dialect/Train/IR/TrainCollectiveOps.td"
include "amp/Dialect/Train/IR/TrainRuntimeOps.td"

#endif // AMP_DIALECT_TRAIN_IR_TRAINOPS_TD
