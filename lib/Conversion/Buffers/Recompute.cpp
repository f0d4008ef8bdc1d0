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

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"

#include <cassert>
#include <cstdio>
#include <memory>

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
  return isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op);
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
        int64_t at = position[op];
        for (Operation *user : result.getUsers())
          if (Operation *top = block.findAncestorOpInBlock(*user))
            at = std::max(at, position[top]);
        Value root = rootOf(result);
        auto [it, inserted] = lastUse.try_emplace(root, at);
        if (!inserted)
          it->second = std::max(it->second, at);
      }
    }
    for (auto &[root, last] : lastUse) {
      int64_t bytes = tensorBytes(root);
      Operation *def = root.getDefiningOp();
      if (bytes == 0 || !def)
        continue;
      events.push_back({position[def], bytes});
      events.push_back({last + 1, -bytes});
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

  SmallVector<Operation *> order;
  DenseMap<Operation *, int64_t> position;
  DenseMap<Value, int64_t> lastUse;
  SmallVector<std::pair<int64_t, int64_t>> events;
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

/// A value the pass can recompute: made by `generic`, alive across the gap
/// (early uses up to `earlyEnd`, late uses from `lateStart` on).
struct Candidate {
  linalg::GenericOp generic;
  int64_t bytes, earlyEnd, lateStart;
  SmallVector<Use> lateUses;
};

/// Whether `generic` is element-wise work cheap to redo with the same
/// result: every iterator parallel, one tensor result, its output not
/// read, every op of its body pure; not itself a recomputation.
bool isRecomputable(linalg::GenericOp generic) {
  if (generic.getNumResults() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0 ||
      !generic.getRegionOutputArgs()[0].use_empty() ||
      generic->hasAttr(amp::kRecomputedAttrName))
    return false;
  WalkResult pure = generic.getRegion().walk([](Operation *op) {
    return isPure(op) || isa<linalg::YieldOp>(op) ? WalkResult::advance()
                                                  : WalkResult::interrupt();
  });
  return !pure.wasInterrupted();
}

/// The tensors `generic` reads: its inputs and those its body reads from
/// above (a table an embedding's body extracts from).
SmallVector<Value> tensorsRead(linalg::GenericOp generic) {
  SmallVector<Value> read;
  for (Value input : generic.getDpsInputs())
    if (isa<RankedTensorType>(input.getType()))
      read.push_back(input);
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(generic.getRegion(), above);
  for (Value value : above)
    if (isa<RankedTensorType>(value.getType()))
      read.push_back(value);
  return read;
}

/// `generic`'s value as a candidate at the current liveness: the gap
/// between two of its uses (its views' included) that holds the peak
/// splits them into early and late uses, and every tensor it reads is
/// alive at the first late use anyway.
std::optional<Candidate> candidate(linalg::GenericOp generic,
                                   const Liveness &live, int64_t minBytes) {
  Value value = generic->getResult(0);
  int64_t bytes = tensorBytes(value);
  if (bytes < std::max<int64_t>(minBytes, 1) || !isRecomputable(generic))
    return std::nullopt;
  SmallVector<Use> uses;
  SmallVector<Operation *> views;
  bool outside = false;
  collectUses(value, live, generic->getBlock(), views, uses, outside);
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
  Candidate c{generic, bytes, std::prev(late)->at, late->at, {}};
  for (Value read : tensorsRead(generic))
    if (!live.aliveAt(read, c.lateStart))
      return std::nullopt;
  c.lateUses.append(late, uses.end());
  return c;
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
    int64_t target = int64_t(budget * double(before));
    int64_t values = 0, bytes = 0;
    OpBuilder builder(&getContext());
    while (live->peak > target) {
      // The largest value alive across the peak that can be recomputed.
      std::optional<Candidate> best;
      for (Operation *op : live->order)
        if (auto generic = dyn_cast<linalg::GenericOp>(op))
          if (auto c = candidate(generic, *live, minBytes))
            if (!best || c->bytes > best->bytes)
              best = std::move(c);
      if (!best)
        break;
      // A clone (a fresh output: the generic does not read it) before the
      // first late use, which the late uses read instead.
      Operation *first = live->order[best->lateStart];
      builder.setInsertionPoint(first);
      linalg::GenericOp original = best->generic;
      auto type = cast<RankedTensorType>(original->getResult(0).getType());
      Value init =
          tensor::EmptyOp::create(builder, original.getLoc(), type.getShape(),
                                  type.getElementType(), type.getEncoding());
      IRMapping mapping;
      mapping.map(original.getDpsInits()[0], init);
      Operation *clone = builder.clone(*original, mapping);
      clone->setAttr(amp::kRecomputedAttrName, builder.getUnitAttr());
      // The late uses read the clone, through clones of the views between
      // (one per view).
      DenseMap<Operation *, Value> viewed;
      for (Use &use : best->lateUses) {
        Value source = clone->getResult(0);
        for (Operation *view : use.views) {
          auto [it, inserted] = viewed.try_emplace(view, Value());
          if (inserted) {
            IRMapping viewMapping;
            viewMapping.map(view->getOperand(0), source);
            it->second = builder.clone(*view, viewMapping)->getResult(0);
          }
          source = it->second;
        }
        use.operand->set(source);
      }
      // What no longer has uses (the original, views no early use
      // reads) goes, each view once, the last of a chain first.
      llvm::SetVector<Operation *> replaced;
      for (Use &use : best->lateUses)
        replaced.insert(use.views.begin(), use.views.end());
      for (Operation *view : llvm::reverse(replaced))
        if (view->use_empty())
          view->erase();
      ++values;
      bytes += best->bytes;
      // Every tensor the clone reads was alive at its place already: no
      // buffer lives longer, so the peak cannot rise.
      auto next = std::make_unique<Liveness>(block);
      assert(next->peak <= live->peak &&
             "a recomputation raised the estimated peak");
      live = std::move(next);
    }
    if (values == 0)
      return;
    func->setAttr(
        amp::kRecomputeAttrName,
        builder.getDictionaryAttr({
            builder.getNamedAttr("values", builder.getI64IntegerAttr(values)),
            builder.getNamedAttr("bytes", builder.getI64IntegerAttr(bytes)),
            builder.getNamedAttr("estimated_peak_before",
                                 builder.getI64IntegerAttr(before)),
            builder.getNamedAttr("estimated_peak_after",
                                 builder.getI64IntegerAttr(live->peak)),
        }));
  }
};

} // namespace
