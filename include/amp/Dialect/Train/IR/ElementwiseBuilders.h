//===- ElementwiseBuilders.h - What element-wise op definitions use -*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The helpers the `scalar` and `derivative` bodies of Train_UnaryOp and
// Train_BinaryOp definitions (TrainComputeOps.td) call, and the generic VJP
// of ElementwiseOpInterface ops.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_ELEMENTWISEBUILDERS_H
#define AMP_DIALECT_TRAIN_IR_ELEMENTWISEBUILDERS_H

#include "mlir/IR/Builders.h"

namespace amp {
namespace train {

class ElementwiseOpInterface;

/// A scalar `arith.constant` `value` of float type `type` (scalar bodies).
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);

/// A rank-0 `train.constant` `value` in the element type of tensor `like`
/// (derivatives).
mlir::Value scalarLike(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value like, double value);

/// `v` as a tensor of element type `element`: `v` itself when it is one,
/// else a `train.cast` of it.
mlir::Value castTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                   mlir::Type element);

/// `x * factor` with train ops (derivatives).
mlir::Value scaledBy(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                     double factor);

/// The gradient of maximum (or minimum) `self` of (`self`, `other`): `dy`
/// where `self` is the larger (smaller), half of it at a tie, 0 elsewhere.
mlir::Value extremumGrad(mlir::OpBuilder &b, mlir::Location loc, mlir::Value dy,
                         mlir::Value self, mlir::Value other, bool maximum);

/// Sums `grad` (of a broadcast result's shape) back to `operandType`'s shape:
/// over the leading dimensions the operand lacks and its broadcast unit
/// dimensions.
mlir::Value unbroadcast(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value grad, mlir::Type operandType);

/// The VJP of every element-wise op: each operand's buildOperandGrad of the
/// result gradient, reduced to the operand's shape; nothing when the result
/// gets no gradient.
llvm::LogicalResult
buildElementwiseVJP(ElementwiseOpInterface op, mlir::OpBuilder &b,
                    llvm::ArrayRef<mlir::Value> resultGrads,
                    llvm::SmallVectorImpl<mlir::Value> &operandGrads);

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_ELEMENTWISEBUILDERS_H
