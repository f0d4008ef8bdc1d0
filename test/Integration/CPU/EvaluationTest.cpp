//===- EvaluationTest.cpp - The evaluation function of amp-run ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// addLogitsFunction on a model with batch norm, compiled at O0 and O1-f16:
// the logits must be the f64 inference-mode formula
//   ((x - running_mean) / sqrt(running_var + eps) * scale + bias) @ w
// (rtol 1e-5 at O0; at O1 the matmul reads f16 operands: 2^-9 of the row's
// sum of |terms|), and a row's logits must not change when the other rows of
// its batch do (training-mode batch norm would normalize by the batch).
// A model of two heads and two loss terms: its marked outputs are the
// evaluation's results (exact at O0: one product per element); without the
// marks, two loss ops name no logits and the error says so.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Execution/CpuJit.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Training/Evaluation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace amp;
using namespace mlir;

namespace {

constexpr const char *kModel = R"mlir(
func.func @forward(%x: tensor<4x3xf32>, %labels: tensor<4xi32>,
    %g: tensor<3xf32> {train.param}, %b: tensor<3xf32> {train.param},
    %m: tensor<3xf32> {train.state}, %v: tensor<3xf32> {train.state},
    %w: tensor<3x2xf32> {train.param}) -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>) {
  %n, %m2, %v2 = train.batch_norm %x, %g, %b, %m, %v : tensor<4x3xf32>, tensor<3xf32>
  %y = train.matmul %n, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = train.cross_entropy %y, %labels : tensor<4x2xf32>, tensor<4xi32> -> tensor<f32>
  return %l, %m2, %v2 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}
)mlir";

class Evaluation : public ::testing::TestWithParam<const char *> {};

TEST_P(Evaluation, InferenceBatchNormLogits) {
  bool o1 = std::string(GetParam()) == "O1";
  test::TestContext context;
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModel, &context);
  ASSERT_TRUE(module);
  AmpPipelineOptions options;
  options.optLevel = *amp::train::parseOptLevel(GetParam());
  ASSERT_TRUE(succeeded(test::runAmpPipeline(*module, options)));
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(succeeded(addLogitsFunction(*module, forward)));
  auto logits = module->lookupSymbol<func::FuncOp>("forward_logits");
  ASSERT_TRUE(logits);
  EXPECT_TRUE(logits.getOps<train::BatchNormOp>().empty());
  auto fn = CpuFunction::compile(*module, "forward_logits");
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());

  std::vector<float> x = {0.5f, -1.0f, 2.0f, 1.5f,  0.25f, -0.5f,
                          3.0f, 2.0f,  1.0f, -2.0f, 0.0f,  0.75f};
  std::vector<float> g = {1.5f, 0.5f, 2.0f}, b = {0.1f, -0.2f, 0.3f},
                     m = {0.4f, -0.3f, 1.0f}, v = {2.0f, 0.5f, 0.25f},
                     w = {1.0f, -1.0f, 0.5f, 2.0f, -1.5f, 0.25f};
  auto run = [&](const std::vector<float> &input) {
    std::vector<HostTensor> args;
    args.push_back(HostTensor::fromFloats(ElementKind::F32, {4, 3}, input));
    args.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{4});
    for (const std::vector<float> *p : {&g, &b, &m, &v})
      args.push_back(HostTensor::fromFloats(ElementKind::F32, {3}, *p));
    args.push_back(HostTensor::fromFloats(ElementKind::F32, {3, 2}, w));
    std::vector<const HostTensor *> pointers;
    for (const HostTensor &t : args)
      pointers.push_back(&t);
    auto out = (*fn)->call(pointers);
    EXPECT_TRUE(bool(out)) << llvm::toString(out.takeError());
    return (*out)[0].toFloats();
  };
  std::vector<float> got = run(x);
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 2; ++c) {
      double want = 0, magnitude = 0;
      for (int k = 0; k < 3; ++k) {
        double n =
            (x[r * 3 + k] - m[k]) / std::sqrt(double(v[k]) + 1e-5) * g[k] +
            b[k];
        want += n * w[k * 2 + c];
        magnitude += std::abs(n * w[k * 2 + c]);
      }
      double tol = o1 ? magnitude / 512 : 1e-5 * magnitude + 1e-6;
      EXPECT_NEAR(got[r * 2 + c], want, tol) << "row " << r << " col " << c;
    }
  // Other rows change; row 0's logits do not.
  std::vector<float> other = x;
  for (int i = 3; i < 12; ++i)
    other[i] = other[i] * 7.0f + 3.0f;
  std::vector<float> again = run(other);
  EXPECT_EQ(again[0], got[0]);
  EXPECT_EQ(again[1], got[1]);
}

INSTANTIATE_TEST_SUITE_P(Levels, Evaluation, ::testing::Values("O0", "O1"));

constexpr const char *kTwoHeads = R"mlir(
func.func @forward(%x: tensor<2x2xf32>, %labels: tensor<2xi32>,
    %w: tensor<2x2xf32> {train.param}, %v: tensor<2x2xf32> {train.param})
    -> (tensor<f32>, tensor<2x2xf32> {train.output}, tensor<2x2xf32> {train.output}) {
  %y = train.matmul %x, %w : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %z = train.matmul %x, %v : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
  %a = train.cross_entropy %y, %labels : tensor<2x2xf32>, tensor<2xi32> -> tensor<f32>
  %b = train.cross_entropy %z, %labels : tensor<2x2xf32>, tensor<2xi32> -> tensor<f32>
  %c = train.constant dense<0.3> : tensor<f32>
  %bc = train.mul %b, %c : tensor<f32>, tensor<f32> -> tensor<f32>
  %l = train.add %a, %bc : tensor<f32>, tensor<f32> -> tensor<f32>
  return %l, %y, %z : tensor<f32>, tensor<2x2xf32>, tensor<2x2xf32>
}
)mlir";

TEST(EvaluationOutputs, MarkedOutputsAreTheResults) {
  test::TestContext context;
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kTwoHeads, &context);
  ASSERT_TRUE(module);
  ASSERT_TRUE(succeeded(test::runAmpPipeline(*module, AmpPipelineOptions())));
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  ASSERT_TRUE(succeeded(addLogitsFunction(*module, forward)));
  auto logits = module->lookupSymbol<func::FuncOp>("forward_logits");
  ASSERT_TRUE(logits);
  EXPECT_EQ(logits.getNumResults(), 2u);
  EXPECT_TRUE(logits.getOps<train::CrossEntropyOp>().empty());
  auto fn = CpuFunction::compile(*module, "forward_logits");
  ASSERT_TRUE(bool(fn)) << llvm::toString(fn.takeError());
  std::vector<float> x = {1, 2, 3, 4}, w = {0.5f, -1, 2, 0.25f},
                     v = {-3, 1, 0.5f, 2};
  std::vector<HostTensor> args;
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {2, 2}, x));
  args.emplace_back(ElementKind::I32, llvm::ArrayRef<int64_t>{2});
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {2, 2}, w));
  args.push_back(HostTensor::fromFloats(ElementKind::F32, {2, 2}, v));
  std::vector<const HostTensor *> pointers;
  for (const HostTensor &t : args)
    pointers.push_back(&t);
  auto out = (*fn)->call(pointers);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(out->size(), 2u);
  for (auto [head, weights] : {std::make_pair(0, &w), std::make_pair(1, &v)}) {
    std::vector<float> got = (*out)[head].toFloats();
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c)
        EXPECT_EQ(got[r * 2 + c], x[r * 2] * (*weights)[c] +
                                      x[r * 2 + 1] * (*weights)[2 + c])
            << "head " << head << " row " << r << " col " << c;
  }
}

TEST(EvaluationOutputs, TwoLossesWithoutOutputsIsAnError) {
  test::TestContext context;
  std::string text = kTwoHeads;
  for (size_t at; (at = text.find(" {train.output}")) != std::string::npos;)
    text.erase(at, std::string(" {train.output}").size());
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  auto forward = module->lookupSymbol<func::FuncOp>("forward");
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  EXPECT_TRUE(failed(addLogitsFunction(*module, forward)));
  EXPECT_NE(message.find("evaluation needs the model's outputs"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("(2 loss ops)"), std::string::npos) << message;
}

} // namespace
