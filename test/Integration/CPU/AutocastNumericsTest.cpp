//===- AutocastNumericsTest.cpp - Autocast graphs run and stay accurate ---===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// examples/mlp.mlir through amp-pipeline at every opt level and low type,
// lowered and JIT-compiled, against an f64 forward pass on the same data.
// Relative loss tolerances: 1e-5 when the loss is computed and returned in
// f32 (O0, O1, and O2, where Apex casts the model's outputs to f32: the MLP's
// O2 step then computes what O1's does); at O3 the loss itself is rounded to
// the low type, which costs up to half an ulp (2^-11 = 4.9e-4 for f16), so
// 1e-3. Measured (printed by the test): O0 1.9e-8, O1 and O2 f16 1.0e-6, O1
// and O2 bf16 4.3e-7, O3 f16 3.2e-4 (O2 was 3.2e-4 f16 and 2.0e-3 bf16 while
// its loss ran in the low type). At the initialization the loss is close to
// ln(10) and insensitive to the logits; OpNumericsTest checks each op's
// f16/bf16 results element by element.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"
#include "TestContext.h"

#include "amp/Execution/CpuJit.h"
#include "amp/Pipelines/Pipelines.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <random>

using namespace amp;
using namespace mlir;

namespace {

struct Config {
  const char *optLevel, *dtype;
  double rtol;
};

/// The f64 MLP loss: relu(relu(x W1 + b1) W2 + b2) W3 + b3, cross-entropy.
double referenceLoss(const std::vector<std::vector<float>> &params,
                     const std::vector<float> &x,
                     const std::vector<int32_t> &labels) {
  const int64_t batch = 128, dims[] = {784, 256, 128, 10};
  ref::Values act(x.begin(), x.end());
  for (int layer = 0; layer < 3; ++layer) {
    ref::Values w(params[2 * layer].begin(), params[2 * layer].end());
    ref::Values out = ref::matmul(act, w, 0, batch, dims[layer + 1],
                                  dims[layer], false, false);
    for (int64_t i = 0; i < int64_t(out.size()); ++i) {
      out[i] += params[2 * layer + 1][i % dims[layer + 1]];
      if (layer < 2)
        out[i] = std::max(out[i], 0.0);
    }
    act = std::move(out);
  }
  return ref::crossEntropy(act, batch, 10, labels);
}

class AutocastNumerics : public ::testing::TestWithParam<Config> {};

TEST_P(AutocastNumerics, MlpLossMatchesReference) {
  Config config = GetParam();
  test::TestContext context;
  OwningOpRef<ModuleOp> module = context.parseExample("mlp");
  ASSERT_TRUE(module);

  AmpPipelineOptions options;
  options.optLevel = *amp::train::parseOptLevel(config.optLevel);
  options.dtype = *amp::train::parseLowType(config.dtype);
  ASSERT_TRUE(succeeded(test::runAmpPipeline(*module, options)));

  auto fn = CpuFunction::compile(*module, "forward");
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());

  // Data like normalized pixels; parameters like PyTorch's Linear init.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(128 * 784);
  for (float &v : x)
    v = pixel(rng);
  std::vector<int32_t> labels(128);
  std::uniform_int_distribution<int32_t> cls(0, 9);
  for (int32_t &l : labels)
    l = cls(rng);
  const int64_t dims[] = {784, 256, 128, 10};
  std::vector<std::vector<float>> params;
  for (int layer = 0; layer < 3; ++layer) {
    float bound = 1.0f / std::sqrt(float(dims[layer]));
    std::uniform_real_distribution<float> init(-bound, bound);
    std::vector<float> w(dims[layer] * dims[layer + 1]), b(dims[layer + 1]);
    for (float &v : w)
      v = init(rng);
    for (float &v : b)
      v = init(rng);
    params.push_back(std::move(w));
    params.push_back(std::move(b));
  }

  // The argument types come from the compiled signature (O2/O3 store the
  // parameters in the low type).
  llvm::ArrayRef<TensorSpec> specs = (*fn)->getArgumentSpecs();
  std::vector<HostTensor> inputs;
  inputs.push_back(HostTensor::fromFloats(specs[0].kind, specs[0].shape, x));
  inputs.push_back(HostTensor::fromInts(specs[1].shape, labels));
  for (int i = 0; i < 6; ++i)
    inputs.push_back(HostTensor::fromFloats(specs[2 + i].kind,
                                            specs[2 + i].shape, params[i]));
  std::vector<const HostTensor *> pointers;
  for (const HostTensor &t : inputs)
    pointers.push_back(&t);

  auto outputs = (*fn)->call(pointers);
  ASSERT_TRUE(bool(outputs)) << llvm::toString(outputs.takeError());
  double loss = (*outputs)[0].getAsDouble(0);
  double expected = referenceLoss(params, x, labels);
  double relative = std::fabs(loss - expected) / expected;
  RecordProperty("relative_error", std::to_string(relative));
  std::printf("  %s %s: loss %.7f, f64 reference %.7f, relative error %.1e\n",
              config.optLevel, config.dtype, loss, expected, relative);
  EXPECT_NEAR(loss, expected, config.rtol * expected)
      << config.optLevel << " " << config.dtype;
}

INSTANTIATE_TEST_SUITE_P(
    Levels, AutocastNumerics,
    ::testing::Values(Config{"O0", "f16", 1e-5}, Config{"O1", "f16", 1e-5},
                      Config{"O1", "bf16", 1e-5}, Config{"O2", "f16", 1e-5},
                      Config{"O2", "bf16", 1e-5}, Config{"O3", "f16", 1e-3}),
    [](const ::testing::TestParamInfo<Config> &info) {
      return std::string(info.param.optLevel) + "_" + info.param.dtype;
    });

} // namespace
