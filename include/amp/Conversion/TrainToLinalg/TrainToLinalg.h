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

#include "llvm/ADT/StringRef.h"

namespace mlir {
class FloatType;
class RewritePatternSet;
} // namespace mlir

namespace amp {
namespace train {
class BatchMatmulOp;
} // namespace train

/// Element-wise unary/binary ops, cast, dropout and broadcast.
void populateTrainElementwiseToLinalgPatterns(
    mlir::RewritePatternSet &patterns);

/// matmul, batch_matmul and conv2d (f32 accumulation).
/// Whether a batch_matmul has the one form the backends compute: rank 3, the
/// same batch dimension on both operands.
bool isRank3BatchMatmul(train::BatchMatmulOp op);

/// Rewrites every other batch_matmul ([..., M, K] x [..., K, N] with any
/// number of batch dimensions, broadcast between the operands) as the rank-3
/// form: each operand broadcast to the common batch shape (when it differs)
/// and reshaped to [batch, rows, cols], the product, and the result reshaped
/// back. The CPU and CUDA lowerings add it before their GEMM patterns.
void populateBatchMatmulToRank3Patterns(mlir::RewritePatternSet &patterns);

void populateTrainContractionToLinalgPatterns(
    mlir::RewritePatternSet &patterns);

/// Softmax, normalizations, pooling, reductions and losses: f32
/// accumulation, but for the statistics of layer and batch norm and the
/// sums of their gradients, which accumulate in `normStatistics` (f32 or
/// f64). A batch norm over several ranks (SyncBatchNorm) sums its
/// per-channel statistics across them with runtime function
/// `allReduceCallee` (amp_cpu_all_reduce's signature); with none, it fails
/// to lower.
void populateTrainReductionToLinalgPatterns(
    mlir::RewritePatternSet &patterns, mlir::FloatType normStatistics,
    llvm::StringRef allReduceCallee = "");

/// constant, reshape, transpose, concat and embedding.
void populateTrainShapeToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// sgd_update, adam_update, clip_grad_norm, accumulate_grads, unscale_grads
/// and update_scale (one fused generic per parameter where possible).
void populateTrainOptimizerToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// All of the above.
void populateTrainToLinalgPatterns(mlir::RewritePatternSet &patterns,
                                   mlir::FloatType normStatistics,
                                   llvm::StringRef allReduceCallee = "");

} // namespace amp

#endif // AMP_CONVERSION_TRAINTOLINALG_TRAINTOLINALG_H
