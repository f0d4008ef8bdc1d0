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
    get NaN, as their loss does; with `ignore_index`, rows labelled with it
    get 0 and N counts the other rows; with `label_smoothing` e the target
    row is `(1 - e) * onehot + e / C`.

    ```mlir
    %dl = train.cross_entropy_grad %dloss, %logits, %labels : tensor<f32>, tensor<128x10xf32>, tensor<128xi32>
    ```
  }];
  let arguments = (ins Train_ScalarFloatTensor:$grad, Train_FloatTensor:$logits,
                       Train_IndexTensor:$labels,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedOptionalAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels (`ignore_index` $ignore_index^)?
    (`label_smoothing` $label_smoothing^)? attr-dict
    `:` type($grad) `,` type($logits) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Train_LinearCrossEntropyGradOp : Train_Op<"linear_cross_entropy_grad",
    [Pure, AllTypesMatch<["input", "input_grad"]>,
     AllTypesMatch<["weight", "weight_grad"]>]> {
  let summary = "gradients of linear_cross_entropy: input and weight";
  let description = [{
    With the logits `L = round(input weight)` of `train.linear_cross_entropy`
    (same operands and attributes), `dL = round(cross_entropy_grad(grad, L))`
    (f32, rounded to the operands' type), `input_grad = dL weight^T` and
    `weight_grad = input^T dL` (`dL^T input` with `transpose_weight`), summed
    in f32 and rounded once: what autodiff makes of the unfused head. `grad`
    is the loss's f32 gradient (the seed, or the scaled seed under loss
    scaling). The runtime recomputes the logits a block of rows at a time,
    so no `[N, V]` tensor lives in the step.

    ```mlir
    %dh, %dw = train.linear_cross_entropy_grad %seed, %h, %wte, %labels transpose_weight
        : tensor<f32>, tensor<4096x768xbf16>, tensor<50257x768xbf16>, tensor<4096xi32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$grad, Train_FloatTensor:$input,
                       Train_FloatTensor:$weight, Train_IndexTensor:$labels,
                       UnitAttr:$transpose_weight,
                       OptionalAttr<I64Attr>:$ignore_index,
                       DefaultValuedOptionalAttr<F64Attr, "0.0">:$label_smoothing);
  let results = (outs Train_FloatTensor:$input_grad,
                      Train_FloatTensor:$weight_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $weight `,` $labels
    (`transpose_weight` $transpose_weight^)? (`ignore_index` $ignore_index^)?
    (`label_smoothing` $label_smoothing^)? attr-dict `:` type($grad) `,`
    type($input) `,` type($weight) `,` type($labels)
  }];
  let hasVerifier = 1;
}

def Train_AttentionGradOp : Train_Op<"attention_grad", [Pure,
    AllTypesMatch<["grad", "output"]>, AllTypesMatch<["query", "query_grad"]>,
    AllTypesMatch<["key", "key_grad"]>, AllTypesMatch<["value", "value_grad"]>]> {
  let summary = "gradients of attention with respect to query, key and value";
  let description = [{
    From the forward op's operands, its `output` and its log-sum-exp `lse`:
    the probabilities `P = exp(query key^T * scale + mask - lse)` are
    recomputed (zero where a query's keys are all masked), then
    `dvalue = P^T grad`, `dS = P * (grad value^T - rowsum(grad * output))`,
    `dquery = dS key * scale`, `dkey = dS^T query * scale`, all in f32 and
    rounded once to the operands' types. `mask`, `causal` and `scale` are
    the forward op's.

    ```mlir
    %dq, %dk, %dv = train.attention_grad %do, %q, %k, %v, %o, %lse causal scale 1.250000e-01
        : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>,
          tensor<2x4x128x64xbf16>, tensor<2x4x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$query,
                       Train_FloatTensor:$key, Train_FloatTensor:$value,
                       Train_FloatTensor:$output, StaticShapeTensorOf<[F32]>:$lse,
                       Optional<StaticShapeTensorOf<[F16, BF16, F32, I1]>>:$mask,
                       UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Train_FloatTensor:$query_grad, Train_FloatTensor:$key_grad,
                      Train_FloatTensor:$value_grad);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $output `,` $lse
    (`mask` $mask^)? (`causal` $causal^)? `scale` $scale
    attr-dict `:` type($grad) `,` type($query) `,` type($key) `,` type($value)
    `,` type($lse) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

def Train_Conv2dGradInputOp : Train_Op<"conv2d_grad_input", [Pure]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    `dx[n, c, h, w] = sum dy[n, f, oh, ow] * filter[f, c, kh, kw]` over every
    output position whose window reads input position (h, w) with the same
    strides, padding and dilation as the forward conv2d. The result type is
    the forward input's. `groups` as the forward conv2d's.

    ```mlir
    %dx = train.conv2d_grad_input %dy, %w padding [1, 1] : tensor<8x16x28x28xf16>, tensor<16x3x3x3xf16> -> tensor<8x3x28x28xf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$filter,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
    OptionalAttr<TypeAttrOf<Train_Float>>:$accumulate,
    DefaultValuedOptionalAttr<I64Attr, "1">:$groups);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $filter (`strides` $strides^)? (`padding` $padding^)?
    (`dilation` $dilation^)? (`groups` $groups^)? (`accumulate` $accumulate^)?
    attr-dict `:` type($grad) `,` type($filter) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type products are summed in: `accumulate`, or f32 for f16/bf16
    /// operands, else the operand type (as conv2d's).
    ::mlir::Type getAccumulatorType();
  }];
}

def Train_Conv2dGradFilterOp : Train_Op<"conv2d_grad_filter", [Pure]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    `dw[f, c, kh, kw] = sum over n, oh, ow of dy[n, f, oh, ow] *
    x[n, c, oh*s + kh*d - p, ow*s + kw*d - p]` (zero outside the input). The
    result type is the filter's.

    ```mlir
    %dw = train.conv2d_grad_filter %dy, %x padding [1, 1] : tensor<8x16x28x28xf16>, tensor<8x3x28x28xf16> -> tensor<16x3x3x3xf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
    OptionalAttr<TypeAttrOf<Train_Float>>:$accumulate,
    DefaultValuedOptionalAttr<I64Attr, "1">:$groups);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`strides` $strides^)? (`padding` $padding^)?
    (`dilation` $dilation^)? (`groups` $groups^)? (`accumulate` $accumulate^)?
    attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type products are summed in: `accumulate`, or f32 for f16/bf16
    /// operands, else the operand type (as conv2d's).
    ::mlir::Type getAccumulatorType();
  }];
}

def Train_Pool2dGradOp : Train_Op<"pool2d_grad", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "gradient of max_pool2d or avg_pool2d";
  let description = [{
    Routes each output gradient back to its window: to the window's maximum
    (the first one in row-major order when several tie, as PyTorch) with
    `max`, or spread evenly over the full window (`count_include_pad`)
    otherwise. `input` is the forward input (for the max positions and the
    result type).

    ```mlir
    %dx = train.pool2d_grad %dy, %x max kernel [2, 2] strides [2, 2] : tensor<8x16x14x14xf32>, tensor<8x16x28x28xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
    UnitAttr:$max, DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input (`max` $max^)? `kernel` $kernel `strides` $strides
    (`padding` $padding^)? (`dilation` $dilation^)? attr-dict `:` type($grad) `,` type($input)
  }];
  let hasVerifier = 1;
}

def Train_LayerNormGradOp : Train_Op<"layer_norm_grad", [Pure,
    AllTypesMatch<["grad", "input", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad", "bias_grad"]>]> {
  let summary = "gradients of layer_norm";
  let description = [{
    With statistics recomputed from `input` over the trailing dimensions
    `scale` spans: `xhat = (x - mean) * rstd`, `dbias = sum(dy)`,
    `dscale = sum(dy * xhat)` over the leading dimensions, and
    `dx = rstd * (dy*g - mean(dy*g) - xhat * mean(dy*g * xhat))` over the
    normalized ones; all sums in f32.

    ```mlir
    %dx, %dg, %db = train.layer_norm_grad %dy, %x, %g : tensor<1024x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
    Train_FloatTensor:$scale,
    DefaultValuedOptionalAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$input_grad,
    Train_FloatTensor:$scale_grad, Train_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale (`epsilon` $epsilon^)?
    attr-dict `:` type($grad) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Train_BatchNormGradOp : Train_Op<"batch_norm_grad", [Pure,
    AllTypesMatch<["grad", "input", "input_grad"]>,
    AllTypesMatch<["scale", "scale_grad", "bias_grad"]>]> {
  let summary = "gradients of batch_norm in training mode";
  let description = [{
    As layer_norm_grad with the statistics of each channel (dimension 1) over
    the batch and spatial dimensions; the activation may be f16 while scale
    and its gradients are f32.

    With `ranks N` (SyncBatchNorm, as batch_norm's) the statistics and the
    two sums `dx` needs are those of all N ranks' shards; `dscale` and
    `dbias` stay this rank's sums, which data parallelism then reduces as
    any other gradient (PyTorch's SyncBatchNorm backward).

    ```mlir
    %dx, %dg, %db = train.batch_norm_grad %dy, %x, %g : tensor<128x32x28x28xf16>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_FloatTensor:$input,
    Train_FloatTensor:$scale,
    DefaultValuedOptionalAttr<F64Attr, "1e-5">:$epsilon,
    DefaultValuedOptionalAttr<I64Attr, "1">:$ranks);
  let results = (outs Train_FloatTensor:$input_grad,
    Train_FloatTensor:$scale_grad, Train_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $grad `,` $input `,` $scale (`epsilon` $epsilon^)? (`ranks` $ranks^)?
    attr-dict `:` type($grad) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Train_EmbeddingGradOp : Train_Op<"embedding_grad", [Pure]> {
  let summary = "gradient of embedding with respect to the table";
  let description = [{
    `dtable[v, :] = sum of grad[p, :] over positions p with indices[p] == v`
    (clamped as the forward lookup clamps). The result type is the table's.

    ```mlir
    %dt = train.embedding_grad %dy, %tokens : tensor<8x128x256xf32>, tensor<8x128xi32> -> tensor<1024x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$grad, Train_IndexTensor:$indices);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINGRADOPS_TD
