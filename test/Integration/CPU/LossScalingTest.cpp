//===- LossScalingTest.cpp - GradScaler's state machine, compiled ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// train.update_scale and train.unscale_grads through the JIT against
// PyTorch GradScaler's behaviour (shared/AMP-REFERENCE.md), including the
// state machine the loss-scaling issue names: scale 4, growth 2, backoff
// 0.25, interval 2 -> two clean steps give 8 with tracker 0; an overflow
// gives 2 with tracker 0; a growth that would overflow f32 is refused.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/Execution/CpuJit.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

using namespace amp;
using namespace mlir;

namespace {

/// @train_step of `model` after the pass pipeline `pipeline`, JIT-compiled;
/// null after a gtest failure saying why.
std::unique_ptr<CpuFunction> compileStep(test::TestContext &context,
                                         const char *model,
                                         const std::string &pipeline) {
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(model, &context);
  PassManager pm(&context);
  if (!module || failed(parsePassPipeline(pipeline, pm)) ||
      failed(pm.run(*module))) {
    ADD_FAILURE() << pipeline;
    return nullptr;
  }
  auto fn = CpuFunction::compile(*module, "train_step");
  if (!fn) {
    ADD_FAILURE() << llvm::toString(fn.takeError());
    return nullptr;
  }
  return std::move(*fn);
}

class LossScaling : public ::testing::Test {
protected:
  /// Compiles @f of `source`.
  std::unique_ptr<CpuFunction> compile(const std::string &source) {
    return test::compileFunction(context, source);
  }

  /// One update: (scale, tracker, found) -> (scale', tracker', collapsed).
  std::tuple<float, int, bool> update(CpuFunction &fn, float scale, int tracker,
                                      bool found) {
    HostTensor s = HostTensor::fromFloats(ElementKind::F32, {}, {scale});
    HostTensor t = HostTensor::fromInts({}, {tracker});
    HostTensor f = HostTensor::fromBools({}, {found});
    auto out = fn.call({&s, &t, &f});
    EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
    return {float((*out)[0].getAsDouble(0)), int((*out)[1].getAsDouble(0)),
            (*out)[2].getAsDouble(0) != 0};
  }

  static std::string updateFunction(const std::string &attrs) {
    return "func.func @f(%s: tensor<f32>, %t: tensor<i32>, %f: tensor<i1>) -> "
           "(tensor<f32>, tensor<i32>, tensor<i1>) {\n"
           "  %a, %b, %c = train.update_scale %s, %t, %f " +
           attrs +
           " : tensor<f32>, tensor<i32>\n"
           "  return %a, %b, %c : tensor<f32>, tensor<i32>, tensor<i1>\n}\n";
  }

  test::TestContext context;
};

TEST_F(LossScaling, GradScalerStateMachine) {
  auto fn = compile(updateFunction(
      "growth_factor 2.0 backoff_factor 0.25 growth_interval 2"));
  ASSERT_TRUE(fn);
  auto [s1, t1, c1] = update(*fn, 4.0f, 0, false);
  EXPECT_EQ(s1, 4.0f);
  EXPECT_EQ(t1, 1);
  auto [s2, t2, c2] = update(*fn, s1, t1, false);
  EXPECT_EQ(s2, 8.0f) << "two clean steps grow the scale";
  EXPECT_EQ(t2, 0);
  auto [s3, t3, c3] = update(*fn, s2, t2, true);
  EXPECT_EQ(s3, 2.0f) << "an overflow backs off";
  EXPECT_EQ(t3, 0);
  EXPECT_FALSE(c1 || c2 || c3);
  // A growth that would overflow f32 is refused, and the tracker resets.
  float big = std::numeric_limits<float>::max() / 1.5f;
  auto [s4, t4, c4] = update(*fn, big, 1, false);
  EXPECT_EQ(s4, big);
  EXPECT_EQ(t4, 0);
  // An overflow in the middle of an interval resets the tracker.
  auto [s5, t5, c5] = update(*fn, 16.0f, 1, true);
  EXPECT_EQ(s5, 4.0f);
  EXPECT_EQ(t5, 0);
}

TEST_F(LossScaling, PyTorchDefaultsAndCaps) {
  // PyTorch's defaults: growth 2, backoff 0.5, interval 2000.
  auto fn = compile(updateFunction("min_scale 1.0 max_scale 16777216.0"));
  ASSERT_TRUE(fn);
  auto [s1, t1, c1] = update(*fn, 65536.0f, 1998, false);
  EXPECT_EQ(s1, 65536.0f);
  EXPECT_EQ(t1, 1999);
  auto [s2, t2, c2] = update(*fn, s1, t1, false);
  EXPECT_EQ(s2, 131072.0f);
  EXPECT_EQ(t2, 0);
  // Apex's cap: growth stops at max_scale = 2^24.
  auto [s3, t3, c3] = update(*fn, 16777216.0f, 1999, false);
  EXPECT_EQ(s3, 16777216.0f);
  // The floor: a backoff below min_scale stays at it and reports collapse.
  auto [s4, t4, c4] = update(*fn, 1.5f, 0, true);
  EXPECT_EQ(s4, 1.0f);
  EXPECT_TRUE(c4);
  auto [s5, t5, c5] = update(*fn, 4.0f, 0, true);
  EXPECT_EQ(s5, 2.0f);
  EXPECT_FALSE(c5);
}

/// hysteresis 3: two overflows in a row are tolerated (the tracker counts
/// them as -1, -2), the third backs off; a clean step in between restarts
/// both counts.
TEST_F(LossScaling, Hysteresis) {
  auto fn = compile(updateFunction("growth_interval 3 hysteresis 3"));
  ASSERT_TRUE(fn);
  struct Step {
    bool found;
    float scale;
    int tracker;
  };
  const Step steps[] = {{false, 1024, 1}, {true, 1024, -1}, {true, 1024, -2},
                        {false, 1024, 1}, {true, 1024, -1}, {true, 1024, -2},
                        {true, 512, 0},   {true, 512, -1},  {false, 512, 1},
                        {false, 512, 2},  {false, 1024, 0}};
  float scale = 1024;
  int tracker = 0;
  for (const Step &step : steps) {
    auto [s, t, c] = update(*fn, scale, tracker, step.found);
    EXPECT_EQ(s, step.scale) << "after " << (&step - steps) << " steps";
    EXPECT_EQ(t, step.tracker) << "after " << (&step - steps) << " steps";
    EXPECT_FALSE(c);
    scale = s;
    tracker = t;
  }
}

TEST_F(LossScaling, UnscaleAndDetect) {
  auto fn = compile(
      "func.func @f(%s: tensor<f32>, %a: tensor<2x3xf32>, %b: tensor<4xf16>) "
      "-> (tensor<2x3xf32>, tensor<4xf16>, tensor<i1>) {\n"
      "  %r:3 = train.unscale_grads %s grads(%a, %b) : tensor<f32>, "
      "(tensor<2x3xf32>, tensor<4xf16>)\n"
      "  return %r#0, %r#1, %r#2 : tensor<2x3xf32>, tensor<4xf16>, tensor<i1>\n"
      "}\n");
  ASSERT_TRUE(fn);
  HostTensor scale = HostTensor::fromFloats(ElementKind::F32, {}, {65536.0f});
  std::vector<float> av = {65536, -32768, 3, 0, 1e-3f, 7e4f};
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {2, 3}, av);
  HostTensor b =
      HostTensor::fromFloats(ElementKind::F16, {4}, {2048, -64, 1, 0});
  auto out = fn->call({&scale, &a, &b});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<float> got = (*out)[0].toFloats();
  for (size_t i = 0; i < av.size(); ++i)
    EXPECT_EQ(got[i], av[i] * float(1.0 / 65536.0)) << i;
  EXPECT_EQ((*out)[1].toFloats(),
            (std::vector<float>{0.03125f, -0.0009765625f,
                                halfToFloat(floatToHalf(1.0f / 65536)), 0}));
  EXPECT_EQ((*out)[2].getAsDouble(0), 0.0);

  // An inf in one gradient, then a NaN in the other: found.
  for (int which = 0; which < 2; ++which) {
    HostTensor bad =
        which == 0
            ? HostTensor::fromFloats(
                  ElementKind::F32, {2, 3},
                  {1, 2, std::numeric_limits<float>::infinity(), 4, 5, 6})
            : a;
    HostTensor badB = which == 1
                          ? HostTensor::fromFloats(ElementKind::F16, {4},
                                                   {1, std::nanf(""), 3, 4})
                          : b;
    auto o = fn->call({&scale, &bad, &badB});
    ASSERT_TRUE(bool(o)) << llvm::toString(o.takeError());
    EXPECT_EQ((*o)[2].getAsDouble(0), 1.0) << "case " << which;
  }
}

/// train.check_numerics (check-numerics' measure): each value's largest
/// magnitude exactly, in f32; +inf when it holds an inf of either sign and
/// no NaN; NaN when it holds a NaN; 0 for zeros; in f32, f16 and bf16.
TEST_F(LossScaling, CheckNumericsMagnitudes) {
  auto fn = compile("func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf16>, "
                    "%c: tensor<3xbf16>) -> tensor<3xf32> {\n"
                    "  %m = train.check_numerics %a, %b, %c : tensor<2x3xf32>, "
                    "tensor<4xf16>, tensor<3xbf16>\n"
                    "  return %m : tensor<3xf32>\n"
                    "}\n");
  ASSERT_TRUE(fn);
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  auto run = [&](std::vector<float> av, std::vector<float> bv,
                 std::vector<float> cv) {
    HostTensor a = HostTensor::fromFloats(ElementKind::F32, {2, 3}, av);
    HostTensor b = HostTensor::fromFloats(ElementKind::F16, {4}, bv);
    HostTensor c = HostTensor::fromFloats(ElementKind::BF16, {3}, cv);
    auto out = fn->call({&a, &b, &c});
    EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
    return out ? (*out)[0].toFloats() : std::vector<float>();
  };
  std::vector<float> got =
      run({1.5f, -7e30f, 3, 0, -1e-3f, 2}, {-65504, 1, 0, 2}, {0, 0, 0});
  EXPECT_EQ(got, (std::vector<float>{7e30f, 65504, 0}));
  // A -inf counts as an inf; a NaN wins over an inf in the same value.
  got = run({1, -inf, 2, 3, 4, 5}, {1, inf, nan, -2}, {-3, 1, -inf});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], inf);
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_EQ(got[2], inf);
  got = run({nan, 1, 2, 3, 4, 5}, {0, 0, 0, 0}, {nan, 2, 3});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 0.0f);
  EXPECT_TRUE(std::isnan(got[2]));
}

/// `smallest`: after the largest magnitudes, each value's smallest nonzero
/// finite one (zeros, infs and NaNs skipped; a subnormal counts; 0 when
/// nothing qualifies).
TEST_F(LossScaling, CheckNumericsSmallestMagnitudes) {
  auto fn = compile(
      "func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf16>, "
      "%c: tensor<3xbf16>) -> tensor<6xf32> {\n"
      "  %m = train.check_numerics %a, %b, %c smallest : tensor<2x3xf32>, "
      "tensor<4xf16>, tensor<3xbf16>\n"
      "  return %m : tensor<6xf32>\n"
      "}\n");
  ASSERT_TRUE(fn);
  float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {2, 3},
                                        {0, -3e-3f, inf, 2, -1e-30f, nan});
  HostTensor b =
      HostTensor::fromFloats(ElementKind::F16, {4}, {-6e-8f, 1, 0, 65504});
  HostTensor c = HostTensor::fromFloats(ElementKind::BF16, {3}, {0, 0, inf});
  auto out = fn->call({&a, &b, &c});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<float> got = (*out)[0].toFloats();
  ASSERT_EQ(got.size(), 6u);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], 65504.0f);
  EXPECT_EQ(got[2], inf);
  EXPECT_EQ(got[3], 1e-30f);
  // f16's smallest subnormal, 2^-24, is what -6e-8 rounds to.
  EXPECT_EQ(got[4], std::ldexp(1.0f, -24));
  EXPECT_EQ(got[5], 0.0f);
}

/// `divisor 3` (a data-parallel mean over 3 ranks folded into unscaling):
/// each element times float(1 / (scale * 3)), the factor computed in f64 and
/// rounded once, which differs from dividing by the scale and then by 3 in
/// f32 for some of these values.
TEST_F(LossScaling, UnscaleWithDivisor) {
  auto fn = compile(
      "func.func @f(%s: tensor<f32>, %a: tensor<5xf32>) "
      "-> (tensor<5xf32>, tensor<i1>) {\n"
      "  %r:2 = train.unscale_grads %s grads(%a) divisor 3 : tensor<f32>, "
      "(tensor<5xf32>)\n"
      "  return %r#0, %r#1 : tensor<5xf32>, tensor<i1>\n"
      "}\n");
  ASSERT_TRUE(fn);
  const float s = 1000.0f;
  HostTensor scale = HostTensor::fromFloats(ElementKind::F32, {}, {s});
  std::vector<float> av = {3000, -1, 0.7f, 12345.678f, 1e-20f};
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {5}, av);
  auto out = fn->call({&scale, &a});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  std::vector<float> got = (*out)[0].toFloats();
  const float inv = float(1.0 / (double(s) * 3.0));
  int differsFromTwoDivisions = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    EXPECT_EQ(got[i], av[i] * inv) << i;
    differsFromTwoDivisions += got[i] != av[i] * float(1.0 / s) / 3.0f;
  }
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_GT(differsFromTwoDivisions, 0);
  EXPECT_EQ((*out)[1].getAsDouble(0), 0.0);
}

/// A non-finite forward never reaches the state (docs/LossScaling.md): a
/// batch-norm step whose input holds a NaN keeps its running statistics
/// and parameters bit for bit and names the loss; a step whose gradients
/// alone overflow (an infinite scale) updates the statistics exactly as the
/// step without loss scaling does and names the first gradient backward
/// made (the last layer's); a clean step reports nothing.
TEST_F(LossScaling, NonfiniteForwardKeepsRunningStatistics) {
  const char *model = R"mlir(
func.func @f(%x: tensor<4x3xf32>, %w1: tensor<3x2xf32> {train.param},
             %g: tensor<2xf32> {train.param}, %b: tensor<2xf32> {train.param},
             %m: tensor<2xf32> {train.state}, %v: tensor<2xf32> {train.state},
             %w2: tensor<2x2xf32> {train.param})
    -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>) {
  %h = train.matmul %x, %w1 : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %y, %m2, %v2 = train.batch_norm %h, %g, %b, %m, %v : tensor<4x2xf32>, tensor<2xf32>
  %z = train.matmul %y, %w2 : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  %l = train.reduce_mean %z axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l, %m2, %v2 : tensor<f32>, tensor<2xf32>, tensor<2xf32>
}
)mlir";
  auto build = [&](const char *pipeline) {
    return compileStep(context, model, pipeline);
  };
  auto scaled = build("amp-autodiff,amp-optimizer{optimizer=sgd},"
                      "amp-loss-scaling{init-scale=1024}");
  auto plain = build("amp-autodiff,amp-optimizer{optimizer=sgd}");
  ASSERT_TRUE(scaled && plain);
  // Arguments: x, w1, g, b, m, v, w2, lr (, scale, tracker). Results: loss,
  // m', v', w1', g', b', w2' (, scale', tracker', found_inf, collapsed,
  // nonfinite).
  auto f = [](std::vector<int64_t> shape, std::vector<float> values) {
    return HostTensor::fromFloats(ElementKind::F32, shape, values);
  };
  auto arguments = [&](float x0, bool withScaler, float scale) {
    std::vector<HostTensor> a;
    a.push_back(f({4, 3}, {x0, 0.5f, -1.25f, 2.0f, -0.75f, 0.3f, 0.9f, 1.7f,
                           -2.2f, -0.4f, 1.1f, 0.6f}));
    a.push_back(f({3, 2}, {0.3f, -0.2f, 0.7f, 0.1f, -0.5f, 0.4f}));
    a.push_back(f({2}, {1.1f, 0.9f}));
    a.push_back(f({2}, {0.1f, -0.1f}));
    a.push_back(f({2}, {0.25f, -0.5f}));
    a.push_back(f({2}, {1.5f, 0.75f}));
    a.push_back(f({2, 2}, {0.6f, -0.3f, 0.2f, 0.8f}));
    a.push_back(f({}, {0.1f}));
    if (withScaler) {
      a.push_back(f({}, {scale}));
      a.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
    }
    return a;
  };
  auto call = [](CpuFunction &fn, const std::vector<HostTensor> &a) {
    std::vector<const HostTensor *> p;
    for (const HostTensor &t : a)
      p.push_back(&t);
    auto out = fn.call(p);
    EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
    return out ? std::move(*out) : std::vector<HostTensor>();
  };
  auto same = [](const HostTensor &a, const HostTensor &b) {
    return a.getSizeInBytes() == b.getSizeInBytes() &&
           std::memcmp(a.data(), b.data(), a.getSizeInBytes()) == 0;
  };
  const float inf = std::numeric_limits<float>::infinity();

  // Clean: nothing reported; the statistics are the plain step's.
  std::vector<HostTensor> a = arguments(1.0f, true, 1024.0f);
  std::vector<HostTensor> out = call(*scaled, a);
  std::vector<HostTensor> ref = call(*plain, arguments(1.0f, false, 0));
  ASSERT_EQ(out.size(), 12u);
  ASSERT_EQ(ref.size(), 7u);
  EXPECT_EQ(out[9].getAsDouble(0), 0.0) << "found_inf";
  EXPECT_EQ(out[11].getAsDouble(0), -1.0) << "nothing non-finite";
  EXPECT_TRUE(same(out[1], ref[1]) && same(out[2], ref[2]));
  EXPECT_FALSE(same(out[1], a[4])) << "the running mean moved";

  // A NaN in the forward: the update is skipped, the running statistics
  // keep their values, and the loss is what a skip reports (index 0).
  a = arguments(std::nanf(""), true, 1024.0f);
  out = call(*scaled, a);
  ASSERT_EQ(out.size(), 12u);
  EXPECT_NE(out[9].getAsDouble(0), 0.0) << "found_inf";
  EXPECT_EQ(out[11].getAsDouble(0), 0.0) << "the loss";
  EXPECT_TRUE(same(out[1], a[4])) << "running mean kept";
  EXPECT_TRUE(same(out[2], a[5])) << "running variance kept";
  for (auto [r, arg] : {std::pair{3, 1}, {4, 2}, {5, 3}, {6, 6}})
    EXPECT_TRUE(same(out[r], a[arg])) << "parameter result " << r;
  // (Without loss scaling the same step writes NaN into them: PyTorch's.)
  ref = call(*plain, arguments(std::nanf(""), false, 0));
  ASSERT_EQ(ref.size(), 7u);
  EXPECT_TRUE(std::isnan(ref[1].getAsDouble(0)));

  // Only the gradients overflow (an infinite scale): skipped, but the
  // running statistics update as the plain step's; the first gradient in
  // backward's order is w2's: operand 3 + 3 (the loss, two statistics,
  // then w1, g, b, w2).
  a = arguments(1.0f, true, inf);
  out = call(*scaled, a);
  ref = call(*plain, arguments(1.0f, false, 0));
  ASSERT_EQ(out.size(), 12u);
  EXPECT_NE(out[9].getAsDouble(0), 0.0) << "found_inf";
  EXPECT_EQ(out[11].getAsDouble(0), 6.0) << "w2's gradient";
  EXPECT_TRUE(same(out[1], ref[1]) && same(out[2], ref[2]));
  for (auto [r, arg] : {std::pair{3, 1}, {4, 2}, {5, 3}, {6, 6}})
    EXPECT_TRUE(same(out[r], a[arg])) << "parameter result " << r;
}

/// Fault injection (PyTorch's _run_scaling_case): a poisoned input at the
/// chosen steps makes every gradient non-finite. Those steps are skipped
/// (parameters and Adam's state, step count included, bit-identical), the
/// scale backs off, and the final parameters equal those of an unscaled f32
/// run that simply leaves the poisoned steps out: exactly when the scaled
/// run is f32 too (scales are powers of two, so scaling and unscaling are
/// exact), within `tolerance` when it computes in f16.
struct FaultCase {
  const char *scaledPipeline;
  std::vector<int> poisoned;
  float poison;
  float tolerance;
  std::vector<float> expectedScale; // after each of the 5 steps
};

class FaultInjection : public ::testing::TestWithParam<FaultCase> {
protected:
  std::unique_ptr<CpuFunction> build(const std::string &pipeline) {
    const char *model = R"mlir(
func.func @f(%x: tensor<2x4xf32>, %w: tensor<4x3xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<2x4xf32>, tensor<4x3xf32> -> tensor<2x3xf32>
  %l = train.reduce_sum %y axes [0, 1] : tensor<2x3xf32> -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";
    return compileStep(context, model, pipeline);
  }
  test::TestContext context;
};

TEST_P(FaultInjection, PoisonedStepsAreSkipped) {
  const FaultCase &c = GetParam();
  auto scaled = build(c.scaledPipeline);
  auto plain = build("amp-autodiff,amp-optimizer{optimizer=adam}");
  ASSERT_TRUE(scaled && plain);
  auto isPoisoned = [&](int step) {
    return llvm::is_contained(c.poisoned, step);
  };
  std::vector<float> w0(12);
  for (int i = 0; i < 12; ++i)
    w0[i] = 0.25f * float(i % 5) - 0.5f;
  auto data = [&](int step) {
    // Not representable in f16: the f16 run really rounds.
    std::vector<float> x = {1.1f + step, -0.53f,      0.27f * step + 0.1f,
                            3.3f,        0.51f,       2.07f,
                            -1.13f,      0.13f * step};
    if (isPoisoned(step))
      x[1] = c.poison;
    return HostTensor::fromFloats(ElementKind::F32, {2, 4}, x);
  };
  // Scaled step: x, w, m, v, step, lr, scale, tracker ->
  //              loss, w', m', v', step', scale', tracker', found_inf,
  //              collapsed.
  // Plain step:  x, w, m, v, step, lr -> loss, w', m', v', step'.
  auto initial = [&](bool withScaler) {
    std::vector<HostTensor> a;
    a.push_back(data(0));
    a.push_back(HostTensor::fromFloats(ElementKind::F32, {4, 3}, w0));
    a.emplace_back(ElementKind::F32, llvm::ArrayRef<int64_t>{4, 3});
    a.emplace_back(ElementKind::F32, llvm::ArrayRef<int64_t>{4, 3});
    a.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
    a.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {0.1f}));
    if (withScaler) {
      a.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {1024.0f}));
      a.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
    }
    return a;
  };
  auto pointers = [](const std::vector<HostTensor> &a) {
    std::vector<const HostTensor *> p;
    for (const HostTensor &t : a)
      p.push_back(&t);
    return p;
  };
  std::vector<HostTensor> s = initial(true), p = initial(false);
  ASSERT_EQ(s.size(), scaled->getArgumentSpecs().size());

  for (int step = 0; step < 5; ++step) {
    s[0] = data(step);
    auto out = scaled->call(pointers(s));
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    bool found = (*out)[7].getAsDouble(0) != 0;
    EXPECT_EQ(found, isPoisoned(step)) << "step " << step;
    EXPECT_EQ((*out)[8].getAsDouble(0), 0.0) << "no collapse";
    if (isPoisoned(step)) {
      for (int i = 1; i <= 4; ++i) {
        EXPECT_EQ(
            std::memcmp((*out)[i].data(), s[i].data(), s[i].getSizeInBytes()),
            0)
            << "result " << i << " changed in skipped step " << step;
      }
    }
    for (int i = 1; i <= 4; ++i)
      s[i] = std::move((*out)[i]);
    s[6] = std::move((*out)[5]);
    s[7] = std::move((*out)[6]);
    EXPECT_EQ(s[6].getAsDouble(0), c.expectedScale[step]) << "step " << step;
    if (isPoisoned(step))
      continue; // the plain run leaves the faulty step out
    p[0] = data(step);
    auto plainOut = plain->call(pointers(p));
    ASSERT_TRUE(bool(plainOut)) << llvm::toString(plainOut.takeError());
    for (int i = 1; i <= 4; ++i)
      p[i] = std::move((*plainOut)[i]);
  }
  std::vector<float> got = s[1].toFloats(), want = p[1].toFloats();
  double maxDiff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], c.tolerance) << "parameter " << i;
    maxDiff = std::max(maxDiff, double(std::fabs(got[i] - want[i])));
  }
  std::printf("  max |scaled - plain| over the parameters: %.3g\n", maxDiff);
  EXPECT_EQ(s[4].getAsDouble(0), 5.0 - c.poisoned.size())
      << "Adam counted only the clean steps";
}

// growth-interval 2 from 1024: clean steps count towards growth, poisoned
// ones halve the scale and reset the count.
INSTANTIATE_TEST_SUITE_P(
    Cases, FaultInjection,
    ::testing::Values(
        // f32 step, an inf at step 2: bit-exact against the plain run.
        FaultCase{"amp-autodiff,amp-optimizer{optimizer=adam},"
                  "amp-loss-scaling{init-scale=1024 growth-interval=2}",
                  {2},
                  std::numeric_limits<float>::infinity(),
                  0.0f,
                  {1024, 2048, 1024, 1024, 2048}},
        // O1 f16 matmuls, NaN at steps 1 and 3: within f16 rounding.
        // Adam's steps are ~lr = 0.1 each and nearly sign-like, so f16
        // gradients (2^-11 relative) move them by far less than 1e-4
        // (measured: 8.9e-6).
        FaultCase{"amp-autocast{opt-level=O1 dtype=f16},amp-autodiff,"
                  "amp-optimizer{optimizer=adam},"
                  "amp-loss-scaling{init-scale=1024 growth-interval=2},"
                  "amp-cast-cleanup",
                  {1, 3},
                  std::nanf(""),
                  1e-4f,
                  {1024, 512, 512, 256, 256}},
        // O1 f16, an f16 overflow in the forward at steps 1 and 3: 1e5 is
        // finite in f32 but past f16's 65504, so the f16 activations hold
        // inf. The scaler must see it (found_inf, skip, back-off), not train
        // on an inf loss.
        FaultCase{"amp-autocast{opt-level=O1 dtype=f16},amp-autodiff,"
                  "amp-optimizer{optimizer=adam},"
                  "amp-loss-scaling{init-scale=1024 growth-interval=2},"
                  "amp-cast-cleanup",
                  {1, 3},
                  1e5f,
                  1e-4f,
                  {1024, 512, 512, 256, 256}}));

} // namespace
