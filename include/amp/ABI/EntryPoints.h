//===- EntryPoints.h - The runtime entry points a step calls ----*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The names of the runtime functions compiled code calls, in one place: the
// compiler (lib/Conversion, lib/Pipelines) emits calls to them, each runtime
// (lib/Runtime/CPU, lib/Runtime/CUDA) defines them with C linkage and lists
// them for a JIT (getCpuRuntimeSymbols, getCudaRuntimeSymbols). Their
// signatures are the runtime headers' `extern "C"` declarations
// (amp/Runtime/CpuRuntime.h, CudaGemm.h, CudaCollectives.h). The unit tests
// check that every name here is one the runtime defines (test/Unit/ABITest.cpp
// against getCpuRuntimeSymbols; CudaRuntimeTest.cpp against the CUDA
// runtime's functions).
// Header-only and free of MLIR and of the runtime: element-type parameters
// are amp::RuntimeDType codes (ElementTypes.h), collective operations
// amp::CollectiveOp codes (Collectives.h).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_ABI_ENTRYPOINTS_H
#define AMP_ABI_ENTRYPOINTS_H

namespace amp::entry {

// --- The CPU runtime (lib/Runtime/CPU) -----------------------------------

/// d = a x b, f32 result (the accumulator).
inline constexpr char kCpuGemm[] = "amp_cpu_gemm";
/// d = a x b + bias, f32 result.
inline constexpr char kCpuGemmBias[] = "amp_cpu_gemm_bias";
/// kCpuGemm rounded by the runtime to a 16-bit result type.
inline constexpr char kCpuGemmRound[] = "amp_cpu_gemm_round";
/// kCpuGemmBias rounded by the runtime to a 16-bit result type.
inline constexpr char kCpuGemmBiasRound[] = "amp_cpu_gemm_bias_round";
/// The suffix that turns kCpuGemm[Bias] into kCpuGemm[Bias]Round.
inline constexpr char kRoundSuffix[] = "_round";
/// The embedding table's gradient (a scatter-add of rows).
inline constexpr char kCpuEmbeddingGrad[] = "amp_cpu_embedding_grad";
/// Convolution forward and its two gradients (ConvWorkspace.h's geometry).
inline constexpr char kCpuConv2d[] = "amp_cpu_conv2d";
inline constexpr char kCpuConv2dGradInput[] = "amp_cpu_conv2d_grad_input";
inline constexpr char kCpuConv2dGradFilter[] = "amp_cpu_conv2d_grad_filter";
/// Fused attention forward and backward, without and with an additive
/// mask (AttentionWorkspace.h).
inline constexpr char kCpuAttention[] = "amp_cpu_attention";
inline constexpr char kCpuAttentionMask[] = "amp_cpu_attention_mask";
inline constexpr char kCpuAttentionGrad[] = "amp_cpu_attention_grad";
inline constexpr char kCpuAttentionGradMask[] = "amp_cpu_attention_grad_mask";
/// The fused language-model head and cross-entropy, forward and backward
/// (LinearCrossEntropyWorkspace.h).
inline constexpr char kCpuLinearCrossEntropy[] = "amp_cpu_linear_cross_entropy";
inline constexpr char kCpuLinearCrossEntropyGrad[] =
    "amp_cpu_linear_cross_entropy_grad";
/// A data-parallel step's all-reduce (CollectiveOp codes).
inline constexpr char kCpuAllReduce[] = "amp_cpu_all_reduce";
/// The threaded loops' launcher (amp-lower-parallel-launches).
inline constexpr char kCpuParallelFor[] = "amp_cpu_parallel_for";
/// Lends runtime calls their workspace in the step's arena
/// (amp-plan-memory's workspace-function).
inline constexpr char kCpuSetWorkspace[] = "amp_cpu_set_workspace";

/// Every CPU entry point compiled code calls, for the runtime's check.
inline constexpr const char *kCpuEntryPoints[] = {kCpuGemm,
                                                  kCpuGemmBias,
                                                  kCpuGemmRound,
                                                  kCpuGemmBiasRound,
                                                  kCpuEmbeddingGrad,
                                                  kCpuConv2d,
                                                  kCpuConv2dGradInput,
                                                  kCpuConv2dGradFilter,
                                                  kCpuAttention,
                                                  kCpuAttentionMask,
                                                  kCpuAttentionGrad,
                                                  kCpuAttentionGradMask,
                                                  kCpuLinearCrossEntropy,
                                                  kCpuLinearCrossEntropyGrad,
                                                  kCpuAllReduce,
                                                  kCpuParallelFor,
                                                  kCpuSetWorkspace};

// --- The CUDA runtime (lib/Runtime/CUDA) ---------------------------------

/// cuBLASLt matrix products and their epilogues.
inline constexpr char kCudaGemm[] = "amp_cuda_gemm";
inline constexpr char kCudaGemmBias[] = "amp_cuda_gemm_bias";
inline constexpr char kCudaGemmBgrad[] = "amp_cuda_gemm_bgrad";
inline constexpr char kCudaGemmGeluAux[] = "amp_cuda_gemm_gelu_aux";
inline constexpr char kCudaGemmDgelu[] = "amp_cuda_gemm_dgelu";
inline constexpr char kCudaGemmReluAux[] = "amp_cuda_gemm_relu_aux";
inline constexpr char kCudaGemmDrelu[] = "amp_cuda_gemm_drelu";
/// The embedding table's gradient.
inline constexpr char kCudaEmbeddingGrad[] = "amp_cuda_embedding_grad";
/// A data-parallel step's all-reduce on NCCL (CollectiveOp codes).
inline constexpr char kCudaAllReduce[] = "amp_cuda_all_reduce";

/// Every CUDA entry point compiled code calls, for the runtime's check.
inline constexpr const char *kCudaEntryPoints[] = {
    kCudaGemm,        kCudaGemmBias,      kCudaGemmBgrad,
    kCudaGemmGeluAux, kCudaGemmDgelu,     kCudaGemmReluAux,
    kCudaGemmDrelu,   kCudaEmbeddingGrad, kCudaAllReduce};

} // namespace amp::entry

#endif // AMP_ABI_ENTRYPOINTS_H
