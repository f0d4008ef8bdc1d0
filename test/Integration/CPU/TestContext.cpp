//===- TestContext.cpp - Shared set-up of the CPU integration tests -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "TestContext.h"

#include "amp/InitAll.h"

#include "mlir/IR/DialectRegistry.h"

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
