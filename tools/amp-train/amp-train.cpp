//===- amp-train.cpp - Train with an ahead-of-time compiled step ----------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// amp-train STEP.so: loads an artifact of amp-compile and trains with it,
// taking amp-run's training flags (with --data-parallel, as one rank of an
// mpirun job). Links no MLIR or LLVM shared library: it runs where only the
// artifact, the CUDA driver and cuBLASLt (and, data-parallel, OpenMPI) are.
//
//===----------------------------------------------------------------------===//

#include "amp/Execution/Artifact.h"
#include "amp/Training/TrainingFlags.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdint>
#include <sys/random.h>

using namespace amp;
namespace cl = llvm::cl;

/// LLVM Support's static archive calls arc4random, new in glibc 2.36 (this
/// machine's); defining it here keeps amp-train loadable where glibc is 2.34
/// or 2.35 (Ubuntu 22.04), as the artifacts are.
extern "C" uint32_t arc4random(void) {
  uint32_t value = 0;
  if (getrandom(&value, sizeof(value), 0) != sizeof(value))
    value =
        uint32_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return value;
}

namespace {
cl::OptionCategory category("amp-train options");
cl::opt<std::string> artifactPath(cl::Positional, cl::desc("<step.so>"),
                                  cl::Required, cl::cat(category));
cl::opt<bool> describe(
    "describe",
    cl::desc("Print what the artifact holds and exit (default: false)"),
    cl::init(false), cl::cat(category));

/// The artifact's manifest, readably.
void printManifest(const ArtifactManifest &m) {
  llvm::outs() << "backend " << m.backend << ", model " << m.model << " at "
               << m.optLevel << " " << m.dtype << ", " << m.optimizer << "\n";
  if (!m.pipeline.empty())
    llvm::outs() << "amp-pipeline: " << m.pipeline << "\n";
  for (const ArtifactFunctionInfo *f : {&m.step, &m.logits}) {
    llvm::outs() << "@" << f->name << "(";
    for (auto [i, spec] : llvm::enumerate(f->arguments))
      llvm::outs() << (i ? ", " : "") << spec.str();
    llvm::outs() << ") -> (";
    for (auto [i, spec] : llvm::enumerate(f->results))
      llvm::outs() << (i ? ", " : "") << spec.str();
    llvm::outs() << ")\n";
  }
  llvm::outs() << m.abi.params.size() << " parameters, "
               << m.abi.persistent.size() << " persistent tensors, "
               << m.inits.size() << " initializers, "
               << (m.abi.scaler.size() == 2 ? "dynamic" : "no dynamic")
               << " loss scaling\n";
  if (!m.abi.numerics.empty()) {
    size_t measured =
        llvm::count_if(m.abi.numerics, [](const NumericsSite &site) {
          return site.check >= 0;
        });
    size_t ops = llvm::count_if(m.abi.numerics, [](const NumericsSite &site) {
      return site.kind == NumericsSite::Kind::Op;
    });
    size_t arguments =
        llvm::count_if(m.abi.numerics, [](const NumericsSite &site) {
          return site.kind == NumericsSite::Kind::Argument;
        });
    llvm::outs() << "check-numerics: " << measured << " values measured ("
                 << ops << " op results, " << arguments << " arguments)\n";
  }
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions({&category, &getTrainingFlagsCategory()});
  cl::ParseCommandLineOptions(
      argc, argv,
      "amp-train: train with a training step compiled by amp-compile\n");
  TrainingConfig config = readTrainingFlags("amp-train");
  if (llvm::Error e = validateConfig(config)) {
    llvm::errs() << "amp-train: error: " << llvm::toString(std::move(e))
                 << "\n";
    return 1;
  }
  auto artifact = Artifact::load(artifactPath, /*openDevice=*/!describe);
  if (!artifact) {
    llvm::errs() << "amp-train: error: " << llvm::toString(artifact.takeError())
                 << "\n";
    return 1;
  }
  const ArtifactManifest &m = (*artifact)->getManifest();
  if (describe) {
    printManifest(m);
    return 0;
  }
  config.model = m.model;
  config.optLevel = m.optLevel;
  config.dtype = m.dtype;
  config.optimizer = m.optimizer;
  config.backend = m.backend;
  // Data parallelism: join the mpirun job; the artifact is compiled for its
  // size (runTraining checks) and fingerprinted by its pipeline options.
  auto joined = joinDataParallelJob(config);
  if (!joined) {
    llvm::errs() << ("amp-train: error: " + llvm::toString(joined.takeError()) +
                     "\n");
    return 1;
  }
  std::unique_ptr<Communicator> communicator = std::move(*joined);
  config.compileSettings = m.pipeline;
  return finishRank(runTraining(config, (*artifact)->getCompiledStep()),
                    communicator.get());
}
