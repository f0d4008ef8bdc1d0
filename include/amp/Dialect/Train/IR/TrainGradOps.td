//===- TrainGradOps.td - Backward helper ops of train ------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Ops amp-autodiff creates where no forward op expresses a gradient. Each runs
// in the precision of its forward op (its operands' types) and, like the
// forward ops, accumulates reductions in f32.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINGRADOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINGRADOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_ReluGradOp : Train_Op<"relu_grad", [Pure,
    AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "gradient of relu: grad where input > 0, else 0";
  let description = [{
    ```mlir
    %dx = train.relu_grad %dy, %x : tensor<128x256xf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` type($result)";
}

def Train_GeluGradOp : Train_Op<"gelu_grad", [Pure,
    AllTypesMatch<["grad", "input", "result"]>]> {
  let summary = "gradient of gelu: grad * gelu'(input)";
  let description = [{
    The derivative of the exact form, `Phi(x) + x phi(x)`, or of the tanh
    approximation with `approximate tanh`.

    ```mlir
    %dx = train.gelu_grad %dy, %x approximate tanh : tensor<1024x1024xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
                       OptionalAttr<Train_GeluApproximationAttr>:$approximate);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat =
    "$grad `,` $input (`approximate` $approximate^)? attr-dict `:` type($result)";
}

/// The gradient of a softmax-like op from its output.
class Train_SoftmaxGradLikeOp<string mnemonic, string formula>
    : Train_Op<mnemonic, [Pure, AllTypesMatch<["grad", "output", "result"]>]> {
  let summary = "gradient of " # formula;
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$output,
                       I64Attr:$axis);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat =
    "$grad `,` $output `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Train_SoftmaxGradOp : Train_SoftmaxGradLikeOp<"softmax_grad", "softmax"> {
  let description = [{
    From the softmax output y: `dx = y * (dy - sum(dy * y, axis))`, the sum in
    f32. Masked (causal) positions have y = 0 and get no gradient.

    ```mlir
    %dx = train.softmax_grad %dy, %y axis 2 : tensor<32x128x128xf32>
    ```
  }];
}

def Train_LogSoftmaxGradOp
    : Train_SoftmaxGradLikeOp<"log_softmax_grad", "log_softmax"> {
  let description = [{
    From the log_softmax output y: `dx = dy - exp(y) * sum(dy, axis)`.

    ```mlir
    %dx = train.log_softmax_grad %dy, %y axis 1 : tensor<128x10xf32>
    ```
  }];
}

def Train_CrossEntropyGradOp : Train_Op<"cross_entropy_grad", [Pure,
    AllTypesMatch<["logits", "result"]>]> {
  let summary = "gradient of cross_entropy with respect to the logits";
  let description = [{
    `dlogits[n, c] = grad * (softmax(logits)[n, c] - (c == labels[n])) / N`,
    with the rank-0 loss gradient `grad` of the logits' type (the loss seed,
    or the scaled seed under loss scaling). Rows with a label outside [0, C)
    get NaN, as their loss does.

    ```mlir
    %dl = train.cross_entropy_grad %dloss, %logits, %labels : tensor<f32>, tensor<128x10xf32>, tensor<128xi32>
    ```
  }];
  let arguments = (ins Train_ScalarFloatTensor:$grad, Train_FloatTensor:$logits,
                       Train_IndexTensor:$labels);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits)
    `,` type($labels)
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINGRADOPS_TD
