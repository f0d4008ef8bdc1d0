//===- DiagnosticRecords.cpp - Diagnostics as data ------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/DiagnosticRecords.h"
#include "amp/Dialect/Train/IR/Locations.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

static const char *severityName(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return "error";
  case DiagnosticSeverity::Warning:
    return "warning";
  case DiagnosticSeverity::Remark:
    return "remark";
  case DiagnosticSeverity::Note:
    return "note";
  }
  return "error";
}

/// The op a message names as MLIR's emitOpError writes it: `'name' op ...`.
static std::string opOf(llvm::StringRef message) {
  if (!message.consume_front("'"))
    return "";
  auto [name, rest] = message.split('\'');
  return rest.starts_with(" op") && !name.empty() && !name.contains(' ')
             ? name.str()
             : "";
}

amp::DiagnosticRecord amp::toRecord(const Diagnostic &diagnostic) {
  DiagnosticRecord record;
  record.severity = severityName(diagnostic.getSeverity());
  record.message = diagnostic.str();
  record.op = opOf(record.message);
  Location loc = diagnostic.getLocation();
  record.backward = isBackwardLocation(loc);
  Location forward = forwardLocation(loc);
  record.module = modulePath(forward);
  if (auto file = forward->findInstanceOf<FileLineColLoc>()) {
    record.file = file.getFilename().str();
    record.line = file.getLine();
    record.column = file.getColumn();
  }
  for (const Diagnostic &note : diagnostic.getNotes())
    record.notes.push_back(toRecord(note));
  return record;
}

static llvm::json::Object toObject(const amp::DiagnosticRecord &record) {
  llvm::json::Array notes;
  for (const amp::DiagnosticRecord &note : record.notes)
    notes.push_back(toObject(note));
  return llvm::json::Object{{"severity", record.severity},
                            {"message", record.message},
                            {"op", record.op},
                            {"module", record.module},
                            {"file", record.file},
                            {"line", int64_t(record.line)},
                            {"column", int64_t(record.column)},
                            {"backward", record.backward},
                            {"notes", std::move(notes)}};
}

std::string amp::toJson(const DiagnosticRecord &record) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(toObject(record));
  return text;
}

amp::DiagnosticRecorder::DiagnosticRecorder(MLIRContext &context,
                                            llvm::raw_ostream &os)
    : context(context), os(os) {
  id = context.getDiagEngine().registerHandler(
      [this](Diagnostic &diagnostic) -> LogicalResult {
        records.push_back(toRecord(diagnostic));
        this->os << toJson(records.back()) << "\n";
        this->os.flush();
        // Not handled: the tool's own handler prints it as before.
        return failure();
      });
}

amp::DiagnosticRecorder::~DiagnosticRecorder() {
  context.getDiagEngine().eraseHandler(id);
}
