//===- TrainingFlags.cpp - Command-line flags of a training run -----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/TrainingFlags.h"

#include "amp/Training/MpiJob.h"

#include <cstdio>

#include <fcntl.h>
#include <unistd.h>

using namespace amp;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &amp::getTrainingFlagsCategory() {
  static cl::OptionCategory category("training options");
  return category;
}

namespace {

cl::OptionCategory &trainingCategory = getTrainingFlagsCategory();

cl::opt<double> learningRate("lr",
                             cl::desc("Peak learning rate (default: 0.001)"),
                             cl::init(1e-3), cl::cat(trainingCategory));
cl::opt<std::string>
    lrSchedule("lr-schedule",
               cl::desc("constant, cosine or step (default: constant)"),
               cl::init("constant"), cl::cat(trainingCategory));
cl::opt<int64_t> warmupSteps("warmup-steps",
                             cl::desc("Linear warm-up steps (default: 0)"),
                             cl::init(0), cl::cat(trainingCategory));
cl::opt<std::string>
    dataset("dataset",
            cl::desc("fashion-mnist, synthetic, text (next-byte "
                     "prediction on --data-file; its last 10% held out for "
                     "a validation loss) or safetensors (--data-file holds "
                     "one tensor per model input, named as its argument, "
                     "and `labels`; --val-fraction of it held out) "
                     "(default: fashion-mnist)"),
            cl::init("fashion-mnist"), cl::cat(trainingCategory));
cl::opt<std::string>
    dataDir("data-dir",
            cl::desc("Directory of the IDX .gz files (default: "
                     "/usr/share/datasets/fashion-mnist)"),
            cl::init("/usr/share/datasets/fashion-mnist"),
            cl::cat(trainingCategory));
cl::opt<std::string> dataFile(
    "data-file",
    cl::desc("--dataset=text: a text file, or a directory of them (e.g. "
             "/usr/share/games/fortunes, Debian's fortunes package); "
             "--dataset=safetensors: the data file"),
    cl::init(""), cl::cat(trainingCategory));
cl::opt<double> valFraction(
    "val-fraction",
    cl::desc("--dataset=safetensors: the fraction of the examples, at the "
             "file's tail, held out for evaluation (default: 0.1)"),
    cl::init(0.1), cl::cat(trainingCategory));
cl::opt<int64_t> epochs("epochs",
                        cl::desc("Passes over the training set (default: 1)"),
                        cl::init(1), cl::cat(trainingCategory));
cl::opt<int64_t>
    steps("steps",
          cl::desc("Train this many steps instead (-1: epochs) (default: -1)"),
          cl::init(-1), cl::cat(trainingCategory));
cl::opt<uint64_t> seed(
    "seed",
    cl::desc(
        "Seed of initialisation, shuffling and dropout masks (default: 0)"),
    cl::init(0), cl::cat(trainingCategory));
cl::opt<bool>
    shuffle("shuffle",
            cl::desc("Shuffle the batches each epoch (default: true)"),
            cl::init(true), cl::cat(trainingCategory));
cl::opt<std::string>
    metricsPath("metrics",
                cl::desc("Write metrics JSON to this file (default: none)"),
                cl::init(""), cl::cat(trainingCategory));
cl::opt<std::string> savePath(
    "save",
    cl::desc(
        "Write the training state (safetensors) at the end (default: none)"),
    cl::init(""), cl::cat(trainingCategory));
cl::opt<std::string>
    loadPath("load",
             cl::desc("Resume from a checkpoint of --save (default: none)"),
             cl::init(""), cl::cat(trainingCategory));
cl::opt<std::string> initFromPath(
    "init-from",
    cl::desc("Start from the parameters and batch-norm state of this amp "
             "checkpoint, written by a run of any opt level, dtype or "
             "optimizer (a new run: fresh optimizer and loss scale, step 0) "
             "(default: none)"),
    cl::init(""), cl::cat(trainingCategory));
cl::opt<int64_t> trainExamples(
    "train-examples",
    cl::desc("Use only the first N training examples (0: all) (default: 0)"),
    cl::init(0), cl::cat(trainingCategory));
cl::opt<int64_t> testExamples(
    "test-examples",
    cl::desc("Evaluate on the first N test examples (0: all) (default: 0)"),
    cl::init(0), cl::cat(trainingCategory));
cl::opt<std::string> plotPath(
    "plot",
    cl::desc("Draw the loss (and loss scale) per step as SVG (default: none)"),
    cl::init(""), cl::cat(trainingCategory));
cl::opt<int64_t> stopAt(
    "stop-at",
    cl::desc("Stop (and --save) after this many steps of the run, keeping "
             "the schedule of the whole run; resume with --load"),
    cl::init(-1), cl::cat(trainingCategory));
cl::list<int64_t>
    injectNonfinite("inject-nonfinite",
                    cl::desc("Steps whose batch gets a NaN (testing)"),
                    cl::CommaSeparated, cl::cat(trainingCategory));
cl::opt<int64_t>
    maxConsecutiveSkips("max-consecutive-skips",
                        cl::desc("Stop with an error after this many skipped "
                                 "steps in a row (default: 20)"),
                        cl::init(20), cl::cat(trainingCategory));
cl::opt<int64_t> warnConsecutiveSkips(
    "warn-consecutive-skips",
    cl::desc("Warn when this many steps in a row were skipped, naming the "
             "first non-finite value (default: 5; 0: never)"),
    cl::init(5), cl::cat(trainingCategory));
/// --threads. libLLVM registers an int option of this name (ThinLTO's code
/// generator's thread count, which amp's tools never run); where it is
/// registered, amp adopts it (describes it and puts it in this category),
/// else defines it.
cl::opt<int> &threadsOption() {
  static cl::opt<int> *option = []() {
    auto options = cl::getRegisteredOptions();
    auto found = options.find("threads");
    auto *opt = found != options.end()
                    ? static_cast<cl::opt<int> *>(found->second)
                    : new cl::opt<int>("threads", cl::init(0));
    opt->setDescription("Threads of a CPU step: its loops, copies and BLAS "
                        "(0: the cores available to the process, or "
                        "OMP_NUM_THREADS) (default: 0)");
    opt->addCategory(trainingCategory);
    return opt;
  }();
  return *option;
}
// Registered (or adopted) before the command line is parsed.
[[maybe_unused]] cl::opt<int> &threads = threadsOption();
cl::opt<int64_t>
    logEvery("log-every",
             cl::desc("Print the loss every N steps (default: 100)"),
             cl::init(100), cl::cat(trainingCategory));

cl::opt<int64_t> benchSteps(
    "bench-steps",
    cl::desc("Benchmark: time this many steps on one fixed random batch "
             "instead of training (0: train) (default: 0)"),
    cl::init(0), cl::cat(trainingCategory));
cl::opt<int64_t>
    benchWarmup("bench-warmup",
                cl::desc("Benchmark: untimed steps first (default: 5)"),
                cl::init(5), cl::cat(trainingCategory));

cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("Train as one rank of an mpirun job: each rank takes its shard "
             "of every global batch, gradients are summed across ranks "
             "inside the step (compiled for mpirun's number of processes: "
             "amp-run does it, amp-train needs an artifact of amp-compile "
             "--ranks=N), and rank 0 alone prints and writes files "
             "(docs/Distributed.md)"),
    cl::init(false), cl::cat(trainingCategory));
cl::opt<bool> dpCheckReplicas(
    "dp-check-replicas",
    cl::desc("--data-parallel: compare every rank's parameters and state "
             "with rank 0's after every step, not only after the last"),
    cl::init(false), cl::cat(trainingCategory));
cl::opt<double> dpTimeout(
    "dp-timeout",
    cl::desc("--data-parallel: seconds one step may take before the rank "
             "ends the job, naming the step (a rank that stopped or hung "
             "leaves the others waiting in a collective; 0: no deadline)"),
    cl::init(300.0), cl::cat(trainingCategory));
cl::opt<int64_t> injectRank(
    "inject-rank",
    cl::desc("--data-parallel: --inject-nonfinite on this rank only (-1: "
             "every rank)"),
    cl::init(-1), cl::cat(trainingCategory));

} // namespace

TrainingConfig amp::readTrainingFlags(llvm::StringRef tool) {
  TrainingConfig config;
  config.tool = tool.str();
  config.learningRate = learningRate;
  config.lrSchedule = lrSchedule;
  config.warmupSteps = warmupSteps;
  config.dataset = dataset;
  config.dataDir = dataDir;
  config.dataFile = dataFile;
  config.valFraction = valFraction;
  config.epochs = epochs;
  config.steps = steps;
  config.seed = seed;
  config.shuffle = shuffle;
  config.metricsPath = metricsPath;
  config.savePath = savePath;
  config.loadPath = loadPath;
  config.initFromPath = initFromPath;
  config.plotPath = plotPath;
  config.trainExamples = trainExamples;
  config.testExamples = testExamples;
  config.stopAt = stopAt;
  config.injectNonfinite.assign(injectNonfinite.begin(), injectNonfinite.end());
  config.maxConsecutiveSkips = maxConsecutiveSkips;
  config.warnConsecutiveSkips = warnConsecutiveSkips;
  config.logEvery = logEvery;
  config.threads = threadsOption();
  config.benchSteps = benchSteps;
  config.benchWarmup = benchWarmup;
  config.dataParallel = dataParallel;
  config.checkReplicas = dpCheckReplicas;
  config.dpTimeout = dpTimeout;
  config.injectRank = injectRank;
  return config;
}

int amp::finishRank(int status, Communicator *communicator) {
  if (status != 0 && communicator && communicator->size() > 1)
    communicator->abort(status);
  return status;
}

llvm::Expected<std::unique_ptr<Communicator>>
amp::joinDataParallelJob(TrainingConfig &config) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (!config.dataParallel) {
    if (dpCheckReplicas || injectRank != -1 || dpTimeout.getNumOccurrences())
      return fail(llvm::Twine(dpCheckReplicas    ? "--dp-check-replicas"
                              : injectRank != -1 ? "--inject-rank"
                                                 : "--dp-timeout") +
                  " needs --data-parallel");
    return nullptr;
  }
  if (config.benchSteps > 0)
    return fail("--data-parallel does not combine with --bench-steps");
  if (!(config.dpTimeout >= 0))
    return fail("--dp-timeout must be 0 (none) or a number of seconds");
  std::string error;
  std::unique_ptr<Communicator> communicator = joinMpiJob(error);
  if (!communicator)
    return fail("--data-parallel: cannot join the MPI job: " + error);
  if (config.injectRank >= communicator->size())
    return fail("--inject-rank=" + llvm::Twine(config.injectRank) +
                " but the job has " + llvm::Twine(communicator->size()) +
                " ranks");
  config.communicator = communicator.get();
  // Rank 0 alone prints and writes; every rank reads a checkpoint.
  if (communicator->rank() != 0) {
    config.metricsPath.clear();
    config.savePath.clear();
    config.plotPath.clear();
    std::fflush(stdout);
    int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::close(null);
    }
  }
  return std::move(communicator);
}
