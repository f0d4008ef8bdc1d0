//===- OptimizerTest.cpp - Compiled training steps vs hand references -----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// L(w, v) = 0.5 * (sum(w^2) + sum(v^2)), so the gradient of each parameter is
// the parameter itself. The compiled @train_step runs three steps (outputs fed
// back as inputs) for each optimizer; an f64 loop of PyTorch's formulas
// (docs/Autodiff.md) gives the reference. Tolerance 1e-6 relative.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "amp/Execution/CpuJit.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace amp;
using namespace mlir;

namespace {

struct Config {
  const char *name;
  std::string options;
  double momentum, weightDecay;
  bool nesterov, adam, decoupled;
  int accumulate = 1;
  double clipNorm = 0.0;
};

constexpr double kLr = 0.1, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

/// PyTorch's update of one parameter vector whose gradient is itself
/// (clipped to a global norm when asked).
void referenceStep(const Config &c, std::vector<double> &p,
                   std::vector<double> &s1, std::vector<double> &s2, int t) {
  double coef = 1.0;
  if (c.clipNorm > 0.0) {
    double sq = 0;
    for (double v : p)
      sq += v * v;
    coef = std::min(1.0, c.clipNorm / (std::sqrt(sq) + 1e-6));
  }
  for (size_t i = 0; i < p.size(); ++i) {
    double g = p[i] * coef;
    if (!c.adam) {
      g += c.weightDecay * p[i];
      double d = g;
      if (c.momentum != 0.0) {
        s1[i] = c.momentum * s1[i] + g;
        d = c.nesterov ? g + c.momentum * s1[i] : s1[i];
      }
      p[i] -= kLr * d;
      continue;
    }
    double param = p[i];
    if (c.decoupled)
      param *= 1 - kLr * c.weightDecay;
    else
      g += c.weightDecay * p[i];
    s1[i] = kBeta1 * s1[i] + (1 - kBeta1) * g;
    s2[i] = kBeta2 * s2[i] + (1 - kBeta2) * g * g;
    double bc1 = 1 - std::pow(kBeta1, t), bc2 = 1 - std::pow(kBeta2, t);
    p[i] =
        param - kLr / bc1 * s1[i] / (std::sqrt(s2[i]) / std::sqrt(bc2) + kEps);
  }
}

/// L(w, v) = 0.5 * (sum(w^2) + sum(v^2)) differentiated, with
/// amp-optimizer{options} added, compiled for the CPU: @train_step.
llvm::Expected<std::unique_ptr<CpuFunction>>
compileStep(MLIRContext &context, const std::string &options) {
  const char *src = R"mlir(
func.func @f(%w: tensor<5xf32> {train.param}, %v: tensor<2x3xf32> {train.param}) -> tensor<f32> {
  %half = train.constant dense<0.5> : tensor<f32>
  %ww = train.mul %w, %w : tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
  %vv = train.mul %v, %v : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %sw = train.reduce_sum %ww axes [0] : tensor<5xf32> -> tensor<f32>
  %sv = train.reduce_sum %vv axes [0, 1] : tensor<2x3xf32> -> tensor<f32>
  %s = train.add %sw, %sv : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = train.mul %s, %half : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l : tensor<f32>
}
)mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(src, &context);
  if (!module)
    return llvm::createStringError("the test model does not parse");
  PassManager pm(&context);
  pm.addPass(train::createAutodiffPass());
  if (failed(parsePassPipeline("amp-optimizer{" + options + "}", pm)) ||
      failed(pm.run(*module)))
    return llvm::createStringError("amp-optimizer{" + options + "} failed");
  return CpuFunction::compile(*module, "train_step");
}

class OptimizerStep : public ::testing::TestWithParam<Config> {};

TEST_P(OptimizerStep, ThreeStepsMatchPyTorchFormulas) {
  Config c = GetParam();
  test::TestContext context;
  auto fn = compileStep(context, c.options);
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());

  // Arguments: w, v, optimizer state (zeros), lr.
  llvm::ArrayRef<TensorSpec> specs = (*fn)->getArgumentSpecs();
  std::vector<float> w0 = {1.5f, -0.25f, 0.75f, -2.0f, 0.125f};
  std::vector<float> v0 = {0.5f, -1.0f, 3.0f, -0.5f, 0.0625f, 1.25f};
  std::vector<HostTensor> args;
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {5}, w0));
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {2, 3}, v0));
  for (size_t i = 2; i + 1 < specs.size(); ++i)
    args.emplace_back(specs[i].kind, specs[i].shape);
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {float(kLr)}));

  std::vector<double> p(w0.begin(), w0.end());
  p.insert(p.end(), v0.begin(), v0.end());
  std::vector<double> s1(p.size(), 0.0), s2(p.size(), 0.0);
  int updates = 0;
  for (int call = 1; call <= 3 * c.accumulate; ++call) {
    std::vector<const HostTensor *> pointers;
    for (const HostTensor &a : args)
      pointers.push_back(&a);
    std::vector<float> before = args[0].toFloats();
    auto out = (*fn)->call(pointers);
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    // Results: loss, w', v', optimizer state' -> next step's arguments.
    ASSERT_EQ(out->size(), specs.size());
    for (size_t i = 1; i < out->size(); ++i)
      args[i - 1] = std::move((*out)[i]);
    // With accumulation only every accumulate-th call updates (the mean of
    // equal gradients is the gradient); the others leave w bit-identical.
    if (call % c.accumulate != 0) {
      EXPECT_EQ(args[0].toFloats(), before) << c.name << " call " << call;
      continue;
    }
    referenceStep(c, p, s1, s2, ++updates);
  }
  std::vector<float> got = args[0].toFloats();
  std::vector<float> gotV = args[1].toFloats();
  got.insert(got.end(), gotV.begin(), gotV.end());
  for (size_t i = 0; i < p.size(); ++i)
    EXPECT_NEAR(got[i], p[i], 1e-6 * std::fabs(p[i]) + 1e-9)
        << c.name << " parameter element " << i;
  if (c.adam) {
    // The step count advanced to 3: pending micro-batches do not count.
    EXPECT_EQ(args[args.size() - 2].getAsDouble(0), 3.0);
  }
}

// The step writes its new parameters and Adam state into their arguments'
// buffers (amp-update-state-in-place): a session updates its own arguments
// in place, `call` leaves its inputs unchanged, and three steps give the
// same bits either way.
TEST(OptimizerInPlace, SessionMatchesPureCalls) {
  test::TestContext context;
  auto fn = compileStep(context, "optimizer=adamw weight-decay=0.01");
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());
  CompiledFunction &step = **fn;

  // Results: the loss, then w', v', m_w, m_v, v_w, v_v, count: each written
  // into the argument it replaces (arguments: w, v, the 5 states, lr).
  llvm::ArrayRef<TensorSpec> specs = step.getArgumentSpecs();
  ASSERT_EQ(specs.size(), 8u);
  std::vector<int64_t> expected = {-1, 0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(std::vector<int64_t>(step.getResultArguments().begin(),
                                 step.getResultArguments().end()),
            expected);

  std::vector<HostTensor> args;
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {5},
                                        {1.5f, -0.25f, 0.75f, -2.0f, 0.125f}));
  args.push_back(HostTensor::fromFloats(
      ElementKind::F32, {2, 3}, {0.5f, -1.0f, 3.0f, -0.5f, 0.0625f, 1.25f}));
  for (size_t i = 2; i + 1 < specs.size(); ++i)
    args.emplace_back(specs[i].kind, specs[i].shape);
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {0.1f}));

  auto session = openHostSession(step, step);
  ASSERT_TRUE(bool(session)) << llvm::toString(session.takeError());
  for (auto [i, a] : llvm::enumerate(args))
    ASSERT_FALSE(bool((*session)->set(i, a)));
  std::vector<ResultRoute> routes;
  for (int64_t a : expected)
    routes.push_back({int(a), a < 0});

  auto bytes = [](const HostTensor &t) {
    const char *p = static_cast<const char *>(t.data());
    return std::string(p, p + t.getSizeInBytes());
  };
  for (int call = 0; call < 3; ++call) {
    std::vector<const HostTensor *> pointers;
    std::vector<std::string> before;
    for (const HostTensor &a : args) {
      pointers.push_back(&a);
      before.push_back(bytes(a));
    }
    auto out = step.call(pointers);
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    ASSERT_EQ(out->size(), expected.size());
    for (auto [i, a] : llvm::enumerate(args))
      EXPECT_EQ(bytes(a), before[i])
          << "call " << call << " changed input #" << i;
    auto fromSession = (*session)->step(routes);
    ASSERT_TRUE(bool(fromSession)) << llvm::toString(fromSession.takeError());
    ASSERT_EQ(fromSession->size(), 1u);
    EXPECT_EQ(bytes((*fromSession)[0]), bytes((*out)[0])) << "loss";
    for (size_t r = 1; r < out->size(); ++r)
      args[r - 1] = std::move((*out)[r]);
  }
  for (auto [i, a] : llvm::enumerate(args)) {
    auto held = (*session)->get(i);
    ASSERT_TRUE(bool(held));
    EXPECT_EQ(bytes(*held), bytes(a)) << "argument #" << i;
  }
  // The parameters moved: the state really was updated.
  EXPECT_NE(args[0].toFloats()[0], 1.5f);

  // Two arguments the step updates in place in one buffer (the moments of
  // w, both tensor<5xf32>) are refused: the code takes its arguments for
  // distinct memory.
  {
    std::vector<HostTensor> shared = args;
    HostTensor one(ElementKind::F32, {5});
    shared[2] = HostTensor::borrow(ElementKind::F32, {5}, one.data());
    shared[4] = HostTensor::borrow(ElementKind::F32, {5}, one.data());
    std::vector<HostTensor *> pointers;
    for (HostTensor &a : shared)
      pointers.push_back(&a);
    std::vector<HostTensor> none;
    auto aliased = step.callUpdating(pointers, none);
    ASSERT_FALSE(bool(aliased));
    EXPECT_NE(llvm::toString(aliased.takeError()).find("shares its memory"),
              std::string::npos);
  }

  // A route that sends an in-place result elsewhere is refused.
  std::vector<ResultRoute> wrong = routes;
  wrong[1].toArgument = -1;
  auto refused = (*session)->step(wrong);
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("in place"),
            std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, OptimizerStep,
    ::testing::Values(
        Config{"sgd", "optimizer=sgd weight-decay=0.01", 0, 0.01, false, false,
               false},
        Config{"momentum", "optimizer=momentum momentum=0.9 weight-decay=0.01",
               0.9, 0.01, false, false, false},
        Config{"nesterov", "optimizer=momentum momentum=0.9 nesterov=true", 0.9,
               0, true, false, false},
        Config{"adam", "optimizer=adam weight-decay=0.01", 0, 0.01, false, true,
               false},
        Config{"adamw", "optimizer=adamw weight-decay=0.01", 0, 0.01, false,
               true, true},
        Config{"momentum_accumulate3", "optimizer=momentum accumulate=3", 0.9,
               0, false, false, false, 3},
        Config{"adam_accumulate2", "optimizer=adam accumulate=2", 0, 0, false,
               true, false, 2},
        Config{"sgd_clip", "optimizer=sgd clip-norm=0.5", 0, 0, false, false,
               false, 1, 0.5},
        Config{"adamw_accumulate2_clip",
               "optimizer=adamw weight-decay=0.01 accumulate=2 clip-norm=1.0",
               0, 0.01, false, true, true, 2, 1.0}),
    [](const ::testing::TestParamInfo<Config> &info) {
      return std::string(info.param.name);
    });

} // namespace
