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

/// --memory-budget and --recompute-gemms (amp-lower-cpu's memory-budget and
/// recompute-gemms, amp-recompute) as amp-run and amp-compile take them.
struct MemoryBudgetFlags {
  double budget = 1.0;
  bool recomputeGemms = false;
};

/// Checks them: the budget in (0, 1], below 1 only on a CPU backend (`cpu`;
/// else the error says the budget "is `budgetIsFor`"), --recompute-gemms
/// only with a budget below 1.
llvm::Expected<MemoryBudgetFlags>
readMemoryBudgetFlags(bool cpu, llvm::StringRef budgetIsFor);

/// --print-op-on-error: the tool's context prints the op after each error
/// (MLIRContext::printOpOnDiagnostic; ToolContext turns it off).
bool getPrintOpOnError();

/// --diagnostics-file: where the tool writes its compile diagnostics as JSON
/// lines (amp/DiagnosticRecords.h); "" for nowhere.
llvm::StringRef getDiagnosticsFile();

/// Parses the command line of an amp tool (amp-run, amp-compile,
/// amp-train). Every error is one `<tool>: error: ...` line on stderr and a
/// false return, LLVM's own parse errors included. When `pipeline` is given,
/// a flag that is not the tool's but an amp-pipeline option
/// (`--weight-decay=0.01`, `--beta2=0.95`) is passed to it, and `--help`
/// lists those options with their defaults; a flag for what the model itself
/// decides (`--batch-size`, `--num-classes`) is an error saying where that
/// setting lives.
bool parseToolCommandLine(int argc, char **argv, llvm::StringRef tool,
                          llvm::StringRef overview,
                          AmpPipelineOptions *pipeline);

} // namespace amp

#endif // AMP_TRAINING_COMPILEFLAGS_H
