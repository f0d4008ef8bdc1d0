//===- PlanMemory.cpp - One arena per step, offsets by liveness -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// After bufferization and amp-free-after-last-use, a step is one block in
// which each temporary is a memref.alloc freed by a memref.dealloc after its
// last use. Here those buffers become views at fixed offsets of one arena,
// allocated when the function starts and freed when it returns: each buffer
// lives from its allocation to its free (an interval of the block's op
// order), and buffers placed largest first take the lowest offset where no
// buffer with an overlapping interval lies (greedy interval colouring). The
// arena's size, the step's planned peak, is then known at compile time and
// recorded on the function (`amp.memory_plan`), which the runtimes report.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace amp {
#define GEN_PASS_DEF_PLANMEMORYPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// One buffer of the plan: its allocation, its free, its interval of op
/// positions and its size, rounded to the arena's alignment.
struct Buffer {
  /// A temporary: its allocation and free.
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  /// Or the workspace of a runtime call (start == end: the call).
  func::CallOp call;
  int64_t start = 0, end = 0, bytes = 0, offset = -1;
  /// What first writes it (the kind of op), for the breakdown.
  std::string producer;
};

/// The bytes of one element of `type` in memory, 0 where the plan does not
/// take such buffers (the LLVM lowering stores i1 as a byte).
int64_t elementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
  return 0;
}

/// The size of the buffer `alloc` makes, 0 where the plan cannot place it:
/// a dynamic shape, a layout or memory space of its own, an alignment above
/// the arena's.
int64_t plannableBytes(memref::AllocOp alloc, int64_t alignment) {
  MemRefType type = alloc.getType();
  if (!type.hasStaticShape() || !type.getLayout().isIdentity() ||
      type.getMemorySpace() || !alloc.getSymbolOperands().empty() ||
      alloc.getAlignment().value_or(1) > uint64_t(alignment))
    return 0;
  int64_t bytes = type.getNumElements() * elementBytes(type.getElementType());
  return llvm::alignTo(std::max<int64_t>(bytes, 1), alignment);
}

/// The allocation a value's memory comes from, through views and extracted
/// pointers; null where it comes from elsewhere.
Operation *allocOf(Value value) {
  while (true) {
    Operation *def = value.getDefiningOp();
    if (!def)
      return nullptr;
    if (isa<memref::AllocOp>(def))
      return def;
    if (auto view = dyn_cast<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (auto extract = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(def))
      value = extract.getSource();
    else
      return nullptr;
  }
}

/// The scratch a runtime call may need of its workspace: what its lowering
/// recorded (amp.workspace_bytes: the lowering knows the runtime's paths;
/// -1 where that is not bounded), else an f32 copy of each 16-bit float
/// operand it receives (the runtime widens such operands; an upper bound
/// where it need not), each aligned.
int64_t workspaceBytes(func::CallOp call, int64_t alignment) {
  if (auto recorded =
          call->getAttrOfType<IntegerAttr>(amp::kWorkspaceBytesAttrName)) {
    if (recorded.getInt() < 0)
      return -1;
    return std::max<int64_t>(llvm::alignTo(recorded.getInt(), alignment),
                             alignment);
  }
  int64_t bytes = 0;
  for (Value operand : call.getOperands()) {
    auto extract =
        operand.getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>();
    if (!extract)
      continue;
    auto type = dyn_cast<MemRefType>(extract.getSource().getType());
    if (type && type.hasStaticShape() &&
        (type.getElementType().isF16() || type.getElementType().isBF16()))
      bytes += llvm::alignTo(type.getNumElements() * 4, alignment);
  }
  return std::max(bytes, alignment);
}

/// The breakdown's name for the kind of op `op` is: a runtime call by its
/// family, amp's generated loops, copies.
std::string producerKind(Operation *op) {
  if (auto call = dyn_cast<func::CallOp>(op)) {
    StringRef callee = call.getCallee();
    if (callee.contains("attention"))
      return "attention";
    if (callee.contains("gemm"))
      return "gemm";
    if (callee.contains("conv"))
      return "convolution";
    callee.consume_front("amp_cpu_");
    callee.consume_front("amp_cuda_");
    return callee.str();
  }
  if (isa<memref::CopyOp>(op) || op->getName().getStringRef() == "linalg.copy")
    return "copy";
  return "loops";
}

struct PlanMemoryPass
    : public amp::impl::PlanMemoryPassBase<PlanMemoryPass> {
  using PlanMemoryPassBase::PlanMemoryPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment < 1 || !llvm::isPowerOf2_64(alignment)) {
      module.emitError("amp-plan-memory: alignment ")
          << alignment.getValue() << " is not a power of two";
      return signalPassFailure();
    }
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (!func.isDeclaration())
        plan(func);
  }

  /// Plans `func`'s buffers.
  void plan(func::FuncOp func) {
    // One block ending in a return: the arena is freed there.
    if (!func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    if (!isa<func::ReturnOp>(block.getTerminator()))
      return;

    // Positions, and the buffers the plan takes: allocated and freed in
    // this block, by one dealloc of the allocation itself.
    DenseMap<Operation *, int64_t> position;
    int64_t next = 0;
    for (Operation &op : block)
      position[&op] = next++;
    llvm::MapVector<Operation *, Buffer> buffers;
    int64_t unplanned = 0, unplannedBytes = 0;
    func.walk([&](memref::AllocOp alloc) {
      int64_t bytes = plannableBytes(alloc, alignment);
      memref::DeallocOp dealloc;
      unsigned deallocs = 0;
      for (Operation *user : alloc->getUsers())
        if (auto d = dyn_cast<memref::DeallocOp>(user)) {
          dealloc = d;
          ++deallocs;
        }
      if (bytes == 0 || alloc->getBlock() != &block || deallocs != 1 ||
          dealloc->getBlock() != &block) {
        ++unplanned;
        MemRefType type = alloc.getType();
        if (type.hasStaticShape())
          unplannedBytes +=
              type.getNumElements() * elementBytes(type.getElementType());
        return;
      }
      Buffer buffer;
      buffer.alloc = alloc;
      buffer.dealloc = dealloc;
      buffer.start = position[alloc];
      buffer.end = position[dealloc];
      buffer.bytes = bytes;
      buffers[alloc] = buffer;
    });
    // A workspace for each runtime call (a call of a declaration) where
    // the runtime takes one.
    SmallVector<Buffer> workspaces;
    if (!workspaceFunction.empty()) {
      ModuleOp module = getOperation();
      for (Operation &op : block)
        if (auto call = dyn_cast<func::CallOp>(op)) {
          auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
          if (callee && callee.isDeclaration() &&
              call.getCallee().starts_with(runtimePrefix) &&
              call.getCallee() != workspaceFunction) {
            Buffer workspace;
            workspace.call = call;
            workspace.start = workspace.end = position[call];
            workspace.bytes = workspaceBytes(call, alignment);
            // A call whose scratch is not bounded could take more than the
            // plan says: the function stays with the heap.
            if (workspace.bytes < 0)
              return;
            workspace.producer = "workspace";
            workspaces.push_back(workspace);
          }
        }
    }
    if (buffers.empty() && workspaces.empty())
      return;

    // What first writes each buffer (its first use other than a view).
    for (Operation &op : block) {
      if (isa<ViewLikeOpInterface, memref::ExtractAlignedPointerAsIndexOp,
              memref::DeallocOp>(op))
        continue;
      auto visit = [&](Value operand) {
        auto it = buffers.find(allocOf(operand));
        if (it != buffers.end() && it->second.producer.empty())
          it->second.producer = producerKind(&op);
      };
      for (Value operand : op.getOperands())
        visit(operand);
      op.walk([&](Operation *nested) {
        if (nested != &op)
          for (Value operand : nested->getOperands())
            visit(operand);
      });
    }

    // Largest first; each at the lowest offset clear of every placed buffer
    // whose interval overlaps its own.
    SmallVector<Buffer *> order;
    for (auto &entry : buffers)
      order.push_back(&entry.second);
    for (Buffer &workspace : workspaces)
      order.push_back(&workspace);
    llvm::stable_sort(order, [](const Buffer *a, const Buffer *b) {
      return a->bytes != b->bytes ? a->bytes > b->bytes : a->start < b->start;
    });
    // The placed buffers are kept in offset order, so the first gap is
    // found in one pass over them (sorting each buffer's overlapping
    // neighbours instead took 1.1 s of a 1 000-layer MLP's lowering).
    SmallVector<Buffer *> placed;
    auto byOffset = [](const Buffer *a, const Buffer *b) {
      return a->offset != b->offset ? a->offset < b->offset
                                    : a->bytes < b->bytes;
    };
    int64_t arena = 0;
    for (Buffer *buffer : order) {
      int64_t offset = 0;
      for (const Buffer *other : placed) {
        if (other->start > buffer->end || buffer->start > other->end)
          continue;
        if (offset + buffer->bytes <= other->offset)
          break;
        offset = std::max(offset, other->offset + other->bytes);
      }
      buffer->offset = offset;
      arena = std::max(arena, offset + buffer->bytes);
      placed.insert(llvm::upper_bound(placed, buffer, byOffset), buffer);
    }

    // The most bytes live at once (a lower bound of any plan's arena), and
    // what they are at that point.
    SmallVector<std::pair<int64_t, int64_t>> events;
    for (const Buffer *b : order) {
      events.push_back({b->start, b->bytes});
      events.push_back({b->end + 1, -b->bytes});
    }
    llvm::sort(events, [](auto a, auto b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int64_t live = 0, livePeak = 0, peakAt = 0;
    for (auto [at, delta] : events) {
      live += delta;
      if (live > livePeak) {
        livePeak = live;
        peakAt = at;
      }
    }
    llvm::StringMap<int64_t> breakdown;
    for (const Buffer *b : order)
      if (b->start <= peakAt && peakAt <= b->end)
        breakdown[b->producer.empty() ? "unused" : b->producer] += b->bytes;

    // The rewrite: the arena first, a view for each buffer where it was
    // allocated, the arena freed before the return.
    OpBuilder builder(&getContext());
    builder.setInsertionPointToStart(&block);
    Location loc = func.getLoc();
    auto arenaType = MemRefType::get({arena}, builder.getI8Type());
    Value arenaValue = memref::AllocOp::create(
        builder, loc, arenaType, builder.getI64IntegerAttr(alignment));
    for (auto &entry : buffers) {
      Buffer &b = entry.second;
      builder.setInsertionPoint(b.alloc);
      Value shift =
          arith::ConstantIndexOp::create(builder, b.alloc.getLoc(), b.offset);
      auto view = memref::ViewOp::create(builder, b.alloc.getLoc(),
                                         b.alloc.getType(), arenaValue, shift,
                                         ValueRange{});
      // A view of its own memory: amp-outline-parallel-loops may mark it
      // noalias (buffers live at once never overlap).
      view->setAttr(amp::kPlannedViewAttrName, builder.getUnitAttr());
      b.alloc.getResult().replaceAllUsesWith(view.getResult());
      b.alloc->erase();
      b.dealloc->erase();
    }
    // Each call's workspace: its own bytes and the free range after them,
    // up to the next buffer live at the call (or the arena's end), lent to
    // the runtime for the call.
    func::FuncOp setWorkspace;
    if (!workspaces.empty()) {
      ModuleOp module = getOperation();
      setWorkspace = module.lookupSymbol<func::FuncOp>(workspaceFunction);
      if (!setWorkspace) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointToStart(module.getBody());
        setWorkspace = func::FuncOp::create(
            builder, loc, workspaceFunction,
            builder.getFunctionType(
                {builder.getIndexType(), builder.getI64Type()}, {}));
        setWorkspace.setPrivate();
      }
    }
    for (Buffer &w : workspaces) {
      int64_t limit = arena;
      for (const Buffer *b : placed)
        if (b != &w && b->start <= w.start && w.start <= b->end &&
            b->offset >= w.offset)
          limit = std::min(limit, b->offset);
      Location callLoc = w.call.getLoc();
      builder.setInsertionPoint(w.call);
      Value shift = arith::ConstantIndexOp::create(builder, callLoc, w.offset);
      auto view = memref::ViewOp::create(
          builder, callLoc,
          MemRefType::get({limit - w.offset}, builder.getI8Type()), arenaValue,
          shift, ValueRange{});
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(
          builder, callLoc, view);
      Value bytes = arith::ConstantIntOp::create(builder, callLoc,
                                                 limit - w.offset, 64);
      func::CallOp::create(builder, callLoc, setWorkspace,
                           ValueRange{base, bytes});
      builder.setInsertionPointAfter(w.call);
      Value none = arith::ConstantIndexOp::create(builder, callLoc, 0);
      Value zero = arith::ConstantIntOp::create(builder, callLoc, 0, 64);
      func::CallOp::create(builder, callLoc, setWorkspace,
                           ValueRange{none, zero});
    }
    builder.setInsertionPoint(block.getTerminator());
    memref::DeallocOp::create(builder, loc, arenaValue);

    SmallVector<NamedAttribute> parts;
    for (auto &entry : breakdown)
      parts.push_back(builder.getNamedAttr(
          entry.getKey(), builder.getI64IntegerAttr(entry.getValue())));
    func->setAttr(
        amp::kMemoryPlanAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("arena_bytes",
                                 builder.getI64IntegerAttr(arena)),
            builder.getNamedAttr("live_peak_bytes",
                                 builder.getI64IntegerAttr(livePeak)),
            builder.getNamedAttr("buffers", builder.getI64IntegerAttr(
                                                int64_t(buffers.size()))),
            builder.getNamedAttr("workspaces",
                                 builder.getI64IntegerAttr(
                                     int64_t(workspaces.size()))),
            builder.getNamedAttr("unplanned_buffers",
                                 builder.getI64IntegerAttr(unplanned)),
            builder.getNamedAttr("unplanned_bytes",
                                 builder.getI64IntegerAttr(unplannedBytes)),
            builder.getNamedAttr("at_peak", builder.getDictionaryAttr(parts)),
        }));
  }
};

} // namespace
