//===- SplitReductions.cpp - Two-stage reductions for the GPU -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-map-linalg-to-gpu gives each point of a reduction's parallel space one
// thread that loops over the reduced elements. A reduction with few outputs
// and many inputs (batch-norm statistics: 32 channels of 100 352 elements
// each) then runs on a handful of threads. This pass splits such a reduction
// in two: the first generic reduces S chunks of one reduction dimension in
// parallel into a partial tensor [outputs..., S], the second combines the S
// partials. Upstream's linalg::splitReduction handles one reduction
// dimension only; normalization statistics reduce three.
//
//===----------------------------------------------------------------------===//

#include "amp/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace amp {
#define GEN_PASS_DEF_SPLITREDUCTIONSPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// The identity of the combining op `op` (the value a partial starts at).
std::optional<TypedAttr> combinerIdentity(Operation *op, Type type) {
  Builder b(op->getContext());
  auto floatType = dyn_cast<FloatType>(type);
  auto inf = [&](bool negative) -> TypedAttr {
    return b.getFloatAttr(
        type, APFloat::getInf(floatType.getFloatSemantics(), negative));
  };
  if (isa<arith::AddFOp>(op) && floatType)
    return b.getFloatAttr(type, 0.0);
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op) && floatType)
    return inf(/*negative=*/true);
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(op) && floatType)
    return inf(/*negative=*/false);
  if (isa<arith::AddIOp, arith::OrIOp>(op) && type.isSignlessInteger())
    return b.getIntegerAttr(type, 0);
  if (isa<arith::AndIOp>(op) && type.isSignlessInteger())
    return b.getIntegerAttr(type, -1);
  return std::nullopt;
}

/// For each output of `op`: the op combining its accumulator with a value
/// computed from the inputs alone (`acc (+) f(inputs)`), or failure.
FailureOr<SmallVector<Operation *>> matchCombiners(linalg::GenericOp op) {
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  SmallVector<Operation *> combiners;
  llvm::SmallPtrSet<Value, 4> accs;
  for (OpOperand &init : op.getDpsInitsMutable())
    accs.insert(op.getMatchingBlockArgument(&init));
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument acc = op.getMatchingBlockArgument(&init);
    Operation *combiner =
        yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs())
            .getDefiningOp();
    if (!combiner || combiner->getNumOperands() != 2 ||
        !combinerIdentity(combiner, acc.getType()))
      return failure();
    Value other = combiner->getOperand(0) == acc   ? combiner->getOperand(1)
                  : combiner->getOperand(1) == acc ? combiner->getOperand(0)
                                                   : Value();
    if (!other || !acc.hasOneUse())
      return failure();
    // The other operand must not read any accumulator.
    SmallVector<Value> worklist = {other};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      if (accs.contains(v))
        return failure();
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == op.getBody())
        llvm::append_range(worklist, def->getOperands());
    }
    combiners.push_back(combiner);
  }
  return combiners;
}

struct SplitReductionsPass
    : public amp::impl::SplitReductionsPassBase<SplitReductionsPass> {
  using SplitReductionsPassBase::SplitReductionsPassBase;

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && op.getNumReductionLoops() > 0)
        candidates.push_back(op);
    });
    for (linalg::GenericOp op : candidates)
      split(op);
  }

  void split(linalg::GenericOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (llvm::any_of(ranges, ShapedType::isDynamic) ||
        llvm::any_of(op.getBody()->getOperations(),
                     [](Operation &o) { return isa<linalg::IndexOp>(o); }))
      return;
    auto iterators = op.getIteratorTypesArray();
    int64_t parallel = 1, reduced = 1;
    unsigned widest = 0;
    int64_t widestSize = 0;
    for (auto [d, t] : llvm::enumerate(iterators)) {
      if (t == utils::IteratorType::parallel) {
        parallel *= ranges[d];
        continue;
      }
      reduced *= ranges[d];
      if (ranges[d] > widestSize)
        widest = d, widestSize = ranges[d];
    }
    if (reduced < minReduction || parallel > maxParallel)
      return;
    auto combiners = matchCombiners(op);
    if (failed(combiners))
      return;
    // ORs into i1 flags already run fully parallel (amp-map-linalg-to-gpu).
    if (llvm::all_of(*combiners, [](Operation *c) {
          return isa<arith::OrIOp>(c) &&
                 c->getResult(0).getType().isSignlessInteger(1);
        }))
      return;
    // S chunks of the widest reduction dimension: about `targetThreads`
    // threads in all, each still reducing at least 32 elements.
    int64_t want = std::clamp<int64_t>(
        targetThreads / parallel, 2,
        std::max<int64_t>(2, std::min(widestSize, reduced / 32)));
    int64_t chunks = 0;
    for (int64_t s = want; s >= 2 && !chunks; --s)
      if (widestSize % s == 0)
        chunks = s;
    if (!chunks)
      return;
    int64_t inner = widestSize / chunks;

    MLIRContext *ctx = op.getContext();
    IRRewriter rewriter(op);
    Location loc = op.getLoc();
    unsigned numLoops = op.getNumLoops(), chunk = numLoops;
    // Stage 1 iterates the original dimensions (the split one now `inner`
    // long) and the chunk index: input maps read d*inner... as
    // chunk*inner + d; outputs gain a trailing chunk dimension.
    AffineExpr split =
        getAffineDimExpr(chunk, ctx) * inner + getAffineDimExpr(widest, ctx);
    SmallVector<AffineMap> maps;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap m = op.getMatchingIndexingMap(input);
      maps.push_back(AffineMap::get(
          numLoops + 1, 0,
          m.replace(getAffineDimExpr(widest, ctx), split, numLoops, 0)
              .getResults(),
          ctx));
    }
    // The split dimension and the chunk index appear in no operand's shape
    // by themselves: a [inner, chunks] tensor (values unused) bounds them,
    // as in upstream's splitReductionByScaling.
    Value bounds = tensor::EmptyOp::create(
        rewriter, loc, ArrayRef<int64_t>{inner, chunks}, rewriter.getI1Type());
    maps.push_back(AffineMap::get(
        numLoops + 1, 0,
        {getAffineDimExpr(widest, ctx), getAffineDimExpr(chunk, ctx)}, ctx));
    SmallVector<Value> stage1Inputs(op.getDpsInputs());
    stage1Inputs.push_back(bounds);
    SmallVector<Value> partialInits;
    SmallVector<Type> partialTypes;
    for (auto [i, init] : llvm::enumerate(op.getDpsInits())) {
      auto type = cast<RankedTensorType>(init.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape.push_back(chunks);
      auto partialType = RankedTensorType::get(shape, type.getElementType());
      Value identity = arith::ConstantOp::create(
          rewriter, loc,
          *combinerIdentity((*combiners)[i], type.getElementType()));
      Value empty =
          tensor::EmptyOp::create(rewriter, loc, shape, type.getElementType());
      partialInits.push_back(
          linalg::FillOp::create(rewriter, loc, identity, empty).getResult(0));
      partialTypes.push_back(partialType);
      AffineMap m = op.getIndexingMapsArray()[op.getNumDpsInputs() + i];
      SmallVector<AffineExpr> results(m.getResults());
      results.push_back(getAffineDimExpr(chunk, ctx));
      maps.push_back(AffineMap::get(numLoops + 1, 0, results, ctx));
    }
    SmallVector<utils::IteratorType> stage1Iterators(iterators);
    stage1Iterators.push_back(utils::IteratorType::parallel);
    auto stage1 =
        linalg::GenericOp::create(rewriter, loc, partialTypes, stage1Inputs,
                                  partialInits, maps, stage1Iterators);
    IRMapping mapping;
    op.getRegion().cloneInto(&stage1.getRegion(), mapping);
    stage1.getBody()->insertArgument(op.getNumDpsInputs(), rewriter.getI1Type(),
                                     loc);

    // Stage 2: combine the chunks into the original outputs.
    SmallVector<Value> results;
    SmallVector<Value> finals;
    for (auto [i, init] : llvm::enumerate(op.getDpsInits())) {
      auto type = cast<RankedTensorType>(init.getType());
      unsigned rank = type.getRank();
      SmallVector<AffineMap> combineMaps = {
          AffineMap::getMultiDimIdentityMap(rank + 1, ctx),
          AffineMap::getMultiDimIdentityMap(rank + 1, ctx).dropResult(rank)};
      SmallVector<utils::IteratorType> combineIterators(
          rank, utils::IteratorType::parallel);
      combineIterators.push_back(utils::IteratorType::reduction);
      Operation *combiner = (*combiners)[i];
      auto stage2 = linalg::GenericOp::create(
          rewriter, loc, TypeRange{type}, ValueRange{stage1.getResult(i)},
          ValueRange{init}, combineMaps, combineIterators,
          [&](OpBuilder &b, Location l, ValueRange args) {
            IRMapping m;
            m.map(combiner->getOperand(0), args[1]);
            m.map(combiner->getOperand(1), args[0]);
            Operation *c = b.clone(*combiner, m);
            linalg::YieldOp::create(b, l, c->getResult(0));
          });
      finals.push_back(stage2.getResult(0));
    }
    rewriter.replaceOp(op, finals);
  }
};

} // namespace
