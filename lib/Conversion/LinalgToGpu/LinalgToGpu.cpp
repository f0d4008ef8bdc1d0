//===- LinalgToGpu.cpp - Buffer-level linalg to gpu.launch kernels --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The kernel half of amp-lower-cuda, on bufferized functions: every linalg
// op (and buffer copy) becomes one gpu.launch. Its parallel dimensions are
// linearized over a 1-D grid of 256-thread blocks (thread = one point of the
// parallel space, guarded by `id < N`); its reduction dimensions, moved
// innermost first, stay sequential loops inside the thread, accumulating in
// the op's accumulator type (f32 for low-precision reductions, as on the
// CPU). OR reductions into i1 (non-finite checks) run fully parallel; any
// other op without parallel dimensions (a full reduction) runs in one
// thread. Then independent launches are fused horizontally (one launch, a
// segment of blocks per original launch: the multi-tensor kernels of the
// optimizers and loss scaling), buffers move to the device
// (memref.alloc/dealloc -> gpu.alloc/dealloc) and one async token chain
// orders every GPU op as the program does, with a single host wait before
// each return. Row-parallel (tree) reductions are the next step.
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
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/ScopeExit.h"

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

/// The buffer a memref value views (through subviews, casts and reshapes).
Value rootBuffer(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// A launch with constant 1-D grid and block sizes, and the buffers defined
/// outside it that it reads and writes.
struct LaunchInfo {
  gpu::LaunchOp launch;
  int64_t blocks = 0, threads = 0;
  llvm::SmallDenseSet<Value> reads, writes;
  unsigned level = 0;
};

std::optional<LaunchInfo> describeLaunch(gpu::LaunchOp launch) {
  LaunchInfo info;
  info.launch = launch;
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues(),
                  block = launch.getBlockSizeOperandValues();
  auto constant = [](Value v) { return getConstantIntValue(v); };
  std::optional<int64_t> gx = constant(grid.x), bx = constant(block.x);
  if (!gx || !bx || constant(grid.y) != 1 || constant(grid.z) != 1 ||
      constant(block.y) != 1 || constant(block.z) != 1 ||
      launch.getDynamicSharedMemorySize() || !launch.getBody().hasOneBlock())
    return std::nullopt;
  info.blocks = *gx;
  info.threads = *bx;
  bool unknown = false;
  launch.getBody().walk([&](Operation *op) {
    auto outside = [&](Value v) {
      return !launch.getBody().isAncestor(v.getParentRegion());
    };
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      if (outside(load.getMemRef()))
        info.reads.insert(rootBuffer(load.getMemRef()));
    } else if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (outside(store.getMemRef()))
        info.writes.insert(rootBuffer(store.getMemRef()));
    } else if (!isPure(op) && !isa<scf::IfOp, scf::ForOp, scf::YieldOp,
                                   gpu::TerminatorOp, memref::AllocaOp>(op)) {
      // An access we do not track (a call, an atomic): do not move it.
      unknown = true;
    }
  });
  if (unknown)
    return std::nullopt;
  return info;
}

/// The bytes of kernel parameters a value a launch uses from outside becomes
/// once the launch is outlined: a memref's descriptor (two pointers, the
/// offset, sizes and strides), 8 for anything else (an upper bound).
int64_t kernelParamBytes(Value v) {
  if (auto type = dyn_cast<MemRefType>(v.getType()))
    return (3 + 2 * type.getRank()) * 8;
  return 8;
}

/// The most kernel-parameter bytes a fused launch may take: PTX before ISA
/// 8.1 allows 4 352 (ptxas rejects more), and our target is +ptx80.
constexpr int64_t kMaxKernelParamBytes = 4096;

/// Replaces `group` (independent launches, in program order) by one launch
/// just before `before`: its blocks are the groups' blocks one after
/// another, and each block runs the body of the launch it belongs to, with
/// that launch's block index, grid and block size (threads beyond that
/// launch's block size idle). This is the multi-tensor kernel of the
/// optimizers and of loss scaling (one launch for every parameter).
void fuseLaunches(ArrayRef<LaunchInfo *> group, Operation *before) {
  OpBuilder b(before);
  Location loc = group.front()->launch.getLoc();
  auto c = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t blocks = 0, threads = 0;
  for (LaunchInfo *info : group) {
    blocks += info->blocks;
    threads = std::max(threads, info->threads);
  }
  Value one = c(1);
  auto fused =
      gpu::LaunchOp::create(b, loc, c(blocks), one, one, c(threads), one, one);
  Block &body = fused.getBody().front();
  b.setInsertionPointToStart(&body);
  Value bid = fused.getBlockIds().x, tid = fused.getThreadIds().x;
  int64_t offset = 0;
  for (LaunchInfo *info : group) {
    Value lo = c(offset), hi = c(offset + info->blocks);
    Value inSegment = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, bid, lo),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, bid, hi));
    if (info->threads < threads)
      inSegment = arith::AndIOp::create(
          b, loc, inSegment,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid,
                                c(info->threads)));
    auto segment = scf::IfOp::create(b, loc, inSegment, /*withElse=*/false);
    OpBuilder inner = OpBuilder::atBlockBegin(segment.thenBlock());
    gpu::LaunchOp old = info->launch;
    IRMapping mapping;
    Value localBid = arith::SubIOp::create(inner, loc, bid, lo);
    mapping.map(old.getBlockIds().x, localBid);
    mapping.map(old.getBlockIds().y, fused.getBlockIds().y);
    mapping.map(old.getBlockIds().z, fused.getBlockIds().z);
    mapping.map(old.getThreadIds().x, tid);
    mapping.map(old.getThreadIds().y, fused.getThreadIds().y);
    mapping.map(old.getThreadIds().z, fused.getThreadIds().z);
    mapping.map(old.getGridSize().x,
                arith::ConstantIndexOp::create(inner, loc, info->blocks));
    mapping.map(old.getGridSize().y, fused.getGridSize().y);
    mapping.map(old.getGridSize().z, fused.getGridSize().z);
    mapping.map(old.getBlockSize().x,
                arith::ConstantIndexOp::create(inner, loc, info->threads));
    mapping.map(old.getBlockSize().y, fused.getBlockSize().y);
    mapping.map(old.getBlockSize().z, fused.getBlockSize().z);
    for (Operation &op : old.getBody().front().without_terminator())
      inner.clone(op, mapping);
    offset += info->blocks;
  }
  gpu::TerminatorOp::create(b, loc);
  for (LaunchInfo *info : group)
    info->launch.erase();
}

/// Horizontal fusion: in each run of launches with only allocations,
/// deallocations and pure host ops between them, launches that do not depend on
/// each other (no buffer one writes is read or written by another) become one
/// launch. Launches are layered by their dependences (each as late as its
/// consumers allow); each layer becomes one launch, in layer order, at the end
/// of the run.
void fuseIndependentLaunches(func::FuncOp func) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });
  ops.push_back(body.getTerminator());
  SmallVector<LaunchInfo> run;
  // Deallocations inside a run move to its end (a later free is always
  // safe), so that they do not split it.
  SmallVector<Operation *> deallocs;
  auto flush = [&](Operation *end) {
    llvm::scope_exit moveDeallocs([&] {
      for (Operation *dealloc : deallocs)
        dealloc->moveBefore(end);
      deallocs.clear();
    });
    if (run.size() > 1) {
      // Levels as late as possible: a launch goes just before the first
      // launch that needs it, so the launches feeding one consumer (the
      // non-finite checks feeding found_inf) or none (the optimizer's
      // updates) share a level.
      size_t n = run.size();
      auto dependent = [&](size_t i, size_t j) {
        return llvm::any_of(run[i].writes,
                            [&](Value v) {
                              return run[j].reads.contains(v) ||
                                     run[j].writes.contains(v);
                            }) ||
               llvm::any_of(run[i].reads,
                            [&](Value v) { return run[j].writes.contains(v); });
      };
      SmallVector<unsigned> depth(n, 0);
      unsigned levels = 0;
      for (size_t j = 0; j < n; ++j) {
        for (size_t i = 0; i < j; ++i)
          if (dependent(i, j))
            depth[j] = std::max(depth[j], depth[i] + 1);
        levels = std::max(levels, depth[j] + 1);
      }
      for (size_t i = n; i-- > 0;) {
        run[i].level = levels - 1;
        for (size_t j = i + 1; j < n; ++j)
          if (dependent(i, j))
            run[i].level = std::min(run[i].level, run[j].level - 1);
      }
      if (levels < run.size()) {
        auto emit = [&](ArrayRef<LaunchInfo *> group) {
          if (group.size() == 1)
            group.front()->launch->moveBefore(end);
          else if (!group.empty())
            fuseLaunches(group, end);
        };
        for (unsigned level = 0; level < levels; ++level) {
          // A layer's launches in groups whose kernel parameters fit.
          SmallVector<LaunchInfo *> group;
          llvm::SetVector<Value> captured;
          int64_t bytes = 0;
          for (LaunchInfo &info : run) {
            if (info.level != level)
              continue;
            llvm::SetVector<Value> mine;
            getUsedValuesDefinedAbove(info.launch.getBody(), mine);
            auto extra = [&] {
              int64_t sum = 0;
              for (Value v : mine)
                if (!captured.contains(v))
                  sum += kernelParamBytes(v);
              return sum;
            };
            if (!group.empty() && bytes + extra() > kMaxKernelParamBytes) {
              emit(group);
              group.clear();
              captured.clear();
              bytes = 0;
            }
            bytes += extra();
            captured.insert(mine.begin(), mine.end());
            group.push_back(&info);
          }
          emit(group);
        }
      }
    }
    run.clear();
  };
  for (Operation *op : ops) {
    if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
      if (std::optional<LaunchInfo> info = describeLaunch(launch)) {
        run.push_back(std::move(*info));
        continue;
      }
    } else if ((isPure(op) && !op->hasTrait<OpTrait::IsTerminator>()) ||
               isa<memref::AllocOp>(op)) {
      continue;
    } else if (isa<memref::DeallocOp>(op)) {
      deallocs.push_back(op);
      continue;
    }
    flush(op);
  }
}

struct MapLinalgToGpuPass
    : public amp::impl::MapLinalgToGpuPassBase<MapLinalgToGpuPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    IRRewriter rewriter(&getContext());
    // Copies between buffers become kernels too (linalg.copy), so they can
    // share launches with the kernels around them.
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front()))
      if (auto copy = dyn_cast<memref::CopyOp>(op);
          copy &&
          cast<MemRefType>(copy.getSource().getType()).hasStaticShape()) {
        rewriter.setInsertionPoint(copy);
        linalg::CopyOp::create(rewriter, copy.getLoc(), copy.getSource(),
                               copy.getTarget());
        rewriter.eraseOp(copy);
      }
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
    fuseIndependentLaunches(func);
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
