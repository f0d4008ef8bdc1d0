//===- DiagnosticRecordsTest.cpp - Diagnostics as data --------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A diagnostic's record: a backward op's location read through amp-autodiff's
// mark to its forward op's module and line, notes kept, the op taken from
// emitOpError's text and not from other quotes; the recorder lets each
// diagnostic go on to the handlers before it.
//
//===----------------------------------------------------------------------===//

#include "amp/DiagnosticRecords.h"
#include "amp/Dialect/Train/IR/Locations.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include "gtest/gtest.h"

#include <algorithm>

using namespace mlir;

namespace {

Location sourceLoc(MLIRContext &ctx, StringRef module, unsigned line) {
  return NameLoc::get(StringAttr::get(&ctx, module),
                      FileLineColLoc::get(&ctx, "model.py", line, 4));
}

TEST(DiagnosticRecords, BackwardLocationAndNotes) {
  MLIRContext ctx;
  std::vector<amp::DiagnosticRecord> seen;
  int reachedOlder = 0;
  ScopedDiagnosticHandler older(&ctx, [&](Diagnostic &) {
    ++reachedOlder;
    return success();
  });
  std::string lines;
  llvm::raw_string_ostream os(lines);
  {
    amp::DiagnosticRecorder recorder(ctx, os);
    Location forward = sourceLoc(ctx, "encoder.layers.0.fc1", 12);
    InFlightDiagnostic d =
        emitError(amp::backwardLocation(forward),
                  "'train.matmul_grad' op cannot compute in 'f16'");
    d.attachNote(sourceLoc(ctx, "head", 30)) << "the gradient flows to here";
    d.report();
    emitWarning(UnknownLoc::get(&ctx), "the 'policy' file moves nothing");
    ASSERT_EQ(recorder.getRecords().size(), 2u);
    const amp::DiagnosticRecord &error = recorder.getRecords()[0];
    EXPECT_EQ(error.severity, "error");
    EXPECT_EQ(error.op, "train.matmul_grad");
    EXPECT_EQ(error.module, "encoder.layers.0.fc1");
    EXPECT_EQ(error.file, "model.py");
    EXPECT_EQ(error.line, 12u);
    EXPECT_EQ(error.column, 4u);
    EXPECT_TRUE(error.backward);
    ASSERT_EQ(error.notes.size(), 1u);
    EXPECT_EQ(error.notes[0].severity, "note");
    EXPECT_EQ(error.notes[0].module, "head");
    EXPECT_EQ(error.notes[0].line, 30u);
    EXPECT_EQ(error.notes[0].message, "the gradient flows to here");
    const amp::DiagnosticRecord &warning = recorder.getRecords()[1];
    EXPECT_EQ(warning.severity, "warning");
    // A quoted word that is not `'name' op` names no op.
    EXPECT_EQ(warning.op, "");
    EXPECT_EQ(warning.module, "");
    EXPECT_EQ(warning.file, "");
    EXPECT_EQ(warning.line, 0u);
    EXPECT_FALSE(warning.backward);
  }
  // Both went on to the handler registered before the recorder.
  EXPECT_EQ(reachedOlder, 2);
  // One JSON line each.
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2);
  EXPECT_NE(lines.find("\"module\":\"encoder.layers.0.fc1\""),
            std::string::npos);
  EXPECT_NE(lines.find("\"notes\":[{"), std::string::npos);
  // Once the recorder is gone, diagnostics are not recorded.
  emitError(UnknownLoc::get(&ctx), "after");
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 2);
  EXPECT_EQ(reachedOlder, 3);
}

} // namespace
