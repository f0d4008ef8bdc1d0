//===- TrainOptimizerOps.td - Optimizer update ops of train -*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Fused multi-tensor updates: one op updates every parameter of a step, in
// f32, with the formulas of PyTorch's SGD, Adam and AdamW (docs/Autodiff.md).
// The learning rate is an operand, so a schedule changes it without a
// recompile.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// A rank-0 i1 tensor: a step's skip flag. Buildable, so formats need not
/// spell its type.
def Train_Flag : Type<And<[
      CPred<"::llvm::isa<::mlir::RankedTensorType>($_self)">,
      CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getRank() == 0">,
      CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).getElementType().isInteger(1)">]>,
    "rank-0 i1 tensor">,
  BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI1Type())">;

/// The learning rate: one f32 scalar, or one per parameter group.
def Train_LearningRate : TensorRankOf<[F32], [0, 1]>;

def Train_SgdUpdateOp : Train_Op<"sgd_update", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    Train_OptimizerUpdateOpInterface]> {
  let summary = "fused SGD (with momentum and weight decay) over all parameters";
  let description = [{
    For each parameter p with gradient g (PyTorch's SGD, dampening 0):

    ```
    g = g + weight_decay * p
    buf = momentum * buf + g          (when momentum != 0; buffers start at 0)
    p = p - lr * (nesterov ? g + momentum * buf : buf or g)
    ```

    computed in f32 and rounded once to each result's type. Results: the new
    parameters, then the new momentum buffers. With `skip(%flag)` and the
    flag true, every result equals its input bit for bit (a skipped step).

    Parameter groups (PyTorch's `param_groups`): with `lr` a `[G]` tensor,
    `lr_groups` gives each parameter's group, whose rate it uses; with
    `weight_decays`, each parameter has its own weight decay in place of
    `weight_decay`.

    ```mlir
    %p0, %p1 = train.sgd_update %lr params(%w, %b) grads(%dw, %db) weight_decay 1.000000e-04
        : tensor<f32>, (tensor<784x256xf32>, tensor<256xf32>), (tensor<784x256xf32>, tensor<256xf32>)
    ```
  }];
  let arguments = (ins Train_LearningRate:$lr,
    Variadic<Train_FloatTensor>:$params, Variadic<Train_FloatTensor>:$grads,
    Variadic<Train_FloatTensor>:$momentum_buffers,
    Optional<Train_Flag>:$skip,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$momentum,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$weight_decay,
    UnitAttr:$nesterov,
    OptionalAttr<DenseI64ArrayAttr>:$lr_groups,
    OptionalAttr<DenseF64ArrayAttr>:$weight_decays);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    $lr `params` `(` $params `)` `grads` `(` $grads `)`
    (`momentum_buffers` `(` $momentum_buffers^ `)`)? (`skip` `(` $skip^ `)`)?
    (`momentum` $momentum^)? (`weight_decay` $weight_decay^)?
    (`nesterov` $nesterov^)? attr-dict
    `:` type($lr) `,` `(` type($params) `)` `,` `(` type($grads) `)`
    (`,` `(` type($momentum_buffers)^ `)`)?
  }];
  let hasVerifier = 1;
}

def Train_AdamUpdateOp : Train_Op<"adam_update", [Pure,
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<InferTypeOpInterface>,
    Train_OptimizerUpdateOpInterface]> {
  let summary = "fused Adam / AdamW over all parameters";
  let description = [{
    With t = step + 1 (step counts the updates already made) and, for each
    parameter p, gradient g and moments m, v (PyTorch's Adam and AdamW):

    ```
    Adam:  g = g + weight_decay * p          AdamW: p = p * (1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g^2
    p = p - (lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + epsilon)
    ```

    in f32, rounded once to each result's type. Results: the new parameters,
    the new first moments, the new second moments, then the new step (t).
    With `skip(%flag)` and the flag true, every result equals its input (the
    step count too).

    Parameter groups (PyTorch's `param_groups`): with `lr` a `[G]` tensor,
    `lr_groups` gives each parameter's group, whose rate it uses; with
    `weight_decays`, each parameter has its own weight decay in place of
    `weight_decay`.

    ```mlir
    %r:7 = train.adam_update %lr, %step params(%w, %b) grads(%dw, %db) exp_avgs(%m0, %m1) exp_avg_sqs(%v0, %v1) decoupled weight_decay 1.000000e-02
        : tensor<f32>, tensor<i32>, (...), (...), (...), (...)
    ```
  }];
  let arguments = (ins Train_LearningRate:$lr, 0DTensorOf<[I32]>:$step,
    Variadic<Train_FloatTensor>:$params, Variadic<Train_FloatTensor>:$grads,
    Variadic<Train_FloatTensor>:$exp_avgs,
    Variadic<Train_FloatTensor>:$exp_avg_sqs,
    Optional<Train_Flag>:$skip,
    DefaultValuedOptionalAttr<F64Attr, "0.9">:$beta1,
    DefaultValuedOptionalAttr<F64Attr, "0.999">:$beta2,
    DefaultValuedOptionalAttr<F64Attr, "1e-8">:$epsilon,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$weight_decay,
    UnitAttr:$decoupled,
    OptionalAttr<DenseI64ArrayAttr>:$lr_groups,
    OptionalAttr<DenseF64ArrayAttr>:$weight_decays);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $lr `,` $step `params` `(` $params `)` `grads` `(` $grads `)`
    `exp_avgs` `(` $exp_avgs `)` `exp_avg_sqs` `(` $exp_avg_sqs `)`
    (`skip` `(` $skip^ `)`)?
    (`decoupled` $decoupled^)? (`beta1` $beta1^)? (`beta2` $beta2^)?
    (`epsilon` $epsilon^)? (`weight_decay` $weight_decay^)? attr-dict
    `:` type($lr) `,` type($step) `,` `(` type($params) `)` `,` `(` type($grads) `)`
    `,` `(` type($exp_avgs) `)` `,` `(` type($exp_avg_sqs) `)`
  }];
  let hasVerifier = 1;
}

def Train_ClipGradNormOp : Train_Op<"clip_grad_norm", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<Train_GradientTransformOpInterface>]> {
  let summary = "scale gradients so their global L2 norm is at most max_norm";
  let description = [{
    PyTorch's `clip_grad_norm_`: `norm = sqrt(sum_i sum(g_i^2))` in f32 over
    all gradients, `coef = min(1, max_norm / (norm + 1e-6))`, each gradient
    multiplied by coef. Results: the clipped gradients, then the norm
    (rank-0 f32; a non-finite norm propagates into the gradients, which loss
    scaling detects).

    ```mlir
    %r:3 = train.clip_grad_norm (%dw, %db) max_norm 1.000000e+00 : (tensor<784x256xf32>, tensor<256xf32>)
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$grads, F64Attr:$max_norm);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    `(` $grads `)` `max_norm` $max_norm attr-dict `:` `(` type($grads) `)`
  }];
  let hasVerifier = 1;
}

def Train_AccumulateGradsOp : Train_Op<"accumulate_grads", [Pure,
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<Train_GradientTransformOpInterface,
                              ["getOutputGrads"]>]> {
  let summary = "gradient accumulation over a fixed number of micro-batches";
  let description = [{
    Adds each gradient to its accumulator and counts micro-batches: with
    `sum = acc + g` and `ready = (count + 1 == steps)`, returns the new
    accumulators (zero when ready, else sum), the new count (0 when ready,
    else count + 1), `pending = !ready` (rank-0 i1: the update's `skip`),
    then the mean gradients `sum / steps` for the update.

    ```mlir
    %r:6 = train.accumulate_grads %count accumulators(%aw, %ab) grads(%dw, %db) steps 4
        : tensor<i32>, (tensor<784x256xf32>, tensor<256xf32>)
    ```
  }];
  let arguments = (ins 0DTensorOf<[I32]>:$count,
    Variadic<Train_FloatTensor>:$accumulators, Variadic<Train_FloatTensor>:$grads,
    I64Attr:$steps);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $count `accumulators` `(` $accumulators `)` `grads` `(` $grads `)`
    `steps` $steps attr-dict `:` type($count) `,` `(` type($accumulators) `)`
    `,` `(` type($grads) `)`
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD
