//===- ArtifactManifestTest.cpp - The artifact manifest's JSON ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Artifact.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace amp;

namespace {

ArtifactManifest sample() {
  ArtifactManifest m;
  m.backend = "cuda";
  m.model = "examples/mlp.mlir";
  m.optLevel = "O2";
  m.dtype = "bf16";
  m.optimizer = "sgd";
  m.step = {"train_step",
            {{ElementKind::F32, {4, 3}},
             {ElementKind::I32, {4}},
             {ElementKind::BF16, {3, 2}},
             {ElementKind::F32, {3, 2}},
             {ElementKind::F32, {}}},
            {{ElementKind::F32, {}},
             {ElementKind::BF16, {3, 2}},
             {ElementKind::F32, {3, 2}},
             {ElementKind::I1, {}}}};
  m.logits = {"forward_logits",
              {m.step.arguments[0], m.step.arguments[1], m.step.arguments[2]},
              {{ElementKind::F32, {4, 2}}}};
  m.step.resultArguments = {-1, 2, 3, -1};
  m.abi.params = {2};
  m.abi.masters = {3};
  m.abi.state = {2, 3};
  m.abi.lr = 4;
  m.abi.numResults = 4;
  m.abi.persistent = {{"param.0", 2}, {"master.0", 3}};
  m.inits = {{2, InitSpec{"xavier_uniform", 0.0, 3, 2}},
             {3, InitSpec{"constant", 0.25, 0, 0}}};
  return m;
}

/// Parses `text`, expecting an error containing `expected`.
void expectError(const std::string &text, llvm::StringRef expected) {
  auto parsed = parseManifest(text);
  ASSERT_FALSE(bool(parsed)) << "accepted: " << text;
  std::string message = llvm::toString(parsed.takeError());
  EXPECT_NE(message.find(expected.str()), std::string::npos) << message;
}

/// The sample's JSON with `edit` applied to its root object.
std::string edited(llvm::function_ref<void(llvm::json::Object &)> edit) {
  auto value = llvm::json::parse(serializeManifest(sample()));
  EXPECT_TRUE(bool(value));
  edit(*value->getAsObject());
  std::string text;
  llvm::raw_string_ostream(text) << *value;
  return text;
}

TEST(ArtifactManifest, RoundTrips) {
  ArtifactManifest m = sample();
  auto parsed = parseManifest(serializeManifest(m));
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  EXPECT_EQ(parsed->backend, "cuda");
  EXPECT_EQ(parsed->optLevel, "O2");
  EXPECT_EQ(parsed->dtype, "bf16");
  EXPECT_EQ(parsed->optimizer, "sgd");
  ASSERT_EQ(parsed->step.arguments.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(parsed->step.arguments[i].kind, m.step.arguments[i].kind);
    EXPECT_EQ(parsed->step.arguments[i].shape, m.step.arguments[i].shape);
  }
  EXPECT_EQ(parsed->step.results.back().str(), "tensor<i1>");
  EXPECT_EQ(parsed->step.resultArguments, m.step.resultArguments);
  EXPECT_TRUE(parsed->logits.resultArguments.empty());
  // Version 2 marks a record of in-place results (a loader of version 1
  // would ignore it); without one the manifest is version 1's.
  EXPECT_NE(serializeManifest(m).find("\"amp-artifact/2\""), std::string::npos);
  ArtifactManifest old = m;
  old.step.resultArguments.clear();
  EXPECT_NE(serializeManifest(old).find("\"amp-artifact/1\""),
            std::string::npos);
  EXPECT_TRUE(bool(parseManifest(serializeManifest(old))));
  EXPECT_EQ(parsed->logits.name, "forward_logits");
  EXPECT_EQ(parsed->logits.results[0].str(), "tensor<4x2xf32>");
  EXPECT_EQ(parsed->abi.lr, std::optional<unsigned>(4));
  EXPECT_EQ(parsed->abi.params, m.abi.params);
  EXPECT_EQ(parsed->abi.state, m.abi.state);
  EXPECT_EQ(parsed->abi.persistent, m.abi.persistent);
  ASSERT_EQ(parsed->inits.size(), 2u);
  EXPECT_EQ(parsed->inits[0].second.kind, "xavier_uniform");
  EXPECT_EQ(parsed->inits[0].second.fanIn, 3);
  EXPECT_EQ(parsed->inits[0].second.fanOut, 2);
  EXPECT_EQ(parsed->inits[1].second.value, 0.25);
  // Evaluation's cross-entropy options: none by default, and both kept.
  EXPECT_FALSE(parsed->abi.evalLoss.ignoreIndex);
  EXPECT_EQ(parsed->abi.evalLoss.labelSmoothing, 0.0);
  ArtifactManifest scored = m;
  scored.abi.evalLoss.ignoreIndex = -100;
  scored.abi.evalLoss.labelSmoothing = 0.1;
  auto reparsed = parseManifest(serializeManifest(scored));
  ASSERT_TRUE(bool(reparsed)) << llvm::toString(reparsed.takeError());
  EXPECT_EQ(reparsed->abi.evalLoss.ignoreIndex, std::optional<int64_t>(-100));
  EXPECT_EQ(reparsed->abi.evalLoss.labelSmoothing, 0.1);
  // An artifact from before the record scores plain cross-entropy.
  auto older = parseManifest(
      edited([](auto &o) { o.getObject("abi")->erase("eval_loss"); }));
  ASSERT_TRUE(bool(older)) << llvm::toString(older.takeError());
  EXPECT_FALSE(older->abi.evalLoss.ignoreIndex);
}

TEST(ArtifactManifest, RejectsMalformed) {
  expectError("not json", "bad artifact manifest:");
  expectError("[1, 2]", "not a JSON object");
  expectError(edited([](auto &o) { o["format"] = "amp-artifact/0"; }),
              "format is 'amp-artifact/0', expected 'amp-artifact/2' or "
              "'amp-artifact/1'");
  expectError(edited([](auto &o) { o.erase("dtype"); }),
              "'dtype' is missing or not a string");
  expectError(edited([](auto &o) { o["backend"] = "tpu"; }),
              "unknown backend 'tpu'");
  expectError(edited([](auto &o) { o.erase("abi"); }), "'abi' is missing");
  expectError(edited([](auto &o) {
                (*o.getObject("step")->getArray("arguments"))[0] =
                    llvm::json::Object{{"type", "f8"}, {"shape", {1}}};
              }),
              "unknown element type 'f8'");
  expectError(edited([](auto &o) {
                (*o.getObject("abi"))["params"] = llvm::json::Array{7};
              }),
              "an argument index is out of range of @train_step's 5 arguments");
  expectError(edited([](auto &o) { (*o.getObject("abi"))["num_results"] = 3; }),
              "out of range");
  expectError(edited([](auto &o) {
                (*o.getObject("abi"))["eval_loss"] = llvm::json::Object{
                    {"ignore_index", "x"}, {"label_smoothing", 0.0}};
              }),
              "'eval_loss' has a malformed 'ignore_index'");
  expectError(edited([](auto &o) {
                (*o.getObject("abi"))["eval_loss"] =
                    llvm::json::Object{{"label_smoothing", 2.0}};
              }),
              "'eval_loss' has a malformed 'label_smoothing'");
  expectError(edited([](auto &o) {
                o["inits"] = llvm::json::Array{llvm::json::Object{{"x", 1}}};
              }),
              "'argument' is missing or not a non-negative integer");
  // The in-place record: one entry per result, each -1 or an argument of
  // the result's type, no argument twice.
  auto inPlace = [](std::vector<int64_t> record) {
    return edited([&](auto &o) {
      (*o.getObject("step"))["in_place"] = llvm::json::Array(record);
    });
  };
  expectError(inPlace({-1, 2, 3}), "3 entries for 4 results");
  expectError(inPlace({-1, 9, 3, -1}), "result #1 goes into argument #9 of 5");
  expectError(inPlace({-1, 2, 2, -1}), "two results go into argument #2");
  expectError(inPlace({-1, 3, 2, -1}), "result #1 is tensor<3x2xbf16>, "
                                       "argument #3 is tensor<3x2xf32>");
  expectError(inPlace({-2, 2, 3, -1}), "'in_place' of 'step' holds a bad index");
  expectError(edited([](auto &o) { (*o.getObject("step"))["in_place"] = 1; }),
              "'in_place' of 'step' is not an array");
}

} // namespace

/// check-numerics' site table: round-trips (a constant's inf and a
/// calibration's magnitude included), and each measured entry needs its own
/// place in the step's vector, read only from earlier entries.
TEST(ArtifactManifest, NumericsSites) {
  ArtifactManifest m = sample();
  NumericsSite argument;
  argument.kind = NumericsSite::Kind::Argument;
  argument.argument = 0;
  argument.check = 0;
  NumericsSite mask;
  mask.kind = NumericsSite::Kind::Constant;
  mask.magnitude = std::numeric_limits<double>::infinity();
  NumericsSite gemm;
  gemm.op = "train.matmul";
  gemm.module = "ffn.wi";
  gemm.file = "model.py";
  gemm.line = 28;
  gemm.backward = true;
  gemm.inputs = {0, 1};
  gemm.check = 1;
  gemm.calibrated = 2.5;
  m.abi.numerics = {argument, mask, gemm};
  auto parsed = parseManifest(serializeManifest(m));
  ASSERT_TRUE(bool(parsed)) << llvm::toString(parsed.takeError());
  ASSERT_EQ(parsed->abi.numerics.size(), 3u);
  EXPECT_EQ(parsed->abi.numerics[0].kind, NumericsSite::Kind::Argument);
  EXPECT_TRUE(std::isinf(parsed->abi.numerics[1].magnitude));
  const NumericsSite &got = parsed->abi.numerics[2];
  EXPECT_EQ(got.op, "train.matmul");
  EXPECT_EQ(got.module, "ffn.wi");
  EXPECT_EQ(got.line, 28);
  EXPECT_TRUE(got.backward);
  EXPECT_EQ(got.inputs, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(got.check, 1);
  EXPECT_EQ(got.calibrated, 2.5);

  auto withSites = [&](std::vector<NumericsSite> sites) {
    ArtifactManifest bad = sample();
    bad.abi.numerics = std::move(sites);
    return serializeManifest(bad);
  };
  NumericsSite later = gemm;
  later.inputs = {2};
  expectError(withSites({argument, mask, later}),
              "'numerics' entry 2 reads an entry that does not come before it");
  NumericsSite twice = gemm;
  twice.check = 0;
  expectError(withSites({argument, mask, twice}),
              "'numerics' measures two entries at 0");
  NumericsSite far = gemm;
  far.check = 7;
  expectError(withSites({argument, mask, far}),
              "'numerics' measures an entry at 7, out of range");
  NumericsSite gap = gemm;
  gap.check = 2;
  expectError(withSites({argument, mask, gap}),
              "'numerics' leaves a place of the step's vector unused");
}
