//===- InitAll.h - Register everything amp's tools use ----------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALL_H
#define AMP_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace amp {

/// Adds the train dialect, the upstream dialects amp's pipelines produce and
/// their interface implementations (bufferization, deallocation, LLVM
/// conversion and translation) to `registry`.
void registerAmpDialects(mlir::DialectRegistry &registry);

/// Registers amp's passes and pipelines and the upstream passes they use, so
/// that they can be named on the command line and in pipeline strings.
void registerAmpPasses();

} // namespace amp

#endif // AMP_INITALL_H
