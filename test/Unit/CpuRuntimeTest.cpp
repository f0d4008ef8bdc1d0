//===- CpuRuntimeTest.cpp - The CBLAS runtime against f64 references ------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Calls the runtime's entry points directly. GEMMs (every transpose pair,
// batched, with and without bias, f32/f16/bf16 operands) against an f64
// product of the same (already rounded) operand values: the runtime's
// products are exact, so the only error is f32 accumulation, bounded here by
// 1e-5 relative to the sum of |terms|. Convolutions against a direct f64
// convolution, with strides, padding and dilation, in enough images to take
// the chunked path (several GEMMs) and its remainder; the two gradients
// against the direct f64 sums that define them - through im2col + OpenBLAS
// and through oneDNN, with f32, f16 and bf16 operands (bf16 ones reach
// oneDNN as bf16 on CPUs with AVX-512 BF16). OpenBLAS's kernel family:
// chosen by the CPU's features, and the one loaded.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Blas.h"
#include "amp/Runtime/CpuFeatures.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace amp;

namespace {

/// Random values in [-1, 1], stored as `dtype` (and returned as the exact
/// f32 values they round to, for the reference).
struct Operand {
  std::vector<uint16_t> half;
  std::vector<float> value;
  intptr_t address(RuntimeDType dtype) const {
    return dtype == RuntimeDType::F32 ? reinterpret_cast<intptr_t>(value.data())
                                      : reinterpret_cast<intptr_t>(half.data());
  }
};

Operand randomOperand(size_t n, RuntimeDType dtype, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-1, 1);
  Operand op;
  op.value.resize(n);
  op.half.resize(n);
  for (size_t i = 0; i < n; ++i) {
    float v = uniform(rng);
    if (dtype == RuntimeDType::F16) {
      op.half[i] = floatToHalf(v);
      v = halfToFloat(op.half[i]);
    } else if (dtype == RuntimeDType::BF16) {
      op.half[i] = floatToBFloat(v);
      v = bfloatToFloat(op.half[i]);
    }
    op.value[i] = v;
  }
  return op;
}

/// Sets the runtime's bf16 GEMM path for one test and restores the default.
struct ForcedGemmPath {
  explicit ForcedGemmPath(GemmPath path) { setGemmPathOverride(path); }
  ~ForcedGemmPath() { setGemmPathOverride(std::nullopt); }
};

class Gemm : public ::testing::TestWithParam<std::tuple<RuntimeDType, GemmPath>> {
};

// Every f16 value reaches the f32 GEMM exactly (the runtime widens with
// F16C/AVX-512 conversions where the CPU has them, 16 at a time, the
// lookup table elsewhere and for tails): a 65536 x 1 column of all bit
// patterns times 1.
TEST(Gemm, WidensEveryHalfExactly) {
  constexpr int64_t m = 65536 + 3; // a tail for the table
  std::vector<uint16_t> a(m);
  for (int64_t i = 0; i < m; ++i)
    a[i] = uint16_t(i);
  float one = 1.0f;
  std::vector<float> c(m, 0.0f);
  amp_cpu_gemm(reinterpret_cast<intptr_t>(a.data()),
               reinterpret_cast<intptr_t>(&one),
               reinterpret_cast<intptr_t>(c.data()),
               int64_t(RuntimeDType::F16), int64_t(RuntimeDType::F32), 1, m, 1,
               1, 0, 0);
  for (int64_t i = 0; i < m; ++i) {
    float want = halfToFloat(a[i]);
    if (std::isnan(want))
      ASSERT_TRUE(std::isnan(c[i])) << "f16 bits " << a[i];
    else
      ASSERT_EQ(c[i], want) << "f16 bits " << a[i];
  }
}

TEST_P(Gemm, MatchesF64Reference) {
  auto [dtype, path] = GetParam();
  ForcedGemmPath forced(path);
  std::mt19937 rng(3);
  const int64_t batch = 3, m = 17, n = 23, k = 300;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (int withBias = 0; withBias < 2; ++withBias) {
        Operand a = randomOperand(batch * m * k, dtype, rng);
        Operand b = randomOperand(batch * k * n, dtype, rng);
        Operand bias = randomOperand(n, dtype, rng);
        std::vector<float> c(batch * m * n, 12345.0f);
        auto t = static_cast<int64_t>(dtype);
        if (withBias)
          amp_cpu_gemm_bias(a.address(dtype), b.address(dtype),
                            bias.address(dtype),
                            reinterpret_cast<intptr_t>(c.data()), t, t, t,
                            batch, m, n, k, ta, tb);
        else
          amp_cpu_gemm(a.address(dtype), b.address(dtype),
                       reinterpret_cast<intptr_t>(c.data()), t, t, batch, m, n,
                       k, ta, tb);
        for (int64_t bi = 0; bi < batch; ++bi)
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = withBias ? bias.value[j] : 0.0;
              double magnitude = std::abs(sum);
              for (int64_t p = 0; p < k; ++p) {
                double x = a.value[bi * m * k + (ta ? p * m + i : i * k + p)];
                double y = b.value[bi * k * n + (tb ? j * k + p : p * n + j)];
                sum += x * y;
                magnitude += std::abs(x * y);
              }
              double got = c[(bi * m + i) * n + j];
              ASSERT_LE(std::abs(got - sum), 1e-5 * magnitude)
                  << "ta " << ta << " tb " << tb << " bias " << withBias
                  << " at " << bi << "," << i << "," << j;
            }
      }
}

// amp_cpu_gemm[_bias]_round: the f32 result (bias included) rounded once
// to an f16 or bf16 result, to nearest even, as compiled code rounds it.
// Two bf16 operands into a bf16 result on the oneDNN path are rounded by
// oneDNN as it writes, from sums in an order of its own: within one bf16
// ulp of the rounded f32 result there; bit for bit on every other path.
TEST_P(Gemm, RoundedResultIsTheF32ResultRoundedOnce) {
  auto [dtype, path] = GetParam();
  ForcedGemmPath forced(path);
  std::mt19937 rng(5);
  const int64_t batch = 2, m = 19, n = 21, k = 70;
  auto t = static_cast<int64_t>(dtype);
  for (RuntimeDType out : {RuntimeDType::F16, RuntimeDType::BF16})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (int withBias = 0; withBias < 2; ++withBias) {
          Operand a = randomOperand(batch * m * k, dtype, rng);
          Operand b = randomOperand(batch * k * n, dtype, rng);
          Operand bias = randomOperand(n, dtype, rng);
          std::vector<float> f32(batch * m * n);
          std::vector<uint16_t> got(batch * m * n, 0xFFFF);
          auto f32Out = reinterpret_cast<intptr_t>(f32.data()),
               gotOut = reinterpret_cast<intptr_t>(got.data());
          auto o = static_cast<int64_t>(out);
          if (withBias) {
            amp_cpu_gemm_bias(a.address(dtype), b.address(dtype),
                              bias.address(dtype), f32Out, t, t, t, batch, m, n,
                              k, ta, tb);
            amp_cpu_gemm_bias_round(a.address(dtype), b.address(dtype),
                                    bias.address(dtype), gotOut, t, t, t, o,
                                    batch, m, n, k, ta, tb);
          } else {
            amp_cpu_gemm(a.address(dtype), b.address(dtype), f32Out, t, t,
                         batch, m, n, k, ta, tb);
            amp_cpu_gemm_round(a.address(dtype), b.address(dtype), gotOut, t, t,
                               o, batch, m, n, k, ta, tb);
          }
          bool oneDnnRounds = dtype == RuntimeDType::BF16 &&
                              out == RuntimeDType::BF16 &&
                              path == GemmPath::OneDnn && dnnlNativeBf16();
          for (size_t i = 0; i < f32.size(); ++i) {
            uint16_t want = out == RuntimeDType::F16 ? floatToHalf(f32[i])
                                                     : floatToBFloat(f32[i]);
            if (oneDnnRounds) {
              float g = bfloatToFloat(got[i]), w = bfloatToFloat(want);
              ASSERT_LE(std::abs(g - w), std::abs(w) * 0x1p-7f)
                  << "element " << i << " ta " << ta << " tb " << tb << " bias "
                  << withBias;
            } else {
              ASSERT_EQ(got[i], want)
                  << "element " << i << " ta " << ta << " tb " << tb << " bias "
                  << withBias << " to "
                  << (out == RuntimeDType::F16 ? "f16" : "bf16");
            }
          }
        }
}

/// "bf16_onednn": the operands' type and the path of bf16 GEMMs (f32 and
/// f16 ones are OpenBLAS's either way).
std::string gemmTestName(
    const ::testing::TestParamInfo<Gemm::ParamType> &info) {
  const char *types[] = {"f32", "f16", "bf16"};
  return std::string(types[int(std::get<0>(info.param))]) +
         (std::get<1>(info.param) == GemmPath::OneDnn ? "_onednn"
                                                      : "_openblas");
}

INSTANTIATE_TEST_SUITE_P(
    DTypes, Gemm,
    ::testing::Values(std::make_tuple(RuntimeDType::F32, GemmPath::OpenBlas),
                      std::make_tuple(RuntimeDType::F16, GemmPath::OpenBlas),
                      std::make_tuple(RuntimeDType::BF16, GemmPath::OpenBlas),
                      std::make_tuple(RuntimeDType::BF16, GemmPath::OneDnn)),
    gemmTestName);

struct Geometry {
  int64_t n, c, h, w, f, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};

/// Sets the runtime's convolution path for one test and restores the rule.
struct ForcedConvPath {
  explicit ForcedConvPath(ConvPath path) { setConvPathOverride(path); }
  ~ForcedConvPath() { setConvPathOverride(std::nullopt); }
};

const char *pathName(ConvPath path) {
  return path == ConvPath::OneDnn ? "onednn" : "im2col";
}

class Conv : public ::testing::TestWithParam<
                 std::tuple<Geometry, RuntimeDType, ConvPath>> {};

TEST_P(Conv, ForwardAndGradientsMatchF64Sums) {
  auto [g, dtype, path] = GetParam();
  ForcedConvPath forced(path);
  int64_t oh = g.oh(), ow = g.ow();
  std::mt19937 rng(9);
  auto t = static_cast<int64_t>(dtype);
  Operand x = randomOperand(g.n * g.c * g.h * g.w, dtype, rng);
  Operand filter = randomOperand(g.f * g.c * g.kh * g.kw, dtype, rng);
  Operand dy = randomOperand(g.n * g.f * oh * ow, dtype, rng);
  std::vector<float> y(g.n * g.f * oh * ow), dx(x.value.size(), 7.0f),
      dfilter(filter.value.size(), 7.0f);
#define GEOMETRY                                                               \
  g.n, g.c, g.h, g.w, g.f, g.kh, g.kw, oh, ow, g.sh, g.sw, g.ph, g.pw, g.dh,   \
      g.dw
  amp_cpu_conv2d(x.address(dtype), filter.address(dtype),
                 reinterpret_cast<intptr_t>(y.data()), t, t, GEOMETRY);
  amp_cpu_conv2d_grad_input(dy.address(dtype), filter.address(dtype),
                            reinterpret_cast<intptr_t>(dx.data()), t, t,
                            GEOMETRY);
  amp_cpu_conv2d_grad_filter(dy.address(dtype), x.address(dtype),
                             reinterpret_cast<intptr_t>(dfilter.data()), t, t,
                             GEOMETRY);
#undef GEOMETRY
  // Direct sums in f64: every (image, filter, output pixel, channel, ki, kj)
  // term, added to y, to dx at the input pixel it reads, and to dfilter.
  std::vector<double> yRef(y.size()), dxRef(dx.size()), dfRef(dfilter.size()),
      yMag(y.size()), dxMag(dx.size()), dfMag(dfilter.size());
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t f = 0; f < g.f; ++f)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox)
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t ki = 0; ki < g.kh; ++ki)
              for (int64_t kj = 0; kj < g.kw; ++kj) {
                int64_t iy = oy * g.sh - g.ph + ki * g.dh;
                int64_t ix = ox * g.sw - g.pw + kj * g.dw;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w)
                  continue;
                int64_t xi = ((n * g.c + c) * g.h + iy) * g.w + ix;
                int64_t fi = ((f * g.c + c) * g.kh + ki) * g.kw + kj;
                int64_t yi = ((n * g.f + f) * oh + oy) * ow + ox;
                double wv = filter.value[fi], xv = x.value[xi],
                       gv = dy.value[yi];
                yRef[yi] += xv * wv, yMag[yi] += std::abs(xv * wv);
                dxRef[xi] += gv * wv, dxMag[xi] += std::abs(gv * wv);
                dfRef[fi] += gv * xv, dfMag[fi] += std::abs(gv * xv);
              }
  auto expectClose = [](const std::vector<float> &got,
                        const std::vector<double> &want,
                        const std::vector<double> &magnitude,
                        const char *what) {
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_LE(std::abs(got[i] - want[i]), 1e-5 * magnitude[i] + 1e-30)
          << what << " element " << i << ": " << got[i] << " vs " << want[i];
  };
  expectClose(y, yRef, yMag, "y");
  expectClose(dx, dxRef, dxMag, "dx");
  expectClose(dfilter, dfRef, dfMag, "dfilter");
}

/// "2_3_9_9_4_3_3_1_1_1_1_1_1_bf16_onednn": the geometry, the operands'
/// type and the path.
std::string convTestName(
    const ::testing::TestParamInfo<Conv::ParamType> &info) {
  const Geometry &g = std::get<0>(info.param);
  std::string name;
  for (int64_t v : {g.n, g.c, g.h, g.w, g.f, g.kh, g.kw, g.sh, g.sw, g.ph,
                    g.pw, g.dh, g.dw})
    name += std::to_string(v) + "_";
  const char *types[] = {"f32", "f16", "bf16"};
  return name + types[int(std::get<1>(info.param))] + "_" +
         pathName(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    Geometries, Conv,
    ::testing::Combine(::testing::Values(
        // n c h w f kh kw sh sw ph pw dh dw
        Geometry{2, 3, 9, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1},
        Geometry{3, 2, 11, 8, 5, 3, 2, 2, 3, 1, 0, 1, 1},
        Geometry{2, 3, 12, 12, 2, 3, 3, 1, 2, 2, 2, 2, 2},
        // "Same" convolutions, whose column rows are copied as one span
        // with the padding columns written apart: 5x5 non-square, and a
        // row stride of 2 that still makes 6 output columns of 3 input
        // columns two rows apart (the span reads every other input row).
        Geometry{2, 2, 4, 5, 3, 5, 5, 1, 1, 2, 2, 1, 1},
        Geometry{2, 2, 3, 3, 2, 2, 2, 2, 1, 2, 2, 1, 1},
        // 1x1, stride 2.
        Geometry{2, 4, 7, 6, 3, 1, 1, 2, 2, 0, 0, 1, 1},
        // A column matrix of 72 x 4096 floats per image: 3 images per GEMM,
        // so 5 images take a full chunk and a remainder.
        Geometry{5, 8, 64, 64, 3, 3, 3, 1, 1, 1, 1, 1, 1},
        // No right padding: h = 8, 3x3, stride 2, padding 0 gives 3 rows,
        // the last of which ends a row before the image's end (oneDNN's
        // right padding would be -1; the runtime takes the im2col path).
        Geometry{2, 3, 8, 8, 4, 3, 3, 2, 2, 0, 0, 1, 1},
        // The shapes where the rule takes im2col for some passes: small
        // images with many channels, a 3-channel input, a 1x1 image whose
        // 3x3 window reads only padding around the centre.
        Geometry{8, 256, 2, 2, 512, 3, 3, 1, 1, 1, 1, 1, 1},
        Geometry{8, 3, 32, 32, 64, 3, 3, 1, 1, 1, 1, 1, 1},
        Geometry{8, 512, 1, 1, 512, 3, 3, 1, 1, 1, 1, 1, 1}),
                       ::testing::Values(RuntimeDType::F32, RuntimeDType::F16,
                                         RuntimeDType::BF16),
                       ::testing::Values(ConvPath::Im2col, ConvPath::OneDnn)),
    convTestName);

// The measured rule: oneDNN for most shapes, im2col where oneDNN's blocked
// layouts lose (small images' filter gradients, few-channel inputs' f32
// input gradients); AMP_CPU_CONV's override wins over it.
TEST(ConvPathRule, ChoosesPerShapeAndTypes) {
  ConvGeometry wide{32, 64, 32, 32, 64, 3, 3, 32, 32, 1, 1, 1, 1, 1, 1};
  ConvGeometry small{32, 512, 2, 2, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  ConvGeometry rgb{32, 3, 32, 32, 64, 3, 3, 32, 32, 1, 1, 1, 1, 1, 1};
  for (ConvPass pass : {ConvPass::Forward, ConvPass::BackwardData,
                        ConvPass::BackwardWeights})
    for (bool bf16 : {false, true})
      EXPECT_EQ(chooseConvPath(pass, wide, bf16), ConvPath::OneDnn);
  EXPECT_EQ(chooseConvPath(ConvPass::BackwardWeights, small, false),
            ConvPath::Im2col);
  EXPECT_EQ(chooseConvPath(ConvPass::BackwardWeights, small, true),
            ConvPath::Im2col);
  EXPECT_EQ(chooseConvPath(ConvPass::Forward, small, true), ConvPath::OneDnn);
  EXPECT_EQ(chooseConvPath(ConvPass::BackwardData, rgb, false),
            ConvPath::Im2col);
  EXPECT_EQ(chooseConvPath(ConvPass::BackwardData, rgb, true),
            ConvPath::OneDnn);
  {
    ForcedConvPath forced(ConvPath::Im2col);
    EXPECT_EQ(chooseConvPath(ConvPass::Forward, wide, false),
              ConvPath::Im2col);
  }
  {
    ForcedConvPath forced(ConvPath::OneDnn);
    EXPECT_EQ(chooseConvPath(ConvPass::BackwardWeights, small, true),
              ConvPath::OneDnn);
  }
}

// A geometry oneDNN cannot express is declined without touching the output.
TEST(ConvPathRule, OneDnnDeclinesNegativeRightPadding) {
  ConvGeometry g{2, 3, 8, 8, 4, 3, 3, 3, 3, 2, 2, 0, 0, 1, 1};
  std::vector<float> x(2 * 3 * 64, 1.0f), w(4 * 3 * 9, 1.0f),
      y(2 * 4 * 9, 7.0f);
  EXPECT_FALSE(runDnnlConvolution(ConvPass::Forward, g, x.data(),
                                  RuntimeDType::F32, w.data(),
                                  RuntimeDType::F32, y.data()));
  for (float v : y)
    ASSERT_EQ(v, 7.0f);
}



/// A CPU with the features of one vendor and these extension levels.
CpuFeatures cpu(bool intel, bool avx, bool avx2, bool avx512,
                bool avx512bf16 = false) {
  CpuFeatures f;
  f.intel = intel;
  f.amd = !intel;
  f.avx = avx;
  f.avx2 = f.fma = f.f16c = avx2;
  f.avx512f = f.avx512cd = f.avx512dq = f.avx512bw = f.avx512vl = avx512;
  f.avx512bf16 = avx512bf16;
  return f;
}

TEST(Blas, ChoosesOpenBlasKernelsByTheCpusExtensions) {
  // Sapphire Rapids (AVX-512 BF16, which OpenBLAS 0.3.21 sends to its SSE3
  // kernels), Skylake-SP, Haswell, Sandy Bridge.
  EXPECT_STREQ(chooseOpenBlasCore(cpu(true, true, true, true, true)),
               "SkylakeX");
  EXPECT_STREQ(chooseOpenBlasCore(cpu(true, true, true, true)), "SkylakeX");
  EXPECT_STREQ(chooseOpenBlasCore(cpu(true, true, true, false)), "Haswell");
  EXPECT_STREQ(chooseOpenBlasCore(cpu(true, true, false, false)),
               "Sandybridge");
  // AVX-512F alone (Knights Landing) is not Skylake-SP's subset.
  CpuFeatures knl = cpu(true, true, true, false);
  knl.avx512f = knl.avx512cd = true;
  EXPECT_STREQ(chooseOpenBlasCore(knl), "Haswell");
  // No AVX, and AMD CPUs: OpenBLAS's own detection.
  EXPECT_EQ(chooseOpenBlasCore(cpu(true, false, false, false)), nullptr);
  EXPECT_EQ(chooseOpenBlasCore(cpu(false, true, true, true)), nullptr);
}

TEST(Blas, LoadsTheKernelsChosenForThisCpu) {
  const BlasLibrary &blas = getBlas();
  ASSERT_NE(blas.sgemm, nullptr);
  std::string core = blas.coreName();
  const char *user = std::getenv("OPENBLAS_CORETYPE");
  const char *chosen = chooseOpenBlasCore(getCpuFeatures());
  if (chosen && (!user || std::string(user) == chosen)) {
    EXPECT_EQ(core, chosen) << getCpuFeatures().describe();
  }
  // Whatever chose them, a CPU with AVX2 never runs the SSE3 kernels.
  if (getCpuFeatures().avx2) {
    EXPECT_NE(core, "Prescott") << getCpuFeatures().describe();
  }
  EXPECT_NE(describeBlas().find(core + " kernels"), std::string::npos);
}

// The counted heap: what it hands out is in use until freed, the peak is
// the most ever in use since a reset, and a reset starts from what is in
// use now.
TEST(CpuMemory, CountsTheBytesInUseAndThePeak) {
  uint64_t before = 0, peak = 0, now = 0;
  amp_cpu_memory_stats(&before, nullptr);
  void *big = amp_cpu_aligned_alloc(64, 1 << 20);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 64, 0u);
  // An odd size and a small alignment are rounded as aligned_alloc needs.
  void *odd = amp_cpu_aligned_alloc(4, 1001);
  void *small = amp_cpu_malloc(1000);
  ASSERT_NE(odd, nullptr);
  ASSERT_NE(small, nullptr);
  amp_cpu_memory_stats(&now, &peak);
  EXPECT_GE(now, before + (1 << 20) + 2000);
  EXPECT_LT(now, before + (1 << 20) + 2000 + 4096);
  EXPECT_GE(peak, now);
  amp_cpu_free(big);
  amp_cpu_memory_stats(&now, &peak);
  EXPECT_LT(now, before + 4096);
  EXPECT_GE(peak, before + (1 << 20));
  amp_cpu_memory_reset_peak();
  amp_cpu_memory_stats(&now, &peak);
  EXPECT_EQ(peak, now);
  amp_cpu_free(odd);
  amp_cpu_free(small);
  amp_cpu_free(nullptr);
  amp_cpu_memory_stats(&now, &peak);
  EXPECT_EQ(now, before);
}

// The runtime's scratch is counted: an f16 convolution widens its operands
// and builds column matrices, all freed when it returns.
TEST(CpuMemory, CountsTheRuntimesScratch) {
  std::mt19937 rng(5);
  RuntimeDType dtype = RuntimeDType::F16;
  auto t = static_cast<int64_t>(dtype);
  int64_t n = 4, c = 3, h = 8, w = 8, f = 5;
  Operand x = randomOperand(n * c * h * w, dtype, rng);
  Operand filter = randomOperand(f * c * 9, dtype, rng);
  std::vector<float> y(n * f * h * w);
  uint64_t before = 0, peak = 0, after = 0;
  amp_cpu_memory_reset_peak();
  amp_cpu_memory_stats(&before, nullptr);
  amp_cpu_conv2d(x.address(dtype), filter.address(dtype),
                 reinterpret_cast<intptr_t>(y.data()), t, t, n, c, h, w, f, 3,
                 3, h, w, 1, 1, 1, 1, 1, 1);
  amp_cpu_memory_stats(&after, &peak);
  EXPECT_EQ(after, before);
  // At least the widened input and filter (f32 copies).
  EXPECT_GE(peak - before, (x.value.size() + filter.value.size()) * 4);
}

// oneDNN's blocked copies of the operands and its scratchpad come from the
// counted heap too, and are freed when the call returns.
TEST(CpuMemory, CountsOneDnnsBuffers) {
  ForcedConvPath forced(ConvPath::OneDnn);
  std::mt19937 rng(6);
  int64_t n = 4, c = 32, h = 8, w = 8, f = 32;
  Operand x = randomOperand(n * c * h * w, RuntimeDType::F32, rng);
  Operand filter = randomOperand(f * c * 9, RuntimeDType::F32, rng);
  std::vector<float> y(n * f * h * w);
  uint64_t before = 0, peak = 0, after = 0;
  amp_cpu_memory_reset_peak();
  amp_cpu_memory_stats(&before, nullptr);
  amp_cpu_conv2d(x.address(RuntimeDType::F32),
                 filter.address(RuntimeDType::F32),
                 reinterpret_cast<intptr_t>(y.data()), 0, 0, n, c, h, w, f, 3,
                 3, h, w, 1, 1, 1, 1, 1, 1);
  amp_cpu_memory_stats(&after, &peak);
  EXPECT_EQ(after, before);
  // The input in oneDNN's blocked layout (32 channels: a multiple of its
  // blocks, so as large as the dense input) at least.
  EXPECT_GE(peak - before, x.value.size() * 4);
}

} // namespace
