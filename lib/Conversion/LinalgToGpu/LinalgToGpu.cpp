//===- LinalgToGpu.cpp - Buffer-level linalg to gpu.launch kernels --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The kernel half of amp-lower-cuda, on bufferized functions: every linalg
// op becomes one gpu.launch. Its parallel dimensions are linearized over a
// 1-D grid of 256-thread blocks (thread = one point of the parallel space,
// guarded by `id < N`); its reduction dimensions, moved innermost first, stay
// sequential loops inside the thread, accumulating in the op's accumulator
// type (f32 for low-precision reductions, as on the CPU). An op without
// parallel dimensions (a full reduction) runs in one thread. Buffers move to
// the device: memref.alloc/dealloc/copy become gpu.alloc/dealloc/memcpy.
// First version: correct and simple; reductions as tree kernels, fusion
// across ops and an async stream chain come later.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace amp {
#define GEN_PASS_DEF_MAPLINALGTOGPUPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

constexpr int64_t kBlockSize = 256;

/// Puts the parallel dimensions of a generic first (so that the loop nest
/// starts with one scf.parallel over all of them).
LogicalResult parallelDimsFirst(RewriterBase &rewriter, linalg::GenericOp op,
                                linalg::GenericOp &result) {
  SmallVector<unsigned> order;
  auto iterators = op.getIteratorTypesArray();
  for (auto [i, t] : llvm::enumerate(iterators))
    if (t == utils::IteratorType::parallel)
      order.push_back(i);
  for (auto [i, t] : llvm::enumerate(iterators))
    if (t != utils::IteratorType::parallel)
      order.push_back(i);
  if (llvm::equal(order, llvm::seq<unsigned>(0, order.size()))) {
    result = op;
    return success();
  }
  FailureOr<linalg::GenericOp> swapped =
      linalg::interchangeGenericOp(rewriter, op, order);
  if (failed(swapped))
    return failure();
  result = *swapped;
  return success();
}

/// Wraps `ops` (a contiguous range ending at `last`) in a one-thread launch.
gpu::LaunchOp launchSingleThread(OpBuilder &b, Operation *first,
                                 Operation *last) {
  Location loc = first->getLoc();
  b.setInsertionPoint(first);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  auto terminator = gpu::TerminatorOp::create(b, loc);
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(
           Block::iterator(first), std::next(Block::iterator(last)))))
    op.moveBefore(terminator);
  return launch;
}

/// Replaces `launch` by the same launch made async after `token`; returns
/// its token.
Value makeAsync(OpBuilder &b, gpu::LaunchOp launch, Value token) {
  b.setInsertionPoint(launch);
  auto async = gpu::LaunchOp::create(
      b, launch.getLoc(), launch.getGridSizeX(), launch.getGridSizeY(),
      launch.getGridSizeZ(), launch.getBlockSizeX(), launch.getBlockSizeY(),
      launch.getBlockSizeZ(), launch.getDynamicSharedMemorySize(),
      gpu::AsyncTokenType::get(b.getContext()), ValueRange{token});
  async.getBody().takeBody(launch.getBody());
  launch.erase();
  return async.getAsyncToken();
}

/// Whether `op` only ORs values into i1 outputs (`any(...)`, as the
/// non-finite checks of loss scaling are): such a reduction can run all its
/// iterations in parallel, each storing `true` where it finds one.
bool isOrReduction(linalg::GenericOp op) {
  if (op.getNumReductionLoops() == 0)
    return false;
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    if (!acc.getType().isSignlessInteger(1))
      return false;
    Value yielded =
        yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs());
    auto ori = yielded.getDefiningOp<arith::OrIOp>();
    if (!ori || (ori.getLhs() != acc && ori.getRhs() != acc))
      return false;
  }
  return true;
}

/// In a loop nest made from an OR reduction with every loop parallel, turns
/// each `store (load m[i] | x), m[i]` into `if (x) store true, m[i]`: the
/// threads then only ever write `true`, so their order does not matter.
void makeOrStoresIdempotent(scf::ParallelOp loop) {
  SmallVector<memref::StoreOp> stores;
  loop.walk([&](memref::StoreOp store) { stores.push_back(store); });
  for (memref::StoreOp store : stores) {
    auto ori = store.getValue().getDefiningOp<arith::OrIOp>();
    if (!ori)
      continue;
    auto isAcc = [&](Value v) {
      auto load = v.getDefiningOp<memref::LoadOp>();
      return load && load.getMemRef() == store.getMemRef() &&
             load.getIndices() == store.getIndices();
    };
    Value x = isAcc(ori.getLhs())   ? ori.getRhs()
              : isAcc(ori.getRhs()) ? ori.getLhs()
                                    : Value();
    if (!x)
      continue;
    OpBuilder b(store);
    auto guard = scf::IfOp::create(b, store.getLoc(), x, /*withElse=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    Value t = arith::ConstantOp::create(b, store.getLoc(), b.getBoolAttr(true));
    memref::StoreOp::create(b, store.getLoc(), t, store.getMemRef(),
                            store.getIndices());
    store.erase();
  }
}

/// Replaces a top-level scf.parallel with constant bounds by a launch over
/// its linearized iteration space.
LogicalResult launchParallel(OpBuilder &b, scf::ParallelOp loop) {
  Location loc = loop.getLoc();
  SmallVector<int64_t> lbs, steps, trips;
  int64_t total = 1;
  for (auto [lb, ub, step] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb),
                           u = getConstantIntValue(ub),
                           s = getConstantIntValue(step);
    if (!l || !u || !s || *s <= 0)
      return loop.emitError("amp-map-linalg-to-gpu: loop bounds must be "
                            "constants (static shapes)");
    lbs.push_back(*l);
    steps.push_back(*s);
    trips.push_back(std::max<int64_t>(0, (*u - *l + *s - 1) / *s));
    total *= trips.back();
  }
  if (total == 0) {
    loop.erase();
    return success();
  }
  b.setInsertionPoint(loop);
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value one = c(1);
  auto launch =
      gpu::LaunchOp::create(b, loc, c((total + kBlockSize - 1) / kBlockSize),
                            one, one, c(kBlockSize), one, one);
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  Value id = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, launch.getBlockIds().x, c(kBlockSize)),
      launch.getThreadIds().x);
  Value inRange =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, c(total));
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(guard.thenBlock());
  // Delinearize, innermost dimension fastest (coalesced accesses).
  SmallVector<Value> ivs(trips.size());
  Value rest = id;
  for (int64_t d = int64_t(trips.size()) - 1; d >= 0; --d) {
    Value digit = arith::RemUIOp::create(b, loc, rest, c(trips[d]));
    rest = arith::DivUIOp::create(b, loc, rest, c(trips[d]));
    ivs[d] = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, digit, c(steps[d])), c(lbs[d]));
  }
  IRMapping mapping;
  mapping.map(loop.getInductionVars(), ivs);
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
  loop.erase();
  return success();
}

struct MapLinalgToGpuPass
    : public amp::impl::MapLinalgToGpuPassBase<MapLinalgToGpuPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    IRRewriter rewriter(&getContext());
    // Linalg ops -> loop nests, parallel dimensions outermost.
    SmallVector<linalg::LinalgOp> ops;
    for (Operation &op : func.getBody().front())
      if (auto l = dyn_cast<linalg::LinalgOp>(op))
        ops.push_back(l);
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      bool orReduction = false;
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
          generic && isOrReduction(generic)) {
        // Every iteration in parallel (made race-free below).
        orReduction = true;
        SmallVector<Attribute> parallel(
            generic.getNumLoops(),
            linalg::IteratorTypeAttr::get(&getContext(),
                                          utils::IteratorType::parallel));
        generic.setIteratorTypesAttr(rewriter.getArrayAttr(parallel));
      } else if (auto generic =
                     dyn_cast<linalg::GenericOp>(op.getOperation())) {
        linalg::GenericOp reordered;
        if (failed(parallelDimsFirst(rewriter, generic, reordered))) {
          op.emitError("amp-map-linalg-to-gpu: cannot reorder dimensions");
          return signalPassFailure();
        }
        op = reordered;
      }
      Operation *before = op->getPrevNode();
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op))) {
        op.emitError("amp-map-linalg-to-gpu: cannot lower to loops");
        return signalPassFailure();
      }
      Operation *first =
          before ? before->getNextNode() : &func.getBody().front().front();
      Operation *last = op->getPrevNode();
      rewriter.eraseOp(op);
      // The nest starts with the parallel loop unless there is none.
      OpBuilder b(&getContext());
      if (auto loop = dyn_cast<scf::ParallelOp>(last)) {
        if (orReduction)
          makeOrStoresIdempotent(loop);
        if (failed(launchParallel(b, loop)))
          return signalPassFailure();
      } else {
        launchSingleThread(b, first, last);
      }
    }
    // Device memory, host-side element accesses moved to the device, and
    // one chain of async tokens through every GPU op in program order: the
    // runtime runs them all (and the cuBLASLt calls between them) on one
    // stream, so the host waits once, before the function returns.
    OpBuilder b(&getContext());
    Block &body = func.getBody().front();
    b.setInsertionPointToStart(&body);
    Type tokenType = gpu::AsyncTokenType::get(&getContext());
    Value token = gpu::WaitOp::create(b, func.getLoc(), tokenType, ValueRange())
                      .getAsyncToken();
    for (Operation &op : llvm::make_early_inc_range(body)) {
      b.setInsertionPoint(&op);
      Location loc = op.getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        auto g = gpu::AllocOp::create(
            b, loc, alloc.getType(), tokenType, ValueRange{token},
            alloc.getDynamicSizes(), alloc.getSymbolOperands());
        alloc.replaceAllUsesWith(g.getMemref());
        alloc.erase();
        token = g.getAsyncToken();
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        token = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{token},
                                       dealloc.getMemref())
                    .getAsyncToken();
        dealloc.erase();
      } else if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        token = gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{token},
                                      copy.getTarget(), copy.getSource())
                    .getAsyncToken();
        copy.erase();
      } else if (isa<memref::LoadOp, memref::StoreOp>(op)) {
        token = makeAsync(b, launchSingleThread(b, &op, &op), token);
      } else if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
        token = makeAsync(b, launch, token);
      } else if (isa<func::ReturnOp>(op)) {
        gpu::WaitOp::create(b, loc, Type(), ValueRange{token});
      }
    }
  }
};

} // namespace
