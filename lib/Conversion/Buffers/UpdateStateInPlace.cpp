//===- UpdateStateInPlace.cpp - New state into the old state's buffers ----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-update-state-in-place (on tensors, before bufferization) and
// amp-drop-in-place-results (on buffers, after it): a training step reads
// its parameters, masters, moments and scaler state from its arguments and
// writes their next values into the same buffers, instead of into results
// the caller allocates beside them (two buffers per state tensor).
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/StepRoles.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallSet.h"

namespace amp {
#define GEN_PASS_DEF_UPDATESTATEINPLACEPASS
#define GEN_PASS_DEF_DROPINPLACERESULTSPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// The role record of `func` (null: none), checked: one entry per result,
/// each -1 or an argument of the result's type, no argument twice. A
/// failure (after an error at the function) when malformed.
FailureOr<DenseI64ArrayAttr> getRecord(func::FuncOp func) {
  auto record = func->getAttrOfType<DenseI64ArrayAttr>(
      amp::train::kResultArgumentsAttrName);
  if (!record)
    return DenseI64ArrayAttr();
  auto error = [&]() {
    return func.emitError("'") << amp::train::kResultArgumentsAttrName
                               << "' of @" << func.getName() << ": ";
  };
  if (record.size() != int64_t(func.getNumResults())) {
    error() << "has " << record.size() << " entries for "
            << func.getNumResults() << " results";
    return failure();
  }
  llvm::SmallSet<int64_t, 16> seen;
  for (auto [r, a] : llvm::enumerate(record.asArrayRef())) {
    if (a < 0)
      continue;
    if (a >= int64_t(func.getNumArguments())) {
      error() << "result " << r << " updates argument " << a << " of "
              << func.getNumArguments();
      return failure();
    }
    if (!seen.insert(a).second) {
      error() << "argument " << a << " is updated by two results";
      return failure();
    }
    if (func.getResultTypes()[r] != func.getArgumentTypes()[a]) {
      error() << "result " << r << " (" << func.getResultTypes()[r]
              << ") updates argument " << a << " ("
              << func.getArgumentTypes()[a] << ")";
      return failure();
    }
  }
  return record;
}

/// Where `value` is computed by a linalg op into a `tensor.empty` init
/// whose contents its body never reads (through reshapes of its result),
/// makes that op compute into `dest` instead (reshaped as the op's result)
/// and returns true.
bool computeInto(Value value, Value dest) {
  // The reshapes between the op and the returned value, outermost first.
  SmallVector<Operation *> reshapes;
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
      break;
    reshapes.push_back(def);
    value = def->getOperand(0);
  }
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return false;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(result.getOwner());
  if (!linalgOp || !linalgOp.hasPureTensorSemantics())
    return false;
  OpOperand *init = linalgOp.getDpsInitOperand(result.getResultNumber());
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      linalgOp.payloadUsesValueFromOperand(init))
    return false;

  // `dest` seen as the op's result: each reshape undone, innermost last.
  // An identical reshape of it the op already reads is reused: the op then
  // reads and writes one value, which bufferization's analysis lets an
  // element-wise op do in place (two reshapes of one buffer it copies).
  OpBuilder b(linalgOp);
  Value view = dest;
  auto existing = [&](Value source, Type type,
                      ArrayRef<ReassociationIndices> indices,
                      bool collapse) -> Value {
    for (Operation *user : source.getUsers()) {
      if (user->getNumResults() != 1 ||
          user->getBlock() != linalgOp->getBlock() ||
          !user->isBeforeInBlock(linalgOp) ||
          user->getResult(0).getType() != type)
        continue;
      if (auto c = dyn_cast<tensor::CollapseShapeOp>(user);
          c && collapse && c.getReassociationIndices() == indices)
        return c.getResult();
      if (auto e = dyn_cast<tensor::ExpandShapeOp>(user);
          e && !collapse && e.getReassociationIndices() == indices)
        return e.getResult();
    }
    return nullptr;
  };
  for (Operation *reshape : reshapes) {
    // An expand_shape is undone by a collapse_shape, and the other way.
    auto expand = dyn_cast<tensor::ExpandShapeOp>(reshape);
    auto collapse = dyn_cast<tensor::CollapseShapeOp>(reshape);
    SmallVector<ReassociationIndices> indices =
        expand ? expand.getReassociationIndices()
               : collapse.getReassociationIndices();
    auto type = cast<RankedTensorType>(reshape->getOperand(0).getType());
    Value same = existing(view, type, indices, /*collapse=*/bool(expand));
    if (!same && expand)
      same = tensor::CollapseShapeOp::create(b, reshape->getLoc(), type, view,
                                             indices);
    else if (!same)
      same = tensor::ExpandShapeOp::create(b, reshape->getLoc(), type, view,
                                           indices);
    view = same;
  }
  init->set(view);
  return true;
}

struct UpdateStateInPlacePass
    : public amp::impl::UpdateStateInPlacePassBase<UpdateStateInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FailureOr<DenseI64ArrayAttr> checked = getRecord(func);
    if (failed(checked))
      return signalPassFailure();
    DenseI64ArrayAttr record = *checked;
    if (!record || func.isExternal() || !func.getBody().hasOneBlock())
      return;
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (!ret)
      return;
    MLIRContext *ctx = func.getContext();
    for (auto [r, a] : llvm::enumerate(record.asArrayRef())) {
      if (a < 0)
        continue;
      BlockArgument arg = func.getArgument(a);
      if (!isa<RankedTensorType>(arg.getType()))
        continue;
      func.setArgAttr(a, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(ctx, true));
      Value value = ret.getOperand(r);
      if (value == arg || computeInto(value, arg))
        continue;
      // Any other value is copied into the argument where it is made, or
      // after the old value's last read if that comes later (a copy before
      // it would have to go out of place).
      Block &body = func.getBody().front();
      Operation *after = value.getDefiningOp();
      if (after)
        after = body.findAncestorOpInBlock(*after);
      for (Operation *user : arg.getUsers()) {
        Operation *op = body.findAncestorOpInBlock(*user);
        if (op && op != ret && (!after || after->isBeforeInBlock(op)))
          after = op;
      }
      OpBuilder b(ctx);
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&body);
      auto copy = linalg::CopyOp::create(b, ret.getLoc(), ValueRange{value},
                                         ValueRange{arg});
      ret.setOperand(r, copy->getResult(0));
    }
  }
};

/// Whether `value` is the buffer of `arg` in its own layout: `arg` seen
/// through casts and reshapes (which neither offset nor reorder it) back to
/// its own type.
bool isArgumentBuffer(Value value, BlockArgument arg) {
  if (value.getType() != arg.getType())
    return false;
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<memref::CastOp, memref::ExpandShapeOp, memref::CollapseShapeOp>(
            def))
      break;
    value = def->getOperand(0);
  }
  return value == arg;
}

struct DropInPlaceResultsPass
    : public amp::impl::DropInPlaceResultsPassBase<DropInPlaceResultsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto record = func->getAttrOfType<DenseI64ArrayAttr>(
        amp::train::kResultArgumentsAttrName);
    if (!record || func.isExternal())
      return;
    // The record covers the original results: a function without as many
    // has been through this pass already.
    if (record.size() != int64_t(func.getNumResults()))
      return;
    SmallVector<func::ReturnOp> returns;
    func.walk([&](func::ReturnOp op) { returns.push_back(op); });
    SmallVector<int64_t> actual(record.asArrayRef());
    llvm::BitVector drop(func.getNumResults());
    for (auto [r, a] : llvm::enumerate(actual)) {
      if (a < 0)
        continue;
      bool inPlace =
          a < int64_t(func.getNumArguments()) && !returns.empty() &&
          llvm::all_of(returns, [&](func::ReturnOp op) {
            return isArgumentBuffer(op.getOperand(r), func.getArgument(a));
          });
      if (inPlace)
        drop.set(r);
      else
        a = -1;
    }
    for (func::ReturnOp op : returns)
      op->eraseOperands(drop);
    if (failed(func.eraseResults(drop)))
      return signalPassFailure();
    func->setAttr(amp::train::kResultArgumentsAttrName,
                  DenseI64ArrayAttr::get(func.getContext(), actual));
  }
};

} // namespace
