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

/// The runtime a lowering calls for GEMMs (and, on the CPU, convolutions).
enum class RuntimeTarget {
  /// lib/Runtime/CPU: amp_cpu_gemm(_bias), amp_cpu_conv2d*; the call writes
  /// the f32 accumulator, rounded once to the op's type afterwards.
  Cpu,
  /// lib/Runtime/CUDA: amp_cuda_gemm(_bias) on cuBLASLt (COMPUTE_32F), which
  /// writes the op's type directly (cuBLASLt rounds once). Convolutions are
  /// GEMMs on im2col column matrices.
  Cuda,
};

/// matmul and batch_matmul with an f32 accumulator become
/// `train.runtime_call`s of the target's runtime; the callees are declared in
/// the module. conv2d, conv2d_grad_input and conv2d_grad_filter become the
/// CPU runtime's convolutions, or (CUDA, or `convAsGemm` on the CPU) GEMMs
/// on im2col column matrices with generated gather/scatter kernels around
/// them. Other accumulators are left for the linalg patterns. Each CPU
/// convolution call records the scratch it takes (amp.workspace_bytes, for
/// amp-plan-memory), with bf16 operands multiplied as they are where
/// `nativeBf16` says the target CPU does (AVX-512 BF16 or AMX-BF16).
void populateTrainToRuntimePatterns(mlir::RewritePatternSet &patterns,
                                    RuntimeTarget target,
                                    bool convAsGemm = false,
                                    bool nativeBf16 = false);

/// Makes train.runtime_call bufferizable: it becomes a func.call on the
/// addresses of dense input buffers and a new f32 result buffer.
void registerRuntimeCallBufferizationModel(mlir::DialectRegistry &registry);

} // namespace amp

#endif // AMP_CONVERSION_TRAINTORUNTIME_TRAINTORUNTIME_H
