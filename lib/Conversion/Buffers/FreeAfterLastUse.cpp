//===- FreeAfterLastUse.cpp - Free temporaries after their last use -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// Ownership-based buffer deallocation frees a block's buffers at the end of
// the block. In a training step (one straight-line block of thousands of
// buffers) that keeps every temporary alive until the step returns, and its
// simplification pass is quadratic in the buffers of that one dealloc. Here
// each buffer of such a dealloc is freed after its last use instead.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

namespace amp {
#define GEN_PASS_DEF_FREEAFTERLASTUSEPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// Whether `dealloc` unconditionally frees distinct fresh allocations of its
/// own block and retains nothing.
bool isPlainBlockDealloc(bufferization::DeallocOp dealloc) {
  if (!dealloc.getRetained().empty())
    return false;
  llvm::SmallPtrSet<Value, 16> seen;
  for (auto [memref, condition] :
       llvm::zip(dealloc.getMemrefs(), dealloc.getConditions())) {
    auto alloc = memref.getDefiningOp<memref::AllocOp>();
    if (!alloc || alloc->getBlock() != dealloc->getBlock() ||
        !matchPattern(condition, m_One()) || !seen.insert(memref).second)
      return false;
  }
  return true;
}

/// The last op of `block` (other than `exclude`) that uses `root` or any
/// value derived from it; null when there is none; failure when a derived
/// value leaves through a branch to another block (then only the end of the
/// block is safe).
FailureOr<Operation *> lastUseInBlock(Value root, Block *block,
                                      Operation *exclude) {
  Operation *last = nullptr;
  SmallVector<Value> worklist = {root};
  llvm::SmallPtrSet<Value, 16> visited = {root};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (user == exclude)
        continue;
      if (user->getNumSuccessors() > 0)
        return failure();
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (inBlock && (!last || last->isBeforeInBlock(inBlock)))
        last = inBlock;
      for (Value result : user->getResults())
        if (visited.insert(result).second)
          worklist.push_back(result);
    }
  }
  return last;
}

struct FreeAfterLastUsePass
    : public amp::impl::FreeAfterLastUsePassBase<FreeAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation().walk([&](bufferization::DeallocOp dealloc) {
      if (isPlainBlockDealloc(dealloc))
        deallocs.push_back(dealloc);
    });
    OpBuilder builder(&getContext());
    for (bufferization::DeallocOp dealloc : deallocs) {
      Block *block = dealloc->getBlock();
      // Every position first, then the inserts: an insert can invalidate the
      // block's op order, which the next query would recompute (quadratic in
      // a step's block of thousands of buffers).
      SmallVector<std::pair<Value, OpBuilder::InsertPoint>> frees;
      for (Value memref : dealloc.getMemrefs()) {
        FailureOr<Operation *> last = lastUseInBlock(memref, block, dealloc);
        if (failed(last))
          builder.setInsertionPoint(dealloc);
        else
          builder.setInsertionPointAfter(*last ? *last
                                               : memref.getDefiningOp());
        frees.push_back({memref, builder.saveInsertionPoint()});
      }
      for (auto &[memref, point] : frees) {
        builder.restoreInsertionPoint(point);
        memref::DeallocOp::create(builder, dealloc.getLoc(), memref);
      }
      // A plain dealloc has no results (it retains nothing).
      dealloc->erase();
    }
  }
};

} // namespace
