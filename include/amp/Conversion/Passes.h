//===- Passes.h - amp conversion passes -------------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_PASSES_H
#define AMP_CONVERSION_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace amp {

#define GEN_PASS_DECL
#include "amp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "amp/Conversion/Passes.h.inc"

} // namespace amp

#endif // AMP_CONVERSION_PASSES_H
