//===- LoweringUtils.h - Helpers for lowering train ops ---------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Builders of the linalg.generic shapes every train lowering is made of:
// element-wise maps with NumPy broadcasting, and reductions, both computing in
// f32 for low-precision element types.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_TRAINTOLINALG_LOWERINGUTILS_H
#define AMP_CONVERSION_TRAINTOLINALG_LOWERINGUTILS_H

#include "amp/Dialect/Train/IR/ElementwiseBuilders.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace amp {
namespace train {
class RuntimeCallOp;
} // namespace train

/// The type arithmetic on `elementType` is carried out in: f32 for f16 and
/// bf16, the type itself otherwise.
mlir::Type getComputeType(mlir::Type elementType);

/// Converts a float scalar to float type `to` (extf / truncf), or returns it.
mlir::Value convertFloat(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value value, mlir::Type to);

/// A float constant of type `type`: the one the element-wise op definitions
/// use (ElementwiseBuilders.h).
using train::scalarConstant;

/// An operand of a linalg.generic together with its indexing map.
struct GenericInput {
  mlir::Value value;
  mlir::AffineMap map;
};

/// Prepares `input` to be read by a generic iterating over `resultShape`
/// with NumPy broadcasting: dimensions the input broadcasts are collapsed
/// away and the map reads the remaining ones.
GenericInput broadcastInput(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value input,
                            llvm::ArrayRef<int64_t> resultShape);

/// `input` (of shape `iterShape` minus `reducedDims`) read by a generic
/// iterating over `iterShape` (rank `rank`): the map skips `reducedDims`.
GenericInput reducedInput(mlir::MLIRContext *ctx, mlir::Value input,
                          unsigned rank, llvm::ArrayRef<int64_t> reducedDims);

/// The body of an element-wise generic: receives the inputs converted to
/// `computeType` (floats only; integers unchanged) and returns the result in
/// `computeType`.
using ElementwiseBody = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// A parallel linalg.generic producing a tensor of `resultType`; arithmetic
/// runs in `computeType` and the result is converted to the result element
/// type once.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             llvm::ArrayRef<GenericInput> inputs,
                             mlir::Type computeType, ElementwiseBody body);

/// The combining step of a reduction: (accumulator, inputs in compute type)
/// -> new accumulator.
using ReductionBody = llvm::function_ref<mlir::Value(
    mlir::OpBuilder &, mlir::Location, mlir::Value, mlir::ValueRange)>;

/// Reduces over `reducedDims` (sorted) of an iteration space `iterShape`:
/// each input is read through its map, the accumulator of type `accType`
/// starts at `init`, and the result has `iterShape` minus `reducedDims`.
mlir::Value buildReduction(mlir::OpBuilder &b, mlir::Location loc,
                           llvm::ArrayRef<int64_t> iterShape,
                           llvm::ArrayRef<int64_t> reducedDims,
                           llvm::ArrayRef<GenericInput> inputs,
                           mlir::Type accType, double init, ReductionBody body);

/// The combining step of a reduction with several accumulators: (the
/// accumulators, inputs in compute type) -> the new accumulators.
using MultiReductionBody = llvm::function_ref<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder &, mlir::Location, mlir::ValueRange, mlir::ValueRange)>;

/// buildReduction with `count` accumulators of type `accType`, all starting
/// at `init`, computed in one pass over the inputs (one generic).
llvm::SmallVector<mlir::Value> buildReductions(
    mlir::OpBuilder &b, mlir::Location loc, llvm::ArrayRef<int64_t> iterShape,
    llvm::ArrayRef<int64_t> reducedDims, llvm::ArrayRef<GenericInput> inputs,
    mlir::Type accType, unsigned count, double init, MultiReductionBody body);

/// Rounds an accumulator tensor once to `type` (same shape), or returns it
/// when it already has that type.
mlir::Value roundTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc,
                    mlir::RankedTensorType type);

/// An identity map of `rank` dimensions.
mlir::AffineMap identityMap(mlir::MLIRContext *ctx, unsigned rank);

/// Reshapes `value` to `shape` (same element count) with collapse/expand.
mlir::Value reshapeTensor(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, llvm::ArrayRef<int64_t> shape);

/// A `train.runtime_call` of `callee` on `inputs` with `params` at
/// `anchor`'s location, producing tensors of `types`; declares `callee` (an
/// index per input and per result, then an i64 per param) in the module on
/// first use.
train::RuntimeCallOp createRuntimeCall(mlir::OpBuilder &b,
                                       mlir::Operation *anchor,
                                       llvm::StringRef callee,
                                       mlir::TypeRange types,
                                       mlir::ValueRange inputs,
                                       llvm::ArrayRef<int64_t> params);

/// The collective runtime's all-reduce (amp_cpu_all_reduce's signature) of
/// `values`, a static tensor of runtime element type `dtype`
/// (amp::RuntimeDType), combined with `op` (amp::CollectiveOp) across
/// `ranks` ranks: one call of `callee` at `anchor`, its result of `values`'
/// type.
mlir::Value createAllReduceCall(mlir::OpBuilder &b, mlir::Operation *anchor,
                                llvm::StringRef callee, mlir::Value values,
                                int64_t dtype, int64_t op, int64_t ranks);

} // namespace amp

#endif // AMP_CONVERSION_TRAINTOLINALG_LOWERINGUTILS_H
