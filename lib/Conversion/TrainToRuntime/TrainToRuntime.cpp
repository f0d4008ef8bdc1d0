//===- TrainToRuntime.cpp - GEMMs and convolutions to runtime calls -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Each GEMM-like op becomes a `train.runtime_call` of the target's runtime on
// its operand tensors. On the CPU it produces the f32 accumulator, followed by
// the shared rounding to the op's result type; cuBLASLt writes the op's type
// itself:
//
//   %acc = train.runtime_call @amp_cpu_gemm_bias(%x, %w, %b) [<dtypes>,
//       <sizes>] : (...) -> tensor<128x256xf32>
//
// The callee is declared in the module. One-shot bufferization turns the op
// into a func.call on buffer addresses (RuntimeCallBufferization.cpp).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/TrainToRuntime/TrainToRuntime.h"
#include "amp/Conversion/Passes.h"
#include "amp/Conversion/TrainToLinalg/LoweringUtils.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Runtime/CpuRuntime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

/// Replaces `op` by a runtime call of `callee` on `inputs` with `params`,
/// producing a tensor of the op's shape: f32, then rounded once to the op's
/// result type, when `f32Result`, else the op's type directly; declares
/// `callee` in the module on first use.
void replaceWithRuntimeCall(PatternRewriter &rewriter, Operation *op,
                            StringRef callee, ValueRange inputs,
                            ArrayRef<int64_t> params, bool f32Result = true) {
  auto module = op->getParentOfType<ModuleOp>();
  MLIRContext *ctx = op->getContext();
  if (!module.lookupSymbol(callee)) {
    SmallVector<Type> argTypes(inputs.size() + 1, IndexType::get(ctx));
    argTypes.append(params.size(), IntegerType::get(ctx, 64));
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(module.getBody());
    auto fn = func::FuncOp::create(rewriter, module.getLoc(), callee,
                                   FunctionType::get(ctx, argTypes, {}));
    fn.setPrivate();
  }
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  auto accType =
      f32Result ? RankedTensorType::get(type.getShape(), Float32Type::get(ctx))
                : type;
  Value acc = RuntimeCallOp::create(rewriter, op->getLoc(), accType, callee,
                                    inputs, params);
  rewriter.replaceOp(op, roundTo(rewriter, op->getLoc(), acc, type));
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

template <typename OpTy> struct GemmToRuntime : OpRewritePattern<OpTy> {
  GemmToRuntime(MLIRContext *ctx, RuntimeTarget target)
      : OpRewritePattern<OpTy>(ctx), target(target) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    if (!runtimeCanCompute(op, op.getAccumulatorType()))
      return rewriter.notifyMatchFailure(op, "not an f32-accumulated GEMM of "
                                             "f32/f16/bf16 tensors");
    auto type = cast<RankedTensorType>(op.getType());
    ArrayRef<int64_t> out = type.getShape(), lhs = shapeOf(op.getLhs());
    bool batched = out.size() == 3;
    int64_t m = out[out.size() - 2], n = out.back();
    int64_t k = op.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
    Value bias;
    if constexpr (std::is_same_v<OpTy, MatmulOp>)
      bias = op.getBias();

    int64_t lhsType = *runtimeDTypeOf(op.getLhs()),
            rhsType = *runtimeDTypeOf(op.getRhs()),
            outType = *runtimeDType(type.getElementType()),
            batch = batched ? out[0] : 1;
    bool ta = op.getTransposeLhs(), tb = op.getTransposeRhs();
    if (target == RuntimeTarget::Cuda) {
      // cuBLASLt: both operands of one type, D written in the op's type.
      if (bias)
        replaceWithRuntimeCall(rewriter, op, "amp_cuda_gemm_bias",
                               {op.getLhs(), op.getRhs(), bias},
                               {lhsType, outType, batch, m, n, k, ta, tb,
                                /*Epilogue::Bias*/ 1},
                               /*f32Result=*/false);
      else
        replaceWithRuntimeCall(rewriter, op, "amp_cuda_gemm",
                               {op.getLhs(), op.getRhs()},
                               {lhsType, outType, batch, m, n, k, ta, tb},
                               /*f32Result=*/false);
      return success();
    }
    if (bias)
      replaceWithRuntimeCall(
          rewriter, op, "amp_cpu_gemm_bias", {op.getLhs(), op.getRhs(), bias},
          {lhsType, rhsType, *runtimeDTypeOf(bias), batch, m, n, k, ta, tb});
    else
      replaceWithRuntimeCall(rewriter, op, "amp_cpu_gemm",
                             {op.getLhs(), op.getRhs()},
                             {lhsType, rhsType, batch, m, n, k, ta, tb});
    return success();
  }

  RuntimeTarget target;
};

/// conv2d and its two gradients: the runtime reads two tensors; the geometry
/// comes from the input, filter and output shapes, whichever of them are the
/// op's operands and result.
template <typename OpTy> struct ConvToRuntime : OpRewritePattern<OpTy> {
  ConvToRuntime(MLIRContext *ctx, StringRef callee)
      : OpRewritePattern<OpTy>(ctx), callee(callee) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Type acc = op.getAccumulatorType();
    if (!runtimeCanCompute(op, acc))
      return rewriter.notifyMatchFailure(op, "not an f32-accumulated "
                                             "convolution of f32/f16/bf16");
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

    replaceWithRuntimeCall(rewriter, op, callee, {first, second},
                           {*runtimeDTypeOf(first), *runtimeDTypeOf(second),
                            input[0], input[1], input[2], input[3], filter[0],
                            filter[2], filter[3], output[2], output[3], s[0],
                            s[1], p[0], p[1], d[0], d[1]});
    return success();
  }

  std::string callee;
};

/// Applies the runtime patterns of one target to a module.
LogicalResult convertToRuntime(ModuleOp module, RuntimeTarget target) {
  RewritePatternSet patterns(module.getContext());
  populateTrainToRuntimePatterns(patterns, target);
  GreedyRewriteConfig config;
  config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  return applyPatternsGreedily(module, std::move(patterns), config);
}

struct ConvertTrainToCpuRuntimePass
    : public amp::impl::ConvertTrainToCpuRuntimePassBase<
          ConvertTrainToCpuRuntimePass> {
  void runOnOperation() override {
    if (failed(convertToRuntime(getOperation(), RuntimeTarget::Cpu)))
      signalPassFailure();
  }
};

struct ConvertTrainToCudaRuntimePass
    : public amp::impl::ConvertTrainToCudaRuntimePassBase<
          ConvertTrainToCudaRuntimePass> {
  void runOnOperation() override {
    if (failed(convertToRuntime(getOperation(), RuntimeTarget::Cuda)))
      signalPassFailure();
  }
};

} // namespace

void amp::populateTrainToRuntimePatterns(RewritePatternSet &patterns,
                                         RuntimeTarget target) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<GemmToRuntime<MatmulOp>, GemmToRuntime<BatchMatmulOp>>(ctx,
                                                                      target);
  if (target != RuntimeTarget::Cpu)
    return; // no convolution runtime on CUDA yet: linalg kernels
  patterns.add<ConvToRuntime<Conv2dOp>>(ctx, "amp_cpu_conv2d");
  patterns.add<ConvToRuntime<Conv2dGradInputOp>>(ctx,
                                                 "amp_cpu_conv2d_grad_input");
  patterns.add<ConvToRuntime<Conv2dGradFilterOp>>(ctx,
                                                  "amp_cpu_conv2d_grad_filter");
}
