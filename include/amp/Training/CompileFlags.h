//===- CompileFlags.h - Command-line flags of step compilation --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The amp-pipeline flags amp-run and amp-compile share (--opt-level,
// --dtype, --optimizer, --init-scale, --growth-interval, --accumulate),
// registered by linking AMPCompileFlags: only tools link it.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_COMPILEFLAGS_H
#define AMP_TRAINING_COMPILEFLAGS_H

#include "amp/Pipelines/Pipelines.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"

namespace amp {

/// The category the compile flags are in (for cl::HideUnrelatedOptions).
llvm::cl::OptionCategory &getCompileFlagsCategory();

/// Checks the parsed flags and sets them on `options`; an error names the
/// bad flag.
llvm::Error readCompileFlags(AmpPipelineOptions &options);

} // namespace amp

#endif // AMP_TRAINING_COMPILEFLAGS_H
