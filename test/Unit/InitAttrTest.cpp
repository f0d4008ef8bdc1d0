//===- InitAttrTest.cpp - Tests of #train.init parsing and fans -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainAttributes.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace amp::train;

namespace {

class InitAttrTest : public ::testing::Test {
protected:
  InitAttrTest() { context.getOrLoadDialect<TrainDialect>(); }

  /// Parses `text`, collecting any diagnostic into `diagnostics`.
  Attribute parse(llvm::StringRef text) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diagnostics += d.str();
      return success();
    });
    return parseAttribute(text, &context);
  }

  /// The printed form of `attr`.
  static std::string print(Attribute attr) {
    std::string s;
    llvm::raw_string_ostream os(s);
    attr.print(os);
    return s;
  }

  MLIRContext context;
  std::string diagnostics;
};

TEST_F(InitAttrTest, ParsesEveryKind) {
  for (const char *kind :
       {"zeros", "ones", "fan_in_uniform", "kaiming_uniform", "kaiming_normal",
        "xavier_uniform", "xavier_normal", "seed"}) {
    auto attr = dyn_cast_or_null<InitAttr>(
        parse(std::string("#train.init<") + kind + ">"));
    ASSERT_TRUE(attr) << kind << ": " << diagnostics;
    EXPECT_EQ(stringifyInitKind(attr.getKind()), kind);
    EXPECT_EQ(attr.getFanIn(), 0);
  }
}

TEST_F(InitAttrTest, ValueKinds) {
  auto normal = dyn_cast_or_null<InitAttr>(parse("#train.init<normal(0.02)>"));
  ASSERT_TRUE(normal) << diagnostics;
  EXPECT_EQ(normal.getKind(), InitKind::normal);
  EXPECT_DOUBLE_EQ(normal.getValue().convertToDouble(), 0.02);
  EXPECT_TRUE(normal.takesValue());
  EXPECT_FALSE(normal.usesFans());

  auto constant =
      dyn_cast_or_null<InitAttr>(parse("#train.init<constant(-1.5)>"));
  ASSERT_TRUE(constant) << diagnostics;
  EXPECT_DOUBLE_EQ(constant.getValue().convertToDouble(), -1.5);
}

TEST_F(InitAttrTest, RoundTrip) {
  for (const char *text :
       {"#train.init<zeros>", "#train.init<uniform(5.000000e-02)>",
        "#train.init<kaiming_uniform(fan_in = 784)>",
        "#train.init<xavier_normal(fan_in = 3, fan_out = 7)>"}) {
    Attribute attr = parse(text);
    ASSERT_TRUE(attr) << text << ": " << diagnostics;
    EXPECT_EQ(print(attr), text);
  }
}

TEST_F(InitAttrTest, RejectsUnknownKind) {
  EXPECT_FALSE(parse("#train.init<he_uniform>"));
  EXPECT_NE(diagnostics.find("unknown initializer 'he_uniform'"),
            std::string::npos)
      << diagnostics;
}

TEST_F(InitAttrTest, RejectsNonPositiveStd) {
  EXPECT_FALSE(parse("#train.init<normal(0.0)>"));
  EXPECT_NE(diagnostics.find("needs a positive std"), std::string::npos)
      << diagnostics;
}

TEST_F(InitAttrTest, RejectsMissingValue) {
  EXPECT_FALSE(parse("#train.init<uniform>"));
  EXPECT_FALSE(diagnostics.empty());
}

TEST_F(InitAttrTest, RejectsFanOutForKaiming) {
  EXPECT_FALSE(parse("#train.init<kaiming_normal(fan_in = 3, fan_out = 4)>"));
  EXPECT_NE(diagnostics.find("fan_out is not used by kaiming_normal"),
            std::string::npos)
      << diagnostics;
}

TEST_F(InitAttrTest, VerifierRejectsFansOnNonFanKinds) {
  auto emit = [&] { return emitError(UnknownLoc::get(&context)); };
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str();
    return success();
  });
  EXPECT_TRUE(failed(
      InitAttr::verify(emit, InitKind::zeros, llvm::APFloat(0.0), 3, 0)));
  EXPECT_NE(diagnostics.find("#train.init<zeros> does not use fans"),
            std::string::npos)
      << diagnostics;
  EXPECT_TRUE(failed(InitAttr::verify(emit, InitKind::kaiming_uniform,
                                      llvm::APFloat(0.0), 3, 4)));
  EXPECT_NE(diagnostics.find("does not use fan_out (only xavier_*)"),
            std::string::npos)
      << diagnostics;
  EXPECT_TRUE(succeeded(InitAttr::verify(emit, InitKind::xavier_uniform,
                                         llvm::APFloat(0.0), 3, 4)));
}

TEST_F(InitAttrTest, FansFromShape) {
  auto init = cast<InitAttr>(parse("#train.init<xavier_uniform>"));
  auto noError = [&]() -> InFlightDiagnostic {
    ADD_FAILURE() << "unexpected error";
    return emitError(UnknownLoc::get(&context));
  };
  // Matmul weight [in, out].
  auto fans = computeFans(init, {784, 256}, noError);
  ASSERT_TRUE(succeeded(fans));
  EXPECT_EQ(fans->first, 784);
  EXPECT_EQ(fans->second, 256);
  // Conv filter [F, C, KH, KW]: fan_in = C*KH*KW, fan_out = F*KH*KW.
  fans = computeFans(init, {32, 16, 3, 3}, noError);
  ASSERT_TRUE(succeeded(fans));
  EXPECT_EQ(fans->first, 144);
  EXPECT_EQ(fans->second, 288);
}

TEST_F(InitAttrTest, FansOfBiasNeedExplicitValue) {
  auto init = cast<InitAttr>(parse("#train.init<kaiming_uniform>"));
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    diagnostics += d.str();
    return success();
  });
  auto emit = [&] { return emitError(UnknownLoc::get(&context)); };
  EXPECT_TRUE(failed(computeFans(init, {256}, emit)));
  EXPECT_NE(diagnostics.find("cannot derive fan_in from a rank-1 parameter"),
            std::string::npos)
      << diagnostics;

  auto explicitFan =
      cast<InitAttr>(parse("#train.init<kaiming_uniform(fan_in = 784)>"));
  auto fans = computeFans(explicitFan, {256}, emit);
  ASSERT_TRUE(succeeded(fans));
  EXPECT_EQ(fans->first, 784);
}

} // namespace
