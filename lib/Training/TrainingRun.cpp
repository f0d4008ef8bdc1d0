//===- TrainingRun.cpp - A training run in phases -------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/TrainingRun.h"
#include "amp/Runtime/Collectives.h"
#include "amp/Training/Checkpoint.h"
#include "amp/Training/Plot.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <thread>

using namespace amp;

namespace {

/// `value` as JSON: null where it is not finite (JSON has no NaN or inf).
llvm::json::Value jsonNumber(double value) {
  if (std::isfinite(value))
    return value;
  return nullptr;
}

/// The learning rate of `step` of `total` under the config's schedule.
double scheduledRate(const TrainingConfig &config, int64_t step,
                     int64_t total) {
  double lr = config.learningRate;
  int64_t warmup = config.warmupSteps;
  if (warmup > 0 && step < warmup)
    return lr * double(step + 1) / double(warmup);
  int64_t t = step - warmup, span = std::max<int64_t>(1, total - warmup);
  if (config.lrSchedule == "cosine")
    return lr * 0.5 * (1.0 + std::cos(M_PI * double(t) / double(span)));
  if (config.lrSchedule == "step") // x0.1 at 50% and 75% of training
    return lr * (t >= span * 3 / 4 ? 0.01 : t >= span / 2 ? 0.1 : 1.0);
  return lr;
}

/// The watchdog's margin after --dp-timeout: the step's collectives give up
/// at the deadline itself.
/// (On the GPU the rank that gives up first aborts NCCL and asks the others
/// over MPI for up to 3 s: CudaCollectives.cpp.)
constexpr double kWatchdogBackstopSeconds = 8.0;

/// check-numerics reports printed per run (all of them are in the metrics).
constexpr int64_t kPrintedNumericsReports = 10;

/// The checkpoint metadata a --load checks against the run (--save writes
/// them).
constexpr const char *kConfigKeys[] = {"opt_level", "dtype", "optimizer",
                                       "dataset", "seed"};

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The batch's input tensor: token ids for an i32 input.
HostTensor inputTensor(const TensorSpec &spec, llvm::ArrayRef<float> x) {
  if (spec.kind != ElementKind::I32)
    return HostTensor::fromFloats(spec.kind, spec.shape, x);
  std::vector<int32_t> ids(x.begin(), x.end());
  return HostTensor::fromInts(spec.shape, ids);
}

} // namespace

//===----------------------------------------------------------------------===//
// StepWatchdog
//===----------------------------------------------------------------------===//

/// A data-parallel step's last resort: a thread that ends the process when
/// a step armed with `arm` has not been disarmed within `seconds` plus
/// `margin` (a step stuck outside the collectives, which give up at the
/// deadline themselves). It prints the step and this rank and exits with
/// status 1, so that mpirun ends the whole job.
class amp::StepWatchdog {
public:
  StepWatchdog(std::string tool, int64_t rank, int64_t ranks, double seconds,
               double margin)
      : tool(std::move(tool)), rank(rank), ranks(ranks), seconds(seconds),
        margin(margin), thread([this] { watch(); }) {}
  ~StepWatchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    wake.notify_all();
    thread.join();
  }
  void arm(int64_t step) {
    std::lock_guard<std::mutex> lock(mutex);
    current = step;
    deadline = std::chrono::steady_clock::now() +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   std::chrono::duration<double>(seconds + margin));
    armed = true;
    wake.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> lock(mutex);
    armed = false;
  }

private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      if (!armed) {
        wake.wait(lock);
        continue;
      }
      if (wake.wait_until(lock, deadline) == std::cv_status::timeout && armed &&
          std::chrono::steady_clock::now() >= deadline) {
        std::fprintf(stderr,
                     "%s: error: rank %lld of %lld: step %lld did not complete "
                     "within %g s (--dp-timeout) and %g s more, and no "
                     "collective gave up; ending the job\n",
                     tool.c_str(), static_cast<long long>(rank),
                     static_cast<long long>(ranks),
                     static_cast<long long>(current), seconds, margin);
        std::fflush(nullptr);
        std::_Exit(1);
      }
    }
  }

  std::string tool;
  int64_t rank, ranks;
  double seconds, margin;
  std::mutex mutex;
  std::condition_variable wake;
  bool armed = false, stopping = false;
  int64_t current = 0;
  std::chrono::steady_clock::time_point deadline;
  std::thread thread;
};

//===----------------------------------------------------------------------===//
// Observers
//===----------------------------------------------------------------------===//

namespace {

/// An accuracy in percent; NaN when no held-out example was scored (every
/// label the loss's ignore_index).
std::string formatAccuracy(double accuracy) {
  if (std::isnan(accuracy))
    return "n/a (every held-out label is the loss's ignore_index)";
  return llvm::formatv("{0:F2}%", 100 * accuracy).str();
}

/// The run's lines on stdout (and a progress bar on a terminal's stderr):
/// a step line every --log-every steps, one per epoch, the summary.
class ProgressReporter : public TrainingObserver {
public:
  void onStep(const TrainingRun &run, const StepOutcome &step) override {
    const TrainingConfig &config = run.getConfig();
    int64_t perEpoch = run.getStepsPerEpoch();
    if (progressBar) {
      // One line redrawn in place: the epoch's progress, loss and scale.
      int64_t done = step.inEpoch + 1, width = 30;
      int64_t filled = done * width / perEpoch;
      llvm::errs() << "\r  epoch " << (step.step / perEpoch + 1) << " ["
                   << std::string(filled, '=')
                   << std::string(width - filled, ' ') << "] " << done << "/"
                   << perEpoch << "  loss " << llvm::format("%.4f", step.loss);
      if (run.hasScaler())
        llvm::errs() << "  scale " << llvm::format("%g", step.scale);
      llvm::errs() << "   ";
      llvm::errs().flush();
    }
    int64_t logEvery = config.logEvery;
    if (logEvery > 0 &&
        (step.step % logEvery == 0 || step.step + 1 == run.getTotalSteps()))
      llvm::outs() << "step " << step.step << "  loss "
                   << llvm::format("%.4f", step.loss)
                   << (run.hasScaler() ? "  scale " : "")
                   << (run.hasScaler() ? llvm::formatv("{0}", step.scale).str()
                                       : "")
                   << (step.skipped ? "  skipped" : "") << "\n";
  }

  void onEpoch(const TrainingRun &run, const EpochOutcome &epoch) override {
    if (progressBar)
      llvm::errs() << "\r" << std::string(100, ' ') << "\r";
    // A run that ends inside an epoch says how much of it ran.
    llvm::outs() << "epoch " << epoch.epoch;
    if (epoch.partialSteps)
      llvm::outs() << " (" << epoch.partialSteps << " of "
                   << run.getStepsPerEpoch() << " steps)";
    llvm::outs() << "  train loss " << llvm::format("%.4f", epoch.trainLoss);
    if (run.isTokenModel())
      llvm::outs() << "  validation loss "
                   << llvm::format("%.4f", epoch.testLoss)
                   << "  next-byte accuracy ";
    else
      llvm::outs() << "  test accuracy ";
    llvm::outs() << formatAccuracy(epoch.accuracy) << "\n";
    llvm::outs().flush();
  }

  llvm::Error onFinish(const TrainingRun &run) override {
    llvm::outs() << "summary: ";
    double testLoss = run.getTestLoss(), unigram = run.getUnigramLoss();
    if (run.isTokenModel())
      llvm::outs() << "validation loss " << llvm::format("%.4f", testLoss)
                   << " nats/byte, "
                   << llvm::format("%.1f%%", 100 * (1 - testLoss / unigram))
                   << " below the unigram baseline "
                   << llvm::format("%.4f", unigram) << ", next-byte accuracy ";
    else
      llvm::outs() << "test accuracy ";
    llvm::outs() << formatAccuracy(run.getAccuracy()) << ", "
                 << run.getSkippedSteps() << " skipped steps, ";
    // Without dynamic scaling there is no scale to report (bf16, O0,
    // static).
    if (run.hasScaler())
      llvm::outs() << "final scale " << run.getFinalScale();
    else
      llvm::outs() << "no dynamic loss scale";
    llvm::outs() << ", median step "
                 << llvm::format("%.2f", run.getMedianStepMs()) << " ms\n";
    return llvm::Error::success();
  }

private:
  /// A progress bar on a terminal (stderr), plain lines otherwise.
  bool progressBar = llvm::sys::Process::StandardErrIsDisplayed();
};

/// --metrics: the run's configuration, every step and epoch, the summary,
/// written atomically as JSON at the end.
class MetricsWriter : public TrainingObserver {
public:
  void onStep(const TrainingRun &run, const StepOutcome &step) override {
    llvm::json::Object entry{{"step", step.step},
                             {"loss", jsonNumber(step.loss)},
                             {"scale", step.scale},
                             {"skipped", step.skipped}};
    if (step.source) {
      entry["nonfinite"] = step.source->what;
      entry["nonfinite_in"] = step.source->forward ? "forward" : "backward";
    }
    if (step.numerics)
      entry["numerics"] = numericsJson(*step.numerics);
    steps.push_back(std::move(entry));
  }

  void onEpoch(const TrainingRun &run, const EpochOutcome &epoch) override {
    llvm::json::Object entry{
        {"epoch", epoch.epoch},
        {"test_accuracy_percent", jsonNumber(100 * epoch.accuracy)},
        {"train_loss", jsonNumber(epoch.trainLoss)}};
    if (run.isTokenModel())
      entry["validation_loss"] = jsonNumber(epoch.testLoss);
    if (epoch.partialSteps)
      entry["steps"] = epoch.partialSteps;
    epochs.push_back(std::move(entry));
  }

  llvm::Error onFinish(const TrainingRun &run) override {
    const TrainingConfig &config = run.getConfig();
    const CompiledStep &compiled = run.getCompiled();
    StateMemory state = getStateMemory(compiled);
    llvm::json::Object metrics{
        {"config",
         llvm::json::Object{
             {"model", config.model},
             {"opt_level", config.optLevel},
             {"dtype", config.dtype},
             {"backend", config.backend},
             {"threads", compiled.getCpuThreads ? compiled.getCpuThreads() : 0},
             {"optimizer", config.optimizer},
             {"lr", config.learningRate},
             {"lr_schedule", config.lrSchedule},
             {"warmup_steps", config.warmupSteps},
             {"dataset", config.dataset},
             {"batch", run.getBatch()},
             {"ranks", run.getRanks()},
             {"steps", run.getTotalSteps()},
             {"seed", int64_t(config.seed)},
             {"shuffle", config.shuffle}}},
        {"steps", std::move(steps)},
        {"epochs", std::move(epochs)},
        {"test_accuracy_percent", jsonNumber(100 * run.getAccuracy())},
        {"test_loss", jsonNumber(run.getTestLoss())},
        {"skipped_steps", run.getSkippedSteps()},
        {"forward_nonfinite_steps", run.getForwardNonfiniteSteps()},
        {"final_scale",
         run.hasScaler() ? llvm::json::Value(run.getFinalScale()) : nullptr},
        {"step_time_ms_median", run.getMedianStepMs()},
        {"compile_time_s", config.compileSeconds},
        // The state the run carries across steps, and the part of it held
        // twice (0: every update in place).
        {"state_bytes", int64_t(state.bytes)},
        {"state_bytes_double_buffered", int64_t(state.doubleBuffered)},
        // The step's planned working memory (null: not planned).
        {"planned_step_bytes", plannedStepBytes(compiled)}};
    if (run.isTokenModel())
      metrics["unigram_loss"] = run.getUnigramLoss();
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(metrics))) << "\n";
    return writeFileAtomically(config.metricsPath, text);
  }

private:
  llvm::json::Array steps, epochs;
};

/// --plot: the loss (and the loss scale, skipped steps marked) per step, as
/// an SVG written at the end.
class PlotWriter : public TrainingObserver {
public:
  void onStep(const TrainingRun &run, const StepOutcome &step) override {
    losses.push_back(step.loss);
    scales.push_back(step.scale);
    skipped.push_back(step.skipped);
  }

  llvm::Error onFinish(const TrainingRun &run) override {
    const TrainingConfig &config = run.getConfig();
    std::string title = (llvm::sys::path::filename(config.model) + " at " +
                         precisionLabel(config) + ", " + config.optimizer)
                            .str();
    return writeFileAtomically(
        config.plotPath,
        renderTrainingPlot(title, losses,
                           run.hasScaler() ? llvm::ArrayRef<double>(scales)
                                           : llvm::ArrayRef<double>(),
                           skipped));
  }

private:
  std::vector<double> losses, scales;
  llvm::SmallVector<bool> skipped;
};

/// --save: the persistent state and the run's configuration as a
/// safetensors checkpoint after the last step.
class CheckpointWriter : public TrainingObserver {
public:
  llvm::Error onTrained(const TrainingRun &run) override {
    const StepAbi &abi = run.getCompiled().abi;
    Checkpoint checkpoint;
    for (auto &[name, index] : abi.persistent) {
      auto value = run.getSession().get(index);
      if (!value)
        return value.takeError();
      checkpoint.tensors.emplace_back(name, std::move(*value));
    }
    for (const char *key : kConfigKeys)
      checkpoint.metadata[key] = run.configValue(key);
    checkpoint.metadata["step"] = std::to_string(run.getEndStep());
    checkpoint.metadata["model"] = run.getConfig().model;
    return saveSafetensors(run.getConfig().savePath, checkpoint);
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// TrainingRun
//===----------------------------------------------------------------------===//

TrainingRun::TrainingRun(const TrainingConfig &config,
                         const CompiledStep &compiled)
    : config(config), compiled(compiled),
      shuffleRng(config.seed ^ 0x9e3779b97f4a7c15ULL) {
  // Only rank 0 writes files (the config's paths are empty elsewhere).
  if (!config.savePath.empty())
    observers.push_back(std::make_unique<CheckpointWriter>());
  observers.push_back(std::make_unique<ProgressReporter>());
  if (!config.plotPath.empty())
    observers.push_back(std::make_unique<PlotWriter>());
  if (!config.metricsPath.empty())
    observers.push_back(std::make_unique<MetricsWriter>());
}

TrainingRun::~TrainingRun() = default;

std::string TrainingRun::configValue(llvm::StringRef key) const {
  if (key == "opt_level")
    return config.optLevel;
  if (key == "dtype")
    return config.dtype;
  if (key == "optimizer")
    return config.optimizer;
  if (key == "dataset")
    return config.dataset;
  return std::to_string(config.seed);
}

double TrainingRun::getMedianStepMs() const {
  std::vector<double> sorted = stepTimes;
  std::sort(sorted.begin(), sorted.end());
  return sorted.empty() ? 0 : sorted[sorted.size() / 2];
}

int TrainingRun::run() {
  auto fail = [&](llvm::Error e) {
    // One write: the ranks of a data-parallel job share stderr.
    llvm::errs() << config.tool + ": error: " + llvm::toString(std::move(e)) +
                        "\n";
    return 1;
  };
  if (llvm::Error e = validateConfig(config))
    return fail(std::move(e));
  if (compiled.setCpuThreads)
    compiled.setCpuThreads(config.threads);
  // Data parallelism: the step's collectives call the job's communicator,
  // installed in the runtime that runs the step (for this run only); a
  // CUDA step's NCCL starts then, held to the steps' deadline.
  if (llvm::Error e = [&] {
        ScopedDeadline starting(config.communicator, config.dpTimeout,
                                "starting NCCL");
        return installCommunicator(compiled, config.communicator);
      }())
    return fail(std::move(e));
  llvm::scope_exit uninstall([&] {
    // The step's buffers and the watchdog go before the communicator (NCCL
    // on the GPU) stops.
    watchdog.reset();
    session.reset();
    if (config.communicator && compiled.setCommunicator)
      compiled.setCommunicator(nullptr);
  });
  if (config.benchSteps > 0)
    return runBenchmark(config, compiled);
  for (auto phase :
       {&TrainingRun::prepareData, &TrainingRun::restoreOrInitialize,
        &TrainingRun::agree, &TrainingRun::planSteps, &TrainingRun::runLoop,
        &TrainingRun::finish})
    if (llvm::Error e = (this->*phase)())
      return fail(std::move(e));
  return 0;
}

//===----------------------------------------------------------------------===//
// Phase 1: the data
//===----------------------------------------------------------------------===//

llvm::Error TrainingRun::prepareData() {
  const StepAbi &abi = compiled.abi;
  llvm::ArrayRef<TensorSpec> specs = compiled.step->getArgumentSpecs();
  const TensorSpec &inputSpec = specs[abi.input];
  batch = inputSpec.shape.empty() ? 0 : inputSpec.shape[0];
  for (int64_t d : llvm::drop_begin(inputSpec.shape))
    features *= d;
  const std::string &dataset = config.dataset;
  bool dataFile = dataset == "safetensors";
  if (abi.numInputs() != 1 && !dataFile)
    return error("the model takes " + llvm::Twine(abi.numInputs()) +
                 " inputs before its labels; " + config.tool +
                 "'s built-in data sets feed one (give them in a data file: "
                 "--dataset=safetensors --data-file=FILE)");
  for (unsigned k = 1; k < abi.numInputs(); ++k) {
    const TensorSpec &spec = specs[abi.input + k];
    if (spec.shape.empty() || spec.shape[0] != batch)
      return error("the model's input #" + llvm::Twine(k) + " is " +
                   spec.str() + ": every input's first dimension is the " +
                   "batch (" + llvm::Twine(batch) + ")");
    moreFeatures.push_back(spec.getNumElements() / batch);
  }
  const TensorSpec &labelSpec = specs[abi.labels];
  int64_t labelCount = labelSpec.getNumElements();
  if (batch < 1 || labelSpec.kind != ElementKind::I32 ||
      labelCount % batch != 0)
    return error("the model's first two arguments must be a batch of inputs "
                 "and its i32 labels (one per example, or one per input "
                 "position of a token model)");
  // Labels per example: 1 for a classifier, the window for a token model.
  targets = labelCount / batch;
  // A token model (--dataset=text) is evaluated by its validation loss;
  // a data file's token ids feed a classifier like any input.
  tokens = inputSpec.kind == ElementKind::I32 && !dataFile;
  if (dataset == "text" && (!tokens || targets != features))
    return error("--dataset=text feeds windows of token ids and their next "
                 "bytes: the model's input must be i32 [batch, window] and "
                 "its labels i32 [batch * window]; it has " +
                 inputSpec.str() + " and " + labelSpec.str());
  if (dataset != "text" && !dataFile && (tokens || targets != 1))
    return error("the model takes " + inputSpec.str() + " inputs and " +
                 labelSpec.str() + " labels" +
                 (tokens ? ", a token model: train it with --dataset=text "
                           "--data-file=FILE"
                         : ": more than one label per example") +
                 " (--dataset=" + dataset + " is images with one label each)");
  if (inputSpec.kind == ElementKind::I32 && !config.injectNonfinite.empty())
    return error("--inject-nonfinite puts a NaN into a float input; this "
                 "model's input is token ids");
  // The classes are the logits' last dimension (the cross-entropy's).
  llvm::ArrayRef<TensorSpec> logitSpecs = compiled.logits->getResultSpecs();
  classes = !logitSpecs.empty() && logitSpecs[0].shape.size() == 2
                ? logitSpecs[0].shape[1]
                : 0;
  if (llvm::Error e = loadData())
    return e;
  // A label the logits have no class for makes every loss NaN and every
  // step "skipped": say so before the first step. (Rows labelled with the
  // cross-entropy's ignore_index count for nothing.)
  std::optional<int64_t> ignore = compiled.abi.evalLoss.ignoreIndex;
  if (classes > 0) {
    for (const Dataset *d : {&trainSet, &testSet}) {
      std::optional<int32_t> lo, hi;
      for (int32_t label : d->labels) {
        if (ignore && label == *ignore)
          continue;
        lo = lo ? std::min(*lo, label) : label;
        hi = hi ? std::max(*hi, label) : label;
      }
      if (lo && (*lo < 0 || *hi >= classes))
        return error("the model has " + llvm::Twine(classes) +
                     " classes (its logits are " +
                     llvm::Twine(logitSpecs[0].shape[0]) + "x" +
                     llvm::Twine(classes) + "), the " +
                     (d == &trainSet ? "training" : "test") +
                     (tokens ? " bytes" : " labels") + " go " +
                     (*lo < 0 ? "from " + llvm::Twine(*lo) + " " : "") +
                     "up to " + llvm::Twine(*hi) +
                     ": give the model's last layer one output per class");
    }
  }
  return llvm::Error::success();
}

llvm::Error TrainingRun::loadData() {
  if (config.dataset == "text") {
    auto text = loadTextDataset(config.dataFile, features);
    if (!text)
      return text.takeError();
    trainSet = std::move(text->train);
    testSet = std::move(text->validation);
    unigramLoss = text->unigramLoss;
    llvm::outs() << config.tool << ": " << config.dataFile << ": "
                 << text->bytes << " bytes, " << trainSet.count
                 << " training and " << testSet.count << " validation windows "
                 << "of " << features << " (unigram baseline "
                 << llvm::format("%.4f", unigramLoss) << " nats/byte)\n";
  } else if (config.dataset == "safetensors") {
    const StepAbi &abi = compiled.abi;
    std::vector<std::string> names;
    std::vector<int64_t> perExample = {features};
    perExample.insert(perExample.end(), moreFeatures.begin(),
                      moreFeatures.end());
    for (unsigned k = 0; k < abi.numInputs(); ++k)
      names.push_back(abi.inputName(k));
    auto split = loadSafetensorsDataset(config.dataFile, names, perExample,
                                        targets, config.valFraction);
    if (!split)
      return split.takeError();
    trainSet = std::move(split->train);
    testSet = std::move(split->validation);
    llvm::outs() << config.tool << ": " << config.dataFile << ": "
                 << trainSet.count << " training and " << testSet.count
                 << " held-out examples of " << llvm::join(names, ", ")
                 << " and labels\n";
  } else if (config.dataset == "synthetic") {
    // Labelled by a random teacher over the model's classes.
    int32_t synthetic = classes >= 2 ? int32_t(classes) : 10;
    trainSet = makeSyntheticDataset(batch * 16, features, synthetic,
                                    config.seed + 1, true);
    testSet = makeSyntheticDataset(batch * 4, features, synthetic,
                                   config.seed + 1, false);
  } else {
    auto tr = loadFashionMnist(config.dataDir, true);
    if (!tr)
      return tr.takeError();
    auto te = loadFashionMnist(config.dataDir, false);
    if (!te)
      return te.takeError();
    trainSet = std::move(*tr);
    testSet = std::move(*te);
  }
  auto limit = [](Dataset &d, int64_t n) {
    if (n <= 0 || n >= d.count)
      return;
    d.count = n;
    d.images.resize(n * d.features);
    d.labels.resize(n * d.targets);
    for (auto [values, perExample] : llvm::zip(d.moreInputs, d.moreFeatures))
      values.resize(n * perExample);
  };
  limit(trainSet, config.trainExamples);
  limit(testSet, config.testExamples);
  if (trainSet.features != features)
    return error("the model takes " + llvm::Twine(features) +
                 " features per example, the data has " +
                 llvm::Twine(trainSet.features));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Phase 2: restore or initialize the state
//===----------------------------------------------------------------------===//

llvm::Error TrainingRun::restoreOrInitialize() {
  // State, initialised from the attributes.
  auto initial = initialArguments(compiled, config.seed);
  if (!initial)
    return initial.takeError();
  args = std::move(*initial);
  // Data parallelism: this process's rank of `ranks`.
  communicator = config.communicator;
  ranks = communicator ? communicator->size() : 1;
  rank = communicator ? communicator->rank() : 0;
  if (!config.loadPath.empty())
    if (llvm::Error e = restoreFrom(config.loadPath))
      return e;
  if (!config.initFromPath.empty())
    if (llvm::Error e = initializeFromFile())
      return e;
  // A network whose every parameter starts at zero cannot learn (each layer's
  // units stay identical): what amp.to_mlir writes for a PyTorch model, whose
  // weights live in PyTorch. Refused unless its values come from a file.
  if (config.loadPath.empty() && config.initFromPath.empty())
    if (llvm::Error e = checkNotAllZero(compiled, config.model))
      return e;
  return llvm::Error::success();
}

/// Resume: every persistent tensor must be there with its type and shape,
/// and the run must be the same configuration.
llvm::Error TrainingRun::restoreFrom(llvm::StringRef path) {
  const StepAbi &abi = compiled.abi;
  std::string loadPath = path.str();
  auto checkpoint = loadSafetensors(loadPath);
  if (!checkpoint)
    return checkpoint.takeError();
  for (const char *key : kConfigKeys) {
    auto it = checkpoint->metadata.find(key);
    if (it == checkpoint->metadata.end() || it->second != configValue(key))
      return error(
          loadPath + ": written with " + key + " = '" +
          (it == checkpoint->metadata.end() ? std::string("?") : it->second) +
          "', this run has '" + configValue(key) + "'");
  }
  for (auto &[name, index] : abi.persistent) {
    const HostTensor *t = checkpoint->find(name);
    if (!t)
      return error(loadPath + ": no tensor '" + name + "' (expected " +
                   args[index].typeString() + ")");
    if (t->getKind() != args[index].getKind() ||
        t->getShape() != args[index].getShape())
      return error(loadPath + ": tensor '" + name + "' is " + t->typeString() +
                   ", the model needs " + args[index].typeString());
    args[index] = *t;
  }
  if (checkpoint->tensors.size() != abi.persistent.size())
    return error(
        loadPath + ": holds " + llvm::Twine(checkpoint->tensors.size()) +
        " tensors, the model's step has " + llvm::Twine(abi.persistent.size()));
  auto it = checkpoint->metadata.find("step");
  if (it == checkpoint->metadata.end() ||
      llvm::StringRef(it->second).getAsInteger(10, startStep) || startStep < 0)
    return error(loadPath + ": no valid 'step' in its metadata");
  return llvm::Error::success();
}

/// --init-from: parameters and batch-norm state of any checkpoint of the
/// model.
llvm::Error TrainingRun::initializeFromFile() {
  auto checkpoint =
      loadSafetensors(config.initFromPath, /*skipUnsupported=*/true);
  if (!checkpoint)
    return checkpoint.takeError();
  if (llvm::Error e =
          initializeFrom(compiled.abi, args, *checkpoint, config.initFromPath))
    return e;
  auto written = [&](llvm::StringRef key) {
    auto it = checkpoint->metadata.find(key.str());
    return it == checkpoint->metadata.end() ? std::string("?") : it->second;
  };
  llvm::outs() << config.tool << ": parameters and batch-norm state from "
               << config.initFromPath;
  // A checkpoint of amp's says what wrote it; a plain state_dict
  // (safetensors.torch.save_file) says nothing.
  if (checkpoint->metadata.count("step"))
    llvm::outs() << " (" << written("opt_level") << " " << written("dtype")
                 << " " << written("optimizer") << ", step " << written("step")
                 << ")";
  llvm::outs() << "\n";
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Phase 3: agree across ranks; the state moves to where the step runs
//===----------------------------------------------------------------------===//

llvm::Error TrainingRun::agree() {
  if (communicator && ranks > 1)
    if (llvm::Error e = compareFingerprints())
      return e;
  // The arguments move to where the step runs (device memory for CUDA).
  auto opened = openStepSession(compiled, std::move(args));
  if (!opened)
    return opened.takeError();
  session = std::move(*opened);
  args.clear();
  // Every rank starts from rank 0's state (the same seed gives the same
  // initial values; a checkpoint each rank read may not).
  if (communicator && ranks > 1)
    if (llvm::Error e =
            broadcastPersistent(*session, compiled.abi, *communicator))
      return error("broadcasting the initial state from rank 0: " +
                   llvm::toString(std::move(e)));
  if (hasScaler()) {
    auto scale = session->get(compiled.abi.scaler[0]);
    if (!scale)
      return scale.takeError();
    finalScale = scale->getAsDouble(0);
  }
  return llvm::Error::success();
}

/// Every rank must run the same step on the same schedule: a fingerprint of
/// the step's signature, its compile settings and the run's settings,
/// compared with rank 0's before anything else goes between them (a rank
/// with another step would otherwise hang or corrupt the others).
llvm::Error TrainingRun::compareFingerprints() {
  std::string text = config.compileSettings;
  for (const TensorSpec &t : compiled.step->getArgumentSpecs())
    text += " " + t.str();
  text += " ->";
  for (const TensorSpec &t : compiled.step->getResultSpecs())
    text += " " + t.str();
  llvm::raw_string_ostream os(text);
  os << " " << config.optLevel << " " << config.dtype << " " << config.optimizer
     << " " << config.learningRate << " " << config.lrSchedule << " "
     << config.warmupSteps << " " << config.dataset << " " << config.seed << " "
     << config.shuffle << " " << config.steps << " " << config.epochs << " "
     << config.trainExamples << " " << config.loadPath << " "
     << config.initFromPath << " " << config.dataFile << " "
     << config.valFraction;
  uint64_t mine = llvm::xxh3_64bits(text), rankZero = mine;
  std::string e = communicator->broadcast(&rankZero, sizeof(rankZero), 0);
  // Every rank learns whether any differs, so all stop together.
  float differs = mine != rankZero, anyDiffers = 0;
  if (e.empty())
    e = communicator->allReduce(&differs, &anyDiffers, 1, RuntimeDType::F32,
                                CollectiveOp::Max);
  if (!e.empty())
    return error("comparing the ranks' steps: " + e);
  if (differs)
    return error("rank " + llvm::Twine(rank) +
                 "'s step or run settings differ from rank 0's (fingerprint " +
                 llvm::utohexstr(mine) + " against " +
                 llvm::utohexstr(rankZero) +
                 "): start every rank with the same model and flags");
  if (anyDiffers)
    return error("another rank's step or run settings differ from this "
                 "one's (rank " +
                 llvm::Twine(rank) +
                 "): start every rank with the same model and flags");
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Phase 4: the loop
//===----------------------------------------------------------------------===//

/// The steps of an epoch and of the run, the data order, the banner.
llvm::Error TrainingRun::planSteps() {
  // Data parallelism: rank r of N takes the r-th batch of each global batch
  // of N x batch examples of the (same) seeded order.
  stepsPerEpoch = trainSet.count / (batch * ranks);
  if (ranks > 1 && stepsPerEpoch < 1)
    return error("the training set (" + llvm::Twine(trainSet.count) +
                 " examples) is smaller than one global batch (" +
                 llvm::Twine(ranks) + " ranks x " + llvm::Twine(batch) + ")");
  if (stepsPerEpoch < 1)
    return error("the training set is smaller than one batch");
  totalSteps = config.steps >= 0 ? config.steps : config.epochs * stepsPerEpoch;
  if (startStep > totalSteps)
    return error(config.loadPath + " is at step " + llvm::Twine(startStep) +
                 ", past the " + llvm::Twine(totalSteps) +
                 " steps of this run");
  order.resize(trainSet.count);
  std::iota(order.begin(), order.end(), 0);
  routes = stepResultRoutes(compiled);
  printBanner();
  // A resumed run replays the shuffles of the epochs begun before it.
  if (config.shuffle)
    for (int64_t e = 0; e < (startStep + stepsPerEpoch - 1) / stepsPerEpoch;
         ++e)
      std::shuffle(order.begin(), order.end(), shuffleRng);
  endStep = config.stopAt >= 0 ? std::min<int64_t>(config.stopAt, totalSteps)
                               : totalSteps;
  if (endStep < startStep)
    return error("--stop-at=" + llvm::Twine(int64_t(config.stopAt)) +
                 " is before the checkpoint's step " + llvm::Twine(startStep));
  // Data parallelism: each step under a deadline. A collective still
  // waiting at the deadline gives up, naming the ranks it waits for (the
  // communicator's heartbeats), and ends the job; the watchdog thread backs
  // it up a few seconds later for a step stuck anywhere else.
  deadlines = communicator && ranks > 1 && config.dpTimeout > 0;
  if (deadlines)
    watchdog = std::make_unique<StepWatchdog>(
        config.tool, rank, ranks, config.dpTimeout, kWatchdogBackstopSeconds);
  return llvm::Error::success();
}

/// What runs, how, and the memory it holds.
void TrainingRun::printBanner() const {
  llvm::outs() << config.tool << ": " << config.model << " at "
               << precisionLabel(config) << ", " << config.optimizer << " lr "
               << config.learningRate << " (" << config.lrSchedule << "), "
               << totalSteps << " steps of batch " << batch;
  if (config.compileSeconds > 0)
    llvm::outs() << ", compiled in "
                 << llvm::format("%.2f", config.compileSeconds) << " s";
  if (compiled.getCpuThreads) {
    int64_t threads = compiled.getCpuThreads();
    llvm::outs() << ", " << threads << (threads == 1 ? " thread" : " threads");
  }
  if (ranks > 1)
    llvm::outs() << " x " << ranks << " ranks (global batch " << ranks * batch
                 << ")";
  llvm::outs() << "\n";
  StateMemory state = getStateMemory(compiled);
  llvm::outs() << config.tool << ": state "
               << llvm::format("%.1f", state.bytes / 1048576.0) << " MiB ("
               << (hasScaler() ? "parameters, optimizer state and loss scale"
                               : "parameters and optimizer state")
               << "), ";
  if (state.doubleBuffered == 0)
    llvm::outs() << "updated in place\n";
  else
    llvm::outs() << llvm::format("%.1f", state.doubleBuffered / 1048576.0)
                 << " MiB of it in a second buffer (not updated in place)\n";
  if (const MemoryPlan &plan = compiled.step->getMemoryPlan(); !plan.empty())
    llvm::outs() << config.tool << ": memory plan of the step: " << plan.str()
                 << "\n";
}

llvm::Error TrainingRun::runLoop() {
  for (int64_t s = startStep; s < endStep; ++s)
    if (llvm::Error e = runStep(s))
      return e;
  return llvm::Error::success();
}

/// Rank `rank`'s batch of step `s` and the step's learning rate, in the
/// step's arguments.
llvm::Error TrainingRun::setBatch(int64_t s, int64_t inEpoch,
                                  std::chrono::steady_clock::time_point &t0) {
  const StepAbi &abi = compiled.abi;
  llvm::ArrayRef<TensorSpec> specs = compiled.step->getArgumentSpecs();
  std::vector<float> x(batch * features);
  std::vector<int32_t> y(batch * targets);
  std::vector<std::vector<float>> more;
  for (int64_t perExample : moreFeatures)
    more.emplace_back(batch * perExample);
  for (int64_t r = 0; r < batch; ++r) {
    int64_t e = order[(inEpoch * ranks + rank) * batch + r];
    std::copy_n(trainSet.images.begin() + e * features, features,
                x.begin() + r * features);
    std::copy_n(trainSet.labels.begin() + e * targets, targets,
                y.begin() + r * targets);
    for (size_t k = 0; k < more.size(); ++k)
      std::copy_n(trainSet.moreInputs[k].begin() + e * moreFeatures[k],
                  moreFeatures[k], more[k].begin() + r * moreFeatures[k]);
  }
  if (llvm::is_contained(config.injectNonfinite, s) &&
      (config.injectRank < 0 || config.injectRank == rank))
    x[0] = std::nanf("");
  // The step's time starts here: setting its arguments, not assembling them.
  t0 = std::chrono::steady_clock::now();
  // The batch and learning rate, in argument order.
  llvm::Error setError =
      session->set(abi.input, inputTensor(specs[abi.input], x));
  for (size_t k = 0; k < more.size() && !setError; ++k)
    setError = session->set(abi.input + 1 + k,
                            inputTensor(specs[abi.input + 1 + k], more[k]));
  if (!setError)
    setError = session->set(abi.labels,
                            HostTensor::fromInts(specs[abi.labels].shape, y));
  if (!setError)
    setError = session->set(
        *abi.lr,
        learningRateArgument(specs[*abi.lr],
                             float(scheduledRate(config, s, totalSteps))));
  if (setError)
    return error("step " + llvm::Twine(s) + ": " +
                 llvm::toString(std::move(setError)));
  return llvm::Error::success();
}

llvm::Error TrainingRun::runStep(int64_t s) {
  const StepAbi &abi = compiled.abi;
  int64_t inEpoch = s % stepsPerEpoch;
  if (inEpoch == 0 && config.shuffle)
    std::shuffle(order.begin(), order.end(), shuffleRng);
  std::chrono::steady_clock::time_point t0;
  if (llvm::Error e = setBatch(s, inEpoch, t0))
    return e;
  std::optional<ScopedDeadline> deadline;
  if (deadlines) {
    deadline.emplace(communicator, config.dpTimeout,
                     llvm::formatv("step {0} (--dp-timeout={1})", s,
                                   llvm::format("%g", config.dpTimeout)));
    watchdog->arm(s);
  }
  auto out = session->step(routes);
  if (deadlines) {
    watchdog->disarm();
    deadline.reset();
  }
  stepTimes.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count());
  if (!out)
    return error("step " + llvm::Twine(s) + ": " +
                 llvm::toString(out.takeError()));
  if (ranks > 1 && (config.checkReplicas || s + 1 == endStep))
    if (llvm::Error e = checkReplicas(s))
      return e;
  StepScalars scalars = readStepScalars(abi, *out);
  StepOutcome outcome;
  outcome.step = s;
  outcome.inEpoch = inEpoch;
  outcome.loss = scalars.loss;
  outcome.scale = scalars.scale;
  outcome.skipped = scalars.skipped;
  outcome.source = describeNonfinite(abi, compiled.step->getArgumentSpecs(),
                                     scalars.nonfinite);
  // check-numerics: where the first inf or NaN of the step was born.
  if (!abi.numerics.empty())
    if ((outcome.numerics = findNumericsOrigin(abi, scalars.magnitudes)))
      outcome.numerics->step = s;
  if (hasScaler())
    finalScale = outcome.scale;
  if (llvm::Error e = reportStep(outcome, scalars.collapsed))
    return e;
  for (auto &observer : observers)
    observer->onStep(*this, outcome);
  if (inEpoch + 1 == stepsPerEpoch || s + 1 == endStep)
    return endEpoch(s, inEpoch);
  return llvm::Error::success();
}

/// What a step's outcome says beyond its loss: where an inf or NaN came
/// from, skips in a row, a collapsed scale; an error where the run must
/// stop.
llvm::Error TrainingRun::reportStep(const StepOutcome &outcome,
                                    bool collapsed) {
  int64_t s = outcome.step;
  skipped += outcome.skipped;
  consecutiveSkips = outcome.skipped ? consecutiveSkips + 1 : 0;
  const std::optional<NonfiniteSource> &source = outcome.source;
  if (source)
    forwardNonfinite += source->forward;
  if (outcome.numerics && numericsReports++ < kPrintedNumericsReports) {
    llvm::outs().flush();
    llvm::errs() << config.tool << ": " << outcome.numerics->describe() << "\n";
    if (numericsReports == kPrintedNumericsReports)
      llvm::errs() << config.tool
                   << ": (further reports only in the metrics)\n";
  }
  // What the last skip saw first (a streak of skips ends on a step that
  // updates).
  if (outcome.skipped)
    lastSource = source;
  else
    lastSource.reset();
  if (source && source->forward) {
    llvm::outs().flush();
    llvm::errs() << config.tool << ": step " << s << ": the forward made "
                 << source->what << " inf or NaN; ";
    if (outcome.skipped)
      llvm::errs() << "the update is skipped"
                   << (source->hasRunningStatistics
                           ? " and the running statistics keep their values"
                           : "");
    else
      llvm::errs() << (source->hasRunningStatistics
                           ? "the running statistics keep their values, "
                           : "")
                   << "the update is applied (its gradients are finite)";
    llvm::errs() << "\n";
  }
  if (!outcome.skipped) {
    epochLoss += outcome.loss;
    ++epochSteps;
  }
  if (collapsed)
    return error("loss scale collapsed at step " + llvm::Twine(s) +
                 ": the gradients are non-finite at every scale (NaN in the "
                 "model or data?)");
  // Whatever a skip reports: the first non-finite value of the last one.
  std::string why = lastSource
                        ? "; the first non-finite value: " + lastSource->what +
                              ", in the " +
                              (lastSource->forward ? "forward" : "backward")
                        : "";
  if (consecutiveSkips >= config.maxConsecutiveSkips)
    return error(llvm::Twine(consecutiveSkips) +
                 " steps in a row were skipped for non-finite values "
                 "(last at step " +
                 llvm::Twine(s) + ", loss scale " +
                 llvm::formatv("{0}", outcome.scale).str() + why +
                 "); stopping (--max-consecutive-skips)");
  if (config.warnConsecutiveSkips > 0 &&
      consecutiveSkips == config.warnConsecutiveSkips) {
    llvm::outs().flush();
    llvm::errs() << config.tool << ": warning: " << consecutiveSkips
                 << " steps in a row were skipped (last at step " << s
                 << ", loss scale " << llvm::formatv("{0}", outcome.scale)
                 << why << ")\n";
  }
  if (!outcome.skipped && !std::isfinite(outcome.loss) &&
      !compiled.abi.hasLossScaling())
    return error("the loss is not finite at step " + llvm::Twine(s));
  return llvm::Error::success();
}

/// The end of an epoch (or of the run inside one): the evaluation, what
/// the observers report of it.
llvm::Error TrainingRun::endEpoch(int64_t s, int64_t inEpoch) {
  if (llvm::Error e = syncRunningStatistics())
    return e;
  auto score = evaluate();
  if (!score)
    return score.takeError();
  accuracy = score->accuracy;
  testLoss = score->loss;
  EpochOutcome epoch;
  epoch.epoch = s / stepsPerEpoch + 1;
  epoch.partialSteps = inEpoch + 1 < stepsPerEpoch ? inEpoch + 1 : 0;
  epoch.trainLoss = epochSteps ? epochLoss / epochSteps : NAN;
  epoch.accuracy = accuracy;
  epoch.testLoss = testLoss;
  for (auto &observer : observers)
    observer->onEpoch(*this, epoch);
  epochLoss = 0;
  epochSteps = 0;
  return llvm::Error::success();
}

/// Evaluation over the whole test (validation) set, the last batch padded:
/// the accuracy of the argmax and the mean cross-entropy of the labels, from
/// the model's logits function (its inputs and labels in the step's
/// argument order), scored as the model's cross-entropy scores: rows
/// labelled its ignore_index count for nothing, its label smoothing mixes
/// in the mean over the classes.
llvm::Expected<TrainingRun::Score> TrainingRun::evaluate() {
  llvm::ArrayRef<TensorSpec> evalSpecs = compiled.logits->getArgumentSpecs();
  const StepAbi &abi = compiled.abi;
  std::optional<int64_t> ignore = abi.evalLoss.ignoreIndex;
  // A token model's validation loss is in nats per byte, against the
  // unigram baseline: without the smoothing term.
  double smoothing = tokens ? 0.0 : abi.evalLoss.labelSmoothing;
  int64_t correct = 0, scored = 0;
  double lossSum = 0;
  for (int64_t start = 0; start < testSet.count; start += batch) {
    int64_t n = std::min(batch, testSet.count - start);
    std::vector<float> x(batch * features, 0.0f);
    std::copy_n(testSet.images.begin() + start * features, n * features,
                x.begin());
    if (llvm::Error e = session->set(abi.input, inputTensor(evalSpecs[0], x)))
      return std::move(e);
    for (size_t k = 0; k < moreFeatures.size(); ++k) {
      std::vector<float> values(batch * moreFeatures[k], 0.0f);
      std::copy_n(testSet.moreInputs[k].begin() + start * moreFeatures[k],
                  n * moreFeatures[k], values.begin());
      if (llvm::Error e = session->set(abi.input + 1 + k,
                                       inputTensor(evalSpecs[1 + k], values)))
        return std::move(e);
    }
    if (llvm::Error e =
            session->set(abi.labels, HostTensor(ElementKind::I32,
                                                evalSpecs[abi.labels].shape)))
      return std::move(e);
    auto out = session->logits();
    if (!out)
      return out.takeError();
    std::vector<float> logits = (*out)[0].toFloats();
    int64_t width = int64_t(logits.size()) / (batch * targets);
    for (int64_t r = 0; r < n * targets; ++r) {
      auto row = logits.begin() + r * width;
      auto top = std::max_element(row, row + width);
      int32_t label = testSet.labels[start * targets + r];
      if (ignore && label == *ignore)
        continue;
      ++scored;
      correct += top - row == label;
      double sum = 0, mean = 0;
      for (int64_t c = 0; c < width; ++c) {
        sum += std::exp(double(row[c]) - double(*top));
        mean += double(row[c]) / double(width);
      }
      double logSumExp = double(*top) + std::log(sum);
      // -log p[label], and with smoothing e: (1 - e) of it + e * mean_c
      // -log p[c] (PyTorch's F.cross_entropy(label_smoothing=e)).
      lossSum += (1.0 - smoothing) * (logSumExp - double(row[label])) +
                 smoothing * (logSumExp - mean);
    }
  }
  // Every row ignored: NaN, as the cross-entropy's mean.
  double rows = double(scored);
  return Score{double(correct) / rows, lossSum / rows};
}

//===----------------------------------------------------------------------===//
// Phase 5: finish
//===----------------------------------------------------------------------===//

llvm::Error TrainingRun::finish() {
  if (llvm::Error e = syncRunningStatistics())
    return e;
  for (auto &observer : observers)
    if (llvm::Error e = observer->onTrained(*this))
      return e;
  if (endStep == startStep) {
    auto score = evaluate();
    if (!score)
      return score.takeError();
    accuracy = score->accuracy;
    testLoss = score->loss;
  }
  for (auto &observer : observers)
    if (llvm::Error e = observer->onFinish(*this))
      return e;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//

/// Batch norm's running statistics are each rank's own (DDP's default; with
/// SyncBatchNorm they agree up to the order of MPI's sums): rank 0's go to
/// every rank before an evaluation or a checkpoint, so that all evaluate and
/// save the same model.
llvm::Error TrainingRun::syncRunningStatistics() {
  if (!communicator || ranks < 2)
    return llvm::Error::success();
  for (auto &[name, index] : compiled.abi.persistent) {
    if (!llvm::StringRef(name).starts_with("state."))
      continue;
    auto value = session->get(index);
    if (!value)
      return value.takeError();
    if (std::string e = communicator->broadcast(
            value->data(), int64_t(value->getSizeInBytes()), 0);
        !e.empty())
      return llvm::createStringError("broadcasting " + name +
                                     " from rank 0: " + e);
    if (llvm::Error e = session->set(index, std::move(*value)))
      return e;
  }
  return llvm::Error::success();
}

/// Replicas: a hash of the parameters, optimizer and scaler state, compared
/// with rank 0's.
llvm::Error TrainingRun::checkReplicas(int64_t done) {
  uint64_t hash = 0;
  for (auto &[name, index] : compiled.abi.persistent) {
    if (llvm::StringRef(name).starts_with("state."))
      continue; // batch norm's running statistics: synchronized above
    auto value = session->get(index);
    if (!value)
      return value.takeError();
    uint64_t parts[2] = {hash, llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
                                   static_cast<const uint8_t *>(value->data()),
                                   value->getSizeInBytes()))};
    hash = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>(parts), sizeof(parts)));
  }
  uint64_t rankZero = hash;
  if (std::string e = communicator->broadcast(&rankZero, sizeof(rankZero), 0);
      !e.empty())
    return llvm::createStringError("comparing replicas: " + e);
  if (rankZero != hash)
    return llvm::createStringError(
        "replicas diverged: rank " + std::to_string(communicator->rank()) +
        "'s parameters and state differ from rank 0's after step " +
        std::to_string(done));
  return llvm::Error::success();
}

int amp::runTraining(const TrainingConfig &config,
                     const CompiledStep &compiled) {
  return TrainingRun(config, compiled).run();
}
