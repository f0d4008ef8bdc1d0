//===- amp-compile.cpp - Compile a model's training step ahead of time ----===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-compile MODEL.mlir -o step.so: runs amp-pipeline, lowers the training
// step and the logits function for the CPU or CUDA, and links them with the
// runtime into a shared object amp-train (or amp-run --artifact) loads on a
// machine without MLIR. docs/UserGuide.md describes the artifact.
// --verify-only stops after the pipeline and the checks (amp.explain).
// Compiled steps are kept in the compile cache (ArtifactCache.h): a model
// compiled before with the same options is copied out of it at once.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Artifact.h"
#include "amp/Execution/ArtifactCache.h"
#include "amp/Execution/ArtifactCompiler.h"
#include "amp/InitAll.h"
#include "amp/Training/CompileFlags.h"
#include "amp/Training/TrainingModule.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <ctime>
#include <unistd.h>

using namespace mlir;
using namespace amp;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("amp-compile options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.mlir>"),
                               cl::cat(category));
cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print each compile phase's wall time as it ends (parse, "
             "amp-pipeline, lowering, LLVM IR, split, LLVM optimization and "
             "machine code, link): the progress of a long compile. Default: "
             "on when stderr is a terminal"),
    cl::init(false), cl::cat(category));
cl::opt<unsigned> jobs(
    "jobs",
    cl::desc("Threads that optimize and compile the parts of a large step "
             "(0, the default: one per core). The parts depend on the step "
             "alone: the artifact is the same for every count"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
cl::opt<unsigned> splitInstructions(
    "split-instructions",
    cl::desc("LLVM instructions per part of a step compiled in parallel "
             "parts (a step under twice this is compiled whole)"),
    cl::init(40000), cl::Hidden, cl::cat(category));
cl::opt<unsigned> glueInstructions(
    "glue-instructions",
    cl::desc("A function without loops of at least this many LLVM "
             "instructions is glue: optimized as the rest, its machine code "
             "generated without optimization (0: none)"),
    cl::init(4000), cl::Hidden, cl::cat(category));
cl::opt<bool> verifyEach(
    "verify-each",
    cl::desc("Verify the module after each lowering pass (as mlir-opt's "
             "--verify-each), not only the lowered module once"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> attention(
    "attention",
    cl::desc("How train.attention runs on the CPU: 'fused' (the runtime's "
             "flash-style kernels, O(S) memory) or 'decomposed' "
             "(batch_matmul, softmax, batch_matmul: the [Sq, Sk] scores kept "
             "for the backward pass; for comparison)"),
    cl::init("fused"), cl::cat(category));
cl::opt<std::string> lmHead(
    "lm-head",
    cl::desc("How train.linear_cross_entropy (a bias-free head and its "
             "cross-entropy, fused by autodiff) runs on the CPU: 'fused' (the "
             "runtime's kernels, the logits a block of rows at a time) or "
             "'decomposed' (matmul, cast, cross_entropy: the [N, V] logits "
             "whole; for comparison)"),
    cl::init("fused"), cl::cat(category));
cl::alias jobsShort("j", cl::desc("Alias for --jobs (-j N)"),
                    cl::aliasopt(jobs), cl::cat(category));
cl::opt<bool> quiet("quiet", cl::desc("No progress lines on a terminal"),
                    cl::init(false), cl::cat(category));
cl::opt<std::string> modelName(
    "model-name",
    cl::desc("The model's name in the artifact's manifest (amp-train "
             "--describe, checkpoints) and in the compile cache's key "
             "(default: the model file's path)"),
    cl::value_desc("name"), cl::init(""), cl::cat(category));
cl::opt<bool> cacheList("cache-list",
                        cl::desc("List the compile cache's entries (most "
                                 "recently used first) and exit"),
                        cl::init(false), cl::cat(category));
cl::opt<bool> cacheClear("cache-clear",
                         cl::desc("Remove every entry of the compile cache "
                                  "and exit"),
                         cl::init(false), cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("The artifact to write (.so)"),
                                cl::value_desc("file"), cl::cat(category));
cl::opt<bool> verifyOnly(
    "verify-only",
    cl::desc("Run amp-pipeline, verify the step and build its evaluation "
             "function, then stop: no code, no -o (what amp.explain runs)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> memoryPlanPath(
    "memory-plan",
    cl::desc("Also write the step's memory plan (amp-plan-memory) as JSON to "
             "<file> ('-': standard output); with --verify-only the step is "
             "lowered for the CPU to plan it, still without code (what "
             "amp.explain's memory line reads). CPU backend only"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
// The CPU by default: it is on every machine (a CUDA artifact compiles
// without a GPU but needs one to train).
cl::opt<std::string> backend("backend", cl::desc("cpu or cuda (default: cpu)"),
                             cl::init("cpu"), cl::cat(category));
cl::opt<std::string>
    cpu("cpu",
        cl::desc("Host CPU of the code (LLVM name; default: this machine's "
                 "for cpu artifacts, x86-64 for cuda artifacts)"),
        cl::init(""), cl::cat(category));
cl::opt<std::string> chip("chip",
                          cl::desc("GPU architecture (cuda) (default: sm_90)"),
                          cl::init("sm_90"), cl::cat(category));
cl::opt<std::string> kernelFormat(
    "kernel-format",
    cl::desc("How the kernels are embedded (cuda): fatbin (SASS for --chip "
             "plus PTX), bin (SASS) or isa (PTX, compiled by the driver at "
             "load) (default: fatbin)"),
    cl::init("fatbin"), cl::cat(category));

/// Writes `plan` as JSON to --memory-plan's file ("-": stdout; nothing
/// without the option), atomically; "{}" where the step has none.
llvm::Error writeMemoryPlan(const MemoryPlan &plan) {
  if (memoryPlanPath.empty())
    return llvm::Error::success();
  std::string text = (plan.empty() ? "{}" : serializeMemoryPlan(plan)) + "\n";
  if (memoryPlanPath == "-") {
    llvm::outs() << text;
    return llvm::Error::success();
  }
  return llvm::writeToOutput(memoryPlanPath, [&](llvm::raw_ostream &os) {
    os << text;
    return llvm::Error::success();
  });
}

/// Prints the memory plan of the step of the artifact at `path` (its
/// manifest's), where it has one, and writes it to --memory-plan's file.
llvm::Error reportMemoryPlan(llvm::StringRef path) {
  auto artifact = Artifact::load(path, /*openDevice=*/false);
  if (!artifact) {
    // The plan is a report: without --memory-plan nothing depends on it.
    if (memoryPlanPath.empty()) {
      llvm::consumeError(artifact.takeError());
      return llvm::Error::success();
    }
    return llvm::createStringError("cannot read the memory plan of " + path +
                                   ": " + llvm::toString(artifact.takeError()));
  }
  const ArtifactFunctionInfo &step = (*artifact)->getManifest().step;
  if (!step.memoryPlan.empty() && memoryPlanPath != "-")
    llvm::outs() << "amp-compile: memory plan of @" << step.name << ": "
                 << step.memoryPlan.str() << "\n";
  return writeMemoryPlan(step.memoryPlan);
}

int fail(const llvm::Twine &message) {
  llvm::errs() << "amp-compile: error: " << message << "\n";
  return 1;
}

/// --cache-list / --cache-clear.
int cacheCommand(const ArtifactCacheSettings &settings) {
  ArtifactCache cache = ArtifactCache::open(settings, llvm::errs());
  if (cacheClear) {
    auto removed = cache.clear();
    if (!removed)
      return fail(llvm::toString(removed.takeError()));
    llvm::outs() << "amp-compile: removed " << *removed << " cached step"
                 << (*removed == 1 ? "" : "s") << " from "
                 << cache.getDirectory() << "\n";
    return 0;
  }
  std::vector<ArtifactCacheEntry> entries = cache.list();
  uint64_t total = 0;
  for (const ArtifactCacheEntry &entry : entries)
    total += entry.bytes;
  llvm::outs() << "compile cache " << cache.getDirectory() << ": "
               << entries.size() << " step" << (entries.size() == 1 ? "" : "s")
               << ", " << llvm::format("%.1f", total / 1048576.0) << " of "
               << llvm::format("%.0f", settings.maxBytes / 1048576.0)
               << " MiB" << (settings.enabled ? "" : " (AMP_CACHE=0: unused)")
               << "\n";
  for (const ArtifactCacheEntry &entry : entries) {
    std::time_t seconds = std::time_t(entry.lastUsed / 1000000000);
    char when[32];
    std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S",
                  std::localtime(&seconds));
    llvm::outs() << entry.key.substr(0, 16) << "  "
                 << llvm::format("%8.1f", entry.bytes / 1048576.0) << " MiB  "
                 << when << "  " << entry.model << "  " << entry.options
                 << "\n";
  }
  return 0;
}

/// Copies `from` to `to` atomically (a temporary beside `to`, renamed).
llvm::Error copyOut(llvm::StringRef from, llvm::StringRef to) {
  std::string temporary = (to + ".tmp-" + llvm::Twine(::getpid())).str();
  if (std::error_code ec = llvm::sys::fs::copy_file(from, temporary)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(ec, "cannot write next to " + to + ": " +
                                           ec.message());
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, to)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(ec, "cannot rename the artifact to " + to +
                                           ": " + ec.message());
  }
  return llvm::Error::success();
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &getCompileFlagsCategory()});
  AmpPipelineOptions options;
  if (!parseToolCommandLine(
          argc, argv, "amp-compile",
          "amp-compile: compile a model's mixed-precision training step to a "
          "shared object\n",
          &options))
    return 1;
  if (backend != "cpu" && backend != "cuda")
    return fail("--backend must be cpu or cuda, got '" + backend + "'");
  auto settings = ArtifactCacheSettings::fromEnvironment();
  if (!settings)
    return fail(llvm::toString(settings.takeError()));
  if (cacheList || cacheClear)
    return cacheCommand(*settings);
  if (modelPath.empty())
    return fail("no model: amp-compile <model.mlir> -o <file>");
  if (outputPath.empty() && !verifyOnly)
    return fail("-o <file> names the artifact to write (or --verify-only "
                "compiles nothing)");
  if (!memoryPlanPath.empty() && backend != "cpu")
    return fail("--memory-plan is the CPU backend's (the CUDA lowering does "
                "not plan memory)");
  if (options.syncBatchnorm && options.ranks == 1)
    return fail("--sync-batchnorm needs a data-parallel step (--ranks=N, N "
                "> 1)");

  ArtifactOptions artifactOptions;
  artifactOptions.backend = backend;
  artifactOptions.cpu = cpu;
  artifactOptions.chip = chip;
  if (kernelFormat != "fatbin" && kernelFormat != "bin" &&
      kernelFormat != "isa")
    return fail("--kernel-format must be fatbin, bin or isa, got '" +
                kernelFormat + "'");
  artifactOptions.kernelFormat = kernelFormat;
  artifactOptions.jobs = jobs;
  artifactOptions.instructionsPerPart = splitInstructions;
  artifactOptions.glueInstructions = glueInstructions;
  artifactOptions.verifyEach = verifyEach;
  if (attention != "fused" && attention != "decomposed")
    return fail("--attention must be fused or decomposed, got '" +
                attention + "'");
  artifactOptions.fusedAttention = attention == "fused";
  if (lmHead != "fused" && lmHead != "decomposed")
    return fail("--lm-head must be fused or decomposed, got '" + lmHead +
                "'");
  artifactOptions.fusedLmHead = lmHead == "fused";
  auto budget = readMemoryBudgetFlags(backend == "cpu", "the CPU backend's");
  if (!budget)
    return fail(llvm::toString(budget.takeError()));
  artifactOptions.memoryBudget = budget->budget;
  artifactOptions.recomputeGemms = budget->recomputeGemms;

  PhaseClock clock("amp-compile",
                   timePhases || (llvm::errs().is_displayed() && !quiet));
  artifactOptions.onPhase = [&](llvm::StringRef phase, double seconds) {
    clock.report(phase, seconds);
  };

  // The manifest names the model (a cached artifact too: the name is part
  // of the key).
  std::string name = modelName.empty() ? std::string(modelPath) : modelName;

  ToolContext tool;
  tool.getContext().printOpOnDiagnostic(getPrintOpOnError());
  if (llvm::Error e = tool.recordDiagnostics(getDiagnosticsFile()))
    return fail(llvm::toString(std::move(e)));
  auto model = parseModelFile(tool.getContext(), tool.getSourceMgr(),
                              modelPath);
  if (!model)
    return fail(llvm::toString(model.takeError()));
  clock.lap("parse");
  // A step compiled before from the same module and options: copied out.
  ArtifactCache cache = ArtifactCache::open(
      verifyOnly ? ArtifactCacheSettings{false} : *settings, llvm::errs());
  std::string key;
  if (std::optional<std::string> hit =
          lookupCachedArtifact(cache, **model, name, options, artifactOptions,
                               "amp-compile", key)) {
    if (llvm::Error e = copyOut(*hit, outputPath))
      return fail(llvm::toString(std::move(e)));
    if (llvm::Error e = reportMemoryPlan(outputPath))
      return fail(llvm::toString(std::move(e)));
    return 0;
  }
  auto training =
      buildCheckedTrainingModule(std::move(*model), modelPath, options);
  if (!training)
    return fail(llvm::toString(training.takeError()));
  clock.lap("amp-pipeline");
  if (verifyOnly) {
    if (memoryPlanPath.empty())
      return 0;
    auto plan = planCpuMemory(*training->module,
                              training->getManifest(name, options).step.name,
                              artifactOptions);
    if (!plan)
      return fail(llvm::toString(plan.takeError()));
    clock.lap("lowering");
    if (llvm::Error e = writeMemoryPlan(*plan))
      return fail(llvm::toString(std::move(e)));
    return 0;
  }
  if (llvm::Error e = compileArtifact(*training->module,
                                      training->getManifest(name, options),
                                      artifactOptions, outputPath))
    return fail(llvm::toString(std::move(e)));
  storeCachedArtifact(cache, key, outputPath, name, options, artifactOptions);
  clock.report("total", clock.elapsed());
  if (llvm::Error e = reportMemoryPlan(outputPath))
    return fail(llvm::toString(std::move(e)));
  return 0;
}
