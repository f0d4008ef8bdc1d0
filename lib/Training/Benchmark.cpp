//===- Benchmark.cpp - Timing a compiled step on a fixed batch ------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-run's and amp-train's --bench-steps: the step's time alone, as the
// GPU benchmarks (bench/gpu) compare it with PyTorch's: one random batch
// set once (on the device for CUDA), untimed warm-up steps, then each step
// timed from its call until its scalars are on the host (the one host sync a
// step has, as GradScaler's has).
//
//===----------------------------------------------------------------------===//

#include "amp/Training/Checkpoint.h"
#include "amp/Training/Trainer.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

using namespace amp;

/// A random value for an input argument of `spec`: integers in [0, 10)
/// (valid labels and token ids for any model of 10 or more classes and
/// vocabulary entries), floats uniform in [0, 1).
static HostTensor randomInput(const TensorSpec &spec, std::mt19937_64 &rng) {
  int64_t n = spec.getNumElements();
  if (spec.kind == ElementKind::I32) {
    std::uniform_int_distribution<int32_t> ints(0, 9);
    std::vector<int32_t> values(n);
    for (int32_t &v : values)
      v = ints(rng);
    return HostTensor::fromInts(spec.shape, values);
  }
  std::uniform_real_distribution<float> floats(0.0f, 1.0f);
  std::vector<float> values(n);
  for (float &v : values)
    v = floats(rng);
  return HostTensor::fromFloats(spec.kind, spec.shape, values);
}

int amp::runBenchmark(const TrainingConfig &config,
                      const CompiledStep &compiled) {
  auto fail = [&](const llvm::Twine &message) {
    llvm::errs() << config.tool << ": error: " << message << "\n";
    return 1;
  };
  const StepAbi &abi = compiled.abi;
  llvm::ArrayRef<TensorSpec> specs = compiled.step->getArgumentSpecs();
  auto initial = initialArguments(compiled, config.seed);
  if (!initial)
    return fail(llvm::toString(initial.takeError()));
  std::vector<HostTensor> args = std::move(*initial);
  std::mt19937_64 rng(config.seed + 1);
  for (unsigned i = abi.input; i <= abi.labels; ++i)
    args[i] = randomInput(specs[i], rng);
  if (abi.lr)
    args[*abi.lr] = learningRateArgument(specs[*abi.lr],
                                         float(config.learningRate));

  auto opened = openStepSession(compiled, std::move(args));
  if (!opened)
    return fail(llvm::toString(opened.takeError()));
  std::unique_ptr<StepSession> session = std::move(*opened);
  int64_t batch =
      specs[abi.input].shape.empty() ? 1 : specs[abi.input].shape[0];
  args.clear();

  std::vector<ResultRoute> routes = stepResultRoutes(compiled);
  bool hasFound = abi.hasLossScaling();
  std::vector<double> times;
  int64_t skipped = 0;
  double loss = NAN, scale = 1.0;
  // The step's working memory: the most its buffers held over the timed
  // steps, above what the runtime held before them.
  bool countsMemory = compiled.cpuMemoryStats && compiled.resetCpuMemoryPeak;
  uint64_t heldBefore = 0, stepPeak = 0;
  for (int64_t s = 0; s < config.benchWarmup + config.benchSteps; ++s) {
    if (countsMemory && s == config.benchWarmup) {
      compiled.cpuMemoryStats(&heldBefore, nullptr);
      compiled.resetCpuMemoryPeak();
    }
    auto t0 = std::chrono::steady_clock::now();
    auto out = session->step(routes);
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    if (!out)
      return fail("step " + llvm::Twine(s) + ": " +
                  llvm::toString(out.takeError()));
    StepScalars scalars = readStepScalars(abi, *out);
    loss = scalars.loss;
    scale = scalars.scale;
    if (s >= config.benchWarmup) {
      times.push_back(ms);
      skipped += scalars.skipped;
    }
  }
  if (countsMemory) {
    uint64_t peak = 0;
    compiled.cpuMemoryStats(nullptr, &peak);
    stepPeak = peak > heldBefore ? peak - heldBefore : 0;
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  std::optional<StepSession::MemoryStats> memory = session->getDeviceMemory();

  llvm::outs() << config.tool << ": benchmark of " << config.model << " at "
               << precisionLabel(config) << ", "
               << config.optimizer << " (" << config.backend;
  if (compiled.getCpuThreads) {
    int64_t threads = compiled.getCpuThreads();
    llvm::outs() << ", " << threads << (threads == 1 ? " thread" : " threads");
  }
  llvm::outs() << "), batch "
               << batch << ": " << config.benchSteps << " steps after "
               << config.benchWarmup << " warm-up\n"
               << "median step " << llvm::format("%.3f", median) << " ms (min "
               << llvm::format("%.3f", sorted.front()) << ", max "
               << llvm::format("%.3f", sorted.back()) << "), "
               << llvm::format("%.1f", 1000.0 / median) << " steps/s";
  if (memory)
    llvm::outs() << ", peak device memory "
                 << llvm::format("%.1f", memory->peakInUse / 1048576.0)
                 << " MiB in use ("
                 << llvm::format("%.1f", memory->peakHeld / 1048576.0)
                 << " MiB held)";
  const MemoryPlan &plan = compiled.step->getMemoryPlan();
  if (countsMemory) {
    llvm::outs() << ", peak step memory "
                 << llvm::format("%.1f", stepPeak / 1048576.0) << " MiB";
    if (!plan.empty())
      llvm::outs() << " (planned "
                   << llvm::format("%.1f", plan.arenaBytes / 1048576.0)
                   << " MiB)";
  }
  llvm::outs() << "; last loss " << llvm::format("%.4f", loss) << ", "
               << skipped << " skipped\n";
  if (!std::isfinite(loss) && !hasFound)
    return fail("the loss is not finite");
  if (config.metricsPath.empty())
    return 0;
  auto bytes = [&](uint64_t v) -> llvm::json::Value {
    if (!memory)
      return nullptr;
    return int64_t(v);
  };
  llvm::json::Object metrics{
      {"config", llvm::json::Object{{"model", config.model},
                                    {"opt_level", config.optLevel},
                                    {"dtype", config.dtype},
                                    {"backend", config.backend},
                                    {"optimizer", config.optimizer},
                                    {"lr", config.learningRate},
                                    {"batch", batch},
                                    {"warmup", config.benchWarmup},
                                    {"steps", config.benchSteps},
                                    {"seed", int64_t(config.seed)}}},
      {"step_ms", llvm::json::Array(times)},
      {"step_ms_median", median},
      {"step_ms_min", sorted.front()},
      {"step_ms_max", sorted.back()},
      {"steps_per_s", 1000.0 / median},
      {"peak_bytes_in_use", bytes(memory ? memory->peakInUse : 0)},
      {"peak_bytes_held", bytes(memory ? memory->peakHeld : 0)},
      // A CPU step's own buffers at their peak (null for CUDA steps).
      {"peak_step_bytes", countsMemory ? llvm::json::Value(int64_t(stepPeak))
                                       : llvm::json::Value(nullptr)},
      // Its plan's arena, known before the first step (null: no plan).
      {"planned_step_bytes", plannedStepBytes(compiled)},
      {"last_loss", std::isfinite(loss) ? llvm::json::Value(loss)
                                        : llvm::json::Value(nullptr)},
      // As amp-run's metrics: null without a dynamic loss scale.
      {"final_scale", abi.scaler.size() == 2 ? llvm::json::Value(scale)
                                             : llvm::json::Value(nullptr)},
      {"skipped_steps", skipped}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(metrics))) << "\n";
  if (llvm::Error e = writeFileAtomically(config.metricsPath, text))
    return fail(llvm::toString(std::move(e)));
  return 0;
}
