//===- TrainInterfaces.h - Interfaces of train ops --------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAININTERFACES_H
#define AMP_DIALECT_TRAIN_IR_TRAININTERFACES_H

#include "amp/Dialect/Train/IR/TrainAttributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <utility>

namespace amp {
namespace train {

namespace detail {
/// Detects ops with an `accumulate` type attribute (matmul, batch_matmul,
/// conv2d) for PrecisionPolicyOpInterface::setAccumulatorType.
template <typename OpT>
using HasAccumulateAttr = decltype(std::declval<OpT &>().setAccumulateAttr(
    std::declval<mlir::TypeAttr>()));
} // namespace detail

/// What a gradient transform needs of the loss scale
/// (GradientTransformOpInterface::getScaleUse).
enum class GradientScaleUse { scaled, unscaled, either };

/// The trait behind `Train_Loss`: the op computes a loss.
template <typename ConcreteOp>
class IsLoss : public mlir::OpTrait::TraitBase<ConcreteOp, IsLoss> {};

/// The trait behind `Train_DefaultPrecision<category>`: records the op's
/// default autocast category for PrecisionPolicyOpInterface.
template <PrecisionCategory Category> struct DefaultPrecision {
  template <typename ConcreteOp>
  class Impl : public mlir::OpTrait::TraitBase<ConcreteOp, Impl> {
  public:
    static constexpr PrecisionCategory kDefaultPrecision = Category;
  };
};

} // namespace train
} // namespace amp

#include "amp/Dialect/Train/IR/TrainInterfaces.h.inc"

namespace amp {
namespace train {

/// The gradient transforms between backward and `update`, first to last:
/// the chain from the update's first gradient back through each
/// GradientTransformOpInterface op's input gradients. amp-loss-scaling and
/// amp-data-parallel find their places in it.
llvm::SmallVector<GradientTransformOpInterface>
getGradientTransformChain(OptimizerUpdateOpInterface update);

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_TRAININTERFACES_H
