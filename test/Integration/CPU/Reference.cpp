//===- Reference.cpp - f64 reference implementations of train ops ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace amp::ref;

int64_t amp::ref::numElements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Shape amp::ref::stridesOf(const Shape &shape) {
  Shape strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// The flat index into an operand of shape `os` broadcast to `out` for the
/// flat result index `i`.
static int64_t broadcastIndex(int64_t i, const Shape &out, const Shape &os) {
  Shape outStrides = stridesOf(out), opStrides = stridesOf(os);
  size_t offset = out.size() - os.size();
  int64_t index = 0;
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t coord = (i / outStrides[d]) % out[d];
    if (d >= offset && os[d - offset] != 1)
      index += coord * opStrides[d - offset];
  }
  return index;
}

Values amp::ref::broadcastBinary(const Values &a, const Shape &as,
                                 const Values &b, const Shape &bs,
                                 const Shape &out, char op) {
  Values r(numElements(out));
  for (int64_t i = 0; i < int64_t(r.size()); ++i) {
    double x = a[broadcastIndex(i, out, as)], y = b[broadcastIndex(i, out, bs)];
    r[i] = op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y;
  }
  return r;
}

Values amp::ref::matmul(const Values &a, const Values &b, int64_t batch,
                        int64_t m, int64_t n, int64_t k, bool transA,
                        bool transB) {
  int64_t batches = std::max<int64_t>(batch, 1);
  Values r(batches * m * n, 0.0);
  for (int64_t p = 0; p < batches; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q) {
          double x =
              transA ? a[p * m * k + q * m + i] : a[p * m * k + i * k + q];
          double y =
              transB ? b[p * n * k + j * k + q] : b[p * n * k + q * n + j];
          sum += x * y;
        }
        r[p * m * n + i * n + j] = sum;
      }
  return r;
}

Values amp::ref::conv2d(const Values &x, const Shape &xs, const Values &w,
                        const Shape &ws, const Shape &strides,
                        const Shape &padding, const Shape &dilation,
                        Shape &outShape) {
  int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3];
  int64_t f = ws[0], kh = ws[2], kw = ws[3];
  int64_t oh =
      (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / strides[0] + 1;
  int64_t ow =
      (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / strides[1] + 1;
  outShape = {n, f, oh, ow};
  Values r(n * f * oh * ow, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < f; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double sum = 0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                int64_t iy = y * strides[0] + i * dilation[0] - padding[0];
                int64_t ix = z * strides[1] + j * dilation[1] - padding[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd)
                  continue;
                sum += x[((b * c + ch) * h + iy) * wd + ix] *
                       w[((o * c + ch) * kh + i) * kw + j];
              }
          r[((b * f + o) * oh + y) * ow + z] = sum;
        }
  return r;
}

Values amp::ref::pool2d(const Values &x, const Shape &xs, const Shape &kernel,
                        const Shape &strides, const Shape &padding, bool isMax,
                        Shape &outShape, const Shape &dilation) {
  int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  int64_t oh =
      (h + 2 * padding[0] - dilation[0] * (kernel[0] - 1) - 1) / strides[0] + 1;
  int64_t ow =
      (w + 2 * padding[1] - dilation[1] * (kernel[1] - 1) - 1) / strides[1] + 1;
  outShape = {n, c, oh, ow};
  Values r(n * c * oh * ow);
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < kernel[0]; ++i)
          for (int64_t j = 0; j < kernel[1]; ++j) {
            int64_t iy = y * strides[0] + i * dilation[0] - padding[0];
            int64_t ix = z * strides[1] + j * dilation[1] - padding[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w)
              continue; // padding: never the max, zero in the sum
            double v = x[(p * h + iy) * w + ix];
            acc = isMax ? std::max(acc, v) : acc + v;
          }
        r[(p * oh + y) * ow + z] = isMax ? acc : acc / (kernel[0] * kernel[1]);
      }
  return r;
}

Values amp::ref::softmax(const Values &x, const Shape &xs, int64_t axis,
                         bool logForm, bool causal) {
  Shape strides = stridesOf(xs);
  int64_t len = xs[axis], stride = strides[axis];
  Values r(x.size());
  int64_t rank = xs.size();
  for (int64_t i = 0; i < int64_t(x.size()); ++i) {
    if ((i / stride) % len != 0)
      continue; // visit each row once, from its first element
    // Row index of the causal mask: coordinate rank-2.
    int64_t row = causal ? (i / strides[rank - 2]) % xs[rank - 2] : 0;
    auto kept = [&](int64_t j) { return !causal || j <= row; };
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < len; ++j)
      if (kept(j))
        max = std::max(max, x[i + j * stride]);
    double sum = 0;
    for (int64_t j = 0; j < len; ++j)
      if (kept(j))
        sum += std::exp(x[i + j * stride] - max);
    for (int64_t j = 0; j < len; ++j) {
      double v = x[i + j * stride];
      r[i + j * stride] = logForm   ? v - max - std::log(sum)
                          : kept(j) ? std::exp(v - max) / sum
                                    : 0.0;
    }
  }
  return r;
}

Values amp::ref::layerNorm(const Values &x, int64_t normElements,
                           const Values &scale, const Values &bias,
                           double eps) {
  Values r(x.size());
  for (size_t start = 0; start < x.size(); start += normElements) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < normElements; ++j)
      mean += x[start + j];
    mean /= normElements;
    for (int64_t j = 0; j < normElements; ++j)
      var += (x[start + j] - mean) * (x[start + j] - mean);
    var /= normElements;
    for (int64_t j = 0; j < normElements; ++j)
      r[start + j] =
          (x[start + j] - mean) / std::sqrt(var + eps) * scale[j] + bias[j];
  }
  return r;
}

Values amp::ref::batchNorm(const Values &x, const Shape &xs,
                           const Values &scale, const Values &bias,
                           Values &runningMean, Values &runningVar, double eps,
                           double momentum) {
  int64_t n = xs[0], c = xs[1];
  int64_t inner = numElements(xs) / (n * c);
  int64_t count = n * inner;
  Values r(x.size());
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < inner; ++j)
        mean += x[(b * c + ch) * inner + j];
    mean /= count;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < inner; ++j) {
        double d = x[(b * c + ch) * inner + j] - mean;
        var += d * d;
      }
    for (int64_t b = 0; b < n; ++b)
      for (int64_t j = 0; j < inner; ++j) {
        int64_t i = (b * c + ch) * inner + j;
        r[i] =
            (x[i] - mean) / std::sqrt(var / count + eps) * scale[ch] + bias[ch];
      }
    runningMean[ch] = (1 - momentum) * runningMean[ch] + momentum * mean;
    runningVar[ch] =
        (1 - momentum) * runningVar[ch] + momentum * var / (count - 1);
  }
  return r;
}

Values amp::ref::reduce(const Values &x, const Shape &xs, const Shape &axes,
                        bool mean) {
  Shape outShape;
  for (int64_t d = 0; d < int64_t(xs.size()); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      outShape.push_back(xs[d]);
  Values r(numElements(outShape), 0.0);
  Shape strides = stridesOf(xs), outStrides = stridesOf(outShape);
  int64_t count = 1;
  for (int64_t a : axes)
    count *= xs[a];
  for (int64_t i = 0; i < int64_t(x.size()); ++i) {
    int64_t o = 0, k = 0;
    for (int64_t d = 0; d < int64_t(xs.size()); ++d) {
      if (std::find(axes.begin(), axes.end(), d) != axes.end())
        continue;
      o += ((i / strides[d]) % xs[d]) * outStrides[k++];
    }
    r[o] += x[i];
  }
  if (mean)
    for (double &v : r)
      v /= count;
  return r;
}

double amp::ref::crossEntropy(const Values &logits, int64_t n, int64_t c,
                              const std::vector<int32_t> &labels) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < c; ++j)
      max = std::max(max, logits[i * c + j]);
    double sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += std::exp(logits[i * c + j] - max);
    total += std::log(sum) + max - logits[i * c + labels[i]];
  }
  return total / n;
}

bool amp::ref::dropoutKeeps(uint64_t index, uint64_t seed, double rate) {
  uint64_t z = index + seed * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z = z ^ (z >> 31);
  double u = double(z >> 40) / double(1 << 24);
  return float(u) >= float(rate);
}
