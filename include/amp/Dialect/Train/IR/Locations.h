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

/// The metadata amp-autodiff fuses into each backward op's location:
/// `loc(fused<"train.backward">[<the forward op's location>])`.
inline constexpr llvm::StringLiteral kBackwardLocTag = "train.backward";

/// `loc` marked as a backward op's (amp-autodiff's tag around the forward
/// op's location); already marked locations are returned as they are.
inline mlir::Location backwardLocation(mlir::Location loc) {
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc))
    if (auto tag =
            llvm::dyn_cast_or_null<mlir::StringAttr>(fused.getMetadata()))
      if (tag.getValue() == kBackwardLocTag)
        return loc;
  mlir::MLIRContext *ctx = loc->getContext();
  return mlir::FusedLoc::get(ctx, {loc},
                             mlir::StringAttr::get(ctx, kBackwardLocTag));
}

/// True when `loc` is a backward op's (see backwardLocation).
inline bool isBackwardLocation(mlir::Location loc) {
  auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc);
  auto tag = fused
                 ? llvm::dyn_cast_or_null<mlir::StringAttr>(fused.getMetadata())
                 : mlir::StringAttr();
  return tag && tag.getValue() == kBackwardLocTag;
}

/// The forward op's location inside a backward op's (`loc` itself when it
/// is not marked).
inline mlir::Location forwardLocation(mlir::Location loc) {
  if (isBackwardLocation(loc)) {
    auto fused = llvm::cast<mlir::FusedLoc>(loc);
    if (fused.getLocations().size() == 1)
      return fused.getLocations().front();
  }
  return loc;
}

/// The module path the importer names an op's location with
/// (`loc("encoder.layers.0.linear1"("model.py":12:0))`), or "" when the
/// location has none.
inline std::string modulePath(mlir::Location loc) {
  if (auto named = forwardLocation(loc)->findInstanceOf<mlir::NameLoc>())
    return named.getName().str();
  return "";
}

} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_LOCATIONS_H
