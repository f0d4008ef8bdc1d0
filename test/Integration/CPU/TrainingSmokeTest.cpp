//===- TrainingSmokeTest.cpp - A compiled training step learns ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// examples/mlp.mlir through amp-pipeline (autocast, autodiff, Adam) at O0 and
// O1-f16, JIT-compiled, trained for 25 steps on one synthetic batch whose
// labels come from a random linear teacher. The loss must fall below 60% of
// its first value, finitely, at both levels; at O1 the step carries the
// dynamic loss scaler, which must never skip or collapse here.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/Execution/CpuJit.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Training/StepAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace amp;
using namespace mlir;

namespace {

class TrainingSmoke : public ::testing::TestWithParam<const char *> {};

TEST_P(TrainingSmoke, MlpLossFalls) {
  test::TestContext context;
  OwningOpRef<ModuleOp> module = context.parseExample("mlp");
  ASSERT_TRUE(module);
  AmpPipelineOptions options;
  options.optLevel = *amp::train::parseOptLevel(GetParam());
  options.optimizer = amp::train::OptimizerKind::adam;
  ASSERT_TRUE(succeeded(test::runAmpPipeline(*module, options)));
  // The step ABI: data, parameters, optimizer state, then the learning
  // rate, then (f16 at O1) the loss scaler's scale and growth tracker.
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  ASSERT_TRUE(step);
  auto abi = readStepAbi(step);
  ASSERT_TRUE(bool(abi)) << llvm::toString(abi.takeError());
  ASSERT_TRUE(abi->lr.has_value());
  unsigned lrIndex = *abi->lr, numScaler = abi->scaler.size();
  ASSERT_EQ(numScaler, std::string(GetParam()) == "O1" ? 2u : 0u);
  auto fn = CpuFunction::compile(*module, "train_step");
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> pixel(0, 1);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(128 * 784), teacher(784 * 10);
  for (float &v : x)
    v = pixel(rng);
  for (float &v : teacher)
    v = normal(rng);
  std::vector<int32_t> labels(128);
  for (int n = 0; n < 128; ++n) {
    int best = 0;
    double bestScore = -1e30;
    for (int c = 0; c < 10; ++c) {
      double score = 0;
      for (int k = 0; k < 784; ++k)
        score += x[n * 784 + k] * teacher[k * 10 + c];
      if (score > bestScore) {
        bestScore = score;
        best = c;
      }
    }
    labels[n] = best;
  }

  // Arguments: x, labels, 6 parameters (PyTorch Linear init), 12 moments, the
  // step count, the learning rate.
  llvm::ArrayRef<TensorSpec> specs = (*fn)->getArgumentSpecs();
  std::vector<HostTensor> args;
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {128, 784}, x));
  args.push_back(HostTensor::fromInts({128}, labels));
  const int64_t fanIn[] = {784, 784, 256, 256, 128, 128};
  for (int i = 0; i < 6; ++i) {
    const TensorSpec &spec = specs[2 + i];
    float bound = 1.0f / std::sqrt(float(fanIn[i]));
    std::uniform_real_distribution<float> init(-bound, bound);
    int64_t n = 1;
    for (int64_t d : spec.shape)
      n *= d;
    std::vector<float> values(n);
    for (float &v : values)
      v = init(rng);
    args.push_back(HostTensor::fromFloats(spec.kind, spec.shape, values));
  }
  for (size_t i = 8; i < lrIndex; ++i)
    args.emplace_back(specs[i].kind, specs[i].shape);
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {1e-3f}));
  if (numScaler) {
    args.push_back(HostTensor::fromFloats(ElementKind::F32, {}, {65536.0f}));
    args.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{});
  }

  std::vector<double> losses;
  int skipped = 0;
  for (int step = 0; step < 25; ++step) {
    std::vector<const HostTensor *> pointers;
    for (const HostTensor &a : args)
      pointers.push_back(&a);
    auto out = (*fn)->call(pointers);
    ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
    losses.push_back((*out)[0].getAsDouble(0));
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << step;
    // Results: loss, 6 parameters, 12 moments, step -> arguments 2..20;
    // then scale, tracker -> the scaler arguments; found_inf, collapsed.
    for (size_t i = 1; i < lrIndex - 1; ++i)
      args[1 + i] = std::move((*out)[i]);
    if (numScaler) {
      args[lrIndex + 1] = std::move((*out)[lrIndex - 1]);
      args[lrIndex + 2] = std::move((*out)[lrIndex]);
      skipped += (*out)[lrIndex + 1].getAsDouble(0) != 0;
      ASSERT_EQ((*out)[lrIndex + 2].getAsDouble(0), 0.0) << "scale collapsed";
    }
  }
  std::printf("  %s: loss %.4f -> %.4f after 25 steps\n", GetParam(),
              losses.front(), losses.back());
  EXPECT_LT(losses.back(), 0.6 * losses.front());
  // A 2^16 scale on this small model must not overflow f16 gradients.
  EXPECT_EQ(skipped, 0);
}

INSTANTIATE_TEST_SUITE_P(Levels, TrainingSmoke, ::testing::Values("O0", "O1"));

} // namespace
