//===- CpuJit.h - JIT-compiled train functions on the CPU -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_CPUJIT_H
#define AMP_EXECUTION_CPUJIT_H

#include "amp/Execution/HostTensor.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
class ExecutionEngine;
} // namespace mlir

namespace amp {

/// How a function is compiled for the CPU.
struct CpuCompileOptions {
  /// The target CPU: empty for the host (all its features), or an LLVM CPU
  /// name such as "x86-64" for a baseline without F16C/AVX.
  std::string cpu;
  /// LLVM optimization level, 0-3.
  unsigned optLevel = 3;
  /// GEMMs and convolutions call the CBLAS runtime; false: generated loops.
  bool blas = true;
};

/// The type of one argument or result: element kind and static shape.
struct TensorSpec {
  ElementKind kind;
  llvm::SmallVector<int64_t, 4> shape;
};

/// A function of a train-dialect module, lowered with amp-lower-cpu and
/// compiled to native code. Thread-compatible: concurrent `call`s need
/// separate instances.
class CpuFunction {
public:
  ~CpuFunction();

  /// Lowers a copy of `module` and JIT-compiles function `name`, whose
  /// arguments and results must be static f32/f16/bf16/i32/i1 tensors.
  static llvm::Expected<std::unique_ptr<CpuFunction>>
  compile(mlir::ModuleOp module, llvm::StringRef name,
          const CpuCompileOptions &options = {});

  /// Runs the function on `inputs` (argument order, types checked) and
  /// returns its results.
  llvm::Expected<std::vector<HostTensor>>
  call(llvm::ArrayRef<const HostTensor *> inputs);

  llvm::ArrayRef<TensorSpec> getArgumentSpecs() const { return arguments; }
  llvm::ArrayRef<TensorSpec> getResultSpecs() const { return results; }

private:
  CpuFunction() = default;

  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string entry;
  llvm::SmallVector<TensorSpec> arguments;
  llvm::SmallVector<TensorSpec> results;
};

} // namespace amp

#endif // AMP_EXECUTION_CPUJIT_H
