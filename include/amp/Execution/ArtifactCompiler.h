//===- ArtifactCompiler.h - Compile a training step ahead of time -*- C++ -*-=//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_EXECUTION_ARTIFACTCOMPILER_H
#define AMP_EXECUTION_ARTIFACTCOMPILER_H

#include "amp/Execution/Artifact.h"
#include "amp/Execution/ArtifactCache.h"
#include "amp/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace amp {

/// How amp-compile lowers and links an artifact.
struct ArtifactOptions {
  /// "cpu" (amp-lower-cpu, CBLAS GEMMs) or "cuda" (amp-lower-cuda).
  std::string backend = "cpu";
  /// The host CPU the code is compiled for: an LLVM CPU name; empty: this
  /// machine's for cpu artifacts, baseline "x86-64" for cuda artifacts (the
  /// host code is only launches and copies, and runs on another machine).
  std::string cpu;
  /// The kernels' target (cuda).
  std::string chip = "sm_90", features = "+ptx80";
  /// How the kernels are embedded (cuda): "fatbin" (SASS for `chip`,
  /// assembled here by ptxas, plus the PTX for other GPUs: nothing to
  /// JIT-compile at load), "bin" (SASS only) or "isa" (PTX only; the driver
  /// compiles it when the artifact loads).
  std::string kernelFormat = "fatbin";
  /// Link the C++ runtime and libgcc statically. Off by default: static
  /// libstdc++ needs glibc 2.36 (arc4random), the shared one GLIBCXX_3.4.30
  /// (GCC 12's, which Ubuntu 22.04 has too).
  bool staticCxx = false;
  /// Threads that optimize and compile the parts of a large module (split
  /// by its size alone: the artifact's bytes do not depend on this); 0: one
  /// per core.
  unsigned jobs = 0;
  /// LLVM instructions per part: a module of fewer than twice this many is
  /// compiled whole, a larger one in parts of about this size (16 at most;
  /// cpu artifacts only: a cuda artifact's host code is compiled whole).
  /// Part of the artifact's target description (it changes the code).
  size_t instructionsPerPart = 40000;
  /// A function without loops of at least this many LLVM instructions is
  /// glue (a step whose loops were all outlined): optimized as the rest,
  /// its machine code generated without optimization (cpu artifacts; 0:
  /// none). Part of the artifact's target description.
  size_t glueInstructions = 4000;
  /// Verify the module after each lowering pass (mlir-opt's
  /// --verify-each), not only the lowered module once.
  bool verifyEach = false;
  /// train.attention runs the CPU runtime's flash-style kernels; false:
  /// decomposed (amp-lower-cpu's fused-attention). Part of the target
  /// description, so of the cache key.
  bool fusedAttention = true;
  /// train.linear_cross_entropy through the runtime's blocked kernels
  /// (false: amp-decompose-lm-head's unfused head).
  bool fusedLmHead = true;
  /// amp-lower-cpu's memory-budget (amp-recompute: element-wise values
  /// recomputed in backward until the estimated peak of live tensors is
  /// this fraction of the peak without; 1: none). Part of the cache key.
  double memoryBudget = 1.0;
  /// amp-lower-cpu's recompute-gemms: under the budget, GEMMs may be
  /// recomputed too (after every value that needs none). Part of the
  /// cache key.
  bool recomputeGemms = false;
  /// Called after each phase of compileArtifact with its name and wall
  /// time in seconds: "lowering", "LLVM IR", "split", "LLVM optimization
  /// and machine code" (each part optimized and compiled in turn), "link"
  /// (amp-compile --time-phases prints them).
  std::function<void(llvm::StringRef phase, double seconds)> onPhase;
};

/// Lowers functions `manifest.step.name` and `manifest.logits.name` of
/// `module` (a copy is lowered: the caller's module is unchanged) and links
/// them, the runtime and the manifest into the shared object `outputPath`,
/// written atomically (an existing file is untouched on failure). Fills the
/// manifest's function types and backend. Lowering diagnostics go to the
/// context's handler.
llvm::Error compileArtifact(mlir::ModuleOp module, ArtifactManifest manifest,
                            const ArtifactOptions &options,
                            llvm::StringRef outputPath);

/// Lowers a copy of `module` for the CPU as compileArtifact does (the
/// same amp-lower-cpu options; no code is generated) and returns the
/// memory plan of function `name` (empty where it has none:
/// AMP_MEMORY_PLAN=0). What `amp-compile --verify-only --memory-plan`
/// reports before anything is compiled (amp.explain's memory line).
llvm::Expected<MemoryPlan> planCpuMemory(mlir::ModuleOp module,
                                         llvm::StringRef name,
                                         const ArtifactOptions &options);

/// Everything of `options` that decides an artifact's code, with the CPU
/// and its features resolved as compileArtifact resolves them (this
/// machine's for cpu artifacts): one line of text (the compile cache's
/// key reads it).
std::string describeArtifactTarget(const ArtifactOptions &options);

/// The compile cache's side of compiling `model` (as parsed, before
/// amp-pipeline) named `name` in the artifact's manifest, with `options`
/// for `artifact`'s target. The key covers every pipeline option (a policy
/// file by its content), the name and describeArtifactTarget; `key` is set
/// to it (empty with the cache off). Returns the cached artifact's path on
/// a hit, which it says on stderr ("<tool>: cache hit <key> (<directory>):
/// the step compiled before"); none otherwise.
std::optional<std::string>
lookupCachedArtifact(ArtifactCache &cache, mlir::ModuleOp model,
                     llvm::StringRef name, const AmpPipelineOptions &options,
                     const ArtifactOptions &artifact, llvm::StringRef tool,
                     std::string &key);

/// Keeps the artifact at `path` in `cache` under `key` (from
/// lookupCachedArtifact; empty: nothing is kept), recording `name` and the
/// options.
void storeCachedArtifact(ArtifactCache &cache, llvm::StringRef key,
                         llvm::StringRef path, llvm::StringRef name,
                         const AmpPipelineOptions &options,
                         const ArtifactOptions &artifact);

/// A compile's progress lines, "<tool>: <phase>: <seconds> s" on stderr as
/// each phase ends (amp-compile's and amp-run's --time-phases); nothing
/// when not `enabled`.
class PhaseClock {
public:
  PhaseClock(llvm::StringRef tool, bool enabled);
  /// Prints `phase` with the time since the last mark, and marks now.
  void lap(llvm::StringRef phase);
  /// Prints `phase` with `seconds` (a phase timed elsewhere: pass this as
  /// ArtifactOptions::onPhase), and marks now.
  void report(llvm::StringRef phase, double seconds);
  /// Seconds since the clock was made.
  double elapsed() const;

private:
  std::string tool;
  bool enabled;
  std::chrono::steady_clock::time_point start, mark;
};

/// What amp-compile links into a CPU (or CUDA) artifact besides its code:
/// the runtime's archives, libraries and flags. A file of the build tree
/// that is not there (an installed amp: `pip install .`) is taken from the
/// `lib` directory beside the tool's own `bin`, where the package keeps
/// it.
std::vector<std::string> getRuntimeLinkInputs(bool cuda);

/// Whether the running tool is an installed one (its package's `lib`, beside
/// its `bin`, holds the runtime archives), not the build tree's.
bool isInstalledTool();

} // namespace amp

#endif // AMP_EXECUTION_ARTIFACTCOMPILER_H
