//===- RunDataTest.cpp - amp-run's initializers and datasets --------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The values #train.init attributes produce (bounds and moments against the
// formulas, with sampling tolerances for 10^5 draws), and the IDX reader on
// well-formed, truncated and mislabelled gzip files.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainAttributes.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Training/Checkpoint.h"
#include "amp/Training/Datasets.h"
#include "amp/Training/Initializers.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <cmath>
#include <zlib.h>

using namespace amp;
using namespace amp::train;
using namespace mlir;

namespace {

class Initializers : public ::testing::Test {
protected:
  Initializers() { context.getOrLoadDialect<TrainDialect>(); }
  InitAttr init(llvm::StringRef text) {
    return dyn_cast_or_null<InitAttr>(parseAttribute(text, &context));
  }
  /// Mean and standard deviation of `values`.
  static std::pair<double, double> moments(const std::vector<float> &values) {
    double sum = 0, sq = 0;
    for (float v : values) {
      sum += v;
      sq += double(v) * v;
    }
    double mean = sum / values.size();
    return {mean, std::sqrt(sq / values.size() - mean * mean)};
  }
  MLIRContext context;
};

TEST_F(Initializers, FanInUniformIsPyTorchLinear) {
  std::mt19937_64 rng(1);
  // [in = 400, out = 250]: U(-1/20, 1/20); std = bound / sqrt(3).
  auto values =
      initialValues(init("#train.init<fan_in_uniform>"), {400, 250}, rng);
  ASSERT_TRUE(bool(values)) << llvm::toString(values.takeError());
  ASSERT_EQ(values->size(), 100000u);
  float bound = 0.05f;
  for (float v : *values)
    ASSERT_LE(std::fabs(v), bound);
  auto [mean, stddev] = moments(*values);
  EXPECT_NEAR(mean, 0.0, 3 * 0.05 / std::sqrt(3.0) / std::sqrt(1e5));
  EXPECT_NEAR(stddev, 0.05 / std::sqrt(3.0), 0.01 * 0.05 / std::sqrt(3.0));
}

TEST_F(Initializers, KaimingNormalOfAFilter) {
  std::mt19937_64 rng(2);
  // [F = 100, C = 10, 10, 10]: fan_in = 1000, std = sqrt(2/1000).
  auto values = initialValues(init("#train.init<kaiming_normal>"),
                              {100, 10, 10, 10}, rng);
  ASSERT_TRUE(bool(values));
  auto [mean, stddev] = moments(*values);
  double want = std::sqrt(2.0 / 1000);
  EXPECT_NEAR(mean, 0.0, 4 * want / std::sqrt(1e5));
  EXPECT_NEAR(stddev, want, 0.01 * want);
}

TEST_F(Initializers, ConstantsAndSeeds) {
  std::mt19937_64 rng(3);
  auto c = initialValues(init("#train.init<constant(65536.0)>"), {}, rng);
  ASSERT_TRUE(bool(c));
  EXPECT_EQ(*c, std::vector<float>{65536.0f});
  auto ones = initialValues(init("#train.init<ones>"), {3}, rng);
  EXPECT_EQ(*ones, std::vector<float>(3, 1.0f));
  std::mt19937_64 a(7), b(7), other(8);
  auto attr = init("#train.init<xavier_uniform>");
  auto va = initialValues(attr, {4, 5}, a), vb = initialValues(attr, {4, 5}, b),
       vo = initialValues(attr, {4, 5}, other);
  EXPECT_EQ(*va, *vb) << "same seed, same values";
  EXPECT_NE(*va, *vo);
}

TEST_F(Initializers, SeedStartsACounter) {
  // #train.init<seed> draws a counter's start in [0, 2^31) from the run's
  // rng: the same seed the same start, another seed another; float tensors
  // are refused.
  auto resolved = resolveInit(init("#train.init<seed>"), {});
  ASSERT_TRUE(bool(resolved)) << llvm::toString(resolved.takeError());
  std::mt19937_64 a(7), b(7), other(8);
  auto va = initialInts(*resolved, 1, a), vb = initialInts(*resolved, 1, b),
       vo = initialInts(*resolved, 1, other);
  ASSERT_TRUE(va && vb && vo);
  EXPECT_EQ(*va, *vb);
  EXPECT_NE(*va, *vo);
  std::mt19937_64 rng(9);
  auto many = initialInts(*resolved, 1000, rng);
  ASSERT_TRUE(bool(many));
  int64_t high = 0; // starts in the upper half: about 500 of 1000
  for (int32_t v : *many) {
    ASSERT_GE(v, 0);
    high += v >= (1 << 30);
  }
  EXPECT_NEAR(double(high), 500.0, 80.0);
  auto zeros =
      initialInts(*resolveInit(init("#train.init<zeros>"), {2}), 2, rng);
  ASSERT_TRUE(bool(zeros));
  EXPECT_EQ(*zeros, std::vector<int32_t>(2, 0));
  auto floats = initialValues(init("#train.init<seed>"), {}, rng);
  ASSERT_FALSE(bool(floats));
  EXPECT_NE(llvm::toString(floats.takeError()).find("i32 counter"),
            std::string::npos);
}

TEST_F(Initializers, MissingFanIsAnError) {
  std::mt19937_64 rng(4);
  auto values = initialValues(init("#train.init<fan_in_uniform>"), {10}, rng);
  ASSERT_FALSE(bool(values));
  EXPECT_NE(llvm::toString(values.takeError()).find("fan_in"),
            std::string::npos);
}

/// Writes `bytes` gzip'ed to a temporary file and returns its path.
std::string writeGz(const std::vector<uint8_t> &bytes) {
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("amp-idx", "gz", path);
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), bytes.size());
  gzclose(f);
  return std::string(path);
}

TEST(Idx, ReadsImagesAndRejectsDamage) {
  // Two 2x3 images.
  std::vector<uint8_t> file = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
  for (int i = 0; i < 12; ++i)
    file.push_back(uint8_t(i * 20));
  std::string good = writeGz(file);
  std::vector<int64_t> dims;
  auto data = readIdxGz(good, 3, &dims);
  ASSERT_TRUE(bool(data)) << llvm::toString(data.takeError());
  EXPECT_EQ(dims, (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ((*data)[11], 220);

  auto wrongRank = readIdxGz(good, 1);
  ASSERT_FALSE(bool(wrongRank));
  EXPECT_NE(llvm::toString(wrongRank.takeError()).find("has 3 dimensions"),
            std::string::npos);

  file.pop_back();
  std::string truncated = writeGz(file);
  auto cut = readIdxGz(truncated, 3);
  ASSERT_FALSE(bool(cut));
  EXPECT_NE(llvm::toString(cut.takeError()).find("truncated or corrupt"),
            std::string::npos);

  file[2] = 0x0D; // float IDX
  std::string floats = writeGz(file);
  auto magic = readIdxGz(floats, 3);
  ASSERT_FALSE(bool(magic));
  EXPECT_NE(llvm::toString(magic.takeError()).find("bad magic number"),
            std::string::npos);
  for (const std::string &p : {good, truncated, floats})
    llvm::sys::fs::remove(p);
}

TEST(Synthetic, DeterministicAndLabelled) {
  Dataset a = makeSyntheticDataset(64, 20, 10, 5, true);
  Dataset b = makeSyntheticDataset(64, 20, 10, 5, true);
  Dataset test = makeSyntheticDataset(64, 20, 10, 5, false);
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.images, test.images);
  for (int32_t label : a.labels) {
    EXPECT_GE(label, 0);
    EXPECT_LT(label, 10);
  }
}

TEST(Safetensors, RoundTripAndDamage) {
  Checkpoint c;
  c.tensors.emplace_back("w", HostTensor::fromFloats(ElementKind::F16, {2, 3},
                                                     {1, -2, 0.5f, 3, 4, 5}));
  c.tensors.emplace_back("step", HostTensor::fromInts({}, {7}));
  c.tensors.emplace_back("flag", HostTensor::fromBools({2}, {true, false}));
  c.metadata["step"] = "7";
  llvm::SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("amp-ckpt", "safetensors", path);
  ASSERT_FALSE(bool(saveSafetensors(path, c)));
  auto back = loadSafetensors(path);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->tensors.size(), 3u);
  EXPECT_EQ(back->tensors[0].first, "w");
  EXPECT_EQ(back->find("w")->toFloats(),
            (std::vector<float>{1, -2, 0.5f, 3, 4, 5}));
  EXPECT_EQ(back->find("w")->getKind(), ElementKind::F16);
  EXPECT_EQ(back->find("step")->getAsDouble(0), 7);
  EXPECT_EQ(back->find("flag")->getAsDouble(1), 0);
  EXPECT_EQ(back->metadata["step"], "7");

  // Truncations anywhere are errors, never garbage.
  auto whole = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(whole));
  std::string bytes = (*whole)->getBuffer().str();
  for (size_t keep : {size_t(0), size_t(5), size_t(20), bytes.size() - 1}) {
    ASSERT_FALSE(bool(writeFileAtomically(path, bytes.substr(0, keep))));
    auto cut = loadSafetensors(path);
    ASSERT_FALSE(bool(cut)) << "kept " << keep << " bytes";
    llvm::consumeError(cut.takeError());
  }
  // An unsupported dtype is named.
  std::string header =
      R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
  std::string file(8, '\0');
  file[0] = char(header.size());
  file += header + std::string(8, '\0');
  ASSERT_FALSE(bool(writeFileAtomically(path, file)));
  auto f64 = loadSafetensors(path);
  ASSERT_FALSE(bool(f64));
  EXPECT_NE(llvm::toString(f64.takeError()).find("unsupported dtype F64"),
            std::string::npos);
  llvm::sys::fs::remove(path);
}

} // namespace
