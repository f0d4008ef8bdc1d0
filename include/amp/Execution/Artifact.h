//===- Artifact.h - Ahead-of-time compiled training steps -------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//
//
// An artifact is a shared object amp-compile writes: the lowered step and
// logits functions as native code (CUDA: host code with the kernels' PTX
// embedded), the runtime they call linked in, a packed entry point per
// function (`amp_entry_<name>(void **)`, the layout PackedDescriptors
// builds) and a JSON manifest (`amp_artifact_manifest`) describing the
// functions, the step's argument roles and the parameters' initializers.
// Loading one needs no MLIR or LLVM: it is how a step runs on a machine
// that has only the artifact, the CUDA driver and cuBLASLt.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_ARTIFACT_H
#define AMP_EXECUTION_ARTIFACT_H

#include "amp/Execution/CompiledFunction.h"
#include "amp/Execution/CompiledStep.h"

#include <memory>
#include <string>

namespace amp {

/// The manifest's format tag; a loader refuses other versions. Version 2
/// adds the record of results written in place ("in_place"): an artifact
/// with one says 2, so that a loader that would ignore the record (and swap
/// stale buffers into the state) refuses it; one without says 1.
constexpr const char *kArtifactFormat = "amp-artifact/2";
constexpr const char *kArtifactFormatV1 = "amp-artifact/1";
/// The symbol of the NUL-terminated manifest.
constexpr const char *kArtifactManifestSymbol = "amp_artifact_manifest";
/// The prefix of each function's packed entry point.
constexpr const char *kArtifactEntryPrefix = "amp_entry_";

/// One function of an artifact.
struct ArtifactFunctionInfo {
  std::string name;
  llvm::SmallVector<TensorSpec> arguments, results;
  /// For each result, the argument its code writes it into in place, or -1
  /// (CompiledFunction::getResultArguments); empty: none ("in_place" in the
  /// manifest, absent from older artifacts).
  llvm::SmallVector<int64_t> resultArguments;
  /// The plan of its working memory ("memory_plan"; empty: none).
  MemoryPlan memoryPlan;
};

/// What an artifact says about itself.
struct ArtifactManifest {
  std::string backend; // "cpu" or "cuda"
  std::string model, optLevel, dtype, optimizer;
  /// Every amp-pipeline option the step was compiled with, as
  /// "name=value ..." (getPrintedOptions); empty in older artifacts.
  std::string pipeline;
  ArtifactFunctionInfo step, logits;
  /// The data-parallel ranks the step is compiled for: `ranks` of
  /// `pipeline` (1 when absent).
  int64_t getRanks() const;
  StepAbi abi;
  std::vector<std::pair<unsigned, InitSpec>> inits;
};

/// The manifest as JSON text.
std::string serializeManifest(const ArtifactManifest &manifest);
/// A memory plan as the manifest's JSON object ("memory_plan": arena_bytes,
/// live_peak_bytes, buffers, unplanned_buffers, unplanned_bytes, at_peak).
std::string serializeMemoryPlan(const MemoryPlan &plan);
/// Parses `text`; errors name the first missing or malformed field.
llvm::Expected<ArtifactManifest> parseManifest(llvm::StringRef text);

/// A loaded artifact. Its functions are valid while it lives.
class Artifact {
public:
  ~Artifact();

  /// Opens the shared object at `path` and reads its manifest. Errors: not a
  /// loadable shared object, no or a bad manifest, a missing entry point;
  /// for CUDA artifacts with `openDevice`, "no CUDA device: ..." when the
  /// driver or a device is missing. Without `openDevice` the manifest can be
  /// read but the functions are not callable (getCompiledStep's are null).
  static llvm::Expected<std::unique_ptr<Artifact>> load(llvm::StringRef path,
                                                        bool openDevice = true);

  const ArtifactManifest &getManifest() const { return manifest; }
  /// The step, its logits function, ABI and initializers, for runTraining.
  CompiledStep getCompiledStep();

private:
  Artifact() = default;

  void *handle = nullptr;
  ArtifactManifest manifest;
  std::unique_ptr<CompiledFunction> step, logits;
  /// The thread count of the CPU runtime the artifact links (CPU artifacts).
  void (*setCpuThreads)(int64_t) = nullptr;
  int64_t (*getCpuThreads)() = nullptr;
  void (*cpuMemoryStats)(uint64_t *, uint64_t *) = nullptr;
  void (*resetCpuMemoryPeak)() = nullptr;
  std::function<std::string(Communicator *)> setCommunicator;
};

} // namespace amp

#endif // AMP_EXECUTION_ARTIFACT_H
