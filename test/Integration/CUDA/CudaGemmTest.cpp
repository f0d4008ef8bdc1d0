//===- CudaGemmTest.cpp - cuBLASLt GEMMs on the device --------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// On a GPU machine: amp_cuda_gemm (f16 and bf16 operands, f32 accumulation,
// every transpose pair, batched, without an epilogue, with the bias one and
// with bias + ReLU and bias + GELU) against the CPU runtime's amp_cpu_gemm on
// the same operands (then the ReLU or GELU in f32), rounded to the output
// type: within one ulp of the output type plus 1e-5 k (a bound on 1e-5 of
// the sum of |terms| for values in [-1, 1])
// (cuBLASLt may sum in another order, so a result near a rounding boundary
// may round the other way); the GELU epilogue keeping its input and the
// backward DGELU, and the ReLU epilogue keeping its bit mask and the
// backward DRELU, against a double reference (the epilogue tests also run
// with AMP_CUDA_EPILOGUE_FALLBACK=1, scripts/gpu-checks.sh). Without a GPU: the
// calls record the runtime's "no CUDA device" error instead of crashing.
// The embedding gradient's scatter-add against amp_cpu_embedding_grad.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CudaGemm.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/CudaDriver.h"
#include "amp/Runtime/CudaRuntime.h"
#include "amp/Runtime/EpilogueMath.h"
#include "amp/Runtime/Float16.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace amp;

namespace {

/// f16 (dtype 1) or bf16 (dtype 2) bits of `v`, and back.
uint16_t toBits(int64_t dtype, float v) {
  return dtype == 1 ? floatToHalf(v) : floatToBFloat(v);
}
float toFloat(int64_t dtype, uint16_t b) {
  return dtype == 1 ? halfToFloat(b) : bfloatToFloat(b);
}

/// A device copy of 16-bit `host` data.
void *upload(void *stream, const std::vector<uint16_t> &host) {
  void *p = mgpuMemAlloc(host.size() * 2, stream, false);
  mgpuMemcpy(p, const_cast<uint16_t *>(host.data()), host.size() * 2, stream);
  return p;
}

/// The tanh GELU and its derivative, in double.
double geluTanh(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
}
double geluTanhGrad(double x) {
  const double c = std::sqrt(2.0 / M_PI);
  double t = std::tanh(c * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x);
}

TEST(CudaDevice, GemmMatchesCpuRuntime) {
  std::string driverError;
  char error[512];
  if (!cuda::getDriver(&driverError)) {
    amp_cuda_gemm(nullptr, nullptr, nullptr, 1, 1, 1, 4, 4, 4, 0, 0);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
    EXPECT_EQ(std::string(error), "amp_cuda_gemm: " + driverError);
    EXPECT_EQ(driverError.rfind("no CUDA device: ", 0), 0u) << driverError;
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  void *stream = mgpuStreamCreate();
  for (int64_t dtype : {1, 2})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int64_t epilogue : {0, 1, 2, 3}) {
          bool withBias = epilogue != 0;
          const int64_t batch = 2, m = 96, n = 80, k = 200;
          std::vector<uint16_t> a(batch * m * k), b(batch * k * n), bias(n),
              d(batch * m * n);
          for (auto *v : {&a, &b, &bias})
            for (uint16_t &x : *v)
              x = toBits(dtype, uniform(rng));
          std::vector<float> reference(batch * m * n);
          if (withBias)
            amp_cpu_gemm_bias(intptr_t(a.data()), intptr_t(b.data()),
                              intptr_t(bias.data()), intptr_t(reference.data()),
                              dtype, dtype, dtype, batch, m, n, k, ta, tb);
          else
            amp_cpu_gemm(intptr_t(a.data()), intptr_t(b.data()),
                         intptr_t(reference.data()), dtype, dtype, batch, m, n,
                         k, ta, tb);
          if (epilogue == int64_t(cuda::Epilogue::ReluBias))
            for (float &v : reference)
              v = std::max(v, 0.0f);
          if (epilogue == int64_t(cuda::Epilogue::GeluBias))
            for (float &v : reference)
              v = float(geluTanh(v));
          void *da = upload(stream, a), *db = upload(stream, b),
               *dbias = upload(stream, bias), *dd = upload(stream, d);
          if (withBias)
            amp_cuda_gemm_bias(da, db, dbias, dd, dtype, dtype, batch, m, n, k,
                               ta, tb, epilogue);
          else
            amp_cuda_gemm(da, db, dd, dtype, dtype, batch, m, n, k, ta, tb);
          mgpuMemcpy(d.data(), dd, d.size() * 2, stream);
          mgpuStreamSynchronize(stream);
          ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;
          double ulp = dtype == 1 ? 1.0 / 1024 : 1.0 / 128;
          for (size_t i = 0; i < d.size(); ++i) {
            double want = reference[i], got = toFloat(dtype, d[i]);
            ASSERT_LE(std::abs(got - want),
                      ulp * std::abs(want) + 1e-5 * k + 6e-8)
                << "dtype " << dtype << " ta " << ta << " tb " << tb
                << " epilogue " << epilogue << " element " << i;
          }
          for (void *p : {da, db, dbias, dd})
            mgpuMemFree(p, stream);
        }
  mgpuStreamDestroy(stream);
}

// The weight and bias gradients of a linear layer in one call (the BGRAD
// epilogue, or its fallback): D = x^T dy as amp_cpu_gemm computes it, and
// the column sums of dy, both within an ulp of the output type plus 1e-5 k.
TEST(CudaDevice, GemmBiasGradientMatchesCpu) {
  std::string driverError;
  char error[512];
  if (!cuda::getDriver(&driverError)) {
    amp_cuda_gemm_bgrad(nullptr, nullptr, nullptr, nullptr, 1, 1, 1, 4, 4, 4, 1,
                        0);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
    EXPECT_EQ(std::string(error), "amp_cuda_gemm: " + driverError);
    return;
  }
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> uniform(-1, 1);
  void *stream = mgpuStreamCreate();
  for (int64_t dtype : {1, 2}) {
    const int64_t m = 96, n = 80, k = 200; // x is k x m, dy k x n
    std::vector<uint16_t> x(k * m), dy(k * n), d(m * n), db(n);
    for (auto *v : {&x, &dy})
      for (uint16_t &e : *v)
        e = toBits(dtype, uniform(rng));
    std::vector<float> reference(m * n), sums(n, 0.0f);
    amp_cpu_gemm(intptr_t(x.data()), intptr_t(dy.data()),
                 intptr_t(reference.data()), dtype, dtype, 1, m, n, k, 1, 0);
    for (int64_t r = 0; r < k; ++r)
      for (int64_t c = 0; c < n; ++c)
        sums[c] += toFloat(dtype, dy[r * n + c]);
    void *dx = upload(stream, x), *ddy = upload(stream, dy),
         *dd = upload(stream, d), *ddb = upload(stream, db);
    amp_cuda_gemm_bgrad(dx, ddy, dd, ddb, dtype, dtype, 1, m, n, k, 1, 0);
    mgpuMemcpy(d.data(), dd, d.size() * 2, stream);
    mgpuMemcpy(db.data(), ddb, db.size() * 2, stream);
    mgpuStreamSynchronize(stream);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;
    double ulp = dtype == 1 ? 1.0 / 1024 : 1.0 / 128;
    for (size_t i = 0; i < d.size(); ++i)
      ASSERT_LE(std::abs(toFloat(dtype, d[i]) - reference[i]),
                ulp * std::abs(reference[i]) + 1e-5 * k + 6e-8)
          << "dtype " << dtype << " weight gradient element " << i;
    for (int64_t c = 0; c < n; ++c)
      ASSERT_LE(std::abs(toFloat(dtype, db[c]) - sums[c]),
                ulp * std::abs(sums[c]) + 1e-5 * k + 6e-8)
          << "dtype " << dtype << " bias gradient element " << c;
    for (void *p : {dx, ddy, dd, ddb})
      mgpuMemFree(p, stream);
  }
  mgpuStreamDestroy(stream);
}

// A linear layer's GELU in the epilogue, keeping its input (GELU_AUX_BIAS),
// then the GEMM of the GELU's output gradient times the GELU's derivative at
// that input (DGELU), against a double reference on the same operands: the
// aux matrix within an ulp of h = x w + b plus 1e-5 k, D within an ulp plus
// 2e-5 k (the GELU and its derivative are at most 1.13 in slope and
// size).
TEST(CudaDevice, GeluEpiloguesMatchReference) {
  std::string driverError;
  char error[512];
  if (!cuda::getDriver(&driverError)) {
    amp_cuda_gemm_gelu_aux(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                           8, 8, 8, 0, 0);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
    EXPECT_EQ(std::string(error), "amp_cuda_gemm: " + driverError);
    return;
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1, 1);
  void *stream = mgpuStreamCreate();
  for (int64_t dtype : {1, 2})
    for (int tb = 0; tb < 2; ++tb) {
      const int64_t m = 96, n = 80, k = 200;
      // Forward: x (m x k), w (k x n, or n x k transposed), bias (n).
      // Backward: dz (m x k) times w2 (k x n, or n x k transposed).
      std::vector<uint16_t> x(m * k), w(k * n), bias(n), dz(m * k), w2(k * n),
          y(m * n), aux(m * n), dh(m * n);
      for (auto *v : {&x, &w, &bias, &dz, &w2})
        for (uint16_t &e : *v)
          e = toBits(dtype, uniform(rng));
      auto product = [&](const std::vector<uint16_t> &a,
                         const std::vector<uint16_t> &b, int64_t i, int64_t j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += double(toFloat(dtype, a[i * k + l])) *
                 toFloat(dtype, tb ? b[j * k + l] : b[l * n + j]);
        return sum;
      };
      void *dx = upload(stream, x), *dw = upload(stream, w),
           *dbias = upload(stream, bias), *ddz = upload(stream, dz),
           *dw2 = upload(stream, w2), *dy = upload(stream, y),
           *daux = upload(stream, aux), *ddh = upload(stream, dh);
      amp_cuda_gemm_gelu_aux(dx, dw, dbias, dy, daux, dtype, dtype, 1, m, n, k,
                             0, tb);
      amp_cuda_gemm_dgelu(ddz, dw2, daux, ddh, dtype, dtype, 1, m, n, k, 0, tb);
      mgpuMemcpy(y.data(), dy, y.size() * 2, stream);
      mgpuMemcpy(aux.data(), daux, aux.size() * 2, stream);
      mgpuMemcpy(dh.data(), ddh, dh.size() * 2, stream);
      mgpuStreamSynchronize(stream);
      ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;
      double ulp = dtype == 1 ? 1.0 / 1024 : 1.0 / 128;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          size_t e = i * n + j;
          double h = product(x, w, i, j) + toFloat(dtype, bias[j]);
          ASSERT_LE(std::abs(toFloat(dtype, aux[e]) - h),
                    ulp * std::abs(h) + 1e-5 * k + 6e-8)
              << "dtype " << dtype << " tb " << tb << " aux element " << e;
          ASSERT_LE(std::abs(toFloat(dtype, y[e]) - geluTanh(h)),
                    ulp * std::abs(geluTanh(h)) + 2e-5 * k + 6e-8)
              << "dtype " << dtype << " tb " << tb << " gelu element " << e;
          // The derivative at the aux matrix the device kept.
          double want =
              product(dz, w2, i, j) * geluTanhGrad(toFloat(dtype, aux[e]));
          ASSERT_LE(std::abs(toFloat(dtype, dh[e]) - want),
                    ulp * std::abs(want) + 2e-5 * k + 6e-8)
              << "dtype " << dtype << " tb " << tb << " dgelu element " << e;
        }
      for (void *p : {dx, dw, dbias, ddz, dw2, dy, daux, ddh})
        mgpuMemFree(p, stream);
    }
  mgpuStreamDestroy(stream);
}

TEST(CudaDevice, ReluMaskEpiloguesMatchReference) {
  std::string driverError;
  char error[512];
  if (!cuda::getDriver(&driverError)) {
    amp_cuda_gemm_relu_aux(nullptr, nullptr, nullptr, nullptr, nullptr, 1, 1, 1,
                           8, 128, 8, 0, 0);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
    EXPECT_EQ(std::string(error), "amp_cuda_gemm: " + driverError);
    return;
  }
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1, 1);
  void *stream = mgpuStreamCreate();
  for (int64_t dtype : {1, 2})
    for (int tb = 0; tb < 2; ++tb) {
      const int64_t m = 96, n = 256, k = 200;
      std::vector<uint16_t> x(m * k), w(k * n), bias(n), dz(m * k), w2(k * n),
          y(m * n), dh(m * n);
      std::vector<uint8_t> mask(m * n / 8);
      for (auto *v : {&x, &w, &bias, &dz, &w2})
        for (uint16_t &e : *v)
          e = toBits(dtype, uniform(rng));
      auto product = [&](const std::vector<uint16_t> &a,
                         const std::vector<uint16_t> &b, int64_t i, int64_t j) {
        double sum = 0;
        for (int64_t l = 0; l < k; ++l)
          sum += double(toFloat(dtype, a[i * k + l])) *
                 toFloat(dtype, tb ? b[j * k + l] : b[l * n + j]);
        return sum;
      };
      void *dx = upload(stream, x), *dw = upload(stream, w),
           *dbias = upload(stream, bias), *ddz = upload(stream, dz),
           *dw2 = upload(stream, w2), *dy = upload(stream, y),
           *ddh = upload(stream, dh);
      void *dmask = mgpuMemAlloc(mask.size(), stream, false);
      amp_cuda_gemm_relu_aux(dx, dw, dbias, dy, dmask, dtype, dtype, 1, m, n, k,
                             0, tb);
      amp_cuda_gemm_drelu(ddz, dw2, dmask, ddh, dtype, dtype, 1, m, n, k, 0,
                          tb);
      mgpuMemcpy(y.data(), dy, y.size() * 2, stream);
      mgpuMemcpy(mask.data(), dmask, mask.size(), stream);
      mgpuMemcpy(dh.data(), ddh, dh.size() * 2, stream);
      mgpuStreamSynchronize(stream);
      ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;
      double ulp = dtype == 1 ? 1.0 / 1024 : 1.0 / 128;
      for (int64_t i = 0; i < m; ++i) {
        // Row i of D is column i of cuBLASLt's column-major n x m result: its
        // mask bits are bytes [i n/8, (i+1) n/8) whatever their bit order.
        int64_t bits = 0, positive = 0;
        for (int64_t byte = 0; byte < n / 8; ++byte)
          bits += __builtin_popcount(mask[i * n / 8 + byte]);
        for (int64_t j = 0; j < n; ++j) {
          size_t e = i * n + j;
          double h = product(x, w, i, j) + toFloat(dtype, bias[j]);
          double relu = std::max(h, 0.0);
          ASSERT_LE(std::abs(toFloat(dtype, y[e]) - relu),
                    ulp * relu + 1e-5 * k + 6e-8)
              << "dtype " << dtype << " tb " << tb << " relu element " << e;
          bool on = toFloat(dtype, y[e]) > 0;
          positive += on;
          // The layout the fallback kernels write and read (so that a
          // cuBLASLt mask and a fallback DRELU, or the reverse, agree).
          uint32_t word;
          std::memcpy(&word, &mask[cuda::reluMaskWord(e) * 4], 4);
          ASSERT_EQ(bool(word & cuda::reluMaskBit(e)), on)
              << "dtype " << dtype << " tb " << tb << " mask bit " << e
              << " is not where EpilogueMath.h puts it";
          // The gradient passes where the device's ReLU did.
          double want = on ? product(dz, w2, i, j) : 0.0;
          ASSERT_LE(std::abs(toFloat(dtype, dh[e]) - want),
                    ulp * std::abs(want) + 1e-5 * k + 6e-8)
              << "dtype " << dtype << " tb " << tb << " drelu element " << e;
        }
        ASSERT_EQ(bits, positive)
            << "dtype " << dtype << " tb " << tb << " mask row " << i;
      }
      for (void *p : {dx, dw, dbias, ddz, dw2, dy, ddh, dmask})
        mgpuMemFree(p, stream);
    }
  mgpuStreamDestroy(stream);
}

} // namespace

// The embedding gradient's scatter-add against the CPU runtime's on the same
// f16/bf16 gradient: 4096 positions over a vocabulary of 300 (many repeated
// ids, an out-of-range one clamped), f32 sums in another order (atomics), so
// within 1e-5 of the sum of |terms| per entry.
TEST(CudaDevice, EmbeddingGradMatchesCpu) {
  std::string driverError;
  char error[512];
  if (!cuda::getDriver(&driverError)) {
    amp_cuda_embedding_grad(nullptr, nullptr, nullptr, 1, 4, 4, 4);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 1);
    EXPECT_NE(std::string(error).find(driverError), std::string::npos)
        << error;
    return;
  }
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::uniform_int_distribution<int32_t> token(0, 299);
  void *stream = mgpuStreamCreate();
  const int64_t positions = 4096, dim = 96, vocab = 300;
  for (int64_t dtype : {1, 2}) {
    std::vector<uint16_t> dy(positions * dim);
    for (uint16_t &e : dy)
      e = toBits(dtype, uniform(rng));
    std::vector<int32_t> ids(positions);
    for (int32_t &id : ids)
      id = token(rng);
    ids[7] = 1000; // clamped to vocab - 1 by both
    std::vector<float> want(vocab * dim), got(vocab * dim), bound(vocab * dim);
    amp_cpu_embedding_grad(intptr_t(dy.data()), intptr_t(ids.data()),
                           intptr_t(want.data()), dtype, positions, dim, vocab);
    for (int64_t p = 0; p < positions; ++p)
      for (int64_t j = 0; j < dim; ++j)
        bound[std::min<int64_t>(ids[p], vocab - 1) * dim + j] +=
            std::abs(toFloat(dtype, dy[p * dim + j]));
    void *ddy = upload(stream, dy);
    void *dids = mgpuMemAlloc(ids.size() * 4, stream, false);
    mgpuMemcpy(dids, ids.data(), ids.size() * 4, stream);
    void *dtable = mgpuMemAlloc(got.size() * 4, stream, false);
    amp_cuda_embedding_grad(ddy, dids, dtable, dtype, positions, dim, vocab);
    mgpuMemcpy(got.data(), dtable, got.size() * 4, stream);
    mgpuStreamSynchronize(stream);
    ASSERT_EQ(amp_cuda_take_error(error, sizeof(error)), 0) << error;
    for (size_t e = 0; e < got.size(); ++e)
      ASSERT_LE(std::abs(got[e] - want[e]), 1e-5 * bound[e] + 1e-6)
          << "dtype " << dtype << " entry " << e;
    for (void *p : {ddy, dids, dtable})
      mgpuMemFree(p, stream);
  }
}
