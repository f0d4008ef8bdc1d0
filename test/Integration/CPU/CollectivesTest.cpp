//===- CollectivesTest.cpp - train.all_reduce through the JIT -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// train.all_reduce compiled for the CPU, against a recording communicator
// that stands in for the other ranks: what the step sends (the packed
// bucket: order, pre-division, wire rounding), and how it unpacks what
// comes back. test/Integration/MPI runs the same op across real processes.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/Execution/CpuJit.h"
#include "amp/Runtime/Collectives.h"
#include "amp/Runtime/Float16.h"

#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

#include <cstring>
#include <functional>
#include <limits>

using namespace amp;
using namespace mlir;

namespace {

/// One call of allReduce, as the step made it.
struct Call {
  int64_t count;
  RuntimeDType type;
  CollectiveOp op;
  std::vector<uint16_t> half; // the values sent, 16-bit wire
  std::vector<float> single;  // the values sent, f32 wire
};

/// Records each call; the reply is `reply(call)` in the wire's type.
class RecordingCommunicator : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return ranks; }
  std::string allReduce(const void *in, void *out, int64_t count,
                        RuntimeDType type, CollectiveOp op) override {
    Call call{count, type, op, {}, {}};
    if (type == RuntimeDType::F32) {
      const auto *v = static_cast<const float *>(in);
      call.single.assign(v, v + count);
      std::vector<float> r = replyF32(call);
      std::memcpy(out, r.data(), count * sizeof(float));
    } else {
      const auto *v = static_cast<const uint16_t *>(in);
      call.half.assign(v, v + count);
      std::vector<uint16_t> r = replyHalf(call);
      std::memcpy(out, r.data(), count * sizeof(uint16_t));
    }
    calls.push_back(call);
    return "";
  }
  std::string broadcast(void *, int64_t, int) override { return ""; }

  int ranks = 2;
  std::vector<Call> calls;
  std::function<std::vector<float>(const Call &)> replyF32 = [](const Call &c) {
    return c.single;
  };
  std::function<std::vector<uint16_t>(const Call &)> replyHalf =
      [](const Call &c) { return c.half; };
};

class Collectives : public ::testing::Test {
protected:
  void SetUp() override { setCommunicator(&communicator); }
  void TearDown() override { setCommunicator(nullptr); }

  /// Compiles @f of `source`.
  std::unique_ptr<CpuFunction> compile(const std::string &source) {
    return test::compileFunction(context, source);
  }

  test::TestContext context;
  RecordingCommunicator communicator;
};

// A bucket of two f32 gradients: one call with both, in operand order, and
// the reply cut back into their shapes.
TEST_F(Collectives, SumPacksInOrderAndUnpacks) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> (tensor<2x3xf32>, tensor<4xf32>) {
  %r:2 = train.all_reduce sum(%a, %b) ranks 2 : (tensor<2x3xf32>, tensor<4xf32>)
  return %r#0, %r#1 : tensor<2x3xf32>, tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(fn);
  communicator.replyF32 = [](const Call &c) {
    std::vector<float> r(c.single);
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = r[i] * 2 + float(i) / 64; // the other rank's share, and a mark
    return r;
  };
  std::vector<float> av = {1, 2, 3, 4, 5, 6}, bv = {-1, 0.5f, 1e30f, 7};
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {2, 3}, av);
  HostTensor b = HostTensor::fromFloats(ElementKind::F32, {4}, bv);
  auto out = fn->call({&a, &b});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(communicator.calls.size(), 1u);
  const Call &call = communicator.calls[0];
  EXPECT_EQ(call.count, 10);
  EXPECT_EQ(call.type, RuntimeDType::F32);
  EXPECT_EQ(call.op, CollectiveOp::Sum);
  std::vector<float> sent(av);
  sent.insert(sent.end(), bv.begin(), bv.end());
  EXPECT_EQ(call.single, sent);
  std::vector<float> ra = (*out)[0].toFloats(), rb = (*out)[1].toFloats();
  for (size_t i = 0; i < av.size(); ++i)
    EXPECT_EQ(ra[i], av[i] * 2 + float(i) / 64) << i;
  for (size_t i = 0; i < bv.size(); ++i)
    EXPECT_EQ(rb[i], bv[i] * 2 + float(i + 6) / 64) << i;
}

// A mean over 4 ranks on an f16 wire: each value times 0.25 in f32, then
// rounded to f16, is what goes out; what comes back is widened exactly.
// 1e5 / 4 = 25000 fits f16's range (the mean does not overflow where the
// sum would); 1e-9 / 4 underflows to zero, as PyTorch's f16 compression does.
TEST_F(Collectives, MeanOnHalfWirePreDivides) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<5xf32>) -> tensor<5xf32> {
  %r = train.all_reduce mean(%a) ranks 4 wire f16 : (tensor<5xf32>)
  return %r : tensor<5xf32>
}
)mlir");
  ASSERT_TRUE(fn);
  communicator.ranks = 4;
  std::vector<float> av = {1e5f, -3, 0.1f, 1e-9f, 65504};
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {5}, av);
  auto out = fn->call({&a});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(communicator.calls.size(), 1u);
  const Call &call = communicator.calls[0];
  EXPECT_EQ(call.type, RuntimeDType::F16);
  EXPECT_EQ(call.op, CollectiveOp::Sum);
  std::vector<float> got = (*out)[0].toFloats();
  for (size_t i = 0; i < av.size(); ++i) {
    uint16_t expected = floatToHalf(av[i] * 0.25f);
    EXPECT_EQ(call.half[i], expected) << i;
    EXPECT_EQ(got[i], halfToFloat(expected)) << i;
  }
  EXPECT_EQ(got[0], 24992.0f); // 25000 on f16's grid of 16 (a tie, to even)
  EXPECT_EQ(got[3], 0.0f);
}

// A sum on an f16 wire that overflows comes back inf: an overflow on the
// wire is one more non-finite gradient for loss scaling to skip.
TEST_F(Collectives, HalfWireOverflowIsInf) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<2xf16>) -> tensor<2xf16> {
  %r = train.all_reduce sum(%a) ranks 2 : (tensor<2xf16>)
  return %r : tensor<2xf16>
}
)mlir");
  ASSERT_TRUE(fn);
  communicator.replyHalf = [](const Call &c) {
    std::vector<uint16_t> r;
    for (uint16_t h : c.half)
      r.push_back(floatToHalf(halfToFloat(h) + halfToFloat(h)));
    return r;
  };
  HostTensor a = HostTensor::fromFloats(ElementKind::F16, {2}, {40000, 3});
  auto out = fn->call({&a});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(communicator.calls.size(), 1u);
  EXPECT_EQ(communicator.calls[0].type, RuntimeDType::F16);
  std::vector<float> got = (*out)[0].toFloats();
  EXPECT_EQ(got[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[1], 6.0f);
}

// Mixed input types travel in f32 (exact for both) and come back rounded
// to each input's type.
TEST_F(Collectives, MixedTypesTravelInF32) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<2xbf16>, %b: tensor<1xf32>) -> (tensor<2xbf16>, tensor<1xf32>) {
  %r:2 = train.all_reduce sum(%a, %b) ranks 2 : (tensor<2xbf16>, tensor<1xf32>)
  return %r#0, %r#1 : tensor<2xbf16>, tensor<1xf32>
}
)mlir");
  ASSERT_TRUE(fn);
  communicator.replyF32 = [](const Call &c) {
    return std::vector<float>{c.single[0] + 1.0f / 1024, c.single[1] * 2,
                              c.single[2] + 1.0f / 1024};
  };
  HostTensor a = HostTensor::fromFloats(ElementKind::BF16, {2}, {1.5f, -2});
  HostTensor b = HostTensor::fromFloats(ElementKind::F32, {1}, {1});
  auto out = fn->call({&a, &b});
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  ASSERT_EQ(communicator.calls.size(), 1u);
  EXPECT_EQ(communicator.calls[0].type, RuntimeDType::F32);
  EXPECT_EQ(communicator.calls[0].single, (std::vector<float>{1.5f, -2, 1}));
  // 1.5 + 2^-10 rounds back to 1.5 in bf16 (8 bits of mantissa).
  EXPECT_EQ((*out)[0].toFloats(), (std::vector<float>{1.5f, -4}));
  EXPECT_EQ((*out)[1].toFloats(), (std::vector<float>{1 + 1.0f / 1024}));
}

// found_inf across ranks: flags go out as 0/1 with max, and a set flag on
// another rank comes back set here.
TEST_F(Collectives, FlagsAgreeWithMax) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<i1>) -> tensor<i1> {
  %r = train.all_reduce max(%a) ranks 2 : (tensor<i1>)
  return %r : tensor<i1>
}
)mlir");
  ASSERT_TRUE(fn);
  for (bool mine : {false, true})
    for (bool theirs : {false, true}) {
      communicator.calls.clear();
      communicator.replyF32 = [&](const Call &c) {
        return std::vector<float>{std::max(c.single[0], theirs ? 1.0f : 0.0f)};
      };
      HostTensor a = HostTensor::fromBools({}, {mine});
      auto out = fn->call({&a});
      ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
      ASSERT_EQ(communicator.calls.size(), 1u);
      EXPECT_EQ(communicator.calls[0].op, CollectiveOp::Max);
      EXPECT_EQ(communicator.calls[0].single[0], mine ? 1.0f : 0.0f);
      EXPECT_EQ((*out)[0].getAsDouble(0), (mine || theirs) ? 1.0 : 0.0)
          << mine << theirs;
    }
}

// skip set (micro-batches pending): no communication, the inputs come back.
TEST_F(Collectives, SkipSendsNothing) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<3xf32>, %skip: tensor<i1>) -> tensor<3xf32> {
  %r = train.all_reduce mean(%a) skip(%skip) ranks 2 : (tensor<3xf32>)
  return %r : tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(fn);
  std::vector<float> av = {1, 3, -5};
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {3}, av);
  HostTensor yes = HostTensor::fromBools({}, {true});
  HostTensor no = HostTensor::fromBools({}, {false});
  auto skipped = fn->call({&a, &yes});
  ASSERT_TRUE(bool(skipped)) << llvm::toString(skipped.takeError());
  EXPECT_TRUE(communicator.calls.empty());
  EXPECT_EQ((*skipped)[0].toFloats(), av);
  auto sent = fn->call({&a, &no});
  ASSERT_TRUE(bool(sent)) << llvm::toString(sent.takeError());
  ASSERT_EQ(communicator.calls.size(), 1u);
  EXPECT_EQ(communicator.calls[0].single,
            (std::vector<float>{0.5f, 1.5f, -2.5f}));
  EXPECT_EQ((*sent)[0].toFloats(), (std::vector<float>{0.5f, 1.5f, -2.5f}));
}

// A data-parallel step run without a communicator ends the process with a
// message that says how to run it.
TEST_F(Collectives, NoCommunicatorAborts) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %r = train.all_reduce sum(%a) ranks 2 : (tensor<3xf32>)
  return %r : tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(fn);
  setCommunicator(nullptr);
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {3}, {1, 2, 3});
  EXPECT_DEATH((void)fn->call({&a}),
               "ran without a communicator; run it with --data-parallel "
               "under mpirun \\(amp-run, amp-train\\)");
}

// A step compiled for another number of ranks than the job has ends the
// process instead of computing a wrong mean.
TEST_F(Collectives, RankCountMismatchAborts) {
  auto fn = compile(R"mlir(
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %r = train.all_reduce sum(%a) ranks 2 : (tensor<3xf32>)
  return %r : tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(fn);
  communicator.ranks = 3;
  HostTensor a = HostTensor::fromFloats(ElementKind::F32, {3}, {1, 2, 3});
  EXPECT_DEATH((void)fn->call({&a}),
               "the step was compiled for 2 ranks, but the job has 3");
}

} // namespace
