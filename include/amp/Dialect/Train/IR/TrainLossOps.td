//===- TrainLossOps.td - Loss ops of train -----------------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINLOSSOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINLOSSOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_CrossEntropyOp : Train_Op<"cross_entropy",
    !listconcat(Train_Fp32, [Pure, Train_Loss, InferTypeOpAdaptor,
                             DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "mean softmax cross-entropy with integer labels";
  let description = [{
    `mean_n(-log_softmax(logits)[n, labels[n]])` over `[N, C]` logits and `[N]`
    i32 labels in [0, C) (PyTorch's `F.cross_entropy` with its default mean
    reduction). The result is a rank-0 tensor of the logits' element type.
    With `ignore_index`, rows labelled with it count for nothing: the mean is
    over the other rows (NaN when every row is ignored, as PyTorch's). Any
    other label outside [0, C) makes the loss NaN. `label_smoothing` e in
    [0, 1] mixes in the uniform target as PyTorch's: each row's loss is
    `(1 - e) * -log_softmax[label] + e * mean_c(-log_softmax)`.

    ```mlir
    %loss = train.cross_entropy %logits, %labels : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
    %masked = train.cross_entropy %logits, %labels ignore_index -100 : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$logits, Train_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedOptionalAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Train_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels (`ignore_index` $ignore_index^)?
    (`label_smoothing` $label_smoothing^)? attr-dict `:`
    type($logits) `,` type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Train_LinearCrossEntropyOp : Train_Op<"linear_cross_entropy",
    [Pure, Train_Loss,
     DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>]> {
  let summary = "a language model's head and its cross-entropy, fused";
  let description = [{
    `cross_entropy(f32(round(input weight)), labels)`: the logits of a
    linear layer without bias, `[N, K] x [K, V]` (`[V, K]` with
    `transpose_weight`, nn.Linear's and a tied embedding's layout), summed in
    f32 and rounded once to the operands' element type, as `train.matmul`
    computes them; then the loss in f32 with the attributes of
    `train.cross_entropy` (mean over the rows not labelled `ignore_index`,
    `label_smoothing`). The result is f32.

    The `[N, V]` logits are never whole: the CPU runtime computes them a
    block of rows at a time (the log-sum-exp of each row is all it keeps),
    and `train.linear_cross_entropy_grad` computes them again, block by
    block, for the gradients. Autodiff makes the op of a head whose logits
    only the loss reads (`fuse-lm-head`); where the CPU runtime does not
    take it (`fused-lm-head=false`, or the CUDA backend), it becomes the
    `matmul`, `cast` and `cross_entropy` it stands for.

    ```mlir
    %loss = train.linear_cross_entropy %h, %wte, %labels transpose_weight ignore_index -100
        : tensor<4096x768xbf16>, tensor<50257x768xbf16>, tensor<4096xi32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$weight,
                       Train_IndexTensor:$labels, UnitAttr:$transpose_weight,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedOptionalAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $labels (`transpose_weight` $transpose_weight^)?
    (`ignore_index` $ignore_index^)? (`label_smoothing` $label_smoothing^)?
    attr-dict `:` type($input) `,` type($weight) `,` type($labels) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Train_MseLossOp : Train_Op<"mse_loss", !listconcat(Train_Fp32,
    [Pure, Train_Loss, InferTypeOpAdaptor, AllTypesMatch<["input", "target"]>,
     DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "mean squared error";
  let description = [{
    `mean((input - target)^2)` over all elements of two tensors of one type.
    The result is a rank-0 tensor of their element type.

    ```mlir
    %loss = train.mse_loss %pred, %target : tensor<64x1xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$target);
  let results = (outs Train_ScalarFloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $target attr-dict `:` type($input) `->` type($result)
  }];
}

/// An element-wise loss of `input` against a `target` of the same type,
/// averaged over all elements (PyTorch's mean reduction); computed in f32.
class Train_PointwiseLossOp<string mnemonic, string formula, dag extraArgs,
                            string extraFormat>
    : Train_Op<mnemonic, !listconcat(Train_Fp32,
    [Pure, Train_Loss, InferTypeOpAdaptor, AllTypesMatch<["input", "target"]>,
     DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "mean " # formula;
  let description = [{
    `mean(}] # formula # [{)` over all elements of two tensors of one type
    (accumulated in f32). The result is a rank-0 tensor of their element type.

    ```mlir
    %loss = train.}] # mnemonic # [{ %pred, %target : tensor<64x4xf32> -> tensor<f32>
    ```
  }];
  let arguments = !con((ins Train_FloatTensor:$input,
                            Train_FloatTensor:$target), extraArgs);
  let results = (outs Train_ScalarFloatTensor:$result);
  let assemblyFormat = "$input `,` $target " # extraFormat #
      " attr-dict `:` type($input) `->` type($result)";
}

def Train_L1LossOp : Train_PointwiseLossOp<"l1_loss", "|input - target|",
    (ins), "">;
def Train_SmoothL1LossOp : Train_PointwiseLossOp<"smooth_l1_loss",
    "d < beta ? 0.5 d^2 / beta : d - 0.5 beta, d = |input - target|",
    (ins DefaultValuedOptionalAttr<F64Attr, "1.0">:$beta), "(`beta` $beta^)?"> {
  let hasVerifier = 1;
}
def Train_BceWithLogitsLossOp : Train_PointwiseLossOp<
    "bce_with_logits_loss",
    "(1 - target) * input - log_sigmoid(input)", (ins), "">;

#endif // AMP_DIALECT_TRAIN_IR_TRAINLOSSOPS_TD
