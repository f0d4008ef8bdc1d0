//===- AllOpsCoverageTest.cpp - Every train op in test/Conversion/all-ops
//--===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// test/Conversion/all-ops.mlir holds its ops to both lowerings (amp-lower-cpu
// and amp-lower-cuda); this test holds the file to the dialect: every op the
// train dialect registers must occur in it, so an op added without a use
// there (and so possibly without a lowering pattern, as train.any once was)
// fails here. The file is parsed, so a name in a comment does not count.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringSet.h"

#include "gtest/gtest.h"

#include <map>
#include <string>

using namespace mlir;

namespace {

/// Registered train ops that all-ops.mlir may leave out, each with why.
/// Even train.runtime_call, which only the runtime conversions create,
/// lowers when given directly (bufferization turns it into a call), so it is
/// held to them like every other op. Add an entry only for an op one of the
/// lowerings cannot take yet, with where the other is tested.
const std::map<std::string, std::string> kExcluded = {};

/// The names of the ops the train dialect registers.
llvm::StringSet<> registeredTrainOps(MLIRContext &context) {
  llvm::StringSet<> names;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() ==
        amp::train::TrainDialect::getDialectNamespace())
      names.insert(name.getStringRef());
  return names;
}

TEST(TrainOpCoverage, EveryRegisteredOpIsInAllOpsMlir) {
  MLIRContext context;
  context.loadDialect<amp::train::TrainDialect, func::FuncDialect>();
  llvm::StringSet<> registered = registeredTrainOps(context);
  // train.any, the op whose missing pattern this test guards against, must
  // be among them (else the walk above looks at the wrong thing).
  ASSERT_TRUE(registered.contains("train.any"));

  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(AMP_ALL_OPS_MLIR, &context);
  ASSERT_TRUE(module) << "cannot parse " << AMP_ALL_OPS_MLIR;
  llvm::StringSet<> used;
  module->walk(
      [&](Operation *op) { used.insert(op->getName().getStringRef()); });

  for (const auto &entry : registered) {
    llvm::StringRef name = entry.getKey();
    if (kExcluded.count(name.str()))
      continue;
    EXPECT_TRUE(used.contains(name))
        << name.str() << " is registered by the train dialect but not used in "
        << AMP_ALL_OPS_MLIR
        << ": add a use of it there, so that both lowerings are held to it "
           "(or, if the lowerings never see it, an entry in kExcluded with "
           "the reason)";
  }
  // An exclusion must name a registered op that the file leaves out.
  for (const auto &[name, reason] : kExcluded) {
    EXPECT_TRUE(registered.contains(name))
        << name << " is excluded but not a registered train op";
    EXPECT_FALSE(used.contains(name))
        << name << " is excluded (" << reason << ") but used in "
        << AMP_ALL_OPS_MLIR << ": drop the exclusion";
  }
}

} // namespace
