//===- TrainToLinalg.h - train -> linalg patterns ---------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// One populate function per op family, shared by the CPU and CUDA pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_TRAINTOLINALG_TRAINTOLINALG_H
#define AMP_CONVERSION_TRAINTOLINALG_TRAINTOLINALG_H

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace amp {

/// Element-wise unary/binary ops, cast, dropout and broadcast.
void populateTrainElementwiseToLinalgPatterns(
    mlir::RewritePatternSet &patterns);

/// matmul, batch_matmul and conv2d (f32 accumulation).
void populateTrainContractionToLinalgPatterns(
    mlir::RewritePatternSet &patterns);

/// Softmax, normalizations, pooling, reductions and losses (f32 accumulation).
void populateTrainReductionToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// constant, reshape, transpose, concat and embedding.
void populateTrainShapeToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// sgd_update, adam_update, clip_grad_norm, accumulate_grads, unscale_grads
/// and update_scale (one fused generic per parameter where possible).
void populateTrainOptimizerToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// All of the above.
void populateTrainToLinalgPatterns(mlir::RewritePatternSet &patterns);

} // namespace amp

#endif // AMP_CONVERSION_TRAINTOLINALG_TRAINTOLINALG_H
