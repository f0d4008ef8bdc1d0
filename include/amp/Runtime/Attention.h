//===- Attention.h - Flash-style attention kernels on the CPU ---*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU runtime's train.attention and train.attention_grad
// (lib/Runtime/CPU/Attention.cpp): blocked kernels with an online softmax
// that never hold a [Sq, Sk] tensor. The entry points compiled code calls
// take raw addresses of dense row-major buffers, as every runtime call does:
//
//   query [B, Sq, D], key [B, Sk, D], value [B, Sk, Dv] of element type
//   `dtype` (amp::RuntimeDType), B = b0 * b1 * b2 * b3 (the op's leading
//   dimensions, padded in front with 1s); out [B, Sq, Dv] and lse [B, Sq]
//   f32. `scaleBits` is the scale's f64 bit pattern. The masked forms add
//   an additive mask of type `maskDtype`, element (batch index, i, j) at
//   sum(index_d * ms_d) + i * msRow + j * msCol (a stride of 0 broadcasts).
//   The gradient takes dout, query, key, value, out (the op's rounded
//   output) and lse, and fills f32 dquery, dkey, dvalue.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_RUNTIME_ATTENTION_H
#define AMP_RUNTIME_ATTENTION_H

#include "amp/Runtime/CpuRuntime.h"

#include <cstdint>

extern "C" {

void amp_cpu_attention(intptr_t q, intptr_t k, intptr_t v, intptr_t out,
                       intptr_t lse, int64_t dtype, int64_t b0, int64_t b1,
                       int64_t b2, int64_t b3, int64_t sq, int64_t sk,
                       int64_t d, int64_t dv, int64_t causal,
                       int64_t scaleBits);

void amp_cpu_attention_mask(intptr_t q, intptr_t k, intptr_t v, intptr_t mask,
                            intptr_t out, intptr_t lse, int64_t dtype,
                            int64_t b0, int64_t b1, int64_t b2, int64_t b3,
                            int64_t sq, int64_t sk, int64_t d, int64_t dv,
                            int64_t causal, int64_t scaleBits,
                            int64_t maskDtype, int64_t ms0, int64_t ms1,
                            int64_t ms2, int64_t ms3, int64_t msRow,
                            int64_t msCol);

void amp_cpu_attention_grad(intptr_t dout, intptr_t q, intptr_t k, intptr_t v,
                            intptr_t out, intptr_t lse, intptr_t dq,
                            intptr_t dk, intptr_t dv, int64_t dtype,
                            int64_t b0, int64_t b1, int64_t b2, int64_t b3,
                            int64_t sq, int64_t sk, int64_t d, int64_t dvDim,
                            int64_t causal, int64_t scaleBits);

void amp_cpu_attention_grad_mask(
    intptr_t dout, intptr_t q, intptr_t k, intptr_t v, intptr_t out,
    intptr_t lse, intptr_t mask, intptr_t dq, intptr_t dk, intptr_t dv,
    int64_t dtype, int64_t b0, int64_t b1, int64_t b2, int64_t b3, int64_t sq,
    int64_t sk, int64_t d, int64_t dvDim, int64_t causal, int64_t scaleBits,
    int64_t maskDtype, int64_t ms0, int64_t ms1, int64_t ms2, int64_t ms3,
    int64_t msRow, int64_t msCol);
}

namespace amp::runtime {

/// The geometry of one attention call.
struct AttentionShape {
  /// The leading dimensions, padded in front with 1s.
  int64_t batch[4] = {1, 1, 1, 1};
  int64_t queryLen = 0, keyLen = 0, headDim = 0, valueDim = 0;
  bool causal = false;
  float scale = 1.0f;
  /// The additive mask's strides (0: broadcast), when there is one.
  int64_t maskBatchStride[4] = {0, 0, 0, 0};
  int64_t maskRowStride = 0, maskColStride = 0;

  int64_t batchSize() const;
};

/// The forward kernel on f32 operands (f16/bf16 values widened exactly);
/// `dtype` is the operands' type, to which probabilities are rounded before
/// the second product. `mask` may be null.
void attentionForward(const AttentionShape &shape, RuntimeDType dtype,
                      const float *q, const float *k, const float *v,
                      const float *mask, float *out, float *lse);

/// The backward kernel: dq, dk, dv (f32) from dout, the operands, the
/// forward output and its log-sum-exp.
void attentionBackward(const AttentionShape &shape, RuntimeDType dtype,
                       const float *dout, const float *q, const float *k,
                       const float *v, const float *out, const float *lse,
                       const float *mask, float *dq, float *dk, float *dv);

} // namespace amp::runtime

#endif // AMP_RUNTIME_ATTENTION_H
