//===- TrainCollectiveOps.td - Collectives across ranks ----*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Data parallelism: N processes (ranks) run the same step on their own
// batches and combine values through collectives, placed in the step by
// amp-data-parallel. The ops say what is combined and how; which engine
// does it (MPI between processes, NCCL between GPUs) is the lowering's
// business.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINCOLLECTIVEOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINCOLLECTIVEOPS_TD

include "amp/Dialect/Train/IR/TrainAttributes.td"
include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainOptimizerOps.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// What an all-reduce combines: gradients and step flags.
def Train_CollectiveTensor : StaticShapeTensorOf<[F16, BF16, F32, I1]>;

def Train_AllReduceOp : Train_Op<"all_reduce", [Pure,
    AttrSizedOperandSegments, DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<Train_GradientTransformOpInterface,
                              ["getInputGradsMutable", "getOutputGrads"]>]> {
  let summary = "combine tensors across the ranks of a data-parallel step";
  let description = [{
    Every one of `ranks` processes runs the same step and reaches this op
    with its own values of `inputs`; each result is the element-wise
    combination over the ranks, the same on every rank:

    - `sum`: the ranks' values summed in f32 (f16/bf16 inputs are widened)
      and rounded to the input's type.
    - `mean`: each rank's values multiplied by 1/ranks (in f32) before they
      go on the wire, then summed: DDP's gradient average with the division
      before the communication, so that a 16-bit wire does not overflow
      where the mean would not.
    - `max`: the largest value; on i1 flags, whether any rank's is set
      (found_inf).

    `wire` is the element type sent between ranks (default: the input's);
    a narrower wire rounds each rank's contribution to it, and a value too
    large for it becomes inf, which loss scaling detects as any other
    overflow. With `skip(%flag)` set (micro-batches still accumulating)
    nothing is sent and the results are the inputs; every rank has the same
    flag, so all skip together.

    One op is one bucket: its inputs travel together, and it can start as
    soon as they are all computed.

    ```mlir
    %r:2 = train.all_reduce sum (%dw, %db) ranks 2 : (tensor<784x256xf32>, tensor<256xf32>)
    %g = train.all_reduce mean (%dw) skip(%pending) ranks 4 wire f16 : (tensor<784x256xf32>)
    %f = train.all_reduce max (%found_inf) ranks 2 : (tensor<i1>)
    ```
  }];
  let arguments = (ins Train_ReduceKindAttr:$kind,
    Variadic<Train_CollectiveTensor>:$inputs, Optional<Train_Flag>:$skip,
    I64Attr:$ranks, OptionalAttr<TypeAttrOf<AnyFloat>>:$wire);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = [{
    $kind `(` $inputs `)` (`skip` `(` $skip^ `)`)? `ranks` $ranks
    (`wire` $wire^)? attr-dict `:` `(` type($inputs) `)`
  }];
  let hasVerifier = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINCOLLECTIVEOPS_TD
