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

#include <cmath>
#include <cstring>
#include <limits>

using namespace amp;
using namespace mlir;

namespace {

class LossScaling : public ::testing::Test {
protected:
  /// Compiles @f of `source`.
  std::unique_ptr<CpuFunction> compile(const std::string &source) {
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context);
    EXPECT_TRUE(module) << source;
    if (!module)
      return nullptr;
    auto fn = CpuFunction::compile(*module, "f");
    if (!fn) {
      ADD_FAILURE() << llvm::toString(fn.takeError());
      return nullptr;
    }
    return std::move(*fn);
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

/// Fault injection: an inf in the data at step 2 makes every gradient
/// non-finite. That step is skipped (parameters and Adam's state, step count
/// included, bit-identical), the scale backs off, and the final parameters
/// equal those of an unscaled run that simply leaves step 2 out (scales are
/// powers of two, so scaling and unscaling are exact).
TEST_F(LossScaling, InjectedInfSkipsTheStepExactly) {
  const char *model = R"mlir(
func.func @f(%x: tensor<4xf32>, %w: tensor<4xf32> {train.param}) -> tensor<f32> {
  %p = train.mul %w, %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = train.reduce_sum %p axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";
  auto build =
      [&](const std::string &pipeline) -> std::unique_ptr<CpuFunction> {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(model, &context);
    PassManager pm(&context);
    if (failed(parsePassPipeline(pipeline, pm)) || failed(pm.run(*module))) {
      ADD_FAILURE() << pipeline;
      return nullptr;
    }
    auto fn = CpuFunction::compile(*module, "train_step");
    if (!fn) {
      ADD_FAILURE() << llvm::toString(fn.takeError());
      return nullptr;
    }
    return std::move(*fn);
  };
  auto scaled = build("amp-autodiff,amp-optimizer{optimizer=adam},"
                      "amp-loss-scaling{init-scale=1024 growth-interval=2}");
  auto plain = build("amp-autodiff,amp-optimizer{optimizer=adam}");
  ASSERT_TRUE(scaled && plain);

  std::vector<float> w0 = {0.5f, -1.0f, 2.0f, 0.25f};
  auto data = [](int step) {
    std::vector<float> x = {1.0f + step, -0.5f, 0.25f * step, 3.0f};
    if (step == 2)
      x[1] = std::numeric_limits<float>::infinity();
    return HostTensor::fromFloats(ElementKind::F32, {4}, x);
  };
  // Scaled step: x, w, m, v, step, lr, scale, tracker ->
  //              loss, w', m', v', step', scale', tracker', found_inf,
  //              collapsed.
  std::vector<HostTensor> s;
  s.push_back(data(0));
  s.push_back(HostTensor::fromFloats(ElementKind::F32, {4}, w0));
  s.emplace_back(ElementKind::F32, llvm::ArrayRef<int64_t>{4});
  s.emplace_back(ElementKind::F32, llvm::ArrayRef<int64_t>{4});
  s.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
  s.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {0.1f}));
  s.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {1024.0f}));
  s.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
  // Plain step: x, w, m, v, step, lr -> loss, w', m', v', step'.
  std::vector<HostTensor> p;
  p.push_back(data(0));
  p.push_back(HostTensor::fromFloats(ElementKind::F32, {4}, w0));
  p.emplace_back(ElementKind::F32, llvm::ArrayRef<int64_t>{4});
  p.emplace_back(ElementKind::F32, llvm::ArrayRef<int64_t>{4});
  p.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
  p.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {0.1f}));

  const float expectedScale[] = {1024, 2048, 1024, 1024, 2048};
  for (int step = 0; step < 5; ++step) {
    s[0] = data(step);
    std::vector<const HostTensor *> sp;
    for (const HostTensor &t : s)
      sp.push_back(&t);
    auto out = scaled->call(sp);
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    bool found = (*out)[7].getAsDouble(0) != 0;
    EXPECT_EQ(found, step == 2) << "step " << step;
    EXPECT_EQ((*out)[8].getAsDouble(0), 0.0) << "no collapse";
    if (step == 2) {
      for (int i = 1; i <= 4; ++i) {
        EXPECT_EQ(
            std::memcmp((*out)[i].data(), s[i].data(), s[i].getSizeInBytes()),
            0)
            << "result " << i << " changed in the skipped step";
      }
    }
    for (int i = 1; i <= 4; ++i)
      s[i] = std::move((*out)[i]);
    s[6] = std::move((*out)[5]);
    s[7] = std::move((*out)[6]);
    EXPECT_EQ(s[6].getAsDouble(0), expectedScale[step]) << "step " << step;
    if (step == 2)
      continue; // the plain run leaves the faulty step out
    p[0] = data(step);
    std::vector<const HostTensor *> pp;
    for (const HostTensor &t : p)
      pp.push_back(&t);
    auto plainOut = plain->call(pp);
    ASSERT_TRUE(bool(plainOut)) << llvm::toString(plainOut.takeError());
    for (int i = 1; i <= 4; ++i)
      p[i] = std::move((*plainOut)[i]);
  }
  EXPECT_EQ(s[1].toFloats(), p[1].toFloats()) << "final parameters";
  EXPECT_EQ(s[4].getAsDouble(0), 4.0) << "Adam counted only the 4 clean steps";
}

} // namespace
