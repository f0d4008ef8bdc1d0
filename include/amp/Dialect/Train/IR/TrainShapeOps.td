//===- TrainShapeOps.td - Shape and constant ops of train --*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Ops that move or replicate data without arithmetic, and constants.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINSHAPEOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINSHAPEOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Any statically shaped tensor the dialect computes with.
def Train_AnyTensor : StaticShapeTensorOf<[F16, BF16, F32, I32, I1]>;

def Train_ConstantOp : Train_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a tensor constant";
  let description = [{
    A constant tensor; its type is the type of `value`.

    ```mlir
    %c = train.constant dense<0.125> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Train_LossSeedOp : Train_Op<"loss_seed", [Pure]> {
  let summary = "the backward seed: the gradient of the loss, 1";
  let description = [{
    The value amp-autodiff starts the backward graph from (d loss / d loss =
    1). It is an op of its own, not a `train.constant`, so that no generic
    rewrite (constant merging, CSE) can confuse it with another 1:
    amp-loss-scaling replaces it by the loss scale, and without loss scaling
    it lowers to the constant 1.

    ```mlir
    %seed = train.loss_seed : tensor<f32>
    ```
  }];
  let results = (outs Train_ScalarFloatTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Train_ReshapeOp : Train_Op<"reshape",
    !listconcat(Train_Follow, [Pure, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "reinterprets a tensor's shape (row-major order kept)";
  let description = [{
    Gives the elements, in row-major order, a new static shape with the same
    number of elements and the same element type.

    ```mlir
    %f = train.reshape %x : tensor<128x1x28x28xf32> -> tensor<128x784xf32>
    ```
  }];
  let arguments = (ins Train_AnyTensor:$input);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Train_TransposeOp : Train_Op<"transpose",
    !listconcat(Train_Follow, [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "permutes a tensor's dimensions";
  let description = [{
    `result[i_0, ..., i_n] = input[...]` with result dimension `d` taken from
    input dimension `permutation[d]`.

    ```mlir
    %t = train.transpose %x permutation [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
    ```
  }];
  let arguments = (ins Train_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = [{
    $input `permutation` $permutation attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
}

def Train_BroadcastOp : Train_Op<"broadcast",
    !listconcat(Train_Follow, [Pure, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "replicates a tensor to a larger shape (NumPy rules)";
  let description = [{
    Broadcasts the input to the result's shape with NumPy rules: trailing
    dimensions aligned, each input dimension equal to the result's or 1.

    ```mlir
    %b = train.broadcast %bias : tensor<256xf32> -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins Train_AnyTensor:$input);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Train_ConcatOp : Train_Op<"concat",
    !listconcat(Train_Promote, [Pure, InferTypeOpAdaptor,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "joins tensors along an axis";
  let description = [{
    Concatenates one or more tensors of one element type and rank along `axis`;
    all other dimensions agree.

    ```mlir
    %c = train.concat %a, %b axis 1 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<8x48xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasFolder = 1;
}

def Train_SliceOp : Train_Op<"slice",
    !listconcat(Train_Follow, [Pure, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "a static box of a tensor";
  let description = [{
    `result[i] = input[offsets + i]` for the box of the result's shape starting
    at `offsets` (one per dimension); the box must lie inside the input.

    ```mlir
    %s = train.slice %x offsets [0, 16] : tensor<8x48xf32> -> tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Train_AnyTensor:$input, DenseI64ArrayAttr:$offsets);
  let results = (outs Train_AnyTensor:$result);
  let assemblyFormat = [{
    $input `offsets` $offsets attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINSHAPEOPS_TD
