//===- Recompute.cpp - Recompute element-wise values in backward ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// A training step computes its forward, then its backward in one block, and
// a value of the forward that the backward reads stays alive across the
// whole gap between its uses. Where such a value is made by an element-wise
// linalg.generic whose inputs are alive at its first backward use anyway (a
// GEMM's output kept for the activation's gradient, a norm's input and
// statistics kept for its gradient), a clone of the generic just before that
// use frees the value's memory over the gap and extends no other value's
// life: recomputation that costs time, never memory. The candidates that
// lower the estimated peak of live tensors are taken largest first until
// the peak is within the budget.
//
//===----------------------------------------------------------------------===//

#include "amp/ABI/EntryPoints.h"
#include "amp/Conversion/Passes.h"
#include "amp/Dialect/Train/IR/TrainOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>

namespace amp {
#define GEN_PASS_DEF_RECOMPUTEPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// The bytes of a tensor value with a static shape (i1 as a byte), else 0.
int64_t tensorBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  Type element = type.getElementType();
  if (!element.isIntOrIndexOrFloat())
    return 0;
  int64_t bits = element.isIndex() ? 64 : element.getIntOrFloatBitWidth();
  return type.getNumElements() * llvm::divideCeil(bits, 8);
}

/// Whether `op` makes a view of its operand's memory (after bufferization):
/// its result lives in its source's buffer.
bool isView(Operation *op) {
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp,
             tensor::ExtractSliceOp>(op);
}

/// The value whose buffer `value` lives in (through views).
Value rootOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isView(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// The block's ops in order, each buffer's life over them (a value and its
/// views: one buffer), and the peak of live tensor bytes.
struct Liveness {
  explicit Liveness(Block &block) {
    for (Operation &op : block)
      position[&op] = int64_t(order.size()), order.push_back(&op);
    for (Operation *op : order) {
      // An empty tensor and a constant take no memory of the step; a view
      // none of its own.
      if (isa<tensor::EmptyOp>(op) || op->hasTrait<OpTrait::ConstantLike>())
        continue;
      for (Value result : op->getResults()) {
        // A view keeps its source alive where it is read, not where it is
        // made (a view left without reads holds nothing).
        int64_t at = isView(op) ? -1 : position[op];
        for (Operation *user : result.getUsers())
          if (Operation *top = block.findAncestorOpInBlock(*user))
            if (top != user || !isView(user))
              at = std::max(at, position[top]);
        Value root = rootOf(result);
        auto [it, inserted] = lastUse.try_emplace(root, at);
        if (!inserted)
          it->second = std::max(it->second, at);
      }
    }
    // What the function returns is no temporary of the step: the caller's
    // buffers or, for updated state, the state's own.
    DenseSet<Value> returned;
    if (!block.empty())
      for (Value result : block.back().getOperands())
        returned.insert(rootOf(result));
    for (auto &[root, last] : lastUse) {
      int64_t bytes = tensorBytes(root);
      Operation *def = root.getDefiningOp();
      // The views of an empty tensor or a constant (a shared init) are no
      // buffer of their own either: the ops writing into them make one.
      if (bytes == 0 || !def || isa<tensor::EmptyOp>(def) ||
          def->hasTrait<OpTrait::ConstantLike>() || returned.contains(root))
        continue;
      intervals.push_back({position[def], last, bytes});
    }
    SmallVector<std::pair<int64_t, int64_t>> events;
    for (auto [from, to, size] : intervals) {
      events.push_back({from, size});
      events.push_back({to + 1, -size});
    }
    llvm::sort(events, [](auto a, auto b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    });
    int64_t live = 0;
    for (auto [at, delta] : events) {
      live += delta;
      if (live > peak)
        peak = live, peakAt = at;
    }
  }

  /// Whether `value`'s memory is alive at position `at` without a use
  /// there (an argument, or a buffer used at or after it).
  bool aliveAt(Value value, int64_t at) const {
    Value root = rootOf(value);
    if (isa<BlockArgument>(root))
      return true;
    auto it = lastUse.find(root);
    return it != lastUse.end() && it->second >= at;
  }

  /// The bytes live at position `at`.
  int64_t liveAt(int64_t at) const {
    int64_t bytes = 0;
    for (auto [from, to, size] : intervals)
      if (from <= at && at <= to)
        bytes += size;
    return bytes;
  }

  SmallVector<Operation *> order;
  DenseMap<Operation *, int64_t> position;
  SmallVector<std::tuple<int64_t, int64_t, int64_t>> intervals;
  DenseMap<Value, int64_t> lastUse;
  int64_t peak = 0, peakAt = 0;
};

/// A use of a value, directly or through a chain of views of it.
struct Use {
  int64_t at;
  OpOperand *operand;
  SmallVector<Operation *> views;
};

/// The uses of `value` and of its views, each with the views between.
void collectUses(Value value, const Liveness &live, Block *block,
                 SmallVector<Operation *> &views, SmallVector<Use> &out,
                 bool &outside) {
  for (OpOperand &use : value.getUses()) {
    Operation *owner = use.getOwner();
    Operation *top = block->findAncestorOpInBlock(*owner);
    if (!top) {
      outside = true;
      return;
    }
    if (owner == top && isView(owner)) {
      views.push_back(owner);
      collectUses(owner->getResult(0), live, block, views, out, outside);
      views.pop_back();
      continue;
    }
    out.push_back({live.position.lookup(top), &use, views});
  }
}

/// Whether the body of `op`'s regions is pure (a yield aside).
bool hasPureBody(Operation *op) {
  for (Region &region : op->getRegions()) {
    WalkResult pure = region.walk([](Operation *inner) {
      return isPure(inner) || isa<linalg::YieldOp>(inner)
                 ? WalkResult::advance()
                 : WalkResult::interrupt();
    });
    if (pure.wasInterrupted())
      return false;
  }
  return true;
}

/// Whether `op` is a GEMM of the CPU runtime (amp_cpu_gemm,
/// amp_cpu_gemm_bias).
bool isGemm(Operation *op) {
  auto call = dyn_cast<amp::train::RuntimeCallOp>(op);
  return call && call.getCallee().starts_with(amp::entry::kCpuGemm);
}

/// Whether `op` can be computed again, with the same result, from the same
/// operands: a pure linalg op on tensors that is no contraction or
/// convolution (element-wise work, a norm's reductions, a fill, a
/// transpose), a view, or (with `gemms`) a GEMM of the runtime; never a
/// recomputation itself.
bool isClonable(Operation *op, bool gemms) {
  if (op->hasAttr(amp::kRecomputedAttrName))
    return false;
  if (isView(op))
    return true;
  if (isGemm(op))
    return gemms;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureTensorSemantics() ||
      linalg::isaContractionOpInterface(linalgOp) ||
      linalg::isaConvolutionOpInterface(linalgOp))
    return false;
  return hasPureBody(op);
}

/// The tensors `op` reads: its operands, less the inits of a linalg op its
/// body never reads (a clone gets a fresh `tensor.empty` there), plus
/// those its body reads from above (a table an embedding's body extracts
/// from).
SmallVector<Value> tensorsRead(Operation *op) {
  SmallVector<Value> read;
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<RankedTensorType>(operand.get().getType()))
      continue;
    if (linalgOp && linalgOp.isDpsInit(&operand) &&
        !linalgOp.payloadUsesValueFromOperand(&operand))
      continue;
    read.push_back(operand.get());
  }
  llvm::SetVector<Value> above;
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, above);
  for (Value value : above)
    if (isa<RankedTensorType>(value.getType()))
      read.push_back(value);
  return read;
}

/// The most ops one recomputation clones (a layer norm's output: its two
/// reductions, their fills and views; with GEMMs, the GEMM and the cast
/// between).
constexpr int kMaxChain = 16;

/// The multiply-adds of a GEMM of the runtime (m * n * k from its operand
/// and result shapes: A and B hold m*k and k*n elements, C m*n).
double gemmWork(Operation *gemm) {
  auto elements = [](Value v) {
    return double(cast<RankedTensorType>(v.getType()).getNumElements());
  };
  double a = elements(gemm->getOperand(0)), b = elements(gemm->getOperand(1));
  double c = elements(gemm->getResult(0));
  return c * std::sqrt(a * b / c);
}

/// The clones made so far: for a value of the step, its recomputed copies.
using Clones = DenseMap<Value, SmallVector<Value>>;

/// The ops that compute a value again at one position, operands first, and
/// the earlier recomputed copies they read instead of computing again.
struct Chain {
  llvm::SetVector<Operation *> ops;
  DenseMap<Value, Value> reused;
};

/// Adds to `chain` the ops that compute `value` again at position `at`
/// from tensors alive there (arguments, constants, empty tensors and values
/// read at or after `at`) or recomputed before it for an earlier late use
/// (the query, key and value of one projection share its GEMM); false if
/// some op on the way cannot be cloned or the chain grows too long.
bool gatherChain(Value value, int64_t at, const Liveness &live, bool gemms,
                 const Clones &clones, Chain &chain) {
  Operation *def = value.getDefiningOp();
  if (!def || isa<tensor::EmptyOp>(def) ||
      def->hasTrait<OpTrait::ConstantLike>() || live.aliveAt(value, at) ||
      chain.ops.contains(def) || chain.reused.count(value))
    return true;
  // The latest copy made before `at`, if any.
  auto it = clones.find(value);
  if (it != clones.end()) {
    Value latest;
    int64_t latestAt = -1;
    for (Value copy : it->second) {
      Operation *top = copy.getDefiningOp();
      int64_t copyAt = live.position.lookup(top);
      if (copyAt < at && copyAt > latestAt)
        latest = copy, latestAt = copyAt;
    }
    if (latest) {
      chain.reused[value] = latest;
      return true;
    }
  }
  // The value's own op comes last: room for it is kept.
  if (!isClonable(def, gemms) || int(chain.ops.size()) + 1 >= kMaxChain)
    return false;
  for (Value read : tensorsRead(def))
    if (!gatherChain(read, at, live, gemms, clones, chain))
      return false;
  chain.ops.insert(def);
  return true;
}

/// A value the pass can recompute: a result of a linalg op, alive across
/// the gap (early uses up to `earlyEnd`, late uses from `lateStart` on);
/// `chain` computes it again from what is alive at `lateStart` (its
/// defining op last), with `work` multiply-adds of GEMMs.
struct Candidate {
  Value value;
  int64_t bytes, earlyEnd, lateStart;
  SmallVector<Use> lateUses;
  Chain chain;
  double work = 0;
};

/// `value` (a result of a clonable linalg op, or of a GEMM of the runtime
/// with `gemms`: one with a 16-bit result writes it itself) as a candidate
/// at the current
/// liveness: the gap between two of its uses (its views' included) that
/// holds the peak splits them into early and late uses, and the ops that
/// make it can all be computed again at the first late use.
std::optional<Candidate> candidate(Value value, const Liveness &live,
                                   int64_t minBytes, bool gemms,
                                   const Clones &clones) {
  Operation *root = value.getDefiningOp();
  int64_t bytes = tensorBytes(value);
  if (bytes < std::max<int64_t>(minBytes, 1) || isView(root) ||
      !(isa<linalg::LinalgOp>(root) || isGemm(root)) ||
      !isClonable(root, gemms))
    return std::nullopt;
  SmallVector<Use> uses;
  SmallVector<Operation *> views;
  bool outside = false;
  collectUses(value, live, root->getBlock(), views, uses, outside);
  if (outside || uses.empty())
    return std::nullopt;
  llvm::stable_sort(uses,
                    [](const Use &a, const Use &b) { return a.at < b.at; });
  // The first use after the peak; at least one use before it (else the
  // value would only move, not be recomputed).
  auto late =
      llvm::find_if(uses, [&](const Use &u) { return u.at > live.peakAt; });
  if (late == uses.begin() || late == uses.end() ||
      std::prev(late)->at >= live.peakAt)
    return std::nullopt;
  Candidate c{value, bytes, std::prev(late)->at, late->at, {}, {}};
  for (Value read : tensorsRead(root))
    if (!gatherChain(read, c.lateStart, live, gemms, clones, c.chain))
      return std::nullopt;
  c.chain.ops.insert(root);
  for (Operation *op : c.chain.ops)
    if (isGemm(op))
      c.work += gemmWork(op);
  // The views on the way to a late use are cloned before the first one:
  // their other operands (dynamic sizes, offsets) must be defined by then.
  // A returned value is not freed by recomputing it.
  Block *block = root->getBlock();
  for (const Use &use : llvm::make_range(late, uses.end())) {
    if (use.operand->getOwner() == block->getTerminator())
      return std::nullopt;
    for (Operation *view : use.views)
      for (Value operand : view->getOperands().drop_front())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *top = block->findAncestorOpInBlock(*def))
            if (live.position.lookup(top) >= c.lateStart)
              return std::nullopt;
  }
  c.lateUses.append(late, uses.end());
  return c;
}

/// Whether `a` is the better choice: no GEMM before a GEMM; then the
/// larger; among those that run GEMMs again, the most bytes per
/// multiply-add.
bool better(const Candidate &a, const Candidate &b) {
  if ((a.work > 0) != (b.work > 0))
    return a.work == 0;
  if (a.work == 0)
    return a.bytes > b.bytes;
  return double(a.bytes) / a.work > double(b.bytes) / b.work;
}

/// The clones of one recomputation, and the late uses it redirected (to
/// undo it when it does not lower the peak).
struct Applied {
  SmallVector<Operation *> created;
  /// Each op of the chain and its clone.
  SmallVector<std::pair<Operation *, Operation *>> copies;
  SmallVector<std::pair<OpOperand *, Value>> redirected;
};

/// Clones `c.chain` before the first late use (every init its op does not
/// read a fresh `tensor.empty`) and makes the late uses read the clone,
/// through clones of the views between (one per view).
Applied apply(Candidate &c, const Liveness &live, OpBuilder &builder) {
  Applied applied;
  builder.setInsertionPoint(live.order[c.lateStart]);
  IRMapping mapping;
  for (auto [value, copy] : c.chain.reused)
    mapping.map(value, copy);
  for (Operation *op : c.chain.ops) {
    Operation *clone = builder.clone(*op, mapping);
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
      for (OpOperand &init : linalgOp.getDpsInitsMutable()) {
        if (linalgOp.payloadUsesValueFromOperand(&init))
          continue;
        auto type = cast<RankedTensorType>(init.get().getType());
        builder.setInsertionPoint(clone);
        auto empty =
            tensor::EmptyOp::create(builder, op->getLoc(), type.getShape(),
                                    type.getElementType(), type.getEncoding());
        applied.created.push_back(empty);
        clone->setOperand(init.getOperandNumber(), empty);
        builder.setInsertionPointAfter(clone);
      }
    if (!isView(op))
      clone->setAttr(amp::kRecomputedAttrName, builder.getUnitAttr());
    applied.created.push_back(clone);
    applied.copies.push_back({op, clone});
  }
  Value recomputed = mapping.lookup(c.value);
  DenseMap<Operation *, Value> viewed;
  for (Use &use : c.lateUses) {
    Value source = recomputed;
    for (Operation *view : use.views) {
      auto [it, inserted] = viewed.try_emplace(view, Value());
      if (inserted) {
        IRMapping viewMapping;
        viewMapping.map(view->getOperand(0), source);
        Operation *clone = builder.clone(*view, viewMapping);
        applied.created.push_back(clone);
        it->second = clone->getResult(0);
      }
      source = it->second;
    }
    applied.redirected.push_back({use.operand, use.operand->get()});
    use.operand->set(source);
  }
  return applied;
}

/// Undoes `applied`: the late uses read the kept value again, the clones go.
void undo(Applied &applied) {
  for (auto &[operand, value] : applied.redirected)
    operand->set(value);
  for (Operation *op : llvm::reverse(applied.created))
    op->erase();
}

struct RecomputePass : public amp::impl::RecomputePassBase<RecomputePass> {
  using RecomputePassBase::RecomputePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!(budget > 0.0 && budget <= 1.0)) {
      char text[32];
      std::snprintf(text, sizeof(text), "%g", double(budget));
      func.emitError("amp-recompute: budget ")
          << text << " is not in (0, 1]: the fraction of the estimated peak "
          << "of live tensors to reach";
      return signalPassFailure();
    }
    if (budget == 1.0 || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();
    auto live = std::make_unique<Liveness>(block);
    int64_t before = live->peak;
    // The runtime calls' workspace is one more region of the arena, which
    // recomputation does not shrink: the budget is of both.
    int64_t workspace = 0;
    for (Operation *op : live->order)
      if (auto bytes =
              op->getAttrOfType<IntegerAttr>(amp::kWorkspaceBytesAttrName))
        workspace = std::max(workspace, bytes.getInt());
    int64_t target = int64_t(budget * double(before + workspace)) - workspace;
    int64_t values = 0, bytes = 0, gemms = 0;
    DenseSet<Value> rejected;
    Clones clones;
    OpBuilder builder(&getContext());
    while (live->peak > target) {
      // The best value alive across the peak that can be recomputed.
      std::optional<Candidate> best;
      for (Operation *op : live->order)
        if (isa<linalg::LinalgOp>(op) || (recomputeGemms && isGemm(op)))
          for (Value result : op->getResults())
            if (!rejected.contains(result))
              if (auto c = candidate(result, *live, minBytes, recomputeGemms,
                                     clones))
                if (!best || better(*c, *best))
                  best = std::move(c);
      if (!best)
        break;
      Operation *peakOp = live->order[live->peakAt];
      Applied applied = apply(*best, *live, builder);
      // Kept where it lowers the bytes live at the peak without raising
      // the peak elsewhere (the clones' own temporaries live at the late
      // use); undone otherwise.
      auto next = std::make_unique<Liveness>(block);
      if (next->peak > live->peak ||
          next->liveAt(next->position.lookup(peakOp)) >= live->peak) {
        undo(applied);
        rejected.insert(best->value);
        continue;
      }
      // Views no early use reads go, each view once, the last of a chain
      // first.
      llvm::SetVector<Operation *> replaced;
      for (Use &use : best->lateUses)
        replaced.insert(use.views.begin(), use.views.end());
      bool erased = false;
      for (Operation *view : llvm::reverse(replaced))
        if (view->use_empty()) {
          for (Value result : view->getResults())
            clones.erase(result);
          view->erase(), erased = true;
        }
      ++values;
      bytes += best->bytes;
      gemms += llvm::count_if(best->chain.ops, isGemm);
      // The copies of what this recomputation computed, for later ones.
      for (auto [original, copy] : applied.copies)
        for (auto [from, to] :
             llvm::zip(original->getResults(), copy->getResults()))
          clones[from].push_back(to);
      live = erased ? std::make_unique<Liveness>(block) : std::move(next);
    }
    if (values == 0)
      return;
    func->setAttr(
        amp::kRecomputeAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("values", builder.getI64IntegerAttr(values)),
            builder.getNamedAttr("bytes", builder.getI64IntegerAttr(bytes)),
            builder.getNamedAttr("gemms", builder.getI64IntegerAttr(gemms)),
            builder.getNamedAttr("estimated_peak_before",
                                 builder.getI64IntegerAttr(before)),
            builder.getNamedAttr("estimated_peak_after",
                                 builder.getI64IntegerAttr(live->peak)),
        }));
  }
};

} // namespace
