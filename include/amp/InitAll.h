//===- InitAll.h - Register everything amp's tools use ----------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_INITALL_H
#define AMP_INITALL_H

#include "amp/DiagnosticRecords.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>

namespace amp {

/// Adds the train dialect, the upstream dialects amp's pipelines produce and
/// their interface implementations (bufferization, deallocation, LLVM
/// conversion and translation) to `registry`.
void registerAmpDialects(mlir::DialectRegistry &registry);

/// Registers amp's passes and pipelines and the upstream passes they use, so
/// that they can be named on the command line and in pipeline strings.
void registerAmpPasses();

/// What a compiling tool (amp-run, amp-compile) sets up before it reads a
/// model: amp's passes registered, a context with every dialect amp uses
/// loaded, and a source manager whose diagnostics print as file:line:col.
class ToolContext {
public:
  ToolContext();

  mlir::MLIRContext &getContext() { return context; }
  llvm::SourceMgr &getSourceMgr() { return sourceMgr; }

  /// From now on also writes every diagnostic to `path` as a JSON line
  /// (DiagnosticRecords.h; the text output is unchanged); nothing for an
  /// empty path. An error when the file cannot be written.
  llvm::Error recordDiagnostics(llvm::StringRef path);

private:
  mlir::DialectRegistry registry;
  mlir::MLIRContext context;
  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler diagnostics;
  std::unique_ptr<llvm::raw_fd_ostream> recordFile;
  std::unique_ptr<DiagnosticRecorder> recorder;
};

} // namespace amp

#endif // AMP_INITALL_H
