//===- TestDialect.h - Ops that exist only for tests ------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TEST_DIALECT_TESTDIALECT_H
#define AMP_TEST_DIALECT_TESTDIALECT_H

#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TestOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "TestOps.h.inc"

namespace amp {
namespace test {
/// Adds the amp_test dialect to `registry` (amp-opt does; tools do not).
void registerTestDialect(mlir::DialectRegistry &registry);
} // namespace test
} // namespace amp

#endif // AMP_TEST_DIALECT_TESTDIALECT_H
