//===- DiagnosticRecords.h - Diagnostics as data ----------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A compiling tool's diagnostics as records (severity, message, op, the
// location's module path, file, line and column, whether it is a backward
// op's, notes), alongside the text the tool prints. amp-compile and amp-run
// write them as JSON lines to --diagnostics-file; amp.compile reads them
// into CompileError.diagnostics (python/amp/_errors.py's Diagnostic has the
// same fields).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIAGNOSTICRECORDS_H
#define AMP_DIAGNOSTICRECORDS_H

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace amp {

/// One diagnostic as data.
struct DiagnosticRecord {
  /// "error", "warning", "remark" or "note".
  std::string severity;
  /// The message, without the location and severity the text form adds.
  std::string message;
  /// The op the message is about, where its text names one
  /// (`'train.matmul' op ...`: "train.matmul"); "" otherwise.
  std::string op;
  /// The importer's module path of the location ("encoder.layers.0.fc1";
  /// "" at the top level or for a location without one).
  std::string module;
  /// The first file location in the location; "" and 0 when it has none.
  std::string file;
  unsigned line = 0, column = 0;
  /// Whether the location is a backward op's (amp-autodiff's mark); then
  /// module, file and line are its forward op's.
  bool backward = false;
  /// The notes attached to it.
  std::vector<DiagnosticRecord> notes;
};

/// `diagnostic` as a record.
DiagnosticRecord toRecord(const mlir::Diagnostic &diagnostic);

/// `record` as one line of JSON (no newline).
std::string toJson(const DiagnosticRecord &record);

/// While alive, records every diagnostic of `context` and writes it to
/// `os` as one JSON line (flushed, so that a crash loses none), then lets
/// it go on to the handlers registered before (the tool's text output is
/// unchanged).
class DiagnosticRecorder {
public:
  DiagnosticRecorder(mlir::MLIRContext &context, llvm::raw_ostream &os);
  ~DiagnosticRecorder();
  DiagnosticRecorder(const DiagnosticRecorder &) = delete;
  DiagnosticRecorder &operator=(const DiagnosticRecorder &) = delete;

  /// The records so far.
  const std::vector<DiagnosticRecord> &getRecords() const { return records; }

private:
  mlir::MLIRContext &context;
  llvm::raw_ostream &os;
  mlir::DiagnosticEngine::HandlerID id;
  std::vector<DiagnosticRecord> records;
};

} // namespace amp

#endif // AMP_DIAGNOSTICRECORDS_H
