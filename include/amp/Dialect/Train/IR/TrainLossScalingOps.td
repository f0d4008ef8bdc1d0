//===- TrainLossScalingOps.td - Loss-scaling ops of train --*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Dynamic loss scaling with PyTorch GradScaler's semantics, inside the step:
// no host round trip decides whether a step is skipped or how the scale moves.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINLOSSSCALINGOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINLOSSSCALINGOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainOptimizerOps.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_UnscaleGradsOp : Train_Op<"unscale_grads", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<Train_GradientTransformOpInterface>]> {
  let summary = "unscale all gradients and detect inf/NaN in one pass";
  let description = [{
    GradScaler's fused check-and-unscale: `inv = 1 / scale` computed in f64
    and rounded to f32 once; every gradient element is multiplied by inv
    (in f32, rounded to the gradient's type), and `found_inf` is true when
    any element of any gradient, before unscaling, is inf or NaN. Results:
    the unscaled gradients, then found_inf (rank-0 i1).

    `divisor` D (default 1) folds a mean into the unscaling: `inv = 1 /
    (scale * D)`, in f64 and rounded to f32 once. amp-data-parallel sets it
    to the number of ranks after summing their gradients, so the average
    costs no pass of its own (DDP averages, GradScaler unscales).

    ```mlir
    %r:3 = train.unscale_grads %scale grads(%dw, %db) : tensor<f32>, (tensor<784x256xf32>, tensor<256xf32>)
    %m:2 = train.unscale_grads %scale grads(%dw) divisor 2 : tensor<f32>, (tensor<784x256xf32>)
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$scale,
                       Variadic<Train_FloatTensor>:$grads,
                       DefaultValuedOptionalAttr<I64Attr, "1">:$divisor);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $scale `grads` `(` $grads `)` (`divisor` $divisor^)? attr-dict `:` type($scale) `,` `(` type($grads) `)`
  }];
  let hasVerifier = 1;
}

def Train_UpdateScaleOp : Train_Op<"update_scale", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "GradScaler's scale update, on the device";
  let description = [{
    PyTorch's `_amp_update_scale_`, with optional caps:

    ```
    if found_inf:  scale = max(scale * backoff_factor, min_scale); tracker = 0
    else:          tracker += 1
                   if tracker == growth_interval:
                     new = scale * growth_factor       (in f32)
                     if isfinite(new): scale = min(new, max_scale)
                     tracker = 0
    ```

    Results: the new scale (rank-0 f32), the new growth tracker (rank-0
    i32), and `collapsed` (rank-0 i1): true when a backoff would have taken
    the scale below `min_scale` (the loss-scale-collapse condition a driver
    turns into an error). `min_scale` defaults to 0 (no floor), `max_scale`
    to infinity (no cap).

    `hysteresis` H (default 1, GradScaler) tolerates H-1 consecutive
    overflowing steps before backing off (DeepSpeed's consecutive
    hysteresis): they are still skipped, but only the H-th in a row reduces
    the scale. The count of consecutive overflows lives in the tracker as a
    negative number, so the state stays (scale, tracker); a clean step
    starts counting clean steps from 1 again.

    With `skip(%pending)` true (micro-batches still
    accumulating) the scale and tracker are returned unchanged.

    ```mlir
    %s, %t, %c = train.update_scale %scale, %tracker, %found_inf growth_factor 2.0 backoff_factor 0.5 growth_interval 2000
        : tensor<f32>, tensor<i32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F32]>:$scale, 0DTensorOf<[I32]>:$tracker,
    Train_Flag:$found_inf, Optional<Train_Flag>:$skip,
    DefaultValuedOptionalAttr<F64Attr, "2.0">:$growth_factor,
    DefaultValuedOptionalAttr<F64Attr, "0.5">:$backoff_factor,
    DefaultValuedOptionalAttr<I64Attr, "2000">:$growth_interval,
    DefaultValuedOptionalAttr<F64Attr, "0.0">:$min_scale,
    DefaultValuedOptionalAttr<F64Attr, "::std::numeric_limits<double>::infinity()">:$max_scale,
    DefaultValuedOptionalAttr<I64Attr, "1">:$hysteresis);
  let results = (outs 0DTensorOf<[F32]>:$new_scale,
                      0DTensorOf<[I32]>:$new_tracker,
                      0DTensorOf<[I1]>:$collapsed);
  let assemblyFormat = [{
    $scale `,` $tracker `,` $found_inf (`skip` `(` $skip^ `)`)?
    (`growth_factor` $growth_factor^)?
    (`backoff_factor` $backoff_factor^)? (`growth_interval` $growth_interval^)?
    (`min_scale` $min_scale^)? (`max_scale` $max_scale^)?
    (`hysteresis` $hysteresis^)?
    attr-dict `:` type($scale) `,` type($tracker)
  }];
  let hasVerifier = 1;
}

def Train_AnyOp : Train_Op<"any", [Pure, Commutative,
    AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "logical or of two step flags";
  let description = [{
    ```mlir
    %skip = train.any %found_inf, %pending : tensor<i1>
    ```
  }];
  let arguments = (ins Train_Flag:$lhs, Train_Flag:$rhs);
  let results = (outs Train_Flag:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Train_FirstNonfiniteOp : Train_Op<"first_nonfinite", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "which value first holds an inf or NaN";
  let description = [{
    The index of the first of `values` with an inf or NaN element, -1 when
    every element of every value is finite. `order` (a permutation of the
    operand indices; default: operand order) is the order they are looked
    at in; the result is always an operand index. amp-loss-scaling uses it
    to keep a non-finite forward out of the state (the loss and the new
    running statistics) and to say why a step was skipped (the loss, a
    running statistic, or the first gradient in backward's order).

    ```mlir
    %i = train.first_nonfinite %loss, %mean : tensor<f32>, tensor<32xf32>
    %j = train.first_nonfinite %dw, %db order [1, 0] : tensor<784x256xf16>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$values,
                       OptionalAttr<DenseI64ArrayAttr>:$order);
  let results = (outs 0DTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $values (`order` $order^)? attr-dict `:` type($values)
  }];
  let hasVerifier = 1;
}

def Train_CheckNumericsOp : Train_Op<"check_numerics", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "the largest magnitude of each value, inf and NaN kept";
  let description = [{
    One f32 per operand: the largest |x| over its elements (0 for an empty
    tensor), NaN when an element is NaN, else +inf when one is an inf. So
    a value is finite exactly when its entry is; the finite entries say how
    close the values came to the low type's range. amp-check-numerics puts
    one after the backward, over the step's arguments and the outputs of
    the ops that can make a non-finite value from finite inputs, and the
    host names the first op whose output is not finite while its inputs
    were (docs/Numerics.md).

    With `smallest`, the vector has N more entries after the N largest:
    each operand's smallest nonzero finite magnitude (0 when it has none),
    for a calibration's underflow headroom.

    ```mlir
    %m = train.check_numerics %x, %h : tensor<4x8xf32>, tensor<8xf16>
    // %m : tensor<2xf32>
    %s = train.check_numerics %x, %h smallest : tensor<4x8xf32>, tensor<8xf16>
    // %s : tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Train_FloatTensor>:$values, UnitAttr:$smallest);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $values (`smallest` $smallest^)? attr-dict `:` type($values)
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINLOSSSCALINGOPS_TD
