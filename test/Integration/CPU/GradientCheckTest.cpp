//===- GradientCheckTest.cpp - VJPs against f64 finite differences --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// For each differentiable op: L(params) = sum(op(params) * r) with a random
// probe r, differentiated by amp-autodiff, lowered and JIT-compiled (f32),
// against central finite differences of L computed in f64 from the reference
// implementations (Reference.cpp) at the same parameter values.
// Tolerance: |g - fd| <= 1e-4 |fd| + 1e-5 (f32 arithmetic in the compiled
// gradient; the f64 differences are exact to ~1e-10). Kinks are avoided:
// relu inputs are at least 0.1 away from 0, log and div inputs positive.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"
#include "TestContext.h"

#include "amp/Dialect/Train/Transforms/Passes.h"
#include "amp/Execution/CpuJit.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "gtest/gtest.h"

#include <cmath>
#include <functional>
#include <random>
#include <sstream>

using namespace amp;
using namespace mlir;
using ref::Shape;
using ref::Values;

namespace {

/// "tensor<2x3xf32>".
std::string f32(const Shape &shape) {
  std::ostringstream os;
  os << "tensor<";
  for (int64_t d : shape)
    os << d << 'x';
  os << "f32>";
  return os.str();
}

/// A non-parameter argument (labels, data) with its value.
struct Extra {
  std::string type;
  HostTensor value;
};

/// One gradient check.
struct GradCase {
  std::vector<Shape> params;
  Shape out;
  /// MLIR lines computing %y (of `out`'s shape) from %p0, %p1, ... and %e0..
  std::string body;
  /// f64 reference of %y.
  std::function<Values(const std::vector<Values> &)> reference;
  /// How parameter values are drawn: uniform in [lo, hi], and at least
  /// `gap` away from zero when gap > 0 (kinks).
  float lo = -2, hi = 2, gap = 0;
  std::vector<Extra> extras;
};

class GradientCheck : public ::testing::Test {
protected:
  /// How f_grad is compiled (the convolution test runs both conv lowerings).
  CpuCompileOptions compileOptions;

  void check(const GradCase &c, const std::string &what) {
    SCOPED_TRACE(what);
    // The function: params, extras, probe -> L.
    std::ostringstream src;
    src << "func.func @f(";
    for (size_t i = 0; i < c.params.size(); ++i)
      src << (i ? ", " : "") << "%p" << i << ": " << f32(c.params[i])
          << " {train.param}";
    for (size_t i = 0; i < c.extras.size(); ++i)
      src << ", %e" << i << ": " << c.extras[i].type;
    src << ", %r: " << f32(c.out) << ") -> tensor<f32> {\n" << c.body << "\n";
    if (c.out.empty()) {
      src << "  %l = train.mul %y, %r : tensor<f32>, tensor<f32> -> "
             "tensor<f32>\n";
    } else {
      src << "  %m = train.mul %y, %r : " << f32(c.out) << ", " << f32(c.out)
          << " -> " << f32(c.out) << "\n  %l = train.reduce_sum %m axes [";
      for (size_t d = 0; d < c.out.size(); ++d)
        src << (d ? ", " : "") << d;
      src << "] : " << f32(c.out) << " -> tensor<f32>\n";
    }
    src << "  return %l : tensor<f32>\n}\n";

    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(src.str(), &context);
    ASSERT_TRUE(module) << src.str();
    PassManager pm(&context);
    pm.addPass(train::createAutodiffPass());
    ASSERT_TRUE(succeeded(pm.run(*module))) << src.str();
    auto fn = CpuFunction::compile(*module, "f_grad", compileOptions);
    ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());

    // Parameter values and the probe.
    std::vector<Values> params;
    std::vector<HostTensor> tensors;
    std::uniform_real_distribution<float> dist(c.lo, c.hi);
    for (const Shape &shape : c.params) {
      std::vector<float> v(ref::numElements(shape));
      for (float &x : v) {
        x = dist(rng);
        if (c.gap > 0 && std::fabs(x) < c.gap)
          x = x < 0 ? -c.gap - std::fabs(x) : c.gap + std::fabs(x);
      }
      params.emplace_back(v.begin(), v.end());
      tensors.push_back(HostTensor::fromFloats(ElementKind::F32, shape, v));
    }
    std::uniform_real_distribution<float> probe(-1, 1);
    std::vector<float> r(ref::numElements(c.out));
    for (float &x : r)
      x = probe(rng);
    HostTensor rt = HostTensor::fromFloats(ElementKind::F32, c.out, r);
    std::vector<const HostTensor *> inputs;
    for (const HostTensor &t : tensors)
      inputs.push_back(&t);
    for (const Extra &e : c.extras)
      inputs.push_back(&e.value);
    inputs.push_back(&rt);
    auto outputs = (*fn)->call(inputs);
    ASSERT_TRUE(bool(outputs)) << llvm::toString(outputs.takeError());
    ASSERT_EQ(outputs->size(), 1 + c.params.size());

    auto loss = [&](const std::vector<Values> &p) {
      Values y = c.reference(p);
      double sum = 0;
      for (size_t i = 0; i < y.size(); ++i)
        sum += y[i] * r[i];
      return sum;
    };
    EXPECT_NEAR((*outputs)[0].getAsDouble(0), loss(params),
                1e-4 * std::fabs(loss(params)) + 1e-5);
    for (size_t j = 0; j < params.size(); ++j) {
      const HostTensor &grad = (*outputs)[1 + j];
      int failures = 0;
      for (size_t i = 0; i < params[j].size(); ++i) {
        double h = 1e-5 * std::max(1.0, std::fabs(params[j][i]));
        std::vector<Values> plus = params, minus = params;
        plus[j][i] += h;
        minus[j][i] -= h;
        double fd = (loss(plus) - loss(minus)) / (2 * h);
        double g = grad.getAsDouble(i);
        if (std::fabs(g - fd) > 1e-4 * std::fabs(fd) + 1e-5 && ++failures <= 3)
          ADD_FAILURE() << "d/dp" << j << "[" << i << "] = " << g
                        << ", finite differences " << fd;
      }
      EXPECT_EQ(failures, 0) << "parameter " << j;
    }
  }

  test::TestContext context;
  std::mt19937 rng{424242};
};

/// An element-wise unary case.
GradCase unary(const std::string &op, double (*fn)(double), float lo, float hi,
               float gap = 0) {
  Shape s = {3, 5};
  GradCase c{{s},
             s,
             "  %y = " + op + " %p0 : " + f32(s),
             [fn](const std::vector<Values> &p) {
               Values y = p[0];
               for (double &v : y)
                 v = fn(v);
               return y;
             },
             lo,
             hi,
             gap,
             {}};
  return c;
}

TEST_F(GradientCheck, Unary) {
  check(
      unary(
          "train.relu", [](double x) { return std::max(x, 0.0); }, -2, 2, 0.1f),
      "relu");
  check(unary(
            "train.tanh", [](double x) { return std::tanh(x); }, -2, 2),
        "tanh");
  check(unary(
            "train.sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); },
            -4, 4),
        "sigmoid");
  check(unary(
            "train.exp", [](double x) { return std::exp(x); }, -2, 2),
        "exp");
  check(unary(
            "train.log", [](double x) { return std::log(x); }, 0.2f, 3),
        "log");
  // sqrt: defined by its formula alone (ElementwiseOpInterface); lowering
  // and VJP are the generic ones.
  check(unary(
            "train.sqrt", [](double x) { return std::sqrt(x); }, 0.2f, 3),
        "sqrt");
  check(
      unary(
          "train.gelu",
          [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
          -3, 3),
      "gelu");
}

TEST_F(GradientCheck, GeluTanh) {
  Shape s = {4, 4};
  check({{s},
         s,
         "  %y = train.gelu %p0 approximate tanh : " + f32(s),
         [](const std::vector<Values> &p) {
           Values y = p[0];
           for (double &v : y)
             v = 0.5 * v *
                 (1 +
                  std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
           return y;
         },
         -3,
         3,
         0,
         {}},
        "gelu tanh");
}

TEST_F(GradientCheck, BinaryWithBroadcasting) {
  Shape a = {3, 1, 4}, b = {2, 1}, out = {3, 2, 4};
  const char *names[] = {"train.add", "train.sub", "train.mul", "train.div"};
  const char ops[] = {'+', '-', '*', '/'};
  for (int i = 0; i < 4; ++i) {
    char op = ops[i];
    GradCase c{{a, b},
               out,
               std::string("  %y = ") + names[i] + " %p0, %p1 : " + f32(a) +
                   ", " + f32(b) + " -> " + f32(out),
               [=](const std::vector<Values> &p) {
                 return ref::broadcastBinary(p[0], a, p[1], b, out, op);
               },
               0.5f,
               2,
               0,
               {}};
    check(c, names[i]);
  }
}

TEST_F(GradientCheck, MatmulTransposesAndBias) {
  int64_t m = 5, n = 4, k = 3;
  for (int flags = 0; flags < 4; ++flags) {
    bool ta = flags & 1, tb = flags & 2;
    Shape as = ta ? Shape{k, m} : Shape{m, k};
    Shape bs = tb ? Shape{n, k} : Shape{k, n};
    std::string attrs =
        std::string(ta ? " transpose_lhs" : "") + (tb ? " transpose_rhs" : "");
    GradCase c{{as, bs, {n}},
               {m, n},
               "  %y = train.matmul %p0, %p1, %p2" + attrs + " : " + f32(as) +
                   ", " + f32(bs) + ", " + f32({n}) + " -> " + f32({m, n}),
               [=](const std::vector<Values> &p) {
                 Values y = ref::matmul(p[0], p[1], 0, m, n, k, ta, tb);
                 for (int64_t i = 0; i < m * n; ++i)
                   y[i] += p[2][i % n];
                 return y;
               },
               -1,
               1,
               0,
               {}};
    check(c, "matmul" + attrs);
  }
}

TEST_F(GradientCheck, BatchMatmul) {
  for (int flags = 0; flags < 4; ++flags) {
    bool ta = flags & 1, tb = flags & 2;
    Shape as = ta ? Shape{2, 4, 3} : Shape{2, 3, 4};
    Shape bs = tb ? Shape{2, 5, 4} : Shape{2, 4, 5};
    std::string attrs =
        std::string(ta ? " transpose_lhs" : "") + (tb ? " transpose_rhs" : "");
    GradCase c{{as, bs},
               {2, 3, 5},
               "  %y = train.batch_matmul %p0, %p1" + attrs + " : " + f32(as) +
                   ", " + f32(bs) + " -> " + f32({2, 3, 5}),
               [=](const std::vector<Values> &p) {
                 return ref::matmul(p[0], p[1], 2, 3, 5, 4, ta, tb);
               },
               -1,
               1,
               0,
               {}};
    check(c, "batch_matmul" + attrs);
  }
}

TEST_F(GradientCheck, BatchMatmulRank4Broadcast) {
  // Attention's form: [B, H, S, D] x [B, 1, D, T] (one key shared by the
  // heads) and the rhs transposed; the shared operand's gradient sums over
  // the heads. Forward against the f64 reference, gradients against finite
  // differences.
  for (bool tb : {false, true}) {
    Shape as = {2, 3, 4, 5};
    Shape bs = tb ? Shape{2, 1, 6, 5} : Shape{2, 1, 5, 6};
    Shape out = {2, 3, 4, 6};
    GradCase c{{as, bs},
               out,
               "  %y = train.batch_matmul %p0, %p1" +
                   std::string(tb ? " transpose_rhs" : "") + " : " + f32(as) +
                   ", " + f32(bs) + " -> " + f32(out),
               [=](const std::vector<Values> &p) {
                 Values y(2 * 3 * 4 * 6, 0.0);
                 for (int b = 0; b < 2; ++b)
                   for (int h = 0; h < 3; ++h)
                     for (int i = 0; i < 4; ++i)
                       for (int j = 0; j < 6; ++j) {
                         double sum = 0;
                         for (int k = 0; k < 5; ++k)
                           sum += p[0][((b * 3 + h) * 4 + i) * 5 + k] *
                                  p[1][tb ? (b * 6 + j) * 5 + k
                                          : (b * 5 + k) * 6 + j];
                         y[((b * 3 + h) * 4 + i) * 6 + j] = sum;
                       }
                 return y;
               },
               -1,
               1,
               0,
               {}};
    check(c, tb ? "rank-4 broadcast transpose_rhs" : "rank-4 broadcast");
  }
}

TEST_F(GradientCheck, SoftmaxLargeLogits) {
  // Logits of 50-90: exp would overflow f32 without the max subtraction.
  Shape s = {3, 6};
  check({{s},
         s,
         "  %y = train.softmax %p0 axis 1 : " + f32(s),
         [=](const std::vector<Values> &p) {
           return ref::softmax(p[0], s, 1, false, false);
         },
         50,
         90,
         0,
         {}},
        "softmax on large logits");
  check({{s},
         s,
         "  %y = train.log_softmax %p0 axis 1 : " + f32(s),
         [=](const std::vector<Values> &p) {
           return ref::softmax(p[0], s, 1, true, false);
         },
         50,
         90,
         0,
         {}},
        "log_softmax on large logits");
}

/// At a tie the gradient goes to the window's first maximum (row-major), as
/// PyTorch's max_pool2d does; finite differences are undefined there, so the
/// gradient is checked exactly.
TEST_F(GradientCheck, MaxPoolTiesGoToTheFirstMaximum) {
  std::string src = "func.func @f(%x: tensor<1x1x2x4xf32> {train.param}, %r: "
                    "tensor<1x1x1x2xf32>) -> tensor<f32> {\n"
                    "  %y = train.max_pool2d %x kernel [2, 2] strides [2, 2] : "
                    "tensor<1x1x2x4xf32> -> tensor<1x1x1x2xf32>\n"
                    "  %m = train.mul %y, %r : tensor<1x1x1x2xf32>, "
                    "tensor<1x1x1x2xf32> -> tensor<1x1x1x2xf32>\n"
                    "  %l = train.reduce_sum %m axes [0, 1, 2, 3] : "
                    "tensor<1x1x1x2xf32> -> tensor<f32>\n"
                    "  return %l : tensor<f32>\n}\n";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &context);
  ASSERT_TRUE(module);
  PassManager pm(&context);
  pm.addPass(train::createAutodiffPass());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  auto fn = CpuFunction::compile(*module, "f_grad");
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());
  // Window 1 (columns 0-1): all four equal. Window 2 (columns 2-3): the two
  // maxima 5 at (0, 3) and (1, 2): row-major, (0, 3) comes first.
  HostTensor x = HostTensor::fromFloats(ElementKind::F32, {1, 1, 2, 4},
                                        {1, 1, 2, 5, 1, 1, 5, 3});
  HostTensor r = HostTensor::fromFloats(ElementKind::F32, {1, 1, 1, 2}, {3, 7});
  auto out = (*fn)->call({&x, &r});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<float> expected = {3, 0, 0, 7, 0, 0, 0, 0};
  EXPECT_EQ((*out)[1].toFloats(), expected);
}

TEST_F(GradientCheck, SoftmaxFamily) {
  Shape s = {3, 5};
  check({{s},
         s,
         "  %y = train.softmax %p0 axis 1 : " + f32(s),
         [=](const std::vector<Values> &p) {
           return ref::softmax(p[0], s, 1, false, false);
         },
         -3,
         3,
         0,
         {}},
        "softmax");
  check({{s},
         s,
         "  %y = train.softmax %p0 axis 0 : " + f32(s),
         [=](const std::vector<Values> &p) {
           return ref::softmax(p[0], s, 0, false, false);
         },
         -3,
         3,
         0,
         {}},
        "softmax axis 0");
  check({{s},
         s,
         "  %y = train.log_softmax %p0 axis 1 : " + f32(s),
         [=](const std::vector<Values> &p) {
           return ref::softmax(p[0], s, 1, true, false);
         },
         -3,
         3,
         0,
         {}},
        "log_softmax");
  Shape c = {2, 4, 4};
  check({{c},
         c,
         "  %y = train.softmax %p0 axis 2 causal : " + f32(c),
         [=](const std::vector<Values> &p) {
           return ref::softmax(p[0], c, 2, false, true);
         },
         -3,
         3,
         0,
         {}},
        "causal softmax");
}

TEST_F(GradientCheck, Reductions) {
  Shape s = {2, 3, 4};
  check({{s},
         {3},
         "  %y = train.reduce_sum %p0 axes [0, 2] : " + f32(s) + " -> " +
             f32({3}),
         [=](const std::vector<Values> &p) {
           return ref::reduce(p[0], s, {0, 2}, false);
         }},
        "reduce_sum");
  check({{s},
         {2, 1, 4},
         "  %y = train.reduce_mean %p0 axes [1] keep_dims : " + f32(s) +
             " -> " + f32({2, 1, 4}),
         [=](const std::vector<Values> &p) {
           return ref::reduce(p[0], s, {1}, true);
         }},
        "reduce_mean keep_dims");
}

TEST_F(GradientCheck, ShapeOps) {
  check({{{2, 6}},
         {3, 4},
         "  %y = train.reshape %p0 : " + f32({2, 6}) + " -> " + f32({3, 4}),
         [](const std::vector<Values> &p) { return p[0]; }},
        "reshape");
  Shape s = {2, 3, 4};
  check({{s},
         {4, 2, 3},
         "  %y = train.transpose %p0 permutation [2, 0, 1] : " + f32(s) +
             " -> " + f32({4, 2, 3}),
         [](const std::vector<Values> &p) {
           Values t(24);
           for (int i = 0; i < 4; ++i)
             for (int j = 0; j < 2; ++j)
               for (int l = 0; l < 3; ++l)
                 t[(i * 2 + j) * 3 + l] = p[0][(j * 3 + l) * 4 + i];
           return t;
         }},
        "transpose");
  check({{{3, 1}},
         s,
         "  %y = train.broadcast %p0 : " + f32({3, 1}) + " -> " + f32(s),
         [](const std::vector<Values> &p) {
           Values t(24);
           for (int i = 0; i < 24; ++i)
             t[i] = p[0][(i / 4) % 3];
           return t;
         }},
        "broadcast");
}

// clamp (hardtanh, relu6): inputs on both sides of both bounds (a fixed
// draw, none within the finite-difference step of a bound).
TEST_F(GradientCheck, Clamp) {
  Shape s = {4, 6};
  check({{s},
         s,
         "  %y = train.clamp %p0 min -5.000000e-01 max 1.500000e+00 : " + f32(s),
         [](const std::vector<Values> &p) {
           Values y = p[0];
           for (double &v : y)
             v = std::min(std::max(v, -0.5), 1.5);
           return y;
         },
         -2,
         3,
         0,
         {}},
        "clamp");
}

// pow: each special case of the lowering (products, sqrt, reciprocals) and
// powf, on positive inputs (a negative base with a non-integer exponent is
// NaN); the forward against std::pow in f64.
TEST_F(GradientCheck, Pow) {
  Shape s = {3, 5};
  for (double c : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.5, -0.7, 4.0}) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.6e", c);
    check({{s},
           s,
           "  %y = train.pow %p0 exponent " + std::string(text) + " : " +
               f32(s),
           [c](const std::vector<Values> &p) {
             Values y = p[0];
             for (double &v : y)
               v = std::pow(v, c);
             return y;
           },
           0.5,
           2,
           0,
           {}},
          "pow " + std::string(text));
  }
}

TEST_F(GradientCheck, Dropout) {
  Shape s = {6, 5};
  check({{s},
         s,
         "  %y = train.dropout %p0 rate 0.3 seed 5 : " + f32(s),
         [](const std::vector<Values> &p) {
           Values y = p[0];
           for (size_t i = 0; i < y.size(); ++i)
             y[i] = ref::dropoutKeeps(i, 5, 0.3) ? y[i] / 0.7 : 0.0;
           return y;
         }},
        "dropout");
  // Keyed by a step counter (7 here): the mask of key seed + 7 * stride
  // (docs/Passes.md), the same in the backward pass.
  const uint64_t key = 5 + 7 * 0xD1B54A32D192ED03ULL;
  check({{s},
         s,
         "  %c = train.constant dense<7> : tensor<i32>\n"
         "  %y = train.dropout %p0 rate 0.3 seed 5 step %c : " +
             f32(s),
         [key](const std::vector<Values> &p) {
           Values y = p[0];
           for (size_t i = 0; i < y.size(); ++i)
             y[i] = ref::dropoutKeeps(i, key, 0.3) ? y[i] / 0.7 : 0.0;
           return y;
         }},
        "dropout with a step");
}

TEST_F(GradientCheck, Losses) {
  std::vector<int32_t> labels = {2, 0, 3, 1};
  GradCase ce{{{4, 5}},
              {},
              "  %y = train.cross_entropy %p0, %e0 : " + f32({4, 5}) +
                  ", tensor<4xi32> -> tensor<f32>",
              [=](const std::vector<Values> &p) {
                return Values{ref::crossEntropy(p[0], 4, 5, labels)};
              },
              -3,
              3,
              0,
              {}};
  ce.extras.push_back({"tensor<4xi32>", HostTensor::fromInts({4}, labels)});
  check(ce, "cross_entropy");
  // ignore_index: rows 1 and 3 labelled -100 count for nothing; the mean is
  // over rows 0 and 2.
  std::vector<int32_t> some = {2, -100, 3, -100};
  GradCase ignoring{{{4, 5}},
                    {},
                    "  %y = train.cross_entropy %p0, %e0 ignore_index -100 : " +
                        f32({4, 5}) + ", tensor<4xi32> -> tensor<f32>",
                    [=](const std::vector<Values> &p) {
                      Values kept;
                      for (int r : {0, 2})
                        kept.insert(kept.end(), p[0].begin() + r * 5,
                                    p[0].begin() + r * 5 + 5);
                      return Values{ref::crossEntropy(kept, 2, 5, {2, 3})};
                    },
                    -3,
                    3,
                    0,
                    {}};
  ignoring.extras.push_back({"tensor<4xi32>", HostTensor::fromInts({4}, some)});
  check(ignoring, "cross_entropy ignore_index");
  // label_smoothing 0.3 with ignored rows: per kept row
  // 0.7 * -logp[label] + 0.3 * mean_c(-logp), averaged over rows 0 and 2.
  GradCase smoothing{
      {{4, 5}},
      {},
      "  %y = train.cross_entropy %p0, %e0 ignore_index -100 label_smoothing "
      "0.3 : " +
          f32({4, 5}) + ", tensor<4xi32> -> tensor<f32>",
      [=](const std::vector<Values> &p) {
        double total = 0;
        for (int r : {0, 2}) {
          double max = p[0][r * 5], sum = 0, mean = 0;
          for (int c = 0; c < 5; ++c)
            max = std::max(max, p[0][r * 5 + c]);
          for (int c = 0; c < 5; ++c)
            sum += std::exp(p[0][r * 5 + c] - max);
          double lse = max + std::log(sum);
          for (int c = 0; c < 5; ++c)
            mean += (lse - p[0][r * 5 + c]) / 5;
          total += 0.7 * (lse - p[0][r * 5 + some[r]]) + 0.3 * mean;
        }
        return Values{total / 2};
      },
      -3,
      3,
      0,
      {}};
  smoothing.extras.push_back(
      {"tensor<4xi32>", HostTensor::fromInts({4}, some)});
  check(smoothing, "cross_entropy label_smoothing");
  Shape s = {4, 3};
  check({{s, s},
         {},
         "  %y = train.mse_loss %p0, %p1 : " + f32(s) + " -> tensor<f32>",
         [](const std::vector<Values> &p) {
           double sum = 0;
           for (size_t i = 0; i < p[0].size(); ++i)
             sum += (p[0][i] - p[1][i]) * (p[0][i] - p[1][i]);
           return Values{sum / p[0].size()};
         }},
        "mse_loss");
  // The element-wise losses, at inputs away from their kinks (|d| = 0,
  // |d| = beta): a fixed draw on [-3, 3).
  auto meanOf = [](const std::vector<Values> &p, auto term) {
    double sum = 0;
    for (size_t i = 0; i < p[0].size(); ++i)
      sum += term(p[0][i], p[1][i]);
    return Values{sum / p[0].size()};
  };
  check({{s, s},
         {},
         "  %y = train.l1_loss %p0, %p1 : " + f32(s) + " -> tensor<f32>",
         [&](const std::vector<Values> &p) {
           return meanOf(p, [](double x, double t) { return std::abs(x - t); });
         },
         -3,
         3,
         0,
         {}},
        "l1_loss");
  check({{s, s},
         {},
         "  %y = train.smooth_l1_loss %p0, %p1 beta 1.5 : " + f32(s) +
             " -> tensor<f32>",
         [&](const std::vector<Values> &p) {
           return meanOf(p, [](double x, double t) {
             double d = std::abs(x - t);
             return d < 1.5 ? 0.5 * d * d / 1.5 : d - 0.75;
           });
         },
         -3,
         3,
         0,
         {}},
        "smooth_l1_loss");
  check({{s, s},
         {},
         "  %y = train.bce_with_logits_loss %p0, %p1 : " + f32(s) +
             " -> tensor<f32>",
         [&](const std::vector<Values> &p) {
           return meanOf(p, [](double x, double t) {
             return (1 - t) * x + std::log1p(std::exp(-x));
           });
         },
         -3,
         3,
         0,
         {}},
        "bce_with_logits_loss");
}

// torch.maximum / minimum, with broadcasting: operands never equal in the
// draw, so each element's gradient goes to one side.
TEST_F(GradientCheck, MaximumMinimum) {
  Shape s = {4, 6}, row = {6};
  for (bool maximum : {true, false})
    check({{s, row},
           s,
           std::string("  %y = train.") + (maximum ? "maximum" : "minimum") +
               " %p0, %p1 : " + f32(s) + ", " + f32(row) + " -> " + f32(s),
           [=](const std::vector<Values> &p) {
             Values y(24);
             for (int i = 0; i < 24; ++i)
               y[i] = maximum ? std::max(p[0][i], p[1][i % 6])
                              : std::min(p[0][i], p[1][i % 6]);
             return y;
           }},
          maximum ? "maximum" : "minimum");
}

TEST_F(GradientCheck, Conv2d) {
  struct Conv {
    Shape x, w, strides, padding, dilation;
  };
  const Conv cases[] = {{{2, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}},
                        {{1, 2, 7, 6}, {2, 2, 3, 2}, {2, 3}, {1, 0}, {1, 1}},
                        {{1, 1, 7, 7}, {2, 1, 2, 2}, {1, 2}, {2, 1}, {2, 2}}};
  auto attr = [](const Shape &v) {
    return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
  };
  // The runtime's convolutions, then the im2col GEMMs (with col2im for the
  // input gradient) amp-lower-cuda uses, through CBLAS.
  for (bool asGemm : {false, true})
    for (const Conv &cv : cases) {
      compileOptions.convAsGemm = asGemm;
      Shape out;
      ref::conv2d(Values(ref::numElements(cv.x)), cv.x,
                  Values(ref::numElements(cv.w)), cv.w, cv.strides, cv.padding,
                  cv.dilation, out);
      GradCase c{{cv.x, cv.w},
                 out,
                 "  %y = train.conv2d %p0, %p1 strides " + attr(cv.strides) +
                     " padding " + attr(cv.padding) + " dilation " +
                     attr(cv.dilation) + " : " + f32(cv.x) + ", " + f32(cv.w) +
                     " -> " + f32(out),
                 [=](const std::vector<Values> &p) {
                   Shape o;
                   return ref::conv2d(p[0], cv.x, p[1], cv.w, cv.strides,
                                      cv.padding, cv.dilation, o);
                 },
                 -1,
                 1,
                 0,
                 {}};
      check(c, std::string(asGemm ? "im2col " : "") + "conv2d strides " +
                   attr(cv.strides) + " padding " + attr(cv.padding) +
                   " dilation " + attr(cv.dilation));
    }
  compileOptions.convAsGemm = false;
}

// Grouped and depthwise convolutions (groups > 1, the linalg lowering on
// every backend), with strides, padding, dilation and a bias: each group
// is an ordinary convolution of its channels.
TEST_F(GradientCheck, GroupedConv2d) {
  struct Conv {
    Shape x, w, strides, padding, dilation;
    int64_t groups;
  };
  const Conv cases[] = {
      {{2, 4, 5, 5}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2},
      {{1, 3, 7, 6}, {3, 1, 3, 3}, {2, 1}, {1, 1}, {1, 1}, 3},  // depthwise
      {{1, 2, 7, 7}, {4, 1, 2, 2}, {1, 2}, {1, 0}, {2, 2}, 2}}; // multiplier 2
  auto attr = [](const Shape &v) {
    return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
  };
  for (const Conv &cv : cases) {
    int64_t g = cv.groups, cg = cv.x[1] / g, fg = cv.w[0] / g;
    Shape xg = {cv.x[0], cg, cv.x[2], cv.x[3]}, out;
    ref::conv2d(Values(ref::numElements(xg)), xg, Values(ref::numElements(cv.w)),
                {fg, cg, cv.w[2], cv.w[3]}, cv.strides, cv.padding, cv.dilation,
                out);
    Shape full = {out[0], cv.w[0], out[2], out[3]};
    Shape bias = {cv.w[0]};
    GradCase c{{cv.x, cv.w, bias},
               full,
               "  %y = train.conv2d %p0, %p1, %p2 strides " + attr(cv.strides) +
                   " padding " + attr(cv.padding) + " dilation " +
                   attr(cv.dilation) + " groups " + std::to_string(g) + " : " +
                   f32(cv.x) + ", " + f32(cv.w) + ", " + f32(bias) + " -> " +
                   f32(full),
               [=](const std::vector<Values> &p) {
                 int64_t n = cv.x[0], hw = cv.x[2] * cv.x[3],
                         khw = cv.w[2] * cv.w[3], ohw = full[2] * full[3];
                 Values y(ref::numElements(full));
                 for (int64_t k = 0; k < g; ++k) {
                   Values xs(n * cg * hw), ws(fg * cg * khw);
                   for (int64_t i = 0; i < n; ++i)
                     for (int64_t c = 0; c < cg * hw; ++c)
                       xs[i * cg * hw + c] =
                           p[0][(i * cv.x[1] + k * cg) * hw + c];
                   for (int64_t f = 0; f < fg * cg * khw; ++f)
                     ws[f] = p[1][k * fg * cg * khw + f];
                   Shape o;
                   Values ys = ref::conv2d(xs, xg, ws, {fg, cg, cv.w[2], cv.w[3]},
                                           cv.strides, cv.padding, cv.dilation, o);
                   for (int64_t i = 0; i < n; ++i)
                     for (int64_t f = 0; f < fg; ++f)
                       for (int64_t q = 0; q < ohw; ++q)
                         y[(i * full[1] + k * fg + f) * ohw + q] =
                             ys[(i * fg + f) * ohw + q] + p[2][k * fg + f];
                 }
                 return y;
               },
               -1,
               1,
               0,
               {}};
    check(c, "conv2d groups " + std::to_string(g) + " strides " +
                 attr(cv.strides));
  }
}

// A convolution with its bias operand: y[n, f, ...] += b[f], through the
// runtime's convolution, the im2col GEMM and the generated loops.
TEST_F(GradientCheck, Conv2dBias) {
  Shape x = {2, 2, 5, 5}, w = {3, 2, 3, 3}, b = {3}, out = {2, 3, 3, 3};
  struct Mode {
    bool blas, asGemm;
    const char *name;
  };
  for (Mode mode : {Mode{true, false, "runtime"}, Mode{true, true, "im2col"},
                    Mode{false, false, "loops"}}) {
    compileOptions.blas = mode.blas;
    compileOptions.convAsGemm = mode.asGemm;
    GradCase c{{x, w, b},
               out,
               "  %y = train.conv2d %p0, %p1, %p2 : " + f32(x) + ", " + f32(w) +
                   ", " + f32(b) + " -> " + f32(out),
               [=](const std::vector<Values> &p) {
                 Shape o;
                 Values y = ref::conv2d(p[0], x, p[1], w, {1, 1}, {0, 0},
                                        {1, 1}, o);
                 for (size_t i = 0; i < y.size(); ++i)
                   y[i] += p[2][(i / 9) % 3];
                 return y;
               },
               -1,
               1,
               0,
               {}};
    check(c, std::string("conv2d with bias, ") + mode.name);
  }
  compileOptions = {};
}

TEST_F(GradientCheck, Pooling) {
  for (bool isMax : {true, false}) {
    // Windows that overlap, pad, or leave a column out (the gather lowering),
    // and windows that tile the input exactly (the element-wise one).
    // Dilated windows (MaxPool2d's dilation) take the gather too.
    for (auto [xs, kernel, strides, padding, dilation] :
         {std::make_tuple(Shape{2, 2, 6, 5}, Shape{2, 2}, Shape{2, 2},
                          Shape{0, 0}, Shape{1, 1}),
          std::make_tuple(Shape{2, 2, 6, 5}, Shape{3, 3}, Shape{2, 1},
                          Shape{1, 1}, Shape{1, 1}),
          std::make_tuple(Shape{2, 2, 6, 6}, Shape{2, 3}, Shape{2, 3},
                          Shape{0, 0}, Shape{1, 1}),
          std::make_tuple(Shape{2, 2, 7, 6}, Shape{3, 2}, Shape{1, 2},
                          Shape{1, 1}, Shape{2, 3})}) {
      Shape out;
      ref::pool2d(Values(ref::numElements(xs)), xs, kernel, strides, padding,
                  isMax, out, dilation);
      auto attr = [](const Shape &v) {
        return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "]";
      };
      std::string op = isMax ? "train.max_pool2d" : "train.avg_pool2d";
      GradCase c{{xs},
                 out,
                 "  %y = " + op + " %p0 kernel " + attr(kernel) + " strides " +
                     attr(strides) + " padding " + attr(padding) +
                     " dilation " + attr(dilation) + " : " + f32(xs) + " -> " +
                     f32(out),
                 [=](const std::vector<Values> &p) {
                   Shape o;
                   return ref::pool2d(p[0], xs, kernel, strides, padding, isMax,
                                      o, dilation);
                 },
                 -2,
                 2,
                 0,
                 {}};
      check(c, op + " kernel " + attr(kernel) + " dilation " + attr(dilation));
    }
  }
}

TEST_F(GradientCheck, LayerNorm) {
  Shape xs = {3, 2, 4};
  for (Shape ns : {Shape{4}, Shape{2, 4}}) {
    GradCase c{
        {xs, ns, ns},
        xs,
        "  %y = train.layer_norm %p0, %p1, %p2 : " + f32(xs) + ", " + f32(ns),
        [=](const std::vector<Values> &p) {
          return ref::layerNorm(p[0], ref::numElements(ns), p[1], p[2], 1e-5);
        },
        -2,
        2,
        0,
        {}};
    check(c, "layer_norm over " + std::to_string(ns.size()) + " dims");
  }
}

TEST_F(GradientCheck, BatchNorm) {
  Shape xs = {4, 3, 2, 2}, cs = {3};
  std::vector<float> zeros(3, 0.0f), ones(3, 1.0f);
  GradCase c{{xs, cs, cs},
             xs,
             "  %y, %nm, %nv = train.batch_norm %p0, %p1, %p2, %e0, %e1 : " +
                 f32(xs) + ", " + f32(cs),
             [=](const std::vector<Values> &p) {
               Values m(3, 0.0), v(3, 1.0);
               return ref::batchNorm(p[0], xs, p[1], p[2], m, v, 1e-5, 0.1);
             },
             -2,
             2,
             0,
             {}};
  c.extras.push_back(
      {f32(cs), HostTensor::fromFloats(ElementKind::F32, cs, zeros)});
  c.extras.push_back(
      {f32(cs), HostTensor::fromFloats(ElementKind::F32, cs, ones)});
  check(c, "batch_norm");
}

TEST_F(GradientCheck, EmbeddingConcatSlice) {
  // Repeated indices accumulate into one row; out-of-range ones are clamped.
  std::vector<int32_t> ids = {3, 1, 3, 0, 7, -2};
  GradCase e{{{5, 3}},
             {2, 3, 3},
             "  %y = train.embedding %p0, %e0 : " + f32({5, 3}) +
                 ", tensor<2x3xi32> -> " + f32({2, 3, 3}),
             [=](const std::vector<Values> &p) {
               Values y;
               for (int32_t id : ids) {
                 int32_t row = std::min(std::max(id, 0), 4);
                 y.insert(y.end(), p[0].begin() + row * 3,
                          p[0].begin() + row * 3 + 3);
               }
               return y;
             },
             -1,
             1,
             0,
             {}};
  e.extras.push_back({"tensor<2x3xi32>", HostTensor::fromInts({2, 3}, ids)});
  check(e, "embedding");

  check({{{2, 3}, {2, 2}},
         {2, 5},
         "  %y = train.concat %p0, %p1 axis 1 : " + f32({2, 3}) + ", " +
             f32({2, 2}) + " -> " + f32({2, 5}),
         [](const std::vector<Values> &p) {
           Values y;
           for (int i = 0; i < 2; ++i) {
             y.insert(y.end(), p[0].begin() + i * 3, p[0].begin() + i * 3 + 3);
             y.insert(y.end(), p[1].begin() + i * 2, p[1].begin() + i * 2 + 2);
           }
           return y;
         }},
        "concat");

  check({{{4, 5}},
         {2, 3},
         "  %y = train.slice %p0 offsets [1, 2] : " + f32({4, 5}) + " -> " +
             f32({2, 3}),
         [](const std::vector<Values> &p) {
           Values y;
           for (int i = 1; i < 3; ++i)
             for (int j = 2; j < 5; ++j)
               y.push_back(p[0][i * 5 + j]);
           return y;
         }},
        "slice");
}

/// A two-layer MLP with a loss, end to end: the chain rule across ops.
TEST_F(GradientCheck, MlpEndToEnd) {
  std::vector<int32_t> labels = {1, 0, 2};
  std::vector<float> x = {0.5f, -1.0f, 0.25f, 2.0f,  1.5f,   -0.5f,
                          0.0f, 1.0f,  -2.0f, 0.75f, -1.25f, 0.5f};
  GradCase c{{{4, 5}, {5}, {5, 3}, {3}},
             {},
             "  %h = train.matmul %e0, %p0, %p1 : tensor<3x4xf32>, " +
                 f32({4, 5}) + ", " + f32({5}) + " -> " + f32({3, 5}) +
                 "\n  %a = train.tanh %h : " + f32({3, 5}) +
                 "\n  %o = train.matmul %a, %p2, %p3 : " + f32({3, 5}) + ", " +
                 f32({5, 3}) + ", " + f32({3}) + " -> " + f32({3, 3}) +
                 "\n  %y = train.cross_entropy %o, %e1 : " + f32({3, 3}) +
                 ", tensor<3xi32> -> tensor<f32>",
             [=](const std::vector<Values> &p) {
               Values xv(x.begin(), x.end());
               Values h = ref::matmul(xv, p[0], 0, 3, 5, 4, false, false);
               for (int i = 0; i < 15; ++i)
                 h[i] = std::tanh(h[i] + p[1][i % 5]);
               Values o = ref::matmul(h, p[2], 0, 3, 3, 5, false, false);
               for (int i = 0; i < 9; ++i)
                 o[i] += p[3][i % 3];
               return Values{ref::crossEntropy(o, 3, 3, labels)};
             },
             -1,
             1,
             0,
             {}};
  c.extras.push_back(
      {"tensor<3x4xf32>", HostTensor::fromFloats(ElementKind::F32, {3, 4}, x)});
  c.extras.push_back({"tensor<3xi32>", HostTensor::fromInts({3}, labels)});
  check(c, "mlp");
}

} // namespace
