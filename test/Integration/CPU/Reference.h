//===- Reference.h - f64 reference implementations of train ops -*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Straightforward f64 loops over row-major data, written independently of the
// lowering, that the JIT-compiled ops are checked against.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TEST_INTEGRATION_CPU_REFERENCE_H
#define AMP_TEST_INTEGRATION_CPU_REFERENCE_H

#include <cstdint>
#include <vector>

namespace amp {
namespace ref {

using Shape = std::vector<int64_t>;
using Values = std::vector<double>;

int64_t numElements(const Shape &shape);
/// Row-major strides.
Shape stridesOf(const Shape &shape);

/// NumPy-broadcast binary op; `op` is '+', '-', '*' or '/'.
Values broadcastBinary(const Values &a, const Shape &as, const Values &b,
                       const Shape &bs, const Shape &out, char op);

/// [M,K]x[K,N] with operands stored transposed when the flags say so;
/// `batch` > 0 makes both operands batched ([B,...]).
Values matmul(const Values &a, const Values &b, int64_t batch, int64_t m,
              int64_t n, int64_t k, bool transA, bool transB);

/// NCHW x FCHW convolution with zero padding.
Values conv2d(const Values &x, const Shape &xs, const Values &w,
              const Shape &ws, const Shape &strides, const Shape &padding,
              const Shape &dilation, Shape &outShape);

/// NCHW pooling; `isMax` else average over the full (padded) window, whose
/// taps are `dilation` apart.
Values pool2d(const Values &x, const Shape &xs, const Shape &kernel,
              const Shape &strides, const Shape &padding, bool isMax,
              Shape &outShape, const Shape &dilation = {1, 1});

/// Softmax (or log-softmax) along `axis`; `causal` masks column > row over
/// the two trailing dimensions.
Values softmax(const Values &x, const Shape &xs, int64_t axis, bool logForm,
               bool causal);

/// Layer norm over the trailing `normElements` elements of each row.
Values layerNorm(const Values &x, int64_t normElements, const Values &scale,
                 const Values &bias, double eps);

/// Training-mode batch norm over [N, C, rest...]; updates the running stats.
Values batchNorm(const Values &x, const Shape &xs, const Values &scale,
                 const Values &bias, Values &runningMean, Values &runningVar,
                 double eps, double momentum);

/// Sum over `axes` (mean when `mean`), reduced dimensions dropped.
Values reduce(const Values &x, const Shape &xs, const Shape &axes, bool mean);

/// Mean cross-entropy of [N, C] logits and labels.
double crossEntropy(const Values &logits, int64_t n, int64_t c,
                    const std::vector<int32_t> &labels);

/// The dropout keep decision for row-major element `index` (the documented
/// splitmix64 formula).
bool dropoutKeeps(uint64_t index, uint64_t seed, double rate);

} // namespace ref
} // namespace amp

#endif // AMP_TEST_INTEGRATION_CPU_REFERENCE_H
