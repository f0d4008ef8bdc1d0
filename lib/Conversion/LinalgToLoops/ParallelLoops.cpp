//===- ParallelLoops.cpp - Linalg ops split into thread-pool tasks --------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The CPU lowering's threading. amp-parallelize-loops tiles each large linalg
// op on buffers along one parallel dimension into an scf.forall of
// independent tasks; amp-outline-parallel-loops moves each such loop's body
// into a function of a range of tasks and calls a declaration standing for
// the runtime's thread pool; amp-lower-parallel-launches (on the LLVM
// dialect) makes that a call of amp_cpu_parallel_for. Each task runs the
// op's own loop nest on its slice, so the loops keep their shape (and LLVM
// vectorizes them as before), and no output element is computed by two
// tasks: results do not depend on the number of threads.
//
//===----------------------------------------------------------------------===//

#include "amp/ABI/EntryPoints.h"
#include "amp/Conversion/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace amp {
#define GEN_PASS_DEF_PARALLELIZELOOPSPASS
#define GEN_PASS_DEF_OUTLINEPARALLELLOOPSPASS
#define GEN_PASS_DEF_LOWERPARALLELLAUNCHESPASS
#include "amp/Conversion/Passes.h.inc"
} // namespace amp

using namespace mlir;

namespace {

/// The attribute on a launch declaration naming its task function.
constexpr llvm::StringLiteral kParallelTaskAttr = "amp.parallel_task";
/// The attribute on a task function's memref arguments whose memory no other
/// argument reaches.
constexpr llvm::StringLiteral kNoAliasPointersAttr = "amp.noalias_pointers";
/// The attribute by which FuncToLLVM passes a function's memrefs as bare
/// pointers (the name upstream's FuncToLLVM.cpp reads; no header exports it).
constexpr llvm::StringLiteral kBarePtrAttr = "llvm.bareptr";
/// The runtime's thread pool: void (void (*)(void *, int64_t, int64_t),
/// void *, int64_t).
constexpr llvm::StringLiteral kParallelFor = amp::entry::kCpuParallelFor;

//===----------------------------------------------------------------------===//
// amp-parallelize-loops
//===----------------------------------------------------------------------===//

/// How a dimension of `extent` iterations is split: `size` iterations per
/// tile, `tiles` tiles (the last one shorter where `size` does not divide).
struct Split {
  int64_t size = 0, tiles = 0;
};

/// Splits `extent` into at most `maxTiles` tiles of a multiple of `quantum`
/// iterations: into tiles that divide it where some count from `maxTiles`
/// down to 2 does, else into equal tiles and a shorter last one. No split
/// (tiles < 2) for fewer than 2 * quantum iterations.
Split splitDimension(int64_t extent, int64_t quantum, int64_t maxTiles) {
  int64_t most = std::min(maxTiles, extent / quantum);
  if (most < 2)
    return {};
  for (int64_t tiles = most; tiles >= 2; --tiles)
    if (extent % tiles == 0 && (extent / tiles) % quantum == 0)
      return {extent / tiles, tiles};
  int64_t size = llvm::divideCeil(llvm::divideCeil(extent, most), quantum) *
                 quantum;
  return {size, static_cast<int64_t>(llvm::divideCeil(extent, size))};
}

/// Iterations an innermost dimension's tile keeps together: one AVX-512
/// vector of f32, so each task's inner loop has whole vectors.
constexpr int64_t kVectorQuantum = 16;

struct ParallelizeLoopsPass
    : public amp::impl::ParallelizeLoopsPassBase<ParallelizeLoopsPass> {
  using ParallelizeLoopsPassBase::ParallelizeLoopsPassBase;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics() && !op->getParentOfType<scf::ForallOp>())
        candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates)
      parallelize(rewriter, op);
  }

  void parallelize(IRRewriter &rewriter, linalg::LinalgOp op) {
    // Linalg's TilingInterface models are registered by the tools
    // (amp::registerAmpDialects); without them, nothing is split.
    auto tileable = dyn_cast<TilingInterface>(op.getOperation());
    if (!tileable)
      return;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t work = 1;
    for (int64_t range : ranges) {
      if (ShapedType::isDynamic(range))
        return;
      work *= range;
    }
    if (ranges.empty() || work < minWork)
      return;
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    // The outermost parallel dimension that splits into two tiles or more.
    for (auto [dim, iterator] : llvm::enumerate(iterators)) {
      if (iterator != utils::IteratorType::parallel)
        continue;
      // Each task must write its own part of every output: a dimension some
      // output does not vary along would have the tasks race on it.
      if (llvm::any_of(op.getDpsInitsMutable(), [&](OpOperand &init) {
            return !op.getMatchingIndexingMap(&init).isFunctionOfDim(dim);
          }))
        continue;
      bool innermost = dim + 1 == ranges.size();
      Split split = splitDimension(
          ranges[dim], innermost ? kVectorQuantum : 1, std::max<int64_t>(maxTasks, 2));
      if (split.tiles < 2)
        continue;
      SmallVector<OpFoldResult> sizes(ranges.size(), rewriter.getIndexAttr(0));
      sizes[dim] = rewriter.getIndexAttr(split.size);
      scf::SCFTilingOptions options;
      options.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
      options.setTileSizes(sizes);
      rewriter.setInsertionPoint(op);
      FailureOr<scf::SCFTilingResult> tiled =
          scf::tileUsingSCF(rewriter, tileable, options);
      // An op the tiling refuses keeps its sequential loops.
      if (succeeded(tiled))
        rewriter.eraseOp(op);
      return;
    }
  }
};

//===----------------------------------------------------------------------===//
// amp-outline-parallel-loops
//===----------------------------------------------------------------------===//

/// What a memref value's memory belongs to, through view-like ops
/// (subviews, reshapes, casts): an allocation, a buffer amp-plan-memory
/// placed in its arena, a global, or an argument of
/// `parent` where that is an entry point (public, called by nothing in the
/// module: its buffers are the caller's, one each). Null where that is not
/// known (another op's result, a block argument, an argument of a function
/// the module calls, which may be one buffer twice).
const void *memoryRoot(Value value, func::FuncOp parent, bool isEntry) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>()) {
    // A buffer of amp-plan-memory's arena is memory of its own.
    if (view->hasAttr(amp::kPlannedViewAttrName))
      return value.getAsOpaquePointer();
    value = view.getViewSource();
  }
  if (auto arg = dyn_cast<BlockArgument>(value))
    return isEntry && arg.getOwner()->getParentOp() == parent &&
                   arg.getOwner()->isEntryBlock()
               ? value.getAsOpaquePointer()
               : nullptr;
  Operation *def = value.getDefiningOp();
  if (isa<memref::AllocOp, memref::AllocaOp>(def))
    return value.getAsOpaquePointer();
  if (auto global = dyn_cast<memref::GetGlobalOp>(def))
    return global.getNameAttr().getAttr().getAsOpaquePointer();
  return nullptr;
}

/// The constant bounds of a loop amp-outline-parallel-loops outlines: one
/// induction variable, constant bounds and a positive step, no results;
/// none otherwise.
struct Bounds {
  int64_t lower, upper, step;
  int64_t tasks() const {
    return upper <= lower ? 0 : llvm::divideCeil(upper - lower, step);
  }
};
std::optional<Bounds> outlinableBounds(scf::ForallOp forall) {
  if (forall.getRank() != 1 || forall.getNumResults() != 0 ||
      forall.getMapping().has_value())
    return std::nullopt;
  Bounds b{forall.getStaticLowerBound()[0], forall.getStaticUpperBound()[0],
           forall.getStaticStep()[0]};
  if (ShapedType::isDynamic(b.lower) || ShapedType::isDynamic(b.upper) ||
      ShapedType::isDynamic(b.step) || b.step < 1)
    return std::nullopt;
  return b;
}

/// Sets `amp.noalias_pointers` on `outlined` (a function made from code of
/// `parent`, an entry point or not, that takes `passed`, after
/// `firstPosition` other parameters):
/// the positions of the allocated and aligned pointers of each memref
/// argument whose memory no other passed value reaches, when every memref
/// argument's memory is known and the body reaches memory only through
/// them (see amp-outline-parallel-loops' description).
void setNoAliasPointers(func::FuncOp outlined, ArrayRef<Value> passed,
                        func::FuncOp parent, bool isEntry,
                        int64_t firstPosition, bool bare) {
  DenseMap<const void *, unsigned> roots;
  bool known = !outlined
                    .walk([](Operation *op) {
                      return isa<memref::GetGlobalOp, CallOpInterface,
                                 memref::ExtractAlignedPointerAsIndexOp>(op)
                                 ? WalkResult::interrupt()
                                 : WalkResult::advance();
                    })
                    .wasInterrupted();
  for (Value value : passed) {
    if (!isa<BaseMemRefType>(value.getType()))
      continue;
    const void *root = memoryRoot(value, parent, isEntry);
    known &= root != nullptr && isa<MemRefType>(value.getType());
    ++roots[root];
  }
  SmallVector<int64_t> noAlias;
  int64_t position = firstPosition;
  for (Value value : passed) {
    auto memref = dyn_cast<MemRefType>(value.getType());
    if (!memref) {
      ++position;
      continue;
    }
    bool distinct = known && roots[memoryRoot(value, parent, isEntry)] == 1;
    if (bare) {
      if (distinct)
        noAlias.push_back(position);
      ++position;
      continue;
    }
    if (distinct)
      noAlias.append({position, position + 1});
    position += 3 + 2 * memref.getRank();
  }
  if (!noAlias.empty())
    outlined->setAttr(kNoAliasPointersAttr,
                      DenseI64ArrayAttr::get(outlined.getContext(), noAlias));
}

/// Whether every memref among `passed` has a static shape, strides and
/// offset. A function outlined with them then takes each as its aligned
/// pointer alone (`llvm.bareptr`, set on it by `markBare`): a call passes
/// one value per memref instead of a descriptor's 3 + 2 * rank, and the
/// step's glue, thousands of such calls, shrinks accordingly.
bool canPassBare(ArrayRef<Value> passed) {
  return llvm::all_of(passed, [](Value value) {
    auto type = dyn_cast<BaseMemRefType>(value.getType());
    return !type || (isa<MemRefType>(type) &&
                     LLVMTypeConverter::canConvertToBarePtr(type));
  });
}
void markBare(func::FuncOp func) {
  func->setAttr(kBarePtrAttr, UnitAttr::get(func.getContext()));
}

/// Values code uses from outside it, split into constants (cloned where the
/// code moves) and the rest (passed).
void splitUsedValues(const llvm::SetVector<Value> &used,
                     SmallVectorImpl<Value> &passed,
                     SmallVectorImpl<Value> &constants) {
  for (Value value : used) {
    Operation *def = value.getDefiningOp();
    if (def && def->getNumOperands() == 0 && matchPattern(def, m_Constant()))
      constants.push_back(value);
    else
      passed.push_back(value);
  }
}

/// Whether `func` is an entry point: public, called by nothing in the
/// module (its buffer arguments are distinct; a walk of the module).
bool isEntry(func::FuncOp func) {
  return func.isPublic() &&
         SymbolTable::symbolKnownUseEmpty(func, func->getParentOp());
}

/// The functions outlined so far, found again by their contents: an op
/// whose outlined function would equal an earlier one (the same signature,
/// `amp.noalias_pointers` and body, locations aside) calls that one. A deep
/// model repeats its layers' shapes, so its thousands of loops share a few
/// dozen functions, each lowered and compiled once.
class OutlinedFunctions {
public:
  /// An earlier function equal to `func`, or null (then `func` is recorded).
  func::FuncOp findOrInsert(func::FuncOp func) {
    SmallVector<func::FuncOp, 1> &bucket = buckets[hash(func)];
    for (func::FuncOp earlier : bucket)
      if (equal(earlier, func))
        return earlier;
    bucket.push_back(func);
    return nullptr;
  }

private:
  static size_t hash(func::FuncOp func) {
    llvm::hash_code hash = llvm::hash_combine(
        func.getFunctionType(), func->getAttr(kNoAliasPointersAttr));
    func.getBody().walk([&](Operation *op) {
      hash = llvm::hash_combine(hash,
                                OperationEquivalence::computeHash(
                                    op, OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::ignoreHashValue,
                                    OperationEquivalence::IgnoreLocations));
    });
    return static_cast<size_t>(hash);
  }
  static bool equal(func::FuncOp a, func::FuncOp b) {
    return a.getFunctionType() == b.getFunctionType() &&
           a->getAttr(kNoAliasPointersAttr) ==
               b->getAttr(kNoAliasPointersAttr) &&
           OperationEquivalence::isRegionEquivalentTo(
               &a.getBody(), &b.getBody(),
               OperationEquivalence::IgnoreLocations);
  }
  llvm::DenseMap<size_t, SmallVector<func::FuncOp, 1>> buckets;
};

struct OutlineParallelLoopsPass
    : public amp::impl::OutlineParallelLoopsPassBase<OutlineParallelLoopsPass> {
  using OutlineParallelLoopsPassBase::OutlineParallelLoopsPassBase;

  /// Functions already outlined (loops and tasks) in this run's module.
  OutlinedFunctions outlinedFunctions;

  void runOnOperation() override {
    // A pass instance may run on several modules in turn.
    outlinedFunctions = OutlinedFunctions();
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (func::FuncOp func :
         llvm::to_vector(module.getOps<func::FuncOp>())) {
      SmallVector<scf::ForallOp> loops;
      // Outermost loops only: a loop nested in another is part of its body.
      func.walk<WalkOrder::PreOrder>([&](scf::ForallOp forall) {
        if (outlinableBounds(forall)) {
          loops.push_back(forall);
          return WalkResult::skip();
        }
        return WalkResult::advance();
      });
      // Outlining adds calls from `func`, never of it: whether it is an
      // entry point is found once (a walk of the module).
      bool entryPoint = isEntry(func);
      unsigned counter = 0;
      for (scf::ForallOp forall : loops)
        outline(symbols, func, entryPoint, forall, counter);
      if (outlineSerial)
        outlineSequential(symbols, func, entryPoint);
    }
  }

  /// outline-serial: each linalg op on buffers left at the top level of
  /// `parent` (which has at least min-serial of them) moves into a private
  /// function @<parent>_loop<N>(<captured values>...), called directly and
  /// never inlined: LLVM's loop passes then see one loop nest per function
  /// instead of thousands in one.
  void outlineSequential(SymbolTable &symbols, func::FuncOp parent,
                         bool entryPoint) {
    if (parent.isDeclaration())
      return;
    SmallVector<linalg::LinalgOp> ops;
    for (Operation &op : parent.getBody().front())
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(&op))
        if (linalgOp.hasPureBufferSemantics() && op.getNumResults() == 0)
          ops.push_back(linalgOp);
    if (int64_t(ops.size()) < minSerial)
      return;
    MLIRContext *ctx = &getContext();
    unsigned counter = 0;
    Operation *after = parent; // the functions follow it in program order
    for (linalg::LinalgOp linalgOp : ops) {
      Operation *op = linalgOp.getOperation();
      Location loc = op->getLoc();
      // Its operands and what its regions read.
      llvm::SetVector<Value> used(op->getOperands().begin(),
                                  op->getOperands().end());
      for (Region &region : op->getRegions())
        getUsedValuesDefinedAbove(region, used);
      SmallVector<Value> passed, constants;
      splitUsedValues(used, passed, constants);
      std::string name;
      do {
        name = (parent.getSymName() + "_loop" + llvm::Twine(counter++)).str();
      } while (symbols.lookup(name));
      OpBuilder builder(ctx);
      builder.setInsertionPointAfter(after);
      auto outlined = func::FuncOp::create(
          builder, loc, name,
          builder.getFunctionType(TypeRange(ValueRange(passed)), {}));
      outlined.setPrivate();
      symbols.insert(outlined, Block::iterator(after->getNextNode()));
      after = outlined;
      Block *entry = outlined.addEntryBlock();
      builder.setInsertionPointToStart(entry);
      IRMapping mapping;
      for (Value value : constants)
        mapping.map(value, builder.clone(*value.getDefiningOp())->getResult(0));
      for (auto [value, arg] : llvm::zip(passed, entry->getArguments()))
        mapping.map(value, arg);
      builder.clone(*op, mapping);
      func::ReturnOp::create(builder, loc);
      bool bare = canPassBare(passed);
      if (bare)
        markBare(outlined);
      setNoAliasPointers(outlined, passed, parent, entryPoint,
                         /*firstPosition=*/0, bare);
      if (func::FuncOp earlier = outlinedFunctions.findOrInsert(outlined)) {
        after = outlined->getPrevNode();
        symbols.erase(outlined);
        outlined = earlier;
      }
      builder.setInsertionPoint(op);
      auto call = func::CallOp::create(builder, loc, outlined, passed);
      call.setNoInline(true);
      op->erase();
    }
  }

  void outline(SymbolTable &symbols, func::FuncOp parent, bool entryPoint,
               scf::ForallOp forall, unsigned &counter) {
    MLIRContext *ctx = &getContext();
    Location loc = forall.getLoc();
    // What the body uses from outside: constants are cloned, the rest passed.
    llvm::SetVector<Value> used;
    getUsedValuesDefinedAbove(forall.getRegion(), used);
    SmallVector<Value> passed, constants;
    splitUsedValues(used, passed, constants);

    // @<parent>_task<N>(%first, %last, passed...).
    OpBuilder builder(ctx);
    Type index = builder.getIndexType();
    SmallVector<Type> taskInputs = {index, index};
    for (Value value : passed)
      taskInputs.push_back(value.getType());
    std::string name;
    do {
      name = (parent.getSymName() + "_task" + llvm::Twine(counter++)).str();
    } while (symbols.lookup(name) || symbols.lookup(name + "_launch") ||
             symbols.lookup(name + "_run"));
    builder.setInsertionPointAfter(parent);
    auto task = func::FuncOp::create(builder, loc, name,
                                     builder.getFunctionType(taskInputs, {}));
    task.setPrivate();
    symbols.insert(task);
    Block *entry = task.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (Value value : constants)
      mapping.map(value, builder.clone(*value.getDefiningOp())->getResult(0));
    for (auto [value, arg] : llvm::zip(passed, entry->getArguments().drop_front(2)))
      mapping.map(value, arg);
    Bounds bounds = *outlinableBounds(forall);
    Value one = arith::ConstantIndexOp::create(builder, loc, 1);
    auto loop = scf::ForOp::create(builder, loc, entry->getArgument(0),
                                   entry->getArgument(1), one);
    func::ReturnOp::create(builder, loc);
    // Task t runs the iteration lower + t * step.
    builder.setInsertionPointToStart(loop.getBody());
    AffineExpr t = builder.getAffineDimExpr(0);
    Value iv = affine::AffineApplyOp::create(
        builder, loc, AffineMap::get(1, 0, t * bounds.step + bounds.lower),
        ValueRange{loop.getInductionVar()});
    mapping.map(forall.getInductionVar(0), iv);
    for (Operation &op : forall.getBody()->without_terminator())
      builder.clone(op, mapping);

    // Memrefs whose memory no other passed value reaches: all of whose
    // memory is known, each passed once. Recorded as the positions of their
    // allocated and aligned pointers in the task's LLVM signature (a ranked
    // memref of rank r becomes those two pointers, an offset, r sizes and r
    // strides; any other argument one parameter), since convert-to-llvm
    // drops a memref argument's attributes.
    // The body must reach memory only through the passed memrefs: no
    // globals, calls or raw pointers of its own.
    bool bare = canPassBare(passed);
    if (bare)
      markBare(task);
    setNoAliasPointers(task, passed, parent, entryPoint,
                       /*firstPosition=*/2, bare);

    builder.setInsertionPoint(forall);
    Value tasks = arith::ConstantIndexOp::create(builder, loc, bounds.tasks());
    SmallVector<Value> operands = {tasks};
    llvm::append_range(operands, passed);
    // An equal task outlined before: its launch.
    if (func::FuncOp earlier = outlinedFunctions.findOrInsert(task)) {
      symbols.erase(task);
      func::CallOp::create(
          builder, loc,
          symbols.lookup<func::FuncOp>((earlier.getSymName() + "_launch").str()),
          operands);
      forall.erase();
      return;
    }

    // The launch: @<task>_launch(%tasks, passed...), a declaration.
    SmallVector<Type> launchInputs = {index};
    llvm::append_range(launchInputs, TypeRange(ValueRange(passed)));
    builder.setInsertionPointAfter(task);
    auto launch = func::FuncOp::create(
        builder, loc, name + "_launch",
        builder.getFunctionType(launchInputs, {}));
    launch.setPrivate();
    launch->setAttr(kParallelTaskAttr, FlatSymbolRefAttr::get(task));
    if (bare)
      markBare(launch);
    symbols.insert(launch);

    builder.setInsertionPoint(forall);
    func::CallOp::create(builder, loc, launch, operands);
    forall.erase();
  }
};

//===----------------------------------------------------------------------===//
// amp-lower-parallel-launches
//===----------------------------------------------------------------------===//

struct LowerParallelLaunchesPass
    : public amp::impl::LowerParallelLaunchesPassBase<
          LowerParallelLaunchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LLVM::LLVMFuncOp> launches;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
      if (func->hasAttr(kParallelTaskAttr))
        launches.push_back(func);
      // Tasks, and the loops outline-serial moved into functions.
      if (failed(markNoAlias(func)))
        return signalPassFailure();
    }
    if (launches.empty())
      return;
    MLIRContext *ctx = &getContext();
    OpBuilder builder(ctx);
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    // void amp_cpu_parallel_for(void (*)(void *, i64, i64), void *, i64).
    auto parallelFor = module.lookupSymbol<LLVM::LLVMFuncOp>(kParallelFor);
    if (!parallelFor) {
      builder.setInsertionPointToEnd(module.getBody());
      parallelFor = LLVM::LLVMFuncOp::create(
          builder, module.getLoc(), kParallelFor,
          LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64}));
    }
    // One symbol table and one walk for the calls of every launch (a
    // lookup or a walk per launch is quadratic in the step's size).
    SymbolTable symbols(module);
    llvm::StringMap<SmallVector<LLVM::CallOp>> callsOf;
    module.walk([&](LLVM::CallOp call) {
      if (std::optional<StringRef> callee = call.getCallee())
        callsOf[*callee].push_back(call);
    });
    for (LLVM::LLVMFuncOp launch : launches) {
      auto taskRef = launch->getAttrOfType<FlatSymbolRefAttr>(kParallelTaskAttr);
      auto task = symbols.lookup<LLVM::LLVMFuncOp>(taskRef.getAttr());
      if (!task) {
        launch.emitError() << "amp-lower-parallel-launches: no task function "
                           << taskRef << " in the LLVM dialect";
        return signalPassFailure();
      }
      LLVM::LLVMFuncOp run = buildRunner(builder, task, launch);
      symbols.insert(run);
      for (LLVM::CallOp call : callsOf.lookup(launch.getSymName()))
        replaceCall(builder, call, run, parallelFor, launch);
      symbols.erase(launch);
    }
  }

  /// llvm.noalias on the task's pointer parameters listed in its
  /// amp.noalias_pointers (which is dropped).
  static LogicalResult markNoAlias(LLVM::LLVMFuncOp task) {
    auto positions =
        task->getAttrOfType<DenseI64ArrayAttr>(kNoAliasPointersAttr);
    if (!positions)
      return success();
    task->removeAttr(kNoAliasPointersAttr);
    for (int64_t i : positions.asArrayRef()) {
      if (i < 0 || i >= task.getNumArguments() ||
          !isa<LLVM::LLVMPointerType>(task.getArgumentTypes()[i]))
        return task.emitError()
               << "amp-lower-parallel-launches: " << kNoAliasPointersAttr
               << " names parameter " << i << ", which is not a pointer";
      task.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                      UnitAttr::get(task.getContext()));
    }
    return success();
  }

  /// The struct holding a launch's arguments after the task count.
  static LLVM::LLVMStructType contextType(LLVM::LLVMFuncOp launch) {
    return LLVM::LLVMStructType::getLiteral(
        launch.getContext(),
        launch.getFunctionType().getParams().drop_front());
  }

  /// internal void @<task>_run(ptr %context, i64 %first, i64 %last): loads
  /// the arguments and calls the task.
  static LLVM::LLVMFuncOp buildRunner(OpBuilder &builder,
                                      LLVM::LLVMFuncOp task,
                                      LLVM::LLVMFuncOp launch) {
    MLIRContext *ctx = builder.getContext();
    Location loc = task.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    builder.setInsertionPointAfter(task);
    auto run = LLVM::LLVMFuncOp::create(
        builder, loc, (task.getSymName() + "_run").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {ptr, i64, i64}),
        LLVM::Linkage::Internal);
    Block *entry = run.addEntryBlock(builder);
    builder.setInsertionPointToStart(entry);
    LLVM::LLVMStructType context = contextType(launch);
    SmallVector<Value> args = {entry->getArgument(1), entry->getArgument(2)};
    for (auto [i, type] : llvm::enumerate(context.getBody())) {
      Value field = LLVM::GEPOp::create(
          builder, loc, ptr, context, entry->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      args.push_back(LLVM::LoadOp::create(builder, loc, type, field));
    }
    LLVM::CallOp::create(builder, loc, task, args);
    LLVM::ReturnOp::create(builder, loc, ValueRange());
    return run;
  }

  /// Replaces `call` (of `launch`) with the arguments stored into a stack
  /// struct and amp_cpu_parallel_for(@run, &struct, tasks).
  static void replaceCall(OpBuilder &builder, LLVM::CallOp call,
                          LLVM::LLVMFuncOp run, LLVM::LLVMFuncOp parallelFor,
                          LLVM::LLVMFuncOp launch) {
    MLIRContext *ctx = builder.getContext();
    Location loc = call.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    LLVM::LLVMStructType context = contextType(launch);
    // The struct lives in the caller's frame: allocated in its entry block.
    auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
    builder.setInsertionPointToStart(&caller.getBody().front());
    Value one = LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                         builder.getI64IntegerAttr(1));
    Value slot = LLVM::AllocaOp::create(builder, loc, ptr, context, one);
    builder.setInsertionPoint(call);
    for (auto [i, value] : llvm::enumerate(call.getArgOperands().drop_front())) {
      Value field = LLVM::GEPOp::create(
          builder, loc, ptr, context, slot,
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
      LLVM::StoreOp::create(builder, loc, value, field);
    }
    Value function = LLVM::AddressOfOp::create(builder, loc, run);
    LLVM::CallOp::create(builder, loc, parallelFor,
                         ValueRange{function, slot, call.getArgOperands()[0]});
    call.erase();
  }
};

} // namespace
