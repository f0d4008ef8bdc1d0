//===- Attention.cpp - Flash-style attention on the CPU -------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// train.attention and train.attention_grad as blocked kernels
// (FlashAttention's algorithm, Dao et al. 2022; FA2's backward): the scores
// of one block of queries against one block of keys are formed with
// cblas_sgemm, folded into a running maximum and sum per query (the online
// softmax) and multiplied into the output at once, so no [Sq, Sk] tensor
// exists at any time; the forward pass keeps the f32 log-sum-exp of each
// query's scores, from which the backward pass recomputes the probabilities
// block by block. The probabilities (and the scores' gradient) are rounded
// to the operands' type before they enter a product, as the fused GPU
// kernels do with Tensor Core operands. All sums are f32. Results are f32;
// the compiled code rounds them once to the op's types.
//
// Where the block products run: bf16 operands on a CPU that multiplies bf16
// natively (AMX-BF16, AVX-512 BF16) stay bf16 and go to oneDNN's matmul, as
// the step's other bf16 GEMMs do (Dnnl.h; AMP_CPU_GEMM=openblas keeps them
// on OpenBLAS); otherwise f16/bf16 operands are widened exactly to f32 and
// multiplied by OpenBLAS's sgemm. The two differ only in the order of the
// f32 sums.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Attention.h"
#include "RowMath.h"
#include "Scratch.h"
#include "amp/ABI/AttentionWorkspace.h"
#include "amp/Runtime/Blas.h"
#include "amp/Runtime/CpuFeatures.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <limits>
#include <optional>
#include <type_traits>

using namespace amp;
using namespace amp::runtime;

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// c (m x n, leading dimension ldc) = op(a) op(b) + beta c, on the calling
/// thread (inside the kernels' parallel region OpenBLAS's OpenMP build runs
/// on the caller alone).
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  getBlas().sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                  transposeB ? CblasTrans : CblasNoTrans, blasint(m),
                  blasint(n), blasint(k), 1.0f, a, blasint(lda), b,
                  blasint(ldb), beta, c, blasint(ldc));
}

/// A bf16 value's bits.
using BFloat = uint16_t;

/// The f32 value of bf16 bits (exact: bf16 is f32's upper half).
inline float widen(BFloat b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// The same product of bf16 blocks, each dense (leading dimension its row
/// length), through oneDNN's bf16 matmul with f32 accumulation; where
/// oneDNN has no kernel for the shape, on exact f32 copies.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const BFloat *a, int64_t lda, const BFloat *b, int64_t ldb,
          float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  bool dense = lda == (transposeA ? m : k) && ldb == (transposeB ? k : n) &&
               ldc == n && (beta == 0.0f || beta == 1.0f);
  if (dense && runDnnlMatmul(a, b, c, /*bf16=*/true, beta != 0.0f, 1, m, n, k,
                             transposeA, transposeB))
    return;
  int64_t rowsA = transposeA ? k : m, rowsB = transposeB ? n : k;
  int64_t bf16 = int64_t(RuntimeDType::BF16);
  FloatOperand wa(intptr_t(a), bf16, rowsA * lda),
      wb(intptr_t(b), bf16, rowsB * ldb);
  gemm(transposeA, transposeB, m, n, k, wa.get(), lda, wb.get(), ldb, beta, c,
       ldc);
}

/// row[c] = row[c] * scale + mask[c * stride] (stride 0: one value).
AMP_VECTOR_CLONES void scaleAndMask(float *row, int64_t cols, float scale,
                                    const float *mask, int64_t stride) {
  if (!mask) {
    for (int64_t c = 0; c < cols; ++c)
      row[c] *= scale;
  } else if (stride == 1) {
    for (int64_t c = 0; c < cols; ++c)
      row[c] = row[c] * scale + mask[c];
  } else {
    for (int64_t c = 0; c < cols; ++c)
      row[c] = row[c] * scale + mask[c * stride];
  }
}

/// x[i] *= factor.
AMP_VECTOR_CLONES void scaleRow(float *x, int64_t count, float factor) {
  for (int64_t i = 0; i < count; ++i)
    x[i] *= factor;
}

/// dp[c] = p[c] * (dp[c] - delta): the softmax gradient of one row.
AMP_VECTOR_CLONES void softmaxGradRow(float *dp, const float *p, int64_t cols,
                                      float delta) {
  for (int64_t c = 0; c < cols; ++c)
    dp[c] = p[c] * (dp[c] - delta);
}

/// sum(a[i] * b[i]).
AMP_VECTOR_CLONES float dot(const float *a, const float *b, int64_t count) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < count; ++i)
    sum += a[i] * b[i];
  return sum;
}

/// sum(a[i] * b[i]) of bf16 values, in f32.
AMP_VECTOR_CLONES float dot(const BFloat *a, const BFloat *b, int64_t count) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < count; ++i)
    sum += widen(a[i]) * widen(b[i]);
  return sum;
}

/// Rounds `count` floats to f16 and back in place, with F16C's conversion
/// instructions (8 at a time) where the CPU has them.
__attribute__((target("avx,f16c"))) void roundToHalfF16c(float *x,
                                                        int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(
                                _mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < count; ++i)
    x[i] = halfToFloat(floatToHalf(x[i]));
}

void roundToHalf(float *x, int64_t count) {
  static const bool f16c = getCpuFeatures().avx && getCpuFeatures().f16c;
  if (f16c)
    return roundToHalfF16c(x, count);
  for (int64_t i = 0; i < count; ++i)
    x[i] = halfToFloat(floatToHalf(x[i]));
}

/// Rounds `count` floats to the operands' type in place (nothing for f32):
/// what a product with 16-bit operands sees.
void roundToType(float *x, int64_t count, RuntimeDType dtype) {
  if (dtype == RuntimeDType::F16)
    roundToHalf(x, count);
  else if (dtype == RuntimeDType::BF16)
    roundToBFloat(x, count);
}

/// `count` f32 values (probabilities, or the scores' gradient) as a product's
/// operand of the kernel's element type: rounded in place to the operands'
/// type for f32 operands; into `out`, as bf16, for bf16 ones.
const float *asOperand(float *x, int64_t count, RuntimeDType dtype, float *) {
  roundToType(x, count, dtype);
  return x;
}
const BFloat *asOperand(float *x, int64_t count, RuntimeDType, BFloat *out) {
  toBFloat(x, out, count);
  return out;
}

/// Scratch for `count` block operands of type T that the kernel rounds:
/// bf16 ones; none for f32 (rounded in place).
template <typename T> Scratch operandScratch(int64_t count) {
  return scratch(std::is_same_v<T, BFloat> ? (count + 1) / 2 : 0);
}
template <typename T> T *operandBuffer(const Scratch &s) {
  return reinterpret_cast<T *>(s.get());
}

/// The block sizes of the kernels on operands of type T
/// (AttentionWorkspace.h).
template <typename T> struct Blocks {
  static constexpr bool bf16 = std::is_same_v<T, BFloat>;
  static constexpr int64_t queries =
      bf16 ? kAttentionQueryBlockBf16 : kAttentionQueryBlockF32;
  static constexpr int64_t keys =
      bf16 ? kAttentionKeyBlockBf16 : kAttentionKeyBlockF32;
};

/// The scores of query rows [i0, i0 + rows) against key columns
/// [j0, j0 + cols) of one batch entry, scaled, masked and causally cut, into
/// `s` (rows x cols).
struct ScoreBlock {
  const AttentionShape &shape;
  const float *mask; // this batch entry's mask, or null
  float scale;

  template <typename T>
  void compute(const T *q, const T *k, int64_t i0, int64_t rows, int64_t j0,
               int64_t cols, float *s) const {
    int64_t d = shape.headDim;
    gemm(false, true, rows, cols, d, q + i0 * d, d, k + j0 * d, d, 0.0f, s,
         cols);
    for (int64_t r = 0; r < rows; ++r) {
      float *row = s + r * cols;
      int64_t i = i0 + r;
      scaleAndMask(row, cols, scale,
                   mask ? mask + i * shape.maskRowStride +
                              j0 * shape.maskColStride
                        : nullptr,
                   shape.maskColStride);
      if (shape.causal)
        for (int64_t c = std::max<int64_t>(0, i + 1 - j0); c < cols; ++c)
          row[c] = kNegInf;
    }
  }

  /// The last key column query rows up to `lastRow` can see (causal), plus
  /// one: key blocks from there on are skipped.
  int64_t keyEnd(int64_t lastRow) const {
    return shape.causal ? std::min(shape.keyLen, lastRow + 1) : shape.keyLen;
  }
};

/// Where batch entry `n`'s mask starts: `n` split into the four batch
/// dimensions, each times the mask's stride (0 where it broadcasts).
const float *maskOf(const AttentionShape &shape, const float *mask,
                    int64_t n) {
  if (!mask)
    return nullptr;
  int64_t offset = 0;
  for (int dim = 3; dim >= 0; --dim) {
    offset += (n % shape.batch[dim]) * shape.maskBatchStride[dim];
    n /= shape.batch[dim];
  }
  return mask + offset;
}

} // namespace

int64_t AttentionShape::batchSize() const {
  return batch[0] * batch[1] * batch[2] * batch[3];
}

namespace {

/// The forward kernel on operands of type T (f32, or bf16 bits multiplied
/// natively); `dtype` is the operands' type, to which probabilities are
/// rounded before the second product.
template <typename T>
void forwardKernel(const AttentionShape &shape, RuntimeDType dtype, const T *q,
                   const T *k, const T *v, const float *mask, float *out,
                   float *lse) {
  int64_t sq = shape.queryLen, sk = shape.keyLen, d = shape.headDim,
          dv = shape.valueDim;
  constexpr int64_t kQueryBlock = Blocks<T>::queries,
                    kKeyBlock = Blocks<T>::keys;
  int64_t queryBlocks = (sq + kQueryBlock - 1) / kQueryBlock;
  int64_t tasks = shape.batchSize() * queryBlocks;
  syncBlasThreads();
#pragma omp parallel
  {
    // Each thread's block products run on it alone (oneDNN's plans for one
    // thread; OpenBLAS runs on the caller inside a parallel region anyway).
    omp_set_num_threads(1);
    Scratch s = scratch(kQueryBlock * kKeyBlock);
    Scratch sBits = operandScratch<T>(kQueryBlock * kKeyBlock);
    Scratch rowMax = scratch(kQueryBlock), rowSum = scratch(kQueryBlock);
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t n = task / queryBlocks;
      int64_t i0 = (task % queryBlocks) * kQueryBlock;
      int64_t rows = std::min(kQueryBlock, sq - i0);
      ScoreBlock block{shape, maskOf(shape, mask, n), shape.scale};
      const T *qn = q + n * sq * d, *kn = k + n * sk * d, *vn = v + n * sk * dv;
      float *o = out + (n * sq + i0) * dv;
      std::fill(o, o + rows * dv, 0.0f);
      std::fill(rowMax.get(), rowMax.get() + rows, kNegInf);
      std::fill(rowSum.get(), rowSum.get() + rows, 0.0f);
      int64_t keyEnd = block.keyEnd(i0 + rows - 1);
      for (int64_t j0 = 0; j0 < keyEnd; j0 += kKeyBlock) {
        int64_t cols = std::min(kKeyBlock, keyEnd - j0);
        float *sb = s.get();
        block.compute(qn, kn, i0, rows, j0, cols, sb);
        // The online softmax: rescale what was summed so far to the new
        // maximum, then add this block's exponentials.
        for (int64_t r = 0; r < rows; ++r) {
          float *row = sb + r * cols;
          float m = rowMaximum(row, cols, rowMax[r]);
          if (m == kNegInf) { // every key so far masked
            std::fill(row, row + cols, 0.0f);
            continue;
          }
          float correction = std::exp(rowMax[r] - m); // 0 from -inf
          float sum = expAndSum(row, cols, m);
          rowSum[r] = rowSum[r] * correction + sum;
          rowMax[r] = m;
          if (correction != 1.0f)
            scaleRow(o + r * dv, dv, correction);
        }
        gemm(false, false, rows, dv, cols,
             asOperand(sb, rows * cols, dtype, operandBuffer<T>(sBits)), cols,
             vn + j0 * dv, dv, 1.0f, o, dv);
      }
      // A fully masked query gets zeros and a log-sum-exp of -inf.
      for (int64_t r = 0; r < rows; ++r) {
        float l = rowSum[r];
        scaleRow(o + r * dv, dv, l > 0.0f ? 1.0f / l : 0.0f);
        lse[n * sq + i0 + r] = l > 0.0f ? rowMax[r] + std::log(l) : kNegInf;
      }
    }
  }
}

/// The backward kernel on operands of type T: dq, dk, dv (f32) from dout,
/// the operands, the forward output and its log-sum-exp.
template <typename T>
void backwardKernel(const AttentionShape &shape, RuntimeDType dtype,
                    const T *dout, const T *q, const T *k, const T *v,
                    const T *out, const float *lse, const float *mask,
                    float *dq, float *dk, float *dv) {
  int64_t sq = shape.queryLen, sk = shape.keyLen, d = shape.headDim,
          dvDim = shape.valueDim;
  constexpr int64_t kQueryBlock = Blocks<T>::queries,
                    kKeyBlock = Blocks<T>::keys;
  int64_t batch = shape.batchSize();
  syncBlasThreads();
  // One task per batch entry: the key blocks' dK and dV are complete after
  // one sweep over the queries, and dQ sums over the key blocks without
  // another thread writing it.
#pragma omp parallel
  {
    omp_set_num_threads(1);
    Scratch p = scratch(kQueryBlock * kKeyBlock);
    Scratch dp = scratch(kQueryBlock * kKeyBlock);
    Scratch pBits = operandScratch<T>(kQueryBlock * kKeyBlock);
    Scratch dpBits = operandScratch<T>(kQueryBlock * kKeyBlock);
    Scratch delta = scratch(sq);
#pragma omp for schedule(dynamic)
    for (int64_t n = 0; n < batch; ++n) {
      ScoreBlock block{shape, maskOf(shape, mask, n), shape.scale};
      const T *qn = q + n * sq * d, *kn = k + n * sk * d,
              *vn = v + n * sk * dvDim, *don = dout + n * sq * dvDim,
              *on = out + n * sq * dvDim;
      const float *ln = lse + n * sq;
      float *dqn = dq + n * sq * d, *dkn = dk + n * sk * d,
            *dvn = dv + n * sk * dvDim;
      std::fill(dqn, dqn + sq * d, 0.0f);
      std::fill(dkn, dkn + sk * d, 0.0f);
      std::fill(dvn, dvn + sk * dvDim, 0.0f);
      // delta_i = sum(dO_i * O_i): the softmax gradient's row term.
      for (int64_t i = 0; i < sq; ++i)
        delta[i] = dot(don + i * dvDim, on + i * dvDim, dvDim);
      for (int64_t j0 = 0; j0 < sk; j0 += kKeyBlock) {
        int64_t cols = std::min(kKeyBlock, sk - j0);
        // Causal: queries before j0 see none of this block.
        int64_t firstQuery = shape.causal ? j0 : 0;
        for (int64_t i0 = firstQuery - firstQuery % kQueryBlock; i0 < sq;
             i0 += kQueryBlock) {
          int64_t rows = std::min(kQueryBlock, sq - i0);
          float *pb = p.get(), *dpb = dp.get();
          block.compute(qn, kn, i0, rows, j0, cols, pb);
          for (int64_t r = 0; r < rows; ++r) {
            float l = ln[i0 + r];
            float *row = pb + r * cols;
            if (l == kNegInf) {
              std::fill(row, row + cols, 0.0f);
              continue;
            }
            expShifted(row, cols, l);
          }
          // dP = dO_i V_j^T, then dS = P (dP - delta), with P in f32.
          gemm(false, true, rows, cols, dvDim, don + i0 * dvDim, dvDim,
               vn + j0 * dvDim, dvDim, 0.0f, dpb, cols);
          for (int64_t r = 0; r < rows; ++r)
            softmaxGradRow(dpb + r * cols, pb + r * cols, cols,
                           delta[i0 + r]);
          // dV_j += P^T dO_i with P as the forward product saw it.
          const T *pOperand =
              asOperand(pb, rows * cols, dtype, operandBuffer<T>(pBits));
          gemm(true, false, cols, dvDim, rows, pOperand, cols, don + i0 * dvDim,
               dvDim, 1.0f, dvn + j0 * dvDim, dvDim);
          const T *dsOperand =
              asOperand(dpb, rows * cols, dtype, operandBuffer<T>(dpBits));
          // dQ_i += dS K_j, dK_j += dS^T Q_i (times the scale below).
          gemm(false, false, rows, d, cols, dsOperand, cols, kn + j0 * d, d,
               1.0f, dqn + i0 * d, d);
          gemm(true, false, cols, d, rows, dsOperand, cols, qn + i0 * d, d,
               1.0f, dkn + j0 * d, d);
        }
      }
      scaleRow(dqn, sq * d, shape.scale);
      scaleRow(dkn, sk * d, shape.scale);
    }
  }
}

} // namespace

void amp::runtime::attentionForward(const AttentionShape &shape,
                                    RuntimeDType dtype, const float *q,
                                    const float *k, const float *v,
                                    const float *mask, float *out, float *lse) {
  forwardKernel(shape, dtype, q, k, v, mask, out, lse);
}

void amp::runtime::attentionBackward(const AttentionShape &shape,
                                     RuntimeDType dtype, const float *dout,
                                     const float *q, const float *k,
                                     const float *v, const float *out,
                                     const float *lse, const float *mask,
                                     float *dq, float *dk, float *dv) {
  backwardKernel(shape, dtype, dout, q, k, v, out, lse, mask, dq, dk, dv);
}

//===----------------------------------------------------------------------===//
// Entry points of compiled code
//===----------------------------------------------------------------------===//

namespace {

AttentionShape makeShape(const int64_t *batch, int64_t sq, int64_t sk,
                         int64_t d, int64_t dv, int64_t causal,
                         int64_t scaleBits) {
  AttentionShape shape;
  std::copy(batch, batch + 4, shape.batch);
  shape.queryLen = sq;
  shape.keyLen = sk;
  shape.headDim = d;
  shape.valueDim = dv;
  shape.causal = causal != 0;
  double scale;
  std::memcpy(&scale, &scaleBits, sizeof(scale));
  shape.scale = float(scale);
  return shape;
}

void setMask(AttentionShape &shape, const int64_t *strides) {
  std::copy(strides, strides + 4, shape.maskBatchStride);
  shape.maskRowStride = strides[4];
  shape.maskColStride = strides[5];
}

/// The mask's element count: one past its last element.
int64_t maskExtent(const AttentionShape &shape) {
  int64_t last = (shape.queryLen - 1) * shape.maskRowStride +
                 (shape.keyLen - 1) * shape.maskColStride;
  for (int dim = 0; dim < 4; ++dim)
    last += (shape.batch[dim] - 1) * shape.maskBatchStride[dim];
  return last + 1;
}

void forward(intptr_t q, intptr_t k, intptr_t v, intptr_t mask,
             intptr_t out, intptr_t lse, int64_t dtype,
             const AttentionShape &shape, int64_t maskDtype) {
  int64_t batch = shape.batchSize();
  std::optional<FloatOperand> mf;
  if (mask)
    mf.emplace(mask, maskDtype, maskExtent(shape));
  if (RuntimeDType(dtype) == RuntimeDType::BF16 && bf16GemmsOnOneDnn()) {
    auto bits = [](intptr_t p) { return reinterpret_cast<const BFloat *>(p); };
    forwardKernel(shape, RuntimeDType::BF16, bits(q), bits(k), bits(v),
                  mf ? mf->get() : nullptr, reinterpret_cast<float *>(out),
                  reinterpret_cast<float *>(lse));
    return;
  }
  FloatOperand qf(q, dtype, batch * shape.queryLen * shape.headDim);
  FloatOperand kf(k, dtype, batch * shape.keyLen * shape.headDim);
  FloatOperand vf(v, dtype, batch * shape.keyLen * shape.valueDim);
  attentionForward(shape, RuntimeDType(dtype), qf.get(), kf.get(), vf.get(),
                   mf ? mf->get() : nullptr, reinterpret_cast<float *>(out),
                   reinterpret_cast<float *>(lse));
}

void backward(intptr_t dout, intptr_t q, intptr_t k, intptr_t v, intptr_t out,
              intptr_t lse, intptr_t mask, intptr_t dq, intptr_t dk,
              intptr_t dv, int64_t dtype, const AttentionShape &shape,
              int64_t maskDtype) {
  int64_t batch = shape.batchSize();
  int64_t outputs = batch * shape.queryLen * shape.valueDim;
  std::optional<FloatOperand> mf;
  if (mask)
    mf.emplace(mask, maskDtype, maskExtent(shape));
  if (RuntimeDType(dtype) == RuntimeDType::BF16 && bf16GemmsOnOneDnn()) {
    auto bits = [](intptr_t p) { return reinterpret_cast<const BFloat *>(p); };
    auto f32 = [](intptr_t p) { return reinterpret_cast<float *>(p); };
    backwardKernel(shape, RuntimeDType::BF16, bits(dout), bits(q), bits(k),
                   bits(v), bits(out), reinterpret_cast<const float *>(lse),
                   mf ? mf->get() : nullptr, f32(dq), f32(dk), f32(dv));
    return;
  }
  FloatOperand dof(dout, dtype, outputs);
  FloatOperand qf(q, dtype, batch * shape.queryLen * shape.headDim);
  FloatOperand kf(k, dtype, batch * shape.keyLen * shape.headDim);
  FloatOperand vf(v, dtype, batch * shape.keyLen * shape.valueDim);
  FloatOperand of(out, dtype, outputs);
  attentionBackward(shape, RuntimeDType(dtype), dof.get(), qf.get(), kf.get(),
                    vf.get(), of.get(), reinterpret_cast<const float *>(lse),
                    mf ? mf->get() : nullptr, reinterpret_cast<float *>(dq),
                    reinterpret_cast<float *>(dk),
                    reinterpret_cast<float *>(dv));
}

} // namespace

extern "C" void amp_cpu_attention(intptr_t q, intptr_t k, intptr_t v,
                                  intptr_t out, intptr_t lse, int64_t dtype,
                                  int64_t b0, int64_t b1, int64_t b2,
                                  int64_t b3, int64_t sq, int64_t sk,
                                  int64_t d, int64_t dv, int64_t causal,
                                  int64_t scaleBits) {
  const int64_t batch[4] = {b0, b1, b2, b3};
  forward(q, k, v, 0, out, lse, dtype,
          makeShape(batch, sq, sk, d, dv, causal, scaleBits), 0);
}

extern "C" void amp_cpu_attention_mask(
    intptr_t q, intptr_t k, intptr_t v, intptr_t mask, intptr_t out,
    intptr_t lse, int64_t dtype, int64_t b0, int64_t b1, int64_t b2,
    int64_t b3, int64_t sq, int64_t sk, int64_t d, int64_t dv, int64_t causal,
    int64_t scaleBits, int64_t maskDtype, int64_t ms0, int64_t ms1,
    int64_t ms2, int64_t ms3, int64_t msRow, int64_t msCol) {
  const int64_t batch[4] = {b0, b1, b2, b3};
  const int64_t strides[6] = {ms0, ms1, ms2, ms3, msRow, msCol};
  AttentionShape shape = makeShape(batch, sq, sk, d, dv, causal, scaleBits);
  setMask(shape, strides);
  forward(q, k, v, mask, out, lse, dtype, shape, maskDtype);
}

extern "C" void amp_cpu_attention_grad(
    intptr_t dout, intptr_t q, intptr_t k, intptr_t v, intptr_t out,
    intptr_t lse, intptr_t dq, intptr_t dk, intptr_t dv, int64_t dtype,
    int64_t b0, int64_t b1, int64_t b2, int64_t b3, int64_t sq, int64_t sk,
    int64_t d, int64_t dvDim, int64_t causal, int64_t scaleBits) {
  const int64_t batch[4] = {b0, b1, b2, b3};
  backward(dout, q, k, v, out, lse, 0, dq, dk, dv, dtype,
           makeShape(batch, sq, sk, d, dvDim, causal, scaleBits), 0);
}

extern "C" void amp_cpu_attention_grad_mask(
    intptr_t dout, intptr_t q, intptr_t k, intptr_t v, intptr_t out,
    intptr_t lse, intptr_t mask, intptr_t dq, intptr_t dk, intptr_t dv,
    int64_t dtype, int64_t b0, int64_t b1, int64_t b2, int64_t b3, int64_t sq,
    int64_t sk, int64_t d, int64_t dvDim, int64_t causal, int64_t scaleBits,
    int64_t maskDtype, int64_t ms0, int64_t ms1, int64_t ms2, int64_t ms3,
    int64_t msRow, int64_t msCol) {
  const int64_t batch[4] = {b0, b1, b2, b3};
  const int64_t strides[6] = {ms0, ms1, ms2, ms3, msRow, msCol};
  AttentionShape shape = makeShape(batch, sq, sk, d, dvDim, causal, scaleBits);
  setMask(shape, strides);
  backward(dout, q, k, v, out, lse, mask, dq, dk, dv, dtype, shape,
           maskDtype);
}
