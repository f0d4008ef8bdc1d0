//===- UnshareInits.cpp - One init value per destination-style op ---------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// After CSE, one `tensor.empty` or zero `linalg.fill` can be the init of
// hundreds of linalg ops. One-shot bufferization then copies it for all but
// one of them and analyzes them all as one alias set; re-created per use,
// each init bufferizes to its own allocation in place.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace amp {
#define GEN_PASS_DEF_UNSHAREINITSPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// Whether `op` is a reshape or cast, which bufferizes to a view of its
/// source (operand 0).
bool isView(Operation *op) {
  return isa_and_nonnull<tensor::CollapseShapeOp, tensor::ExpandShapeOp,
                         tensor::CastOp>(op);
}

/// The value whose buffer `value` is, through reshapes and casts.
Value viewSource(Value value) {
  while (isView(value.getDefiningOp()))
    value = value.getDefiningOp()->getOperand(0);
  return value;
}

/// A copy of `value` built at `b`'s insertion point when it is an empty
/// tensor or a fill of one, else null.
Value rematerialize(OpBuilder &b, Value value) {
  if (auto empty = value.getDefiningOp<tensor::EmptyOp>())
    return b.clone(*empty)->getResult(0);
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill || !fill.hasPureTensorSemantics())
    return nullptr;
  Value init = rematerialize(b, fill.getDpsInits()[0]);
  if (!init)
    return nullptr;
  auto copy = cast<linalg::FillOp>(b.clone(*fill));
  copy.getDpsInitsMutable()[0].set(init);
  return copy.getResult(0);
}

/// A copy of `value` built at `b`'s insertion point when it is an empty
/// tensor or a fill of one seen through reshapes and casts (which the copy
/// repeats), else null.
Value rematerializeView(OpBuilder &b, Value value) {
  Operation *def = value.getDefiningOp();
  if (!isView(def))
    return rematerialize(b, value);
  Value source = rematerializeView(b, def->getOperand(0));
  if (!source)
    return nullptr;
  Operation *copy = b.clone(*def);
  copy->setOperand(0, source);
  return copy->getResult(0);
}

/// Whether `value` is an empty tensor, or a fill of one, built right before
/// `user`.
bool builtRightBefore(Value value, Operation *user) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getNextNode() != user)
    return false;
  if (auto fill = dyn_cast<linalg::FillOp>(def))
    return builtRightBefore(fill.getDpsInits()[0], def);
  return true;
}

struct UnshareInitsPass
    : public amp::impl::UnshareInitsPassBase<UnshareInitsPass> {
  void runOnOperation() override {
    SmallVector<DestinationStyleOpInterface> ops;
    getOperation().walk(
        [&](DestinationStyleOpInterface op) { ops.push_back(op); });
    OpBuilder b(&getContext());
    llvm::SetVector<Operation *> replaced;
    for (DestinationStyleOpInterface op : ops) {
      for (OpOperand &init : op.getDpsInitsMutable()) {
        Value value = init.get();
        if (!isa<RankedTensorType>(value.getType()))
          continue;
        // A sole use in the same block gets its init moved next to it too:
        // an init built early (CSE keeps the first of identical fills, e.g.
        // a forward max-pool's -inf fill for the backward's recomputation)
        // would otherwise be allocated there and held until its use.
        Operation *def = value.getDefiningOp();
        // An init seen through reshapes (the CPU lowering collapses
        // elementwise ops to one dimension) is shared when any value on the
        // way is: one empty tensor reshaped for every layer of a network
        // would be one buffer, one alias set, for all of them.
        Value root = viewSource(value);
        bool shared = false;
        for (Value v = value; v != root;
             v = v.getDefiningOp()->getOperand(0))
          shared |= !v.hasOneUse();
        if (root != value) {
          if (!shared && root.hasOneUse())
            continue;
          b.setInsertionPoint(op);
          if (Value fresh = rematerializeView(b, value)) {
            init.set(fresh);
            replaced.insert(def);
          }
          continue;
        }
        if (value.hasOneUse() && (!def || def->getBlock() != op->getBlock() ||
                                  builtRightBefore(value, op)))
          continue;
        b.setInsertionPoint(op);
        if (Value fresh = rematerialize(b, value)) {
          init.set(fresh);
          replaced.insert(def);
        }
      }
    }
    // The originals left without a use (a fill, then its empty tensor).
    SmallVector<Operation *> worklist(replaced.begin(), replaced.end());
    llvm::SmallPtrSet<Operation *, 16> erased;
    while (!worklist.empty()) {
      Operation *def = worklist.pop_back_val();
      if (!def || erased.contains(def) || !def->use_empty())
        continue;
      if (auto fill = dyn_cast<linalg::FillOp>(def))
        worklist.push_back(fill.getDpsInits()[0].getDefiningOp());
      if (isView(def))
        worklist.push_back(def->getOperand(0).getDefiningOp());
      erased.insert(def);
      def->erase();
    }
    // A value returned twice becomes two out-parameters that would share a
    // buffer, which buffer-results-to-out-params crashes on in MLIR 22
    // (llvm-project #219492): each repeat returns a copy.
    getOperation().walk([&](func::ReturnOp ret) {
      llvm::SmallDenseSet<Value> seen;
      b.setInsertionPoint(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (seen.insert(value).second || !type)
          continue;
        Value empty = tensor::EmptyOp::create(
            b, ret.getLoc(), tensor::getMixedSizes(b, ret.getLoc(), value),
            type.getElementType());
        operand.set(linalg::CopyOp::create(b, ret.getLoc(), ValueRange{value},
                                           ValueRange{empty})
                        .getResult(0));
      }
    });
  }
};

} // namespace
