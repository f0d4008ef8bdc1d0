//===- Locations.h - Locations in messages -----------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_LOCATIONS_H
#define AMP_DIALECT_TRAIN_IR_LOCATIONS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/FormatVariadic.h"

#include <string>

namespace amp {

/// "file:line:col" of the first file location in `loc` (a fused or named
/// location included), or `otherwise` when it has none: how amp's reports
/// and driver errors point into a model.
inline std::string fileLineCol(mlir::Location loc,
                               llvm::StringRef otherwise = "") {
  if (auto file = loc->findInstanceOf<mlir::FileLineColLoc>())
    return llvm::formatv("{0}:{1}:{2}", file.getFilename().getValue(),
                         file.getLine(), file.getColumn());
  return otherwise.str();
}

} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_LOCATIONS_H
