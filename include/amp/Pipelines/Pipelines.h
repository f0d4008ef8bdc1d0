//===- Pipelines.h - amp's pass pipelines -----------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_PIPELINES_PIPELINES_H
#define AMP_PIPELINES_PIPELINES_H

#include "amp/Dialect/Train/Transforms/PassEnums.h"

#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace mlir {
class OpPassManager;
class Operation;
} // namespace mlir

namespace amp {

/// Options of `amp-pipeline`, the mixed-precision training-step pipeline.
/// Every option of amp-autocast, amp-optimizer, amp-loss-scaling,
/// amp-check-numerics and amp-data-parallel is here under the pass's own
/// name, generated from Passes.td and forwarded by generated code;
/// `loss-scale` (amp-loss-scaling's `mode`, with `auto`) and `init-scale`
/// (0: the default for the mode) are resolved first.
struct AmpPipelineOptions
    : public mlir::PassPipelineOptions<AmpPipelineOptions> {
  using OptLevel = train::OptLevel;
  using LowType = train::LowType;
  using OptimizerKind = train::OptimizerKind;
  using LossScaleMode = train::LossScaleMode;
  using WireType = train::WireType;

  // Every option of the passes Passes.td's AmpPipeline lists, under the
  // pass's own name and C++ name, with its description and default
  // (generated: cmake/gen_pipeline_options.py), but the ones below.
#define AMP_GEN_PIPELINE_OPTION_DECLS
#include "amp/Pipelines/AmpPipelineOptions.inc"

  // Declared here (AmpPipeline's `declared`: forwarded as they are).
  Option<OptimizerKind> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd, momentum, adam or adamw; none stops after autocast"),
      llvm::cl::init(OptimizerKind::adam),
      llvm::cl::values(
          AMP_OPTIMIZER_VALUES,
          clEnumValN(OptimizerKind::none, "none", "autocast only (no step)"))};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("Data-parallel processes the step is compiled for (1: "
                     "one; amp-run --data-parallel sets it to mpirun's)"),
      llvm::cl::init(1)};
  // Declared here and resolved by buildAmpPipeline (AmpPipeline's
  // `resolved`): amp-loss-scaling's mode and init-scale.
  Option<LossScaleMode> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("auto, dynamic, static or none. auto: dynamic for f16 "
                     "at O1/O2, static 1.0 at O3 (Apex), none for bf16 and "
                     "O0"),
      llvm::cl::init(LossScaleMode::automatic),
      llvm::cl::values(AMP_LOSS_SCALE_VALUES,
                       clEnumValN(LossScaleMode::automatic, "auto",
                                  "the default of the opt level and type"))};
  Option<double> initScale{
      *this, "init-scale",
      llvm::cl::desc("Initial (dynamic) or fixed (static) scale; 0: 65536, "
                     "or 1.0 for static at O3"),
      llvm::cl::init(0.0)};
  // The pipeline's own: whether amp-check-numerics runs.
  Option<bool> checkNumerics{
      *this, "check-numerics",
      llvm::cl::desc("The step reports the first op whose output held an inf "
                     "or NaN from finite inputs (amp-check-numerics; "
                     "docs/Numerics.md)"),
      llvm::cl::init(false)};
};

/// Whether a tool's pass manager verifies the IR after every pass rather
/// than once at the end: when `requested` (--verify-each), in a debug build
/// (no NDEBUG), or when the environment sets AMP_VERIFY_EACH=1 (the lit and
/// unit tests do, so that a pass that breaks the IR is named in them; the
/// big-model tests and release tools verify once, the verifier costing more
/// than the passes on large steps).
bool shouldVerifyEachPass(bool requested = false);

/// The loss-scaling mode `amp-pipeline` uses: `loss-scale` unless it is
/// auto, otherwise the Apex/PyTorch default for the opt level and dtype.
train::LossScaleMode resolveLossScaleMode(const AmpPipelineOptions &options);

/// The scale amp-loss-scaling starts from: `init-scale` unless it is 0,
/// otherwise GradScaler's 65536 (Apex's static 1.0 at O3).
double resolveInitScale(const AmpPipelineOptions &options);

/// `options` as amp-pipeline prints them (`--dump-pass-pipeline`), in order:
/// (name, value) of every option. buildAmpPipeline holds the passes to these
/// values; the tools list them as flags with their defaults.
std::vector<std::pair<std::string, std::string>>
getPrintedOptions(const AmpPipelineOptions &options);

/// getPrintedOptions with numbers as people write them: 0.9, 16777216, 1e-08
/// (the tools' --help, an artifact's manifest).
std::vector<std::pair<std::string, std::string>>
getReadableOptions(const AmpPipelineOptions &options);

/// Appends `amp-pipeline`: amp-autocast, amp-autodiff, amp-optimizer and
/// amp-loss-scaling (unless optimizer=none), then amp-cast-cleanup. Each
/// pass gets every one of its options from the same-named option of
/// `options`; a pass option amp-pipeline lacks is a fatal error naming it
/// (test/Pipelines/amp-pipeline-options.test holds every name to this).
void buildAmpPipeline(mlir::OpPassManager &pm,
                      const AmpPipelineOptions &options);

/// The `copy-before-write` option of both lowerings.
inline constexpr const char *kCopyBeforeWriteDescription =
    "Bufferize every function without one-shot bufferization's analysis (a "
    "copy before each in-place write); by default only functions of more "
    "than 5 000 ops skip it (amp-one-shot-bufferize)";

/// Options of `amp-lower-cpu`.
struct CpuLoweringOptions
    : public mlir::PassPipelineOptions<CpuLoweringOptions> {
  Option<bool> blas{
      *this, "blas",
      llvm::cl::desc("GEMMs and convolutions call the CBLAS runtime; false: "
                     "generated loops (a reference for testing)"),
      llvm::cl::init(true)};
  Option<bool> convAsGemm{
      *this, "conv-as-gemm",
      llvm::cl::desc("Convolutions as GEMMs on im2col column matrices (the "
                     "CUDA lowering's form) instead of the runtime's"),
      llvm::cl::init(false)};
  Option<bool> splitReductions{
      *this, "split-reductions",
      llvm::cl::desc("Wide reductions in two stages (amp-lower-cuda's "
                     "amp-split-reductions)"),
      llvm::cl::init(false)};
  Option<bool> copyBeforeWrite{*this, "copy-before-write",
                               llvm::cl::desc(kCopyBeforeWriteDescription),
                               llvm::cl::init(false)};
  Option<bool> fusedAttention{
      *this, "fused-attention",
      llvm::cl::desc("train.attention calls the runtime's flash-style "
                     "kernels (with blas); false: amp-decompose-attention's "
                     "batch_matmul / softmax / batch_matmul"),
      llvm::cl::init(true)};
  Option<bool> fusedLmHead{
      *this, "fused-lm-head",
      llvm::cl::desc("train.linear_cross_entropy calls the runtime's "
                     "blocked kernels (with blas); false: "
                     "amp-decompose-lm-head's matmul / cast / cross_entropy"),
      llvm::cl::init(true)};
  Option<bool> parallel{
      *this, "parallel",
      llvm::cl::desc("Split large loops into tasks for the runtime's thread "
                     "pool (amp-parallelize-loops); false: every loop "
                     "sequential"),
      llvm::cl::init(true)};
  Option<bool> memoryPlan{
      *this, "memory-plan",
      llvm::cl::desc("Place each step's temporaries in one arena by "
                     "liveness (amp-plan-memory); false: one heap "
                     "allocation per buffer"),
      llvm::cl::init(true)};
  Option<double> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Recompute forward values (element-wise work, norms) in "
                     "backward until "
                     "the estimated peak of live tensors is this fraction "
                     "of the peak without (amp-recompute; 1: none)"),
      llvm::cl::init(1.0)};
  Option<bool> recomputeGemms{
      *this, "recompute-gemms",
      llvm::cl::desc("Under a memory budget, also recompute GEMMs where a "
                     "value needs them, after every value that needs none "
                     "(amp-recompute's recompute-gemms)"),
      llvm::cl::init(false)};
  Option<bool> nativeBf16{
      *this, "native-bf16",
      llvm::cl::desc("The target CPU multiplies bf16 natively (AVX-512 "
                     "BF16 or AMX-BF16): the memory plan reserves no "
                     "widened copies for convolutions of bf16 operands "
                     "(amp-convert-train-to-cpu-runtime's native-bf16)"),
      llvm::cl::init(false)};
};

/// `value` as the pipelines write a double pass option (amp-lower-cpu's
/// memory-budget): digits that read back as the same double.
std::string formatPassOptionDouble(double value);

/// The `amp-lower-cpu` pipeline as a textual pass list (module-anchored, no
/// `builtin.module(...)` wrapper): GEMMs/convolutions -> CBLAS runtime calls
/// (unless `blas` is false), train -> linalg on tensors -> one-shot
/// bufferization (results become caller-provided out-parameters) -> loops ->
/// LLVM dialect. docs/Passes.md lists and explains each step.
std::string getCpuLoweringPipeline(const CpuLoweringOptions &options);

/// Appends `amp-lower-cpu` to a module-level pass manager.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm,
                              const CpuLoweringOptions &options = {});

/// The toolkit's libdevice found when amp was configured ("" if none). A
/// function, not a macro in this header: the definition is the pipelines
/// library's, and every user of CudaLoweringOptions must see the same path.
std::string getDefaultLibdevicePath();

/// Options of `amp-lower-cuda`.
struct CudaLoweringOptions
    : public mlir::PassPipelineOptions<CudaLoweringOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture of the kernels"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features"),
                               llvm::cl::init("+ptx80")};
  Option<std::string> libdevice{
      *this, "libdevice",
      llvm::cl::desc("CUDA's libdevice bitcode, linked into the kernels "
                     "(exp, log, tanh, erf); default: the toolkit's found at "
                     "configure time"),
      llvm::cl::init(getDefaultLibdevicePath())};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("Embedded kernels: isa (PTX), bin (cubin, needs "
                     "ptxas) or fatbin"),
      llvm::cl::init("isa")};
  Option<bool> copyBeforeWrite{*this, "copy-before-write",
                               llvm::cl::desc(kCopyBeforeWriteDescription),
                               llvm::cl::init(false)};
};

/// The `amp-lower-cuda` pipeline as text: GEMMs and im2col convolutions ->
/// cuBLASLt runtime calls, the rest -> linalg -> two-stage wide reductions
/// (amp-split-reductions) -> one-shot bufferization -> kernels with
/// independent ones fused and one async chain (amp-map-linalg-to-gpu) ->
/// NVVM -> embedded PTX, host code -> LLVM.
std::string getCudaLoweringPipeline(const CudaLoweringOptions &options);

/// Registers `amp-pipeline`, `amp-lower-cpu` and `amp-lower-cuda` as named
/// pipelines.
void registerAmpPipelines();

} // namespace amp

#endif // AMP_PIPELINES_PIPELINES_H
