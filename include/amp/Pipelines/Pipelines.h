//===- Pipelines.h - amp's pass pipelines -----------------------*- C++ -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_PIPELINES_PIPELINES_H
#define AMP_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir {
class OpPassManager;
class Operation;
} // namespace mlir

namespace amp {

/// Options of `amp-pipeline`, the mixed-precision training-step pipeline.
struct AmpPipelineOptions
    : public mlir::PassPipelineOptions<AmpPipelineOptions> {
  Option<std::string> optLevel{*this, "opt-level",
                               llvm::cl::desc("Apex opt level: O0-O3"),
                               llvm::cl::init("O1")};
  Option<std::string> dtype{*this, "dtype",
                            llvm::cl::desc("Low-precision type: f16 or bf16"),
                            llvm::cl::init("f16")};
  Option<std::string> policy{
      *this, "policy",
      llvm::cl::desc("JSON file moving op names between autocast categories"),
      llvm::cl::init("")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("sgd, momentum, adam or adamw; none stops after autocast"),
      llvm::cl::init("adam")};
  Option<double> momentum{*this, "momentum",
                          llvm::cl::desc("Momentum of the momentum optimizer"),
                          llvm::cl::init(0.9)};
  Option<double> weightDecay{
      *this, "weight-decay",
      llvm::cl::desc("Weight decay (decoupled for adamw)"),
      llvm::cl::init(0.0)};
  Option<int64_t> accumulate{
      *this, "accumulate",
      llvm::cl::desc("Micro-batches averaged into one update"),
      llvm::cl::init(1)};
  Option<double> clipNorm{
      *this, "clip-norm",
      llvm::cl::desc("Clip the gradients' global norm (0: off)"),
      llvm::cl::init(0.0)};
  Option<std::string> lossScale{
      *this, "loss-scale",
      llvm::cl::desc("auto, dynamic, static or none. auto: dynamic for f16 "
                     "at O1/O2, static 1.0 at O3 (Apex), none for bf16 and "
                     "O0"),
      llvm::cl::init("auto")};
  Option<double> initScale{
      *this, "init-scale",
      llvm::cl::desc("Initial (dynamic) or fixed (static) scale; 0: 65536, "
                     "or 1.0 for static at O3"),
      llvm::cl::init(0.0)};
  Option<int64_t> growthInterval{
      *this, "growth-interval",
      llvm::cl::desc("Clean steps before the dynamic scale grows"),
      llvm::cl::init(2000)};
};

/// The loss-scaling mode `amp-pipeline` uses: `loss-scale` unless it is
/// auto, otherwise the Apex/PyTorch default for the opt level and dtype.
std::string resolveLossScaleMode(const AmpPipelineOptions &options);

/// Appends `amp-pipeline`: amp-autocast, amp-autodiff, amp-optimizer and
/// amp-loss-scaling (unless optimizer=none), then amp-cast-cleanup.
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
};

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
