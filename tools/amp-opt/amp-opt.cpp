//===- amp-opt.cpp - The amp optimizer driver -----------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// mlir-opt for training graphs: MlirOptMain with the train dialect, the
// upstream dialects amp's pipelines produce, and amp's passes registered. All
// of mlir-opt's flags work (--pass-pipeline, -split-input-file,
// -verify-diagnostics, --mlir-print-ir-after-all, --mlir-timing, ...).
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<amp::train::TrainDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::scf::SCFDialect,
                  mlir::tensor::TensorDialect>();
  // Generic transformations: canonicalize, cse, inline, symbol-dce, ...
  mlir::registerTransformsPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "amp optimizer: mixed-precision training graphs\n",
      registry));
}
