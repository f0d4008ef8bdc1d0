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
#include "gtest/gtest.h"

#include <cmath>
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

} // namespace
