//===- BlasLoweringTest.cpp - CBLAS runtime calls against loops -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-lower-cpu sends GEMMs and convolutions to the CBLAS runtime; with
// blas=false they become generated loops. Both form exact products and
// accumulate in f32, in different orders. A whole compiled training step
// (forward, backward, SGD with learning rate 1, loss scaler) of each example
// at O0, O1-f16 and O1-bf16 runs both ways on the same inputs, and every
// result must agree normwise: ||blas - loops|| <= tol * ||loops - before||,
// where `before` is the argument a result updates (so a parameter is judged
// by its update, the gradient, not by its value) or zero for the loss and
// scaler outputs. tol is 5e-5 at O0 (f32 summation order, amplified by
// batch norm; measured up to 1e-5), 2e-3 for f16 and 1e-2 for bf16 steps:
// about one ulp of the stored type (2^-10, 2^-7), for flips at rounding
// boundaries propagating through the layers (measured 1.5e-4 and 4e-5).
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/Execution/CpuJit.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Training/StepAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "gtest/gtest.h"

#include <cmath>
#include <random>

using namespace amp;
using namespace mlir;

namespace {

/// The inputs of a first training step: pixels in [0, 1), labels in
/// [0, 10), parameters uniform in [-0.1, 0.1] (f32 masters equal to them),
/// zero batch-norm state, a learning rate of 1, a 1024 loss scale.
std::vector<HostTensor> stepInputs(const CpuFunction &fn, const StepAbi &abi) {
  std::mt19937 rng(5);
  llvm::ArrayRef<TensorSpec> specs = fn.getArgumentSpecs();
  auto random = [&](const TensorSpec &spec, float lo, float hi) {
    int64_t n = 1;
    for (int64_t d : spec.shape)
      n *= d;
    std::uniform_real_distribution<float> uniform(lo, hi);
    std::vector<float> values(n);
    for (float &v : values)
      v = uniform(rng);
    return HostTensor::fromFloats(spec.kind, spec.shape, values);
  };
  std::vector<HostTensor> args;
  for (const TensorSpec &spec : specs)
    args.emplace_back(spec.kind, spec.shape);
  args[abi.input] = random(specs[abi.input], 0, 1);
  std::vector<int32_t> labels(specs[abi.labels].shape[0]);
  for (int32_t &v : labels)
    v = int32_t(rng() % 10);
  args[abi.labels] = HostTensor::fromInts(specs[abi.labels].shape, labels);
  for (auto [i, param] : llvm::enumerate(abi.params)) {
    args[param] = random(specs[param], -0.1f, 0.1f);
    if (i < abi.masters.size())
      args[abi.masters[i]] = HostTensor::fromFloats(
          ElementKind::F32, specs[param].shape, args[param].toFloats());
  }
  args[*abi.lr] = HostTensor::fromFloats(ElementKind::F32, {}, {1.0f});
  if (!abi.scaler.empty())
    args[abi.scaler[0]] =
        HostTensor::fromFloats(ElementKind::F32, {}, {1024.0f});
  return args;
}

struct Case {
  const char *model, *optLevel, *dtype;
  /// Convolutions as im2col GEMMs (amp-lower-cuda's form) on the BLAS side.
  bool convAsGemm = false;
  /// amp-lower-cuda's two-stage reductions on the BLAS side.
  bool splitReductions = false;
};

class BlasLowering : public ::testing::TestWithParam<Case> {};

TEST_P(BlasLowering, StepMatchesLoops) {
  Case c = GetParam();
  test::TestContext context;
  OwningOpRef<ModuleOp> module = context.parseExample(c.model);
  ASSERT_TRUE(module);
  AmpPipelineOptions options;
  options.optLevel = *amp::train::parseOptLevel(c.optLevel);
  options.dtype = *amp::train::parseLowType(c.dtype);
  options.optimizer = amp::train::OptimizerKind::sgd;
  ASSERT_TRUE(succeeded(test::runAmpPipeline(*module, options)));
  auto abi = readStepAbi(module->lookupSymbol<func::FuncOp>("train_step"));
  ASSERT_TRUE(bool(abi)) << llvm::toString(abi.takeError());

  CpuCompileOptions blas, loops;
  loops.blas = false;
  blas.convAsGemm = c.convAsGemm;
  blas.splitReductions = c.splitReductions;
  auto fast = CpuFunction::compile(*module, "train_step", blas);
  ASSERT_TRUE(bool(fast)) << llvm::toString(fast.takeError());
  auto slow = CpuFunction::compile(*module, "train_step", loops);
  ASSERT_TRUE(bool(slow)) << llvm::toString(slow.takeError());

  std::vector<HostTensor> args = stepInputs(**fast, *abi);
  std::vector<const HostTensor *> pointers;
  for (const HostTensor &a : args)
    pointers.push_back(&a);
  auto a = (*fast)->call(pointers);
  ASSERT_TRUE(bool(a)) << llvm::toString(a.takeError());
  auto b = (*slow)->call(pointers);
  ASSERT_TRUE(bool(b)) << llvm::toString(b.takeError());
  ASSERT_EQ(a->size(), b->size());
  // Results 1.. update these arguments, in order.
  llvm::SmallVector<unsigned> updated(abi->state);
  llvm::append_range(updated, abi->params);
  llvm::append_range(updated, abi->masters);
  double tol = std::string(c.optLevel) == "O0" ? 5e-5
               : std::string(c.dtype) == "f16" ? 2e-3
                                               : 1e-2;
  // The loop lowering sums the CNN's batch-norm statistics (100 352 terms a
  // channel) sequentially in f32, which drifts by ~1e-3 relative; the split
  // reductions sum chunks and are closer to exact
  // (test/Conversion/amp-split-reductions-run.mlir), so the two steps
  // differ by that drift, not by rounding.
  if (c.splitReductions && std::string(c.model) == "cnn")
    tol = 2e-2;
  double worst = 0;
  for (size_t r = 0; r < a->size(); ++r) {
    const HostTensor &x = (*a)[r], &y = (*b)[r];
    const HostTensor *before =
        r >= 1 && r <= updated.size() ? &args[updated[r - 1]] : nullptr;
    double diff = 0, change = 0;
    for (int64_t i = 0; i < y.getNumElements(); ++i) {
      double u = x.getAsDouble(i), v = y.getAsDouble(i);
      double base = before ? before->getAsDouble(i) : 0.0;
      diff += (u - v) * (u - v);
      change += (v - base) * (v - base);
    }
    diff = std::sqrt(diff), change = std::sqrt(change);
    if (before && llvm::is_contained(abi->params, updated[r - 1])) {
      EXPECT_GT(change, 0.0) << "result #" << r << ": parameter not updated";
    }
    if (change > 0)
      worst = std::max(worst, diff / change);
    EXPECT_LE(diff, tol * change)
        << "result #" << r << ": ||blas - loops|| = " << diff
        << ", ||loops - before|| = " << change;
  }
  std::printf(
      "  largest ||blas - loops|| / ||loops - before||: %.3g (tolerance "
      "%.3g)\n",
      worst, tol);
}

INSTANTIATE_TEST_SUITE_P(
    Examples, BlasLowering,
    ::testing::Values(Case{"mlp", "O0", "f16"}, Case{"mlp", "O1", "f16"},
                      Case{"mlp", "O1", "bf16"}, Case{"cnn", "O0", "f16"},
                      Case{"cnn", "O1", "f16"}, Case{"cnn", "O0", "f16", true},
                      Case{"cnn", "O1", "f16", true},
                      Case{"cnn", "O1", "bf16", true},
                      Case{"mlp", "O1", "f16", false, true},
                      Case{"cnn", "O1", "f16", true, true},
                      Case{"cnn", "O0", "f16", false, true}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.model) + "_" + info.param.optLevel + "_" +
             info.param.dtype + (info.param.convAsGemm ? "_im2col" : "") +
             (info.param.splitReductions ? "_split" : "");
    });

} // namespace
