//===- TrainLogicOps.cpp - Comparisons, selection, conversions ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// train.compare, train.select and train.convert: their result types and
// verifiers, their scalar formulas (the generic element-wise lowering builds
// them) and their gradients (select's; comparisons and conversions have
// none).
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/ElementwiseBuilders.h"
#include "amp/Dialect/Train/IR/ShapeInference.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace amp::train;

/// f32 for f16 and bf16 (the element-wise lowering's compute type).
static Type computeTypeOf(Type element) {
  if (isa<Float16Type, BFloat16Type>(element))
    return Float32Type::get(element.getContext());
  return element;
}

//===----------------------------------------------------------------------===//
// compare
//===----------------------------------------------------------------------===//

LogicalResult CompareOp::inferReturnTypes(MLIRContext *context,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  SmallVector<Type, 1> broadcast;
  if (failed(inferBroadcastResult(getOperationName(), location,
                                  adaptor.getLhs().getType(),
                                  adaptor.getRhs().getType(), broadcast)))
    return failure();
  results.push_back(cast<RankedTensorType>(broadcast.front())
                        .clone(IntegerType::get(context, 1)));
  return success();
}

Value CompareOp::buildScalar(OpBuilder &b, Location loc, ValueRange args) {
  Value lhs = args[0], rhs = args[1];
  if (isa<FloatType>(lhs.getType())) {
    // Ordered but for `ne`: NaN compares unequal to everything (PyTorch's).
    arith::CmpFPredicate p = arith::CmpFPredicate::OEQ;
    switch (getPredicate()) {
    case ComparePredicate::eq: p = arith::CmpFPredicate::OEQ; break;
    case ComparePredicate::ne: p = arith::CmpFPredicate::UNE; break;
    case ComparePredicate::lt: p = arith::CmpFPredicate::OLT; break;
    case ComparePredicate::le: p = arith::CmpFPredicate::OLE; break;
    case ComparePredicate::gt: p = arith::CmpFPredicate::OGT; break;
    case ComparePredicate::ge: p = arith::CmpFPredicate::OGE; break;
    }
    return arith::CmpFOp::create(b, loc, p, lhs, rhs);
  }
  arith::CmpIPredicate p = arith::CmpIPredicate::eq;
  switch (getPredicate()) {
  case ComparePredicate::eq: p = arith::CmpIPredicate::eq; break;
  case ComparePredicate::ne: p = arith::CmpIPredicate::ne; break;
  case ComparePredicate::lt: p = arith::CmpIPredicate::slt; break;
  case ComparePredicate::le: p = arith::CmpIPredicate::sle; break;
  case ComparePredicate::gt: p = arith::CmpIPredicate::sgt; break;
  case ComparePredicate::ge: p = arith::CmpIPredicate::sge; break;
  }
  return arith::CmpIOp::create(b, loc, p, lhs, rhs);
}

Value CompareOp::buildOperandGrad(OpBuilder &, unsigned, Value) {
  return Value(); // a comparison passes no gradient
}

LogicalResult CompareOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  return buildElementwiseVJP(*this, b, resultGrads, operandGrads);
}

//===----------------------------------------------------------------------===//
// select
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  SmallVector<Type, 1> values;
  if (failed(inferBroadcastResult(getOperationName(), location,
                                  adaptor.getLhs().getType(),
                                  adaptor.getRhs().getType(), values)))
    return failure();
  auto type = cast<RankedTensorType>(values.front());
  auto condition = dyn_cast<RankedTensorType>(adaptor.getCondition().getType());
  if (!condition)
    return failure();
  ShapeOrError shape =
      inferBroadcastShape(condition.getShape(), type.getShape());
  if (!shape.ok())
    return emitOptionalError(location, "'", getOperationName(),
                             "' op condition: ", shape.getError());
  results.push_back(
      RankedTensorType::get(shape.getShape(), type.getElementType()));
  return success();
}

Value SelectOp::buildScalar(OpBuilder &b, Location loc, ValueRange args) {
  return arith::SelectOp::create(b, loc, args[0], args[1], args[2]);
}

Value SelectOp::buildOperandGrad(OpBuilder &b, unsigned operand, Value dy) {
  if (operand == 0)
    return Value(); // the condition is boolean
  Location loc = getLoc();
  Value zero = scalarLike(b, loc, dy, 0.0);
  return operand == 1 ? SelectOp::create(b, loc, getCondition(), dy, zero)
                      : SelectOp::create(b, loc, getCondition(), zero, dy);
}

LogicalResult SelectOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  return buildElementwiseVJP(*this, b, resultGrads, operandGrads);
}

//===----------------------------------------------------------------------===//
// convert
//===----------------------------------------------------------------------===//

LogicalResult ConvertOp::verify() {
  auto input = getInput().getType(), result = getResult().getType();
  if (input.getShape() != result.getShape())
    return emitOpError("input shape ")
           << formatShape(input.getShape()) << " and result shape "
           << formatShape(result.getShape())
           << " differ (a conversion keeps the shape)";
  Type from = input.getElementType(), to = result.getElementType();
  if (isa<FloatType>(from) && isa<FloatType>(to))
    return emitOpError("converts ")
           << from << " to " << to
           << ": between float types use train.cast";
  if (from == to)
    return emitOpError("converts ") << from << " to itself";
  return success();
}

Value ConvertOp::buildScalar(OpBuilder &b, Location loc, ValueRange args) {
  Value x = args[0];
  Type from = x.getType();
  Type to = computeTypeOf(getResult().getType().getElementType());
  if (to.isInteger(1)) { // x != 0 (NaN: true)
    if (auto f = dyn_cast<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   scalarConstant(b, loc, f, 0.0));
    return arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, x,
        arith::ConstantOp::create(b, loc, b.getIntegerAttr(from, 0)));
  }
  if (isa<IntegerType>(to)) {
    if (isa<FloatType>(from)) // truncation toward zero
      return arith::FPToSIOp::create(b, loc, to, x);
    return arith::ExtUIOp::create(b, loc, to, x); // i1 -> 0 / 1
  }
  // to a float (computed in f32 for f16 / bf16; the lowering rounds once)
  if (from.isInteger(1))
    return arith::UIToFPOp::create(b, loc, to, x);
  return arith::SIToFPOp::create(b, loc, to, x);
}

Value ConvertOp::buildOperandGrad(OpBuilder &, unsigned, Value) {
  return Value(); // integers and booleans carry no gradient
}

LogicalResult ConvertOp::buildVJP(OpBuilder &b, ArrayRef<Value> resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  return buildElementwiseVJP(*this, b, resultGrads, operandGrads);
}
