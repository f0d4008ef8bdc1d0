//===- amp-run.cpp - Train a model with its compiled mixed-precision step -===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-run MODEL.mlir: compiles the model through amp-pipeline into the
// training step and a logits function for evaluation (an artifact, as
// amp-compile builds, kept in the compile cache: a model compiled before
// with the same options starts at once; JIT-compiled in process with
// AMP_CACHE=0 or --backend=cpu-loops), initialises parameters from their
// #train.init attributes, and trains on Fashion-MNIST or synthetic data.
// docs/UserGuide.md describes the flags, the data normalisation and the
// metrics file.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/ArtifactCache.h"
#include "amp/Execution/ArtifactCompiler.h"
#include "amp/Execution/CpuJit.h"
#include "amp/InitAll.h"
#include "amp/Runtime/CpuRuntime.h"
#include "amp/Runtime/MpiCommunicator.h"
#include "amp/Training/CompileFlags.h"
#include "amp/Training/TrainingFlags.h"
#include "amp/Training/TrainingModule.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace amp;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("amp-run options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> backend(
    "backend",
    cl::desc("cpu (CBLAS GEMMs; through the compile cache), cpu-loops "
             "(GEMMs and convolutions "
             "as generated loops: a slow reference) or cuda (cuBLASLt and "
             "generated kernels, through an artifact as amp-compile builds) "
             "(default: cpu)"),
    cl::init("cpu"), cl::cat(category));
cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print each phase of compiling the step as it ends (parse, "
             "amp-pipeline, lowering, LLVM IR, split, LLVM optimization and "
             "machine code, link), as amp-compile does: the progress of a "
             "long compile (a cache hit: parse and total). Default: on when "
             "stderr is a terminal"),
    cl::init(false), cl::cat(category));
cl::opt<bool> quiet("quiet",
                    cl::desc("No compile progress lines on a terminal"),
                    cl::init(false), cl::cat(category));

int fail(const llvm::Twine &message) {
  // One write: the ranks of a data-parallel job share stderr.
  llvm::errs() << ("amp-run: error: " + message + "\n").str();
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(
      {&category, &getCompileFlagsCategory(), &getTrainingFlagsCategory()});
  AmpPipelineOptions options;
  if (!parseToolCommandLine(
          argc, argv, "amp-run",
          "amp-run: train a model with its compiled mixed-precision step\n",
          &options))
    return 1;
  if (backend != "cpu" && backend != "cpu-loops" && backend != "cuda")
    return fail("--backend must be cpu, cpu-loops or cuda, got '" + backend +
                "'");
  auto budget = readMemoryBudgetFlags(backend != "cuda",
                                      "the CPU backends' (cpu, cpu-loops)");
  if (!budget)
    return fail(llvm::toString(budget.takeError()));
  TrainingConfig config = readTrainingFlags("amp-run");
  config.model = modelPath;
  config.optLevel = train::stringifyOptLevel(options.optLevel).str();
  config.dtype = train::stringifyLowType(options.dtype).str();
  config.optimizer = train::stringifyOptimizerKind(options.optimizer).str();
  config.backend = backend;
  if (llvm::Error e = validateConfig(config))
    return fail(llvm::toString(std::move(e)));

  // Data parallelism: join the mpirun job and compile for its size.
  if (config.dataParallel && backend == "cpu-loops")
    return fail("--data-parallel runs on the cpu and cuda backends (not on "
                "cpu-loops, whose steps have no collectives)");
  auto joined = joinDataParallelJob(config);
  if (!joined)
    return fail(llvm::toString(joined.takeError()));
  std::unique_ptr<Communicator> communicator = std::move(*joined);
  // From here on a failing rank ends the job (the others may be waiting for
  // it, e.g. in NCCL's start on the GPU).
  auto finish = [&](int status) {
    return finishRank(status, communicator.get());
  };
  if (communicator) {
    int64_t size = communicator->size();
    if (options.ranks != 1 && options.ranks != size)
      return finish(fail("--ranks=" + llvm::Twine(int64_t(options.ranks)) +
                         " but mpirun started " + llvm::Twine(size) +
                         " processes (--data-parallel sets --ranks itself)"));
    options.ranks = size;
    for (auto &[name, value] : getPrintedOptions(options))
      config.compileSettings += name + "=" + value + " ";
  } else if (options.ranks != 1) {
    return fail("--ranks=" + llvm::Twine(int64_t(options.ranks)) +
                " compiles a data-parallel step: run it with --data-parallel "
                "under mpirun");
  } else if (options.syncBatchnorm) {
    return fail("--sync-batchnorm needs --data-parallel");
  }

  auto settings = ArtifactCacheSettings::fromEnvironment();
  if (!settings)
    return finish(fail(llvm::toString(settings.takeError())));
  // Progress of the compile: rank 0 of a data-parallel job alone.
  PhaseClock clock("amp-run",
                   (timePhases || (llvm::errs().is_displayed() && !quiet)) &&
                       (!communicator || communicator->rank() == 0));
  ToolContext tool;
  tool.getContext().printOpOnDiagnostic(getPrintOpOnError());
  // The diagnostics file, as the metrics: rank 0's alone (every rank
  // compiles the same step).
  if (!communicator || communicator->rank() == 0)
    if (llvm::Error e = tool.recordDiagnostics(getDiagnosticsFile()))
      return finish(fail(llvm::toString(std::move(e))));
  auto model = parseModelFile(tool.getContext(), tool.getSourceMgr(),
                              modelPath);
  if (!model)
    return finish(fail(llvm::toString(model.takeError())));
  clock.lap("parse");

  CompiledStep compiled;
  std::unique_ptr<CpuFunction> step, logits;
  std::unique_ptr<Artifact> artifact;
  // The ahead-of-time path (CUDA always; the CPU with the compile cache):
  // an artifact, loaded in process, the same code amp-compile + amp-train
  // run.
  if (backend == "cuda" || (backend == "cpu" && settings->enabled)) {
    ArtifactOptions artifactOptions;
    artifactOptions.backend = backend;
    artifactOptions.memoryBudget = budget->budget;
    artifactOptions.recomputeGemms = budget->recomputeGemms;
    artifactOptions.onPhase = [&](llvm::StringRef phase, double seconds) {
      clock.report(phase, seconds);
    };
    ArtifactCache cache = ArtifactCache::open(*settings, llvm::errs());
    std::string key;
    std::string path =
        lookupCachedArtifact(cache, **model, modelPath, options,
                             artifactOptions, "amp-run", key)
            .value_or("");
    llvm::SmallString<128> temporary;
    std::optional<llvm::FileRemover> remover;
    if (path.empty()) {
      auto training =
          buildCheckedTrainingModule(std::move(*model), modelPath, options);
      if (!training)
        return finish(fail(llvm::toString(training.takeError())));
      clock.lap("amp-pipeline");
      if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
              "amp-run-step", "so", temporary))
        return finish(fail("cannot create a temporary file: " + ec.message()));
      remover.emplace(temporary);
      if (llvm::Error e = compileArtifact(
              *training->module, training->getManifest(modelPath, options),
              artifactOptions, temporary))
        return finish(fail(llvm::toString(std::move(e))));
      storeCachedArtifact(cache, key, temporary, modelPath, options,
                          artifactOptions);
      path = std::string(temporary);
    }
    auto loaded = Artifact::load(path);
    if (!loaded)
      return finish(fail(llvm::toString(loaded.takeError())));
    artifact = std::move(*loaded);
    compiled = artifact->getCompiledStep();
  } else {
    auto training =
        buildCheckedTrainingModule(std::move(*model), modelPath, options);
    if (!training)
      return finish(fail(llvm::toString(training.takeError())));
    clock.lap("amp-pipeline");
    CpuCompileOptions compileOptions;
    compileOptions.blas = backend == "cpu";
    compileOptions.memoryBudget = budget->budget;
    compileOptions.recomputeGemms = budget->recomputeGemms;
    auto stepFn = CpuFunction::compile(*training->module, training->stepName,
                                       compileOptions);
    if (!stepFn)
      return finish(fail(llvm::toString(stepFn.takeError())));
    auto logitsFn = CpuFunction::compile(*training->module,
                                         training->logitsName, compileOptions);
    if (!logitsFn)
      return finish(fail(llvm::toString(logitsFn.takeError())));
    step = std::move(*stepFn);
    logits = std::move(*logitsFn);
    compiled.step = step.get();
    compiled.logits = logits.get();
    compiled.abi = training->abi;
    compiled.inits = training->inits;
    compiled.setCpuThreads = &amp_cpu_set_num_threads;
    compiled.getCpuThreads = &amp_cpu_get_num_threads;
    compiled.cpuMemoryStats = &amp_cpu_memory_stats;
    compiled.resetCpuMemoryPeak = &amp_cpu_memory_reset_peak;
    compiled.setCommunicator = [](Communicator *communicator) {
      amp_cpu_set_communicator(communicator);
      return std::string();
    };
    compiled.ranks = options.ranks;
    clock.lap("JIT compile");
  }
  config.compileSeconds = clock.elapsed();
  clock.report("total", config.compileSeconds);
  return finish(runTraining(config, compiled));
}
