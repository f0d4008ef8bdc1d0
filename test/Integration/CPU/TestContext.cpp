//===- TestContext.cpp - Shared set-up of the CPU integration tests -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "gtest/gtest.h"

using namespace amp::test;

TestContext::TestContext() {
  // Pass registration is process-wide and may happen only once.
  static bool registered = [] {
    registerAmpPasses();
    return true;
  }();
  (void)registered;
  mlir::DialectRegistry registry;
  registerAmpDialects(registry);
  appendDialectRegistry(registry);
  loadAllAvailableDialects();
}

mlir::OwningOpRef<mlir::ModuleOp>
TestContext::parseExample(llvm::StringRef name) {
  return mlir::parseSourceFile<mlir::ModuleOp>(
      (AMP_EXAMPLES_DIR "/" + name + ".mlir").str(), this);
}

mlir::LogicalResult
amp::test::runAmpPipeline(mlir::ModuleOp module,
                          const AmpPipelineOptions &options) {
  mlir::PassManager pm(module.getContext());
  buildAmpPipeline(pm, options);
  return pm.run(module);
}

std::unique_ptr<amp::CpuFunction>
amp::test::compileFunction(TestContext &context, llvm::StringRef source,
                           llvm::StringRef name) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  EXPECT_TRUE(module) << source.str();
  if (!module)
    return nullptr;
  auto fn = CpuFunction::compile(*module, name);
  if (!fn) {
    ADD_FAILURE() << llvm::toString(fn.takeError());
    return nullptr;
  }
  return std::move(*fn);
}
