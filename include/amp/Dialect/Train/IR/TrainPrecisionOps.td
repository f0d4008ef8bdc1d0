//===- TrainPrecisionOps.td - Precision ops of train -------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINPRECISIONOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINPRECISIONOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Train_CastOp : Train_Op<"cast",
    [Pure, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>]> {
  let summary = "converts a tensor between float types";
  let description = [{
    The only op that changes a float element type: converts every element of
    an f32, f16 or bf16 tensor to another of these types with
    round-to-nearest-even (values beyond the target's range become infinity).
    The shape is unchanged.

    A widening cast (f16 -> f32, bf16 -> f32) is exact, so a cast back to the
    original type folds away; a narrowing round trip (f32 -> f16 -> f32) loses
    information and is kept.

    With `user`, the cast is the model's own (`x.float()`, `.to(torch.float32)`
    in PyTorch): it keeps its result type whatever autocast does to its
    input, so the ops after it that follow their input stay in that type,
    as under PyTorch's autocast (lower-list ops after it still run in the
    low type). Such a cast may have its input's type (the imported model is
    f32): it is not folded until amp-cast-cleanup, after autocast, so
    autocast and its report see it (decision `fp32/user cast`).

    ```mlir
    %h = train.cast %w : tensor<784x256xf32> to tensor<784x256xf16>
    %f = train.cast %x user : tensor<8x64xf32> to tensor<8x64xf32>
    ```
  }];
  let arguments = (ins AnyStaticShapeTensor:$input, UnitAttr:$user);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat =
    "$input (`user` $user^)? attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINPRECISIONOPS_TD
