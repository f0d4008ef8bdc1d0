//===- amp-run.cpp - Train a model with its compiled mixed-precision step -===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-run MODEL.mlir: compiles the model through amp-pipeline, JIT-compiles
// the training step and a logits function for evaluation on the CPU,
// initialises parameters from their #train.init attributes, and trains on
// Fashion-MNIST or synthetic data. docs/UserGuide.md describes the flags,
// the data normalisation and the metrics file.
//
//===----------------------------------------------------------------------===//

#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/IR/TrainOps.h"
#include "amp/Execution/CpuJit.h"
#include "amp/InitAll.h"
#include "amp/Pipelines/Pipelines.h"
#include "amp/Training/Checkpoint.h"
#include "amp/Training/Datasets.h"
#include "amp/Training/Evaluation.h"
#include "amp/Training/Initializers.h"
#include "amp/Training/Plot.h"
#include "amp/Training/StepAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

using namespace mlir;
using namespace amp;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("amp-run options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> optLevel("opt-level", cl::desc("O0, O1, O2 or O3"),
                              cl::init("O1"), cl::cat(category));
cl::opt<std::string> dtype("dtype", cl::desc("f16 or bf16"), cl::init("f16"),
                           cl::cat(category));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("sgd, momentum, adam or adamw"),
                               cl::init("adam"), cl::cat(category));
cl::opt<double> learningRate("lr", cl::desc("Peak learning rate"),
                             cl::init(1e-3), cl::cat(category));
cl::opt<std::string> backend(
    "backend",
    cl::desc("cpu (JIT, CBLAS GEMMs), or cpu-loops (GEMMs and convolutions "
             "as generated loops: a slow reference); cuda is the CUDA "
             "backend's"),
    cl::init("cpu"), cl::cat(category));
cl::opt<std::string> lrSchedule("lr-schedule",
                                cl::desc("constant, cosine or step"),
                                cl::init("constant"), cl::cat(category));
cl::opt<int64_t> warmupSteps("warmup-steps", cl::desc("Linear warm-up steps"),
                             cl::init(0), cl::cat(category));
cl::opt<std::string> dataset("dataset", cl::desc("fashion-mnist or synthetic"),
                             cl::init("fashion-mnist"), cl::cat(category));
cl::opt<std::string> dataDir("data-dir",
                             cl::desc("Directory of the IDX .gz files"),
                             cl::init("/usr/share/datasets/fashion-mnist"),
                             cl::cat(category));
cl::opt<int64_t> epochs("epochs", cl::desc("Passes over the training set"),
                        cl::init(1), cl::cat(category));
cl::opt<int64_t> steps("steps",
                       cl::desc("Train this many steps instead (-1: epochs)"),
                       cl::init(-1), cl::cat(category));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of initialisation and shuffling"),
                       cl::init(0), cl::cat(category));
cl::opt<bool> shuffle("shuffle", cl::desc("Shuffle the batches each epoch"),
                      cl::init(true), cl::cat(category));
cl::opt<std::string> metricsPath("metrics",
                                 cl::desc("Write metrics JSON to this file"),
                                 cl::init(""), cl::cat(category));
cl::opt<std::string>
    savePath("save",
             cl::desc("Write the training state (safetensors) at the end"),
             cl::init(""), cl::cat(category));
cl::opt<std::string> loadPath("load",
                              cl::desc("Resume from a checkpoint of --save"),
                              cl::init(""), cl::cat(category));
cl::opt<int64_t>
    trainExamples("train-examples",
                  cl::desc("Use only the first N training examples (0: all)"),
                  cl::init(0), cl::cat(category));
cl::opt<int64_t>
    testExamples("test-examples",
                 cl::desc("Evaluate on the first N test examples (0: all)"),
                 cl::init(0), cl::cat(category));
cl::opt<std::string>
    plotPath("plot", cl::desc("Draw the loss (and loss scale) per step as SVG"),
             cl::init(""), cl::cat(category));
cl::opt<int64_t> stopAt(
    "stop-at",
    cl::desc("Stop (and --save) after this many steps of the run, keeping "
             "the schedule of the whole run; resume with --load"),
    cl::init(-1), cl::cat(category));
cl::list<int64_t>
    injectNonfinite("inject-nonfinite",
                    cl::desc("Steps whose batch gets a NaN (testing)"),
                    cl::CommaSeparated, cl::cat(category));
cl::opt<int64_t> maxConsecutiveSkips(
    "max-consecutive-skips",
    cl::desc("Stop with an error after this many skipped steps in a row"),
    cl::init(20), cl::cat(category));
cl::opt<int64_t> logEvery("log-every", cl::desc("Print the loss every N steps"),
                          cl::init(100), cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "amp-run: error: " << message << "\n";
  return 1;
}


double scheduledRate(int64_t step, int64_t total) {
  double lr = learningRate;
  if (warmupSteps > 0 && step < warmupSteps)
    return lr * double(step + 1) / double(warmupSteps);
  int64_t t = step - warmupSteps,
          span = std::max<int64_t>(1, total - warmupSteps);
  if (lrSchedule == "cosine")
    return lr * 0.5 * (1.0 + std::cos(M_PI * double(t) / double(span)));
  if (lrSchedule == "step") // x0.1 at 50% and 75% of training
    return lr * (t >= span * 3 / 4 ? 0.01 : t >= span / 2 ? 0.1 : 1.0);
  return lr;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "amp-run: train a model with its compiled mixed-precision step\n");

  if (optLevel != "O0" && optLevel != "O1" && optLevel != "O2" &&
      optLevel != "O3")
    return fail("--opt-level must be O0, O1, O2 or O3, got '" + optLevel + "'");
  if (dtype != "f16" && dtype != "bf16")
    return fail("--dtype must be f16 or bf16, got '" + dtype + "'");
  if (backend == "cuda")
    return fail("--backend=cuda: this amp-run has no CUDA backend yet; use "
                "--backend=cpu");
  if (backend != "cpu" && backend != "cpu-loops")
    return fail("--backend must be cpu, cpu-loops or cuda, got '" + backend +
                "'");
  if (dataset != "fashion-mnist" && dataset != "synthetic")
    return fail("--dataset must be fashion-mnist or synthetic, got '" +
                dataset + "'");
  if (lrSchedule != "constant" && lrSchedule != "cosine" &&
      lrSchedule != "step")
    return fail("--lr-schedule must be constant, cosine or step, got '" +
                lrSchedule + "'");
  if (!(learningRate > 0) || !std::isfinite(learningRate))
    return fail("--lr must be positive and finite");
  if (epochs < 1 && steps < 0)
    return fail("--epochs must be at least 1");
  if (trainExamples < 0 || testExamples < 0)
    return fail("--train-examples and --test-examples must not be negative");
  if (maxConsecutiveSkips < 1)
    return fail("--max-consecutive-skips must be at least 1");

  auto compileStart = std::chrono::steady_clock::now();
  registerAmpPasses();
  DialectRegistry registry;
  registerAmpDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  std::string errorMessage;
  auto file = openInputFile(modelPath, &errorMessage);
  if (!file)
    return fail(errorMessage);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse " + modelPath);

  SmallVector<func::FuncOp> forwards(module->getOps<func::FuncOp>());
  if (forwards.size() != 1)
    return fail(modelPath + " must hold one function (the forward), it holds " +
                llvm::Twine(forwards.size()));

  PassManager pm(&context);
  AmpPipelineOptions options;
  options.optLevel = optLevel;
  options.dtype = dtype;
  options.optimizer = optimizer;
  buildAmpPipeline(pm, options);
  if (failed(pm.run(*module)))
    return fail("amp-pipeline failed on " + modelPath);
  // Evaluation runs the forward as autocast left it, up to the logits.
  if (failed(addLogitsFunction(*module, forwards.front())))
    return 1;
  std::string logitsName = (forwards.front().getName() + "_logits").str();
  auto stepFn = module->lookupSymbol<func::FuncOp>("train_step");
  auto abi = readStepAbi(stepFn);
  if (!abi)
    return fail(llvm::toString(abi.takeError()));
  CpuCompileOptions compileOptions;
  compileOptions.blas = backend == "cpu";
  auto step = CpuFunction::compile(*module, "train_step", compileOptions);
  if (!step)
    return fail(llvm::toString(step.takeError()));
  auto logitsFn = CpuFunction::compile(*module, logitsName, compileOptions);
  if (!logitsFn)
    return fail(llvm::toString(logitsFn.takeError()));
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();

  // Data.
  llvm::ArrayRef<TensorSpec> specs = (*step)->getArgumentSpecs();
  const TensorSpec &inputSpec = specs[abi->input];
  int64_t batch = inputSpec.shape.empty() ? 0 : inputSpec.shape[0];
  int64_t features = 1;
  for (int64_t d : llvm::drop_begin(inputSpec.shape))
    features *= d;
  if (batch < 1 || specs[abi->labels].kind != ElementKind::I32 ||
      specs[abi->labels].shape != llvm::ArrayRef<int64_t>{batch})
    return fail("the model's first two arguments must be a batch of inputs "
                "and its i32 labels");
  Dataset trainSet, testSet;
  if (dataset == "synthetic") {
    trainSet = makeSyntheticDataset(batch * 16, features, 10, seed + 1, true);
    testSet = makeSyntheticDataset(batch * 4, features, 10, seed + 1, false);
  } else {
    auto tr = loadFashionMnist(dataDir, true);
    if (!tr)
      return fail(llvm::toString(tr.takeError()));
    auto te = loadFashionMnist(dataDir, false);
    if (!te)
      return fail(llvm::toString(te.takeError()));
    trainSet = std::move(*tr);
    testSet = std::move(*te);
  }
  auto limit = [](Dataset &d, int64_t n) {
    if (n <= 0 || n >= d.count)
      return;
    d.count = n;
    d.images.resize(n * d.features);
    d.labels.resize(n);
  };
  limit(trainSet, trainExamples);
  limit(testSet, testExamples);
  if (trainSet.features != features)
    return fail("the model takes " + llvm::Twine(features) +
                " features per example, the data has " +
                llvm::Twine(trainSet.features));

  // State, initialised from the attributes.
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> args;
  for (const TensorSpec &spec : specs)
    args.emplace_back(spec.kind, spec.shape);
  unsigned nextMaster = 0;
  for (unsigned i = 0; i < specs.size(); ++i) {
    auto initAttr = stepFn.getArgAttrOfType<train::InitAttr>(
        i, train::TrainDialect::kInitAttrName);
    if (!initAttr)
      continue;
    auto values = initialValues(initAttr, specs[i].shape, rng);
    if (!values)
      return fail("argument #" + llvm::Twine(i) + ": " +
                  llvm::toString(values.takeError()));
    args[i] = HostTensor::fromFloats(specs[i].kind, specs[i].shape, *values);
    if (specs[i].kind != ElementKind::F32 &&
        llvm::is_contained(abi->params, i)) {
      if (nextMaster >= abi->masters.size())
        return fail("a low-precision parameter has no f32 master");
      unsigned m = abi->masters[nextMaster++];
      args[m] =
          HostTensor::fromFloats(ElementKind::F32, specs[m].shape, *values);
    }
  }
  if (abi->scaler.size() == 2 && args[abi->scaler[0]].getAsDouble(0) == 0)
    return fail("the loss scale has no initial value");

  // Resume: every persistent tensor must be there with its type and shape,
  // and the run must be the same configuration.
  int64_t startStep = 0;
  auto configValue = [&](StringRef key) -> std::string {
    if (key == "opt_level")
      return optLevel;
    if (key == "dtype")
      return dtype;
    if (key == "optimizer")
      return optimizer;
    if (key == "dataset")
      return dataset;
    return std::to_string(seed);
  };
  const char *configKeys[] = {"opt_level", "dtype", "optimizer", "dataset",
                              "seed"};
  if (!loadPath.empty()) {
    auto checkpoint = loadSafetensors(loadPath);
    if (!checkpoint)
      return fail(llvm::toString(checkpoint.takeError()));
    for (const char *key : configKeys) {
      auto it = checkpoint->metadata.find(key);
      if (it == checkpoint->metadata.end() || it->second != configValue(key))
        return fail(
            loadPath + ": written with " + key + " = '" +
            (it == checkpoint->metadata.end() ? std::string("?") : it->second) +
            "', this run has '" + configValue(key) + "'");
    }
    for (auto &[name, index] : abi->persistent) {
      const HostTensor *t = checkpoint->find(name);
      if (!t)
        return fail(loadPath + ": no tensor '" + name + "' (expected " +
                    args[index].typeString() + ")");
      if (t->getKind() != args[index].getKind() ||
          t->getShape() != args[index].getShape())
        return fail(loadPath + ": tensor '" + name + "' is " + t->typeString() +
                    ", the model needs " + args[index].typeString());
      args[index] = *t;
    }
    if (checkpoint->tensors.size() != abi->persistent.size())
      return fail(loadPath + ": holds " +
                  llvm::Twine(checkpoint->tensors.size()) +
                  " tensors, the model's step has " +
                  llvm::Twine(abi->persistent.size()));
    auto it = checkpoint->metadata.find("step");
    if (it == checkpoint->metadata.end() ||
        llvm::StringRef(it->second).getAsInteger(10, startStep) ||
        startStep < 0)
      return fail(loadPath + ": no valid 'step' in its metadata");
  }
  auto save = [&](int64_t done) -> llvm::Error {
    Checkpoint checkpoint;
    for (auto &[name, index] : abi->persistent)
      checkpoint.tensors.emplace_back(name, args[index]);
    for (const char *key : configKeys)
      checkpoint.metadata[key] = configValue(key);
    checkpoint.metadata["step"] = std::to_string(done);
    checkpoint.metadata["model"] = modelPath;
    return saveSafetensors(savePath, checkpoint);
  };

  int64_t stepsPerEpoch = trainSet.count / batch;
  if (stepsPerEpoch < 1)
    return fail("the training set is smaller than one batch");
  int64_t totalSteps = steps >= 0 ? steps : epochs * stepsPerEpoch;
  if (startStep > totalSteps)
    return fail(loadPath + " is at step " + llvm::Twine(startStep) +
                ", past the " + llvm::Twine(totalSteps) + " steps of this run");

  // Evaluation: accuracy over the whole test set (the last batch padded).
  llvm::ArrayRef<TensorSpec> evalSpecs = (*logitsFn)->getArgumentSpecs();
  auto evaluate = [&]() -> llvm::Expected<double> {
    int64_t correct = 0;
    for (int64_t start = 0; start < testSet.count; start += batch) {
      int64_t n = std::min(batch, testSet.count - start);
      std::vector<float> x(batch * features, 0.0f);
      std::copy_n(testSet.images.begin() + start * features, n * features,
                  x.begin());
      std::vector<HostTensor> evalArgs;
      evalArgs.push_back(
          HostTensor::fromFloats(evalSpecs[0].kind, evalSpecs[0].shape, x));
      evalArgs.emplace_back(ElementKind::I32, evalSpecs[1].shape);
      std::vector<const HostTensor *> pointers;
      for (const HostTensor &t : evalArgs)
        pointers.push_back(&t);
      for (unsigned i = 2; i < evalSpecs.size(); ++i)
        pointers.push_back(&args[i]);
      auto out = (*logitsFn)->call(pointers);
      if (!out)
        return out.takeError();
      std::vector<float> logits = (*out)[0].toFloats();
      int64_t classes = int64_t(logits.size()) / batch;
      for (int64_t r = 0; r < n; ++r) {
        auto row = logits.begin() + r * classes;
        int64_t predicted = std::max_element(row, row + classes) - row;
        correct += predicted == testSet.labels[start + r];
      }
    }
    return double(correct) / double(testSet.count);
  };

  // Training.
  std::vector<int64_t> order(trainSet.count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffleRng(seed ^ 0x9e3779b97f4a7c15ULL);
  llvm::json::Array stepLog, epochLog;
  std::vector<double> stepTimes;
  int64_t skipped = 0, consecutiveSkips = 0;
  std::vector<double> plotLosses, plotScales;
  SmallVector<bool> plotSkipped;
  double epochLoss = 0;
  int64_t epochSteps = 0;
  double accuracy = -1;
  bool hasScaler = abi->scaler.size() == 2;
  bool hasFound = abi->numResults > 1 + abi->state.size();
  llvm::outs() << "amp-run: " << modelPath << " at " << optLevel << " " << dtype
               << ", " << optimizer << " lr " << learningRate << " ("
               << lrSchedule << "), " << totalSteps << " steps of batch "
               << batch << ", compiled in "
               << llvm::format("%.2f", compileSeconds) << " s\n";
  // A resumed run replays the shuffles of the epochs begun before it.
  if (shuffle)
    for (int64_t e = 0; e < (startStep + stepsPerEpoch - 1) / stepsPerEpoch;
         ++e)
      std::shuffle(order.begin(), order.end(), shuffleRng);
  int64_t endStep =
      stopAt >= 0 ? std::min<int64_t>(stopAt, totalSteps) : totalSteps;
  if (endStep < startStep)
    return fail("--stop-at=" + llvm::Twine(int64_t(stopAt)) +
                " is before the checkpoint's step " + llvm::Twine(startStep));
  // A progress bar on a terminal (stderr), plain lines otherwise.
  bool progressBar = llvm::sys::Process::StandardErrIsDisplayed();
  for (int64_t s = startStep; s < endStep; ++s) {
    int64_t inEpoch = s % stepsPerEpoch;
    if (inEpoch == 0 && shuffle)
      std::shuffle(order.begin(), order.end(), shuffleRng);
    std::vector<float> x(batch * features);
    std::vector<int32_t> y(batch);
    for (int64_t r = 0; r < batch; ++r) {
      int64_t e = order[inEpoch * batch + r];
      std::copy_n(trainSet.images.begin() + e * features, features,
                  x.begin() + r * features);
      y[r] = trainSet.labels[e];
    }
    if (llvm::is_contained(injectNonfinite, s))
      x[0] = std::nanf("");
    args[abi->input] = HostTensor::fromFloats(specs[abi->input].kind,
                                              specs[abi->input].shape, x);
    args[abi->labels] = HostTensor::fromInts({batch}, y);
    args[*abi->lr] = HostTensor::fromFloats(
        ElementKind::F32, {}, {float(scheduledRate(s, totalSteps))});
    std::vector<const HostTensor *> pointers;
    for (const HostTensor &a : args)
      pointers.push_back(&a);
    auto t0 = std::chrono::steady_clock::now();
    auto out = (*step)->call(pointers);
    stepTimes.push_back(std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0)
                            .count());
    if (!out)
      return fail("step " + llvm::Twine(s) + ": " +
                  llvm::toString(out.takeError()));
    double loss = (*out)[0].getAsDouble(0);
    unsigned r = 1;
    for (unsigned i : abi->state)
      args[i] = std::move((*out)[r++]);
    double scale = 1.0;
    bool wasSkipped = false, collapsed = false;
    if (hasScaler) {
      args[abi->scaler[0]] = std::move((*out)[r++]);
      args[abi->scaler[1]] = std::move((*out)[r++]);
      scale = args[abi->scaler[0]].getAsDouble(0);
    }
    if (hasFound)
      wasSkipped = (*out)[r++].getAsDouble(0) != 0;
    if (hasScaler)
      collapsed = (*out)[r++].getAsDouble(0) != 0;
    skipped += wasSkipped;
    plotLosses.push_back(loss);
    plotScales.push_back(scale);
    plotSkipped.push_back(wasSkipped);
    consecutiveSkips = wasSkipped ? consecutiveSkips + 1 : 0;
    stepLog.push_back(llvm::json::Object{{"step", s},
                                         {"loss", loss},
                                         {"scale", scale},
                                         {"skipped", wasSkipped}});
    if (!wasSkipped) {
      epochLoss += loss;
      ++epochSteps;
    }
    if (collapsed)
      return fail("loss scale collapsed at step " + llvm::Twine(s) +
                  ": the gradients are non-finite at every scale (NaN in the "
                  "model or data?)");
    if (consecutiveSkips >= maxConsecutiveSkips)
      return fail(llvm::Twine(consecutiveSkips) +
                  " steps in a row were skipped for non-finite gradients "
                  "(last at step " +
                  llvm::Twine(s) + ", loss scale " +
                  llvm::formatv("{0}", scale).str() +
                  "); stopping (--max-consecutive-skips)");
    if (!wasSkipped && !std::isfinite(loss) && !hasFound)
      return fail("the loss is not finite at step " + llvm::Twine(s));
    if (progressBar) {
      // One line redrawn in place: the epoch's progress, loss and scale.
      int64_t done = inEpoch + 1, width = 30;
      int64_t filled = done * width / stepsPerEpoch;
      llvm::errs() << "\r  epoch " << (s / stepsPerEpoch + 1) << " ["
                   << std::string(filled, '=')
                   << std::string(width - filled, ' ') << "] " << done << "/"
                   << stepsPerEpoch << "  loss " << llvm::format("%.4f", loss);
      if (hasScaler)
        llvm::errs() << "  scale " << llvm::format("%g", scale);
      llvm::errs() << "   ";
      llvm::errs().flush();
    }
    if (logEvery > 0 && (s % logEvery == 0 || s + 1 == totalSteps))
      llvm::outs() << "step " << s << "  loss " << llvm::format("%.4f", loss)
                   << (hasScaler ? "  scale " : "")
                   << (hasScaler ? llvm::formatv("{0}", scale).str() : "")
                   << (wasSkipped ? "  skipped" : "") << "\n";
    bool epochEnd = inEpoch + 1 == stepsPerEpoch || s + 1 == endStep;
    if (epochEnd) {
      auto acc = evaluate();
      if (!acc)
        return fail(llvm::toString(acc.takeError()));
      accuracy = *acc;
      int64_t epoch = s / stepsPerEpoch + 1;
      double trainLoss = epochSteps ? epochLoss / epochSteps : NAN;
      if (progressBar)
        llvm::errs() << "\r" << std::string(100, ' ') << "\r";
      llvm::outs() << "epoch " << epoch << "  train loss "
                   << llvm::format("%.4f", trainLoss) << "  test accuracy "
                   << llvm::format("%.2f%%", 100 * accuracy) << "\n";
      llvm::outs().flush();
      epochLog.push_back(llvm::json::Object{{"epoch", epoch},
                                            {"test_accuracy", accuracy},
                                            {"train_loss", trainLoss}});
      epochLoss = 0;
      epochSteps = 0;
    }
  }
  if (!savePath.empty())
    if (llvm::Error e = save(endStep))
      return fail(llvm::toString(std::move(e)));
  if (endStep == startStep) {
    auto acc = evaluate();
    if (!acc)
      return fail(llvm::toString(acc.takeError()));
    accuracy = *acc;
  }

  std::vector<double> sorted = stepTimes;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  double finalScale = hasScaler ? args[abi->scaler[0]].getAsDouble(0) : 1.0;
  llvm::outs() << "summary: test accuracy "
               << llvm::format("%.2f%%", 100 * accuracy) << ", " << skipped
               << " skipped steps, final scale " << finalScale
               << ", median step " << llvm::format("%.2f", median) << " ms\n";
  if (!plotPath.empty()) {
    std::string title = (llvm::sys::path::filename(modelPath) + " at " +
                         optLevel + " " + dtype + ", " + optimizer)
                            .str();
    if (llvm::Error e = writeFileAtomically(
            plotPath,
            renderTrainingPlot(title, plotLosses,
                               hasScaler ? ArrayRef<double>(plotScales)
                                         : ArrayRef<double>(),
                               plotSkipped)))
      return fail(llvm::toString(std::move(e)));
  }
  if (!metricsPath.empty()) {
    llvm::json::Object metrics{
        {"config", llvm::json::Object{{"model", std::string(modelPath)},
                                      {"opt_level", std::string(optLevel)},
                                      {"dtype", std::string(dtype)},
                                      {"backend", std::string(backend)},
                                      {"optimizer", std::string(optimizer)},
                                      {"lr", double(learningRate)},
                                      {"lr_schedule", std::string(lrSchedule)},
                                      {"warmup_steps", int64_t(warmupSteps)},
                                      {"dataset", std::string(dataset)},
                                      {"batch", batch},
                                      {"steps", totalSteps},
                                      {"seed", int64_t(seed)},
                                      {"shuffle", bool(shuffle)}}},
        {"steps", std::move(stepLog)},
        {"epochs", std::move(epochLog)},
        {"test_accuracy", accuracy},
        {"skipped_steps", skipped},
        {"final_scale", finalScale},
        {"step_time_ms_median", median},
        {"compile_time_s", compileSeconds}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(metrics))) << "\n";
    if (llvm::Error e = writeFileAtomically(metricsPath, text))
      return fail(llvm::toString(std::move(e)));
  }
  return 0;
}
