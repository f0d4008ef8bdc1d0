//===- HostTensorTest.cpp - Host tensors and step-session argument checks -===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/HostTensor.h"
#include "amp/Execution/CompiledFunction.h"

#include "llvm/ADT/APFloat.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace amp;
using llvm::APFloat;

namespace {

/// APFloat's round-to-nearest-even conversion of `value` to `semantics`.
uint16_t referenceBits(float value, const llvm::fltSemantics &semantics) {
  APFloat f(value);
  bool losesInfo;
  f.convert(semantics, APFloat::rmNearestTiesToEven, &losesInfo);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

bool isNaNBits(uint16_t bits, bool half) {
  return half ? ((bits & 0x7C00) == 0x7C00 && (bits & 0x3FF))
              : ((bits & 0x7F80) == 0x7F80 && (bits & 0x7F));
}

TEST(HalfConversion, EveryHalfWidensExactly) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    APFloat ref(APFloat::IEEEhalf(), llvm::APInt(16, bits));
    float got = halfToFloat(bits);
    if (ref.isNaN()) {
      EXPECT_TRUE(std::isnan(got)) << bits;
      continue;
    }
    ASSERT_EQ(got, ref.convertToFloat()) << "bits " << bits;
    // And narrows back to itself.
    ASSERT_EQ(floatToHalf(got), bits) << "bits " << bits;
  }
}

TEST(HalfConversion, RoundsLikeAPFloat) {
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> any;
  // Random bit patterns cover every exponent, including ties and subnormals.
  for (int i = 0; i < 2000000; ++i) {
    uint32_t x = any(rng);
    float f;
    std::memcpy(&f, &x, 4);
    uint16_t ref = referenceBits(f, APFloat::IEEEhalf());
    uint16_t got = floatToHalf(f);
    if (isNaNBits(ref, true)) {
      ASSERT_TRUE(isNaNBits(got, true)) << std::hex << x;
      continue;
    }
    ASSERT_EQ(got, ref) << "f32 bits 0x" << std::hex << x;
  }
}

TEST(HalfConversion, EdgeCases) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00); // halfway to 2^16 rounds to inf
  EXPECT_EQ(floatToHalf(65519.99f), 0x7BFF);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000); // tie to even zero
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  // 2^-3 + 2^-14 rounds to 2^-3: the vanishing-update example.
  EXPECT_EQ(floatToHalf(0.125f + std::ldexp(1.0f, -14)), floatToHalf(0.125f));
}

TEST(BFloatConversion, EveryBFloatWidensExactly) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    APFloat ref(APFloat::BFloat(), llvm::APInt(16, bits));
    float got = bfloatToFloat(bits);
    if (ref.isNaN()) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    ASSERT_EQ(got, ref.convertToFloat()) << bits;
    ASSERT_EQ(floatToBFloat(got), bits) << bits;
  }
}

TEST(BFloatConversion, RoundsLikeAPFloat) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t x = any(rng);
    float f;
    std::memcpy(&f, &x, 4);
    uint16_t ref = referenceBits(f, APFloat::BFloat());
    uint16_t got = floatToBFloat(f);
    if (isNaNBits(ref, false)) {
      ASSERT_TRUE(isNaNBits(got, false)) << std::hex << x;
      continue;
    }
    ASSERT_EQ(got, ref) << "f32 bits 0x" << std::hex << x;
  }
}

TEST(HostTensor, LayoutAndAccess) {
  HostTensor t =
      HostTensor::fromFloats(ElementKind::F16, {2, 3}, {1, 2, 3, 4, 5, 65504});
  EXPECT_EQ(t.getNumElements(), 6);
  EXPECT_EQ(t.getSizeInBytes(), 12u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u);
  EXPECT_EQ(t.getAsDouble(5), 65504.0);
  EXPECT_EQ(t.typeString(), "tensor<2x3xf16>");
  HostTensor l = HostTensor::fromInts({3}, {7, -1, 2});
  EXPECT_EQ(l.getAsDouble(1), -1.0);
  HostTensor z(ElementKind::F32, {});
  EXPECT_EQ(z.getNumElements(), 1);
  EXPECT_EQ(z.getAsDouble(0), 0.0);
}

// A borrowed tensor is a view: the caller's memory, no copy, and copies of
// it are views of the same memory.
TEST(HostTensor, BorrowIsAView) {
  alignas(64) float data[6] = {1, 2, 3, 4, 5, 6};
  HostTensor view = HostTensor::borrow(ElementKind::F32, {2, 3}, data);
  EXPECT_TRUE(view.isBorrowed());
  EXPECT_EQ(view.data(), static_cast<void *>(data));
  EXPECT_EQ(view.typeString(), "tensor<2x3xf32>");
  EXPECT_EQ(view.getAsDouble(4), 5.0);
  data[4] = 50;
  EXPECT_EQ(view.getAsDouble(4), 50.0);
  HostTensor copy = view;
  EXPECT_EQ(copy.data(), static_cast<void *>(data));
  EXPECT_FALSE(HostTensor(ElementKind::F32, {2, 3}).isBorrowed());
}

// What every step session checks before taking an argument (the host and
// CUDA sessions share it): the index, the element kind and the shape.
TEST(StepSession, ChecksArguments) {
  std::vector<TensorSpec> specs = {{ElementKind::F32, {2, 3}},
                                   {ElementKind::I32, {4}}};
  auto message = [&](unsigned i, const HostTensor &value) {
    llvm::Error e = StepSession::checkArgument(specs, i, value);
    return e ? llvm::toString(std::move(e)) : std::string("ok");
  };
  EXPECT_EQ(message(0, HostTensor(ElementKind::F32, {2, 3})), "ok");
  EXPECT_EQ(message(1, HostTensor::fromInts({4}, {1, 2, 3, 4})), "ok");
  EXPECT_EQ(message(0, HostTensor(ElementKind::F16, {2, 3})),
            "argument #0 is tensor<2x3xf32>, got tensor<2x3xf16>");
  EXPECT_EQ(message(0, HostTensor(ElementKind::F32, {3, 2})),
            "argument #0 is tensor<2x3xf32>, got tensor<3x2xf32>");
  EXPECT_EQ(message(2, HostTensor(ElementKind::F32, {2, 3})), "no argument #2");
}

} // namespace

namespace {

/// The element pointer of packed argument `i` (a pointer to a pointer to
/// its strided-memref descriptor {allocated, aligned, ...}).
float *packedData(llvm::MutableArrayRef<void *> packed, size_t i) {
  void *descriptor = *static_cast<void **>(packed[i]);
  return static_cast<float **>(descriptor)[1];
}

/// A function on host memory of the given argument and result types whose
/// body is `run` (by default it writes nothing).
class HostStep : public HostResults<CompiledFunction> {
public:
  HostStep(std::vector<TensorSpec> args, std::vector<TensorSpec> results)
      : args(std::move(args)), results(std::move(results)) {}
  llvm::Expected<std::vector<HostTensor>>
  callReusing(llvm::ArrayRef<const HostTensor *> inputs,
              std::vector<HostTensor> &reuse) override {
    return callOnHost(
        "step", args, results, inputs,
        [&](llvm::MutableArrayRef<void *> packed) { return run(packed); },
        &reuse);
  }
  llvm::ArrayRef<TensorSpec> getArgumentSpecs() const override { return args; }
  llvm::ArrayRef<TensorSpec> getResultSpecs() const override {
    return results;
  }

protected:
  virtual llvm::Error run(llvm::MutableArrayRef<void *> packed) {
    (void)packed;
    return llvm::Error::success();
  }

private:
  std::vector<TensorSpec> args, results;
};

/// A step of one f32[4] parameter: returns (sum of the parameter, the
/// parameter + 1), the second routed back into the argument. It fails when
/// asked, and records the buffers it wrote.
class CountingStep final : public HostStep {
public:
  CountingStep()
      : HostStep({{ElementKind::F32, {4}}},
                 {{ElementKind::F32, {}}, {ElementKind::F32, {4}}}) {}

  bool fail = false;
  std::vector<const float *> written;

private:
  llvm::Error run(llvm::MutableArrayRef<void *> packed) override {
    if (fail)
      return llvm::createStringError("asked to fail");
    const float *param = packedData(packed, 0);
    float *sum = packedData(packed, 1), *next = packedData(packed, 2);
    *sum = 0.0f;
    for (int i = 0; i < 4; ++i) {
      *sum += param[i];
      next[i] = param[i] + 1.0f;
    }
    written.push_back(next);
    return llvm::Error::success();
  }
};

float stepSum(StepSession &session, llvm::ArrayRef<ResultRoute> routes) {
  auto out = session.step(routes);
  EXPECT_TRUE(bool(out)) << (out ? "" : llvm::toString(out.takeError()));
  return out && !out->empty() ? (*out)[0].toFloats()[0] : NAN;
}

} // namespace

/// A host session of a CountingStep whose parameter starts at {1, 2, 3, 4}.
class CountingSession : public ::testing::Test {
protected:
  void SetUp() override {
    auto session = openHostSession(step, step);
    ASSERT_TRUE(bool(session)) << llvm::toString(session.takeError());
    opened = std::move(*session);
    ASSERT_FALSE(bool(opened->set(
        0, HostTensor::fromFloats(ElementKind::F32, {4}, {1, 2, 3, 4}))));
  }

  CountingStep step;
  std::unique_ptr<StepSession> opened;
  /// The sum to the host, the next parameter back into the argument.
  const std::vector<ResultRoute> routes = {{-1, true}, {0, false}};
};

// A host session writes a step's results into the buffers of the arguments
// they replaced the step before (two buffers in turn, nothing zeroed), with
// the values of fresh buffers; it never writes into a view the caller set
// or into a tensor the step reads, and a failed step leaves it usable.
TEST_F(CountingSession, HostSessionReusesReplacedArguments) {
  StepSession &session = *opened;
  EXPECT_EQ(stepSum(session, routes), 10.0f);
  EXPECT_EQ(stepSum(session, routes), 14.0f);
  EXPECT_EQ(stepSum(session, routes), 18.0f);
  EXPECT_EQ(stepSum(session, routes), 22.0f);
  ASSERT_EQ(step.written.size(), 4u);
  // Steps 3 and 4 wrote into the buffers steps 1 and 2 wrote.
  EXPECT_EQ(step.written[2], step.written[0]);
  EXPECT_EQ(step.written[3], step.written[1]);
  EXPECT_NE(step.written[1], step.written[0]);

  // A failing step changes nothing; the next one goes on from the same
  // parameter.
  step.fail = true;
  EXPECT_FALSE(bool(session.step(routes)));
  step.fail = false;
  EXPECT_EQ(stepSum(session, routes), 26.0f);
  EXPECT_EQ(stepSum(session, routes), 30.0f);

  // A view set as the argument is read, never written.
  alignas(64) float mine[16] = {0, 0, 0, 1};
  ASSERT_FALSE(bool(
      session.set(0, HostTensor::borrow(ElementKind::F32, {4}, mine))));
  EXPECT_EQ(stepSum(session, routes), 1.0f);
  EXPECT_EQ(stepSum(session, routes), 5.0f);
  EXPECT_EQ(stepSum(session, routes), 9.0f);
  EXPECT_EQ(mine[0], 0.0f);
  EXPECT_EQ(mine[3], 1.0f);
  for (const float *p : step.written)
    EXPECT_NE(p, mine);
}

// An adopted argument lives in the caller's memory: adopt copies the value
// there, each step's result routed back into it is written there, set
// copies into it; unaligned memory is declined, overlapping memory and a
// stepWith value for it are refused.
TEST_F(CountingSession, HostSessionAdoptsTheCallersMemory) {
  StepSession &session = *opened;

  alignas(64) float home[32] = {};
  auto declined = session.adopt(0, home + 1);
  ASSERT_TRUE(bool(declined));
  EXPECT_FALSE(*declined);
  EXPECT_EQ(home[1], 0.0f); // nothing written there
  auto adopted = session.adopt(0, home);
  ASSERT_TRUE(bool(adopted)) << llvm::toString(adopted.takeError());
  ASSERT_TRUE(*adopted);
  EXPECT_EQ(home[3], 4.0f); // the value moved in

  EXPECT_EQ(stepSum(session, routes), 10.0f);
  EXPECT_EQ(home[0], 2.0f);
  EXPECT_EQ(stepSum(session, routes), 14.0f);
  EXPECT_EQ(home[0], 3.0f);
  // The caller's writes are the step's next value.
  home[0] = 10.0f;
  EXPECT_EQ(stepSum(session, routes), 10.0f + 4 + 5 + 6);
  ASSERT_FALSE(bool(session.set(
      0, HostTensor::fromFloats(ElementKind::F32, {4}, {0, 0, 0, 1}))));
  EXPECT_EQ(home[3], 1.0f);
  EXPECT_EQ(stepSum(session, routes), 1.0f);
  EXPECT_EQ(home[3], 2.0f);
  auto value = session.get(0);
  ASSERT_TRUE(bool(value));
  EXPECT_EQ(value->toFloats(), (std::vector<float>{1, 1, 1, 2}));
  EXPECT_NE(value->data(), static_cast<void *>(home)); // get copies

  // A step that fails leaves the home as it was.
  step.fail = true;
  EXPECT_FALSE(bool(session.step(routes)));
  step.fail = false;
  EXPECT_EQ(home[3], 2.0f);

  // A stepWith value in its place is refused, the home kept.
  alignas(64) float other[16] = {5, 5, 5, 5};
  auto refused = session.stepWith(
      routes, {{0u, HostTensor::borrow(ElementKind::F32, {4}, other)}});
  ASSERT_FALSE(bool(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("set it instead"),
            std::string::npos);
  EXPECT_EQ(stepSum(session, routes), 5.0f);
  EXPECT_EQ(other[0], 5.0f);

  // Adopting the same memory again is allowed (the same argument).
  auto again = session.adopt(0, home);
  ASSERT_TRUE(bool(again) && *again);
  EXPECT_EQ(home[3], 3.0f);
}

// Two arguments never share adopted memory (each would be updated over
// the other's values).
TEST(StepSession, HostSessionRefusesOverlappingHomes) {
  HostStep step({{ElementKind::F32, {32}}, {ElementKind::F32, {16}}},
                {{ElementKind::F32, {}}});
  auto opened = openHostSession(step, step);
  ASSERT_TRUE(bool(opened)) << llvm::toString(opened.takeError());
  StepSession &session = **opened;
  alignas(64) float memory[64] = {};
  auto first = session.adopt(0, memory);
  ASSERT_TRUE(bool(first) && *first);
  auto overlapping = session.adopt(1, memory + 16);
  ASSERT_FALSE(bool(overlapping));
  EXPECT_EQ(llvm::toString(overlapping.takeError()),
            "argument #1 would share memory with argument #0");
  auto after = session.adopt(1, memory + 32);
  ASSERT_TRUE(bool(after) && *after);
  auto none = session.adopt(2, memory);
  ASSERT_FALSE(bool(none));
  EXPECT_EQ(llvm::toString(none.takeError()), "no argument #2");
}

// callReusing never hands out a buffer the same call reads.
TEST(StepSession, ReuseSkipsInputs) {
  CountingStep step;
  HostTensor param =
      HostTensor::fromFloats(ElementKind::F32, {4}, {1, 2, 3, 4});
  const HostTensor *inputs[] = {&param};
  std::vector<HostTensor> reuse;
  reuse.push_back(HostTensor(ElementKind::F32, {}));
  reuse.push_back(param); // a copy: reusable
  const void *copy = reuse[1].data();
  auto out = step.callReusing(inputs, reuse);
  ASSERT_TRUE(bool(out)) << llvm::toString(out.takeError());
  EXPECT_EQ((*out)[1].data(), copy);
  EXPECT_EQ((*out)[1].toFloats(), (std::vector<float>{2, 3, 4, 5}));

  // The same tensor as input and as reuse candidate: a new buffer.
  std::vector<HostTensor> aliasing;
  aliasing.push_back(HostTensor(ElementKind::F32, {}));
  aliasing.push_back(HostTensor::fromFloats(ElementKind::F32, {4}, {7, 7, 7, 7}));
  const HostTensor *self[] = {&aliasing[1]};
  const void *selfData = aliasing[1].data();
  auto again = step.callReusing(self, aliasing);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_NE((*again)[1].data(), selfData);
  EXPECT_EQ((*again)[1].toFloats(), (std::vector<float>{8, 8, 8, 8}));
  EXPECT_EQ((*again)[0].toFloats()[0], 28.0f);
}
