//===- TrainComputeOps.td - Compute ops of train -----------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Element-wise ops, contractions (matmul, conv), normalizations, pooling,
// reductions, embedding and dropout.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINCOMPUTEOPS_TD
#define AMP_DIALECT_TRAIN_IR_TRAINCOMPUTEOPS_TD

include "amp/Dialect/Train/IR/TrainDialect.td"
include "amp/Dialect/Train/IR/TrainAttributes.td"
include "amp/Dialect/Train/IR/TrainInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Element-wise unary ops
//===----------------------------------------------------------------------===//

/// An element-wise op on one float tensor; the result has the operand's type.
/// Defined once: `scalar` builds the result from the scalar `x` (in the
/// compute type) with arith/math ops at builder `b`, location `loc`;
/// `derivative` builds the input's gradient from `dy` with train ops, given
/// the input `x` and the result `y`. The generic lowering and VJP
/// (ElementwiseOpInterface) do the rest (docs/Architecture.md, "adding an
/// element-wise op").
class Train_UnaryOp<string mnemonic, string formula, list<Trait> traits,
                    code scalar, code derivative>
    : Train_Op<mnemonic, !listconcat(traits, [Pure, SameOperandsAndResultType,
        DeclareOpInterfaceMethods<Train_ElementwiseOpInterface>,
        DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise " # formula;
  let description = [{
    Applies `}] # formula # [{` to every element. The result has the operand's
    type (shape and element type).

    ```mlir
    %y = train.}] # mnemonic # [{ %x : tensor<128x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let extraClassDefinition = [{
    ::mlir::Value $cppClass::buildScalar(::mlir::OpBuilder &b,
        ::mlir::Location loc, ::mlir::ValueRange args) {
      [[maybe_unused]] ::mlir::Value x = args[0];
      }] # scalar # [{
    }
    ::mlir::Value $cppClass::buildOperandGrad(::mlir::OpBuilder &b,
        unsigned operand, ::mlir::Value dy) {
      [[maybe_unused]] ::mlir::Location loc = getLoc();
      [[maybe_unused]] ::mlir::Value x = getInput(), y = getResult();
      }] # derivative # [{
    }
    ::llvm::LogicalResult $cppClass::buildVJP(::mlir::OpBuilder &b,
        ::llvm::ArrayRef<::mlir::Value> resultGrads,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
      return ::amp::train::buildElementwiseVJP(*this, b, resultGrads,
                                                operandGrads);
    }
  }];
}

def Train_ReluOp : Train_UnaryOp<"relu", "max(x, 0)", Train_Follow,
    // maximumf propagates NaN, as torch.relu does.
    [{ return ::mlir::arith::MaximumFOp::create(b, loc, x,
           scalarConstant(b, loc, x.getType(), 0.0)); }],
    [{ return ReluGradOp::create(b, loc, dy, x); }]> {
  let hasFolder = 1;
}
def Train_TanhOp : Train_UnaryOp<"tanh", "tanh(x)", Train_Follow,
    [{ return ::mlir::math::TanhOp::create(b, loc, x); }],
    // dy * (1 - y^2)
    [{ Value one = scalarLike(b, loc, y, 1.0);
       Value d = SubOp::create(b, loc, one, MulOp::create(b, loc, y, y));
       return MulOp::create(b, loc, dy, d); }]>;
def Train_SigmoidOp : Train_UnaryOp<"sigmoid", "1 / (1 + exp(-x))",
    Train_Follow,
    // exp overflows to inf for x < -88 and gives 0 exactly.
    [{ Value e = ::mlir::math::ExpOp::create(b, loc,
           ::mlir::arith::NegFOp::create(b, loc, x));
       Value one = scalarConstant(b, loc, x.getType(), 1.0);
       return ::mlir::arith::DivFOp::create(b, loc, one,
           ::mlir::arith::AddFOp::create(b, loc, one, e)); }],
    // dy * y * (1 - y)
    [{ Value one = scalarLike(b, loc, y, 1.0);
       Value d = MulOp::create(b, loc, y, SubOp::create(b, loc, one, y));
       return MulOp::create(b, loc, dy, d); }]>;
def Train_ExpOp : Train_UnaryOp<"exp", "exp(x)", Train_Fp32,
    [{ return ::mlir::math::ExpOp::create(b, loc, x); }],
    [{ return MulOp::create(b, loc, dy, y); }]>;
def Train_LogOp : Train_UnaryOp<"log", "log(x)", Train_Fp32,
    [{ return ::mlir::math::LogOp::create(b, loc, x); }],
    [{ return DivOp::create(b, loc, dy, x); }]>;
/// torch's `x.detach()` in a training graph: the value, through which no
/// gradient flows back (its operand gets none from this use).
def Train_StopGradientOp : Train_UnaryOp<"stop_gradient",
    "x, with no gradient back to x (torch's detach)", Train_Follow,
    [{ return x; }],
    [{ return ::mlir::Value(); }]>;
/// PyTorch's autocast lists leave sqrt out (it runs in the type it gets);
/// Apex's O1 lists do too.
def Train_SqrtOp : Train_UnaryOp<"sqrt", "sqrt(x)", Train_Follow,
    [{ return ::mlir::math::SqrtOp::create(b, loc, x); }],
    // dy / (2 y)
    [{ return DivOp::create(b, loc, dy,
           MulOp::create(b, loc, y, scalarLike(b, loc, y, 2.0))); }]>;

def Train_GeluOp : Train_Op<"gelu",
    !listconcat(Train_Follow, [Pure, SameOperandsAndResultType,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise Gaussian error linear unit";
  let description = [{
    `gelu(x) = x * Phi(x)` with Phi the standard normal CDF (no `approximate`
    or `approximate none`), or the tanh approximation
    `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))` (`approximate tanh`),
    as PyTorch's `approximate` argument.

    ```mlir
    %y = train.gelu %x approximate tanh : tensor<1024x1024xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input,
    OptionalAttr<Train_GeluApproximationAttr>:$approximate);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat =
    "$input (`approximate` $approximate^)? attr-dict `:` type($result)";
}

def Train_ClampOp : Train_Op<"clamp",
    !listconcat(Train_Follow, [Pure, SameOperandsAndResultType,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise min(max(x, min), max)";
  let description = [{
    Clamps each element into `[min, max]` (NaN stays NaN), PyTorch's
    `hardtanh` (`nn.ReLU6` is `min 0 max 6`). The gradient passes where
    `min < x < max`, strictly, as hardtanh's backward. The bounds are
    rounded to the compute type.

    ```mlir
    %y = train.clamp %x min 0.000000e+00 max 6.000000e+00 : tensor<8x32x16x16xf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$min, F64Attr:$max);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `min` $min `max` $max attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Train_PowOp : Train_Op<"pow",
    !listconcat(Train_Fp32, [Pure, SameOperandsAndResultType,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise x ** exponent";
  let description = [{
    Raises each element to a constant `exponent` (PyTorch's
    `pow(Tensor, Scalar)`), in f32 under autocast (PyTorch's CUDA autocast
    lists pow as fp32). Computed as PyTorch's CPU kernel does: `x*x` for 2,
    `x*x*x` for 3, `sqrt` for 0.5, `1/sqrt` for -0.5, `1/x` for -1,
    `1/(x*x)` for -2, `powf` otherwise (a negative base with a non-integer
    exponent is NaN). The gradient is `dy * exponent * x ** (exponent - 1)`,
    PyTorch's (zero for exponent 0).

    ```mlir
    %y = train.pow %x exponent 1.500000e+00 : tensor<128x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$exponent);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `exponent` $exponent attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise binary ops with broadcasting
//===----------------------------------------------------------------------===//

/// An element-wise op on two float tensors of one element type whose shapes
/// broadcast with NumPy rules; the result has the broadcast shape. Defined
/// once, as Train_UnaryOp: `scalar` from `lhs` and `rhs`; `derivative` gives
/// operand `operand`'s gradient from `dy` (in the result's shape; the
/// generic VJP reduces it over the broadcast dimensions).
class Train_BinaryOp<string mnemonic, string formula, list<Trait> traits,
                     list<Trait> precision, code scalar, code derivative>
    : Train_Op<mnemonic,
               !listconcat(traits, precision, [Pure, InferTypeOpAdaptor,
                           DeclareOpInterfaceMethods<Train_ElementwiseOpInterface>,
                           DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "element-wise " # formula # " with broadcasting";
  let description = [{
    Computes `}] # formula # [{` element-wise. The operand shapes broadcast
    with NumPy rules (trailing dimensions aligned, each pair equal or one of
    them 1); both operands have the same element type (autocast inserts
    `train.cast` to reach it).

    ```mlir
    %y = train.}] # mnemonic # [{ %x, %b : tensor<128x256xf32>, tensor<256xf32> -> tensor<128x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferBroadcastResult(getOperationName(), location,
                                  adaptor.getLhs().getType(),
                                  adaptor.getRhs().getType(), results);
    }
    ::mlir::Value $cppClass::buildScalar(::mlir::OpBuilder &b,
        ::mlir::Location loc, ::mlir::ValueRange args) {
      [[maybe_unused]] ::mlir::Value lhs = args[0], rhs = args[1];
      }] # scalar # [{
    }
    ::mlir::Value $cppClass::buildOperandGrad(::mlir::OpBuilder &b,
        unsigned operand, ::mlir::Value dy) {
      [[maybe_unused]] ::mlir::Location loc = getLoc();
      [[maybe_unused]] ::mlir::Value lhs = getLhs(), rhs = getRhs(),
                                     y = getResult();
      }] # derivative # [{
    }
    ::llvm::LogicalResult $cppClass::buildVJP(::mlir::OpBuilder &b,
        ::llvm::ArrayRef<::mlir::Value> resultGrads,
        ::llvm::SmallVectorImpl<::mlir::Value> &operandGrads) {
      return ::amp::train::buildElementwiseVJP(*this, b, resultGrads,
                                                operandGrads);
    }
  }];
}

def Train_AddOp : Train_BinaryOp<"add", "lhs + rhs", [Commutative],
    Train_Promote,
    [{ return ::mlir::arith::AddFOp::create(b, loc, lhs, rhs); }],
    [{ return dy; }]>;
def Train_SubOp : Train_BinaryOp<"sub", "lhs - rhs", [], Train_Promote,
    [{ return ::mlir::arith::SubFOp::create(b, loc, lhs, rhs); }],
    [{ return operand == 0 ? dy : scaledBy(b, loc, dy, -1.0); }]>;
def Train_MulOp : Train_BinaryOp<"mul", "lhs * rhs", [Commutative],
    Train_Promote,
    [{ return ::mlir::arith::MulFOp::create(b, loc, lhs, rhs); }],
    [{ return MulOp::create(b, loc, dy, operand == 0 ? rhs : lhs); }]> {
  let hasFolder = 1;
}
/// torch.maximum / torch.minimum: NaN-propagating; at a tie each operand
/// gets half the gradient (PyTorch's derivative).
def Train_MaximumOp : Train_BinaryOp<"maximum", "max(lhs, rhs)", [Commutative],
    Train_Promote,
    [{ return ::mlir::arith::MaximumFOp::create(b, loc, lhs, rhs); }],
    [{ return extremumGrad(b, loc, dy, operand == 0 ? lhs : rhs,
                           operand == 0 ? rhs : lhs, /*maximum=*/true); }]>;
def Train_MinimumOp : Train_BinaryOp<"minimum", "min(lhs, rhs)", [Commutative],
    Train_Promote,
    [{ return ::mlir::arith::MinimumFOp::create(b, loc, lhs, rhs); }],
    [{ return extremumGrad(b, loc, dy, operand == 0 ? lhs : rhs,
                           operand == 0 ? rhs : lhs, /*maximum=*/false); }]>;
/// A rank-0 numerator divided by a tensor is fp32: PyTorch computes `c / x`
/// as `reciprocal(x) * c`, and reciprocal is on autocast's fp32 list (1/x
/// overflows f16 for |x| < 1.5e-5).
def Train_DivOp : Train_BinaryOp<"div", "lhs / rhs", [],
    [DeclareOpInterfaceMethods<Train_PrecisionPolicyOpInterface,
                               ["getDefaultPrecision"]>,
     Train_DefaultPrecision<"promote">],
    [{ return ::mlir::arith::DivFOp::create(b, loc, lhs, rhs); }],
    // d(a / b)/da = dy / b;  d/db = -dy * (a / b) / b.
    [{ if (operand == 0)
         return DivOp::create(b, loc, dy, rhs);
       return scaledBy(b, loc,
           MulOp::create(b, loc, dy, DivOp::create(b, loc, y, rhs)), -1.0); }]> {
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Train_MatmulOp : Train_Op<"matmul",
    !listconcat(Train_Lower, [Pure, InferTypeOpAdaptor,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "matrix product [M, K] x [K, N] (+ bias [N]) -> [M, N]";
  let description = [{
    The product of two rank-2 tensors of one element type, plus an optional
    `[N]` bias broadcast over the rows: a linear layer
    (`x @ W + b`, PyTorch's addmm) with the weight stored `[in, out]`.
    `transpose_lhs` / `transpose_rhs` say an operand is stored transposed
    (`[K, M]` resp. `[N, K]`), so `x @ W^T` needs no separate transpose.

    Products are summed in the `accumulate` type: f32 by default for f16 and
    bf16 operands (Tensor Cores' CUBLAS_COMPUTE_32F; autocast states it
    explicitly), or the operand type itself when given so. The bias is added
    to the accumulator before the single rounding to the result type, as
    cuBLASLt's bias epilogue does; it has the operands'
    element type, so autocast runs the whole layer in the low type as PyTorch
    does for `F.linear`.

    ```mlir
    %h = train.matmul %x, %w : tensor<128x784xf32>, tensor<784x256xf32> -> tensor<128x256xf32>
    %y = train.matmul %x, %w, %b : tensor<128x784xf16>, tensor<784x256xf16>, tensor<256xf16> -> tensor<128x256xf16>
    %s = train.matmul %q, %k transpose_rhs : tensor<128x64xf32>, tensor<128x64xf32> -> tensor<128x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       Optional<Train_FloatTensor>:$bias,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       OptionalAttr<TypeAttrOf<Train_Float>>:$accumulate);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`,` $bias^)? (`transpose_lhs` $transpose_lhs^)?
    (`transpose_rhs` $transpose_rhs^)? (`accumulate` $accumulate^)?
    attr-dict `:` type($lhs) `,` type($rhs) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type products are summed in (see Train_AccumulateDoc).
    ::mlir::Type getAccumulatorType();
  }];
}

def Train_BatchMatmulOp : Train_Op<"batch_matmul",
    !listconcat(Train_Lower, [Pure, InferTypeOpAdaptor,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "batched matrix product [..., M, K] x [..., K, N] -> [..., M, N]";
  let description = [{
    A matrix product per batch index; the transpose flags apply to the two
    trailing dimensions. Any number of leading batch dimensions (each operand
    rank >= 3), broadcast between the operands with NumPy rules, as
    `torch.matmul`: attention scores are
    `train.batch_matmul %q, %k transpose_rhs` over `[batch, heads, seq, dim]`,
    and a `[B, 1, S, D]` key is shared by the heads. The backends compute the
    rank-3 form; others are broadcast and reshaped to it when lowered
    (`populateBatchMatmulToRank3Patterns`).

    ```mlir
    %s = train.batch_matmul %q, %k transpose_rhs : tensor<32x128x64xf32>, tensor<32x128x64xf32> -> tensor<32x128x128xf32>
    %t = train.batch_matmul %q4, %k4 transpose_rhs : tensor<2x8x128x64xf32>, tensor<2x1x128x64xf32> -> tensor<2x8x128x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$lhs, Train_FloatTensor:$rhs,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs,
                       OptionalAttr<TypeAttrOf<Train_Float>>:$accumulate);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    (`accumulate` $accumulate^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type products are summed in.
    ::mlir::Type getAccumulatorType();
  }];
}

def Train_AttentionOp : Train_Op<"attention",
    !listconcat(Train_Lower, [Pure, InferTypeOpAdaptor,
                DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "scaled dot-product attention, fused (PyTorch's SDPA)";
  let description = [{
    `result = softmax(query key^T * scale + mask) value` per batch index, over
    `[..., Sq, D]` queries, `[..., Sk, D]` keys and `[..., Sk, Dv]` values of
    one element type and the same leading dimensions (grouped-query heads
    are repeated before the op). `mask` is optional and broadcasts to
    `[..., Sq, Sk]` with NumPy rules: an additive float mask of the query's
    type, or a boolean keep-mask (`i1`, true: attend; PyTorch's convention).
    `causal` keeps key `j` for query `i` only where `j <= i` (the top-left
    aligned lower triangle, PyTorch's `is_causal`).

    The second result is the f32 log-sum-exp of each query's scores,
    `[..., Sq]`: what `train.attention_grad` needs to recompute the
    probabilities block by block, so no `[Sq, Sk]` tensor is kept for the
    backward pass (FlashAttention's scheme). A query whose keys are all
    masked gets a zero row and a log-sum-exp of -inf, as PyTorch's fused
    kernels give (no NaN).

    The products are summed in the `accumulate` type (f32 for f16/bf16
    operands, as the softmax statistics always are); the probabilities are
    rounded to the value's type before the second product, as in PyTorch's
    fused kernels. On the CPU the op is a blocked flash-style runtime kernel;
    elsewhere, or with the lowering's `attention=decomposed`, it becomes
    `batch_matmul`, `softmax` and `batch_matmul`.

    ```mlir
    %o, %lse = train.attention %q, %k, %v causal scale 1.250000e-01
        : tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>, tensor<2x4x128x64xbf16>
    %o2, %lse2 = train.attention %q, %k, %v mask %keep scale 1.250000e-01
        : tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x4x128x64xf32>, tensor<2x1x1x128xi1>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$query, Train_FloatTensor:$key,
                       Train_FloatTensor:$value,
                       Optional<StaticShapeTensorOf<[F16, BF16, F32, I1]>>:$mask,
                       UnitAttr:$causal, F64Attr:$scale,
                       OptionalAttr<TypeAttrOf<Train_Float>>:$accumulate);
  let results = (outs Train_FloatTensor:$result,
                      StaticShapeTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`causal` $causal^)?
    `scale` $scale (`accumulate` $accumulate^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type products are summed in (see train.matmul).
    ::mlir::Type getAccumulatorType();
  }];
}

def Train_Conv2dOp : Train_Op<"conv2d",
    !listconcat(Train_Lower, [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "2-D convolution, NCHW input, FCHW filter (+ bias [F])";
  let description = [{
    Cross-correlation of an `[N, C, H, W]` input with an `[F, C, KH, KW]`
    filter, giving `[N, F, OH, OW]` with
    `OH = (H + 2*padding[0] - dilation[0]*(KH-1) - 1) / strides[0] + 1` (and
    likewise OW). `strides` and `dilation` default to `[1, 1]`, `padding`
    (zeros, symmetric) to `[0, 0]`. With `groups` G (default 1) the input
    channels and the filters split into G groups, each filter `[F, C/G, KH,
    KW]` reading its group's channels: G = C is a depthwise convolution
    (PyTorch's `groups`).

    An optional `[F]` bias of the operands' element type is added to every
    output position of its channel in the accumulator, before the single
    rounding to the result type, as PyTorch's (cuDNN's, oneDNN's) biased
    convolution does: autocast runs the whole layer in the low type, as for
    `nn.Conv2d(bias=True)` under torch.autocast.

    ```mlir
    %y = train.conv2d %x, %w padding [1, 1] : tensor<128x1x28x28xf32>, tensor<32x1x3x3xf32> -> tensor<128x32x28x28xf32>
    %z = train.conv2d %x, %w, %b padding [1, 1] : tensor<128x1x28x28xf16>, tensor<32x1x3x3xf16>, tensor<32xf16> -> tensor<128x32x28x28xf16>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$filter,
    Optional<Train_FloatTensor>:$bias,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
    OptionalAttr<TypeAttrOf<Train_Float>>:$accumulate,
    DefaultValuedOptionalAttr<I64Attr, "1">:$groups);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter (`,` $bias^)? (`strides` $strides^)? (`padding` $padding^)?
    (`dilation` $dilation^)? (`groups` $groups^)? (`accumulate` $accumulate^)?
    attr-dict `:` type($input) `,` type($filter) (`,` type($bias)^)? `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The type products are summed in.
    ::mlir::Type getAccumulatorType();
  }];
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// A 2-D pooling window over NCHW input.
class Train_Pool2dOp<string mnemonic, string reduction>
    : Train_Op<mnemonic, !listconcat(Train_Follow, [Pure, InferTypeOpAdaptor,
                                                    DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "2-D " # reduction # " pooling, NCHW";
  let description = [{
    Takes the }] # reduction # [{ of each `kernel` window of an `[N, C, H, W]`
    input, moving by `strides`, giving `[N, C, OH, OW]` with
    `OH = (H + 2*padding[0] - dilation[0]*(kernel[0]-1) - 1) / strides[0] + 1`.
    `padding` defaults to `[0, 0]` and may be at most half the kernel; padded
    positions never win a max and count as zeros in an average (PyTorch's
    `count_include_pad`). `dilation` (default `[1, 1]`) spaces a window's
    elements, as MaxPool2d's.

    ```mlir
    %y = train.}] # mnemonic # [{ %x kernel [2, 2] strides [2, 2] : tensor<128x32x28x28xf32> -> tensor<128x32x14x14xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$kernel,
    DenseI64ArrayAttr:$strides,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
    DefaultValuedOptionalAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `kernel` $kernel `strides` $strides (`padding` $padding^)?
    (`dilation` $dilation^)? attr-dict `:` type($input) `->` type($result)
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferPool2dResult(getOperationName(), location,
                               adaptor.getInput().getType(),
                               adaptor.getKernel(), adaptor.getStrides(),
                               adaptor.getPadding(), adaptor.getDilation(),
                               results);
    }
  }];
}

def Train_MaxPool2dOp : Train_Pool2dOp<"max_pool2d", "maximum">;
def Train_AvgPool2dOp : Train_Pool2dOp<"avg_pool2d", "average">;

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// A softmax-like normalization along one axis.
class Train_SoftmaxLikeOp<string mnemonic, string formula>
    : Train_Op<mnemonic,
               !listconcat(Train_Fp32, [Pure, SameOperandsAndResultType,
                                        DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = formula # " along an axis";
  let description = [{
    Computes `}] # formula # [{` along `axis` (0 <= axis < rank), subtracting
    the maximum first so that large inputs do not overflow.

    ```mlir
    %p = train.}] # mnemonic # [{ %logits axis 1 : tensor<128x10xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Train_SoftmaxOp : Train_Op<"softmax",
    !listconcat(Train_Fp32, [Pure, SameOperandsAndResultType,
                             DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "exp(x_i) / sum_j exp(x_j) along an axis";
  let description = [{
    Computes `exp(x_i) / sum_j exp(x_j)` along `axis` (0 <= axis < rank),
    subtracting the maximum first so that large inputs do not overflow.

    With `causal`, the input's two trailing dimensions are a square `[S, S]`
    score matrix, `axis` is the last dimension, and each row `i` only takes
    positions `j <= i` (later positions get probability 0): the causal
    attention mask of a language model, fused as in Megatron's
    scaled-upper-triangular-masked softmax.

    ```mlir
    %p = train.softmax %logits axis 1 : tensor<128x10xf32>
    %a = train.softmax %scores axis 2 causal : tensor<32x128x128xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, I64Attr:$axis,
                       UnitAttr:$causal);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat =
    "$input `axis` $axis (`causal` $causal^)? attr-dict `:` type($result)";
  let hasVerifier = 1;
}
def Train_LogSoftmaxOp
    : Train_SoftmaxLikeOp<"log_softmax", "x_i - log(sum_j exp(x_j))">;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Train_LayerNormOp : Train_Op<"layer_norm", !listconcat(Train_Fp32, [Pure,
    AllTypesMatch<["input", "result"]>, AllTypesMatch<["scale", "bias"]>,
    DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes over the trailing dimensions that `scale` (and `bias`, of the
    same type) span: `y = (x - mean) / sqrt(var + epsilon) * scale + bias`,
    with the biased variance. `scale`'s shape is the trailing part of the
    input's shape (PyTorch's `normalized_shape`). Statistics are accumulated in
    fp32 whatever the input type. `epsilon` defaults to 1e-5.

    ```mlir
    %y = train.layer_norm %x, %g, %b : tensor<1024x256xf32>, tensor<256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$scale,
    Train_FloatTensor:$bias,
    DefaultValuedOptionalAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias (`epsilon` $epsilon^)?
    attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def Train_BatchNormOp : Train_Op<"batch_norm", [Pure, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>,
    DeclareOpInterfaceMethods<Train_PrecisionPolicyOpInterface,
                              ["getPrecisionOperands", "keepsFp32AtO2"]>,
    Train_DefaultPrecision<"follow">,
    AllTypesMatch<["input", "output"]>,
    AllTypesMatch<["scale", "bias", "running_mean", "running_var",
                   "new_running_mean", "new_running_var"]>]> {
  let summary = "batch normalization in training mode";
  let description = [{
    Normalizes each channel (dimension 1 of an `[N, C, ...]` input) with the
    batch statistics: `y = (x - mean) / sqrt(var + epsilon) * scale + bias`,
    mean and biased variance over every dimension but 1. Returns the output and
    the updated running statistics
    `new = (1 - momentum) * running + momentum * batch_stat` (the running
    variance uses the unbiased batch variance, as PyTorch).

    `scale`, `bias` and the running statistics are `[C]` tensors of one float
    type, which may differ from the input's: fp16 activations with fp32
    parameters and statistics is PyTorch's autocast behaviour, and what
    autocast produces at O1 (only the input follows the arriving precision). `epsilon`
    defaults to 1e-5, `momentum` to 0.1.

    `track_running_stats false` is PyTorch's module option of that name: the
    running statistics are returned unchanged (`momentum` is unused) and
    evaluation also normalizes by the batch's statistics, not the running
    ones; the running operands are placeholders (a `[C]` zeros and ones).

    `ranks N` (N > 1) is PyTorch's SyncBatchNorm: the statistics are those of
    the global batch of N data-parallel processes, each holding one shard as
    `input` (the per-channel sums are all-reduced, so every count above is N
    times the local one). amp-data-parallel's `sync-batchnorm` sets it in the
    training step; only a lowering with a collective runtime
    (amp-lower-cpu) takes it.

    ```mlir
    %y, %rm, %rv = train.batch_norm %x, %g, %b, %m, %v
        : tensor<128x32x28x28xf16>, tensor<32xf32>
    %z, %m2, %v2 = train.batch_norm %x, %g, %b, %zeros, %ones track_running_stats false
        : tensor<128x32x28x28xf16>, tensor<32xf32>
    %s, %m3, %v3 = train.batch_norm %x, %g, %b, %m, %v ranks 4
        : tensor<128x32x28x28xf16>, tensor<32xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, Train_FloatTensor:$scale,
    Train_FloatTensor:$bias, Train_FloatTensor:$running_mean,
    Train_FloatTensor:$running_var,
    DefaultValuedOptionalAttr<F64Attr, "1e-5">:$epsilon,
    DefaultValuedOptionalAttr<F64Attr, "0.1">:$momentum,
    DefaultValuedOptionalAttr<BoolAttr, "true">:$track_running_stats,
    DefaultValuedOptionalAttr<I64Attr, "1">:$ranks);
  let results = (outs Train_FloatTensor:$output,
    Train_FloatTensor:$new_running_mean, Train_FloatTensor:$new_running_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $running_mean `,` $running_var
    (`epsilon` $epsilon^)? (`momentum` $momentum^)?
    (`track_running_stats` $track_running_stats^)? (`ranks` $ranks^)?
    attr-dict `:` type($input) `,` type($scale)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// A reduction over a set of axes.
class Train_ReduceOp<string mnemonic, string reduction>
    : Train_Op<mnemonic, !listconcat(Train_Fp32, [Pure, InferTypeOpAdaptor,
                                                  DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = reduction # " over axes";
  let description = [{
    The }] # reduction # [{ over the distinct `axes` (each in [0, rank)),
    accumulated in fp32. Reduced dimensions are dropped, or kept as size 1
    with `keep_dims`.

    ```mlir
    %s = train.}] # mnemonic # [{ %x axes [1] keep_dims : tensor<128x10xf32> -> tensor<128x1xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keep_dims);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axes` $axes (`keep_dims` $keep_dims^)?
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &results) {
      return inferReduceResult(getOperationName(), location,
                               adaptor.getInput().getType(), adaptor.getAxes(),
                               adaptor.getKeepDims(), results);
    }
  }];
}

def Train_ReduceSumOp : Train_ReduceOp<"reduce_sum", "sum">;
def Train_ReduceMeanOp : Train_ReduceOp<"reduce_mean", "mean">;

//===----------------------------------------------------------------------===//
// Embedding and dropout
//===----------------------------------------------------------------------===//

def Train_EmbeddingOp : Train_Op<"embedding",
    !listconcat(Train_Follow, [Pure, InferTypeOpAdaptor, DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "row lookup in an embedding table";
  let description = [{
    Gathers rows of a `[V, D]` table at i32 `indices` of any shape S, giving
    `S ++ [D]`. Indices outside [0, V) are a run-time error of the lowered code.
    With `padding_idx` (in [0, V)), that row gets no gradient (PyTorch's
    `nn.Embedding(padding_idx=...)`); its value is looked up as any other.

    ```mlir
    %e = train.embedding %table, %tokens : tensor<1024x256xf32>, tensor<8x128xi32> -> tensor<8x128x256xf32>
    %p = train.embedding %table, %tokens padding_idx 0 : tensor<1024x256xf32>, tensor<8x128xi32> -> tensor<8x128x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$table, Train_IndexTensor:$indices,
                       OptionalAttr<I64Attr>:$padding_idx);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices (`padding_idx` $padding_idx^)? attr-dict `:`
    type($table) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

/// A rank-0 i32 tensor: a step counter.
def Train_Counter : 0DTensorOf<[I32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getI32Type())">;

def Train_DropoutOp : Train_Op<"dropout",
    !listconcat(Train_Follow, [Pure, AllTypesMatch<["input", "result"]>,
                               DeclareOpInterfaceMethods<Train_DifferentiableOpInterface>])> {
  let summary = "seeded inverted dropout";
  let description = [{
    Zeroes each element with probability `rate` (0 <= rate < 1) and scales the
    others by `1 / (1 - rate)`. The mask is a pure function of `seed`, the
    optional `step` counter (a rank-0 i32 tensor, e.g. the number of steps
    taken, carried as `train.state` and advanced by `train.increment`) and the
    element index, so the backward pass regenerates it instead of storing it,
    and with a `step` every training step draws a new mask (without one, the
    mask is the same at every step). Two dropouts of one step differ by seed.

    ```mlir
    %y = train.dropout %x rate 1.000000e-01 seed 42 : tensor<1024x256xf32>
    %z = train.dropout %x rate 1.000000e-01 seed 43 step %count : tensor<1024x256xf32>
    ```
  }];
  let arguments = (ins Train_FloatTensor:$input, F64Attr:$rate, I64Attr:$seed,
                       Optional<Train_Counter>:$step);
  let results = (outs Train_FloatTensor:$result);
  let assemblyFormat = [{
    $input `rate` $rate `seed` $seed (`step` $step^)? attr-dict `:` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::FloatAttr":$rate,
                   "::mlir::IntegerAttr":$seed), [{
      build($_builder, $_state, input.getType(), input, rate, seed, nullptr);
    }]>
  ];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Train_IncrementOp : Train_Op<"increment", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "a step counter plus one";
  let description = [{
    `input + 1` for a rank-0 i32 counter, wrapping at 2^32: the step count a
    `train.state` argument carries from one step to the next (returned as its
    new value), e.g. the `step` of `train.dropout`. Integer: no precision
    policy, no gradient.

    ```mlir
    %next = train.increment %count : tensor<i32>
    ```
  }];
  let arguments = (ins Train_Counter:$input);
  let results = (outs Train_Counter:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

#endif // AMP_DIALECT_TRAIN_IR_TRAINCOMPUTEOPS_TD
