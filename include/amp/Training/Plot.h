//===- Plot.h - SVG plots of a training run ---------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_PLOT_H
#define AMP_TRAINING_PLOT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace amp {

/// A standalone SVG of a run: the loss per step (non-finite and skipped
/// steps left out, marked by red ticks at the bottom) on a linear axis, and,
/// when `scales` is not empty, the loss scale on a log2 axis at the right.
std::string renderTrainingPlot(llvm::StringRef title,
                               llvm::ArrayRef<double> losses,
                               llvm::ArrayRef<double> scales,
                               llvm::ArrayRef<bool> skipped);

} // namespace amp

#endif // AMP_TRAINING_PLOT_H
