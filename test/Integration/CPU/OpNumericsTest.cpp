//===- OpNumericsTest.cpp - JIT-compiled train ops vs f64 references ------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Every forward op is compiled with amp-lower-cpu, run through the JIT on
// seeded random inputs and compared with an f64 reference (Reference.cpp)
// computed from the same (already rounded) inputs. Tolerances, |got - ref| <=
// rtol * |ref| + atol:
//   f32 results:  rtol 1e-5, atol 1e-6 (1e-5 for sums over >= 32 terms)
//   f16 results:  rtol 2^-10 (one f16 ulp; rounding costs half), atol 1e-4
//   bf16 results: rtol 2^-7 (one bf16 ulp), atol 1e-3
// Data movement (reshape, transpose, broadcast, concat) and casts are exact.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"
#include "TestContext.h"

#include "amp/Execution/CpuJit.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

using namespace amp;
using namespace mlir;
using ref::Shape;
using ref::Values;

namespace {

struct Tolerance {
  double rtol, atol;
};

/// The tolerance for results stored as `kind` (see the file comment).
Tolerance toleranceFor(ElementKind kind, bool longSum = false) {
  switch (kind) {
  case ElementKind::F16:
    return {std::ldexp(1.0, -10), 1e-4};
  case ElementKind::BF16:
    return {std::ldexp(1.0, -7), 1e-3};
  default:
    return {1e-5, longSum ? 1e-5 : 1e-6};
  }
}

/// "tensor<2x3xf16>".
std::string ty(ElementKind kind, const Shape &shape) {
  std::ostringstream os;
  os << "tensor<";
  for (int64_t d : shape)
    os << d << 'x';
  os << elementName(kind).str() << '>';
  return os.str();
}

/// Uniform random values in [lo, hi), rounded to `kind`.
HostTensor randomTensor(ElementKind kind, const Shape &shape, std::mt19937 &rng,
                        float lo = -2.0f, float hi = 2.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(ref::numElements(shape));
  for (float &v : values)
    v = dist(rng);
  return HostTensor::fromFloats(kind, shape, values);
}

/// The elements of `t` as f64.
Values valuesOf(const HostTensor &t) {
  Values v(t.getNumElements());
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    v[i] = t.getAsDouble(i);
  return v;
}

/// Expects every element of `got` within `tol` of `expected`.
void expectClose(const HostTensor &got, const Values &expected, Tolerance tol,
                 const std::string &what) {
  ASSERT_EQ(got.getNumElements(), int64_t(expected.size())) << what;
  int failures = 0;
  double worst = 0;
  for (int64_t i = 0; i < got.getNumElements(); ++i) {
    double g = got.getAsDouble(i), e = expected[i];
    double err = std::fabs(g - e);
    bool ok = (std::isnan(e) && std::isnan(g)) || (std::isinf(e) && g == e) ||
              err <= tol.rtol * std::fabs(e) + tol.atol;
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    if (!ok && ++failures <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << g
                    << ", reference " << e << " (error " << err << ")";
  }
  EXPECT_EQ(failures, 0) << what << ": worst error " << worst;
}

class OpNumerics : public ::testing::TestWithParam<ElementKind> {
protected:
  /// Compiles @f of `source` and runs it on `inputs`.
  std::vector<HostTensor> run(const std::string &source,
                              const std::vector<const HostTensor *> &inputs,
                              const CpuCompileOptions &options = {}) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    if (!module) {
      ADD_FAILURE() << "does not parse:\n" << source;
      return {};
    }
    auto fn = CpuFunction::compile(*module, "f", options);
    if (!fn) {
      ADD_FAILURE() << llvm::toString(fn.takeError());
      return {};
    }
    auto outputs = (*fn)->call(inputs);
    if (!outputs) {
      ADD_FAILURE() << llvm::toString(outputs.takeError());
      return {};
    }
    return std::move(*outputs);
  }

  /// A one-op function `%r = <op> <operands> : <types>` of the given types.
  static std::string oneOp(const std::vector<std::string> &argTypes,
                           const std::string &resultType,
                           const std::string &opText) {
    std::ostringstream os;
    os << "func.func @f(";
    for (size_t i = 0; i < argTypes.size(); ++i)
      os << (i ? ", " : "") << "%a" << i << ": " << argTypes[i];
    os << ") -> " << resultType << " {\n  %r = " << opText
       << "\n  return %r : " << resultType << "\n}\n";
    return os.str();
  }

  test::TestContext context;
  std::mt19937 rng{20261121};
};

/// The three float kinds.
const ElementKind kFloatKinds[] = {ElementKind::F32, ElementKind::F16,
                                   ElementKind::BF16};

std::string kindName(const ::testing::TestParamInfo<ElementKind> &info) {
  return elementName(info.param).str();
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

TEST_P(OpNumerics, Unary) {
  ElementKind k = GetParam();
  Shape s = {7, 33};
  struct Case {
    const char *op;
    double (*fn)(double);
    float lo, hi;
  };
  const Case cases[] = {
      {"train.relu", [](double x) { return std::max(x, 0.0); }, -2, 2},
      {"train.tanh", [](double x) { return std::tanh(x); }, -3, 3},
      {"train.sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, -8, 8},
      {"train.exp", [](double x) { return std::exp(x); }, -4, 4},
      {"train.log", [](double x) { return std::log(x); }, 0.01f, 10},
      {"train.gelu",
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       -4, 4},
  };
  for (const Case &c : cases) {
    HostTensor x = randomTensor(k, s, rng, c.lo, c.hi);
    auto out = run(
        oneOp({ty(k, s)}, ty(k, s), std::string(c.op) + " %a0 : " + ty(k, s)),
        {&x});
    ASSERT_EQ(out.size(), 1u) << c.op;
    Values expected = valuesOf(x);
    for (double &v : expected)
      v = c.fn(v);
    expectClose(out[0], expected, toleranceFor(k), c.op);
  }
}

TEST_P(OpNumerics, GeluTanh) {
  ElementKind k = GetParam();
  Shape s = {5, 40};
  HostTensor x = randomTensor(k, s, rng, -5, 5);
  auto out = run(oneOp({ty(k, s)}, ty(k, s),
                       "train.gelu %a0 approximate tanh : " + ty(k, s)),
                 {&x});
  ASSERT_EQ(out.size(), 1u);
  Values expected = valuesOf(x);
  for (double &v : expected)
    v = 0.5 * v *
        (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  expectClose(out[0], expected, toleranceFor(k), "gelu tanh");
}

TEST_P(OpNumerics, BinaryBroadcast) {
  ElementKind k = GetParam();
  Shape as = {3, 1, 5}, bs = {4, 1}, rs = {3, 4, 5};
  for (char op : {'+', '-', '*', '/'}) {
    const char *name = op == '+'   ? "train.add"
                       : op == '-' ? "train.sub"
                       : op == '*' ? "train.mul"
                                   : "train.div";
    HostTensor a = randomTensor(k, as, rng);
    HostTensor b = randomTensor(k, bs, rng, 0.5f, 2.0f);
    auto out = run(oneOp({ty(k, as), ty(k, bs)}, ty(k, rs),
                         std::string(name) + " %a0, %a1 : " + ty(k, as) + ", " +
                             ty(k, bs) + " -> " + ty(k, rs)),
                   {&a, &b});
    ASSERT_EQ(out.size(), 1u) << name;
    expectClose(out[0],
                ref::broadcastBinary(valuesOf(a), as, valuesOf(b), bs, rs, op),
                toleranceFor(k), name);
  }
}

//===----------------------------------------------------------------------===//
// Contractions and windows
//===----------------------------------------------------------------------===//

TEST_P(OpNumerics, MatmulAllTransposes) {
  ElementKind k = GetParam();
  int64_t m = 17, n = 9, kk = 33;
  for (int flags = 0; flags < 4; ++flags) {
    bool ta = flags & 1, tb = flags & 2;
    Shape as = ta ? Shape{kk, m} : Shape{m, kk};
    Shape bs = tb ? Shape{n, kk} : Shape{kk, n};
    HostTensor a = randomTensor(k, as, rng, -1, 1);
    HostTensor b = randomTensor(k, bs, rng, -1, 1);
    std::string attrs =
        std::string(ta ? " transpose_lhs" : "") + (tb ? " transpose_rhs" : "");
    auto out = run(oneOp({ty(k, as), ty(k, bs)}, ty(k, {m, n}),
                         "train.matmul %a0, %a1" + attrs + " : " + ty(k, as) +
                             ", " + ty(k, bs) + " -> " + ty(k, {m, n})),
                   {&a, &b});
    ASSERT_EQ(out.size(), 1u);
    expectClose(out[0],
                ref::matmul(valuesOf(a), valuesOf(b), 0, m, n, kk, ta, tb),
                toleranceFor(k, true), "matmul" + attrs);
  }
}

TEST_P(OpNumerics, MatmulWithBias) {
  ElementKind k = GetParam();
  int64_t m = 12, n = 7, kk = 40;
  HostTensor a = randomTensor(k, {m, kk}, rng, -1, 1);
  HostTensor b = randomTensor(k, {kk, n}, rng, -1, 1);
  HostTensor bias = randomTensor(k, {n}, rng, -3, 3);
  auto out = run(
      oneOp({ty(k, {m, kk}), ty(k, {kk, n}), ty(k, {n})}, ty(k, {m, n}),
            "train.matmul %a0, %a1, %a2 : " + ty(k, {m, kk}) + ", " +
                ty(k, {kk, n}) + ", " + ty(k, {n}) + " -> " + ty(k, {m, n})),
      {&a, &b, &bias});
  ASSERT_EQ(out.size(), 1u);
  Values expected =
      ref::matmul(valuesOf(a), valuesOf(b), 0, m, n, kk, false, false);
  Values bv = valuesOf(bias);
  for (int64_t i = 0; i < m * n; ++i)
    expected[i] += bv[i % n];
  expectClose(out[0], expected, toleranceFor(k, true), "matmul + bias");
}

TEST_P(OpNumerics, BatchMatmul) {
  ElementKind k = GetParam();
  Shape as = {3, 8, 16}, bs = {3, 5, 16}, rs = {3, 8, 5};
  HostTensor a = randomTensor(k, as, rng, -1, 1);
  HostTensor b = randomTensor(k, bs, rng, -1, 1);
  auto out =
      run(oneOp({ty(k, as), ty(k, bs)}, ty(k, rs),
                "train.batch_matmul %a0, %a1 transpose_rhs : " + ty(k, as) +
                    ", " + ty(k, bs) + " -> " + ty(k, rs)),
          {&a, &b});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0],
              ref::matmul(valuesOf(a), valuesOf(b), 3, 8, 5, 16, false, true),
              toleranceFor(k), "batch_matmul");
}

TEST_P(OpNumerics, Conv2d) {
  ElementKind k = GetParam();
  struct Case {
    Shape x, w, strides, padding, dilation;
  };
  const Case cases[] = {
      {{2, 3, 9, 8}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}},
      {{2, 3, 9, 8}, {4, 3, 3, 2}, {2, 3}, {1, 0}, {1, 1}},
      {{1, 2, 10, 10}, {3, 2, 3, 3}, {1, 2}, {2, 2}, {2, 2}},
  };
  for (const Case &c : cases) {
    HostTensor x = randomTensor(k, c.x, rng, -1, 1);
    HostTensor w = randomTensor(k, c.w, rng, -1, 1);
    Shape os;
    Values expected = ref::conv2d(valuesOf(x), c.x, valuesOf(w), c.w, c.strides,
                                  c.padding, c.dilation, os);
    auto attr = [](const Shape &v) {
      return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
    };
    std::string op = "train.conv2d %a0, %a1 strides " + attr(c.strides) +
                     " padding " + attr(c.padding) + " dilation " +
                     attr(c.dilation) + " : " + ty(k, c.x) + ", " + ty(k, c.w) +
                     " -> " + ty(k, os);
    auto out = run(oneOp({ty(k, c.x), ty(k, c.w)}, ty(k, os), op), {&x, &w});
    ASSERT_EQ(out.size(), 1u) << op;
    expectClose(out[0], expected, toleranceFor(k), op);
  }
}

TEST_P(OpNumerics, Pooling) {
  ElementKind k = GetParam();
  Shape xs = {2, 3, 9, 7};
  for (bool isMax : {true, false}) {
    HostTensor x = randomTensor(k, xs, rng);
    Shape os;
    Values expected =
        ref::pool2d(valuesOf(x), xs, {3, 3}, {2, 2}, {1, 1}, isMax, os);
    std::string op =
        std::string(isMax ? "train.max_pool2d" : "train.avg_pool2d") +
        " %a0 kernel [3, 3] strides [2, 2] padding [1, 1] : " + ty(k, xs) +
        " -> " + ty(k, os);
    auto out = run(oneOp({ty(k, xs)}, ty(k, os), op), {&x});
    ASSERT_EQ(out.size(), 1u) << op;
    expectClose(out[0], expected, toleranceFor(k), op);
  }
}

//===----------------------------------------------------------------------===//
// Softmax, normalization, reductions, losses
//===----------------------------------------------------------------------===//

TEST_P(OpNumerics, SoftmaxLargeLogits) {
  ElementKind k = GetParam();
  // Logits far beyond ln(65504) = 11.09: a softmax that did not subtract the
  // maximum would overflow in f16 and in f32 (exp(100) > 3.4e38 only in f64
  // ... and exp(89) already overflows f32).
  Shape s = {4, 37};
  HostTensor x = randomTensor(k, s, rng, 60, 100);
  for (bool logForm : {false, true}) {
    std::string op =
        std::string(logForm ? "train.log_softmax" : "train.softmax") +
        " %a0 axis 1 : " + ty(k, s);
    auto out = run(oneOp({ty(k, s)}, ty(k, s), op), {&x});
    ASSERT_EQ(out.size(), 1u) << op;
    Tolerance tol = toleranceFor(k);
    if (logForm && k == ElementKind::F32)
      tol.atol = 1e-5; // x - max - log(sum): terms near 100 cancel
    expectClose(out[0], ref::softmax(valuesOf(x), s, 1, logForm, false), tol,
                op);
  }
}

TEST_P(OpNumerics, SoftmaxInnerAxisAndCausal) {
  ElementKind k = GetParam();
  Shape s = {3, 6, 5};
  HostTensor x = randomTensor(k, s, rng, -3, 3);
  auto out =
      run(oneOp({ty(k, s)}, ty(k, s), "train.softmax %a0 axis 1 : " + ty(k, s)),
          {&x});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], ref::softmax(valuesOf(x), s, 1, false, false),
              toleranceFor(k), "softmax axis 1 of 3");

  Shape c = {2, 6, 6};
  HostTensor y = randomTensor(k, c, rng, -3, 3);
  out = run(oneOp({ty(k, c)}, ty(k, c),
                  "train.softmax %a0 axis 2 causal : " + ty(k, c)),
            {&y});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], ref::softmax(valuesOf(y), c, 2, false, true),
              toleranceFor(k), "causal softmax");
}

TEST_P(OpNumerics, LayerNorm) {
  ElementKind k = GetParam();
  Shape xs = {6, 4, 32};
  for (Shape ns : {Shape{32}, Shape{4, 32}}) {
    // An offset mean stresses the two-pass variance.
    HostTensor x = randomTensor(k, xs, rng, 30, 34);
    HostTensor g = randomTensor(k, ns, rng, 0.5, 1.5);
    HostTensor b = randomTensor(k, ns, rng, -1, 1);
    std::string op =
        "train.layer_norm %a0, %a1, %a2 : " + ty(k, xs) + ", " + ty(k, ns);
    auto out = run(oneOp({ty(k, xs), ty(k, ns), ty(k, ns)}, ty(k, xs), op),
                   {&x, &g, &b});
    ASSERT_EQ(out.size(), 1u) << op;
    Tolerance tol = toleranceFor(k, true);
    tol.atol *=
        10; // (x - mean) of values near 32 loses f32 bits to cancellation
    expectClose(out[0],
                ref::layerNorm(valuesOf(x), ref::numElements(ns), valuesOf(g),
                               valuesOf(b), 1e-5),
                tol, op);
  }
}

TEST_P(OpNumerics, BatchNormMixedPrecision) {
  ElementKind k = GetParam();
  // Activations of kind k, parameters and statistics f32 (autocast's layout).
  Shape xs = {8, 3, 5, 5}, cs = {3};
  ElementKind f32 = ElementKind::F32;
  HostTensor x = randomTensor(k, xs, rng, -1, 3);
  HostTensor g = randomTensor(f32, cs, rng, 0.5, 1.5);
  HostTensor b = randomTensor(f32, cs, rng, -1, 1);
  HostTensor m = randomTensor(f32, cs, rng, -0.1f, 0.1f);
  HostTensor v = randomTensor(f32, cs, rng, 0.9f, 1.1f);
  std::string src =
      "func.func @f(%x: " + ty(k, xs) + ", %g: " + ty(f32, cs) +
      ", %b: " + ty(f32, cs) + ", %m: " + ty(f32, cs) + ", %v: " + ty(f32, cs) +
      ") -> (" + ty(k, xs) + ", " + ty(f32, cs) + ", " + ty(f32, cs) + ") {\n" +
      "  %y, %nm, %nv = train.batch_norm %x, %g, %b, %m, %v momentum 0.2 : " +
      ty(k, xs) + ", " + ty(f32, cs) +
      "\n  return %y, %nm, %nv : " + ty(k, xs) + ", " + ty(f32, cs) + ", " +
      ty(f32, cs) + "\n}\n";
  auto out = run(src, {&x, &g, &b, &m, &v});
  ASSERT_EQ(out.size(), 3u);
  Values rm = valuesOf(m), rv = valuesOf(v);
  Values y = ref::batchNorm(valuesOf(x), xs, valuesOf(g), valuesOf(b), rm, rv,
                            1e-5, 0.2);
  expectClose(out[0], y, toleranceFor(k, true), "batch_norm output");
  expectClose(out[1], rm, toleranceFor(f32, true), "running mean");
  expectClose(out[2], rv, toleranceFor(f32, true), "running var (unbiased)");
}

TEST_P(OpNumerics, Reductions) {
  ElementKind k = GetParam();
  Shape xs = {4, 5, 6};
  HostTensor x = randomTensor(k, xs, rng);
  auto out = run(oneOp({ty(k, xs)}, ty(k, {5}),
                       "train.reduce_sum %a0 axes [0, 2] : " + ty(k, xs) +
                           " -> " + ty(k, {5})),
                 {&x});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], ref::reduce(valuesOf(x), xs, {0, 2}, false),
              toleranceFor(k, true), "reduce_sum");
  out = run(oneOp({ty(k, xs)}, ty(k, {4, 1, 6}),
                  "train.reduce_mean %a0 axes [1] keep_dims : " + ty(k, xs) +
                      " -> " + ty(k, {4, 1, 6})),
            {&x});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], ref::reduce(valuesOf(x), xs, {1}, true),
              toleranceFor(k, true), "reduce_mean keep_dims");
  out = run(oneOp({ty(k, xs)}, ty(k, {}),
                  "train.reduce_sum %a0 axes [0, 1, 2] : " + ty(k, xs) +
                      " -> " + ty(k, {})),
            {&x});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], ref::reduce(valuesOf(x), xs, {0, 1, 2}, false),
              toleranceFor(k, true), "reduce_sum to rank 0");
}

TEST_P(OpNumerics, CrossEntropy) {
  ElementKind k = GetParam();
  int64_t n = 16, c = 10;
  HostTensor logits = randomTensor(k, {n, c}, rng, -5, 5);
  std::vector<int32_t> labels(n);
  std::uniform_int_distribution<int32_t> cls(0, c - 1);
  for (int32_t &l : labels)
    l = cls(rng);
  HostTensor lab = HostTensor::fromInts({n}, labels);
  std::string op = "train.cross_entropy %a0, %a1 : " + ty(k, {n, c}) +
                   ", tensor<16xi32> -> " + ty(k, {});
  auto out = run(oneOp({ty(k, {n, c}), "tensor<16xi32>"}, ty(k, {}), op),
                 {&logits, &lab});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], {ref::crossEntropy(valuesOf(logits), n, c, labels)},
              toleranceFor(k), "cross_entropy");

  // A label outside [0, C) makes the loss NaN rather than reading memory.
  labels[3] = 10;
  HostTensor bad = HostTensor::fromInts({n}, labels);
  out = run(oneOp({ty(k, {n, c}), "tensor<16xi32>"}, ty(k, {}), op),
            {&logits, &bad});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(std::isnan(out[0].getAsDouble(0)));
}

TEST_P(OpNumerics, MseLoss) {
  ElementKind k = GetParam();
  Shape s = {12, 3};
  HostTensor p = randomTensor(k, s, rng), t = randomTensor(k, s, rng);
  auto out =
      run(oneOp({ty(k, s), ty(k, s)}, ty(k, {}),
                "train.mse_loss %a0, %a1 : " + ty(k, s) + " -> " + ty(k, {})),
          {&p, &t});
  ASSERT_EQ(out.size(), 1u);
  Values a = valuesOf(p), b = valuesOf(t);
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i)
    sum += (a[i] - b[i]) * (a[i] - b[i]);
  expectClose(out[0], {sum / a.size()}, toleranceFor(k), "mse_loss");
}

TEST_P(OpNumerics, Dropout) {
  ElementKind k = GetParam();
  Shape s = {64, 50};
  HostTensor x = randomTensor(k, s, rng, 0.5, 1.5);
  double rate = 0.3;
  auto out = run(oneOp({ty(k, s)}, ty(k, s),
                       "train.dropout %a0 rate 0.3 seed 7 : " + ty(k, s)),
                 {&x});
  ASSERT_EQ(out.size(), 1u);
  Values expected = valuesOf(x);
  int64_t kept = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    bool keep = ref::dropoutKeeps(i, 7, rate);
    kept += keep;
    expected[i] = keep ? expected[i] / (1 - rate) : 0.0;
  }
  expectClose(out[0], expected, toleranceFor(k), "dropout");
  // The mask keeps about 1 - rate of the elements (3200 draws: +-4 sigma).
  double fraction = double(kept) / expected.size();
  EXPECT_NEAR(fraction, 1 - rate, 4 * std::sqrt(rate * (1 - rate) / 3200));
}

INSTANTIATE_TEST_SUITE_P(Kinds, OpNumerics, ::testing::ValuesIn(kFloatKinds),
                         kindName);

//===----------------------------------------------------------------------===//
// Exact ops (f32 only: data movement does not depend on the type)
//===----------------------------------------------------------------------===//

/// f32 exp, tanh and erf are inline polynomials on the CPU
/// (amp-vectorizable-math): their error in f32 ulps of the f64 result, over
/// a sweep of every 509th f32 in their interesting ranges (every exponent,
/// spread mantissas: 4.4 million inputs each), the ends of the ranges
/// (overflow, subnormal results, the last value below 1, where erf's two
/// forms meet), and the special values, which are exact. Measured: exp 0.99
/// ulp, tanh 1.24; asserted <= 1.5 (glibc's scalar expf and tanhf: within
/// 1). erf through the exact GELU on x >= 0: asserted <= 3.
class Transcendentals : public OpNumerics {};

/// The distance between f32 values at the magnitude of `v` (2^-149 for
/// subnormals).
double f32Ulp(double v) {
  v = std::fabs(v);
  if (v < std::ldexp(1.0, -126))
    return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(v) - 23);
}

TEST_F(Transcendentals, WithinTwoUlps) {
  struct Case {
    const char *op;
    double (*fn)(double);
    float limit; // the sweep covers [-limit, limit]
    std::vector<float> edges;
    double maxUlps = 1.5;
    bool positiveOnly = false; // the sweep covers [0, limit]
  };
  const Case cases[] = {
      {"train.exp", [](double x) { return std::exp(x); }, 105.0f,
       {88.7228f, 88.72284f, 88.7229f, 89.0f, -87.33f, -87.34f, -100.0f,
        -103.27f, -103.97f, -103.98f, -104.0f, 0.0f, -0.0f, 1e-30f, -1e-30f,
        INFINITY, -INFINITY, NAN},
       1.5},
      {"train.tanh", [](double x) { return std::tanh(x); }, 12.0f,
       {0.625f, -0.625f, 0.62499994f, 9.0f, 9.01f, 10.0f, 1e-30f, -1e-30f,
        1e-45f, 0.0f, -0.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN},
       1.5},
      // erf through the exact GELU, 0.5 x (1 + erf(x / sqrt 2)), on x >= 0
      // (below 0 the sum 1 + erf cancels: an error of erf's, not of the
      // polynomial's, that libm's erff has too); its two forms meet at
      // x / sqrt 2 = 1.
      {"train.gelu",
       [](double x) { return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2)); },
       12.0f,
       {1.41421354f, 1.41421366f, 2.82842708f, 2.8284273f, 14.142136f,
        14.5f, 1e-30f, 1e-45f, 0.0f, 1e30f, INFINITY, NAN},
       3.0,
       /*positiveOnly=*/true},
  };
  for (const Case &c : cases) {
    std::vector<float> values = c.edges;
    uint32_t top;
    std::memcpy(&top, &c.limit, sizeof(top));
    for (uint32_t bits = 0; bits <= top; bits += 509) {
      float v;
      std::memcpy(&v, &bits, sizeof(v));
      values.push_back(v);
      if (!c.positiveOnly)
        values.push_back(-v);
    }
    Shape s = {int64_t(values.size())};
    HostTensor x = HostTensor::fromFloats(ElementKind::F32, s, values);
    auto out = run(oneOp({ty(ElementKind::F32, s)}, ty(ElementKind::F32, s),
                         std::string(c.op) + " %a0 : " +
                             ty(ElementKind::F32, s)),
                   {&x});
    ASSERT_EQ(out.size(), 1u) << c.op;
    double worst = 0;
    float worstAt = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      double want = c.fn(values[i]), got = out[0].getAsDouble(i);
      float rounded = float(want);
      if (std::isnan(rounded) || std::isinf(rounded) || rounded == 0) {
        // NaN, infinities and zeros exactly (results that round to them in
        // f32 included), the sign of a zero too.
        bool same = (std::isnan(rounded) && std::isnan(got)) ||
                    (got == double(rounded) &&
                     std::signbit(got) == std::signbit(rounded));
        EXPECT_TRUE(same) << c.op << "(" << values[i] << ") = " << got
                          << ", not " << rounded;
        continue;
      }
      double ulps = std::fabs(got - want) / f32Ulp(want);
      if (ulps > worst)
        worst = ulps, worstAt = values[i];
    }
    EXPECT_LE(worst, c.maxUlps) << c.op << ": worst at " << worstAt;
    std::printf("%s: %zu inputs, worst %.2f ulp at %.9g\n", c.op,
                values.size(), worst, worstAt);
  }
}

class ExactOps : public OpNumerics {};

TEST_F(ExactOps, ShapeOps) {
  ElementKind k = ElementKind::F32;
  Shape s = {2, 3, 4};
  HostTensor x = randomTensor(k, s, rng);
  Values xv = valuesOf(x);
  // reshape keeps row-major order.
  auto out =
      run(oneOp({ty(k, s)}, ty(k, {6, 4}),
                "train.reshape %a0 : " + ty(k, s) + " -> " + ty(k, {6, 4})),
          {&x});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0], xv, {0, 0}, "reshape");
  // transpose [2, 0, 1]: result[i][j][l] = x[j][l][i].
  out = run(oneOp({ty(k, s)}, ty(k, {4, 2, 3}),
                  "train.transpose %a0 permutation [2, 0, 1] : " + ty(k, s) +
                      " -> " + ty(k, {4, 2, 3})),
            {&x});
  ASSERT_EQ(out.size(), 1u);
  Values t(24);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int l = 0; l < 3; ++l)
        t[(i * 2 + j) * 3 + l] = xv[(j * 3 + l) * 4 + i];
  expectClose(out[0], t, {0, 0}, "transpose");
  // broadcast [3, 1] -> [2, 3, 4].
  HostTensor b = randomTensor(k, {3, 1}, rng);
  out = run(oneOp({ty(k, {3, 1})}, ty(k, s),
                  "train.broadcast %a0 : " + ty(k, {3, 1}) + " -> " + ty(k, s)),
            {&b});
  ASSERT_EQ(out.size(), 1u);
  Values bv = valuesOf(b), bx(24);
  for (int i = 0; i < 24; ++i)
    bx[i] = bv[(i / 4) % 3];
  expectClose(out[0], bx, {0, 0}, "broadcast");
  // concat along the middle axis.
  HostTensor c = randomTensor(k, {2, 1, 4}, rng);
  out = run(oneOp({ty(k, s), ty(k, {2, 1, 4})}, ty(k, {2, 4, 4}),
                  "train.concat %a0, %a1 axis 1 : " + ty(k, s) + ", " +
                      ty(k, {2, 1, 4}) + " -> " + ty(k, {2, 4, 4})),
            {&x, &c});
  ASSERT_EQ(out.size(), 1u);
  Values cv = valuesOf(c), cat;
  for (int i = 0; i < 2; ++i) {
    cat.insert(cat.end(), xv.begin() + i * 12, xv.begin() + (i + 1) * 12);
    cat.insert(cat.end(), cv.begin() + i * 4, cv.begin() + (i + 1) * 4);
  }
  expectClose(out[0], cat, {0, 0}, "concat");
}

TEST_F(ExactOps, EmbeddingClampsIndices) {
  ElementKind k = ElementKind::F32;
  HostTensor table = randomTensor(k, {10, 4}, rng);
  HostTensor ids = HostTensor::fromInts({2, 3}, {0, 9, 3, 3, -5, 12});
  auto out = run(oneOp({ty(k, {10, 4}), "tensor<2x3xi32>"}, ty(k, {2, 3, 4}),
                       "train.embedding %a0, %a1 : " + ty(k, {10, 4}) +
                           ", tensor<2x3xi32> -> " + ty(k, {2, 3, 4})),
                 {&table, &ids});
  ASSERT_EQ(out.size(), 1u);
  Values tv = valuesOf(table), expected;
  for (int id : {0, 9, 3, 3, 0, 9}) // -5 -> 0, 12 -> 9
    expected.insert(expected.end(), tv.begin() + id * 4,
                    tv.begin() + id * 4 + 4);
  expectClose(out[0], expected, {0, 0}, "embedding");
}

TEST_F(ExactOps, ConstantInGraph) {
  ElementKind k = ElementKind::F32;
  HostTensor x = randomTensor(k, {3}, rng);
  std::string src =
      "func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {\n"
      "  %c = train.constant dense<[1.0, -2.0, 0.5]> : tensor<3xf32>\n"
      "  %r = train.mul %x, %c : tensor<3xf32>, tensor<3xf32> -> "
      "tensor<3xf32>\n"
      "  return %r : tensor<3xf32>\n}\n";
  auto out = run(src, {&x});
  ASSERT_EQ(out.size(), 1u);
  Values xv = valuesOf(x);
  expectClose(out[0], {xv[0], -2 * xv[1], 0.5 * xv[2]}, {0, 0}, "constant");
}

/// Casts round once, exactly as the host conversions (themselves checked
/// against APFloat in HostTensorTest) do, on the host CPU and on a baseline
/// x86-64 without F16C (where LLVM calls libgcc's conversions).
TEST_F(ExactOps, CastsRoundOnce) {
  std::vector<float> values;
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 4096; ++i) {
    uint32_t bits = any(rng);
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f))
      values.push_back(f);
  }
  Shape s = {int64_t(values.size())};
  HostTensor x = HostTensor::fromFloats(ElementKind::F32, s, values);
  for (std::string cpu : {"", "x86-64"}) {
    CpuCompileOptions options;
    options.cpu = cpu;
    for (ElementKind to : {ElementKind::F16, ElementKind::BF16}) {
      auto out = run(oneOp({ty(ElementKind::F32, s)}, ty(to, s),
                           "train.cast %a0 : " + ty(ElementKind::F32, s) +
                               " to " + ty(to, s)),
                     {&x}, options);
      ASSERT_EQ(out.size(), 1u);
      HostTensor expected = HostTensor::fromFloats(to, s, values);
      EXPECT_EQ(std::memcmp(out[0].data(), expected.data(),
                            expected.getSizeInBytes()),
                0)
          << "f32 -> " << elementName(to).str() << " on cpu '" << cpu << "'";
      // And back: widening is exact.
      auto back = run(oneOp({ty(to, s)}, ty(ElementKind::F32, s),
                            "train.cast %a0 : " + ty(to, s) + " to " +
                                ty(ElementKind::F32, s)),
                      {&expected}, options);
      ASSERT_EQ(back.size(), 1u);
      expectClose(back[0], valuesOf(expected), {0, 0}, "widening cast");
    }
  }
}

/// f16 -> bf16 rounds once from the f16 value (no double rounding through an
/// intermediate).
TEST_F(ExactOps, HalfToBFloatRoundsOnce) {
  std::vector<float> values;
  for (uint32_t bits = 0; bits < 0x7C00; bits += 7)
    values.push_back(halfToFloat(bits));
  Shape s = {int64_t(values.size())};
  HostTensor x = HostTensor::fromFloats(ElementKind::F16, s, values);
  auto out = run(oneOp({ty(ElementKind::F16, s)}, ty(ElementKind::BF16, s),
                       "train.cast %a0 : " + ty(ElementKind::F16, s) + " to " +
                           ty(ElementKind::BF16, s)),
                 {&x});
  ASSERT_EQ(out.size(), 1u);
  HostTensor expected = HostTensor::fromFloats(ElementKind::BF16, s, values);
  EXPECT_EQ(
      std::memcmp(out[0].data(), expected.data(), expected.getSizeInBytes()),
      0);
}

} // namespace
