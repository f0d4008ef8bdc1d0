//===- CompiledStep.h - A compiled training step and its ABI ----*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// What an engine (the JIT, an AOT artifact) hands to whoever runs a training
// step: the compiled functions, the roles of the step's arguments and their
// initializers. Plain data below both the engines (Execution) and the
// training loop (Training), so the engines never include the loop.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_COMPILEDSTEP_H
#define AMP_EXECUTION_COMPILEDSTEP_H

#include "amp/Execution/CompiledFunction.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace amp {

class Communicator;

/// The roles of @train_step's arguments, read from their train.* attributes
/// (docs/Autodiff.md describes the ABI). Results: the loss, then the new
/// value of each `state` argument in that order, then (dynamic loss scaling)
/// the new scale and tracker, then found_inf and collapsed (static scaling:
/// found_inf only), then (any loss scaling) the i32 index of what first held
/// an inf or NaN (amp::describeNonfinite).
/// One entry of a step compiled with check-numerics (amp-check-numerics'
/// site table, `train.numerics`): a float argument the forward reads, a
/// constant, or an op's float result; plain data, so an artifact carries it.
struct NumericsSite {
  enum class Kind { Argument, Constant, Op };
  Kind kind = Kind::Op;
  /// Argument: the step's argument index.
  unsigned argument = 0;
  /// Constant: the largest magnitude of its elements.
  double magnitude = 0.0;
  /// Op: its name ("train.matmul"), backward or forward, the model's
  /// module path ("encoder.ffn.wi"; "" when the location has none), the
  /// source file and line (0: none), the result number among several, and
  /// the entries its float operands stand for.
  std::string op, module, file;
  bool backward = false;
  int64_t line = 0, result = -1;
  std::vector<int64_t> inputs;
  /// The magnitude a calibration measured for the op (calibrated
  /// autocast); -1: none.
  double calibrated = -1.0;
  /// Where the step measures this entry: an index into its last result (the
  /// train.check_numerics vector); -1 for constants.
  int64_t check = -1;
};

struct StepAbi {
  /// Data arguments: the model's inputs are input..labels-1 (one for the
  /// models amp-run feeds), the labels (targets) come last.
  unsigned input = 0, labels = 1;
  unsigned numInputs() const { return labels - input; }
  /// Each input's name (a name location on the argument: the forward's
  /// parameter name, as amp.to_mlir writes it), "" where it has none.
  /// --dataset=safetensors finds an input's tensor by it.
  llvm::SmallVector<std::string> inputNames;
  /// The name of input `k` in a data file: its own, else "input.k".
  std::string inputName(unsigned k) const {
    if (k < inputNames.size() && !inputNames[k].empty())
      return inputNames[k];
    return "input." + std::to_string(k);
  }
  /// Arguments updated by results 1.. in order: train.state, parameters,
  /// masters, optimizer state.
  llvm::SmallVector<unsigned> state;
  llvm::SmallVector<unsigned> params;  // train.param
  llvm::SmallVector<unsigned> masters; // train.master, in parameter order
  std::optional<unsigned> lr;
  llvm::SmallVector<unsigned> scaler; // scale, tracker
  unsigned numResults = 0;
  /// Checkpoint names of the arguments that persist across steps.
  llvm::SmallVector<std::pair<std::string, unsigned>> persistent;
  /// The model's own names of parameters and state (`layer1.0.conv1.weight`:
  /// a name location on the argument, as amp.to_mlir writes), where given.
  llvm::SmallVector<std::pair<std::string, unsigned>> names;
  /// With check-numerics: the site table, in program order (the step's
  /// last result holds the measured magnitudes); empty otherwise.
  std::vector<NumericsSite> numerics;
  /// How evaluation scores the outputs against the labels as the model's
  /// cross-entropy does: rows labelled `ignoreIndex` count for nothing,
  /// `labelSmoothing` mixes in the mean over the classes.
  struct EvalLoss {
    std::optional<int64_t> ignoreIndex;
    double labelSmoothing = 0.0;
  } evalLoss;

  /// The step scales its loss: found_inf (and the rest) among its results.
  bool hasLossScaling() const {
    return numResults > 1 + state.size() + (numerics.empty() ? 0 : 1);
  }
};

/// A #train.init attribute resolved for one tensor: the distribution's name
/// (the attribute's mnemonic: "zeros", "kaiming_uniform", ...), its value
/// (constant, normal's std, uniform's bound) and the fans it uses. Plain data,
/// so an ahead-of-time artifact carries it to a loader without MLIR.
struct InitSpec {
  std::string kind;
  double value = 0.0;
  int64_t fanIn = 0, fanOut = 0;
};

/// A compiled training step: @train_step with its argument roles and the
/// initial value of each initialised argument, and the logits function of
/// its forward (inputs, labels, then the step's arguments from #2 on).
struct CompiledStep {
  CompiledFunction *step = nullptr;
  CompiledFunction *logits = nullptr;
  StepAbi abi;
  std::vector<std::pair<unsigned, InitSpec>> inits;
  /// Where the run keeps the step's arguments; null: in host memory
  /// (openHostSession).
  std::function<llvm::Expected<std::unique_ptr<StepSession>>()> openSession;
  /// A CPU step's thread count: set (0: the cores available to the process)
  /// and read through the CPU runtime that runs it (the JIT's, or the one
  /// an artifact links). Null for CUDA steps.
  void (*setCpuThreads)(int64_t) = nullptr;
  int64_t (*getCpuThreads)() = nullptr;
  /// A CPU step's working memory, through the same runtime: the bytes its
  /// buffers and the runtime's scratch hold now and at most since the last
  /// reset (amp_cpu_memory_stats, amp_cpu_memory_reset_peak). Null for CUDA
  /// steps.
  void (*cpuMemoryStats)(uint64_t *inUse, uint64_t *peak) = nullptr;
  void (*resetCpuMemoryPeak)() = nullptr;
  /// The number of data-parallel ranks the step is compiled for
  /// (amp-pipeline's `ranks`; 1: one process), and the installer of the
  /// communicator its collectives call, in the runtime that runs it (the
  /// JIT's, or the one an artifact links: amp_cpu_set_communicator,
  /// amp_cuda_set_communicator, which also starts NCCL over it and returns
  /// why that failed; empty on success). Null where the runtime has none
  /// (an artifact of another amp build).
  int64_t ranks = 1;
  std::function<std::string(Communicator *)> setCommunicator;
};

} // namespace amp

#endif // AMP_EXECUTION_COMPILEDSTEP_H
