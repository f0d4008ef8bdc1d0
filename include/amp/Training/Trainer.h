//===- Trainer.h - The training loop around a compiled step -----*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// The loop amp-run (JIT) and amp-train (ahead-of-time artifacts) share:
// data, parameter initialisation, the learning-rate schedule, loss-scale
// bookkeeping, evaluation, checkpoints, metrics and plots. No MLIR: it runs
// where only an artifact and the runtime library are.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_TRAINER_H
#define AMP_TRAINING_TRAINER_H

#include "amp/Execution/CompiledFunction.h"
#include "amp/Execution/CompiledStep.h"
#include "amp/Training/Initializers.h"
#include "amp/Training/StepAbi.h"

#include "llvm/Support/JSON.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace amp {

class Communicator;
struct Checkpoint;

/// A run's configuration: the flags of amp-run and amp-train
/// (docs/UserGuide.md). `optLevel`, `dtype` and `optimizer` describe how the
/// step was compiled; they are recorded in metrics and checkpoints.
struct TrainingConfig {
  std::string tool = "amp-run";
  std::string model;
  std::string optLevel = "O1", dtype = "f16", optimizer = "adam";
  std::string backend = "cpu";
  double learningRate = 1e-3;
  std::string lrSchedule = "constant";
  int64_t warmupSteps = 0;
  std::string dataset = "fashion-mnist";
  std::string dataDir = "/usr/share/datasets/fashion-mnist";
  /// --dataset=text: a text file or a directory of them;
  /// --dataset=safetensors: the data file.
  std::string dataFile;
  /// --dataset=safetensors: the held-out fraction, at the file's tail.
  double valFraction = 0.1;
  int64_t epochs = 1, steps = -1;
  uint64_t seed = 0;
  bool shuffle = true;
  std::string metricsPath, savePath, loadPath, plotPath;
  /// --init-from: parameters and batch-norm state of any amp checkpoint.
  std::string initFromPath;
  int64_t trainExamples = 0, testExamples = 0;
  int64_t stopAt = -1;
  std::vector<int64_t> injectNonfinite;
  int64_t maxConsecutiveSkips = 20;
  /// Warn once a run has skipped this many steps in a row, naming what was
  /// non-finite (0: never).
  int64_t warnConsecutiveSkips = 5;
  int64_t logEvery = 100;
  /// Threads of a CPU step (its loops, copies and BLAS); 0: the cores
  /// available to the process (or OMP_NUM_THREADS).
  int64_t threads = 0;
  double compileSeconds = 0.0;
  /// Benchmark mode (> 0): this many timed steps on one fixed random batch
  /// after `benchWarmup` untimed ones; no data set, evaluation or checkpoint.
  int64_t benchSteps = 0, benchWarmup = 5;
  /// Data parallelism (docs/Distributed.md): the processes of the job, this
  /// one's rank, and their communicator (null: one process). Each rank
  /// trains on its own shard of every global batch of `ranks` x batch
  /// examples, starts from rank 0's state, and only rank 0 writes files.
  Communicator *communicator = nullptr;
  /// --data-parallel was given (joinDataParallelJob sets `communicator`).
  bool dataParallel = false;
  /// Compare every rank's parameters and state with rank 0's after every
  /// step (always after the last one).
  bool checkReplicas = false;
  /// Inject the non-finite input of `injectNonfinite` on this rank only
  /// (-1: every rank).
  int64_t injectRank = -1;
  /// The watchdog's deadline for one step of a data-parallel run, in
  /// seconds (0: none): a step that takes longer (a rank stopped or hung,
  /// so a collective never completes) ends the process with an error naming
  /// the step, and mpirun ends the job.
  double dpTimeout = 300;
  /// How the step was compiled (the tool's amp-pipeline options), part of
  /// the fingerprint every rank compares with rank 0's before training.
  std::string compileSettings;
};

/// Checks that `compiled`'s step is compiled for the job of `communicator`
/// (null: one process) and installs the communicator in the runtime that
/// runs the step (uninstall with compiled.setCommunicator(nullptr)). Errors
/// say how to run the step instead.
llvm::Error installCommunicator(const CompiledStep &compiled,
                                Communicator *communicator);

/// Copies rank 0's value of every persistent argument of `session`
/// (parameters, optimizer and scaler state) to this rank, as
/// DistributedDataParallel does at construction.
llvm::Error broadcastPersistent(StepSession &session, const StepAbi &abi,
                                Communicator &communicator);

/// "O1 f16", or "O0 f32" (O0 runs in f32 whatever the dtype): how banners,
/// plots and benchmarks name a run's precision.
std::string precisionLabel(const TrainingConfig &config);

/// Checks the flags `TrainingConfig` holds (schedule, dataset, counts),
/// returning a message naming the bad one.
llvm::Error validateConfig(const TrainingConfig &config);


/// The step's arguments with their initial values (from `inits`, drawn in
/// argument order from one generator seeded with `seed`; zeros elsewhere),
/// with the f32 master of each low-precision parameter. An error if the
/// loss scale has no initial value.
llvm::Expected<std::vector<HostTensor>>
initialArguments(const CompiledStep &compiled, uint64_t seed);

/// Replaces the parameters (with their f32 masters) and the batch-norm
/// state in `args` by those of `checkpoint` (read from `path`), a checkpoint
/// of the same model at any opt level, type or optimizer: each parameter's
/// f32 value (its master where the file has one) is rounded to this step's
/// type. Optimizer and scaler state stay as `args` has them. Errors name the
/// file and the tensor that does not fit; `args` is unchanged then.
llvm::Error initializeFrom(const StepAbi &abi, std::vector<HostTensor> &args,
                           const Checkpoint &checkpoint, llvm::StringRef path);

/// Returns the C heap's free memory to the kernel (glibc's malloc_trim):
/// the CPU runtime keeps freed blocks for the next step's buffers
/// (retainFreedMemory), so without this the transient of setting up a run
/// (initial values replaced by the model's, checkpoint tensors) would stay
/// in the process's resident memory. Called once a session's arguments are
/// set (openStepSession, amp.compile).
void releaseFreedMemory();

/// Opens the step's session (`compiled.openSession`, or host memory) and
/// sets its arguments to `args`, which it takes: a host session keeps their
/// elements instead of copying them, and each goes as soon as it is set, so
/// the state is never held twice.
llvm::Expected<std::unique_ptr<StepSession>>
openStepSession(const CompiledStep &compiled, std::vector<HostTensor> args);

/// The state a step carries from one call to the next (the arguments its
/// results are routed back into): bytes in all, and the bytes of those the
/// compiled step does not update in place, which a session holds twice.
struct StateMemory {
  uint64_t bytes = 0, doubleBuffered = 0;
};
StateMemory getStateMemory(const CompiledStep &compiled);

/// The metrics' `planned_step_bytes`: the step's memory plan's arena, or
/// null where the step has no plan.
llvm::json::Value plannedStepBytes(const CompiledStep &compiled);

/// Where each step result goes: the loss to the host; the new state back
/// into its arguments; the new loss scale into its argument and to the host,
/// the growth tracker into its argument; found-inf and collapsed to the
/// host.
std::vector<ResultRoute> stepResultRoutes(const CompiledStep &compiled);

/// A value of the step's learning-rate argument, whose type is `spec` (rank
/// 0, or one rate per parameter group): `lr` for every group.
HostTensor learningRateArgument(const TensorSpec &spec, float lr);

/// An error when every parameter of the step starts at zero and two or more
/// of them are matrices (a network that cannot learn from there: what
/// amp.to_mlir writes, the weights living in PyTorch); `model` names it.
llvm::Error checkNotAllZero(const CompiledStep &compiled,
                            llvm::StringRef model);

/// The scalars a step returns to the host (the results stepResultRoutes
/// sends there, in order): the loss, the loss scale (1 without dynamic loss
/// scaling), whether the step was skipped for non-finite gradients, and
/// whether the loss scale collapsed.
struct StepScalars {
  double loss = 0.0, scale = 1.0;
  bool skipped = false, collapsed = false;
  /// With loss scaling, what first held an inf or NaN (the step's last
  /// result), for describeNonfinite; -1: nothing did.
  int64_t nonfinite = -1;
  /// With check-numerics, each checked entry's largest magnitude (inf and
  /// NaN kept), for findNumericsOrigin.
  std::vector<double> magnitudes;
};
StepScalars readStepScalars(const StepAbi &abi,
                            llvm::ArrayRef<HostTensor> toHost);

/// What a step's `nonfinite` scalar names, for people: "" for -1; the loss
/// or a running statistic (the forward: a step that keeps its running
/// statistics), or the gradient of a parameter (the first non-finite one in
/// backward's order), each by the model's name where the step carries names
/// and by its checkpoint name ("param.3") otherwise. `args` are the step's
/// argument specs.
struct NonfiniteSource {
  bool forward = false;
  std::string what; // "the loss", "running statistic bn.running_var", ...
  std::string name; // the tensor's name ("" for the loss)
  /// The step has running statistics (kept on a forward overflow).
  bool hasRunningStatistics = false;
};
/// Where an inf or NaN was born in a step compiled with check-numerics: the
/// first entry of the site table, in program order, that is not finite
/// while its inputs are (a NaN while no input held one; an inf while every
/// input was finite), or a float argument (data, parameter, state) holding
/// one. Constants (an attention mask's -inf) are never the origin.
struct NumericsReport {
  /// An argument held it: its name (the model's, a checkpoint name, or
  /// "input #i" for data); the fields below are then empty. Also set (with
  /// `op` "train.cast" and no location) when autocast's cast of an argument
  /// to the low type made it.
  bool argument = false;
  std::string name;
  /// The op that made it: "train.matmul", backward or forward, its module
  /// path ("" when the importer recorded none), source file and line (0:
  /// none), and its result number among several (-1: its only one).
  std::string op, module, file;
  bool backward = false;
  int64_t line = 0, result = -1;
  /// NaN, else an inf.
  bool nan = false;
  /// The largest finite magnitude among its inputs (0 with no input).
  double inputMagnitude = 0.0;
  /// What a calibration measured for the op (calibrated autocast: it
  /// outgrew that range, recalibrate); -1: none.
  double calibrated = -1.0;
  /// The step it happened at (set by the caller; -1: unknown).
  int64_t step = -1;

  /// One located line: "model.py:42: step 0: train.matmul in the forward
  /// of encoder.ffn.wi made an inf from finite inputs (largest input
  /// magnitude 6.1e+04)".
  std::string describe() const;
};
std::optional<NumericsReport>
findNumericsOrigin(const StepAbi &abi, llvm::ArrayRef<double> magnitudes);
/// A report as the metrics file's per-step "numerics" object.
llvm::json::Object numericsJson(const NumericsReport &report);

std::optional<NonfiniteSource>
describeNonfinite(const StepAbi &abi, llvm::ArrayRef<TensorSpec> args,
                  int64_t nonfinite);

/// Benchmark mode: times `config.benchSteps` steps on one random batch (i32
/// inputs in [0, 10)) held on the device, after `config.benchWarmup`
/// untimed steps; prints the median, the spread and the device memory, and
/// writes them to `config.metricsPath` as JSON. Returns the exit status.
int runBenchmark(const TrainingConfig &config, const CompiledStep &compiled);

/// Trains as `config` says, printing progress to stdout; returns the exit
/// status (errors are printed as "<tool>: error: ..." on stderr and return
/// 1, leaving any existing checkpoint, metrics or plot file untouched).
int runTraining(const TrainingConfig &config, const CompiledStep &compiled);

} // namespace amp

#endif // AMP_TRAINING_TRAINER_H
