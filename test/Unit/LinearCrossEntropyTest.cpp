//===- LinearCrossEntropyTest.cpp - The fused head's kernels ---------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp_cpu_linear_cross_entropy(_grad) against an f64 reference of what
// train.linear_cross_entropy means: the logits summed exactly and rounded
// once to the operands' type, the loss and the logits' gradient in f64 (the
// gradient rounded to the operands' type before its two products). A
// vocabulary large enough for several blocks of rows checks that the
// weight's gradient is summed over the blocks; ignored rows, label
// smoothing, labels out of range and f32, f16 and bf16 operands are cases of
// their own.
//
//===----------------------------------------------------------------------===//

#include "amp/ABI/LinearCrossEntropyWorkspace.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Float16.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace amp;

namespace {

struct Case {
  RuntimeDType dtype;
  int64_t n, k, v;
  bool transposed;
  bool hasIgnore;
  int64_t ignore;
  double smoothing;
};

/// Values of the operand type, stored as the kernels read them, and as
/// doubles (the same values).
struct Operand {
  Operand(RuntimeDType dtype, int64_t count, std::mt19937 &rng, float scale)
      : dtype(dtype), values(count) {
    std::normal_distribution<float> dist(0.0f, scale);
    if (dtype == RuntimeDType::F32)
      f32.resize(count);
    else
      bits.resize(count);
    for (int64_t i = 0; i < count; ++i) {
      float x = dist(rng);
      if (dtype == RuntimeDType::F32) {
        f32[i] = x;
      } else {
        bits[i] = dtype == RuntimeDType::BF16 ? floatToBFloat(x) : floatToHalf(x);
        x = dtype == RuntimeDType::BF16 ? bfloatToFloat(bits[i])
                                        : halfToFloat(bits[i]);
      }
      values[i] = x;
    }
  }
  intptr_t address() const {
    return dtype == RuntimeDType::F32 ? reinterpret_cast<intptr_t>(f32.data())
                                      : reinterpret_cast<intptr_t>(bits.data());
  }
  RuntimeDType dtype;
  std::vector<double> values;
  std::vector<float> f32;
  std::vector<uint16_t> bits;
};

double roundTo(double x, RuntimeDType dtype) {
  float f = float(x);
  if (dtype == RuntimeDType::BF16)
    return bfloatToFloat(floatToBFloat(f));
  if (dtype == RuntimeDType::F16)
    return halfToFloat(floatToHalf(f));
  return f;
}

struct Reference {
  double loss;
  std::vector<double> dx, dw;
};

Reference reference(const Case &c, const Operand &x, const Operand &w,
                    const std::vector<int32_t> &labels, double seed) {
  auto weight = [&](int64_t kk, int64_t j) {
    return c.transposed ? w.values[j * c.k + kk] : w.values[kk * c.v + j];
  };
  Reference r{0.0, std::vector<double>(c.n * c.k, 0.0),
              std::vector<double>(c.k * c.v, 0.0)};
  int64_t counted = 0;
  for (int64_t i = 0; i < c.n; ++i)
    counted += c.hasIgnore && labels[i] == c.ignore ? 0 : 1;
  std::vector<double> row(c.v), dl(c.v);
  double total = 0.0;
  for (int64_t i = 0; i < c.n; ++i) {
    int32_t label = labels[i];
    if (c.hasIgnore && label == c.ignore)
      continue;
    if (label < 0 || label >= c.v) {
      total = std::numeric_limits<double>::quiet_NaN();
      for (int64_t kk = 0; kk < c.k; ++kk)
        r.dx[i * c.k + kk] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    double m = -INFINITY;
    for (int64_t j = 0; j < c.v; ++j) {
      double s = 0.0;
      for (int64_t kk = 0; kk < c.k; ++kk)
        s += x.values[i * c.k + kk] * weight(kk, j);
      row[j] = roundTo(s, c.dtype);
      m = std::max(m, row[j]);
    }
    double sum = 0.0, mean = 0.0;
    for (int64_t j = 0; j < c.v; ++j) {
      sum += std::exp(row[j] - m);
      mean += row[j];
    }
    mean /= double(c.v);
    double lse = m + std::log(sum);
    total += (1.0 - c.smoothing) * (lse - row[label]) +
             c.smoothing * (lse - mean);
    for (int64_t j = 0; j < c.v; ++j) {
      double target = (1.0 - c.smoothing) * (j == label ? 1.0 : 0.0) +
                      c.smoothing / double(c.v);
      dl[j] = roundTo(seed / double(counted) * (std::exp(row[j] - lse) - target),
                      c.dtype);
    }
    for (int64_t kk = 0; kk < c.k; ++kk) {
      double s = 0.0;
      for (int64_t j = 0; j < c.v; ++j)
        s += dl[j] * weight(kk, j);
      r.dx[i * c.k + kk] = s;
      for (int64_t j = 0; j < c.v; ++j) {
        double g = x.values[i * c.k + kk] * dl[j];
        (c.transposed ? r.dw[j * c.k + kk] : r.dw[kk * c.v + j]) += g;
      }
    }
  }
  r.loss = total / double(counted);
  return r;
}

/// Runs both kernels on random operands and compares them with the
/// reference: the loss to `lossTol` relative, each gradient to `gradTol`
/// times its largest reference magnitude.
void check(const Case &c, std::vector<int32_t> labels, double lossTol,
           double gradTol) {
  std::mt19937 rng(1234 + c.v);
  Operand x(c.dtype, c.n * c.k, rng, 1.0f), w(c.dtype, c.k * c.v, rng, 0.5f);
  int64_t smoothingBits;
  std::memcpy(&smoothingBits, &c.smoothing, sizeof smoothingBits);
  float loss = 0.0f, seed = 2.0f;
  amp_cpu_linear_cross_entropy(x.address(), w.address(),
                               reinterpret_cast<intptr_t>(labels.data()),
                               reinterpret_cast<intptr_t>(&loss),
                               int64_t(c.dtype), c.n, c.k, c.v, c.transposed,
                               c.hasIgnore, c.ignore, smoothingBits);
  std::vector<float> dx(c.n * c.k, -1.0f), dw(c.k * c.v, -1.0f);
  amp_cpu_linear_cross_entropy_grad(
      reinterpret_cast<intptr_t>(&seed), x.address(), w.address(),
      reinterpret_cast<intptr_t>(labels.data()),
      reinterpret_cast<intptr_t>(dx.data()),
      reinterpret_cast<intptr_t>(dw.data()), int64_t(c.dtype), c.n, c.k, c.v,
      c.transposed, c.hasIgnore, c.ignore, smoothingBits);
  Reference r = reference(c, x, w, labels, seed);
  if (std::isnan(r.loss)) {
    EXPECT_TRUE(std::isnan(loss));
  } else {
    EXPECT_NEAR(loss, r.loss, lossTol * std::abs(r.loss)) << "loss";
  }
  auto compare = [&](const std::vector<float> &got,
                     const std::vector<double> &want, const char *name) {
    double scale = 0.0;
    for (double v : want)
      if (!std::isnan(v))
        scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << name << "[" << i << "]";
        continue;
      }
      ASSERT_NEAR(got[i], want[i], gradTol * scale + 1e-30)
          << name << "[" << i << "]";
    }
  };
  if (!std::isnan(r.loss) || c.n > 0) {
    compare(dx, r.dx, "dx");
    bool anyNan = std::any_of(r.dx.begin(), r.dx.end(),
                              [](double v) { return std::isnan(v); });
    if (!anyNan)
      compare(dw, r.dw, "dw");
  }
}

std::vector<int32_t> randomLabels(int64_t n, int64_t v, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, int32_t(v - 1));
  std::vector<int32_t> labels(n);
  for (auto &l : labels)
    l = dist(rng);
  return labels;
}

TEST(LinearCrossEntropy, BlocksOfRowsSumTheWeightGradient) {
  // 3001 classes: 256 rows per block, so 600 rows are three blocks.
  Case c{RuntimeDType::F32, 600, 5, 3001, /*transposed=*/true, true, -100, 0.1};
  ASSERT_EQ(linearCrossEntropyBlockRows(c.n, c.v), 256);
  std::vector<int32_t> labels = randomLabels(c.n, c.v, 7);
  labels[3] = labels[20] = -100;
  check(c, labels, 1e-5, 1e-4);
}

TEST(LinearCrossEntropy, F32WeightInputMajor) {
  Case c{RuntimeDType::F32, 50, 16, 300, false, false, 0, 0.0};
  check(c, randomLabels(c.n, c.v, 8), 1e-5, 1e-4);
}

TEST(LinearCrossEntropy, Bf16LogitsRoundedOnce) {
  Case c{RuntimeDType::BF16, 50, 16, 300, true, true, -100, 0.0};
  std::vector<int32_t> labels = randomLabels(c.n, c.v, 9);
  labels[0] = -100;
  // The logits' bf16 rounding may differ by one ulp where the f32 and the
  // exact sums straddle a rounding boundary.
  check(c, labels, 2e-3, 2e-2);
}

TEST(LinearCrossEntropy, F16Widened) {
  Case c{RuntimeDType::F16, 33, 8, 70, false, false, 0, 0.2};
  check(c, randomLabels(c.n, c.v, 10), 2e-3, 2e-2);
}

TEST(LinearCrossEntropy, EveryRowIgnoredIsNaNWithZeroGradients) {
  Case c{RuntimeDType::F32, 4, 3, 10, true, true, -100, 0.0};
  check(c, std::vector<int32_t>(4, -100), 0.0, 0.0);
}

TEST(LinearCrossEntropy, LabelOutOfRangeIsNaN) {
  Case c{RuntimeDType::F32, 6, 3, 10, false, false, 0, 0.0};
  std::vector<int32_t> labels = randomLabels(c.n, c.v, 11);
  labels[2] = 10;
  check(c, labels, 0.0, 1e-4);
}

} // namespace
