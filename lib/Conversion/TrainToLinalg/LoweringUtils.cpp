//===- LoweringUtils.cpp - Helpers for lowering train ops -----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"

#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace amp;

Type amp::getComputeType(Type elementType) {
  if (isa<Float16Type, BFloat16Type>(elementType))
    return Float32Type::get(elementType.getContext());
  return elementType;
}

Value amp::convertFloat(OpBuilder &b, Location loc, Value value, Type to) {
  Type from = value.getType();
  if (from == to || !isa<FloatType>(from) || !isa<FloatType>(to))
    return value;
  unsigned fromWidth = cast<FloatType>(from).getWidth();
  unsigned toWidth = cast<FloatType>(to).getWidth();
  if (fromWidth < toWidth)
    return arith::ExtFOp::create(b, loc, to, value);
  if (fromWidth == toWidth) {
    // f16 <-> bf16: widen exactly to f32, then round once.
    value = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
  }
  return arith::TruncFOp::create(b, loc, to, value);
}

AffineMap amp::identityMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}

/// One reassociation group holding all `rank` dimensions.
static SmallVector<ReassociationIndices> allDims(int64_t rank) {
  ReassociationIndices group;
  for (int64_t i = 0; i < rank; ++i)
    group.push_back(i);
  return {group};
}

Value amp::reshapeTensor(OpBuilder &b, Location loc, Value value,
                         ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  auto target = RankedTensorType::get(shape, type.getElementType());
  // Rank 0 <-> all-ones shapes need no grouping.
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(b, loc, target, value,
                                         ArrayRef<ReassociationIndices>{});
  if (shape.empty())
    return tensor::CollapseShapeOp::create(b, loc, target, value,
                                           ArrayRef<ReassociationIndices>{});
  // Otherwise through rank 1: row-major order is kept by both steps.
  Value flat = value;
  if (type.getRank() > 1)
    flat = tensor::CollapseShapeOp::create(
        b, loc,
        RankedTensorType::get({type.getNumElements()}, type.getElementType()),
        value, allDims(type.getRank()));
  if (shape.size() == 1)
    return flat;
  return tensor::ExpandShapeOp::create(b, loc, target, flat,
                                       allDims(shape.size()));
}

GenericInput amp::broadcastInput(OpBuilder &b, Location loc, Value input,
                                 ArrayRef<int64_t> resultShape) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> shape = type.getShape();
  unsigned offset = resultShape.size() - shape.size();
  SmallVector<int64_t> keptSizes;
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(shape)) {
    unsigned resultDim = offset + i;
    if (size == resultShape[resultDim]) {
      keptSizes.push_back(size);
      exprs.push_back(getAffineDimExpr(resultDim, ctx));
    }
  }
  Value value = input;
  if (keptSizes.size() != shape.size()) {
    // Only unit dimensions are dropped, so the collapse is a pure reshape.
    auto collapsed = RankedTensorType::get(keptSizes, type.getElementType());
    SmallVector<ReassociationIndices> groups;
    if (!keptSizes.empty())
      groups = *getReassociationIndicesForCollapse(shape, keptSizes);
    value = tensor::CollapseShapeOp::create(b, loc, collapsed, input, groups);
  }
  return {value, AffineMap::get(resultShape.size(), 0, exprs, ctx)};
}

GenericInput amp::reducedInput(MLIRContext *ctx, Value input, unsigned rank,
                               ArrayRef<int64_t> reducedDims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d = 0; d < rank; ++d)
    if (!llvm::is_contained(reducedDims, d))
      exprs.push_back(getAffineDimExpr(d, ctx));
  return {input, AffineMap::get(rank, 0, exprs, ctx)};
}

/// Converts the float block arguments to `computeType`.
static SmallVector<Value> toCompute(OpBuilder &b, Location loc, ValueRange args,
                                    Type computeType) {
  SmallVector<Value> converted;
  for (Value arg : args)
    converted.push_back(convertFloat(b, loc, arg, computeType));
  return converted;
}

Value amp::buildElementwise(OpBuilder &b, Location loc,
                            RankedTensorType resultType,
                            ArrayRef<GenericInput> inputs, Type computeType,
                            ElementwiseBody body) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = resultType.getRank();
  SmallVector<Value> values;
  SmallVector<AffineMap> maps;
  for (const GenericInput &in : inputs) {
    values.push_back(in.value);
    maps.push_back(in.map);
  }
  maps.push_back(identityMap(ctx, rank));
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType());
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  Type resultElement = resultType.getElementType();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, values, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> in =
            toCompute(nb, nloc, args.drop_back(), computeType);
        Value result = body(nb, nloc, in);
        linalg::YieldOp::create(nb, nloc,
                                convertFloat(nb, nloc, result, resultElement));
      });
  return generic.getResult(0);
}

Value amp::buildReduction(OpBuilder &b, Location loc,
                          ArrayRef<int64_t> iterShape,
                          ArrayRef<int64_t> reducedDims,
                          ArrayRef<GenericInput> inputs, Type accType,
                          double init, ReductionBody body) {
  return buildReductions(
      b, loc, iterShape, reducedDims, inputs, accType, 1, init,
      [&](OpBuilder &nb, Location l, ValueRange accs, ValueRange in) {
        return SmallVector<Value>{body(nb, l, accs[0], in)};
      })[0];
}

SmallVector<Value> amp::buildReductions(OpBuilder &b, Location loc,
                                        ArrayRef<int64_t> iterShape,
                                        ArrayRef<int64_t> reducedDims,
                                        ArrayRef<GenericInput> inputs,
                                        Type accType, unsigned count,
                                        double init, MultiReductionBody body) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = iterShape.size();
  SmallVector<int64_t> outShape;
  SmallVector<utils::IteratorType> iterators;
  for (unsigned d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(reducedDims, d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced)
      outShape.push_back(iterShape[d]);
  }
  Value empty = tensor::EmptyOp::create(b, loc, outShape, accType);
  Value initValue = scalarConstant(b, loc, accType, init);
  Value filled = linalg::FillOp::create(b, loc, initValue, empty).getResult(0);
  SmallVector<Value> values;
  SmallVector<AffineMap> maps;
  for (const GenericInput &in : inputs) {
    values.push_back(in.value);
    maps.push_back(in.map);
  }
  AffineMap outMap = reducedInput(ctx, filled, rank, reducedDims).map;
  maps.append(count, outMap);
  SmallVector<Value> inits(count, filled);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange(inits), values, inits, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        SmallVector<Value> in =
            toCompute(nb, nloc, args.drop_back(count), accType);
        linalg::YieldOp::create(nb, nloc,
                                body(nb, nloc, args.take_back(count), in));
      });
  return SmallVector<Value>(generic.getResults());
}

Value amp::roundTo(OpBuilder &b, Location loc, Value acc,
                   RankedTensorType type) {
  if (acc.getType() == type)
    return acc;
  return buildElementwise(
      b, loc, type, {{acc, identityMap(b.getContext(), type.getRank())}},
      cast<RankedTensorType>(acc.getType()).getElementType(),
      [](OpBuilder &, Location, ValueRange args) { return args[0]; });
}

train::RuntimeCallOp amp::createRuntimeCall(OpBuilder &b, Operation *anchor,
                                            StringRef callee, TypeRange types,
                                            ValueRange inputs,
                                            ArrayRef<int64_t> params) {
  auto module = anchor->getParentOfType<ModuleOp>();
  if (!module.lookupSymbol(callee)) {
    // An index per input and per result, then an i64 per param.
    MLIRContext *ctx = anchor->getContext();
    SmallVector<Type> argTypes(inputs.size() + types.size(),
                               IndexType::get(ctx));
    argTypes.append(params.size(), IntegerType::get(ctx, 64));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(b, module.getLoc(), callee,
                         FunctionType::get(ctx, argTypes, {}))
        .setPrivate();
  }
  return train::RuntimeCallOp::create(b, anchor->getLoc(), types, callee,
                                      inputs, params);
}

Value amp::createAllReduceCall(OpBuilder &b, Operation *anchor,
                               StringRef callee, Value values, int64_t dtype,
                               int64_t op, int64_t ranks) {
  auto type = cast<RankedTensorType>(values.getType());
  return createRuntimeCall(b, anchor, callee, TypeRange{type},
                           ValueRange{values},
                           {dtype, op, type.getNumElements(), ranks})
      .getResult(0);
}
