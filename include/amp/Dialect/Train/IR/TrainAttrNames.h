//===- TrainAttrNames.h - Discardable attributes amp-autocast records -*- C++
//-*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// What amp-autocast decided, recorded in the IR for amp-precision-report and
// any later reader; the dialect verifies both (TrainDialect.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_IR_TRAINATTRNAMES_H
#define AMP_DIALECT_TRAIN_IR_TRAINATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace amp {
namespace train {

/// On the module: `train.autocast = {dtype = "f16", opt_level = "O2",
/// policy = "my.json"}` (policy only when one was given).
inline constexpr llvm::StringLiteral kAutocastAttrName = "train.autocast";

/// On each op autocast decided: `train.decision = "<category>/<reason>"`,
/// e.g. "lower/default" or "fp32/opt-level". Ops made later (gradients, the
/// update) carry none.
inline constexpr llvm::StringLiteral kDecisionAttrName = "train.decision";

/// On a gradient function amp-autodiff made: `train.gradient_of = @forward`,
/// the function it differentiates (amp-optimizer pairs them by it, not by
/// the `_grad` suffix of the name).
inline constexpr llvm::StringLiteral kGradientOfAttrName = "train.gradient_of";

/// On a training step amp-check-numerics instrumented: the site table, one
/// dictionary per entry in program order (docs/Numerics.md). `kind` is
/// "argument" (with `argument`, its index), "constant" (with `magnitude`,
/// its largest |x|, known at compile time) or "op" (with `op`, its name;
/// `stage`, "forward" or "backward"; `inputs`, the entries its float
/// operands stand for; `module`, `file`, `line` where its location has
/// them; `result` when it has several float results). Entries with `check`
/// are measured by the step: index `check` of its last result, the
/// train.check_numerics vector.
inline constexpr llvm::StringLiteral kCheckNumericsAttrName = "train.numerics";

/// The reasons of a decision, strongest last: the op's default (its list
/// entry), the opt level, the policy file, a calibration (the op's measured
/// range does not fit the low type), a `train.precision` attribute; and
/// the model's own cast (`train.cast ... user`, the type the model fixed
/// with `x.float()`); in PrecisionReason's order (PrecisionPolicy.h
/// stringifies by index).
inline constexpr llvm::StringLiteral kDecisionReasons[] = {
    "default",    "opt-level", "policy file",
    "calibrated", "attribute", "user cast"};

/// On each op amp-autocast found in its calibration: the measured magnitude
/// (f64, the larger of its output's and inputs'); on an op kept in fp32
/// for it (`fp32/calibrated`), what decided it.
inline constexpr llvm::StringLiteral kCalibratedMagnitudeAttrName =
    "train.calibrated_magnitude";

} // namespace train
} // namespace amp

#endif // AMP_DIALECT_TRAIN_IR_TRAINATTRNAMES_H
