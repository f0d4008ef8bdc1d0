//===- Passes.td - amp conversion passes -------------------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_PASSES_TD
#define AMP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTrainToLinalgPass : Pass<"amp-convert-train-to-linalg"> {
  let summary = "Lower train ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every train op into upstream ops on tensors: element-wise ops and
    reductions into `linalg.generic`, matrix products into `linalg.matmul` /
    `linalg.batch_matmul` (transposes as indexing maps), convolutions and
    pooling into linalg's named NCHW ops after a `tensor.pad`, reshapes into
    `tensor.collapse_shape` / `tensor.expand_shape`.

    Numerics, shared by the CPU and CUDA pipelines:
    - element-wise arithmetic on f16/bf16 computes in f32 and rounds once to
      the result type (PyTorch's `opmath` semantics; for +, -, *, / this is
      exactly IEEE f16/bf16 arithmetic);
    - matmul, batch_matmul and conv2d multiply low-precision operands exactly
      in f32 and accumulate in f32, rounding once at the end (Tensor Core
      semantics);
    - every reduction (softmax, norms, reduce_sum/mean, losses, average pooling)
      accumulates in f32; softmax subtracts the row maximum first.

    Any train op left unconverted is an error naming the op.

    ```
    amp-opt model.mlir --amp-convert-train-to-linalg
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

#endif // AMP_CONVERSION_PASSES_TD
