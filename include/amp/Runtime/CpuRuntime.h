//===- CpuRuntime.h - CBLAS GEMM and convolution glue -----------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The functions amp-lower-cpu's code calls for matrix products and
// convolutions. Operands arrive as raw addresses of dense row-major buffers
// with an element-type code; f16/bf16 operands are widened exactly to f32 and
// multiplied with cblas_sgemm, so products are exact and accumulate in f32 —
// the arithmetic of a Tensor Core with CUBLAS_COMPUTE_32F. Results are always
// f32 (the compiled code rounds them once to the op's result type).
// Convolutions run through oneDNN or im2col / col2im around GEMMs, per pass
// and shape (Dnnl.h); bf16 operands go to oneDNN's convolutions and matmuls
// as bf16 on CPUs with AVX-512 BF16 or AMX.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_CPURUNTIME_H
#define AMP_RUNTIME_CPURUNTIME_H

#include "amp/ABI/ElementTypes.h"

#include <cstdint>
#include <utility>
#include <vector>

extern "C" {

/// Process set-up a loader of CPU artifacts calls once: retainFreedMemory.
void amp_cpu_runtime_init(void);

/// Runs fn(context, first, last) over tasks [0, tasks) on the process's
/// thread pool (OpenMP's, which OpenBLAS's OpenMP build and oneDNN share):
/// each thread takes one contiguous range of tasks, in order. With one
/// thread, inside another parallel region, or for a single task, the caller
/// runs fn(context, 0, tasks) itself. amp-lower-parallel-launches' calls.
void amp_cpu_parallel_for(void (*fn)(void *, int64_t, int64_t), void *context,
                          int64_t tasks);

/// The threads compiled steps use from now on (the generated loops, the
/// runtime's copies and BLAS); n < 1 means the cores available to the
/// process (OMP_NUM_THREADS when set).
void amp_cpu_set_num_threads(int64_t n);

/// The threads compiled steps use.
int64_t amp_cpu_get_num_threads(void);

/// The C heap with a count of the bytes it hands out (Memory.cpp): a
/// compiled step's buffers (routeStepAllocations sends its aligned_alloc,
/// malloc and free here) and the runtime's scratch. Same contracts as the
/// C functions; amp_cpu_free takes what the other two return.
void *amp_cpu_malloc(uint64_t size);
void *amp_cpu_aligned_alloc(uint64_t alignment, uint64_t size);
void amp_cpu_free(void *p);

/// Lends the runtime call that follows on this thread `bytes` at `base`
/// (64-byte aligned: a free range of the step's arena that amp-plan-memory
/// placed there) for its scratch, which then comes from the heap only
/// where it does not fit; a null `base` ends the loan. Compiled code calls
/// it around each runtime call.
void amp_cpu_set_workspace(intptr_t base, int64_t bytes);

/// The bytes amp_cpu_malloc / amp_cpu_aligned_alloc hold now and the most
/// they held since the last amp_cpu_memory_reset_peak (or the start). Null
/// pointers are skipped. 0 where the C library cannot tell a block's size.
void amp_cpu_memory_stats(uint64_t *bytesInUse, uint64_t *peakBytes);

/// Starts a new peak: the peak becomes the bytes in use now.
void amp_cpu_memory_reset_peak(void);

/// c[i] = op(a[i]) x op(b[i]) for each of `batch` matrices: op(a) is m x k,
/// op(b) is k x n, c is m x n f32. Element-type codes: amp::RuntimeDType.
void amp_cpu_gemm(intptr_t a, intptr_t b, intptr_t c, int64_t dtypeA,
                  int64_t dtypeB, int64_t batch, int64_t m, int64_t n,
                  int64_t k, int64_t transposeA, int64_t transposeB);

/// amp_cpu_gemm plus a vector of n elements broadcast over the rows, added
/// to the f32 accumulator before anything is rounded (a bias epilogue).
void amp_cpu_gemm_bias(intptr_t a, intptr_t b, intptr_t bias, intptr_t c,
                       int64_t dtypeA, int64_t dtypeB, int64_t dtypeBias,
                       int64_t batch, int64_t m, int64_t n, int64_t k,
                       int64_t transposeA, int64_t transposeB);

/// amp_cpu_gemm and amp_cpu_gemm_bias with a result `c` of element type
/// `dtypeC` (f32, f16 or bf16): the f32 accumulator (plus the bias) rounded
/// once to it, to nearest even, as compiled code rounds an f32 result. Two
/// bf16 operands into a bf16 result on a CPU that multiplies bf16 natively
/// go to oneDNN, which rounds as it writes (no f32 result exists);
/// otherwise the f32 result lives in scratch until it is rounded.
void amp_cpu_gemm_round(intptr_t a, intptr_t b, intptr_t c, int64_t dtypeA,
                        int64_t dtypeB, int64_t dtypeC, int64_t batch,
                        int64_t m, int64_t n, int64_t k, int64_t transposeA,
                        int64_t transposeB);
void amp_cpu_gemm_bias_round(intptr_t a, intptr_t b, intptr_t bias, intptr_t c,
                             int64_t dtypeA, int64_t dtypeB, int64_t dtypeBias,
                             int64_t dtypeC, int64_t batch, int64_t m,
                             int64_t n, int64_t k, int64_t transposeA,
                             int64_t transposeB);

/// The embedding gradient as a scatter-add: table[clamp(ids[p]), :] +=
/// dy[p, :] for each of `positions` rows of `dim` values, into a zeroed f32
/// `vocab` x `dim` table (positions x dim additions, not vocab x dim x
/// positions as a reduction over the table would take). Ids are i32, clamped
/// to [0, vocab) as the forward lookup clamps them.
void amp_cpu_embedding_grad(intptr_t dy, intptr_t ids, intptr_t table,
                            int64_t dtypeDy, int64_t positions, int64_t dim,
                            int64_t vocab);

/// A bias-free head and its mean cross-entropy, fused
/// (train.linear_cross_entropy): the logits x[n, k] w ([k, v], or [v, k]
/// when `transposeW`), summed in f32 and rounded once to the operands' type
/// `dtype`, then the loss in f32 into the rank-0 `loss`, a block of rows at
/// a time (LinearCrossEntropyWorkspace.h). Labels are i32; rows labelled
/// `ignoreIndex` (where `hasIgnore`) count for nothing, any other label
/// outside [0, v) makes the loss NaN, as train.cross_entropy.
/// `smoothingBits` is label smoothing's f64 bits.
void amp_cpu_linear_cross_entropy(intptr_t x, intptr_t w, intptr_t labels,
                                  intptr_t loss, int64_t dtype, int64_t n,
                                  int64_t k, int64_t v, int64_t transposeW,
                                  int64_t hasIgnore, int64_t ignoreIndex,
                                  int64_t smoothingBits);

/// Its gradients from the f32 rank-0 loss gradient `grad`: the logits again
/// block by block, their gradient rounded to `dtype`, then dx[n, k] and dw
/// (w's shape), both f32, the weight's summed over every block in f32.
void amp_cpu_linear_cross_entropy_grad(intptr_t grad, intptr_t x, intptr_t w,
                                       intptr_t labels, intptr_t dx,
                                       intptr_t dw, int64_t dtype, int64_t n,
                                       int64_t k, int64_t v,
                                       int64_t transposeW, int64_t hasIgnore,
                                       int64_t ignoreIndex,
                                       int64_t smoothingBits);

/// The convolution geometry every conv entry point takes, in this order:
/// n, c, h, w (input), f, kh, kw (filter), oh, ow (output), sh, sw
/// (strides), ph, pw (padding, both sides), dh, dw (dilation).
#define AMP_CONV_GEOMETRY_PARAMS                                               \
  int64_t n, int64_t c, int64_t h, int64_t w, int64_t f, int64_t kh,           \
      int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw, int64_t ph,  \
      int64_t pw, int64_t dh, int64_t dw

/// y[n, f, oh, ow] (f32) = conv2d(x[n, c, h, w], filter[f, c, kh, kw]).
void amp_cpu_conv2d(intptr_t x, intptr_t filter, intptr_t y, int64_t dtypeX,
                    int64_t dtypeFilter, AMP_CONV_GEOMETRY_PARAMS);

/// dx[n, c, h, w] (f32): the gradient of conv2d with respect to its input,
/// from dy[n, f, oh, ow] and the filter.
void amp_cpu_conv2d_grad_input(intptr_t dy, intptr_t filter, intptr_t dx,
                               int64_t dtypeDy, int64_t dtypeFilter,
                               AMP_CONV_GEOMETRY_PARAMS);

/// dfilter[f, c, kh, kw] (f32): the gradient of conv2d with respect to its
/// filter, from dy[n, f, oh, ow] and the input x[n, c, h, w].
void amp_cpu_conv2d_grad_filter(intptr_t dy, intptr_t x, intptr_t dfilter,
                                int64_t dtypeDy, int64_t dtypeX,
                                AMP_CONV_GEOMETRY_PARAMS);
}

namespace amp {

/// Makes the C heap keep freed blocks of up to 256 MiB for reuse instead of
/// returning them to the kernel: a compiled step allocates its intermediate
/// buffers with malloc and frees them before returning, and with glibc's
/// defaults every large buffer would be a fresh mmap (zeroed pages, a page
/// fault per 4 KiB) on every step. Process-wide; idempotent.
void retainFreedMemory();

/// The runtime's entry points by symbol name, for a JIT to resolve.
std::vector<std::pair<const char *, void *>> getCpuRuntimeSymbols();

} // namespace amp

#endif // AMP_RUNTIME_CPURUNTIME_H
