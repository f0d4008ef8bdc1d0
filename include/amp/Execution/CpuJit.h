//===- CpuJit.h - JIT-compiled train functions on the CPU -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_CPUJIT_H
#define AMP_EXECUTION_CPUJIT_H

#include "amp/Execution/CompiledFunction.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir {
class ExecutionEngine;
namespace func {
class FuncOp;
} // namespace func
} // namespace mlir

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace amp {

struct CpuLoweringOptions;

/// How a function is compiled for the CPU.
struct CpuCompileOptions {
  /// The target CPU: empty for the host (all its features), or an LLVM CPU
  /// name such as "x86-64" for a baseline without F16C/AVX.
  std::string cpu;
  /// LLVM optimization level, 0-3.
  unsigned optLevel = 3;
  /// GEMMs and convolutions call the CBLAS runtime; false: generated loops.
  bool blas = true;
  /// Convolutions as GEMMs on im2col column matrices (the CUDA lowering's
  /// form) instead of the runtime's convolutions.
  bool convAsGemm = false;
  /// Wide reductions in two stages (amp-lower-cuda's amp-split-reductions).
  bool splitReductions = false;
  /// Verify the module after each lowering pass, not only the lowered
  /// module once.
  bool verifyEach = false;
  /// train.attention runs the runtime's flash-style kernels; false:
  /// decomposed (amp-decompose-attention).
  bool fusedAttention = true;
  /// train.linear_cross_entropy through the runtime's blocked kernels.
  bool fusedLmHead = true;
  /// amp-lower-cpu's memory-budget (1: no recomputation).
  double memoryBudget = 1.0;
  /// amp-lower-cpu's recompute-gemms: under the budget, GEMMs may be
  /// recomputed too.
  bool recomputeGemms = false;
};

/// The kind of an MLIR element type, if it is one of the five.
std::optional<ElementKind> elementKindOf(mlir::Type type);

/// The spec of `type`, the `what` #`index` ("argument", "result") of
/// @`function`; an error naming it unless it is a static f32, f16, bf16, i32
/// or i1 tensor.
llvm::Expected<TensorSpec> tensorSpecOf(mlir::Type type, llvm::StringRef what,
                                        unsigned index,
                                        llvm::StringRef function);

/// Appends the specs of `func`'s arguments and results; errors as
/// tensorSpecOf.
llvm::Error readFunctionSpecs(mlir::func::FuncOp func,
                              llvm::SmallVectorImpl<TensorSpec> &arguments,
                              llvm::SmallVectorImpl<TensorSpec> &results);

/// Marks the pointer parameters of the lowered functions `entries` noalias
/// in `module`. Sound because an entry's arguments are read-only (see
/// prepareEntryPoints) but for the state it updates in place, which the
/// callers pass in buffers of their own (callOnHost refuses an in-place
/// argument that shares another's memory), and its out-parameters are
/// buffers of their own: no memory one writes is reached through another. It lets LLVM keep
/// reduction accumulators in registers and vectorize without run-time alias
/// checks. An entry without loops (whose loops were all outlined, with
/// noalias pointers of their own) is left as it is: the per-parameter
/// attributes of a step with tens of thousands of parameters cost LLVM time
/// and memory quadratic in their number.
void markEntryArgumentsNoAlias(llvm::Module &module,
                               llvm::ArrayRef<std::string> entries);

/// Adds `void <packedName>(void **args)` to `module` (a lowered module in
/// LLVM IR): it calls `_mlir_ciface_<name>` with args[i] loaded as its i-th
/// argument (a descriptor pointer, or a scalar), the layout
/// ExecutionEngine::invokePacked uses.
llvm::Error addPackedEntry(llvm::Module &module, llvm::StringRef name,
                           llvm::StringRef packedName);

/// Inlines the C interface of the entry `name` and the entry itself into
/// its packed entry `packedName` (addPackedEntry's), then erases the two
/// when nothing else calls them. A step's entry takes thousands of
/// parameters (each memref's descriptor fields), and LLVM's called-value
/// propagation revisits a call each time one of its operands changes,
/// merging every argument each time: quadratic in the parameters (3.2 s of
/// a 100-layer MLP's optimization for the call into the step). The packed
/// entry takes one pointer. Run after markEntryArgumentsNoAlias (the
/// inliner keeps noalias parameters as alias scopes).
llvm::Error inlineIntoPackedEntry(llvm::Module &module, llvm::StringRef name,
                                  llvm::StringRef packedName);

/// Sends the allocations of a lowered CPU step (its calls of aligned_alloc,
/// malloc and free, from memref-to-llvm) to the CPU runtime's counted heap
/// (amp_cpu_aligned_alloc, amp_cpu_malloc, amp_cpu_free), with the
/// attributes that tell LLVM they allocate and free as the C functions do.
/// Run before optimization, as the JIT and the artifact compiler do.
void routeStepAllocations(llvm::Module &module);

/// Lets the loop vectorizer use 512-bit vectors in every function of
/// `module` when `machine` targets AVX-512. LLVM's tuning for the AVX-512
/// Xeons and Ice Lake onwards prefers 256-bit vectors (the frequency cost of
/// 512-bit ones in mixed code); a step's element-wise loops (GELU, softmax,
/// the optimizer) are long runs of arithmetic that gain from the full width,
/// as PyTorch's AVX-512 kernels do. Run before optimization.
void preferFullWidthVectors(llvm::Module &module,
                            const llvm::TargetMachine &machine);

/// Readies a module copy for lowering with the functions `entries` as entry
/// points: erases the function definitions that are not entries and that
/// nothing calls, drops the train.* argument attributes, gives the entries
/// a C interface (`_mlir_ciface_<name>`) and marks their arguments
/// read-only.
void prepareEntryPoints(mlir::ModuleOp module,
                        llvm::ArrayRef<llvm::StringRef> entries);

/// Whether prepareEntryPoints records the steps' in-place state (the
/// default); AMP_STATE_IN_PLACE=0 keeps the old scheme of a second buffer
/// per state tensor, for measuring the difference (bench/state_memory.py).
/// Part of the compile cache's key (describeArtifactTarget).
bool isStateInPlace();

/// Whether the CPU lowering plans each step's memory (amp-plan-memory: the
/// default); AMP_MEMORY_PLAN=0 leaves each buffer to the heap, for
/// measuring the difference. Part of the compile cache's key.
bool isMemoryPlanned();

/// Whether code compiled for CPU `cpu` ("": this machine) multiplies bf16
/// natively (AVX-512 BF16 or AMX-BF16), as the CPU runtime checks at run
/// time: the lowering then plans a bf16 convolution's scratch without
/// widened copies (amp-lower-cpu's native-bf16). A named CPU answers false
/// (an upper bound of the scratch on any CPU). The host's features are in
/// the compile cache's key.
bool targetMultipliesBf16(llvm::StringRef cpu);

/// Sets what every CPU lowering of a step takes from its target and
/// environment: the memory plan (isMemoryPlanned), native-bf16
/// (targetMultipliesBf16(`cpu`)) and the memory budget (with
/// `recomputeGemms`, GEMMs may be recomputed under it).
void setTargetLoweringOptions(CpuLoweringOptions &lowering, llvm::StringRef cpu,
                              double memoryBudget, bool recomputeGemms);

/// amp-plan-memory's record of function `name` in a lowered module (on the
/// function or the LLVM function it became); empty where it has none.
MemoryPlan readMemoryPlan(mlir::ModuleOp module, llvm::StringRef name);

/// The in-place results of function `name` in a module lowered from one
/// prepareEntryPoints readied (the record amp-drop-in-place-results left,
/// on the function or the LLVM function it became): for each of the
/// `numResults` results, the argument it is written into, or -1. Empty
/// when no result is written in place.
llvm::SmallVector<int64_t> readResultArguments(mlir::ModuleOp module,
                                               llvm::StringRef name,
                                               size_t numResults);

/// A function of a train-dialect module, lowered with amp-lower-cpu and
/// compiled to native code. Thread-compatible: concurrent `call`s need
/// separate instances.
class CpuFunction final : public HostResults<CompiledFunction> {
public:
  ~CpuFunction() override;

  /// Lowers a copy of `module` and JIT-compiles function `name`, whose
  /// arguments and results must be static f32/f16/bf16/i32/i1 tensors.
  static llvm::Expected<std::unique_ptr<CpuFunction>>
  compile(mlir::ModuleOp module, llvm::StringRef name,
          const CpuCompileOptions &options = {});

  /// Runs the function on `inputs` (argument order, types checked) and
  /// returns its results (`call`, from HostResults, reuses nothing).
  llvm::Expected<std::vector<HostTensor>>
  callReusing(llvm::ArrayRef<const HostTensor *> inputs,
              std::vector<HostTensor> &reuse) override;

  /// As callReusing, writing the state the step updates into `inputs`.
  llvm::Expected<std::vector<HostTensor>>
  callUpdating(llvm::ArrayRef<HostTensor *> inputs,
               std::vector<HostTensor> &reuse) override;

  llvm::ArrayRef<TensorSpec> getArgumentSpecs() const override {
    return arguments;
  }
  llvm::ArrayRef<TensorSpec> getResultSpecs() const override { return results; }
  llvm::ArrayRef<int64_t> getResultArguments() const override {
    return resultArguments;
  }
  const MemoryPlan &getMemoryPlan() const override { return memoryPlan; }

private:
  CpuFunction() = default;

  /// Runs the packed entry on `inputs`; `update`: callUpdating's.
  llvm::Expected<std::vector<HostTensor>>
  run(llvm::ArrayRef<const HostTensor *> inputs, std::vector<HostTensor> &reuse,
      bool update);

  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::string entry;
  /// The packed entry (addPackedEntry's, with the entry inlined): called
  /// with a pointer to each argument.
  void (*packedEntry)(void **) = nullptr;
  llvm::SmallVector<TensorSpec> arguments;
  llvm::SmallVector<TensorSpec> results;
  /// getResultArguments: the lowering's record (empty: none in place).
  llvm::SmallVector<int64_t> resultArguments;
  MemoryPlan memoryPlan;
};

} // namespace amp

#endif // AMP_EXECUTION_CPUJIT_H
