//===- TrainToRuntime.h - train -> runtime call patterns --------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The target-specific half of the lowering: GEMMs and convolutions become
// calls into a backend runtime (CBLAS on the CPU); every other op goes through
// the shared train -> linalg patterns.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
#define AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H

namespace mlir {
class DialectRegistry;
class RewritePatternSet;
} // namespace mlir

namespace amp {

/// matmul, batch_matmul, conv2d, conv2d_grad_input and conv2d_grad_filter with
/// an f32 accumulator become `train.runtime_call`s of the CPU runtime
/// (amp/Runtime/CpuRuntime.h), whose f32 result is rounded once to the op's
/// type; the callees are declared in the module. Other accumulators are left
/// for the linalg patterns.
void populateTrainToCpuRuntimePatterns(mlir::RewritePatternSet &patterns);

/// Makes train.runtime_call bufferizable: it becomes a func.call on the
/// addresses of dense input buffers and a new f32 result buffer.
void registerRuntimeCallBufferizationModel(mlir::DialectRegistry &registry);

} // namespace amp

#endif // AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
