//===- TrainingRun.h - A training run in phases -----------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// What runTraining does (amp-run, amp-train, one rank of a data-parallel
// job), as a config plus small phases in the style of mlir-opt's
// MlirOptMain: prepare the data, restore or initialize the state, agree
// across ranks, run the loop (each step, each epoch's evaluation), finish.
// What reports on the loop is an observer: the progress lines, the metrics
// JSON, the plot, the checkpoint. No MLIR: amp-train links it.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_TRAINING_TRAININGRUN_H
#define AMP_TRAINING_TRAININGRUN_H

#include "amp/Training/Datasets.h"
#include "amp/Training/Trainer.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace amp {

class TrainingRun;
class StepWatchdog;

/// One step as the loop saw it.
struct StepOutcome {
  int64_t step = 0;
  /// The step's place in its epoch (0-based).
  int64_t inEpoch = 0;
  double loss = 0, scale = 1;
  bool skipped = false;
  /// What first held an inf or NaN, when something did.
  std::optional<NonfiniteSource> source;
  /// check-numerics: where the step's first inf or NaN was born.
  std::optional<NumericsReport> numerics;
};

/// The end of an epoch (or of the run inside one) and its evaluation.
struct EpochOutcome {
  int64_t epoch = 0;
  /// Steps of the epoch that ran when the run ends inside it; 0 for a
  /// whole epoch.
  int64_t partialSteps = 0;
  double trainLoss = NAN;
  double accuracy = -1, testLoss = NAN;
};

/// What reports on a run. Called in the order the run registered them.
class TrainingObserver {
public:
  virtual ~TrainingObserver() = default;
  /// After each step.
  virtual void onStep(const TrainingRun &run, const StepOutcome &step) {}
  /// After each epoch's evaluation.
  virtual void onEpoch(const TrainingRun &run, const EpochOutcome &epoch) {}
  /// After the last step, before the final evaluation (the checkpoint).
  virtual llvm::Error onTrained(const TrainingRun &run) {
    return llvm::Error::success();
  }
  /// At the end, after the final evaluation (summary, plot, metrics).
  virtual llvm::Error onFinish(const TrainingRun &run) {
    return llvm::Error::success();
  }
};

/// One training run of a compiled step.
class TrainingRun {
public:
  TrainingRun(const TrainingConfig &config, const CompiledStep &compiled);
  ~TrainingRun();

  /// Runs every phase; the exit status (errors printed as
  /// "<tool>: error: ..." on stderr, 1).
  int run();

  // What observers read.
  const TrainingConfig &getConfig() const { return config; }
  const CompiledStep &getCompiled() const { return compiled; }
  StepSession &getSession() const { return *session; }
  int64_t getBatch() const { return batch; }
  int64_t getRanks() const { return ranks; }
  int64_t getStepsPerEpoch() const { return stepsPerEpoch; }
  int64_t getTotalSteps() const { return totalSteps; }
  /// The step the run stops before (--stop-at, or the total).
  int64_t getEndStep() const { return endStep; }
  bool hasScaler() const { return compiled.abi.scaler.size() == 2; }
  /// A token model (text windows): the evaluation is a validation loss.
  bool isTokenModel() const { return tokens; }
  double getUnigramLoss() const { return unigramLoss; }
  double getFinalScale() const { return finalScale; }
  double getAccuracy() const { return accuracy; }
  double getTestLoss() const { return testLoss; }
  int64_t getSkippedSteps() const { return skipped; }
  int64_t getForwardNonfiniteSteps() const { return forwardNonfinite; }
  double getMedianStepMs() const;
  /// The checkpoint metadata that must match on --load.
  std::string configValue(llvm::StringRef key) const;

private:
  /// The evaluation's accuracy and mean cross-entropy.
  struct Score {
    double accuracy = -1, loss = NAN;
  };

  // Phases.
  llvm::Error prepareData();
  llvm::Error loadData();
  llvm::Error restoreOrInitialize();
  llvm::Error restoreFrom(llvm::StringRef path);
  llvm::Error initializeFromFile();
  llvm::Error agree();
  llvm::Error compareFingerprints();
  llvm::Error planSteps();
  void printBanner() const;
  llvm::Error runLoop();
  llvm::Error runStep(int64_t s);
  llvm::Error setBatch(int64_t s, int64_t inEpoch,
                       std::chrono::steady_clock::time_point &t0);
  llvm::Error reportStep(const StepOutcome &outcome, bool collapsed);
  llvm::Error endEpoch(int64_t s, int64_t inEpoch);
  llvm::Expected<Score> evaluate();
  llvm::Error finish();

  // Data parallelism.
  llvm::Error syncRunningStatistics();
  llvm::Error checkReplicas(int64_t done);

  const TrainingConfig &config;
  const CompiledStep &compiled;
  std::vector<std::unique_ptr<TrainingObserver>> observers;

  // Data.
  int64_t batch = 0, features = 1, targets = 1, classes = 0;
  /// Values per example of inputs 1.. of a model of several inputs.
  std::vector<int64_t> moreFeatures;
  bool tokens = false;
  Dataset trainSet, testSet;
  double unigramLoss = 0.0;

  // State.
  std::vector<HostTensor> args;
  Communicator *communicator = nullptr;
  int64_t ranks = 1, rank = 0;
  int64_t startStep = 0;
  std::unique_ptr<StepSession> session;

  // The loop.
  int64_t stepsPerEpoch = 0, totalSteps = 0, endStep = 0;
  std::vector<int64_t> order;
  std::mt19937_64 shuffleRng;
  std::vector<ResultRoute> routes;
  std::vector<double> stepTimes;
  /// Data parallelism: each step under a deadline, backed by a watchdog.
  bool deadlines = false;
  std::unique_ptr<StepWatchdog> watchdog;
  int64_t skipped = 0, consecutiveSkips = 0, forwardNonfinite = 0;
  std::optional<NonfiniteSource> lastSource;
  int64_t numericsReports = 0;
  double epochLoss = 0;
  int64_t epochSteps = 0;
  double finalScale = 1.0, accuracy = -1, testLoss = NAN;
};

} // namespace amp

#endif // AMP_TRAINING_TRAININGRUN_H
