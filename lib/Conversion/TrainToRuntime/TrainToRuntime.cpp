//===- TrainToRuntime.cpp - GEMMs and convolutions to runtime calls -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Each GEMM-like op becomes a `train.runtime_call` of the target's runtime on
// its operand tensors. On the CPU a convolution produces the f32
// accumulator, followed by the shared rounding to the op's result type; a
// GEMM's runtime call rounds to a 16-bit result type itself
// (amp_cpu_gemm_round), and cuBLASLt writes the op's type itself:
//
//   %acc = train.runtime_call @amp_cpu_gemm_bias(%x, %w, %b) [<dtypes>,
//       <sizes>] : (...) -> tensor<128x256xf32>
//
// The callee is declared in the module. One-shot bufferization turns the op
// into a func.call on buffer addresses (RuntimeCallBufferization.cpp).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/ABI/AttentionWorkspace.h"
#include "amp/ABI/Collectives.h"
#include "amp/ABI/ConvWorkspace.h"
#include "amp/ABI/ElementTypes.h"
#include "amp/ABI/EntryPoints.h"
#include "amp/ABI/LinearCrossEntropyWorkspace.h"
#include "amp/Conversion/Passes.h"
#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Conversion/TrainToLinalg/TrainToLinalg.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Dominance.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/bit.h"

#include <limits>
#include <optional>

namespace amp {
#define GEN_PASS_DEF_CONVERTTRAINTOCPURUNTIMEPASS
#define GEN_PASS_DEF_CONVERTTRAINTOCUDARUNTIMEPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;
using namespace amp;
using namespace amp::train;

namespace {

/// The runtime's code for an element type it accepts.
std::optional<int64_t> runtimeDType(Type type) {
  if (type.isF32())
    return int64_t(RuntimeDType::F32);
  if (type.isF16())
    return int64_t(RuntimeDType::F16);
  if (type.isBF16())
    return int64_t(RuntimeDType::BF16);
  return std::nullopt;
}

std::optional<int64_t> runtimeDTypeOf(Value tensor) {
  return runtimeDType(
      cast<RankedTensorType>(tensor.getType()).getElementType());
}

/// Whether the runtime computes `op` exactly as the linalg lowering would:
/// an f32 accumulator, operands and result of types it takes.
bool runtimeCanCompute(Operation *op, Type accumulator) {
  if (!accumulator.isF32())
    return false;
  auto valueOk = [](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return t && t.hasStaticShape() && runtimeDType(t.getElementType());
  };
  return llvm::all_of(op->getOperands(), valueOk) &&
         llvm::all_of(op->getResults(), valueOk);
}

/// createRuntimeCall with one result of `type`: f32, then rounded once to
/// `type`, when `f32Result`, else `type` directly.
Value buildRuntimeCall(OpBuilder &rewriter, Operation *anchor, StringRef callee,
                       ValueRange inputs, ArrayRef<int64_t> params,
                       RankedTensorType type, bool f32Result) {
  auto callType =
      f32Result ? type.clone(Float32Type::get(anchor->getContext())) : type;
  Value acc = createRuntimeCall(rewriter, anchor, callee, TypeRange{callType},
                                inputs, params)
                  .getResult(0);
  return roundTo(rewriter, anchor->getLoc(), acc, type);
}

/// Replaces `op` by buildRuntimeCall's value of the op's result type.
void replaceWithRuntimeCall(PatternRewriter &rewriter, Operation *op,
                            StringRef callee, ValueRange inputs,
                            ArrayRef<int64_t> params, bool f32Result = true) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  rewriter.replaceOp(op, buildRuntimeCall(rewriter, op, callee, inputs, params,
                                          type, f32Result));
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// A convolution's f32 accumulator `acc` ([N, F, OH, OW]) plus its [F]
/// `bias` widened to f32, rounded once to `type`: the bias joins the sum
/// before the rounding, as in the linalg lowering.
Value addConvBias(OpBuilder &b, Location loc, Value acc, Value bias,
                  RankedTensorType type) {
  Type f32 = b.getF32Type();
  auto biasType = cast<RankedTensorType>(bias.getType());
  if (biasType.getElementType() != f32)
    bias = CastOp::create(b, loc, biasType.clone(f32), bias);
  Value column = ReshapeOp::create(
      b, loc, RankedTensorType::get({biasType.getDimSize(0), 1, 1}, f32), bias);
  return roundTo(b, loc, AddOp::create(b, loc, acc, column), type);
}

/// The runtime's GEMM sizes of `lhs` (transposed when `ta`) times an operand
/// into a result of shape `out` ([m, n] or [batch, m, n]).
struct GemmDims {
  int64_t batch, m, n, k;
};
GemmDims gemmDims(Value lhs, bool ta, ArrayRef<int64_t> out) {
  ArrayRef<int64_t> l = shapeOf(lhs);
  return {out.size() == 3 ? out[0] : 1, out[out.size() - 2], out.back(),
          ta ? l[l.size() - 2] : l.back()};
}

/// The params every cuBLASLt GEMM call of the runtime starts with: dtypeAB
/// (both operands have `lhs`'s type), dtypeD (`out`'s), batch, m, n, k and
/// the two transposes.
SmallVector<int64_t> cudaGemmParams(Value lhs, bool ta, bool tb,
                                    RankedTensorType out) {
  auto [batch, m, n, k] = gemmDims(lhs, ta, out.getShape());
  return {*runtimeDTypeOf(lhs),
          *runtimeDType(out.getElementType()),
          batch,
          m,
          n,
          k,
          ta,
          tb};
}

/// The embedding gradient as the runtime's scatter-add
/// (amp_cpu_embedding_grad, amp_cuda_embedding_grad): positions x dim
/// additions into an f32 table, rounded once to the table's type. (Lowered
/// to linalg, it is a reduction over vocab x dim x positions.)
struct EmbeddingGradToRuntime : OpRewritePattern<EmbeddingGradOp> {
  EmbeddingGradToRuntime(MLIRContext *ctx, RuntimeTarget target)
      : OpRewritePattern(ctx), target(target) {}
  LogicalResult matchAndRewrite(EmbeddingGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> dtype = runtimeDTypeOf(op.getGrad());
    auto type = cast<RankedTensorType>(op.getType());
    auto ids = cast<RankedTensorType>(op.getIndices().getType());
    if (!dtype || !type.hasStaticShape() || !ids.hasStaticShape() ||
        !ids.getElementType().isInteger(32))
      return rewriter.notifyMatchFailure(op, "not a static f32/f16/bf16 "
                                             "gradient with i32 ids");
    replaceWithRuntimeCall(
        rewriter, op,
        target == RuntimeTarget::Cuda ? entry::kCudaEmbeddingGrad
                                      : entry::kCpuEmbeddingGrad,
        {op.getGrad(), op.getIndices()},
        {*dtype, ids.getNumElements(), type.getDimSize(1), type.getDimSize(0)});
    return success();
  }

  RuntimeTarget target;
};

/// The runtime's attention geometry params: element type, the leading
/// dimensions padded in front to four, Sq, Sk, D, Dv, causal and the
/// scale's f64 bits; then, with a mask, its type and strides (0 where it
/// broadcasts) over the padded [b0, b1, b2, b3, Sq, Sk].
/// A boolean mask counts as the f32 one additiveMask makes of it.
std::optional<SmallVector<int64_t>>
attentionParams(RankedTensorType query, RankedTensorType key,
                RankedTensorType value, Value mask, bool causal,
                double scale) {
  std::optional<int64_t> dtype = runtimeDType(query.getElementType());
  int64_t rank = query.getRank();
  if (!dtype || rank > 6)
    return std::nullopt;
  SmallVector<int64_t> params = {*dtype};
  SmallVector<int64_t, 6> dims(6 - rank, 1);
  llvm::append_range(dims, query.getShape().drop_back(2));
  llvm::append_range(params, dims);
  params.append({query.getDimSize(rank - 2), key.getDimSize(rank - 2),
                 query.getDimSize(rank - 1), value.getDimSize(rank - 1),
                 causal ? 1 : 0, llvm::bit_cast<int64_t>(scale)});
  if (!mask)
    return params;
  auto maskType = cast<RankedTensorType>(mask.getType());
  std::optional<int64_t> maskDtype =
      maskType.getElementType().isInteger(1)
          ? int64_t(RuntimeDType::F32)
          : runtimeDType(maskType.getElementType());
  if (!maskDtype)
    return std::nullopt;
  params.push_back(*maskDtype);
  // The scores' full shape [b0..b3, Sq, Sk] and the mask's, aligned right.
  SmallVector<int64_t, 6> full(dims);
  full.append({query.getDimSize(rank - 2), key.getDimSize(rank - 2)});
  ArrayRef<int64_t> shape = maskType.getShape();
  SmallVector<int64_t, 6> strides(6, 0);
  int64_t stride = 1;
  for (int64_t i = 5, m = int64_t(shape.size()) - 1; i >= 0 && m >= 0;
       --i, --m) {
    strides[i] = shape[m] == 1 && full[i] != 1 ? 0 : stride;
    stride *= shape[m];
  }
  llvm::append_range(params, strides);
  return params;
}

/// A boolean keep-mask as the runtime's additive f32 one (0 / -inf).
Value additiveMask(OpBuilder &b, Location loc, Value mask) {
  auto type = cast<RankedTensorType>(mask.getType());
  if (!type.getElementType().isInteger(1))
    return mask;
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  auto constant = [&](float v) -> Value {
    return ConstantOp::create(b, loc, DenseElementsAttr::get(scalar, v));
  };
  return SelectOp::create(b, loc, mask, constant(0.0f),
                          constant(-std::numeric_limits<float>::infinity()));
}

/// The runtime call's params and the mask it reads (boolean masks made
/// additive) for an attention op or its gradient; nothing, and the IR
/// untouched, when the runtime does not take it.
template <typename OpT>
std::optional<std::pair<SmallVector<int64_t>, Value>>
prepareAttentionCall(OpT op, PatternRewriter &rewriter) {
  std::optional<SmallVector<int64_t>> params = attentionParams(
      op.getQuery().getType(), op.getKey().getType(), op.getValue().getType(),
      op.getMask(), op.getCausal(), op.getScale().convertToDouble());
  if (!params)
    return std::nullopt;
  Value mask =
      op.getMask() ? additiveMask(rewriter, op.getLoc(), op.getMask()) : Value();
  return std::make_pair(std::move(*params), mask);
}

/// Records the scratch an attention call's kernel takes where its bf16
/// operands are multiplied natively (they are not widened then); elsewhere
/// the plan's default (an f32 copy of each 16-bit operand) bounds it.
template <typename OpT>
void setAttentionWorkspace(OpT op, Operation *call, Value mask, bool nativeBf16,
                           PatternRewriter &rewriter) {
  auto query = cast<RankedTensorType>(op.getQuery().getType());
  auto value = cast<RankedTensorType>(op.getValue().getType());
  if (!nativeBf16 || !query.getElementType().isBF16())
    return;
  int64_t rank = query.getRank();
  int64_t mask16 = 0;
  if (mask) {
    auto maskType = cast<RankedTensorType>(mask.getType());
    if (!maskType.getElementType().isF32())
      mask16 = maskType.getNumElements();
  }
  call->setAttr(
      kWorkspaceBytesAttrName,
      rewriter.getI64IntegerAttr(amp::attentionWorkspaceBytes(
          std::is_same_v<OpT, AttentionGradOp>, query.getDimSize(rank - 2),
          query.getDimSize(rank - 1), value.getDimSize(rank - 1), mask16)));
}

/// train.attention as the runtime's flash-style kernel
/// (amp_cpu_attention[_mask]): f32 output rounded once to the op's type,
/// and the f32 log-sum-exp. The kernel sums in f32 whatever the op's
/// `accumulate` (an f16 one gets the wider sums; the op has no other
/// lowering on the CPU unless decomposed).
struct AttentionToRuntime : OpRewritePattern<AttentionOp> {
  AttentionToRuntime(MLIRContext *ctx, bool nativeBf16)
      : OpRewritePattern(ctx), nativeBf16(nativeBf16) {}
  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    auto prepared = prepareAttentionCall(op, rewriter);
    if (!prepared)
      return rewriter.notifyMatchFailure(op, "not a runtime attention");
    auto &[params, mask] = *prepared;
    SmallVector<Value> inputs = {op.getQuery(), op.getKey(), op.getValue()};
    if (mask)
      inputs.push_back(mask);
    auto type = op.getResult().getType();
    auto call = createRuntimeCall(
        rewriter, op, mask ? entry::kCpuAttentionMask : entry::kCpuAttention,
        TypeRange{type.clone(rewriter.getF32Type()), op.getLse().getType()},
        inputs, params);
    setAttentionWorkspace(op, call, mask, nativeBf16, rewriter);
    rewriter.replaceOp(op, {roundTo(rewriter, op.getLoc(), call.getResult(0),
                                    type),
                            call.getResult(1)});
    return success();
  }

  /// The target multiplies bf16 natively (the plan's workspace bound).
  bool nativeBf16;
};

/// train.attention_grad as the runtime's blocked backward kernel
/// (amp_cpu_attention_grad[_mask]): f32 gradients rounded once each.
struct AttentionGradToRuntime : OpRewritePattern<AttentionGradOp> {
  AttentionGradToRuntime(MLIRContext *ctx, bool nativeBf16)
      : OpRewritePattern(ctx), nativeBf16(nativeBf16) {}
  LogicalResult matchAndRewrite(AttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    auto prepared = prepareAttentionCall(op, rewriter);
    if (!prepared)
      return rewriter.notifyMatchFailure(op, "not a runtime attention");
    auto &[params, mask] = *prepared;
    SmallVector<Value> inputs = {op.getGrad(),  op.getQuery(), op.getKey(),
                                 op.getValue(), op.getOutput(), op.getLse()};
    if (mask)
      inputs.push_back(mask);
    Type f32 = rewriter.getF32Type();
    SmallVector<Type> types;
    for (Value v : op->getResults())
      types.push_back(cast<RankedTensorType>(v.getType()).clone(f32));
    auto call = createRuntimeCall(rewriter, op,
                                  mask ? entry::kCpuAttentionGradMask
                                       : entry::kCpuAttentionGrad,
                                  types, inputs, params);
    setAttentionWorkspace(op, call, mask, nativeBf16, rewriter);
    SmallVector<Value> results;
    for (auto [acc, result] : llvm::zip(call.getResults(), op->getResults()))
      results.push_back(roundTo(rewriter, op.getLoc(), acc,
                                cast<RankedTensorType>(result.getType())));
    rewriter.replaceOp(op, results);
    return success();
  }

  /// The target multiplies bf16 natively (the plan's workspace bound).
  bool nativeBf16;
};

/// The runtime's params of a fused head and its loss: element type, n, k, v,
/// the weight's layout, ignore_index (whether, which) and label smoothing's
/// f64 bits; nothing where the runtime lacks the type.
template <typename OpT>
std::optional<SmallVector<int64_t>> linearCrossEntropyParams(OpT op) {
  auto input = cast<RankedTensorType>(op.getInput().getType());
  auto weight = cast<RankedTensorType>(op.getWeight().getType());
  std::optional<int64_t> dtype = runtimeDType(input.getElementType());
  if (!dtype)
    return std::nullopt;
  bool transposed = op.getTransposeWeight();
  std::optional<int64_t> ignore = op.getIgnoreIndex();
  return SmallVector<int64_t>{
      *dtype,
      input.getDimSize(0),
      input.getDimSize(1),
      weight.getDimSize(transposed ? 0 : 1),
      transposed ? 1 : 0,
      ignore ? 1 : 0,
      ignore.value_or(0),
      llvm::bit_cast<int64_t>(op.getLabelSmoothing().convertToDouble())};
}

/// Records a fused head call's scratch (LinearCrossEntropyWorkspace.h).
template <typename OpT>
void setLinearCrossEntropyWorkspace(OpT op, Operation *call, bool nativeBf16,
                                    PatternRewriter &rewriter) {
  auto input = cast<RankedTensorType>(op.getInput().getType());
  auto weight = cast<RankedTensorType>(op.getWeight().getType());
  Type element = input.getElementType();
  call->setAttr(kWorkspaceBytesAttrName,
                rewriter.getI64IntegerAttr(amp::linearCrossEntropyWorkspaceBytes(
                    std::is_same_v<OpT, LinearCrossEntropyGradOp>,
                    input.getDimSize(0), input.getDimSize(1),
                    weight.getNumElements() / input.getDimSize(1),
                    element.isF32() ? 4 : 2,
                    nativeBf16 && element.isBF16())));
}

/// train.linear_cross_entropy as amp_cpu_linear_cross_entropy: the logits a
/// block of rows at a time, the f32 loss.
struct LinearCrossEntropyToRuntime : OpRewritePattern<LinearCrossEntropyOp> {
  LinearCrossEntropyToRuntime(MLIRContext *ctx, bool nativeBf16)
      : OpRewritePattern(ctx), nativeBf16(nativeBf16) {}
  LogicalResult matchAndRewrite(LinearCrossEntropyOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<SmallVector<int64_t>> params = linearCrossEntropyParams(op);
    if (!params)
      return rewriter.notifyMatchFailure(op, "not a runtime type");
    auto call = createRuntimeCall(
        rewriter, op, entry::kCpuLinearCrossEntropy,
        TypeRange{op.getResult().getType()},
        ValueRange{op.getInput(), op.getWeight(), op.getLabels()}, *params);
    setLinearCrossEntropyWorkspace(op, call, nativeBf16, rewriter);
    rewriter.replaceOp(op, call->getResults());
    return success();
  }
  bool nativeBf16;
};

/// train.linear_cross_entropy_grad as amp_cpu_linear_cross_entropy_grad: f32
/// gradients, each rounded once to its operand's type.
struct LinearCrossEntropyGradToRuntime
    : OpRewritePattern<LinearCrossEntropyGradOp> {
  LinearCrossEntropyGradToRuntime(MLIRContext *ctx, bool nativeBf16)
      : OpRewritePattern(ctx), nativeBf16(nativeBf16) {}
  LogicalResult matchAndRewrite(LinearCrossEntropyGradOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<SmallVector<int64_t>> params = linearCrossEntropyParams(op);
    if (!params)
      return rewriter.notifyMatchFailure(op, "not a runtime type");
    Type f32 = rewriter.getF32Type();
    SmallVector<Type> types;
    for (Value v : op->getResults())
      types.push_back(cast<RankedTensorType>(v.getType()).clone(f32));
    auto call = createRuntimeCall(
        rewriter, op, entry::kCpuLinearCrossEntropyGrad, types,
        ValueRange{op.getGrad(), op.getInput(), op.getWeight(), op.getLabels()},
        *params);
    setLinearCrossEntropyWorkspace(op, call, nativeBf16, rewriter);
    SmallVector<Value> results;
    for (auto [acc, result] : llvm::zip(call->getResults(), op->getResults()))
      results.push_back(roundTo(rewriter, op.getLoc(), acc,
                                cast<RankedTensorType>(result.getType())));
    rewriter.replaceOp(op, results);
    return success();
  }
  bool nativeBf16;
};

/// train.all_reduce as one runtime call per bucket (amp_cpu_all_reduce,
/// amp_cuda_all_reduce):
/// the inputs flattened (flags as 0/1 in f32), pre-divided in f32 for a
/// mean, rounded to the wire type and packed into one buffer; the call
/// combines the buffer across the ranks; the result is cut back into the
/// inputs' shapes and types. Everything but the call is train ops, lowered
/// and fused as any others. With `skip` set nothing is packed or sent (an
/// scf.if): the results are the inputs.
struct AllReduceToRuntime : OpRewritePattern<AllReduceOp> {
  AllReduceToRuntime(MLIRContext *ctx, StringRef callee)
      : OpRewritePattern(ctx), callee(callee.str()) {}

  LogicalResult matchAndRewrite(AllReduceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Type f32 = rewriter.getF32Type();
    bool flags = op.getKind() == ReduceKind::max;
    // The wire: the op's, else the inputs' common float type, else f32
    // (exact for every input type).
    Type wire = f32;
    if (std::optional<Type> given = op.getWire()) {
      wire = *given;
    } else if (!flags) {
      Type first = cast<RankedTensorType>(op.getInputs()[0].getType())
                       .getElementType();
      if (llvm::all_of(op.getInputs(), [&](Value v) {
            return cast<RankedTensorType>(v.getType()).getElementType() ==
                   first;
          }))
        wire = first;
    }
    std::optional<int64_t> dtype = runtimeDType(wire);
    if (!dtype)
      return rewriter.notifyMatchFailure(op, "wire type the runtime lacks");

    auto build = [&](OpBuilder &b) {
      SmallVector<Value> pieces;
      for (Value v : op.getInputs()) {
        auto type = cast<RankedTensorType>(v.getType());
        int64_t n = type.getNumElements();
        Value x = v;
        if (flags)
          x = buildElementwise(
              b, loc, type.clone(f32), {{x, identityMap(ctx, type.getRank())}},
              f32, [&](OpBuilder &b, Location l, ValueRange in) -> Value {
                return arith::UIToFPOp::create(b, l, f32, in[0]);
              });
        Type element = cast<RankedTensorType>(x.getType()).getElementType();
        x = ReshapeOp::create(b, loc, RankedTensorType::get({n}, element), x);
        if (op.getKind() == ReduceKind::mean) {
          if (!element.isF32())
            x = CastOp::create(b, loc, RankedTensorType::get({n}, f32), x);
          x = scaledBy(b, loc, x, 1.0 / double(op.getRanks()));
        }
        if (cast<RankedTensorType>(x.getType()).getElementType() != wire)
          x = CastOp::create(b, loc, RankedTensorType::get({n}, wire), x);
        pieces.push_back(x);
      }
      Value packed = pieces.size() == 1
                         ? pieces.front()
                         : Value(ConcatOp::create(b, loc, pieces,
                                                  b.getI64IntegerAttr(0)));
      int64_t code =
          int64_t(flags ? amp::CollectiveOp::Max : amp::CollectiveOp::Sum);
      Value reduced =
          createAllReduceCall(b, op, callee, packed, *dtype, code,
                              op.getRanks());
      SmallVector<Value> results;
      int64_t offset = 0;
      for (Value v : op.getInputs()) {
        auto type = cast<RankedTensorType>(v.getType());
        int64_t n = type.getNumElements();
        auto flat = RankedTensorType::get({n}, wire);
        Value x = pieces.size() == 1
                      ? reduced
                      : Value(SliceOp::create(b, loc, flat, reduced,
                                              b.getDenseI64ArrayAttr(offset)));
        offset += n;
        if (flags) {
          x = ReshapeOp::create(b, loc, type.clone(f32), x);
          x = buildElementwise(
              b, loc, type, {{x, identityMap(ctx, type.getRank())}}, f32,
              [&](OpBuilder &b, Location l, ValueRange in) -> Value {
                return arith::CmpFOp::create(
                    b, l, arith::CmpFPredicate::ONE, in[0],
                    scalarConstant(b, l, f32, 0.0));
              });
        } else {
          if (wire != type.getElementType())
            x = CastOp::create(b, loc, flat.clone(type.getElementType()), x);
          x = ReshapeOp::create(b, loc, type, x);
        }
        results.push_back(x);
      }
      return results;
    };

    if (!op.getSkip()) {
      rewriter.replaceOp(op, build(rewriter));
      return success();
    }
    Value skip =
        tensor::ExtractOp::create(rewriter, loc, op.getSkip(), ValueRange{});
    auto branch =
        scf::IfOp::create(rewriter, loc, op.getResultTypes(), skip, true);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(&branch.getThenRegion().front());
      scf::YieldOp::create(rewriter, loc, op.getInputs());
      rewriter.setInsertionPointToStart(&branch.getElseRegion().front());
      scf::YieldOp::create(rewriter, loc, build(rewriter));
    }
    rewriter.replaceOp(op, branch.getResults());
    return success();
  }

  std::string callee;
};

template <typename OpTy> struct GemmToRuntime : OpRewritePattern<OpTy> {
  GemmToRuntime(MLIRContext *ctx, RuntimeTarget target, bool nativeBf16)
      : OpRewritePattern<OpTy>(ctx), target(target), nativeBf16(nativeBf16) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if constexpr (std::is_same_v<OpTy, BatchMatmulOp>)
      if (!isRank3BatchMatmul(op))
        return rewriter.notifyMatchFailure(op, "not rank 3 (decomposed)");
    if (!runtimeCanCompute(op, op.getAccumulatorType()))
      return rewriter.notifyMatchFailure(op, "not an f32-accumulated GEMM of "
                                             "f32/f16/bf16 tensors");
    auto type = cast<RankedTensorType>(op.getType());
    bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
    auto [batch, m, n, k] = gemmDims(op.getLhs(), ta, type.getShape());
    Value bias;
    if constexpr (std::is_same_v<OpTy, MatmulOp>)
      bias = op.getBias();

    int64_t lhsType = *runtimeDTypeOf(op.getLhs()),
            rhsType = *runtimeDTypeOf(op.getRhs());
    if (target == RuntimeTarget::Cuda) {
      // cuBLASLt: both operands of one type, D written in the op's type.
      SmallVector<int64_t> params = cudaGemmParams(op.getLhs(), ta, tb, type);
      if (bias) {
        params.push_back(/*Epilogue::Bias*/ 1);
        replaceWithRuntimeCall(rewriter, op, entry::kCudaGemmBias,
                               {op.getLhs(), op.getRhs(), bias}, params,
                               /*f32Result=*/false);
      } else {
        replaceWithRuntimeCall(rewriter, op, entry::kCudaGemm,
                               {op.getLhs(), op.getRhs()}, params,
                               /*f32Result=*/false);
      }
      return success();
    }
    SmallVector<Value> inputs = {op.getLhs(), op.getRhs()};
    SmallVector<int64_t> params = {lhsType, rhsType, batch, m, n, k, ta, tb};
    if (bias) {
      inputs.push_back(bias);
      params.insert(params.begin() + 2, *runtimeDTypeOf(bias));
    }
    // A 16-bit result is rounded by the runtime (amp_cpu_gemm[_bias]_round,
    // its type after the operands'): oneDNN writes bf16 as it finishes each
    // tile where it multiplies bf16 natively, and no f32 result is
    // written, stored and read again; an f32 result is the accumulator.
    bool rounded = !type.getElementType().isF32();
    if (rounded)
      params.insert(params.begin() + (bias ? 3 : 2),
                    *runtimeDTypeOf(op.getResult()));
    std::string callee = bias ? entry::kCpuGemmBias : entry::kCpuGemm;
    if (rounded)
      callee += entry::kRoundSuffix;
    Operation *call = createRuntimeCall(
        rewriter, op, callee,
        TypeRange{rounded ? type : type.clone(rewriter.getF32Type())}, inputs,
        params);
    // The call's scratch. Two bf16 operands on a target that multiplies
    // them natively go to oneDNN's matmul as they are, with no f32 copies
    // (the plan's default for 16-bit operands): the scratch is a 16-bit
    // bias's f32 row and oneDNN's scratchpad, its per-thread packing
    // buffers. Those were at most the operands' size in f32 for small GEMMs
    // and 0.7 MiB for the benchmark models' largest (2 threads): reserved
    // as the smaller of the two with 4 MiB; beyond, the runtime takes the
    // heap. A rounded result oneDNN does not write itself (a 16-bit result
    // of other operands, or f16) is summed in an f32 copy first.
    int64_t bf16 = int64_t(RuntimeDType::BF16);
    bool narrowBias =
        bias && *runtimeDTypeOf(bias) != int64_t(RuntimeDType::F32);
    int64_t biasRow = llvm::alignTo(narrowBias ? n * 4 : 0, 64);
    bool native = nativeBf16 && lhsType == bf16 && rhsType == bf16;
    bool nativeOut = native && type.getElementType().isBF16();
    int64_t accumulator =
        rounded && !nativeOut ? llvm::alignTo(4 * batch * m * n, 64) : 0;
    if (native) {
      int64_t operands = 4 * batch * k * (m + n);
      int64_t scratchpad = std::min<int64_t>(operands, int64_t(4) << 20);
      call->setAttr(
          kWorkspaceBytesAttrName,
          rewriter.getI64IntegerAttr(accumulator + biasRow + scratchpad));
    } else if (rounded) {
      // The runtime widens each 16-bit operand into an f32 copy.
      int64_t widened = 0;
      for (Value operand : {op.getLhs(), op.getRhs()}) {
        auto t = cast<RankedTensorType>(operand.getType());
        if (!t.getElementType().isF32())
          widened += llvm::alignTo(4 * t.getNumElements(), 64);
      }
      call->setAttr(
          kWorkspaceBytesAttrName,
          rewriter.getI64IntegerAttr(accumulator + biasRow + widened));
    }
    rewriter.replaceOp(
        op, roundTo(rewriter, op.getLoc(), call->getResult(0), type));
    return success();
  }

  RuntimeTarget target;
  /// The target multiplies bf16 natively (the plan's workspace bound).
  bool nativeBf16;
};

/// Whether the runtime computes convolution (or gradient) `op`: an
/// f32-accumulated one of f32/f16/bf16 operands, ungrouped (grouped and
/// depthwise convolutions are left to the linalg lowering).
template <typename OpTy>
LogicalResult matchRuntimeConv(OpTy op, PatternRewriter &rewriter) {
  if (!runtimeCanCompute(op, op.getAccumulatorType()))
    return rewriter.notifyMatchFailure(op, "not an f32-accumulated "
                                           "convolution of f32/f16/bf16");
  if (op.getGroups() != 1)
    return rewriter.notifyMatchFailure(op, "grouped convolution");
  return success();
}

/// conv2d and its two gradients: the runtime reads two tensors; the geometry
/// comes from the input, filter and output shapes, whichever of them are the
/// op's operands and result.
template <typename OpTy> struct ConvToRuntime : OpRewritePattern<OpTy> {
  ConvToRuntime(MLIRContext *ctx, StringRef callee, bool nativeBf16)
      : OpRewritePattern<OpTy>(ctx), callee(callee), nativeBf16(nativeBf16) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (failed(matchRuntimeConv(op, rewriter)))
      return failure();
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> input, filter, output;
    Value first, second;
    if constexpr (std::is_same_v<OpTy, Conv2dOp>) {
      first = op.getInput(), second = op.getFilter();
      input = shapeOf(first), filter = shapeOf(second),
      output = type.getShape();
    } else if constexpr (std::is_same_v<OpTy, Conv2dGradInputOp>) {
      first = op.getGrad(), second = op.getFilter();
      output = shapeOf(first), filter = shapeOf(second),
      input = type.getShape();
    } else {
      first = op.getGrad(), second = op.getInput();
      output = shapeOf(first), input = shapeOf(second),
      filter = type.getShape();
    }
    ArrayRef<int64_t> s = op.getStrides(), p = op.getPadding(),
                      d = op.getDilation();
    amp::ConvGeometry g{input[0],  input[1],  input[2],  input[3],  filter[0],
                        filter[2], filter[3], output[2], output[3], s[0],
                        s[1],      p[0],      p[1],      d[0],      d[1]};
    // The element types, then the geometry in its fields' order (the
    // runtime's AMP_CONV_GEOMETRY_PARAMS).
    SmallVector<int64_t> params = {*runtimeDTypeOf(first),
                                   *runtimeDTypeOf(second),
                                   g.n,
                                   g.c,
                                   g.h,
                                   g.w,
                                   g.f,
                                   g.kh,
                                   g.kw,
                                   g.oh,
                                   g.ow,
                                   g.sh,
                                   g.sw,
                                   g.ph,
                                   g.pw,
                                   g.dh,
                                   g.dw};
    // The f32 accumulator, rounded once to the result's type (after the
    // bias, where there is one: as the linalg lowering).
    Operation *call = createRuntimeCall(
        rewriter, op, callee, TypeRange{type.clone(rewriter.getF32Type())},
        {first, second}, params);
    // Its scratch (widened operands, im2col chunks or oneDNN's blocked
    // copies), reserved in the step's memory plan.
    amp::ConvPass pass = std::is_same_v<OpTy, Conv2dOp> ? amp::ConvPass::Forward
                         : std::is_same_v<OpTy, Conv2dGradInputOp>
                             ? amp::ConvPass::BackwardData
                             : amp::ConvPass::BackwardWeights;
    Type typeA = getElementTypeOrSelf(first.getType()),
         typeB = getElementTypeOrSelf(second.getType());
    auto bytes = [](Type t) { return t.isF32() ? 4 : 2; };
    call->setAttr(kWorkspaceBytesAttrName,
                  rewriter.getI64IntegerAttr(amp::convWorkspaceBytes(
                      pass, g, bytes(typeA), bytes(typeB),
                      typeA.isBF16() && typeB.isBF16(), nativeBf16)));
    Value acc = call->getResult(0);
    if constexpr (std::is_same_v<OpTy, Conv2dOp>) {
      if (Value bias = op.getBias()) {
        rewriter.replaceOp(
            op, addConvBias(rewriter, op.getLoc(), acc, bias, type));
        return success();
      }
    }
    rewriter.replaceOp(op, roundTo(rewriter, op.getLoc(), acc, type));
    return success();
  }

  std::string callee;
  /// The target multiplies bf16 natively (the plan's workspace bound).
  bool nativeBf16;
};

/// A GEMM of 2-D tensors through the target's runtime: [m, k] x [k, n] (each
/// operand transposed as flagged) -> [m, n] of `resultElement`, accumulated
/// in f32 and rounded once. Both operands must have one element type on
/// CUDA (cuBLASLt's A/B type).
Value buildRuntimeGemm(PatternRewriter &rewriter, Operation *anchor,
                       RuntimeTarget target, Value lhs, Value rhs, int64_t m,
                       int64_t n, int64_t k, bool ta, bool tb,
                       Type resultElement) {
  bool cuda = target == RuntimeTarget::Cuda;
  SmallVector<int64_t> params;
  if (cuda)
    params = {
        *runtimeDTypeOf(lhs), *runtimeDType(resultElement), 1, m, n, k, ta, tb};
  else
    params = {*runtimeDTypeOf(lhs), *runtimeDTypeOf(rhs), 1, m, n, k, ta, tb};
  return buildRuntimeCall(rewriter, anchor,
                          cuda ? entry::kCudaGemm : entry::kCpuGemm, {lhs, rhs},
                          params, RankedTensorType::get({m, n}, resultElement),
                          /*f32Result=*/!cuda);
}

/// The geometry of a 2-D convolution.
struct ConvGeometry {
  int64_t n, c, h, w, f, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t rows() const { return c * kh * kw; } // of the column matrix
  int64_t cols() const { return n * oh * ow; }
};

/// col[r, q] = x[n, c, oh*sh - ph + i*dh, ow*sw - pw + j*dw] (0 outside the
/// image) with r = (c, i, j) and q = (n, oh, ow), row-major: the column
/// matrix whose product with the [F, C*KH*KW] filter is the convolution.
/// A parallel generic reading `x` with tensor.extract.
Value buildIm2col(OpBuilder &b, Location loc, Value x, const ConvGeometry &g) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto type = RankedTensorType::get({g.rows(), g.cols()}, element);
  Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), element);
  MLIRContext *ctx = b.getContext();
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, ValueRange{}, ValueRange{empty},
      SmallVector<AffineMap>{identityMap(ctx, 2)},
      SmallVector<utils::IteratorType>(2, utils::IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange) {
        auto c = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, l, v);
        };
        auto div = [&](Value a, int64_t d) -> Value {
          return arith::DivUIOp::create(nb, l, a, c(d));
        };
        auto rem = [&](Value a, int64_t d) -> Value {
          return arith::RemUIOp::create(nb, l, a, c(d));
        };
        Value r = linalg::IndexOp::create(nb, l, 0);
        Value q = linalg::IndexOp::create(nb, l, 1);
        Value ch = div(r, g.kh * g.kw), i = rem(div(r, g.kw), g.kh),
              j = rem(r, g.kw);
        Value img = div(q, g.oh * g.ow), oy = rem(div(q, g.ow), g.oh),
              ox = rem(q, g.ow);
        // Signed positions in the image; clamped to read in bounds.
        auto position = [&](Value o, int64_t stride, int64_t pad, Value t,
                            int64_t dil) -> Value {
          Value p = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, o, c(stride)),
              arith::MulIOp::create(nb, l, t, c(dil)));
          return arith::SubIOp::create(nb, l, p, c(pad));
        };
        Value y = position(oy, g.sh, g.ph, i, g.dh);
        Value xx = position(ox, g.sw, g.pw, j, g.dw);
        auto inside = [&](Value p, int64_t size) -> Value {
          return arith::AndIOp::create(
              nb, l,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, p, c(0)),
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, p,
                                    c(size)));
        };
        Value ok =
            arith::AndIOp::create(nb, l, inside(y, g.h), inside(xx, g.w));
        auto clamp = [&](Value p, int64_t size) -> Value {
          return arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, p, c(0)), c(size - 1));
        };
        Value v = tensor::ExtractOp::create(
            nb, l, x, ValueRange{img, ch, clamp(y, g.h), clamp(xx, g.w)});
        Value zero = arith::ConstantOp::create(nb, l, nb.getZeroAttr(element));
        linalg::YieldOp::create(
            nb, l, Value(arith::SelectOp::create(nb, l, ok, v, zero)));
      });
  return generic.getResult(0);
}

/// dx[n, c, y, x] = sum over (i, j) of dcol[(c, i, j), (n, oy, ox)] where
/// y = oy*sh - ph + i*dh (and likewise x) for some in-range oy, ox: the
/// adjoint of buildIm2col, summed in f32 (dcol's type) and rounded once to
/// `resultType`. One thread per input element on the GPU, KH*KW terms each.
Value buildCol2im(OpBuilder &b, Location loc, Value dcol, const ConvGeometry &g,
                  RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto accType = RankedTensorType::get(resultType.getShape(), f32);
  Value zeroF = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
  Value init =
      linalg::FillOp::create(
          b, loc, zeroF,
          Value(tensor::EmptyOp::create(b, loc, accType.getShape(), f32)))
          .getResult(0);
  SmallVector<AffineExpr> outDims = {
      getAffineDimExpr(0, ctx), getAffineDimExpr(1, ctx),
      getAffineDimExpr(2, ctx), getAffineDimExpr(3, ctx)};
  SmallVector<utils::IteratorType> iterators(4, utils::IteratorType::parallel);
  iterators.append(2, utils::IteratorType::reduction);
  // The (i, j) window is an iteration domain without an operand: bound it
  // by a [KH, KW] tensor read through its map (its values are unused).
  Value window =
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{g.kh, g.kw}, f32);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{accType}, ValueRange{window}, ValueRange{init},
      SmallVector<AffineMap>{
          AffineMap::get(
              6, 0, {getAffineDimExpr(4, ctx), getAffineDimExpr(5, ctx)}, ctx),
          AffineMap::get(6, 0, outDims, ctx)},
      iterators, [&](OpBuilder &nb, Location l, ValueRange args) {
        auto c = [&](int64_t v) -> Value {
          return arith::ConstantIndexOp::create(nb, l, v);
        };
        Value img = linalg::IndexOp::create(nb, l, 0);
        Value ch = linalg::IndexOp::create(nb, l, 1);
        Value y = linalg::IndexOp::create(nb, l, 2);
        Value x = linalg::IndexOp::create(nb, l, 3);
        Value i = linalg::IndexOp::create(nb, l, 4);
        Value j = linalg::IndexOp::create(nb, l, 5);
        // o = (p + pad - t*dil) / stride when that divides and is in range.
        auto output = [&](Value p, int64_t pad, Value t, int64_t dil,
                          int64_t stride, int64_t size, Value &ok) -> Value {
          Value num = arith::SubIOp::create(
              nb, l, arith::AddIOp::create(nb, l, p, c(pad)),
              arith::MulIOp::create(nb, l, t, c(dil)));
          Value o = arith::DivSIOp::create(nb, l, num, c(stride));
          Value exact = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq,
              arith::RemSIOp::create(nb, l, num, c(stride)), c(0));
          Value inRange = arith::AndIOp::create(
              nb, l,
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, num,
                                    c(0)),
              arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, o,
                                    c(size)));
          ok = arith::AndIOp::create(nb, l, exact, inRange);
          return arith::MinSIOp::create(
              nb, l, arith::MaxSIOp::create(nb, l, o, c(0)), c(size - 1));
        };
        Value okY, okX;
        Value oy = output(y, g.ph, i, g.dh, g.sh, g.oh, okY);
        Value ox = output(x, g.pw, j, g.dw, g.sw, g.ow, okX);
        Value row = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, ch, c(g.kh * g.kw)),
            arith::AddIOp::create(nb, l,
                                  arith::MulIOp::create(nb, l, i, c(g.kw)), j));
        Value col = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, img, c(g.oh * g.ow)),
            arith::AddIOp::create(
                nb, l, arith::MulIOp::create(nb, l, oy, c(g.ow)), ox));
        Value v = tensor::ExtractOp::create(nb, l, dcol, ValueRange{row, col});
        Value zero = arith::ConstantOp::create(nb, l, nb.getZeroAttr(f32));
        Value term = arith::SelectOp::create(
            nb, l, arith::AndIOp::create(nb, l, okY, okX), v, zero);
        linalg::YieldOp::create(
            nb, l, Value(arith::AddFOp::create(nb, l, args[1], term)));
      });
  return roundTo(b, loc, generic.getResult(0), resultType);
}

/// conv2d and its gradients as GEMMs on the column matrix (im2col): the
/// target's GEMM does the multiply-adds (cuBLASLt Tensor Cores on CUDA),
/// generated kernels the gather (im2col), the scatter's adjoint (col2im)
/// and the layout transposes. With G = [F, C*KH*KW] (the filter) and
/// X = [C*KH*KW, N*OH*OW] (im2col of the input):
///   conv2d:      Y  = G X, then [F, N, P] -> [N, F, P]
///   grad_filter: dG = dY' X^T with dY' = dY as [F, N*P]
///   grad_input:  dx = col2im(G^T dY'), the product kept in f32
template <typename OpTy> struct ConvAsGemm : OpRewritePattern<OpTy> {
  ConvAsGemm(MLIRContext *ctx, RuntimeTarget target)
      : OpRewritePattern<OpTy>(ctx), target(target) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (failed(matchRuntimeConv(op, rewriter)))
      return failure();
    Value a, b; // the two operands the GEMM multiplies (after reshapes)
    ArrayRef<int64_t> input, filter, output;
    auto type = cast<RankedTensorType>(op.getType());
    if constexpr (std::is_same_v<OpTy, Conv2dOp>) {
      a = op.getFilter(), b = op.getInput();
      input = shapeOf(b), filter = shapeOf(a), output = type.getShape();
    } else if constexpr (std::is_same_v<OpTy, Conv2dGradInputOp>) {
      a = op.getFilter(), b = op.getGrad();
      filter = shapeOf(a), output = shapeOf(b), input = type.getShape();
    } else {
      a = op.getGrad(), b = op.getInput();
      output = shapeOf(a), input = shapeOf(b), filter = type.getShape();
    }
    if (target == RuntimeTarget::Cuda &&
        cast<RankedTensorType>(a.getType()).getElementType() !=
            cast<RankedTensorType>(b.getType()).getElementType())
      return rewriter.notifyMatchFailure(op, "cuBLASLt needs one operand "
                                             "type");
    ArrayRef<int64_t> s = op.getStrides(), p = op.getPadding(),
                      d = op.getDilation();
    ConvGeometry g{input[0],  input[1],  input[2],  input[3],  filter[0],
                   filter[2], filter[3], output[2], output[3], s[0],
                   s[1],      p[0],      p[1],      d[0],      d[1]};
    Location loc = op.getLoc();
    Type element = type.getElementType();
    auto reshape = [&](Value v, ArrayRef<int64_t> shape) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      return ReshapeOp::create(rewriter, loc, t.clone(shape), v);
    };
    auto transpose = [&](Value v, ArrayRef<int64_t> perm) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape;
      for (int64_t q : perm)
        shape.push_back(t.getDimSize(q));
      return TransposeOp::create(rewriter, loc, t.clone(shape), v, perm);
    };
    int64_t pixels = g.oh * g.ow;
    // dY as [F, N*P].
    auto gradRows = [&](Value grad) {
      return reshape(transpose(reshape(grad, {g.n, g.f, pixels}), {1, 0, 2}),
                     {g.f, g.cols()});
    };
    Value result;
    if constexpr (std::is_same_v<OpTy, Conv2dOp>) {
      // With a bias, the product stays f32 until the bias is added.
      Value bias = op.getBias();
      Value y = buildRuntimeGemm(
          rewriter, op, target, reshape(a, {g.f, g.rows()}),
          buildIm2col(rewriter, loc, b, g), g.f, g.cols(), g.rows(), false,
          false, bias ? rewriter.getF32Type() : element);
      result = reshape(transpose(reshape(y, {g.f, g.n, pixels}), {1, 0, 2}),
                       type.getShape());
      if (bias)
        result = addConvBias(rewriter, loc, result, bias, type);
    } else if constexpr (std::is_same_v<OpTy, Conv2dGradInputOp>) {
      Value dcol = buildRuntimeGemm(
          rewriter, op, target, reshape(a, {g.f, g.rows()}), gradRows(b),
          g.rows(), g.cols(), g.f, /*ta=*/true, false, rewriter.getF32Type());
      result = buildCol2im(rewriter, loc, dcol, g, type);
    } else {
      Value dw = buildRuntimeGemm(
          rewriter, op, target, gradRows(a), buildIm2col(rewriter, loc, b, g),
          g.f, g.rows(), g.cols(), false, /*tb=*/true, element);
      result = reshape(dw, type.getShape());
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  RuntimeTarget target;
};

/// The weight and bias gradients of a linear layer as one cuBLASLt call
/// with the bias-gradient epilogue: `reduce_sum %dy axes [0]` and
/// `matmul %x, %dy` (dy not transposed, no bias, one operand type) become
/// `runtime_call @amp_cuda_gemm_bgrad(%x, %dy)` with both results, placed
/// where the earlier of the two was. Runs before the GEMM patterns, which
/// would otherwise take the matmul alone.
struct BiasGradientFusion : OpRewritePattern<ReduceSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceSumOp sum,
                                PatternRewriter &rewriter) const override {
    Value dy = sum.getInput();
    auto dyType = cast<RankedTensorType>(dy.getType());
    auto sumType = cast<RankedTensorType>(sum.getType());
    if (dyType.getRank() != 2 || sum.getKeepDims() ||
        sum.getAxes() != ArrayRef<int64_t>{0})
      return failure();
    MatmulOp gemm;
    for (Operation *user : dy.getUsers()) {
      auto m = dyn_cast<MatmulOp>(user);
      if (!m || m.getRhs() != dy || m.getBias() || m.getTransposeRhs() ||
          m->getBlock() != sum->getBlock() ||
          cast<RankedTensorType>(m.getType()).getRank() != 2 ||
          !runtimeCanCompute(m, m.getAccumulatorType()) ||
          runtimeDTypeOf(m.getLhs()) != runtimeDTypeOf(dy) ||
          cast<RankedTensorType>(m.getType()).getElementType() !=
              sumType.getElementType())
        continue;
      gemm = m;
      break;
    }
    if (!gemm || !runtimeDType(sumType.getElementType()))
      return failure();
    Operation *first =
        gemm->isBeforeInBlock(sum) ? gemm.getOperation() : sum.getOperation();
    // The call goes where the earlier op was: the GEMM's other operand must
    // be defined before it (the sum may come first, %x after it).
    if (!DominanceInfo(first).properlyDominates(gemm.getLhs(), first))
      return failure();
    rewriter.setInsertionPoint(first);
    // The checks above make the operands' types one and D's the sum's.
    auto call = createRuntimeCall(
        rewriter, first, entry::kCudaGemmBgrad,
        TypeRange{gemm.getType(), sumType}, ValueRange{gemm.getLhs(), dy},
        cudaGemmParams(gemm.getLhs(), gemm.getTransposeLhs(), /*tb=*/false,
                       cast<RankedTensorType>(gemm.getType())));
    rewriter.replaceOp(gemm, call.getResult(0));
    rewriter.replaceOp(sum, call.getResult(1));
    return success();
  }
};

/// The gradients `GradOp %dy, %h` reading an activation's input `h` (a
/// GEMM's result) when every other use of `h` is the activation itself and
/// each gradient passes `accept`; none when `h` has any other use (a
/// gradient with `h` as its incoming gradient included).
template <typename GradOp>
std::optional<SmallVector<GradOp>>
activationInputGradients(Value h, Operation *activation,
                         llvm::function_ref<bool(GradOp)> accept = nullptr) {
  SmallVector<GradOp> grads;
  for (OpOperand &use : h.getUses()) {
    if (use.getOwner() == activation)
      continue;
    auto grad = dyn_cast<GradOp>(use.getOwner());
    if (!grad || grad.getInput() != h || grad.getGrad() == h ||
        (accept && !accept(grad)))
      return std::nullopt;
    grads.push_back(grad);
  }
  return grads;
}

/// Replaces `activation` of `gemm`'s result (a matmul with bias) by one
/// `amp_cuda_gemm_bias` call with `epilogue` and returns the call's value;
/// the caller erases the matmul once nothing else uses it.
Value fuseIntoBiasEpilogue(RewriterBase &rewriter, Operation *activation,
                           MatmulOp gemm, int64_t epilogue) {
  auto type = cast<RankedTensorType>(activation->getResult(0).getType());
  SmallVector<int64_t> params = cudaGemmParams(
      gemm.getLhs(), gemm.getTransposeLhs(), gemm.getTransposeRhs(), type);
  params.push_back(epilogue);
  rewriter.setInsertionPoint(activation);
  Value y = buildRuntimeCall(rewriter, activation, entry::kCudaGemmBias,
                             {gemm.getLhs(), gemm.getRhs(), gemm.getBias()},
                             params, type, /*f32Result=*/false);
  rewriter.replaceOp(activation, y);
  return y;
}

/// Replaces `activation` of `gemm`'s result (a matmul with bias) by the
/// first result of a call of `callee` (GELU_AUX_BIAS or RELU_AUX_BIAS) whose
/// second result, of `auxType`, is the aux output the backward pass reads;
/// returns both. The caller erases the matmul once nothing else uses it.
std::pair<Value, Value> fuseIntoAuxEpilogue(RewriterBase &rewriter,
                                            Operation *activation,
                                            MatmulOp gemm, StringRef callee,
                                            RankedTensorType auxType) {
  auto type = cast<RankedTensorType>(activation->getResult(0).getType());
  rewriter.setInsertionPoint(activation);
  auto call = createRuntimeCall(
      rewriter, activation, callee, TypeRange{type, auxType},
      ValueRange{gemm.getLhs(), gemm.getRhs(), gemm.getBias()},
      cudaGemmParams(gemm.getLhs(), gemm.getTransposeLhs(),
                     gemm.getTransposeRhs(), type));
  rewriter.replaceOp(activation, call.getResult(0));
  return {call.getResult(0), call.getResult(1)};
}

/// Whether cuBLASLt's aux epilogues take `gemm`: f16/bf16 operands of one
/// type, one matrix (rank 2), n a multiple of `nMultiple` (the aux leading
/// dimension's rule: 8 elements for GELU's input, 128 bits for the ReLU
/// mask), and both operands' rows 16-byte aligned (leading dimensions
/// multiples of 8), the layouts cuBLASLt's epilogue kernels are built for.
bool auxEpilogueFusable(MatmulOp gemm, int64_t nMultiple) {
  auto type = cast<RankedTensorType>(gemm.getType());
  return type.getRank() == 2 && type.getDimSize(1) % nMultiple == 0 &&
         shapeOf(gemm.getLhs()).back() % 8 == 0 &&
         shapeOf(gemm.getRhs()).back() % 8 == 0 &&
         runtimeCanCompute(gemm, gemm.getAccumulatorType()) &&
         runtimeDTypeOf(gemm.getLhs()) != int64_t(RuntimeDType::F32) &&
         runtimeDTypeOf(gemm.getLhs()) == runtimeDTypeOf(gemm.getRhs());
}

/// The bias-free matmul producing `grad`'s incoming gradient when it is used
/// only there and `nMultiple` suits it (auxEpilogueFusable): the GEMM that
/// can apply the activation's derivative in its epilogue.
template <typename GradOp>
MatmulOp derivativeGemm(GradOp grad, int64_t nMultiple) {
  auto dgemm = grad.getGrad().template getDefiningOp<MatmulOp>();
  if (!dgemm || dgemm.getBias() || !dgemm->hasOneUse() ||
      !auxEpilogueFusable(dgemm, nMultiple))
    return nullptr;
  return dgemm;
}

/// Replaces `grad` by a call of `callee` (DGELU or DRELU) computing
/// `dgemm`'s product with the derivative at `aux` in its epilogue, and
/// erases `dgemm`.
void fuseIntoDerivativeEpilogue(RewriterBase &rewriter, Operation *grad,
                                MatmulOp dgemm, StringRef callee, Value aux) {
  auto type = cast<RankedTensorType>(grad->getResult(0).getType());
  rewriter.setInsertionPoint(grad);
  rewriter.replaceOp(
      grad,
      createRuntimeCall(rewriter, grad, callee, TypeRange{type},
                        ValueRange{dgemm.getLhs(), dgemm.getRhs(), aux},
                        cudaGemmParams(dgemm.getLhs(), dgemm.getTransposeLhs(),
                                       dgemm.getTransposeRhs(), type)));
  rewriter.eraseOp(dgemm);
}

/// A linear layer's ReLU in cuBLASLt's epilogue: `relu(matmul %x, %w bias
/// %b)` becomes `runtime_call @amp_cuda_gemm_bias(%x, %w, %b)` with
/// epilogue 2 (`CUBLASLT_EPILOGUE_RELU_BIAS`: the GEMM adds the bias and
/// clamps at zero before rounding D once, as relu(round(h)) = round(relu(h))).
/// The pre-activation must have no other use than the ReLU and its
/// gradients `relu_grad %dy, %h`, which then read the ReLU's output instead
/// (relu(h) > 0 exactly where h > 0, NaN included). Where such a gradient's
/// `%dy` is a bias-free matmul used only there (f16/bf16, one matrix, n a
/// multiple of 128: auxEpilogueFusable), the layer becomes
/// `runtime_call @amp_cuda_gemm_relu_aux(%x, %w, %b)` instead, whose second
/// result is the bit mask of h > 0 (RELU_AUX_BIAS; `tensor<M x N/8 x i8>`),
/// and the gradient and its matmul one `runtime_call @amp_cuda_gemm_drelu(%a,
/// %b, %mask)` (DRELU: the product where the mask is set, else 0). Runs
/// before the GEMM patterns, which would otherwise take the matmuls alone.
struct ReluEpilogueFusion : OpRewritePattern<ReluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReluOp relu,
                                PatternRewriter &rewriter) const override {
    auto gemm = relu.getInput().getDefiningOp<MatmulOp>();
    if (!gemm || !gemm.getBias() ||
        cast<RankedTensorType>(gemm.getType()).getRank() != 2 ||
        !runtimeCanCompute(gemm, gemm.getAccumulatorType()))
      return failure();
    Value h = gemm.getResult();
    std::optional<SmallVector<ReluGradOp>> grads =
        activationInputGradients<ReluGradOp>(h, relu);
    if (!grads)
      return failure();
    // The gradients will read what the fused call makes where the ReLU
    // was: each must come after it (hand-written IR may differ).
    DominanceInfo dominance(relu);
    if (!llvm::all_of(*grads, [&](ReluGradOp grad) {
          return dominance.properlyDominates(relu.getOperation(), grad);
        }))
      return failure();
    SmallVector<MatmulOp> dgemms = llvm::map_to_vector(
        *grads, [](ReluGradOp grad) { return derivativeGemm(grad, 128); });
    Value y, mask;
    if (auxEpilogueFusable(gemm, 128) &&
        llvm::any_of(dgemms, [](MatmulOp dgemm) { return bool(dgemm); })) {
      auto type = cast<RankedTensorType>(relu.getType());
      std::tie(y, mask) = fuseIntoAuxEpilogue(
          rewriter, relu, gemm, entry::kCudaGemmReluAux,
          RankedTensorType::get({type.getDimSize(0), type.getDimSize(1) / 8},
                                rewriter.getI8Type()));
    } else {
      y = fuseIntoBiasEpilogue(rewriter, relu, gemm, /*Epilogue::ReluBias*/ 2);
    }
    for (auto [grad, dgemm] : llvm::zip_equal(*grads, dgemms)) {
      if (mask && dgemm)
        fuseIntoDerivativeEpilogue(rewriter, grad, dgemm, entry::kCudaGemmDrelu,
                                   mask);
      else
        rewriter.modifyOpInPlace(grad,
                                 [&] { grad.getInputMutable().assign(y); });
    }
    rewriter.eraseOp(gemm);
    return success();
  }
};

/// A linear layer's tanh GELU in cuBLASLt's epilogue, and the GEMM that
/// produces the GELU's output gradient with the GELU's derivative in its
/// epilogue. `gelu(matmul %x, %w bias %b) approximate tanh` becomes
/// `runtime_call @amp_cuda_gemm_gelu_aux(%x, %w, %b)` with two results, the
/// GELU's output and its input (the aux matrix, D's type: what the matmul
/// would have rounded to), which the gradients `gelu_grad %dy, %h` then
/// read (without such gradients, epilogue 3, GELU_BIAS, and no aux). Where
/// such a gradient's `%dy` is a bias-free matmul used only there,
/// both become `runtime_call @amp_cuda_gemm_dgelu(%a, %b, %aux)`. f16/bf16
/// operands, one matrix (rank 2), n a multiple of 8 (cuBLASLt's aux leading
/// dimension); the exact (erf) GELU has no cuBLASLt epilogue and stays a
/// kernel. Runs before the GEMM patterns, which would otherwise take the
/// matmuls alone.
struct GeluEpilogueFusion : OpRewritePattern<GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  static bool isTanh(std::optional<GeluApproximation> a) {
    return a && *a == GeluApproximation::tanh;
  }
  LogicalResult matchAndRewrite(GeluOp gelu,
                                PatternRewriter &rewriter) const override {
    auto gemm = gelu.getInput().getDefiningOp<MatmulOp>();
    if (!isTanh(gelu.getApproximate()) || !gemm || !gemm.getBias() ||
        !auxEpilogueFusable(gemm, 8))
      return failure();
    Value h = gemm.getResult();
    std::optional<SmallVector<GeluGradOp>> grads =
        activationInputGradients<GeluGradOp>(h, gelu, [&](GeluGradOp grad) {
          return isTanh(grad.getApproximate());
        });
    // The gradients will read the aux output made where the GELU was: each
    // must come after it.
    DominanceInfo dominance(gelu);
    if (!grads || !llvm::all_of(*grads, [&](GeluGradOp grad) {
          return dominance.properlyDominates(gelu.getOperation(), grad);
        }))
      return failure();
    if (grads->empty()) {
      // No gradient needs the input (an evaluation function): no aux.
      fuseIntoBiasEpilogue(rewriter, gelu, gemm, /*Epilogue::GeluBias*/ 3);
      rewriter.eraseOp(gemm);
      return success();
    }
    auto type = cast<RankedTensorType>(gelu.getType());
    Value aux =
        fuseIntoAuxEpilogue(rewriter, gelu, gemm, entry::kCudaGemmGeluAux, type)
            .second;
    rewriter.replaceOp(gemm, aux);
    for (GeluGradOp grad : *grads)
      if (MatmulOp dgemm = derivativeGemm(grad, 8))
        fuseIntoDerivativeEpilogue(rewriter, grad, dgemm, entry::kCudaGemmDgelu,
                                   aux);
    return success();
  }
};

/// Applies one epilogue fusion pattern to a module, before the GEMM
/// patterns (which would otherwise take the matmuls alone). One pattern at a
/// time, in the order bias gradients, ReLU, GELU: each fusion is local and
/// the order keeps the decisions of one from depending on another's.
template <typename PatternT> LogicalResult applyFusion(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  patterns.add<PatternT>(module.getContext());
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  config.enableFolding(false);
  config.enableConstantCSE(false);
  // In program order, as the ops are written: the same fusions and runtime
  // declarations, in the same order, whatever the worklist would pick.
  config.setUseTopDownTraversal(true);
  return applyPatternsGreedily(module, std::move(patterns), config);
}

/// Applies the runtime patterns of one target to a module.
LogicalResult convertToRuntime(ModuleOp module, RuntimeTarget target,
                               bool convAsGemm = false,
                               bool nativeBf16 = false) {
  RewritePatternSet patterns(module.getContext());
  populateTrainToRuntimePatterns(patterns, target, convAsGemm, nativeBf16);
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(module, std::move(patterns), config);
}

struct ConvertTrainToCpuRuntimePass
    : public amp::impl::ConvertTrainToCpuRuntimePassBase<
          ConvertTrainToCpuRuntimePass> {
  using ConvertTrainToCpuRuntimePassBase::ConvertTrainToCpuRuntimePassBase;
  void runOnOperation() override {
    if (failed(convertToRuntime(getOperation(), RuntimeTarget::Cpu, convAsGemm,
                                nativeBf16)))
      signalPassFailure();
  }
};

struct ConvertTrainToCudaRuntimePass
    : public amp::impl::ConvertTrainToCudaRuntimePassBase<
          ConvertTrainToCudaRuntimePass> {
  void runOnOperation() override {
    if (failed(applyFusion<BiasGradientFusion>(getOperation())) ||
        failed(applyFusion<ReluEpilogueFusion>(getOperation())) ||
        failed(applyFusion<GeluEpilogueFusion>(getOperation())) ||
        failed(convertToRuntime(getOperation(), RuntimeTarget::Cuda)))
      signalPassFailure();
  }
};

} // namespace

void amp::populateTrainToRuntimePatterns(RewritePatternSet &patterns,
                                         RuntimeTarget target, bool convAsGemm,
                                         bool nativeBf16) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GemmToRuntime<MatmulOp>, GemmToRuntime<BatchMatmulOp>>(
      ctx, target, nativeBf16);
  // Batch matmuls of any rank and broadcast batch dims: the rank-3 form.
  populateBatchMatmulToRank3Patterns(patterns);
  patterns.add<EmbeddingGradToRuntime>(ctx, target);
  if (target == RuntimeTarget::Cpu)
    patterns.add<AttentionToRuntime, AttentionGradToRuntime,
                 LinearCrossEntropyToRuntime, LinearCrossEntropyGradToRuntime>(
        ctx, nativeBf16);
  patterns.add<AllReduceToRuntime>(ctx, target == RuntimeTarget::Cuda
                                            ? entry::kCudaAllReduce
                                            : entry::kCpuAllReduce);
  if (target == RuntimeTarget::Cuda || convAsGemm) {
    patterns.add<ConvAsGemm<Conv2dOp>, ConvAsGemm<Conv2dGradInputOp>,
                 ConvAsGemm<Conv2dGradFilterOp>>(ctx, target);
    return;
  }
  patterns.add<ConvToRuntime<Conv2dOp>>(ctx, entry::kCpuConv2d, nativeBf16);
  patterns.add<ConvToRuntime<Conv2dGradInputOp>>(
      ctx, entry::kCpuConv2dGradInput, nativeBf16);
  patterns.add<ConvToRuntime<Conv2dGradFilterOp>>(
      ctx, entry::kCpuConv2dGradFilter, nativeBf16);
}
