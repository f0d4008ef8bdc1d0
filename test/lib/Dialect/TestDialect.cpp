//===- TestDialect.cpp - Ops that exist only for tests --------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "TestDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace amp::test;

#include "TestOpsDialect.cpp.inc"

void AmpTestDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "TestOps.cpp.inc"
      >();
}

/// Linear: a sum across ranks works on scaled and unscaled gradients alike.
amp::train::GradientScaleUse IdentityGradsOp::getScaleUse() {
  return amp::train::GradientScaleUse::either;
}

void amp::test::registerTestDialect(DialectRegistry &registry) {
  registry.insert<AmpTestDialect>();
}

#define GET_OP_CLASSES
#include "TestOps.cpp.inc"
