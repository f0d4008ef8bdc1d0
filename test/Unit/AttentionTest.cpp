//===- AttentionTest.cpp - The CPU attention kernels vs references -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Calls amp_cpu_attention[_mask] and amp_cpu_attention_grad[_mask] directly
// and compares with an f64 attention on the same (already rounded) operand
// values: the output, the log-sum-exp and the three gradients, with causal
// masks (square and not), additive masks broadcast over batch and heads, a
// boolean-style mask (0 / -inf) that hides every key of some queries (zero
// rows, lse -inf, no NaN: PyTorch's convention), and lengths that are not
// multiples of the kernels' 64 x 128 blocks. f32 operands: the kernels'
// only error is f32 summation (tolerance 2e-5 of the values' scale); f16 and
// bf16: the probabilities and the scores' gradient are rounded to the
// operand type before their products, as on a Tensor Core (tolerance 4 ulp
// of the type at the values' scale). bf16 cases run twice: with the block
// products in bf16 through oneDNN (on a CPU that multiplies bf16 natively;
// elsewhere that run takes the widened path too) and widened to f32 for
// OpenBLAS (AMP_CPU_GEMM=openblas). The gradients are also checked against
// central differences of the kernel's own forward pass.
//
//===----------------------------------------------------------------------===//

#include "amp/Runtime/Attention.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/Dnnl.h"
#include "amp/Runtime/Float16.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace amp;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class MaskKind { None, Padding, Full, HiddenRows };

struct Case {
  std::string name;
  int64_t b0, b1; // leading dims [b0, b1]
  int64_t sq, sk, d, dv;
  bool causal;
  MaskKind mask;
  RuntimeDType dtype;
};

/// Rounds to the operand type (and back), so the reference sees exactly
/// what the kernel reads.
float roundTo(float x, RuntimeDType t) {
  if (t == RuntimeDType::F16)
    return halfToFloat(floatToHalf(x));
  if (t == RuntimeDType::BF16)
    return bfloatToFloat(floatToBFloat(x));
  return x;
}

/// Bytes of `values` in type `t` (already representable).
std::vector<uint16_t> pack16(const std::vector<float> &values,
                             RuntimeDType t) {
  std::vector<uint16_t> out(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = t == RuntimeDType::F16 ? floatToHalf(values[i])
                                    : floatToBFloat(values[i]);
  return out;
}

struct Buffer {
  std::vector<float> f;
  std::vector<uint16_t> h;
  Buffer(const std::vector<float> &values, RuntimeDType t) : f(values) {
    if (t != RuntimeDType::F32)
      h = pack16(values, t);
  }
  intptr_t address() const {
    return h.empty() ? intptr_t(f.data()) : intptr_t(h.data());
  }
};

/// The mask of a case, [b0, 1, Sq, Sk] for Full/HiddenRows (shared by the
/// heads), [b0, 1, 1, Sk] for Padding; with its strides over
/// [1, 1, b0, b1, Sq, Sk] as the lowering passes them.
struct Mask {
  std::vector<float> values;
  int64_t strides[6] = {0, 0, 0, 0, 0, 0};
  double at(const Case &c, int64_t n, int64_t i, int64_t j) const {
    if (values.empty())
      return 0.0;
    int64_t b = n / c.b1;
    return values[b * strides[2] + i * strides[4] + j * strides[5]];
  }
};

Mask makeMask(const Case &c, std::mt19937 &rng) {
  Mask m;
  std::uniform_real_distribution<float> bias(-2.0f, 2.0f);
  float negInf = -std::numeric_limits<float>::infinity();
  switch (c.mask) {
  case MaskKind::None:
    break;
  case MaskKind::Padding:
    // Each batch entry hides its last b + 1 keys.
    m.values.assign(c.b0 * c.sk, 0.0f);
    for (int64_t b = 0; b < c.b0; ++b)
      for (int64_t j = c.sk - 1 - b; j < c.sk; ++j)
        m.values[b * c.sk + j] = negInf;
    m.strides[2] = c.sk;
    m.strides[5] = 1;
    break;
  case MaskKind::Full:
  case MaskKind::HiddenRows:
    m.values.resize(c.b0 * c.sq * c.sk);
    for (float &x : m.values)
      x = roundTo(bias(rng), c.dtype);
    if (c.mask == MaskKind::HiddenRows)
      for (int64_t b = 0; b < c.b0; ++b)
        for (int64_t i = 1; i < c.sq; i += 7) // every key of query i hidden
          for (int64_t j = 0; j < c.sk; ++j)
            m.values[(b * c.sq + i) * c.sk + j] = negInf;
    m.strides[2] = c.sq * c.sk;
    m.strides[4] = c.sk;
    m.strides[5] = 1;
    break;
  }
  return m;
}

struct Result {
  std::vector<double> out, lse, dq, dk, dv;
};

/// f64 attention and its gradients, by the definitions.
Result reference(const Case &c, const std::vector<float> &q,
                 const std::vector<float> &k, const std::vector<float> &v,
                 const std::vector<float> &dout, const Mask &mask,
                 double scale) {
  int64_t batch = c.b0 * c.b1;
  Result r;
  r.out.assign(batch * c.sq * c.dv, 0.0);
  r.lse.assign(batch * c.sq, -kInf);
  r.dq.assign(batch * c.sq * c.d, 0.0);
  r.dk.assign(batch * c.sk * c.d, 0.0);
  r.dv.assign(batch * c.sk * c.dv, 0.0);
  std::vector<double> p(c.sk), dp(c.sk);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < c.sq; ++i) {
      double m = -kInf;
      for (int64_t j = 0; j < c.sk; ++j) {
        double s = 0.0;
        for (int64_t e = 0; e < c.d; ++e)
          s += double(q[(n * c.sq + i) * c.d + e]) * k[(n * c.sk + j) * c.d + e];
        s = s * scale + mask.at(c, n, i, j);
        if (c.causal && j > i)
          s = -kInf;
        p[j] = s;
        m = std::max(m, s);
      }
      if (m == -kInf)
        continue; // a hidden row: zeros, lse -inf, no gradient
      double sum = 0.0;
      for (int64_t j = 0; j < c.sk; ++j)
        sum += (p[j] = std::exp(p[j] - m));
      r.lse[n * c.sq + i] = m + std::log(sum);
      for (int64_t j = 0; j < c.sk; ++j)
        p[j] /= sum;
      double delta = 0.0;
      for (int64_t e = 0; e < c.dv; ++e) {
        double o = 0.0;
        for (int64_t j = 0; j < c.sk; ++j)
          o += p[j] * v[(n * c.sk + j) * c.dv + e];
        r.out[(n * c.sq + i) * c.dv + e] = o;
        delta += o * dout[(n * c.sq + i) * c.dv + e];
      }
      for (int64_t j = 0; j < c.sk; ++j) {
        double g = 0.0;
        for (int64_t e = 0; e < c.dv; ++e) {
          g += double(dout[(n * c.sq + i) * c.dv + e]) * v[(n * c.sk + j) * c.dv + e];
          r.dv[(n * c.sk + j) * c.dv + e] +=
              p[j] * dout[(n * c.sq + i) * c.dv + e];
        }
        double ds = p[j] * (g - delta) * scale;
        for (int64_t e = 0; e < c.d; ++e) {
          r.dq[(n * c.sq + i) * c.d + e] += ds * k[(n * c.sk + j) * c.d + e];
          r.dk[(n * c.sk + j) * c.d + e] += ds * q[(n * c.sq + i) * c.d + e];
        }
      }
    }
  return r;
}

struct Kernel {
  std::vector<float> out, lse, dq, dk, dv;
};

int64_t scaleBits(double scale) {
  int64_t bits;
  std::memcpy(&bits, &scale, sizeof(bits));
  return bits;
}

/// The runtime's forward pass alone (for finite differences).
void runForward(const Case &c, const Buffer &q, const Buffer &k,
                const Buffer &v, const Mask &mask, double scale,
                std::vector<float> &out, std::vector<float> &lse) {
  int64_t batch = c.b0 * c.b1;
  out.assign(batch * c.sq * c.dv, NAN);
  lse.assign(batch * c.sq, NAN);
  int64_t dtype = int64_t(c.dtype);
  if (mask.values.empty())
    amp_cpu_attention(q.address(), k.address(), v.address(),
                      intptr_t(out.data()), intptr_t(lse.data()), dtype, 1, 1,
                      c.b0, c.b1, c.sq, c.sk, c.d, c.dv, c.causal,
                      scaleBits(scale));
  else
    amp_cpu_attention_mask(
        q.address(), k.address(), v.address(), intptr_t(mask.values.data()),
        intptr_t(out.data()), intptr_t(lse.data()), dtype, 1, 1, c.b0, c.b1,
        c.sq, c.sk, c.d, c.dv, c.causal, scaleBits(scale),
        int64_t(RuntimeDType::F32), mask.strides[0], mask.strides[1],
        mask.strides[2], mask.strides[3], mask.strides[4], mask.strides[5]);
}

/// The runtime's forward and backward passes; the backward pass reads the
/// output rounded to the operand type, as the compiled step hands it over.
Kernel runKernel(const Case &c, const Buffer &q, const Buffer &k,
                 const Buffer &v, const Buffer &dout, const Mask &mask,
                 double scale) {
  int64_t batch = c.b0 * c.b1;
  Kernel r;
  runForward(c, q, k, v, mask, scale, r.out, r.lse);
  std::vector<float> rounded(r.out.size());
  for (size_t i = 0; i < rounded.size(); ++i)
    rounded[i] = roundTo(r.out[i], c.dtype);
  Buffer o(rounded, c.dtype);
  r.dq.assign(batch * c.sq * c.d, NAN);
  r.dk.assign(batch * c.sk * c.d, NAN);
  r.dv.assign(batch * c.sk * c.dv, NAN);
  int64_t dtype = int64_t(c.dtype);
  if (mask.values.empty())
    amp_cpu_attention_grad(dout.address(), q.address(), k.address(),
                           v.address(), o.address(), intptr_t(r.lse.data()),
                           intptr_t(r.dq.data()), intptr_t(r.dk.data()),
                           intptr_t(r.dv.data()), dtype, 1, 1, c.b0, c.b1,
                           c.sq, c.sk, c.d, c.dv, c.causal, scaleBits(scale));
  else
    amp_cpu_attention_grad_mask(
        dout.address(), q.address(), k.address(), v.address(), o.address(),
        intptr_t(r.lse.data()), intptr_t(mask.values.data()),
        intptr_t(r.dq.data()), intptr_t(r.dk.data()), intptr_t(r.dv.data()),
        dtype, 1, 1, c.b0, c.b1, c.sq, c.sk, c.d, c.dv, c.causal,
        scaleBits(scale), int64_t(RuntimeDType::F32), mask.strides[0],
        mask.strides[1], mask.strides[2], mask.strides[3], mask.strides[4],
        mask.strides[5]);
  return r;
}

std::vector<float> randomValues(int64_t count, RuntimeDType t,
                                std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (float &x : values)
    x = roundTo(normal(rng), t);
  return values;
}

/// |got - want| <= tol * scale for each element; -inf where want is -inf.
void expectClose(const std::vector<float> &got, const std::vector<double> &want,
                 double tol, double scale, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    if (std::isinf(want[i])) {
      if (!(std::isinf(got[i]) && got[i] < 0)) {
        ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", want -inf";
        ++bad;
      }
      continue;
    }
    if (!(std::fabs(got[i] - want[i]) <= tol * scale)) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", want "
                    << want[i] << " (tolerance " << tol * scale << ")";
      ++bad;
    }
  }
}

double maxAbs(const std::vector<double> &x) {
  double m = 0.0;
  for (double v : x)
    if (std::isfinite(v))
      m = std::max(m, std::fabs(v));
  return std::max(m, 1e-30);
}

class AttentionKernel : public ::testing::TestWithParam<Case> {};

void checkAgainstReference(const Case &c) {
  std::mt19937 rng(1234);
  int64_t batch = c.b0 * c.b1;
  auto q = randomValues(batch * c.sq * c.d, c.dtype, rng);
  auto k = randomValues(batch * c.sk * c.d, c.dtype, rng);
  auto v = randomValues(batch * c.sk * c.dv, c.dtype, rng);
  auto dout = randomValues(batch * c.sq * c.dv, c.dtype, rng);
  Mask mask = makeMask(c, rng);
  double scale = 1.0 / std::sqrt(double(c.d));
  Result want = reference(c, q, k, v, dout, mask, scale);
  Kernel got = runKernel(c, Buffer(q, c.dtype), Buffer(k, c.dtype),
                         Buffer(v, c.dtype), Buffer(dout, c.dtype), mask,
                         scale);
  // The 16-bit paths round P and dS (relative error 2^-11 resp. 2^-8) and
  // the backward pass reads the rounded output.
  double tol = c.dtype == RuntimeDType::F32   ? 2e-5
               : c.dtype == RuntimeDType::F16 ? 4.0 * 0x1p-11
                                              : 4.0 * 0x1p-8;
  expectClose(got.out, want.out, tol, maxAbs(want.out), "out");
  expectClose(got.lse, want.lse, tol, maxAbs(want.lse), "lse");
  expectClose(got.dq, want.dq, 2 * tol, maxAbs(want.dq), "dq");
  expectClose(got.dk, want.dk, 2 * tol, maxAbs(want.dk), "dk");
  expectClose(got.dv, want.dv, 2 * tol, maxAbs(want.dv), "dv");
  for (const auto *x : {&got.out, &got.dq, &got.dk, &got.dv})
    for (float f : *x)
      ASSERT_TRUE(std::isfinite(f)) << "a NaN or inf in a result";
}

/// Restores the GEMM path's rule when it goes out of scope.
struct GemmPathOverride {
  explicit GemmPathOverride(GemmPath path) { setGemmPathOverride(path); }
  ~GemmPathOverride() { setGemmPathOverride(std::nullopt); }
};

TEST_P(AttentionKernel, MatchesF64Reference) {
  checkAgainstReference(GetParam());
}

/// The bf16 cases with their operands widened for OpenBLAS, where the test
/// above multiplies them as bf16 through oneDNN on a CPU that can.
class AttentionKernelWidened : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionKernelWidened, MatchesF64Reference) {
  GemmPathOverride widened(GemmPath::OpenBlas);
  checkAgainstReference(GetParam());
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  return info.param.name;
}

const std::vector<Case> kCases = {
    Case{"Plain", 2, 3, 37, 53, 16, 8, false, MaskKind::None,
         RuntimeDType::F32},
    // Several 64 x 128 blocks and their remainders.
    Case{"Blocks", 1, 2, 150, 300, 32, 32, false, MaskKind::None,
         RuntimeDType::F32},
    Case{"CausalSquare", 2, 2, 200, 200, 16, 16, true, MaskKind::None,
         RuntimeDType::F32},
    Case{"CausalMoreKeys", 1, 2, 70, 190, 8, 8, true, MaskKind::None,
         RuntimeDType::F32},
    Case{"CausalMoreQueries", 1, 2, 190, 70, 8, 8, true, MaskKind::None,
         RuntimeDType::F32},
    Case{"Padding", 3, 2, 65, 129, 16, 16, false, MaskKind::Padding,
         RuntimeDType::F32},
    Case{"FullMaskCausal", 2, 2, 90, 90, 16, 24, true, MaskKind::Full,
         RuntimeDType::F32},
    Case{"HiddenRows", 2, 2, 40, 150, 16, 16, false, MaskKind::HiddenRows,
         RuntimeDType::F32},
    Case{"HiddenRowsF16", 2, 2, 40, 150, 16, 16, false, MaskKind::HiddenRows,
         RuntimeDType::F16},
    Case{"CausalBF16", 2, 3, 130, 130, 32, 32, true, MaskKind::None,
         RuntimeDType::BF16},
    Case{"PaddingBF16", 2, 2, 64, 128, 64, 64, false, MaskKind::Padding,
         RuntimeDType::BF16},
    Case{"BlocksBF16", 1, 2, 150, 300, 40, 24, false, MaskKind::None,
         RuntimeDType::BF16},
    Case{"CausalMoreKeysBF16", 1, 2, 70, 190, 8, 8, true, MaskKind::None,
         RuntimeDType::BF16},
    Case{"FullMaskCausalBF16", 2, 2, 90, 90, 16, 24, true, MaskKind::Full,
         RuntimeDType::BF16},
    Case{"HiddenRowsBF16", 2, 2, 40, 150, 16, 16, false, MaskKind::HiddenRows,
         RuntimeDType::BF16}};

std::vector<Case> bf16Cases() {
  std::vector<Case> cases;
  for (const Case &c : kCases)
    if (c.dtype == RuntimeDType::BF16)
      cases.push_back(c);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionKernel, ::testing::ValuesIn(kCases),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Cases, AttentionKernelWidened,
                         ::testing::ValuesIn(bf16Cases()), caseName);

/// The kernels' gradients against central differences of their own forward
/// pass (f32): loss = sum(dout * out).
TEST(AttentionKernelTest, GradientsMatchFiniteDifferences) {
  Case c{"fd", 1, 2, 9, 11, 4, 3, true, MaskKind::Padding, RuntimeDType::F32};
  std::mt19937 rng(7);
  auto q = randomValues(2 * c.sq * c.d, c.dtype, rng);
  auto k = randomValues(2 * c.sk * c.d, c.dtype, rng);
  auto v = randomValues(2 * c.sk * c.dv, c.dtype, rng);
  auto dout = randomValues(2 * c.sq * c.dv, c.dtype, rng);
  Mask mask = makeMask(c, rng);
  double scale = 0.7;
  Kernel got = runKernel(c, Buffer(q, c.dtype), Buffer(k, c.dtype),
                         Buffer(v, c.dtype), Buffer(dout, c.dtype), mask,
                         scale);
  auto loss = [&](const std::vector<float> &qq, const std::vector<float> &kk,
                  const std::vector<float> &vv) {
    std::vector<float> out, lse;
    runForward(c, Buffer(qq, c.dtype), Buffer(kk, c.dtype), Buffer(vv, c.dtype),
               mask, scale, out, lse);
    double sum = 0.0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += double(out[i]) * dout[i];
    return sum;
  };
  const float h = 1e-2f;
  auto check = [&](std::vector<float> &x, const std::vector<float> &grad,
                   const char *what, auto evaluate) {
    for (size_t i = 0; i < x.size(); ++i) {
      float saved = x[i];
      x[i] = saved + h;
      double up = evaluate();
      x[i] = saved - h;
      double down = evaluate();
      x[i] = saved;
      double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(grad[i], fd, 2e-3 * std::max(1.0, std::fabs(fd)))
          << what << "[" << i << "]";
    }
  };
  check(q, got.dq, "dq", [&] { return loss(q, k, v); });
  check(k, got.dk, "dk", [&] { return loss(q, k, v); });
  check(v, got.dv, "dv", [&] { return loss(q, k, v); });
}

} // namespace
