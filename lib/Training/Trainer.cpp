//===- Trainer.cpp - The training loop around a compiled step -------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Trainer.h"
#include "amp/Runtime/Collectives.h"
#include "amp/Training/Checkpoint.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <random>

using namespace amp;

std::string amp::precisionLabel(const TrainingConfig &config) {
  return config.optLevel + " " + (config.optLevel == "O0" ? "f32" : config.dtype);
}

llvm::Error amp::validateConfig(const TrainingConfig &config) {
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  if (config.dataset != "fashion-mnist" && config.dataset != "synthetic" &&
      config.dataset != "text" && config.dataset != "safetensors")
    return err("--dataset must be fashion-mnist, synthetic, text or "
               "safetensors, got '" +
               config.dataset + "'");
  if (config.dataset == "text" && config.dataFile.empty())
    return err("--dataset=text needs --data-file=FILE (a text file, or a "
               "directory of them such as /usr/share/games/fortunes)");
  if (config.dataset == "safetensors" && config.dataFile.empty())
    return err("--dataset=safetensors needs --data-file=FILE (a safetensors "
               "file: one tensor per model input, named as its argument, and "
               "`labels`)");
  if (config.dataset != "text" && config.dataset != "safetensors" &&
      !config.dataFile.empty())
    return err("--data-file is the data of --dataset=text or safetensors; "
               "--dataset is '" +
               config.dataset + "'");
  if (!(config.valFraction > 0 && config.valFraction < 1))
    return err("--val-fraction must be in (0, 1), got " +
               llvm::Twine(std::to_string(config.valFraction)));
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

llvm::Expected<std::vector<HostTensor>>
amp::initialArguments(const CompiledStep &compiled, uint64_t seed) {
  llvm::ArrayRef<TensorSpec> specs = compiled.step->getArgumentSpecs();
  const StepAbi &abi = compiled.abi;
  auto err = [](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), m);
  };
  std::mt19937_64 rng(seed);
  // Counters (#train.init<seed>) draw from a stream of their own, so that
  // the parameters' values do not depend on where a counter sits.
  std::mt19937_64 counterRng(seed ^ 0xd1b54a32d192ed03ULL);
  std::vector<HostTensor> args;
  for (const TensorSpec &spec : specs)
    args.emplace_back(spec.kind, spec.shape);
  unsigned nextMaster = 0;
  // In argument order: the draws from `rng` follow it.
  for (const auto &[i, init] : compiled.inits) {
    if (i >= specs.size())
      return err("initializer for argument #" + llvm::Twine(i) +
                 " of a step with " + llvm::Twine(specs.size()));
    if (specs[i].kind == ElementKind::I32) { // a counter (train.increment)
      auto ints = initialInts(init, specs[i].getNumElements(),
                              init.kind == "seed" ? counterRng : rng);
      if (!ints)
        return err("argument #" + llvm::Twine(i) + ": " +
                   llvm::toString(ints.takeError()));
      args[i] = HostTensor::fromInts(specs[i].shape, *ints);
      continue;
    }
    auto values = initialValues(init, specs[i].getNumElements(), rng);
    if (!values)
      return err("argument #" + llvm::Twine(i) + ": " +
                 llvm::toString(values.takeError()));
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
