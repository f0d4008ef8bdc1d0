//===- TrainAttributes.h - Attributes of the train dialect ------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINATTRIBUTES_H
#define AMP_DIALECT_TRAIN_IR_TRAINATTRIBUTES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"

#include "amp/Dialect/Train/IR/TrainOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "amp/Dialect/Train/IR/TrainOpsAttributes.h.inc"

namespace amp {
namespace train {

/// The fans of a parameter of shape `shape` under `init`: explicit fans from
/// the attribute win; otherwise a rank-2 `[in, out]` weight gives (in, out) and
/// a rank-4 `[F, C, KH, KW]` filter gives (C*KH*KW, F*KH*KW). Fails (calling
/// `emitError`) when the initializer needs a fan the shape does not determine.
mlir::FailureOr<std::pair<int64_t, int64_t>>
computeFans(InitAttr init, llvm::ArrayRef<int64_t> shape,
            llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_TRAINATTRIBUTES_H
