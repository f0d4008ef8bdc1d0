//===- TestContext.h - Shared set-up of the CPU integration tests -*- C++
//-*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TEST_INTEGRATION_CPU_TESTCONTEXT_H
#define AMP_TEST_INTEGRATION_CPU_TESTCONTEXT_H

#include "mlir/IR/MLIRContext.h"

namespace amp {
namespace test {

/// An MLIR context with every dialect and interface amp's pipelines use
/// loaded, and amp's passes registered (once per process) so that pipelines
/// can be built by name.
class TestContext : public mlir::MLIRContext {
public:
  TestContext();
};

} // namespace test
} // namespace amp

#endif // AMP_TEST_INTEGRATION_CPU_TESTCONTEXT_H
