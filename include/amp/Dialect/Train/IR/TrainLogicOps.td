//===- TrainLogicOps.td - Comparisons, selection, conversions -*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Integer and boolean tensors in the step: comparisons (to i1), selection by
// an i1 condition, and conversions between integer, boolean and float types
// (train.cast stays the only op between float types). What a model computes
// from its batch's integers (a padding mask from token ids) is these ops;
// what it computes from shapes alone the importer folds. Autocast leaves the
// integer and boolean values alone: comparisons of floats and selection take
// the widest float operand, as PyTorch's type promotion.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINLOGICOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINLOGICOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainAttributes.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_CompareOp : Train_Op<"compare",
    !listconcat(Train_Promote, [Pure, InferTypeOpAdaptor,
                DeclareOpInterfaceMethods<Train_ElementwiseOpInterface>,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise comparison with broadcasting, to i1";
  let description = [{
    Compares `lhs` and `rhs` element by element with `predicate` (`eq`, `ne`,
    `lt`, `le`, `gt`, `ge`); the shapes broadcast with NumPy rules and both
    operands have one element type, a float type or i32 (integers compare
    signed). Floats compare as PyTorch's: every predicate but `ne` is false
    when either element is NaN, `ne` true. No gradient flows through.

    ```mlir
    %keep = train.compare %ids, %pad ne : tensor<4x32xi32>, tensor<i32> -> tensor<4x32xi1>
    ```
  }];
  let arguments = (ins Train_ComparableTensor:$lhs, Train_ComparableTensor:$rhs,
                       Train_ComparePredicateAttr:$predicate);
  let results = (outs Train_BoolTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs $predicate attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Train_SelectOp : Train_Op<"select",
    !listconcat(Train_Promote, [Pure, InferTypeOpAdaptor,
                DeclareOpInterfaceMethods<Train_ElementwiseOpInterface>,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise choice by an i1 condition (torch.where)";
  let description = [{
    `condition ? lhs : rhs` element by element; the three shapes broadcast
    with NumPy rules, `lhs` and `rhs` have one float type, the result has
    it. Exact: the unchosen value is never combined with the chosen one, so
    an infinite or NaN `rhs` leaves the elements that take `lhs` unchanged
    (masked_fill by -inf or a huge fill in any precision). The gradient
    goes to the chosen operand: `select(condition, dy, 0)` to `lhs`,
    `select(condition, 0, dy)` to `rhs`, each reduced to its operand's shape.

    ```mlir
    %y = train.select %keep, %scores, %lowest : tensor<4x1x1x32xi1>, tensor<4x4x32x32xf32>, tensor<f32> -> tensor<4x4x32x32xf32>
    ```
  }];
  let arguments = (ins Train_BoolTensor:$condition, Train_FloatTensor:$lhs,
                       Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,`
    type($rhs) `->` type($result)
  }];
}

def Train_ConvertOp : Train_Op<"convert", [Pure,
    DeclareOpInterfaceMethods<Train_ElementwiseOpInterface>,
    DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>]> {
  let summary = "converts between integer, boolean and float tensors";
  let description = [{
    Converts every element between i1, i32 and a float type, as PyTorch's
    `.to(dtype)`: i1 to a number is 0 or 1; a number to i1 is `x != 0` (NaN
    is true); i32 to a float rounds to nearest; a float to i32 truncates
    toward zero. Conversions between float types are `train.cast`'s. The
    shape is unchanged; no gradient flows through (integers and booleans
    have none).

    ```mlir
    %m = train.convert %keep : tensor<4x32xi1> to tensor<4x32xf32>
    ```
  }];
  let arguments = (ins Train_AnyTensor:$input);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINLOGICOPS_TD
