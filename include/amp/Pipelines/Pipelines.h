//===- Pipelines.h - amp's pass pipelines -----------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_PIPELINES_PIPELINES_H
#define AMP_PIPELINES_PIPELINES_H

#include <string>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace amp {

/// The `amp-lower-cpu` pipeline as a textual pass list (module-anchored, no
/// `builtin.module(...)` wrapper): train -> linalg on tensors -> one-shot
/// bufferization (results become caller-provided out-parameters) -> loops ->
/// LLVM dialect. docs/Passes.md lists and explains each step.
std::string getCpuLoweringPipeline();

/// Appends `amp-lower-cpu` to a module-level pass manager.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm);

/// Registers `amp-lower-cpu` as a named pipeline.
void registerAmpPipelines();

} // namespace amp

#endif // AMP_PIPELINES_PIPELINES_H
