//===- SplitEntryBlock.cpp - A function's body out of its entry block -----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The entry block of a function with many arguments keeps only a branch to
// the body, so that the signature conversion to the LLVM dialect orders its
// argument casts in a block of one op (see the pass description).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace amp {
#define GEN_PASS_DEF_SPLITENTRYBLOCKPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

struct SplitEntryBlockPass
    : public amp::impl::SplitEntryBlockPassBase<SplitEntryBlockPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp function = getOperation();
    if (function.isExternal() || function.getNumArguments() < minArguments)
      return;
    Block &entry = function.front();
    Block *body = entry.splitBlock(entry.begin());
    OpBuilder builder = OpBuilder::atBlockEnd(&entry);
    cf::BranchOp::create(builder, function.getLoc(), body);
  }
};

} // namespace
