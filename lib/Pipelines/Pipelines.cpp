//===- Pipelines.cpp - amp's pass pipelines -------------------------------===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#include "amp/Pipelines/Pipelines.h"
#include "amp/ABI/EntryPoints.h"
#include "amp/Dialect/Train/IR/TrainDialect.h"
#include "amp/Dialect/Train/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <cstdlib>

using namespace mlir;

// forwardPipelineOptions(options, passOptions) for every pass amp-pipeline
// takes options of (generated from Passes.td's AmpPipeline).
#define AMP_GEN_PIPELINE_FORWARDS
#include "amp/Pipelines/AmpPipelineOptions.inc"

/// The lowerings' canonicalizations before their loops become a CFG: every
/// region has one block, so region simplification (each run walks them all
/// for unreachable and identical blocks) has nothing to do. The output is
/// the same without it (the examples, ResNet-50 and deep MLPs compared).
#define AMP_CANONICALIZE "canonicalize{region-simplify=disabled}"

/// The target-independent middle of both lowerings: train -> linalg on
/// tensors (normalization statistics accumulated in `normStatistics`),
/// cleaned up and with element-wise chains fused (16-bit values stored,
/// not their f32 twins: amp-fuse-elementwise) ...
static std::string toLinalg(const char *normStatistics,
                            const char *allReduce = nullptr) {
  return std::string("amp-convert-train-to-linalg{norm-statistics=") +
         normStatistics +
         (allReduce ? std::string(" all-reduce-callee=") + allReduce : "") +
         "}," AMP_CANONICALIZE ",cse,"
         "amp-fuse-elementwise," AMP_CANONICALIZE ",";
}
/// ... then tensors -> buffers. Function results become out-parameters the
/// caller allocates, so a compiled step writes into given memory.
static std::string bufferizePipeline(bool copyBeforeWrite) {
  // A step's new state is written into the buffers of the state it
  // replaces (the results bufferization placed there leave the signature).
  return std::string("func.func(amp-update-state-in-place,amp-unshare-"
                     "inits," AMP_CANONICALIZE "),"
                     "amp-one-shot-bufferize") +
         (copyBeforeWrite ? "{copy-before-write=true}" : "") +
         ","
         "func.func(amp-drop-in-place-results),"
         "buffer-results-to-out-params{hoist-static-allocs=true "
         "modify-public-functions=true},"
         // buffer-deallocation-pipeline, with each temporary of a block
         // freed after its last use instead of at the end of the block.
         "expand-realloc{emit-deallocs=false}," AMP_CANONICALIZE ","
         "ownership-based-buffer-deallocation," AMP_CANONICALIZE ","
         "func.func(amp-free-after-last-use),"
         "buffer-deallocation-simplification,bufferization-lower-deallocations,"
         "cse," AMP_CANONICALIZE
         ",convert-bufferization-to-memref," AMP_CANONICALIZE ",";
}
/// Wide reductions with few outputs in two stages (amp-lower-cuda's).
static constexpr const char *kSplitReductions =
    "func.func(amp-split-reductions),";

std::string amp::formatPassOptionDouble(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

std::string amp::getCpuLoweringPipeline(const CpuLoweringOptions &options) {
  return std::string(
             // Attention unfused where no runtime kernel runs it.
             !options.blas || !options.fusedAttention
                 ? "amp-decompose-attention,"
                 : "") +
         // The LM head and its loss unfused likewise.
         (!options.blas || !options.fusedLmHead ? "amp-decompose-lm-head,"
                                                : "") +
         // GEMMs, convolutions and attention -> runtime calls (the target-
         // specific part).
         (!options.blas
              ? std::string()
              : "amp-convert-train-to-cpu-runtime{conv-as-gemm=" +
                    std::string(options.convAsGemm ? "true" : "false") +
                    " native-bf16=" + (options.nativeBf16 ? "true" : "false") +
                    "},") +
         // A CPU sums a batch-norm channel's values in one sequence: in f64.
         // SyncBatchNorm's sums cross the ranks through the runtime.
         toLinalg("f64", amp::entry::kCpuAllReduce) +
         (options.splitReductions ? kSplitReductions : "") +
         // Loops LLVM can vectorize: contiguous dimensions merged, sums
         // reassociable, f32 exp and tanh inline instead of libm calls;
         // scalar inputs (the step's loss scale, found_inf...) read once.
         "func.func(amp-collapse-loop-dims,amp-reassociate-reductions,"
         "amp-vectorizable-math,amp-capture-scalar-inputs)," AMP_CANONICALIZE
         "," +
         // Element-wise values recomputed in backward under a budget.
         (options.memoryBudget < 1.0
              ? "func.func(amp-recompute{budget=" +
                    formatPassOptionDouble(options.memoryBudget) +
                    (options.recomputeGemms ? " recompute-gemms=true" : "") +
                    "}),"
              : std::string()) +
         bufferizePipeline(options.copyBeforeWrite) +
         // One arena per step, offsets by liveness.
         (options.memoryPlan
              ? std::string("amp-plan-memory{workspace-function=") +
                    amp::entry::kCpuSetWorkspace + "},"
              : std::string()) +
         // Threads: large loops become tasks of the runtime's thread pool.
         (options.parallel ? "func.func(amp-parallelize-loops),"
                             "amp-outline-parallel-loops{outline-serial=true},"
                           : "") +
         // Loops, then the LLVM dialect. Other transcendentals call libm
         // (accurate to an ulp); f16/bf16 conversions are expanded or called
         // out. The loops become a CFG last loop first (upstream's order made
         // each block split move every later loop again) and the dialect
         // conversions run without pattern rollback (its bookkeeping records
         // every op a split moves); a step's thousands of arguments get an
         // entry block of their own for the signature conversion (after the
         // memref conversion, whose casts of the arguments go to the top of
         // the entry block); calls find their callees in a symbol table.
         "convert-linalg-to-loops,convert-math-to-libm,expand-strided-metadata,"
         "lower-affine,amp-convert-scf-to-cf,"
         "arith-expand{include-bf16=true},"
         "finalize-memref-to-llvm{use-aligned-alloc=true},convert-math-to-llvm,"
         "func.func(amp-split-entry-block),amp-convert-to-llvm,"
         "reconcile-unrealized-casts" +
         (options.parallel ? ",amp-lower-parallel-launches" : "");
}

std::string amp::getDefaultLibdevicePath() {
#ifdef AMP_CUDA_LIBDEVICE
  return AMP_CUDA_LIBDEVICE;
#else
  return "";
#endif
}

std::string amp::getCudaLoweringPipeline(const CudaLoweringOptions &options) {
  return
      // Attention unfused (no CUDA kernel yet); GEMMs -> cuBLASLt calls,
      // then the shared middle.
      std::string("amp-decompose-attention,amp-decompose-lm-head,"
                  "amp-convert-train-to-cuda-runtime,") +
      // SyncBatchNorm's sums cross the ranks on NCCL.
      toLinalg("f32", amp::entry::kCudaAllReduce) + kSplitReductions +
      bufferizePipeline(options.copyBeforeWrite) +
      // One kernel per linalg op, device buffers; then the passes of
      // upstream's gpu-lower-to-nvvm-pipeline, with libdevice linked into
      // the kernels: outlining, NVVM, PTX embedded in a gpu.binary, host code
      // calling the mgpu* runtime.
      "func.func(amp-map-linalg-to-gpu),"
      "convert-nvgpu-to-nvvm,gpu-kernel-outlining,"
      "convert-vector-to-scf,"
      "amp-convert-scf-to-cf,func.func(amp-split-entry-block),"
      "convert-nvvm-to-llvm,"
      "convert-func-to-llvm,"
      "expand-strided-metadata,nvvm-attach-target{chip=" +
      options.chip.getValue() + " features=" + options.features.getValue() +
      (options.libdevice.empty() ? std::string()
                                 : " l=" + options.libdevice.getValue()) +
      "},lower-affine,convert-arith-to-llvm,convert-index-to-llvm,"
      "canonicalize,cse,"
      "gpu.module(convert-gpu-to-nvvm,canonicalize,cse,"
      "reconcile-unrealized-casts),"
      "gpu-to-llvm,gpu-module-to-binary{format=" +
      options.format.getValue() +
      "},convert-math-to-llvm,canonicalize,cse,reconcile-unrealized-casts";
}

void amp::buildCpuLoweringPipeline(OpPassManager &pm,
                                   const CpuLoweringOptions &options) {
  if (failed(parsePassPipeline(getCpuLoweringPipeline(options), pm)))
    llvm::report_fatal_error("amp: the built-in amp-lower-cpu pipeline does "
                             "not parse; are the passes registered?");
}

bool amp::shouldVerifyEachPass(bool requested) {
#ifndef NDEBUG
  requested = true;
#endif
  const char *env = std::getenv("AMP_VERIFY_EACH");
  return requested || (env && llvm::StringRef(env) == "1");
}

amp::train::LossScaleMode
amp::resolveLossScaleMode(const AmpPipelineOptions &options) {
  using amp::train::LossScaleMode;
  if (options.lossScale != LossScaleMode::automatic)
    return options.lossScale;
  // bf16 has f32's exponent range: nothing underflows that would in f32.
  if (options.dtype != amp::train::LowType::f16 ||
      options.optLevel == amp::train::OptLevel::O0)
    return LossScaleMode::none;
  return options.optLevel == amp::train::OptLevel::O3 ? LossScaleMode::fixed
                                                      : LossScaleMode::dynamic;
}

double amp::resolveInitScale(const AmpPipelineOptions &options) {
  if (options.initScale > 0.0)
    return options.initScale;
  bool apexO3 =
      options.optLevel == amp::train::OptLevel::O3 &&
      resolveLossScaleMode(options) == amp::train::LossScaleMode::fixed;
  return apexO3 ? 1.0 : 65536.0;
}

/// Splits a printed option list, `{a=1 b={x y} c=z}` or `a=1 b=2`, into
/// (key, value) in order; braces and quotes keep their spaces.
static std::vector<std::pair<std::string, std::string>>
splitOptions(StringRef text) {
  text = text.trim();
  if (text.consume_front("{"))
    text.consume_back("}");
  std::vector<std::pair<std::string, std::string>> result;
  while (!text.empty()) {
    text = text.ltrim();
    size_t end = 0;
    int depth = 0;
    char quote = 0;
    for (; end < text.size(); ++end) {
      char c = text[end];
      if (quote) {
        quote = c == quote ? 0 : quote;
      } else if ((c == '"' || c == '\'') &&
                 text.find(c, end + 1) != StringRef::npos) {
        // A quote only with its closing partner, as MLIR's option parser
        // reads them (a path may hold a lone one: it's.json).
        quote = c;
      } else if (c == '{') {
        ++depth;
      } else if (c == '}') {
        --depth;
      } else if (c == ' ' && depth == 0) {
        break;
      }
    }
    auto [key, value] = text.take_front(end).split('=');
    if (!key.empty())
      result.emplace_back(key.str(), value.str());
    text = text.drop_front(end);
  }
  return result;
}

std::vector<std::pair<std::string, std::string>>
amp::getPrintedOptions(const AmpPipelineOptions &options) {
  std::string printed;
  llvm::raw_string_ostream os(printed);
  options.print(os);
  return splitOptions(printed);
}

std::vector<std::pair<std::string, std::string>>
amp::getReadableOptions(const AmpPipelineOptions &options) {
  std::vector<std::pair<std::string, std::string>> result =
      getPrintedOptions(options);
  auto readable = [](double number) {
    return llvm::formatv("{0}", llvm::format("%.10g", number)).str();
  };
  for (auto &[name, value] : result) {
    double number;
    if (StringRef(value).contains('e') && !StringRef(value).getAsDouble(number))
      value = readable(number);
    // The printed form keeps 7 digits; 2^24 needs 8.
    if (name == "max-scale")
      value = readable(options.maxScale);
  }
  return result;
}

/// The options `pass` declares, with the values it prints.
static std::vector<std::pair<std::string, std::string>> optionsOf(Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  size_t brace = text.find('{');
  return splitOptions(brace == std::string::npos
                          ? StringRef()
                          : StringRef(text).drop_front(brace));
}

/// Holds amp-pipeline to its promise that every option of `pass` is one of
/// its own, forwarded under the same name: each option `pass` declares must
/// print the value the same-named pipeline option prints (`resolved` ones,
/// which amp-pipeline computes, excepted). A pass option added without its
/// pipeline twin, or not copied, stops every amp-pipeline build, so it
/// cannot ship.
static void checkForwarded(Pass &pass,
                           const llvm::StringMap<std::string> &pipeline,
                           ArrayRef<StringRef> resolved) {
  for (const auto &[name, value] : optionsOf(pass)) {
    if (llvm::is_contained(resolved, name))
      continue;
    auto it = pipeline.find(name);
    if (it == pipeline.end())
      llvm::report_fatal_error("amp-pipeline has no option '" + name + "' of " +
                               pass.getArgument() +
                               "; add it to AmpPipelineOptions");
    if (it->second != value)
      llvm::report_fatal_error("amp-pipeline does not forward '" + name +
                               "' to " + pass.getArgument() + " (" + value +
                               " instead of " + it->second + ")");
  }
}

void amp::buildAmpPipeline(OpPassManager &pm,
                           const AmpPipelineOptions &options) {
  llvm::StringMap<std::string> pipeline;
  for (auto &[name, value] : getPrintedOptions(options))
    pipeline[name] = value;
  // Each pass checked against the pipeline's options, then added to `to`
  // (the module, or func.func for the passes that work per function).
  auto add = [&](OpPassManager &to, std::unique_ptr<Pass> pass,
                 ArrayRef<StringRef> resolved = {}) {
    checkForwarded(*pass, pipeline, resolved);
    to.addPass(std::move(pass));
  };

  // Hand-written attention as the fused op, before autocast decides its
  // precision and autodiff its gradient.
  add(pm, amp::train::createRaiseAttentionPass());
  amp::train::AutocastPassOptions autocast;
  forwardPipelineOptions(options, autocast);
  add(pm, amp::train::createAutocastPass(autocast));
  if (options.optimizer != amp::train::OptimizerKind::none) {
    add(pm, amp::train::createAutodiffPass());
    amp::train::OptimizerPassOptions optimizer;
    forwardPipelineOptions(options, optimizer);
    add(pm, amp::train::createOptimizerPass(optimizer));
    amp::train::LossScalingPassOptions scaling;
    forwardPipelineOptions(options, scaling);
    scaling.mode = resolveLossScaleMode(options);
    scaling.initScale = resolveInitScale(options);
    add(pm.nest<func::FuncOp>(), amp::train::createLossScalingPass(scaling),
        {"mode", "init-scale"});
  }
  add(pm.nest<func::FuncOp>(), amp::train::createCastCleanupPass());
  // Numerics checks see the step's final casts, and each rank checks its
  // own values (before data parallelism's collectives).
  // (Without an optimizer there is no step: the pass says so.)
  amp::train::CheckNumericsPassOptions numerics;
  forwardPipelineOptions(options, numerics);
  if (options.checkNumerics)
    add(pm, amp::train::createCheckNumericsPass(numerics));
  else
    checkForwarded(*amp::train::createCheckNumericsPass(numerics), pipeline,
                   {});
  // Data parallelism last: the gradients and flags it reduces are final.
  if (options.optimizer != amp::train::OptimizerKind::none) {
    amp::train::DataParallelPassOptions parallel;
    forwardPipelineOptions(options, parallel);
    // (ranks < 1 too: the pass rejects it.)
    if (options.ranks != 1)
      add(pm, amp::train::createDataParallelPass(parallel));
    else
      checkForwarded(*amp::train::createDataParallelPass(parallel), pipeline,
                     {});
  }
}

void amp::registerAmpPipelines() {
  PassPipelineRegistration<AmpPipelineOptions>(
      "amp-pipeline",
      "Turn an FP32 training graph into a mixed-precision training step "
      "(autocast, autodiff, optimizer, loss scaling, cast cleanup)",
      buildAmpPipeline);
  PassPipelineRegistration<CpuLoweringOptions>(
      "amp-lower-cpu",
      "Lower a train-dialect module to the LLVM dialect for the CPU "
      "(GEMMs/convolutions -> CBLAS calls, the rest -> linalg -> bufferize "
      "-> loops -> LLVM)",
      [](OpPassManager &pm, const CpuLoweringOptions &options) {
        buildCpuLoweringPipeline(pm, options);
      });
  PassPipelineRegistration<CudaLoweringOptions>(
      "amp-lower-cuda",
      "Lower a train-dialect module for CUDA: GEMMs and im2col "
      "convolutions -> cuBLASLt runtime calls, everything else -> kernels "
      "(independent ones fused into multi-tensor launches) -> PTX embedded "
      "in the module; host code -> LLVM with one stream and one wait per "
      "function (amp-compile links it into a shared object)",
      [](OpPassManager &pm, const CudaLoweringOptions &options) {
        if (failed(parsePassPipeline(getCudaLoweringPipeline(options), pm)))
          llvm::report_fatal_error("amp: the amp-lower-cuda pipeline does "
                                   "not parse; are the passes registered?");
      });
}
