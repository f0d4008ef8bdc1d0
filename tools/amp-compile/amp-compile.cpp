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
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/ArtifactCompiler.h"
#include "amp/InitAll.h"
#include "amp/Training/TrainingModule.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace amp;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("amp-compile options");
cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.mlir>"),
                               cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("The artifact to write (.so)"),
                                cl::value_desc("file"), cl::Required,
                                cl::cat(category));
cl::opt<std::string> backend("backend", cl::desc("cpu or cuda"),
                             cl::init("cuda"), cl::cat(category));
cl::opt<std::string> optLevel("opt-level", cl::desc("O0, O1, O2 or O3"),
                              cl::init("O1"), cl::cat(category));
cl::opt<std::string> dtype("dtype", cl::desc("f16 or bf16"), cl::init("f16"),
                           cl::cat(category));
cl::opt<std::string> optimizer("optimizer",
                               cl::desc("sgd, momentum, adam or adamw"),
                               cl::init("adam"), cl::cat(category));
cl::opt<double> initScale(
    "init-scale",
    cl::desc("Initial loss scale (f16 at O1/O2; 0: 65536, GradScaler's)"),
    cl::init(0.0), cl::cat(category));
cl::opt<std::string>
    cpu("cpu",
        cl::desc("Host CPU of the code (LLVM name; default: this machine's "
                 "for cpu artifacts, x86-64 for cuda artifacts)"),
        cl::init(""), cl::cat(category));
cl::opt<std::string> chip("chip", cl::desc("GPU architecture (cuda)"),
                          cl::init("sm_90"), cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::errs() << "amp-compile: error: " << message << "\n";
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "amp-compile: compile a model's mixed-precision training step to a "
      "shared object\n");
  if (optLevel != "O0" && optLevel != "O1" && optLevel != "O2" &&
      optLevel != "O3")
    return fail("--opt-level must be O0, O1, O2 or O3, got '" + optLevel + "'");
  if (dtype != "f16" && dtype != "bf16")
    return fail("--dtype must be f16 or bf16, got '" + dtype + "'");
  if (!(initScale >= 0) || !std::isfinite(initScale))
    return fail("--init-scale must be positive and finite (0: the default)");
  if (backend != "cpu" && backend != "cuda")
    return fail("--backend must be cpu or cuda, got '" + backend + "'");

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
  OwningOpRef<ModuleOp> model = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!model)
    return fail("cannot parse " + modelPath);

  AmpPipelineOptions options;
  options.optLevel = optLevel;
  options.dtype = dtype;
  options.optimizer = optimizer;
  options.initScale = initScale;
  auto training = buildTrainingModule(std::move(model), options);
  if (!training)
    return fail(modelPath + ": " + llvm::toString(training.takeError()));

  ArtifactManifest manifest;
  manifest.model = modelPath;
  manifest.optLevel = optLevel;
  manifest.dtype = dtype;
  manifest.optimizer = optimizer;
  manifest.step.name = training->stepName;
  manifest.logits.name = training->logitsName;
  manifest.abi = training->abi;
  manifest.inits = training->inits;
  ArtifactOptions artifactOptions;
  artifactOptions.backend = backend;
  artifactOptions.cpu = cpu;
  artifactOptions.chip = chip;
  if (llvm::Error e = compileArtifact(*training->module, std::move(manifest),
                                      artifactOptions, outputPath))
    return fail(llvm::toString(std::move(e)));
  return 0;
}
