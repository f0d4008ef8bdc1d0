//===- TrainInterfaces.td - Interfaces of train ops --------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAININTERFACES_TD
#define AMP_DIALECT_TRAIN_IR_TRAININTERFACES_TD

include "mlir/IR/OpBase.td"

def Train_PrecisionPolicyOpInterface
    : OpInterface<"PrecisionPolicyOpInterface"> {
  let cppNamespace = "::amp::train";
  let description = [{
    How autocast decides an op's precision. Each op carries a default
    category that mirrors PyTorch's CUDA autocast lists:

    - `lower`: computes in the low type (f16/bf16) with f32 accumulation
      (matmul, batch_matmul, conv2d);
    - `fp32`: computes in f32 (softmax, log_softmax, layer_norm, exp, log,
      reductions, losses);
    - `promote`: computes in the widest type among its operands (add, sub,
      mul, div, concat);
    - `follow`: computes in whatever type arrives (relu, gelu, reshape,
      pooling, ...).

    Overrides (a `train.precision` attribute on the op, then a JSON policy
    file) and the opt level change the category; the interface only states the
    default and which operands the category applies to.
  }];
  let methods = [
    StaticInterfaceMethod<
      "The op's entry in the autocast lists: its category without regard to "
      "operand shapes (the precision table of docs/Passes.md prints it).",
      "::amp::train::PrecisionCategory", "getListedPrecision", (ins), [{}],
      [{ return ConcreteOp::kDefaultPrecision; }]>,
    InterfaceMethod<
      "The category autocast uses when nothing overrides it: the listed one, "
      "unless the operands call for another (a scalar divided by a tensor is "
      "PyTorch's fp32 reciprocal).",
      "::amp::train::PrecisionCategory", "getDefaultPrecision", (ins), [{}],
      [{ return ConcreteOp::kDefaultPrecision; }]>,
    InterfaceMethod<
      "The operands whose element type the category decides (by default "
      "every float tensor operand; integer operands such as labels are "
      "never cast).",
      "::llvm::SmallVector<unsigned>", "getPrecisionOperands", (ins), [{}],
      [{
        ::llvm::SmallVector<unsigned> indices;
        for (auto [i, operand] : ::llvm::enumerate($_op->getOperands()))
          if (auto t = ::llvm::dyn_cast<::mlir::ShapedType>(operand.getType()))
            if (::llvm::isa<::mlir::FloatType>(t.getElementType()))
              indices.push_back(i);
        return indices;
      }]>,
    InterfaceMethod<
      "Sets the type a contraction accumulates in (its `accumulate` "
      "attribute; a null type removes it, so the op accumulates in its "
      "operand type); returns false for ops that do not accumulate products.",
      "bool", "setAccumulatorType", (ins "::mlir::Type":$type), [{}],
      [{
        if constexpr (::llvm::is_detected<
                          ::amp::train::detail::HasAccumulateAttr,
                          ConcreteOp>::value) {
          $_op.setAccumulateAttr(type ? ::mlir::TypeAttr::get(type)
                                      : ::mlir::TypeAttr());
          return true;
        }
        return false;
      }]>,
    InterfaceMethod<
      "The type set by the op's `accumulate` attribute, or null (none set, "
      "or an op that does not accumulate products).",
      "::mlir::Type", "getAccumulatorOverride", (ins), [{}],
      [{
        if constexpr (::llvm::is_detected<
                          ::amp::train::detail::HasAccumulateAttr,
                          ConcreteOp>::value)
          if (auto attr = $_op.getAccumulateAttr())
            return attr.getValue();
        return ::mlir::Type();
      }]>,
    InterfaceMethod<
      "Whether Apex's O2 keeps the parameters and state this op reads in "
      "fp32 while its activation stays in the low type "
      "(keep_batchnorm_fp32).",
      "bool", "keepsFp32AtO2", (ins), [{}], [{ return false; }]>,
  ];
}

def Train_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::amp::train";
  let description = [{
    Reverse-mode differentiation of one op: given the gradients of its
    results, build the vector-Jacobian product, one gradient per operand.
    Gradients have the type of the value they belong to, so backward ops run
    in the precision of their forward op (PyTorch's rule) and the gradient of
    a `train.cast` casts back.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the VJP at the builder's insertion point. `resultGrads` has one "
      "entry per result, null where the result does not reach the loss; "
      "`operandGrads` receives one entry per operand, null where the operand "
      "has no gradient (integer labels and indices). Fails with a diagnostic "
      "when the gradient cannot be built.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def Train_ElementwiseOpInterface : OpInterface<"ElementwiseOpInterface"> {
  let cppNamespace = "::amp::train";
  let description = [{
    An element-wise op given by its scalar formula and its local derivative,
    both written once in the op's definition (`Train_UnaryOp`,
    `Train_BinaryOp` in TrainComputeOps.td). One generic lowering (a parallel
    linalg.generic over the broadcast operands, in f32 for f16/bf16 with one
    rounding) and one generic VJP (`buildElementwiseVJP`: each operand's
    gradient, reduced over its broadcast dimensions) serve every such op.
  }];
  let methods = [
    InterfaceMethod<
      "The scalar result from the scalar operands `args` (one per operand, "
      "in the compute type: f32 for f16/bf16 tensors), built at `b`.",
      "::mlir::Value", "buildScalar",
      (ins "::mlir::OpBuilder &":$b, "::mlir::Location":$loc,
           "::mlir::ValueRange":$args)>,
    InterfaceMethod<
      "The gradient of operand `operand` for the result gradient `dy`, "
      "built of train ops at `b` in the result's shape (the generic VJP "
      "reduces it to the operand's); null when the operand has none.",
      "::mlir::Value", "buildOperandGrad",
      (ins "::mlir::OpBuilder &":$b, "unsigned":$operand,
           "::mlir::Value":$dy)>,
  ];
}

/// How a gradient transform relates to the loss scale.
def Train_GradientTransformOpInterface
    : OpInterface<"GradientTransformOpInterface"> {
  let cppNamespace = "::amp::train";
  let description = [{
    An op between backward and the optimizer update that maps the step's
    gradients to new gradients, one for one and in order (accumulation,
    clipping, unscaling, and next an all-reduce). Passes find their place in
    the chain by walking it from the update's gradients, not by op names:
    amp-loss-scaling puts `unscale_grads` after every transform that keeps
    gradients scaled and before every one that needs true values.
  }];
  let methods = [
    InterfaceMethod<"The gradients the op takes.",
      "::mlir::MutableOperandRange", "getInputGradsMutable", (ins), [{}],
      [{ return $_op.getGradsMutable(); }]>,
    InterfaceMethod<"The new gradients, one per input gradient, in order.",
      "::mlir::ValueRange", "getOutputGrads", (ins), [{}],
      [{ return $_op->getResults().take_front($_op.getGrads().size()); }]>,
    InterfaceMethod<
      "What the op needs of the loss scale: `scaled` (it must see the "
      "gradients before unscaling: accumulation sums micro-batches scaled "
      "and they are unscaled once), `unscaled` (it needs true values: "
      "clipping's norm), or `either` (linear: a sum across ranks).",
      "::amp::train::GradientScaleUse", "getScaleUse">,
  ];
}

/// The optimizer update a training step ends in.
def Train_OptimizerUpdateOpInterface
    : OpInterface<"OptimizerUpdateOpInterface"> {
  let cppNamespace = "::amp::train";
  let description = [{
    The fused parameter update (sgd_update, adam_update, and any later
    optimizer): its gradients and its `skip` flag (the update leaves every
    parameter and state unchanged when set). amp-loss-scaling and
    amp-optimizer find it through this interface.
  }];
  let methods = [
    InterfaceMethod<"The gradients, one per parameter.",
      "::mlir::MutableOperandRange", "getGradsMutable">,
    InterfaceMethod<"The optional skip flag (rank-0 i1).",
      "::mlir::MutableOperandRange", "getSkipMutable">,
  ];
}

/// Marks a loss: its result is the rank-0 value training minimizes. Apex's
/// O2 casts the model's outputs to fp32 (output_caster), so losses and
/// everything computed from them run in fp32 there.
def Train_Loss : NativeOpTrait<"IsLoss"> {
  let cppNamespace = "::amp::train";
}

/// Gives an op its default autocast category (see the interface).
class Train_DefaultPrecision<string category>
    : ParamNativeOpTrait<"DefaultPrecision",
                         "::amp::train::PrecisionCategory::" # category> {
  let cppNamespace = "::amp::train";
}

/// The traits of an op with precision policy `category`.
class Train_Precision<string category> {
  list<Trait> traits = [Train_PrecisionPolicyOpInterface,
                        Train_DefaultPrecision<category>];
}

defvar Train_Lower = Train_Precision<"lower">.traits;
defvar Train_Fp32 = Train_Precision<"fp32">.traits;
defvar Train_Promote = Train_Precision<"promote">.traits;
defvar Train_Follow = Train_Precision<"follow">.traits;

#endif // AMP_DIALECT_TRAIN_IR_TRAININTERFACES_TD
