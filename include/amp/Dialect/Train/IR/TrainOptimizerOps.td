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

def Train_SgdUpdateOp : Train_Op<"sgd_update", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "fused SGD (with momentum and weight decay) over all parameters";
  let description = [{
    For each parameter p with gradient g (PyTorch's SGD, dampening 0):

    ```
    g = g + weight_decay * p
    buf = momentum * buf + g          (when momentum != 0; buffers start at 0)
    p = p - lr * (nesterov ? g + momentum * buf : buf or g)
    ```

    computed in f32 and rounded once to each result's type. Results: the new
    parameters, then the new momentum buffers.

    ```mlir
    %p0, %p1 = train.sgd_update %lr params(%w, %b) grads(%dw, %db) weight_decay 1.000000e-04
        : tensor<f32>, (tensor<784x256xf32>, tensor<256xf32>), (tensor<784x256xf32>, tensor<256xf32>)
    ```
  }];
  let arguments = (ins Train_ScalarFloatTensor:$lr,
    Variadic<Train_FloatTensor>:$params, Variadic<Train_FloatTensor>:$grads,
    Variadic<Train_FloatTensor>:$momentum_buffers,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$momentum,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$weight_decay,
    UnitAttr:$nesterov);
  let results = (outs Variadic<Train_FloatTensor>:$results);
  let assemblyFormat = [{
    $lr `params` `(` $params `)` `grads` `(` $grads `)`
    (`momentum_buffers` `(` $momentum_buffers^ `)`)?
    (`momentum` $momentum^)? (`weight_decay` $weight_decay^)?
    (`nesterov` $nesterov^)? attr-dict
    `:` type($lr) `,` `(` type($params) `)` `,` `(` type($grads) `)`
    (`,` `(` type($momentum_buffers)^ `)`)?
  }];
  let hasVerifier = 1;
}

def Train_AdamUpdateOp : Train_Op<"adam_update", [Pure,
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
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

    ```mlir
    %r:7 = train.adam_update %lr, %step params(%w, %b) grads(%dw, %db) exp_avgs(%m0, %m1) exp_avg_sqs(%v0, %v1) decoupled weight_decay 1.000000e-02
        : tensor<f32>, tensor<i32>, (...), (...), (...), (...)
    ```
  }];
  let arguments = (ins Train_ScalarFloatTensor:$lr, 0DTensorOf<[I32]>:$step,
    Variadic<Train_FloatTensor>:$params, Variadic<Train_FloatTensor>:$grads,
    Variadic<Train_FloatTensor>:$exp_avgs,
    Variadic<Train_FloatTensor>:$exp_avg_sqs,
    DefaultValuedOptionalAttr<F64Attr, "0.9">:$beta1,
    DefaultValuedOptionalAttr<F64Attr, "0.999">:$beta2,
    DefaultValuedOptionalAttr<F64Attr, "1e-8">:$epsilon,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$weight_decay,
    UnitAttr:$decoupled);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $lr `,` $step `params` `(` $params `)` `grads` `(` $grads `)`
    `exp_avgs` `(` $exp_avgs `)` `exp_avg_sqs` `(` $exp_avg_sqs `)`
    (`decoupled` $decoupled^)? (`beta1` $beta1^)? (`beta2` $beta2^)?
    (`epsilon` $epsilon^)? (`weight_decay` $weight_decay^)? attr-dict
    `:` type($lr) `,` type($step) `,` `(` type($params) `)` `,` `(` type($grads) `)`
    `,` `(` type($exp_avgs) `)` `,` `(` type($exp_avg_sqs) `)`
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINOPTIMIZEROPS_TD
