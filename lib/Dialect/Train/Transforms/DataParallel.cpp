//===- DataParallel.cpp - Gradients summed across ranks in the step -------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-data-parallel: all-reduces of gradient buckets where the gradients
// leave backward and accumulation, the mean folded into unscaling, and the
// found_inf flag agreed across ranks (Passes.td has the whole contract).
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cmath>

namespace amp {
namespace train {
#define GEN_PASS_DEF_DATAPARALLELPASS
#include "amp/Dialect/Train/Transforms/Passes.h.inc"
} // namespace train
} // namespace amp

using namespace mlir;
using namespace amp::train;

namespace {

struct DataParallelPass
    : public amp::train::impl::DataParallelPassBase<DataParallelPass> {
  using DataParallelPassBase::DataParallelPassBase;

  LogicalResult initialize(MLIRContext *context) override {
    auto fail = [&](const Twine &message) {
      return emitError(UnknownLoc::get(context),
                       "amp-data-parallel: " + message);
    };
    if (ranks < 1)
      return fail("ranks must be set to the number of processes (at least "
                  "1), got " +
                  Twine(static_cast<int64_t>(ranks)));
    if (!(bucketMb > 0.0) || !std::isfinite(bucketMb))
      return fail("bucket-mb must be positive and finite");
    return success();
  }

  void runOnOperation() override {
    if (ranks == 1)
      return;
    SmallVector<FunctionOpInterface> functions;
    getOperation()->walk(
        [&](FunctionOpInterface func) { functions.push_back(func); });
    for (FunctionOpInterface func : functions) {
      if (func.isExternal())
        continue;
      SmallVector<OptimizerUpdateOpInterface> updates;
      func.walk([&](OptimizerUpdateOpInterface op) { updates.push_back(op); });
      if (!updates.empty() && failed(distribute(func, updates)))
        return signalPassFailure();
    }
  }

  /// The element type on the wire.
  Type wireElementType() {
    Builder b(&getContext());
    switch (wireType) {
    case WireType::f32:
      return b.getF32Type();
    case WireType::f16:
      return b.getF16Type();
    case WireType::bf16:
      return b.getBF16Type();
    }
    llvm_unreachable("unknown wire type");
  }

  LogicalResult distribute(FunctionOpInterface func,
                           ArrayRef<OptimizerUpdateOpInterface> updates);
};

LogicalResult
DataParallelPass::distribute(FunctionOpInterface func,
                             ArrayRef<OptimizerUpdateOpInterface> updates) {
  if (updates.size() != 1)
    return func.emitError("amp-data-parallel: @")
           << func.getName() << " has " << updates.size()
           << " optimizer updates; expected one (made by amp-optimizer)";
  if (!func.getFunctionBody().getOps<AllReduceOp>().empty())
    return func.emitError("amp-data-parallel: @")
           << func.getName() << " is already data-parallel";
  OptimizerUpdateOpInterface update = updates.front();
  Block &body = func.getFunctionBody().front();
  if (update->getBlock() != &body)
    return update->emitError("amp-data-parallel: the optimizer update must be "
                             "in the function's entry block");

  // The point: the gradients that leave the last accumulation (or
  // backward), i.e. the inputs of the transform after it, or of the update.
  SmallVector<GradientTransformOpInterface> chain =
      getGradientTransformChain(update);
  size_t next = 0;
  Value pending;
  for (auto [i, transform] : llvm::enumerate(chain))
    if (auto accumulate =
            dyn_cast<AccumulateGradsOp>(transform.getOperation())) {
      // The pending flag follows the accumulators and the count.
      pending = accumulate.getResult(accumulate.getAccumulators().size() + 1);
      next = i + 1;
    }
  Operation *consumer = update;
  MutableOperandRange point = update.getGradsMutable();
  if (next < chain.size()) {
    consumer = chain[next];
    point = chain[next].getInputGradsMutable();
  }
  if (point.empty())
    return update->emitError(
        "amp-data-parallel: the optimizer update has no gradients");

  // Sum and fold the mean into unscaling when it follows at full precision;
  // otherwise each rank sends its share of the mean.
  auto unscale = dyn_cast<UnscaleGradsOp>(consumer);
  if (unscale && unscale.getDivisor() != 1)
    return unscale->emitError("amp-data-parallel: unscaling already divides "
                              "by ")
           << static_cast<int64_t>(unscale.getDivisor());
  // (A sum of 16-bit gradients would be rounded to their type N times
  // larger than the mean: those are averaged before the sum too.)
  Type wire = wireElementType();
  bool allF32 = true;
  TypeAttr wireAttr;
  for (OpOperand &g : point) {
    Type element = cast<RankedTensorType>(g.get().getType()).getElementType();
    allF32 &= element.isF32();
    if (element != wire)
      wireAttr = TypeAttr::get(wire);
  }
  bool fold = unscale && wireType == WireType::f32 && allF32;
  ReduceKind kind = fold ? ReduceKind::sum : ReduceKind::mean;

  // Buckets in production order: a gradient made earlier in the block (or
  // an argument) goes first.
  struct Grad {
    unsigned index;
    Operation *producer; // null: a block argument
    int64_t bytes;
  };
  SmallVector<Grad> grads;
  int64_t wireBytes = wire.getIntOrFloatBitWidth() / 8;
  for (OpOperand &g : point) {
    Operation *producer = g.get().getDefiningOp();
    if (producer && producer->getBlock() != &body)
      return producer->emitError("amp-data-parallel: a gradient is made "
                                 "outside the step's entry block");
    auto type = cast<RankedTensorType>(g.get().getType());
    grads.push_back(
        {unsigned(grads.size()), producer, type.getNumElements() * wireBytes});
  }
  llvm::stable_sort(grads, [](const Grad &a, const Grad &b) {
    if (!a.producer || !b.producer)
      return !a.producer && b.producer;
    return a.producer != b.producer && a.producer->isBeforeInBlock(b.producer);
  });
  auto capacity = static_cast<int64_t>(bucketMb * 1024.0 * 1024.0);
  SmallVector<SmallVector<Grad>> buckets;
  int64_t filled = 0;
  for (const Grad &g : grads) {
    if (buckets.empty() || filled + g.bytes > capacity) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(g);
    filled += g.bytes;
  }

  // One all-reduce per bucket, right after its last gradient (and the
  // pending flag), in bucket order.
  OpBuilder b(&getContext());
  Location loc = update->getLoc();
  SmallVector<Value> reduced(point.size());
  Operation *previous = nullptr;
  for (ArrayRef<Grad> bucket : buckets) {
    Operation *last = previous;
    SmallVector<Value> inputs;
    for (const Grad &g : bucket) {
      inputs.push_back(point[g.index].get());
      if (g.producer && (!last || last->isBeforeInBlock(g.producer)))
        last = g.producer;
    }
    if (Operation *flag = pending ? pending.getDefiningOp() : nullptr)
      if (!last || last->isBeforeInBlock(flag))
        last = flag;
    if (last)
      b.setInsertionPointAfter(last);
    else
      b.setInsertionPointToStart(&body);
    auto op = AllReduceOp::create(b, loc, kind, inputs, pending,
                                  static_cast<int64_t>(ranks), wireAttr);
    for (auto [g, result] : llvm::zip(bucket, op.getResults()))
      reduced[g.index] = result;
    previous = op;
  }
  // What a skip reports (amp-loss-scaling's first_nonfinite, right before
  // unscaling) reads the summed gradients too: the same on every rank, and
  // no local gradient kept alive past its all-reduce.
  for (auto [operand, value] : llvm::zip(point, reduced)) {
    Value local = operand.get();
    local.replaceUsesWithIf(value, [&](OpOperand &use) {
      return isa<FirstNonfiniteOp>(use.getOwner()) &&
             use.getOwner()->getBlock() == &body &&
             value.getDefiningOp()->isBeforeInBlock(use.getOwner());
    });
    operand.set(value);
  }

  // SyncBatchNorm: every batch norm of the step (forward and backward) over
  // the shards of all ranks.
  if (syncBatchnorm) {
    auto sync = [&](auto op) {
      if (op.getRanks() != 1 && op.getRanks() != ranks) {
        op.emitOpError("amp-data-parallel: already spans ")
            << op.getRanks() << " ranks, not " << static_cast<int64_t>(ranks);
        return WalkResult::interrupt();
      }
      op.setRanks(static_cast<int64_t>(ranks));
      return WalkResult::advance();
    };
    if (func.walk([&](BatchNormOp op) { return sync(op); }).wasInterrupted() ||
        func.walk([&](BatchNormGradOp op) { return sync(op); })
            .wasInterrupted())
      return failure();
  }

  if (!unscale)
    return success();
  if (fold)
    unscale.setDivisor(static_cast<int64_t>(ranks));
  // found_inf, agreed: every use of the flag but the new all-reduce.
  Value found = unscale.getResults().back();
  b.setInsertionPointAfter(unscale);
  auto agreed = AllReduceOp::create(b, loc, ReduceKind::max, found, pending,
                                    static_cast<int64_t>(ranks), TypeAttr());
  found.replaceAllUsesExcept(agreed.getResult(0), agreed);
  return success();
}

} // namespace
