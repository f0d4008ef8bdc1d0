//===- TestContext.h - Shared set-up of the CPU integration tests -*- C++
//-*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TEST_INTEGRATION_CPU_TESTCONTEXT_H
#define AMP_TEST_INTEGRATION_CPU_TESTCONTEXT_H

#include "amp/Execution/CpuJit.h"
#include "amp/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>

namespace amp {
namespace test {

/// An MLIR context with every dialect and interface amp's pipelines use
/// loaded, and amp's passes registered (once per process) so that pipelines
/// can be built by name.
class TestContext : public mlir::MLIRContext {
public:
  TestContext();

  /// examples/<name>.mlir parsed in this context; null (diagnostics
  /// printed) when it does not parse.
  mlir::OwningOpRef<mlir::ModuleOp> parseExample(llvm::StringRef name);
};

/// Runs amp-pipeline with `options` on `module`.
mlir::LogicalResult runAmpPipeline(mlir::ModuleOp module,
                                   const AmpPipelineOptions &options);

/// @`name` of the module `source`, parsed in `context` and JIT-compiled for
/// the CPU; null after a gtest failure saying why.
std::unique_ptr<CpuFunction> compileFunction(TestContext &context,
                                             llvm::StringRef source,
                                             llvm::StringRef name = "f");

} // namespace test
} // namespace amp

#endif // AMP_TEST_INTEGRATION_CPU_TESTCONTEXT_H
