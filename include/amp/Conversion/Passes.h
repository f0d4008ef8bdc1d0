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

/// amp-plan-memory's record on a function it planned: a dictionary of
/// `arena_bytes`, `live_peak_bytes`, `buffers`, `workspaces`,
/// `unplanned_buffers`, `unplanned_bytes` and `at_peak` (bytes live at the
/// peak by the kind of op that first writes them).
inline constexpr llvm::StringLiteral kMemoryPlanAttrName = "amp.memory_plan";
/// On a function amp-recompute changed: a dictionary of `values` (the
/// values recomputed), `bytes` (their size), `estimated_peak_before` and
/// `estimated_peak_after` (the peak of live tensor bytes it estimates).
inline constexpr llvm::StringLiteral kRecomputeAttrName = "amp.recompute";
/// On an op amp-recompute cloned to recompute a value in backward.
inline constexpr llvm::StringLiteral kRecomputedAttrName = "amp.recomputed";
/// On a runtime call (train.runtime_call, then the func.call it becomes):
/// the scratch bytes the call takes, which amp-plan-memory reserves as its
/// workspace (without it: an f32 copy of each 16-bit operand); -1: not
/// bounded in advance (the function is then not planned).
inline constexpr llvm::StringLiteral kWorkspaceBytesAttrName =
    "amp.workspace_bytes";
/// Marks a `memref.view` amp-plan-memory made of its arena: a buffer of its
/// own, which no buffer live at the same time overlaps.
inline constexpr llvm::StringLiteral kPlannedViewAttrName = "amp.planned_view";

} // namespace amp

#endif // AMP_CONVERSION_PASSES_H
