//===- Trainer.cpp - The training loop around a compiled step -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Trainer.h"
#include "amp/Runtime/Collectives.h"
#include "amp/Training/Checkpoint.h"
#include "amp/Training/Datasets.h"
#include "amp/Training/Plot.h"

#include "llvm/ADT/DenseMap.h"
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
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <random>
#include <thread>

using namespace amp;

std::string amp::precisionLabel(const TrainingConfig &config) {
  return config.optLevel + " " + (config.optLevel == "O0" ? "f32" : config.dtype);
}

llvm::Error amp::validateConfig(const TrainingConfig &config) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  if (config.dataset != "fashion-mnist" && config.dataset != "synthetic" &&
      config.dataset != "text")
    return err("--dataset must be fashion-mnist, synthetic or text, got '" +
               config.dataset + "'");
  if (config.dataset == "text" && config.dataFile.empty())
    return err("--dataset=text needs --data-file=FILE (a text file, or a "
               "directory of them such as /usr/share/games/fortunes)");
  if (config.dataset != "text" && !config.dataFile.empty())
    return err("--data-file is the text of --dataset=text; --dataset is '" +
               config.dataset + "'");
  if (config.lrSchedule != "constant" && config.lrSchedule != "cosine" &&
      config.lrSchedule != "step")
    return err("--lr-schedule must be constant, cosine or step, got '" +
               config.lrSchedule + "'");
  if (!(config.learningRate > 0) || !std::isfinite(config.learningRate))
    return err("--lr must be positive and finite");
  if (config.epochs < 1 && config.steps < 0)
    return err("--epochs must be at least 1");
  if (config.trainExamples < 0 || config.testExamples < 0)
    return err("--train-examples and --test-examples must not be negative");
  if (config.benchSteps < 0 || config.benchWarmup < 0)
    return err("--bench-steps and --bench-warmup must not be negative");
  if (config.maxConsecutiveSkips < 1)
    return err("--max-consecutive-skips must be at least 1");
  if (config.warnConsecutiveSkips < 0)
    return err("--warn-consecutive-skips must not be negative (0: never)");
  if (config.threads < 0)
    return err("--threads must not be negative (0: the cores available)");
  if (!config.initFromPath.empty() && !config.loadPath.empty())
    return err("--init-from and --load exclude each other: --load resumes "
               "a run of the same configuration exactly, --init-from starts "
               "a new run from a checkpoint's weights");
  return llvm::Error::success();
}

/// `value` as JSON: null where it is not finite (JSON has no NaN or inf).
static llvm::json::Value jsonNumber(double value) {
  if (std::isfinite(value))
    return value;
  return nullptr;
}

/// The learning rate of `step` of `total` under the config's schedule.
static double scheduledRate(const TrainingConfig &config, int64_t step,
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

llvm::Expected<std::vector<HostTensor>>
amp::initialArguments(const CompiledStep &compiled, uint64_t seed) {
  llvm::ArrayRef<TensorSpec> specs = compiled.step->getArgumentSpecs();
  const StepAbi &abi = compiled.abi;
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> args;
  for (const TensorSpec &spec : specs)
    args.emplace_back(spec.kind, spec.shape);
  unsigned nextMaster = 0;
  // In argument order: the draws from `rng` follow it.
  for (const auto &[i, init] : compiled.inits) {
    if (i >= specs.size())
      return err("initializer for argument #" + llvm::Twine(i) +
                 " of a step with " + llvm::Twine(specs.size()));
    auto values = initialValues(init, specs[i].getNumElements(), rng);
    if (!values)
      return err("argument #" + llvm::Twine(i) + ": " +
                 llvm::toString(values.takeError()));
    if (specs[i].kind == ElementKind::I32) { // a counter (train.increment)
      std::vector<int32_t> ints(values->begin(), values->end());
      args[i] = HostTensor::fromInts(specs[i].shape, ints);
      continue;
    }
    args[i] = HostTensor::fromFloats(specs[i].kind, specs[i].shape, *values);
    if (specs[i].kind != ElementKind::F32 &&
        llvm::is_contained(abi.params, i)) {
      if (nextMaster >= abi.masters.size())
        return err("a low-precision parameter has no f32 master");
      unsigned m = abi.masters[nextMaster++];
      args[m] =
          HostTensor::fromFloats(ElementKind::F32, specs[m].shape, *values);
    }
  }
  if (abi.scaler.size() == 2 && args[abi.scaler[0]].getAsDouble(0) == 0)
    return err("the loss scale has no initial value");
  return args;
}

llvm::Error amp::initializeFrom(const StepAbi &abi,
                                std::vector<HostTensor> &args,
                                const Checkpoint &checkpoint,
                                llvm::StringRef path) {
  auto err = [&](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + m);
  };
  llvm::SmallVector<unsigned> states;
  for (auto &[name, index] : abi.persistent)
    if (llvm::StringRef(name).starts_with("state."))
      states.push_back(index);
  // Where each parameter and state tensor comes from: (name in the file,
  // tensor). A low-precision parameter's f32 master is taken where the file
  // has one (masters are numbered over the low-precision parameters).
  std::vector<std::pair<std::string, const HostTensor *>> paramSources,
      stateSources;
  auto withMaster = [&](std::string name, const HostTensor *value,
                        unsigned &master, llvm::StringRef prefix) {
    if (value->getKind() != ElementKind::F32) {
      std::string masterName = (prefix + std::to_string(master++)).str();
      if (const HostTensor *m = checkpoint.find(masterName))
        return std::make_pair(masterName, m);
    }
    return std::make_pair(name, value);
  };
  unsigned fileMaster = 0;
  if (checkpoint.find("param.0")) {
    // An amp checkpoint (--save): tensors by role and position.
    auto count = [&](llvm::StringRef role) {
      unsigned n = 0;
      while (checkpoint.find((role + "." + llvm::Twine(n)).str()))
        ++n;
      return n;
    };
    unsigned fileParams = count("param"), fileStates = count("state");
    if (fileParams != abi.params.size())
      return err("holds " + llvm::Twine(fileParams) +
                 " parameters, the model has " +
                 llvm::Twine(abi.params.size()) +
                 " (a checkpoint of another model?)");
    if (fileStates != states.size())
      return err("holds " + llvm::Twine(fileStates) +
                 " batch-norm state tensors, the model has " +
                 llvm::Twine(states.size()));
    for (unsigned k = 0; k < fileParams; ++k) {
      std::string name = "param." + std::to_string(k);
      paramSources.push_back(
          withMaster(name, checkpoint.find(name), fileMaster, "master."));
    }
    for (unsigned k = 0; k < fileStates; ++k) {
      std::string name = "state." + std::to_string(k);
      stateSources.emplace_back(name, checkpoint.find(name));
    }
  } else {
    // The model's own names (a PyTorch state_dict, or amp's Step.state_dict,
    // saved as safetensors), matched to the names amp.to_mlir gives the
    // arguments.
    if (abi.names.empty())
      return err("holds no amp checkpoint tensors ('param.0', ...), and the "
                 "model's arguments carry no names to match its tensors by "
                 "(amp.to_mlir writes them as name locations)");
    llvm::DenseMap<unsigned, llvm::StringRef> nameOf;
    for (auto &[name, index] : abi.names)
      nameOf[index] = name;
    std::vector<std::string> missing;
    auto lookUp = [&](unsigned index, bool param)
        -> std::pair<std::string, const HostTensor *> {
      auto it = nameOf.find(index);
      std::string name = it == nameOf.end()
                             ? "argument #" + std::to_string(index)
                             : it->second.str();
      const HostTensor *value =
          it == nameOf.end() ? nullptr : checkpoint.find(name);
      // amp's own state (dropout's step counter) starts afresh when a
      // PyTorch state_dict does not have it; a tensor of a type amp does
      // not read (F64, I64) is named as such.
      if (!value && llvm::is_contained(checkpoint.skipped, name))
        missing.push_back("'" + name + "' (of a type amp does not read: "
                          "F32, F16, BF16 or I32)");
      else if (!value && (param || !llvm::StringRef(name).starts_with("amp.")))
        missing.push_back("'" + name + "'");
      if (!value)
        return {name, nullptr};
      return param ? withMaster(name, value, fileMaster, "amp.master.")
                   : std::make_pair(name, value);
    };
    for (unsigned index : abi.params)
      paramSources.push_back(lookUp(index, true));
    for (unsigned index : states)
      stateSources.push_back(lookUp(index, false));
    if (!missing.empty())
      return err("has no tensor " + llvm::join(missing, ", ") +
                 " (the model's parameters and buffers by name)");
  }
  std::vector<HostTensor> updated = args;
  auto assign = [&](unsigned index, const std::string &name,
                    const HostTensor &value) -> llvm::Error {
    HostTensor &target = updated[index];
    if (value.getShape() != target.getShape())
      return err("tensor '" + name + "' is " + value.typeString() +
                 ", the model needs " + target.typeString());
    if (value.getKind() == target.getKind()) {
      target = value;
      return llvm::Error::success();
    }
    if (value.getKind() == ElementKind::I32 ||
        target.getKind() == ElementKind::I32)
      return err("tensor '" + name + "' is " + value.typeString() +
                 ", the model needs " + target.typeString());
    target = HostTensor::fromFloats(target.getKind(), target.getShape(),
                                    value.toFloats());
    return llvm::Error::success();
  };
  unsigned runMaster = 0;
  for (auto [k, index] : llvm::enumerate(abi.params)) {
    auto &[name, value] = paramSources[k];
    if (llvm::Error e = assign(index, name, *value))
      return e;
    if (updated[index].getKind() != ElementKind::F32) {
      if (runMaster >= abi.masters.size())
        return err("a low-precision parameter of the model has no f32 master");
      HostTensor &master = updated[abi.masters[runMaster++]];
      master = HostTensor::fromFloats(ElementKind::F32, master.getShape(),
                                      value->toFloats());
    }
  }
  for (auto [k, index] : llvm::enumerate(states))
    if (stateSources[k].second)
      if (llvm::Error e =
              assign(index, stateSources[k].first, *stateSources[k].second))
        return e;
  args = std::move(updated);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<StepSession>>
amp::openStepSession(const CompiledStep &compiled,
                     std::vector<HostTensor> args) {
  auto opened = compiled.openSession
                    ? compiled.openSession()
                    : openHostSession(*compiled.step, *compiled.logits);
  if (!opened)
    return opened.takeError();
  for (auto [i, value] : llvm::enumerate(args))
    if (llvm::Error e = (*opened)->take(i, std::move(value)))
      return std::move(e);
  args.clear();
  releaseFreedMemory();
  return opened;
}

void amp::releaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

std::vector<ResultRoute> amp::stepResultRoutes(const CompiledStep &compiled) {
  const StepAbi &abi = compiled.abi;
  std::vector<ResultRoute> routes(compiled.step->getResultSpecs().size());
  unsigned r = 1;
  for (unsigned i : abi.state)
    if (r < routes.size())
      routes[r++] = {int(i), false};
  for (auto [k, i] : llvm::enumerate(abi.scaler))
    if (r < routes.size())
      routes[r++] = {int(i), k == 0};
  return routes;
}

llvm::json::Value amp::plannedStepBytes(const CompiledStep &compiled) {
  const MemoryPlan &plan = compiled.step->getMemoryPlan();
  return plan.empty() ? llvm::json::Value(nullptr)
                      : llvm::json::Value(int64_t(plan.arenaBytes));
}

StateMemory amp::getStateMemory(const CompiledStep &compiled) {
  StateMemory memory;
  llvm::ArrayRef<TensorSpec> args = compiled.step->getArgumentSpecs();
  for (auto [r, route] : llvm::enumerate(stepResultRoutes(compiled))) {
    if (route.toArgument < 0 || size_t(route.toArgument) >= args.size())
      continue;
    const TensorSpec &spec = args[route.toArgument];
    uint64_t bytes = spec.getNumElements() * elementBytes(spec.kind);
    memory.bytes += bytes;
    if (compiled.step->getResultArgument(r) != route.toArgument)
      memory.doubleBuffered += bytes;
  }
  return memory;
}

StepScalars amp::readStepScalars(const StepAbi &abi,
                                 llvm::ArrayRef<HostTensor> toHost) {
  bool hasScaler = abi.scaler.size() == 2;
  bool hasFound = abi.hasLossScaling();
  StepScalars scalars;
  scalars.loss = toHost[0].getAsDouble(0);
  unsigned r = 1;
  if (hasScaler)
    scalars.scale = toHost[r++].getAsDouble(0);
  if (hasFound)
    scalars.skipped = toHost[r++].getAsDouble(0) != 0;
  if (hasScaler)
    scalars.collapsed = toHost[r++].getAsDouble(0) != 0;
  size_t end = toHost.size() - (abi.numerics.empty() ? 0 : 1);
  if (hasFound && r < end)
    scalars.nonfinite = int64_t(toHost[r++].getAsDouble(0));
  if (!abi.numerics.empty() && !toHost.empty()) {
    const HostTensor &vector = toHost.back();
    for (int64_t i = 0, e = vector.getNumElements(); i < e; ++i)
      scalars.magnitudes.push_back(vector.getAsDouble(i));
  }
  return scalars;
}

/// Argument `arg`'s name: the model's where the step carries it, else its
/// checkpoint name, else `fallback`.
static std::string argumentName(const StepAbi &abi, unsigned arg,
                                llvm::StringRef fallback) {
  for (const auto &[name, i] : abi.names)
    if (i == arg)
      return name;
  for (const auto &[name, i] : abi.persistent)
    if (i == arg)
      return name;
  return fallback.str();
}

std::optional<NonfiniteSource>
amp::describeNonfinite(const StepAbi &abi, llvm::ArrayRef<TensorSpec> args,
                       int64_t nonfinite) {
  if (nonfinite < 0)
    return std::nullopt;
  auto nameOf = [&](unsigned arg, llvm::StringRef fallback) {
    return argumentName(abi, arg, fallback);
  };
  // The float train.state arguments (running statistics), in order: the
  // persistent "state.k" entries.
  llvm::SmallVector<unsigned> floatStates;
  for (const auto &[name, i] : abi.persistent)
    if (llvm::StringRef(name).starts_with("state.") && i < args.size() &&
        args[i].kind != ElementKind::I32 && args[i].kind != ElementKind::I1)
      floatStates.push_back(i);
  NonfiniteSource source;
  source.hasRunningStatistics = !floatStates.empty();
  if (nonfinite == 0) {
    source.forward = true;
    source.what = "the loss";
    return source;
  }
  size_t k = size_t(nonfinite - 1);
  if (k < floatStates.size()) {
    source.forward = true;
    source.name = nameOf(floatStates[k], "state");
    source.what = "running statistic " + source.name;
    return source;
  }
  k -= floatStates.size();
  if (k >= abi.params.size())
    return std::nullopt;
  source.name = nameOf(abi.params[k], "param");
  source.what = "the gradient of " + source.name;
  return source;
}

std::optional<NumericsReport>
amp::findNumericsOrigin(const StepAbi &abi, llvm::ArrayRef<double> magnitudes) {
  auto magnitudeOf = [&](const NumericsSite &site) {
    if (site.check < 0)
      return site.magnitude;
    return size_t(site.check) < magnitudes.size()
               ? magnitudes[site.check]
               : std::numeric_limits<double>::quiet_NaN();
  };
  auto nameOf = [&](unsigned arg) -> std::string {
    return argumentName(abi, arg,
                        arg >= abi.input && arg < abi.labels
                            ? "input #" + std::to_string(arg - abi.input)
                            : "argument #" + std::to_string(arg));
  };
  for (const NumericsSite &site : abi.numerics) {
    double value = magnitudeOf(site);
    if (std::isfinite(value) || site.kind == NumericsSite::Kind::Constant)
      continue;
    NumericsReport report;
    report.nan = std::isnan(value);
    if (site.kind == NumericsSite::Kind::Argument) {
      report.argument = true;
      report.name = nameOf(site.argument);
      return report;
    }
    bool inputNan = false, inputInf = false;
    double largest = 0.0;
    for (int64_t input : site.inputs) {
      if (input < 0 || size_t(input) >= abi.numerics.size())
        continue;
      double m = magnitudeOf(abi.numerics[input]);
      inputNan |= std::isnan(m);
      inputInf |= std::isinf(m);
      if (std::isfinite(m))
        largest = std::max(largest, m);
    }
    // Born here: a NaN from inputs without one, an inf from finite inputs.
    if (report.nan ? inputNan : (inputNan || inputInf))
      continue;
    report.op = site.op;
    report.module = site.module;
    report.file = site.file;
    report.line = site.line;
    // autocast's cast of an argument to the low type: the argument is what
    // the user knows (the cast's location is the argument's).
    if (site.op == "train.cast" && site.inputs.size() == 1 &&
        size_t(site.inputs[0]) < abi.numerics.size() &&
        abi.numerics[site.inputs[0]].kind == NumericsSite::Kind::Argument) {
      report.name = nameOf(abi.numerics[site.inputs[0]].argument);
      report.module.clear();
      report.file.clear();
      report.line = 0;
    }
    report.result = site.result;
    report.backward = site.backward;
    report.inputMagnitude = largest;
    report.calibrated = site.calibrated;
    return report;
  }
  return std::nullopt;
}

std::string NumericsReport::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  const char *what = nan ? "a NaN" : "an inf";
  if (argument) {
    if (step >= 0)
      os << "step " << step << ": ";
    os << name << " held " << what << " when the step began";
    return text;
  }
  if (!file.empty())
    os << file << ":" << line << ": ";
  if (step >= 0)
    os << "step " << step << ": ";
  if (!name.empty()) {
    os << name << " became " << what << " when cast to the low type (its "
       << "largest magnitude " << llvm::format("%.4g", inputMagnitude) << ")";
    return text;
  }
  os << op;
  if (result >= 0)
    os << " (result " << result << ")";
  os << (backward ? " in the backward" : " in the forward");
  if (!module.empty())
    os << (backward ? " (the gradient) of " : " of ") << module;
  os << " made " << what << " from finite inputs (their largest magnitude "
     << llvm::format("%.4g", inputMagnitude) << ")";
  if (calibrated >= 0)
    os << "; it measured " << llvm::format("%.4g", calibrated)
       << " when calibrated: its range outgrew the calibration, calibrate "
          "again";
  return text;
}

llvm::json::Object amp::numericsJson(const NumericsReport &report) {
  llvm::json::Object o{{"value", report.nan ? "NaN" : "inf"},
                       {"step", report.step}};
  if (report.argument) {
    o["argument"] = report.name;
    return o;
  }
  // (autocast's cast of an argument: the argument's name too)
  if (!report.name.empty())
    o["argument"] = report.name;
  o["op"] = report.op;
  o["stage"] = report.backward ? "backward" : "forward";
  o["module"] = report.module;
  o["file"] = report.file;
  o["line"] = report.line;
  if (report.result >= 0)
    o["result"] = report.result;
  o["input_magnitude"] = report.inputMagnitude;
  if (report.calibrated >= 0)
    o["calibrated"] = report.calibrated;
  return o;
}

llvm::Error amp::checkNotAllZero(const CompiledStep &compiled,
                                 llvm::StringRef model) {
  const StepAbi &abi = compiled.abi;
  llvm::DenseMap<unsigned, const InitSpec *> initOf;
  for (const auto &[index, init] : compiled.inits)
    initOf[index] = &init;
  int64_t matrices = 0;
  for (unsigned index : abi.params) {
    const InitSpec *init = initOf.lookup(index);
    if (!init || init->kind != "zeros")
      return llvm::Error::success();
    auto specs = compiled.step->getArgumentSpecs();
    if (index < specs.size() && specs[index].shape.size() >= 2)
      ++matrices;
  }
  if (matrices < 2)
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "every parameter of " + model +
          " starts at zero (#train.init<zeros>, as amp.to_mlir writes a "
          "PyTorch model's parameters): a network of several layers cannot "
          "learn from there. Start from the model's weights with "
          "--init-from=FILE (in Python: safetensors.torch.save_file("
          "model.state_dict(), FILE)), or give the parameters a train.init "
          "(docs/UserGuide.md)");
}

HostTensor amp::learningRateArgument(const TensorSpec &spec, float lr) {
  return HostTensor::fromFloats(ElementKind::F32, spec.shape,
                                std::vector<float>(spec.getNumElements(), lr));
}

namespace {

/// The watchdog's margin after --dp-timeout: the step's collectives give up
/// at the deadline itself.
/// (On the GPU the rank that gives up first aborts NCCL and asks the others
/// over MPI for up to 3 s: CudaCollectives.cpp.)
constexpr double kWatchdogBackstopSeconds = 8.0;

/// check-numerics reports printed per run (all of them are in the metrics).
constexpr int64_t kPrintedNumericsReports = 10;

/// A data-parallel step's last resort: a thread that ends the process when
/// a step armed with `arm` has not been disarmed within `seconds` plus
/// `margin` (a step stuck outside the collectives, which give up at the
/// deadline themselves). It prints the step and this rank and exits with
/// status 1, so that mpirun ends the whole job.
class StepWatchdog {
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
      if (wake.wait_until(lock, deadline) == std::cv_status::timeout &&
          armed && std::chrono::steady_clock::now() >= deadline) {
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

} // namespace

llvm::Error amp::installCommunicator(const CompiledStep &compiled,
                                     Communicator *communicator) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  int64_t jobRanks = communicator ? communicator->size() : 1;
  if (compiled.ranks != jobRanks) {
    if (!communicator)
      return fail("the step is compiled for " + llvm::Twine(compiled.ranks) +
                  " data-parallel ranks: run it with --data-parallel under "
                  "mpirun -np " +
                  llvm::Twine(compiled.ranks));
    return fail("the step is compiled for " + llvm::Twine(compiled.ranks) +
                " data-parallel ranks, but the job has " +
                llvm::Twine(jobRanks) + " (amp-compile --ranks=" +
                llvm::Twine(jobRanks) + " compiles it for " +
                llvm::Twine(jobRanks) + ")");
  }
  if (!communicator)
    return llvm::Error::success();
  if (!compiled.setCommunicator) {
    if (compiled.ranks > 1)
      return fail("the step's runtime takes no communicator (an artifact of "
                  "another amp build: compile it again with this one's "
                  "amp-compile)");
    return llvm::Error::success();
  }
  if (std::string e = compiled.setCommunicator(communicator); !e.empty())
    return fail("starting the job's collectives: " + e);
  return llvm::Error::success();
}

llvm::Error amp::broadcastPersistent(StepSession &session, const StepAbi &abi,
                                     Communicator &communicator) {
  for (auto &[name, index] : abi.persistent) {
    auto value = session.get(index);
    if (!value)
      return value.takeError();
    if (std::string e = communicator.broadcast(
            value->data(), int64_t(value->getSizeInBytes()), 0);
        !e.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "broadcasting " + name + ": " + e);
    if (llvm::Error e = session.set(index, *value))
      return e;
  }
  return llvm::Error::success();
}

int amp::runTraining(const TrainingConfig &config,
                     const CompiledStep &compiled) {
  auto fail = [&](const llvm::Twine &message) {
    // One write: the ranks of a data-parallel job share stderr.
    llvm::errs() << (config.tool + ": error: " + message + "\n").str();
    return 1;
  };
  if (llvm::Error e = validateConfig(config))
    return fail(llvm::toString(std::move(e)));
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
    return fail(llvm::toString(std::move(e)));
  llvm::scope_exit uninstall([&] {
    if (config.communicator && compiled.setCommunicator)
      compiled.setCommunicator(nullptr);
  });
  if (config.benchSteps > 0)
    return runBenchmark(config, compiled);
  const StepAbi *abi = &compiled.abi;
  CompiledFunction *step = compiled.step, *logitsFn = compiled.logits;
  const std::string &modelPath = config.model;
  const std::string &optLevel = config.optLevel, &dtype = config.dtype,
                    &optimizer = config.optimizer, &dataset = config.dataset,
                    &loadPath = config.loadPath, &savePath = config.savePath,
                    &plotPath = config.plotPath,
                    &metricsPath = config.metricsPath;
  uint64_t seed = config.seed;
  bool shuffle = config.shuffle;
  int64_t steps = config.steps, epochs = config.epochs, stopAt = config.stopAt,
          logEvery = config.logEvery,
          maxConsecutiveSkips = config.maxConsecutiveSkips;
  double compileSeconds = config.compileSeconds,
         learningRate = config.learningRate;

  // Data.
  llvm::ArrayRef<TensorSpec> specs = step->getArgumentSpecs();
  const TensorSpec &inputSpec = specs[abi->input];
  int64_t batch = inputSpec.shape.empty() ? 0 : inputSpec.shape[0];
  int64_t features = 1;
  for (int64_t d : llvm::drop_begin(inputSpec.shape))
    features *= d;
  if (abi->numInputs() != 1)
    return fail("the model takes " + llvm::Twine(abi->numInputs()) +
                " inputs before its labels; " + config.tool +
                "'s data sets feed one (train it from Python: amp.compile)");
  const TensorSpec &labelSpec = specs[abi->labels];
  int64_t labelCount = labelSpec.getNumElements();
  if (batch < 1 || labelSpec.kind != ElementKind::I32 ||
      labelCount % batch != 0)
    return fail("the model's first two arguments must be a batch of inputs "
                "and its i32 labels (one per example, or one per input "
                "position of a token model)");
  // Labels per example: 1 for a classifier, the window for a token model.
  int64_t targets = labelCount / batch;
  bool tokens = inputSpec.kind == ElementKind::I32;
  if (dataset == "text" && (!tokens || targets != features))
    return fail("--dataset=text feeds windows of token ids and their next "
                "bytes: the model's input must be i32 [batch, window] and its "
                "labels i32 [batch * window]; it has " +
                inputSpec.str() + " and " + labelSpec.str());
  if (dataset != "text" && (tokens || targets != 1))
    return fail("the model takes " + inputSpec.str() + " inputs and " +
                labelSpec.str() + " labels" +
                (tokens ? ", a token model: train it with --dataset=text "
                          "--data-file=FILE"
                        : ": more than one label per example") +
                " (--dataset=" + dataset + " is images with one label each)");
  if (tokens && !config.injectNonfinite.empty())
    return fail("--inject-nonfinite puts a NaN into a float input; this "
                "model's input is token ids");
  // The classes are the logits' last dimension (the cross-entropy's).
  llvm::ArrayRef<TensorSpec> logitSpecs = logitsFn->getResultSpecs();
  int64_t classes = !logitSpecs.empty() && logitSpecs[0].shape.size() == 2
                        ? logitSpecs[0].shape[1]
                        : 0;
  Dataset trainSet, testSet;
  double unigramLoss = 0.0;
  if (dataset == "text") {
    auto text = loadTextDataset(config.dataFile, features);
    if (!text)
      return fail(llvm::toString(text.takeError()));
    trainSet = std::move(text->train);
    testSet = std::move(text->validation);
    unigramLoss = text->unigramLoss;
    llvm::outs() << config.tool << ": " << config.dataFile << ": "
                 << text->bytes << " bytes, " << trainSet.count
                 << " training and " << testSet.count << " validation windows "
                 << "of " << features << " (unigram baseline "
                 << llvm::format("%.4f", unigramLoss) << " nats/byte)\n";
  } else if (dataset == "synthetic") {
    // Labelled by a random teacher over the model's classes.
    int32_t synthetic = classes >= 2 ? int32_t(classes) : 10;
    trainSet =
        makeSyntheticDataset(batch * 16, features, synthetic, seed + 1, true);
    testSet =
        makeSyntheticDataset(batch * 4, features, synthetic, seed + 1, false);
  } else {
    auto tr = loadFashionMnist(config.dataDir, true);
    if (!tr)
      return fail(llvm::toString(tr.takeError()));
    auto te = loadFashionMnist(config.dataDir, false);
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
    d.labels.resize(n * d.targets);
  };
  limit(trainSet, config.trainExamples);
  limit(testSet, config.testExamples);
  if (trainSet.features != features)
    return fail("the model takes " + llvm::Twine(features) +
                " features per example, the data has " +
                llvm::Twine(trainSet.features));
  // A label the logits have no class for makes every loss NaN and every
  // step "skipped": say so before the first step.
  if (classes > 0) {
    for (const Dataset *d : {&trainSet, &testSet}) {
      if (d->labels.empty())
        continue;
      auto [lo, hi] = std::minmax_element(d->labels.begin(), d->labels.end());
      if (*lo < 0 || *hi >= classes)
        return fail("the model has " + llvm::Twine(classes) +
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

  // State, initialised from the attributes.
  auto initial = initialArguments(compiled, seed);
  if (!initial)
    return fail(llvm::toString(initial.takeError()));
  std::vector<HostTensor> args = std::move(*initial);
  // Data parallelism: this process's rank of `ranks`.
  Communicator *communicator = config.communicator;
  int64_t ranks = communicator ? communicator->size() : 1;
  int64_t rank = communicator ? communicator->rank() : 0;

  // Resume: every persistent tensor must be there with its type and shape,
  // and the run must be the same configuration.
  int64_t startStep = 0;
  auto configValue = [&](llvm::StringRef key) -> std::string {
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
  if (!config.initFromPath.empty()) {
    auto checkpoint =
        loadSafetensors(config.initFromPath, /*skipUnsupported=*/true);
    if (!checkpoint)
      return fail(llvm::toString(checkpoint.takeError()));
    if (llvm::Error e =
            initializeFrom(*abi, args, *checkpoint, config.initFromPath))
      return fail(llvm::toString(std::move(e)));
    auto written = [&](llvm::StringRef key) {
      auto it = checkpoint->metadata.find(key.str());
      return it == checkpoint->metadata.end() ? std::string("?") : it->second;
    };
    llvm::outs() << config.tool << ": parameters and batch-norm state from "
                 << config.initFromPath << " (" << written("opt_level") << " "
                 << written("dtype") << " " << written("optimizer")
                 << ", step " << written("step") << ")\n";
  }
  // A network whose every parameter starts at zero cannot learn (each layer's
  // units stay identical): what amp.to_mlir writes for a PyTorch model, whose
  // weights live in PyTorch. Refused unless its values come from a file.
  if (loadPath.empty() && config.initFromPath.empty())
    if (llvm::Error e = checkNotAllZero(compiled, config.model))
      return fail(llvm::toString(std::move(e)));
  // Every rank must run the same step on the same schedule: a fingerprint
  // of the step's signature, its compile settings and the run's settings,
  // compared with rank 0's before anything else goes between them (a rank
  // with another step would otherwise hang or corrupt the others).
  if (communicator && ranks > 1) {
    std::string text = config.compileSettings;
    for (const TensorSpec &t : step->getArgumentSpecs())
      text += " " + t.str();
    text += " ->";
    for (const TensorSpec &t : step->getResultSpecs())
      text += " " + t.str();
    llvm::raw_string_ostream os(text);
    os << " " << optLevel << " " << dtype << " " << optimizer << " "
       << learningRate << " " << config.lrSchedule << " " << config.warmupSteps
       << " " << dataset << " " << seed << " " << shuffle << " " << steps
       << " " << epochs << " " << config.trainExamples << " " << loadPath
       << " " << config.initFromPath;
    uint64_t mine = llvm::xxh3_64bits(text), rankZero = mine;
    std::string e = communicator->broadcast(&rankZero, sizeof(rankZero), 0);
    // Every rank learns whether any differs, so all stop together.
    float differs = mine != rankZero, anyDiffers = 0;
    if (e.empty())
      e = communicator->allReduce(&differs, &anyDiffers, 1, RuntimeDType::F32,
                                  CollectiveOp::Max);
    if (!e.empty())
      return fail("comparing the ranks' steps: " + e);
    if (differs)
      return fail("rank " + llvm::Twine(rank) +
                  "'s step or run settings differ from rank 0's (fingerprint " +
                  llvm::utohexstr(mine) + " against " +
                  llvm::utohexstr(rankZero) +
                  "): start every rank with the same model and flags");
    if (anyDiffers)
      return fail("another rank's step or run settings differ from this "
                  "one's (rank " +
                  llvm::Twine(rank) +
                  "): start every rank with the same model and flags");
  }
  // The arguments move to where the step runs (device memory for CUDA).
  auto opened = openStepSession(compiled, std::move(args));
  if (!opened)
    return fail(llvm::toString(opened.takeError()));
  std::unique_ptr<StepSession> session = std::move(*opened);
  args.clear();
  // Every rank starts from rank 0's state (the same seed gives the same
  // initial values; a checkpoint each rank read may not).
  if (communicator && ranks > 1)
    if (llvm::Error e = broadcastPersistent(*session, *abi, *communicator))
      return fail("broadcasting the initial state from rank 0: " +
                  llvm::toString(std::move(e)));
  double finalScale = 1.0;
  if (abi->scaler.size() == 2) {
    auto scale = session->get(abi->scaler[0]);
    if (!scale)
      return fail(llvm::toString(scale.takeError()));
    finalScale = scale->getAsDouble(0);
  }

  auto save = [&](int64_t done) -> llvm::Error {
    Checkpoint checkpoint;
    for (auto &[name, index] : abi->persistent) {
      auto value = session->get(index);
      if (!value)
        return value.takeError();
      checkpoint.tensors.emplace_back(name, std::move(*value));
    }
    for (const char *key : configKeys)
      checkpoint.metadata[key] = configValue(key);
    checkpoint.metadata["step"] = std::to_string(done);
    checkpoint.metadata["model"] = modelPath;
    return saveSafetensors(savePath, checkpoint);
  };

  // Batch norm's running statistics are each rank's own (DDP's default;
  // with SyncBatchNorm they agree up to the order of MPI's sums): rank 0's
  // go to every rank before an evaluation or a checkpoint, so that all
  // evaluate and save the same model.
  auto syncRunningStatistics = [&]() -> llvm::Error {
    if (!communicator || ranks < 2)
      return llvm::Error::success();
    for (auto &[name, index] : abi->persistent) {
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
  };
  // Data parallelism, replicas: a hash of the parameters, optimizer and
  // scaler state, compared with rank 0's.
  auto checkReplicas = [&](int64_t done) -> llvm::Error {
    uint64_t hash = 0;
    for (auto &[name, index] : abi->persistent) {
      if (llvm::StringRef(name).starts_with("state."))
        continue; // batch norm's running statistics: synchronized above
      auto value = session->get(index);
      if (!value)
        return value.takeError();
      uint64_t parts[2] = {
          hash, llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
                    static_cast<const uint8_t *>(value->data()),
                    value->getSizeInBytes()))};
      hash = llvm::xxh3_64bits(llvm::ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(parts), sizeof(parts)));
    }
    uint64_t rankZero = hash;
    if (std::string e = config.communicator->broadcast(&rankZero,
                                                       sizeof(rankZero), 0);
        !e.empty())
      return llvm::createStringError("comparing replicas: " + e);
    if (rankZero != hash)
      return llvm::createStringError(
          "replicas diverged: rank " + std::to_string(config.communicator->rank()) +
          "'s parameters and state differ from rank 0's after step " +
          std::to_string(done));
    return llvm::Error::success();
  };

  // Data parallelism: rank r of N takes the r-th batch of each global batch
  // of N x batch examples of the (same) seeded order.
  int64_t stepsPerEpoch = trainSet.count / (batch * ranks);
  if (ranks > 1 && stepsPerEpoch < 1)
    return fail("the training set (" + llvm::Twine(trainSet.count) +
                " examples) is smaller than one global batch (" +
                llvm::Twine(ranks) + " ranks x " + llvm::Twine(batch) + ")");
  if (stepsPerEpoch < 1)
    return fail("the training set is smaller than one batch");
  int64_t totalSteps = steps >= 0 ? steps : epochs * stepsPerEpoch;
  if (startStep > totalSteps)
    return fail(loadPath + " is at step " + llvm::Twine(startStep) +
                ", past the " + llvm::Twine(totalSteps) + " steps of this run");

  // The batch's input tensor: token ids for an i32 input.
  auto inputTensor = [](const TensorSpec &spec, llvm::ArrayRef<float> x) {
    if (spec.kind != ElementKind::I32)
      return HostTensor::fromFloats(spec.kind, spec.shape, x);
    std::vector<int32_t> ids(x.begin(), x.end());
    return HostTensor::fromInts(spec.shape, ids);
  };
  // Evaluation over the whole test (validation) set, the last batch padded:
  // the accuracy of the argmax and the mean cross-entropy of the labels.
  struct Score {
    double accuracy = -1, loss = NAN;
  };
  llvm::ArrayRef<TensorSpec> evalSpecs = logitsFn->getArgumentSpecs();
  auto evaluate = [&]() -> llvm::Expected<Score> {
    int64_t correct = 0;
    double lossSum = 0;
    for (int64_t start = 0; start < testSet.count; start += batch) {
      int64_t n = std::min(batch, testSet.count - start);
      std::vector<float> x(batch * features, 0.0f);
      std::copy_n(testSet.images.begin() + start * features, n * features,
                  x.begin());
      if (llvm::Error e = session->set(0, inputTensor(evalSpecs[0], x)))
        return std::move(e);
      if (llvm::Error e =
              session->set(1, HostTensor(ElementKind::I32, evalSpecs[1].shape)))
        return std::move(e);
      auto out = session->logits();
      if (!out)
        return out.takeError();
      std::vector<float> logits = (*out)[0].toFloats();
      int64_t classes = int64_t(logits.size()) / (batch * targets);
      for (int64_t r = 0; r < n * targets; ++r) {
        auto row = logits.begin() + r * classes;
        auto top = std::max_element(row, row + classes);
        int32_t label = testSet.labels[start * targets + r];
        correct += top - row == label;
        double sum = 0;
        for (int64_t c = 0; c < classes; ++c)
          sum += std::exp(double(row[c]) - double(*top));
        lossSum += double(*top) + std::log(sum) - double(row[label]);
      }
    }
    double rows = double(testSet.count * targets);
    return Score{double(correct) / rows, lossSum / rows};
  };

  // Training.
  std::vector<int64_t> order(trainSet.count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffleRng(seed ^ 0x9e3779b97f4a7c15ULL);
  llvm::json::Array stepLog, epochLog;
  std::vector<double> stepTimes;
  int64_t skipped = 0, consecutiveSkips = 0, forwardNonfinite = 0;
  std::optional<NonfiniteSource> lastSource;
  int64_t numericsReports = 0;
  std::vector<double> plotLosses, plotScales;
  llvm::SmallVector<bool> plotSkipped;
  double epochLoss = 0;
  int64_t epochSteps = 0;
  double accuracy = -1, testLoss = NAN;
  bool hasScaler = abi->scaler.size() == 2;
  bool hasFound = abi->hasLossScaling();
  std::vector<ResultRoute> routes = stepResultRoutes(compiled);
  std::string precision = precisionLabel(config);
  llvm::outs() << config.tool << ": " << modelPath << " at " << precision
               << ", " << optimizer << " lr " << learningRate << " ("
               << config.lrSchedule << "), " << totalSteps << " steps of batch "
               << batch;
  if (compileSeconds > 0)
    llvm::outs() << ", compiled in " << llvm::format("%.2f", compileSeconds)
                 << " s";
  if (compiled.getCpuThreads) {
    int64_t threads = compiled.getCpuThreads();
    llvm::outs() << ", " << threads << (threads == 1 ? " thread" : " threads");
  }
  if (ranks > 1)
    llvm::outs() << " x " << ranks << " ranks (global batch "
                 << ranks * batch << ")";
  llvm::outs() << "\n";
  StateMemory state = getStateMemory(compiled);
  llvm::outs() << config.tool << ": state "
               << llvm::format("%.1f", state.bytes / 1048576.0)
               << " MiB ("
               << (abi->scaler.size() == 2
                       ? "parameters, optimizer state and loss scale"
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
  // Data parallelism: each step under a deadline. A collective still
  // waiting at the deadline gives up, naming the ranks it waits for (the
  // communicator's heartbeats), and ends the job; the watchdog thread backs
  // it up a few seconds later for a step stuck anywhere else.
  std::unique_ptr<StepWatchdog> watchdog;
  bool deadlines = communicator && ranks > 1 && config.dpTimeout > 0;
  if (deadlines)
    watchdog = std::make_unique<StepWatchdog>(config.tool, rank, ranks,
                                              config.dpTimeout,
                                              kWatchdogBackstopSeconds);
  // A progress bar on a terminal (stderr), plain lines otherwise.
  bool progressBar = llvm::sys::Process::StandardErrIsDisplayed();
  for (int64_t s = startStep; s < endStep; ++s) {
    int64_t inEpoch = s % stepsPerEpoch;
    if (inEpoch == 0 && shuffle)
      std::shuffle(order.begin(), order.end(), shuffleRng);
    std::vector<float> x(batch * features);
    std::vector<int32_t> y(batch * targets);
    for (int64_t r = 0; r < batch; ++r) {
      int64_t e = order[(inEpoch * ranks + rank) * batch + r];
      std::copy_n(trainSet.images.begin() + e * features, features,
                  x.begin() + r * features);
      std::copy_n(trainSet.labels.begin() + e * targets, targets,
                  y.begin() + r * targets);
    }
    if (llvm::is_contained(config.injectNonfinite, s) &&
        (config.injectRank < 0 || config.injectRank == rank))
      x[0] = std::nanf("");
    auto t0 = std::chrono::steady_clock::now();
    // The batch and learning rate, in argument order.
    llvm::Error setError =
        session->set(abi->input, inputTensor(specs[abi->input], x));
    if (!setError)
      setError =
          session->set(abi->labels, HostTensor::fromInts(labelSpec.shape, y));
    if (!setError)
      setError = session->set(
          *abi->lr,
          learningRateArgument(specs[*abi->lr],
                               float(scheduledRate(config, s, totalSteps))));
    if (setError)
      return fail("step " + llvm::Twine(s) + ": " +
                  llvm::toString(std::move(setError)));
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
      return fail("step " + llvm::Twine(s) + ": " +
                  llvm::toString(out.takeError()));
    if (ranks > 1 && (config.checkReplicas || s + 1 == endStep))
      if (llvm::Error e = checkReplicas(s))
        return fail(llvm::toString(std::move(e)));
    StepScalars scalars = readStepScalars(*abi, *out);
    double loss = scalars.loss, scale = scalars.scale;
    bool wasSkipped = scalars.skipped, collapsed = scalars.collapsed;
    if (hasScaler)
      finalScale = scale;
    skipped += wasSkipped;
    plotLosses.push_back(loss);
    plotScales.push_back(scale);
    plotSkipped.push_back(wasSkipped);
    consecutiveSkips = wasSkipped ? consecutiveSkips + 1 : 0;
    std::optional<NonfiniteSource> source =
        describeNonfinite(*abi, specs, scalars.nonfinite);
    llvm::json::Object entry{{"step", s},
                             {"loss", jsonNumber(loss)},
                             {"scale", scale},
                             {"skipped", wasSkipped}};
    if (source) {
      entry["nonfinite"] = source->what;
      entry["nonfinite_in"] = source->forward ? "forward" : "backward";
      forwardNonfinite += source->forward;
    }
    // check-numerics: where the first inf or NaN of the step was born.
    if (!abi->numerics.empty()) {
      if (std::optional<NumericsReport> origin =
              findNumericsOrigin(*abi, scalars.magnitudes)) {
        origin->step = s;
        entry["numerics"] = numericsJson(*origin);
        if (numericsReports++ < kPrintedNumericsReports) {
          llvm::outs().flush();
          llvm::errs() << config.tool << ": " << origin->describe() << "\n";
          if (numericsReports == kPrintedNumericsReports)
            llvm::errs() << config.tool
                         << ": (further reports only in the metrics)\n";
        }
      }
    }
    stepLog.push_back(std::move(entry));
    // What the last skip saw first (a streak of skips ends on a step that
    // updates).
    if (wasSkipped)
      lastSource = source;
    else
      lastSource.reset();
    if (source && source->forward) {
      llvm::outs().flush();
      llvm::errs() << config.tool << ": step " << s << ": the forward made "
                   << source->what << " inf or NaN; ";
      if (wasSkipped)
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
    if (!wasSkipped) {
      epochLoss += loss;
      ++epochSteps;
    }
    if (collapsed)
      return fail("loss scale collapsed at step " + llvm::Twine(s) +
                  ": the gradients are non-finite at every scale (NaN in the "
                  "model or data?)");
    // Whatever a skip reports: the first non-finite value of the last one.
    std::string why =
        lastSource
            ? "; the first non-finite value: " + lastSource->what +
                  ", in the " + (lastSource->forward ? "forward" : "backward")
            : "";
    if (consecutiveSkips >= maxConsecutiveSkips)
      return fail(llvm::Twine(consecutiveSkips) +
                  " steps in a row were skipped for non-finite values "
                  "(last at step " +
                  llvm::Twine(s) + ", loss scale " +
                  llvm::formatv("{0}", scale).str() + why +
                  "); stopping (--max-consecutive-skips)");
    if (config.warnConsecutiveSkips > 0 &&
        consecutiveSkips == config.warnConsecutiveSkips) {
      llvm::outs().flush();
      llvm::errs() << config.tool << ": warning: " << consecutiveSkips
                   << " steps in a row were skipped (last at step " << s
                   << ", loss scale " << llvm::formatv("{0}", scale) << why
                   << ")\n";
    }
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
      if (llvm::Error e = syncRunningStatistics())
        return fail(llvm::toString(std::move(e)));
      auto score = evaluate();
      if (!score)
        return fail(llvm::toString(score.takeError()));
      accuracy = score->accuracy;
      testLoss = score->loss;
      int64_t epoch = s / stepsPerEpoch + 1;
      double trainLoss = epochSteps ? epochLoss / epochSteps : NAN;
      if (progressBar)
        llvm::errs() << "\r" << std::string(100, ' ') << "\r";
      // A run that ends inside an epoch says how much of it ran.
      bool partial = inEpoch + 1 < stepsPerEpoch;
      llvm::outs() << "epoch " << epoch;
      if (partial)
        llvm::outs() << " (" << inEpoch + 1 << " of " << stepsPerEpoch
                     << " steps)";
      llvm::outs() << "  train loss " << llvm::format("%.4f", trainLoss);
      if (tokens)
        llvm::outs() << "  validation loss " << llvm::format("%.4f", testLoss)
                     << "  next-byte accuracy ";
      else
        llvm::outs() << "  test accuracy ";
      llvm::outs() << llvm::format("%.2f%%", 100 * accuracy) << "\n";
      llvm::outs().flush();
      llvm::json::Object entry{{"epoch", epoch},
                               {"test_accuracy_percent", 100 * accuracy},
                               {"train_loss", jsonNumber(trainLoss)}};
      if (tokens)
        entry["validation_loss"] = jsonNumber(testLoss);
      if (partial)
        entry["steps"] = inEpoch + 1;
      epochLog.push_back(std::move(entry));
      epochLoss = 0;
      epochSteps = 0;
    }
  }
  if (llvm::Error e = syncRunningStatistics())
    return fail(llvm::toString(std::move(e)));
  if (!savePath.empty())
    if (llvm::Error e = save(endStep))
      return fail(llvm::toString(std::move(e)));
  if (endStep == startStep) {
    auto score = evaluate();
    if (!score)
      return fail(llvm::toString(score.takeError()));
    accuracy = score->accuracy;
    testLoss = score->loss;
  }

  std::vector<double> sorted = stepTimes;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  llvm::outs() << "summary: ";
  if (tokens)
    llvm::outs() << "validation loss " << llvm::format("%.4f", testLoss)
                 << " nats/byte, "
                 << llvm::format("%.1f%%", 100 * (1 - testLoss / unigramLoss))
                 << " below the unigram baseline "
                 << llvm::format("%.4f", unigramLoss) << ", next-byte accuracy ";
  else
    llvm::outs() << "test accuracy ";
  llvm::outs() << llvm::format("%.2f%%", 100 * accuracy) << ", " << skipped
               << " skipped steps, ";
  // Without dynamic scaling there is no scale to report (bf16, O0, static).
  if (hasScaler)
    llvm::outs() << "final scale " << finalScale;
  else
    llvm::outs() << "no dynamic loss scale";
  llvm::outs() << ", median step " << llvm::format("%.2f", median) << " ms\n";
  if (!plotPath.empty()) {
    std::string title = (llvm::sys::path::filename(modelPath) + " at " +
                         precision + ", " + optimizer)
                            .str();
    if (llvm::Error e = writeFileAtomically(
            plotPath,
            renderTrainingPlot(title, plotLosses,
                               hasScaler ? llvm::ArrayRef<double>(plotScales)
                                         : llvm::ArrayRef<double>(),
                               plotSkipped)))
      return fail(llvm::toString(std::move(e)));
  }
  if (!metricsPath.empty()) {
    llvm::json::Object metrics{
        {"config",
         llvm::json::Object{
             {"model", modelPath},
             {"opt_level", optLevel},
             {"dtype", dtype},
             {"backend", config.backend},
             {"threads", compiled.getCpuThreads ? compiled.getCpuThreads() : 0},
             {"optimizer", optimizer},
             {"lr", learningRate},
             {"lr_schedule", config.lrSchedule},
             {"warmup_steps", config.warmupSteps},
             {"dataset", dataset},
             {"batch", batch},
             {"ranks", ranks},
             {"steps", totalSteps},
             {"seed", int64_t(seed)},
             {"shuffle", shuffle}}},
        {"steps", std::move(stepLog)},
        {"epochs", std::move(epochLog)},
        {"test_accuracy_percent", 100 * accuracy},
        {"test_loss", jsonNumber(testLoss)},
        {"skipped_steps", skipped},
        {"forward_nonfinite_steps", forwardNonfinite},
        {"final_scale", hasScaler ? llvm::json::Value(finalScale) : nullptr},
        {"step_time_ms_median", median},
        {"compile_time_s", compileSeconds},
        // The state the run carries across steps, and the part of it held
        // twice (0: every update in place).
        {"state_bytes", int64_t(state.bytes)},
        {"state_bytes_double_buffered", int64_t(state.doubleBuffered)},
        // The step's planned working memory (null: not planned).
        {"planned_step_bytes", plannedStepBytes(compiled)}};
    if (tokens)
      metrics["unigram_loss"] = unigramLoss;
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(metrics))) << "\n";
    if (llvm::Error e = writeFileAtomically(metricsPath, text))
      return fail(llvm::toString(std::move(e)));
  }
  return 0;
}
