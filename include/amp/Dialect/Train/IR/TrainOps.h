//===- TrainOps.h - Ops of the train dialect --------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINOPS_H
#define AMP_DIALECT_TRAIN_IR_TRAINOPS_H

#include "amp/Dialect/Train/IR/TrainAttributes.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainInterfaces.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace amp {
namespace train {

/// Infers the broadcast result type of an element-wise binary op named
/// `opName`, emitting a diagnostic at `location` when the operands have none.
llvm::LogicalResult inferBroadcastResult(
    llvm::StringRef opName, std::optional<mlir::Location> location,
    mlir::Type lhs, mlir::Type rhs, llvm::SmallVectorImpl<mlir::Type> &results);

/// Infers the result type of a 2-D pooling op named `opName`.
llvm::LogicalResult inferPool2dResult(
    llvm::StringRef opName, std::optional<mlir::Location> location,
    mlir::Type input, llvm::ArrayRef<int64_t> kernel,
    llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> padding,
    llvm::ArrayRef<int64_t> dilation, llvm::SmallVectorImpl<mlir::Type> &results);

/// Infers the result type of a reduction op named `opName`.
llvm::LogicalResult
inferReduceResult(llvm::StringRef opName,
                  std::optional<mlir::Location> location, mlir::Type input,
                  llvm::ArrayRef<int64_t> axes, bool keepDims,
                  llvm::SmallVectorImpl<mlir::Type> &results);

} // namespace train
} // namespace amp

#define GET_OP_CLASSES
#include "amp/Dialect/Train/IR/TrainOps.h.inc"

#endif // AMP_DIALECT_TRAIN_IR_TRAINOPS_H
