//===- LinearCrossEntropy.cpp - A head and its loss, by blocks of rows ---===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// train.linear_cross_entropy(_grad) on the CPU. The [n, v] logits of a
// language model's head are the largest tensor of its step at a real
// vocabulary (GPT-2's 50257 at 4096 rows: 823 MB in f32); these kernels
// compute them a block of rows at a time into scratch
// (LinearCrossEntropyWorkspace.h), each block rounded to the operands' type
// as train.matmul rounds its result, and reduce each row to its loss, or,
// backward, to its gradient, which goes into the block's two products
// (dx for the block's rows, dw summed over the blocks in f32) before the
// next block is computed.
//
//===----------------------------------------------------------------------===//

#include "RowMath.h"
#include "Scratch.h"
#include "amp/ABI/LinearCrossEntropyWorkspace.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>

using namespace amp;
using namespace amp::runtime;

namespace {

struct Head {
  RuntimeDType dtype;
  int64_t n, k, v;
  bool transposed;
  bool hasIgnore;
  int64_t ignore;
  double smoothing;

  size_t elementBytes() const { return dtype == RuntimeDType::F32 ? 4 : 2; }
  bool ignored(int32_t label) const { return hasIgnore && label == ignore; }
  bool valid(int32_t label) const { return label >= 0 && label < v; }
};

Head makeHead(int64_t dtype, int64_t n, int64_t k, int64_t v,
              int64_t transposeW, int64_t hasIgnore, int64_t ignoreIndex,
              int64_t smoothingBits) {
  double smoothing;
  std::memcpy(&smoothing, &smoothingBits, sizeof smoothing);
  return {RuntimeDType(dtype), n, k, v, transposeW != 0, hasIgnore != 0,
          ignoreIndex, smoothing};
}

/// Rounds `count` f32 values to `dtype` in place (to nearest even), as the
/// unfused product's rounded result reads back.
void roundInPlace(float *x, int64_t count, RuntimeDType dtype) {
  if (dtype == RuntimeDType::BF16)
    roundToBFloat(x, count);
  else if (dtype == RuntimeDType::F16)
    for (int64_t i = 0; i < count; ++i)
      x[i] = halfToFloat(floatToHalf(x[i]));
}

/// The operands as the block products read them: bf16 as they are where
/// the CPU multiplies them natively, otherwise f32 (16-bit ones widened
/// once for every block).
struct Operands {
  Operands(const Head &h, intptr_t x, intptr_t w)
      : native(h.dtype == RuntimeDType::BF16 && bf16GemmsOnOneDnn()) {
    if (native || h.dtype == RuntimeDType::F32) {
      this->x = reinterpret_cast<const char *>(x);
      this->w = reinterpret_cast<const void *>(w);
      dtype = int64_t(h.dtype);
      xRowBytes = h.k * h.elementBytes();
      return;
    }
    wideX = std::make_unique<FloatOperand>(x, int64_t(h.dtype), h.n * h.k);
    wideW = std::make_unique<FloatOperand>(w, int64_t(h.dtype), h.k * h.v);
    this->x = reinterpret_cast<const char *>(wideX->get());
    this->w = wideW->get();
    dtype = int64_t(RuntimeDType::F32);
    xRowBytes = h.k * 4;
  }
  const void *rows(int64_t first) const { return x + first * xRowBytes; }

  bool native;
  std::unique_ptr<FloatOperand> wideX, wideW;
  const char *x;
  const void *w;
  int64_t dtype;
  int64_t xRowBytes;
};

/// The logits of rows [first, first + rows) into `block` (f32, rounded to
/// the operands' type).
void blockLogits(const Head &h, const Operands &ops, int64_t first,
                 int64_t rows, float *block) {
  gemmF32(ops.rows(first), ops.dtype, ops.w, ops.dtype, block,
          /*accumulate=*/false, rows, h.v, h.k, false, h.transposed);
  if (h.dtype != RuntimeDType::F32) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      roundInPlace(block + r * h.v, h.v, h.dtype);
  }
}

/// The row's log-sum-exp (the row is overwritten by exp(row - max)).
double logSumExp(float *row, int64_t v) {
  float m = rowMaximum(row, v, -std::numeric_limits<float>::infinity());
  if (std::isinf(m))
    return m; // every logit -inf (or one +inf): the loss is inf or NaN
  return double(m) + std::log(double(expAndSum(row, v, m)));
}

int64_t countedRows(const Head &h, const int32_t *labels) {
  int64_t count = 0;
  for (int64_t r = 0; r < h.n; ++r)
    count += h.ignored(labels[r]) ? 0 : 1;
  return count;
}

} // namespace

extern "C" void amp_cpu_linear_cross_entropy(
    intptr_t x, intptr_t w, intptr_t labelsAddress, intptr_t loss,
    int64_t dtype, int64_t n, int64_t k, int64_t v, int64_t transposeW,
    int64_t hasIgnore, int64_t ignoreIndex, int64_t smoothingBits) {
  Head h = makeHead(dtype, n, k, v, transposeW, hasIgnore, ignoreIndex,
                    smoothingBits);
  const auto *labels = reinterpret_cast<const int32_t *>(labelsAddress);
  Operands ops(h, x, w);
  int64_t blockRows = linearCrossEntropyBlockRows(n, v);
  Scratch block = scratch(blockRows * v);
  double total = 0.0;
  for (int64_t first = 0; first < n; first += blockRows) {
    int64_t rows = std::min(blockRows, n - first);
    blockLogits(h, ops, first, rows, block.get());
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int64_t r = 0; r < rows; ++r) {
      int32_t label = labels[first + r];
      if (h.ignored(label))
        continue;
      if (!h.valid(label)) {
        total += std::numeric_limits<double>::quiet_NaN();
        continue;
      }
      float *row = block.get() + r * v;
      double target = row[label], mean = 0.0;
      if (h.smoothing != 0.0) {
        for (int64_t j = 0; j < v; ++j)
          mean += row[j];
        mean /= double(v);
      }
      double lse = logSumExp(row, v);
      double loss = lse - target;
      if (h.smoothing != 0.0)
        loss = (1.0 - h.smoothing) * loss + h.smoothing * (lse - mean);
      total += loss;
    }
  }
  // 0 / 0 = NaN when every row is ignored, as PyTorch's mean.
  *reinterpret_cast<float *>(loss) =
      float(total / double(countedRows(h, labels)));
}

extern "C" void amp_cpu_linear_cross_entropy_grad(
    intptr_t grad, intptr_t x, intptr_t w, intptr_t labelsAddress,
    intptr_t dxAddress, intptr_t dwAddress, int64_t dtype, int64_t n,
    int64_t k, int64_t v, int64_t transposeW, int64_t hasIgnore,
    int64_t ignoreIndex, int64_t smoothingBits) {
  Head h = makeHead(dtype, n, k, v, transposeW, hasIgnore, ignoreIndex,
                    smoothingBits);
  const auto *labels = reinterpret_cast<const int32_t *>(labelsAddress);
  auto *dx = reinterpret_cast<float *>(dxAddress);
  auto *dw = reinterpret_cast<float *>(dwAddress);
  Operands ops(h, x, w);
  int64_t blockRows = linearCrossEntropyBlockRows(n, v);
  Scratch block = scratch(blockRows * v);
  // The logits' gradient as the products read it: bf16 for oneDNN.
  std::optional<CountedBuffer> block16;
  if (ops.native)
    block16.emplace(uint64_t(blockRows * v) * 2);
  float seed = *reinterpret_cast<const float *>(grad);
  float scale = float(double(seed) / double(countedRows(h, labels)));
  float smooth = float(h.smoothing / double(v));
  float keep = float(1.0 - h.smoothing);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (n == 0)
    std::fill_n(dw, k * v, 0.0f);
  for (int64_t first = 0; first < n; first += blockRows) {
    int64_t rows = std::min(blockRows, n - first);
    float *logits = block.get();
    blockLogits(h, ops, first, rows, logits);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      int32_t label = labels[first + r];
      float *row = logits + r * v;
      if (h.ignored(label)) {
        std::fill_n(row, v, 0.0f);
      } else if (!h.valid(label)) {
        std::fill_n(row, v, nan);
      } else {
        float m = rowMaximum(row, v, -std::numeric_limits<float>::infinity());
        float inv = 1.0f / expAndSum(row, v, m);
        float labelled = row[label] * inv;
        for (int64_t j = 0; j < v; ++j)
          row[j] = scale * (row[j] * inv - smooth);
        row[label] = scale * (labelled - smooth - keep);
      }
      if (block16)
        toBFloat(row, static_cast<uint16_t *>(block16->data) + r * v, v);
      else
        roundInPlace(row, v, h.dtype);
    }
    const void *dl = block16 ? block16->data : static_cast<const void *>(logits);
    // dx rows = dl w^T ([k, v] weight) or dl w ([v, k]).
    gemmF32(dl, ops.dtype, ops.w, ops.dtype, dx + first * k,
            /*accumulate=*/false, rows, k, v, false, !h.transposed);
    // dw (+)= x^T dl ([k, v]) or dl^T x ([v, k]), summed over the blocks.
    if (h.transposed)
      gemmF32(dl, ops.dtype, ops.rows(first), ops.dtype, dw, first != 0, v, k,
              rows, true, false);
    else
      gemmF32(ops.rows(first), ops.dtype, dl, ops.dtype, dw, first != 0, k, v,
              rows, true, false);
  }
}
