//===- TrainDialect.td - The train dialect -----------------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINDIALECT_TD
#define AMP_DIALECT_TRAIN_IR_TRAINDIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Train_Dialect : Dialect {
  let name = "train";
  let cppNamespace = "::amp::train";
  let summary = "Neural-network training graphs on tensors";
  let description = [{
    The `train` dialect represents the forward computation of a neural network
    and its loss as a graph of tensor ops with static shapes, in the form amp's
    passes rewrite into a mixed-precision training step: autocast assigns each
    op a precision and inserts `train.cast` ops, autodiff derives the backward
    graph, and the loss-scaling and optimizer passes complete the step.

    Values are builtin ranked tensors of `f32`, `f16`, `bf16` (floats) and
    `i32` (labels, token ids). Element-wise binary ops broadcast with NumPy
    rules; every other op states its shape rule in its description. Only
    `train.cast` changes a float element type, so every precision change in a
    graph is an explicit op.

    Trainable parameters are function arguments marked `train.param`, with an
    optional `train.init` initializer (`#train.init<kaiming_uniform>`).
    Arguments marked `train.state` are buffers the step updates without
    training them (batch-norm running statistics); a forward function returns
    the loss first and then the new value of each `train.state` argument, in
    argument order. Results marked `train.output`, after those, are the
    model's outputs (its logits, its auxiliary heads): evaluation and
    `predict` return them; the training step does not.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The unit attribute marking a forward function's result as one of the
    /// model's outputs (after the loss and the state updates).
    static constexpr ::llvm::StringLiteral kOutputAttrName = "train.output";
    /// The unit attribute marking a function argument as a trainable parameter.
    static constexpr ::llvm::StringLiteral kParamAttrName = "train.param";
    /// The `#train.init` attribute giving a parameter's initializer.
    static constexpr ::llvm::StringLiteral kInitAttrName = "train.init";
    /// The per-op autocast override: "lower", "fp32" (or "f32"), "promote"
    /// or "follow".
    static constexpr ::llvm::StringLiteral kPrecisionAttrName =
        "train.precision";
    /// Marks a step argument holding optimizer state (moments, buffers, the
    /// step count), initialized by its `train.init`.
    static constexpr ::llvm::StringLiteral kOptStateAttrName = "train.opt_state";
    /// Marks a step argument holding the f32 master copy of a low-precision
    /// parameter, initialized from the parameter.
    static constexpr ::llvm::StringLiteral kMasterAttrName = "train.master";
    /// Marks a step argument holding loss-scaler state (the scale, the growth
    /// tracker), initialized by its `train.init`.
    static constexpr ::llvm::StringLiteral kScalerStateAttrName =
        "train.scaler_state";
    /// Marks the step argument holding the learning rate (a rank-0 f32, or
    /// a [G] f32 with one rate per parameter group).
    static constexpr ::llvm::StringLiteral kLrAttrName = "train.lr";
    /// On a parameter: its optimizer parameter group (an i64, 0 without),
    /// whose learning rate it uses.
    static constexpr ::llvm::StringLiteral kParamGroupAttrName =
        "train.param_group";
    /// On a parameter: its weight decay (an f64 in [0, 1]), in place of the
    /// optimizer's.
    static constexpr ::llvm::StringLiteral kWeightDecayAttrName =
        "train.weight_decay";
    /// The unit attribute marking a function argument as non-trained state.
    static constexpr ::llvm::StringLiteral kStateAttrName = "train.state";

    /// Registers the dialect's attributes (TrainAttributes.cpp).
    void registerAttributes();
  }];
}

/// Base class of every train op.
class Train_Op<string mnemonic, list<Trait> traits = []>
    : Op<Train_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// The float element types a training graph computes in.
def Train_Float : AnyTypeOf<[F16, BF16, F32], "f16, bf16 or f32">;

/// A statically shaped tensor of f16, bf16 or f32.
def Train_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32]>;

/// A statically shaped tensor of i32 (labels, token ids).
def Train_IndexTensor : StaticShapeTensorOf<[I32]>;

/// A statically shaped tensor of i1 (a mask, a comparison's result).
def Train_BoolTensor : StaticShapeTensorOf<[I1]>;

/// A statically shaped tensor a comparison reads: a float type, or i32.
def Train_ComparableTensor : StaticShapeTensorOf<[F16, BF16, F32, I32]>;

/// A rank-0 float tensor (a loss).
def Train_ScalarFloatTensor : 0DTensorOf<[F16, BF16, F32]>;

#endif // AMP_DIALECT_TRAIN_IR_TRAINDIALECT_TD
