//===- EpilogueKernels.cu - The CUDA runtime's own kernels ----------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Where cuBLASLt has no algorithm for an aux epilogue (it depends on the GPU,
// the shapes and the layouts), the runtime runs the GEMM with a plain
// epilogue and one of these element-wise kernels after it, on the same
// stream. The embedding gradient's scatter-add is here too (no library
// computes it). nvcc builds them into a fatbin (SASS for sm_90, PTX for later
// GPUs) that the runtime embeds and loads through the driver API: no cudart.
// One kernel per element type of D (f32, f16, bf16); every value in f32.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/EpilogueMath.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

using namespace amp::cuda;

namespace {
__device__ float toFloat(float v) { return v; }
__device__ float toFloat(__half v) { return __half2float(v); }
__device__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ T fromFloat(float v);
template <> __device__ float fromFloat<float>(float v) { return v; }
template <> __device__ __half fromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <> __device__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ int64_t globalIndex() {
  return int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

/// GELU_AUX_BIAS's output from its input: d = gelu(aux).
template <typename T>
__device__ void geluFromAux(const T *aux, T *d, int64_t count) {
  int64_t i = globalIndex();
  if (i < count)
    d[i] = fromFloat<T>(geluTanh(toFloat(aux[i])));
}

/// DGELU: d = d * gelu'(aux).
template <typename T> __device__ void dgelu(const T *aux, T *d, int64_t count) {
  int64_t i = globalIndex();
  if (i < count)
    d[i] = fromFloat<T>(toFloat(d[i]) * geluTanhGrad(toFloat(aux[i])));
}

/// RELU_AUX_BIAS's mask from its output (positive exactly where the input
/// is): one thread per 32-bit word of the mask.
template <typename T>
__device__ void reluMask(const T *d, uint32_t *mask, int64_t words) {
  int64_t w = globalIndex();
  if (w >= words)
    return;
  uint32_t bits = 0;
  for (int64_t e = w * 32; e < w * 32 + 32; ++e)
    if (toFloat(d[e]) > 0.0f)
      bits |= reluMaskBit(e);
  mask[w] = bits;
}

/// DRELU: d = 0 where the mask is clear.
template <typename T>
__device__ void drelu(const uint32_t *mask, T *d, int64_t count) {
  int64_t i = globalIndex();
  if (i < count && !(mask[reluMaskWord(i)] & reluMaskBit(i)))
    d[i] = fromFloat<T>(0.0f);
}
/// The embedding gradient's scatter-add: table[clamp(ids[p]), j] += dy[p, j]
/// in f32 atomics, one thread per element of dy (positions x dim), ids
/// clamped to [0, vocab) as the forward lookup clamps them. The table is
/// zeroed first.
template <typename T>
__device__ void embeddingGrad(const T *dy, const int32_t *ids, float *table,
                              int64_t positions, int64_t dim, int64_t vocab) {
  int64_t i = globalIndex();
  if (i >= positions * dim)
    return;
  int64_t p = i / dim, j = i % dim;
  int64_t v = ids[p];
  v = v < 0 ? 0 : (v >= vocab ? vocab - 1 : v);
  atomicAdd(table + v * dim + j, toFloat(dy[i]));
}
} // namespace

#define AMP_EPILOGUE_KERNELS(SUFFIX, T)                                        \
  extern "C" __global__ void amp_gelu_from_aux_##SUFFIX(const T *aux, T *d,    \
                                                        int64_t count) {       \
    geluFromAux(aux, d, count);                                                \
  }                                                                            \
  extern "C" __global__ void amp_dgelu_##SUFFIX(const T *aux, T *d,            \
                                                int64_t count) {               \
    dgelu(aux, d, count);                                                      \
  }                                                                            \
  extern "C" __global__ void amp_relu_mask_##SUFFIX(                           \
      const T *d, uint32_t *mask, int64_t words) {                             \
    reluMask(d, mask, words);                                                  \
  }                                                                            \
  extern "C" __global__ void amp_drelu_##SUFFIX(const uint32_t *mask, T *d,    \
                                                int64_t count) {               \
    drelu(mask, d, count);                                                     \
  }                                                                            \
  extern "C" __global__ void amp_embedding_grad_##SUFFIX(                      \
      const T *dy, const int32_t *ids, float *table, int64_t positions,        \
      int64_t dim, int64_t vocab) {                                            \
    embeddingGrad(dy, ids, table, positions, dim, vocab);                      \
  }

AMP_EPILOGUE_KERNELS(f32, float)
AMP_EPILOGUE_KERNELS(f16, __half)
AMP_EPILOGUE_KERNELS(bf16, __nv_bfloat16)
