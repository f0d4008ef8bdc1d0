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
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/ArtifactCompiler.h"
#include "amp/InitAll.h"
#include "amp/Training/CompileFlags.h"
#include "amp/Training/TrainingModule.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace amp;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("amp-compile options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("The artifact to write (.so)"),
                                cl::value_desc("file"), cl::cat(category));
cl::opt<bool> verifyOnly(
    "verify-only",
    cl::desc("Run amp-pipeline, verify the step and build its evaluation "
             "function, then stop: no code, no -o (what amp.explain runs)"),
    cl::init(false), cl::cat(category));
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

int fail(const llvm::Twine &message) {
  llvm::errs() << "amp-compile: error: " << message << "\n";
  return 1;
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
  if (outputPath.empty() && !verifyOnly)
    return fail("-o <file> names the artifact to write (or --verify-only "
                "compiles nothing)");
  if (options.syncBatchnorm && options.ranks == 1)
    return fail("--sync-batchnorm needs a data-parallel step (--ranks=N, N "
                "> 1)");

  ToolContext tool;
  tool.getContext().printOpOnDiagnostic(getPrintOpOnError());
  auto training = loadTrainingModule(tool.getContext(), tool.getSourceMgr(),
                                     modelPath, options);
  if (!training)
    return fail(llvm::toString(training.takeError()));
  if (verifyOnly)
    return 0;

  ArtifactOptions artifactOptions;
  artifactOptions.backend = backend;
  artifactOptions.cpu = cpu;
  artifactOptions.chip = chip;
  if (kernelFormat != "fatbin" && kernelFormat != "bin" &&
      kernelFormat != "isa")
    return fail("--kernel-format must be fatbin, bin or isa, got '" +
                kernelFormat + "'");
  artifactOptions.kernelFormat = kernelFormat;
  if (llvm::Error e = compileArtifact(*training->module,
                                      training->getManifest(modelPath, options),
                                      artifactOptions, outputPath))
    return fail(llvm::toString(std::move(e)));
  return 0;
}
