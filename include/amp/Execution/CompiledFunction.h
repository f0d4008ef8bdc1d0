//===- CompiledFunction.h - A compiled function the host calls --*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// What the training loop needs of a compiled step or logits function,
// whether JIT-compiled (CpuJit.h) or loaded from an ahead-of-time artifact
// (Artifact.h). No MLIR here: the artifact loader runs where MLIR is not
// installed.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_COMPILEDFUNCTION_H
#define AMP_EXECUTION_COMPILEDFUNCTION_H

#include "amp/Execution/HostTensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace amp {

/// The type of one argument or result: element kind and static shape.
struct TensorSpec {
  ElementKind kind;
  llvm::SmallVector<int64_t, 4> shape;

  int64_t getNumElements() const;
  /// "tensor<2x3xf16>".
  std::string str() const;
};

/// Strided-memref descriptors of dense row-major buffers, packed as a
/// function lowered with `llvm.emit_c_interface` takes them through a packed
/// wrapper: one `void *` per argument pointing at a pointer to the
/// descriptor {allocated, aligned, offset, sizes[rank], strides[rank]}.
class PackedDescriptors {
public:
  /// Appends the descriptor of `data` with `shape`.
  void add(const void *data, llvm::ArrayRef<int64_t> shape);
  /// The packed argument array, valid until the next `add`.
  llvm::MutableArrayRef<void *> get();

private:
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> pointers;
  std::vector<void *> packed;
};

/// The memory plan of a compiled function (amp-plan-memory's record): its
/// temporaries live in one arena of `arenaBytes`, allocated for each call,
/// so the planned peak of its working memory is known before it runs.
struct MemoryPlan {
  /// The arena: the planned peak of the function's own buffers.
  uint64_t arenaBytes = 0;
  /// The most bytes live at one point (no arena can be smaller).
  uint64_t livePeakBytes = 0;
  /// Buffers placed in the arena, and those left to the heap (allocated
  /// inside loops, or of a dynamic size) with the bytes of the static ones.
  uint64_t buffers = 0, unplannedBuffers = 0, unplannedBytes = 0;
  /// The bytes live at that point, by the kind of op that first writes them
  /// ("gemm", "attention", "loops", "copy", ...), most first.
  std::vector<std::pair<std::string, uint64_t>> atPeak;
  /// The values amp-recompute recomputes in backward instead of keeping
  /// (a memory budget), their bytes, and the GEMMs computed again for them
  /// (recompute-gemms); 0 without one.
  uint64_t recomputedValues = 0, recomputedBytes = 0, recomputedGemms = 0;

  /// Whether there is a plan (a function with no planned buffer has none).
  bool empty() const { return buffers == 0; }
  /// "41.2 MiB arena for 312 buffers (at the peak: gemm 20.1 MiB, loops
  /// 12.0 MiB, ...)", and "; 35 values recomputed in backward (64.0 MiB)"
  /// under a memory budget.
  std::string str() const;
};

/// A function of a compiled training step (the step itself, or the logits
/// function evaluation runs). Thread-compatible: concurrent `call`s need
/// separate instances.
class CompiledFunction {
public:
  virtual ~CompiledFunction();

  /// Runs the function on `inputs` (argument order, types checked) and
  /// returns its results in host memory.
  virtual llvm::Expected<std::vector<HostTensor>>
  call(llvm::ArrayRef<const HostTensor *> inputs) = 0;

  /// As `call`, but result r may be written into `reuse[r]` and returned in
  /// its place (its old contents overwritten; the entry is left moved-from)
  /// where that tensor owns its elements, has the result's kind and shape
  /// and is not one of `inputs`: a training loop hands back the arguments a
  /// step's results replace, instead of allocating and zeroing every
  /// parameter and moment anew each step. Functions whose results are not
  /// in host memory ignore `reuse`.
  virtual llvm::Expected<std::vector<HostTensor>>
  callReusing(llvm::ArrayRef<const HostTensor *> inputs,
              std::vector<HostTensor> &reuse) {
    return call(inputs);
  }

  /// As callReusing, but the arguments getResultArguments names are
  /// updated in place: `inputs[a]` holds result r after the call where
  /// getResultArguments()[r] == a, and the returned entry r is a view of it
  /// (HostTensor::borrow). `call` and `callReusing` leave their inputs
  /// unchanged (the code writes into copies of those arguments).
  /// An input written in place must not share memory with another input.
  /// (This default runs callReusing and copies the in-place results back.)
  virtual llvm::Expected<std::vector<HostTensor>>
  callUpdating(llvm::ArrayRef<HostTensor *> inputs,
               std::vector<HostTensor> &reuse);

  virtual llvm::ArrayRef<TensorSpec> getArgumentSpecs() const = 0;
  virtual llvm::ArrayRef<TensorSpec> getResultSpecs() const = 0;
  /// For each result, the argument whose buffer the compiled code writes it
  /// into (a step's new parameters, masters, moments and scaler state:
  /// amp-update-state-in-place), or -1 for a result of its own; empty when
  /// no result is written in place.
  virtual llvm::ArrayRef<int64_t> getResultArguments() const { return {}; }
  /// getResultArguments' entry for result `r`: -1 where it has none.
  int64_t getResultArgument(size_t r) const {
    llvm::ArrayRef<int64_t> all = getResultArguments();
    return r < all.size() ? all[r] : -1;
  }
  /// The plan of the function's working memory; empty where it has none
  /// (compiled without amp-plan-memory, or by another backend).
  virtual const MemoryPlan &getMemoryPlan() const {
    static const MemoryPlan none;
    return none;
  }
  /// Checks that `resultArguments` (as getResultArguments) fits `arguments`
  /// and `results`: one entry per result, each -1 or an argument of the
  /// result's type, no argument twice.
  static llvm::Error
  checkResultArguments(llvm::StringRef name,
                       llvm::ArrayRef<TensorSpec> arguments,
                       llvm::ArrayRef<TensorSpec> results,
                       llvm::ArrayRef<int64_t> resultArguments);

protected:
  /// An error naming the first input whose type differs from `specs` (or a
  /// wrong count), for function `name`.
  static llvm::Error checkInputs(llvm::StringRef name,
                                 llvm::ArrayRef<TensorSpec> specs,
                                 llvm::ArrayRef<const HostTensor *> inputs);

  /// A call on host memory: checks `inputs` against `arguments`, allocates
  /// tensors of `results` (or takes them from `reuse`, as callReusing),
  /// packs their descriptors (arguments, then the results not written in
  /// place: `resultArguments`, as getResultArguments) and runs `invoke` on
  /// them. A result written in place goes into its input where
  /// `updateInputs` (callUpdating), else into a copy of it.
  static llvm::Expected<std::vector<HostTensor>> callOnHost(
      llvm::StringRef name, llvm::ArrayRef<TensorSpec> arguments,
      llvm::ArrayRef<TensorSpec> results,
      llvm::ArrayRef<const HostTensor *> inputs,
      llvm::function_ref<llvm::Error(llvm::MutableArrayRef<void *>)> invoke,
      std::vector<HostTensor> *reuse = nullptr,
      llvm::ArrayRef<int64_t> resultArguments = {}, bool updateInputs = false);
};

/// A function whose results are made in host memory, so that `call` is
/// `callReusing` with nothing to reuse: such a function writes only
/// `callReusing` (callOnHost) and derives from HostResults<its base>.
template <typename Base> class HostResults : public Base {
public:
  using Base::Base;

  llvm::Expected<std::vector<HostTensor>>
  call(llvm::ArrayRef<const HostTensor *> inputs) final {
    std::vector<HostTensor> none;
    return this->callReusing(inputs, none);
  }
};

/// Where a result of a step goes: back into an argument for the next call
/// (`toArgument`), to the host (`toHost`), or both.
struct ResultRoute {
  int toArgument = -1;
  bool toHost = true;
};

/// A training run's view of a compiled step and its logits function (whose
/// arguments are a prefix of the step's): the step's arguments live where
/// the code runs between calls, and results routed back into arguments
/// never leave it. For the CUDA backend that is device memory, so a step
/// copies only its per-step inputs in and its scalars out.
class StepSession {
public:
  virtual ~StepSession();

  /// Sets argument `i` of the step (checked against its type).
  virtual llvm::Error set(unsigned i, const HostTensor &value) = 0;
  /// As set, taking `value`: a session in host memory keeps its elements
  /// (an owner's; a view is copied) instead of copying them; any other
  /// copies them and lets them go when it returns.
  virtual llvm::Error take(unsigned i, HostTensor value) {
    return set(i, value);
  }
  /// The current value of argument `i`.
  virtual llvm::Expected<HostTensor> get(unsigned i) = 0;
  /// Makes `data` argument `i`'s home from now on: host memory the caller
  /// owns and keeps alive while the session lives, 64-byte aligned, holding
  /// the argument's elements row-major. The argument's value is copied
  /// there; the step reads and updates it there in place, and set, take and
  /// a result routed back into the argument copy into it (python/amp gives
  /// the model's own parameter tensors this way, so the model holds the
  /// trained values and the session keeps no second copy). Returns false,
  /// using nothing, where the session keeps its arguments elsewhere (device
  /// memory) or `data` is not aligned.
  virtual llvm::Expected<bool> adopt(unsigned i, void *data) {
    (void)i;
    (void)data;
    return false;
  }
  /// Runs the step on the current arguments. `routes` has one entry per
  /// result; returns the results routed to the host, in order.
  virtual llvm::Expected<std::vector<HostTensor>>
  step(llvm::ArrayRef<ResultRoute> routes) = 0;
  /// Sets the arguments `inputs` names (index, value) and runs the step. A
  /// session whose code runs in host memory reads borrowed values
  /// (HostTensor::borrow) in place, without a copy, and keeps no reference
  /// to them after the call (the arguments read as before it); other
  /// sessions copy them in, as set.
  virtual llvm::Expected<std::vector<HostTensor>>
  stepWith(llvm::ArrayRef<ResultRoute> routes,
           llvm::ArrayRef<std::pair<unsigned, HostTensor>> inputs);
  /// Runs the logits function on the current arguments; returns its
  /// results.
  virtual llvm::Expected<std::vector<HostTensor>> logits() = 0;

  /// Device memory of the session's code, if it has any: bytes in use now
  /// and at most so far (allocations, not counting cached free blocks).
  struct MemoryStats {
    uint64_t inUse = 0, peakInUse = 0, held = 0, peakHeld = 0;
  };
  virtual std::optional<MemoryStats> getDeviceMemory() { return std::nullopt; }

  /// Checks that the logits function's arguments are a prefix of the step's
  /// and `routes` fits the step's results.
  static llvm::Error checkFunctions(const CompiledFunction &step,
                                    const CompiledFunction &logits);
  static llvm::Error checkRoutes(const CompiledFunction &step,
                                 llvm::ArrayRef<ResultRoute> routes);
  /// Checks that `value` fits argument `i` of a function taking `specs`.
  static llvm::Error checkArgument(llvm::ArrayRef<TensorSpec> specs, unsigned i,
                                   const HostTensor &value);
};

/// A session keeping the arguments in host memory, calling `call` (the CPU
/// backend, and a fallback for any function).
llvm::Expected<std::unique_ptr<StepSession>>
openHostSession(CompiledFunction &step, CompiledFunction &logits);

} // namespace amp

#endif // AMP_EXECUTION_COMPILEDFUNCTION_H
