//===- Passes.td - amp conversion passes -------------------*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_CONVERSION_PASSES_TD
#define AMP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertTrainToLinalgPass : Pass<"amp-convert-train-to-linalg"> {
  let summary = "Lower train ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every train op into upstream ops on tensors: element-wise ops and
    reductions into `linalg.generic`, matrix products into `linalg.matmul` /
    `linalg.batch_matmul` (transposes as indexing maps), convolutions and
    pooling into linalg's named NCHW ops after a `tensor.pad`, reshapes into
    `tensor.collapse_shape` / `tensor.expand_shape`.

    Numerics, shared by the CPU and CUDA pipelines:
    - element-wise arithmetic on f16/bf16 computes in f32 and rounds once to
      the result type (PyTorch's `opmath` semantics; for +, -, *, / this is
      exactly IEEE f16/bf16 arithmetic);
    - matmul, batch_matmul and conv2d multiply low-precision operands exactly
      in f32 and accumulate in f32, rounding once at the end (Tensor Core
      semantics);
    - every reduction (softmax, norms, reduce_sum/mean, losses, average pooling)
      accumulates in f32; softmax subtracts the row maximum first;
    - but the statistics of layer and batch norm (sum, sum of squared
      deviations) and the sums of their gradients accumulate in
      `norm-statistics`: f32 by default and for CUDA (whose two-stage
      reductions sum in short chunks), f64 on the CPU, where a batch-norm
      channel's thousands of values are summed in one sequence (PyTorch's CPU
      batch norm accumulates in double too). Normalizing and rounding stay f32.

    Any train op left unconverted is an error naming the op.

    ```
    amp-opt model.mlir --amp-convert-train-to-linalg
    amp-opt model.mlir --amp-convert-train-to-linalg="norm-statistics=f64"
    ```
  }];
  let options = [
    Option<"normStatisticsType", "norm-statistics", "std::string", "\"f32\"",
           "The accumulator of normalization statistics and of their "
           "gradients' sums: f32 or f64">,
    Option<"allReduceCallee", "all-reduce-callee", "std::string", "\"\"",
           "The runtime function that sums a batch norm's statistics across "
           "ranks (`ranks` > 1, SyncBatchNorm): amp_cpu_all_reduce in "
           "amp-lower-cpu, amp_cuda_all_reduce in amp-lower-cuda; empty: such "
           "a batch norm is an error">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def FuseElementwisePass : Pass<"amp-fuse-elementwise"> {
  let summary = "Fuse element-wise linalg generics, storing 16-bit values instead of f32 twins";
  let description = [{
    Upstream's `linalg-fuse-elementwise-ops` (the same fusion, reshape
    folding and bubbling, canonicalization and constant-folding patterns)
    with a control
    function that decides where a mixed-precision value is stored:

    - a generic that only widens (`arith.extf` of its inputs) is fused into
      every consumer, even several: no f32 twin of a 16-bit tensor is
      stored, each consumer widens what it reads;
    - a generic whose result is narrower than one of its inputs (an f32
      accumulator rounded to f16/bf16) is not fused into a consumer with a
      wider result: the 16-bit value is stored and the f32 one dies with
      its producer, instead of living until a distant consumer (a weight
      gradient read by the optimizer at the end of the step);
    - any other generic is fused when it has one use, as upstream.

    Each element goes through the same operations fused or not; only what is
    stored changes (a reduction that widens its 16-bit input itself may be
    vectorized differently, so a reassociable f32 sum may be summed in
    another order). At
    O1 this halves the weight gradients' memory (f16 instead of f32 until
    the optimizer widens them) and removes the f32 copy of the attention
    scores that softmax reads.

    ```
    amp-opt step.linalg.mlir --amp-fuse-elementwise
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def DecomposeAttentionPass
    : Pass<"amp-decompose-attention", "::mlir::ModuleOp"> {
  let summary = "Rewrite train.attention into batch_matmul, softmax, batch_matmul";
  let description = [{
    The unfused form of `train.attention` and `train.attention_grad`, as
    autocast and autodiff would have made of the hand-written attention:
    `batch_matmul(query, key^T)` in the operands' type with the op's
    accumulator, the scores widened to f32, scaled, masked (an additive mask
    added, a boolean one selecting -inf) and `softmax`ed in f32 (`causal`
    on square scores, a constant keep-mask otherwise), the probabilities
    rounded to the operands' type for `batch_matmul(P, value)`. The gradient
    recomputes the probabilities and forms `softmax_grad`; the log-sum-exp
    is not needed by it, so a forward op's `lse` may only be read by
    `train.attention_grad` ops (which this pass rewrites first).

    `amp-lower-cuda` runs it first (no fused CUDA kernel yet);
    `amp-lower-cpu` does with `fused-attention=false` or `blas=false`, to
    compare with the runtime's flash-style kernel. The decomposed form keeps
    the `[..., Sq, Sk]` scores and probabilities alive until the backward
    pass: O(S^2) memory per layer.

    ```
    amp-opt step.mlir --amp-decompose-attention
    ```
  }];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def DecomposeLmHeadPass : Pass<"amp-decompose-lm-head", "::mlir::ModuleOp"> {
  let summary = "Rewrite train.linear_cross_entropy into matmul, cast, cross_entropy";
  let description = [{
    The unfused form of `train.linear_cross_entropy` and its gradient, as
    autocast and autodiff make of a head written out: `matmul(input,
    weight)` in the operands' type (f32 sums), the logits widened to f32 for
    `cross_entropy`; the gradient computes the logits again, forms
    `cross_entropy_grad`, rounds it to the operands' type and multiplies it
    into the input's and the weight's gradients. The `[N, V]` logits and
    their gradient are then whole tensors of the step.

    `amp-lower-cuda` runs it first (no fused CUDA kernel yet);
    `amp-lower-cpu` does with `fused-lm-head=false` or `blas=false`.

    ```
    amp-opt step.mlir --amp-decompose-lm-head
    ```
  }];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def ConvertTrainToCpuRuntimePass
    : Pass<"amp-convert-train-to-cpu-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower GEMMs and convolutions to calls into the CBLAS runtime";
  let description = [{
    The CPU-specific half of amp-lower-cpu, run before
    `amp-convert-train-to-linalg`. `train.matmul` (with its bias),
    `train.batch_matmul`, `train.conv2d`, `train.conv2d_grad_input` and
    `train.conv2d_grad_filter` whose accumulator is f32 and whose operands are
    f32, f16 or bf16 become calls to `amp_cpu_gemm` / `amp_cpu_conv2d*`
    (lib/Runtime/CPU): the operands are passed as addresses of dense buffers
    (`bufferization.to_buffer read_only` + `memref.extract_aligned_pointer_as_index`)
    with element-type codes (0 f32, 1 f16, 2 bf16) and sizes, and the callee
    writes a fresh f32 buffer, rounded once to the op's result type. A GEMM
    with an f16/bf16 result calls `amp_cpu_gemm[_bias]_round` instead, which
    writes that result itself (oneDNN rounds as it writes bf16 from bf16
    operands on a target that multiplies them natively); its scratch (the
    f32 accumulator where one is needed) is recorded in
    `amp.workspace_bytes`.

    The runtime widens f16/bf16 operands exactly to f32 and calls
    `cblas_sgemm` (convolutions through im2col / col2im), so every product is
    exact and accumulates in f32, as on a Tensor Core.

    Each convolution call records the scratch the runtime takes for it
    (`amp.workspace_bytes`, include/amp/ABI/ConvWorkspace.h: widened
    operands and im2col chunks, or oneDNN's blocked copies, on the path the
    runtime's measured rule picks), which `amp-plan-memory` reserves in the
    step's arena; with `native-bf16` (a target with AVX-512 BF16 or
    AMX-BF16), bf16 operands go to oneDNN as they are: their convolutions
    and GEMMs record no f32 copies (a GEMM records an allowance for oneDNN's
    scratchpad instead). Ops it does not take
    (an f64 accumulator, f64 operands) are left for the linalg patterns.

    ```
    amp-opt step.mlir --amp-convert-train-to-cpu-runtime
    ```
  }];
  let options = [
    Option<"convAsGemm", "conv-as-gemm", "bool", /*default=*/"false",
           "Convolutions as GEMMs on im2col column matrices (the CUDA "
           "lowering's form; for testing it against the runtime's "
           "convolutions)">,
    Option<"nativeBf16", "native-bf16", "bool", /*default=*/"false",
           "The target CPU multiplies bf16 natively (AVX-512 BF16 or "
           "AMX-BF16): the scratch a convolution of bf16 operands records "
           "for the memory plan (amp.workspace_bytes) has no widened copies">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertTrainToCudaRuntimePass
    : Pass<"amp-convert-train-to-cuda-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower GEMMs to calls into the cuBLASLt runtime";
  let description = [{
    The CUDA counterpart of `amp-convert-train-to-cpu-runtime`:
    `train.matmul` (with its bias, as cuBLASLt's bias epilogue) and
    `train.batch_matmul` with an f32 accumulator become
    `train.runtime_call @amp_cuda_gemm(_bias)` with params
    `dtypeAB, dtypeD, batch, m, n, k, transpose_lhs, transpose_rhs[,
    epilogue]` (dtype codes 0 f32, 1 f16, 2 bf16). The result has the op's
    type: cuBLASLt multiplies f16/bf16 operands on Tensor Cores with
    CUBLAS_COMPUTE_32F and rounds D once (lib/Runtime/CUDA/CudaGemm.cpp).
    Convolutions and their gradients become GEMMs on column matrices:
    `conv2d` is `[F, C*KH*KW] x im2col(x)`, `conv2d_grad_filter`
    `dY' x im2col(x)^T`, `conv2d_grad_input` `col2im(W^T x dY')` with the
    product kept in f32; im2col, col2im and the layout transposes are
    generated kernels (linalg generics with gathers). A linear layer's
    weight gradient `matmul %x, %dy transpose_lhs` and bias gradient
    `reduce_sum %dy axes [0]` become one call,
    `runtime_call @amp_cuda_gemm_bgrad` with both results (cuBLASLt's
    BGRADA epilogue; the runtime falls back to a second GEMM with a row of
    ones where cuBLASLt has no algorithm for it).

    `train.all_reduce` (a data-parallel step's buckets) becomes
    `train.runtime_call @amp_cuda_all_reduce` on the packed bucket, as on
    the CPU: ncclAllReduce on the step's stream
    (lib/Runtime/CUDA/CudaCollectives.cpp).

    ```
    amp-opt step.mlir --amp-convert-train-to-cuda-runtime
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def SplitReductionsPass
    : Pass<"amp-split-reductions", "::mlir::func::FuncOp"> {
  let summary = "Split wide reductions with few outputs into two stages";
  let description = [{
    On linalg generics on tensors, before bufferization (amp-lower-cuda): a
    reduction with at most `max-parallel` outputs and at least
    `min-reduction` reduced elements per output (batch-norm statistics, a
    loss's sum over the batch) runs on a thread per output after
    amp-map-linalg-to-gpu, each looping over all its elements. This pass
    splits its widest reduction dimension into S chunks: a first generic
    reduces the chunks in parallel into partials `[outputs..., S]`
    (initialized with the combiner's identity), a second combines the S
    partials into the original outputs. S is chosen so that about
    `target-threads` threads work in the first stage (and S divides the
    dimension). Only generics whose every output is `acc (+) f(inputs)` with
    (+) one of addf, maximumf, minimumf, maxnumf, minnumf, addi, ori, andi
    (associative, so only the order of the f32 sums changes) and without
    `linalg.index` are split; OR reductions into `i1` are not (they run
    fully parallel after amp-map-linalg-to-gpu).

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-split-reductions))'
    ```
  }];
  let options = [
    Option<"minReduction", "min-reduction", "int64_t", /*default=*/"2048",
           "Reduced elements per output from which a reduction is split">,
    Option<"maxParallel", "max-parallel", "int64_t", /*default=*/"8192",
           "Outputs up to which a reduction is split">,
    Option<"targetThreads", "target-threads", "int64_t", /*default=*/"32768",
           "Threads of the first stage to aim for">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def MapLinalgToGpuPass
    : Pass<"amp-map-linalg-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Turn each buffer-level linalg op into a gpu.launch";
  let description = [{
    The kernel half of amp-lower-cuda, after bufferization: each linalg op
    (and each buffer copy, as `linalg.copy`) becomes one `gpu.launch` whose
    threads cover its parallel dimensions (linearized, 256-thread blocks,
    innermost dimension fastest for coalescing), with its reduction
    dimensions as sequential loops inside each thread (accumulating in the
    op's accumulator type). An OR reduction into an i1 (the non-finite checks
    of loss scaling) runs every iteration in parallel, threads storing only
    `true`; any other full reduction runs in one thread.

    Horizontal fusion: within a run of launches not separated by a host call
    or a host memory access, launches that do not depend on each other (no
    buffer one writes is read or written by another) become one launch, one
    segment of blocks per original launch (the multi-tensor kernels: one
    launch checks every gradient for inf/NaN, one updates every parameter).

    `memref.alloc` / `dealloc` become `gpu.alloc` / `dealloc`, a host-side
    `memref.load` / `store` a one-thread kernel, so the host never touches
    device memory; one chain of async tokens orders every GPU op in program
    order (the runtime runs them, and the cuBLASLt calls between them, on one
    stream) with a single `gpu.wait` before each return. Static shapes only.
    Follow with `gpu-kernel-outlining` and the NVVM pipeline.

    ```
    amp-opt step.bufferized.mlir --pass-pipeline='builtin.module(func.func(amp-map-linalg-to-gpu),gpu-kernel-outlining)'
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def CollapseLoopDimsPass
    : Pass<"amp-collapse-loop-dims", "::mlir::func::FuncOp"> {
  let summary = "Merge adjacent loop dimensions of linalg generics (CPU)";
  let description = [{
    On linalg generics on tensors, before bufferization (amp-lower-cpu): each
    run of adjacent iteration dimensions of the same iterator type that is
    contiguous in every operand (or absent from it) becomes one dimension, the
    operands reshaped with `tensor.collapse_shape` (a view after
    bufferization) and the results expanded back. After
    convert-linalg-to-loops the innermost loop is then as long as the
    contiguous data: batch-norm over an NCHW tensor loops over `N, C, H*W`
    instead of `N, C, H, W` (784 iterations innermost for a 28x28 image, not
    28), an element-wise op with identical operands over one flat loop, which
    is what LLVM's vectorizer needs. Generics with non-permutation indexing
    maps (convolution-like gathers) or `linalg.index` are left alone, and so
    are generics whose result the function returns (a reshaped view could not
    become the caller's out-parameter after bufferization and would be
    copied into it on every call).

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-collapse-loop-dims))'
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ReassociateReductionsPass
    : Pass<"amp-reassociate-reductions", "::mlir::func::FuncOp"> {
  let summary = "Let f32 sum reductions be vectorized (fastmath reassoc)";
  let description = [{
    Marks the accumulation `acc + f(inputs)` of every linalg reduction whose
    output is a float (`arith.addf` with the output's block argument as one
    operand) with `fastmath<reassoc>`. Nothing else in the body changes, and
    element-wise arithmetic keeps IEEE semantics. Without the flag LLVM must
    add the elements of a reduction loop one after the other (a chain of
    dependent adds, 4 cycles each); with it, the loop vectorizer keeps
    several partial sums in vector registers and adds them at the end, so
    only the order of the f32 sums changes (which, like a pairwise sum, is
    usually more accurate, and is deterministic for a given build).

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-reassociate-reductions))'
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def VectorizableMathPass
    : Pass<"amp-vectorizable-math", "::mlir::func::FuncOp"> {
  let summary = "f32 exp, tanh and erf as inline arithmetic LLVM can vectorize (CPU)";
  let description = [{
    Replaces every f32 `math.exp`, `math.tanh` and `math.erf` (scalar or
    vector) by straight-line arithmetic: range reduction and minimax
    polynomials (Cephes' expf, tanhf and erff), built from arith ops only
    (mul, add, div, selects, bit operations: math ops would become libm
    calls later), so the loops that compute them vectorize instead of
    calling libm once per element. exp and tanh within 1.5 ulps of the
    exact result, erf within 3 (glibc's scalar functions: 1), subnormal
    results rounded once, +inf / 0 / NaN as IEEE says.
    Other types and other math ops are left alone (libm, as before).

    ```
    amp-opt step.mlir --pass-pipeline='builtin.module(func.func(amp-vectorizable-math))'
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect",
  ];
}

def ParallelizeLoopsPass
    : Pass<"amp-parallelize-loops", "::mlir::func::FuncOp"> {
  let summary = "Split each large linalg op on buffers into independent tasks";
  let description = [{
    The CPU lowering's threading, first half: after bufferization, every
    linalg op on buffers of at least `min-work` iterations is tiled along one
    parallel dimension into an `scf.forall` of at most `max-tasks` tasks
    (upstream's `scf::tileUsingSCF`); `amp-outline-parallel-loops` turns each
    into a call of the runtime's thread pool. The dimension is the outermost
    parallel one with at least two tiles that every output's indexing map
    uses (a parallel dimension an output ignores would have tasks write the
    same elements); an innermost (contiguous) one is
    tiled in multiples of 16 elements, so each task's inner loop keeps whole
    vectors. The tile divides the dimension when it can (static subview
    shapes); the remainder tile is dynamic otherwise.

    Each task computes a disjoint part of the op's outputs with the op's own
    loop order inside, so every output element is computed by one task in
    the same order as without threads: results are bit-identical for any
    number of threads. An op whose outputs have no parallel dimension (a
    full reduction to a scalar) stays sequential.

    ```
    amp-opt step.bufferized.mlir --pass-pipeline='builtin.module(func.func(amp-parallelize-loops{min-work=65536 max-tasks=64}))'
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"65536",
           "Split only ops of at least this many loop iterations">,
    Option<"maxTasks", "max-tasks", "int64_t", /*default=*/"64",
           "The most tasks an op is split into">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def OutlineParallelLoopsPass
    : Pass<"amp-outline-parallel-loops", "::mlir::ModuleOp"> {
  let summary = "Turn each one-dimensional scf.forall on buffers into a thread-pool call";
  let description = [{
    The CPU lowering's threading, second half (with
    `amp-lower-parallel-launches`). Each `scf.forall` with one induction
    variable, no results and constant bounds (from `amp-parallelize-loops`)
    becomes, with task t standing for iteration `lower + t * step`:
    - a private function `@<function>_task<N>(%first: index, %last: index,
      <captured values>...)` running the loop's body for the tasks
      [first, last) in order. When each of its memref arguments views
      (through subviews, reshapes and casts) a different allocation, global
      or argument of an entry point (a public function nothing in the module
      calls, whose buffers are distinct), so their contents do not overlap,
      and the body reaches memory only through them (no globals, calls or
      raw pointers of its own), its
      `amp.noalias_pointers` lists the positions of their pointers in the
      LLVM signature (`%first`, `%last`: 0, 1; other values one each),
      because convert-to-llvm drops a memref argument's attributes. When
      every memref argument has a static shape, strides and offset, the
      function and its launch carry `llvm.bareptr`: each memref passes as
      its aligned pointer alone (one parameter, listed). Otherwise each
      memref of rank r is two pointers (both listed), an offset, r sizes and
      r strides. Where any memref argument's memory is not known so
      (another op's result, the argument of a function the module calls),
      there is none;
    - a call of a private declaration `@<function>_task<N>_launch(%tasks,
      <captured values>...)` carrying `amp.parallel_task = @<function>_task<N>`,
      which `amp-lower-parallel-launches` replaces with a call of the
      runtime's `amp_cpu_parallel_for` once the module is in the LLVM dialect.
    Constants the body uses are cloned into the task function; other values
    defined outside the loop are passed. A function equal to one outlined
    before (the same signature, `amp.noalias_pointers` and body, locations
    aside) is not made again: the loop calls the earlier one (its launch).
    A deep model repeats its layers' shapes, so its thousands of loops
    share a few dozen functions (a 100-layer MLP: 2 942 -> 58), each
    lowered and compiled once, and the bare pointers make each of the
    step's thousands of calls pass one value per buffer instead of a
    descriptor.

    With `outline-serial`, each linalg op on buffers left at the top level
    of a function that has at least `min-serial` of them (the sequential
    work beside the tasks) moves into a private function
    `@<function>_loop<N>(<captured values>...)` of its own, called directly
    with `no_inline`, with `amp.noalias_pointers` and `llvm.bareptr` as a
    task's, shared as tasks are. LLVM's loop
    passes (loop rotation, induction-variable simplification, loop
    deletion) cost time superlinear in the size of the function holding
    the loops: on DenseNet-121's step, one function of thousands of loop
    nests, 138 of -O3's 155 s (docs/benchmarks.md).

    ```
    amp-opt step.forall.mlir --amp-outline-parallel-loops
    amp-opt step.forall.mlir --amp-outline-parallel-loops="outline-serial=true min-serial=16"
    ```
  }];
  let options = [
    Option<"outlineSerial", "outline-serial", "bool", /*default=*/"false",
           "Also move each top-level linalg op on buffers into a function "
           "of its own (called, never inlined)">,
    Option<"minSerial", "min-serial", "int64_t", /*default=*/"16",
           "outline-serial: only in functions with at least this many such "
           "ops">,
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect",
  ];
}

def LowerParallelLaunchesPass
    : Pass<"amp-lower-parallel-launches", "::mlir::ModuleOp"> {
  let summary = "Launch outlined tasks through the CPU runtime's thread pool (LLVM dialect)";
  let description = [{
    Runs on the LLVM dialect, after `convert-to-llvm`. Each call of a
    declaration carrying `amp.parallel_task = @task` (made by
    `amp-outline-parallel-loops`) becomes: the call's arguments (after the
    task count) stored into a stack struct, and
    `amp_cpu_parallel_for(@task_run, &struct, tasks)`, where the new
    internal function `@task_run(ptr, i64 first, i64 last)` loads the
    arguments and calls `@task(first, last, ...)`. The task function's
    parameters listed in its `amp.noalias_pointers` get `llvm.noalias`, so
    LLVM vectorizes its loops without run-time alias checks, as it does the
    entry functions'. The declarations are erased.

    ```
    amp-opt step.llvm.mlir --amp-lower-parallel-launches
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FreeAfterLastUsePass
    : Pass<"amp-free-after-last-use", "::mlir::func::FuncOp"> {
  let summary = "Free each temporary buffer right after its last use";
  let description = [{
    Runs after `ownership-based-buffer-deallocation` on functions whose
    results are out-parameters (amp's steps). That pass frees a function's
    buffers with one `bufferization.dealloc` at the end of the block that
    allocated them, so every temporary of a step lives until the step ends,
    and `buffer-deallocation-simplification` then compares the thousands of
    buffers of that one op pairwise (quadratic: 4 s for a 200-layer MLP step).

    For a `bufferization.dealloc` that retains nothing and frees, each under
    a constant-true condition, distinct results of `memref.alloc` in its own
    block, this pass instead places one `memref.dealloc` per buffer right
    after the buffer's last use in that block: the last op that uses the
    buffer or anything derived from it (any result of a user, transitively:
    views, extracted pointers handed to runtime calls, loaded values), a use
    nested in a region counting as a use by the region's op. A buffer with
    a derived value passed to a branch (to another block) is freed where
    the dealloc was. Linear in the uses; the peak memory of a step becomes
    that of its live buffers. Any other dealloc is left to the upstream
    passes.

    ```
    amp-opt step.bufferized.mlir --pass-pipeline='builtin.module(ownership-based-buffer-deallocation,func.func(amp-free-after-last-use))'
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def CaptureScalarInputsPass : Pass<"amp-capture-scalar-inputs", "::mlir::func::FuncOp"> {
  let summary = "Reads a rank-0 input of a linalg.generic once, as a scalar its body captures";
  let description = [{
    Runs before `amp-one-shot-bufferize` on the CPU. A `linalg.generic` with
    at least one loop that takes a rank-0 tensor as an input reads the same
    element on every iteration: the pass reads it once with `tensor.extract`
    (right after the tensor is defined, one read shared by every generic
    that takes it) and the body uses that scalar instead of a block argument;
    the operand and its indexing map are dropped.

    A training step passes its few scalars (the inverse loss scale,
    `found_inf`, Adam's bias corrections) to the update of every parameter:
    each is an input of hundreds or thousands of generics. One-shot
    bufferization's conflict analysis examines, for each operand, every use
    of every alias of its value, so such a scalar made it quadratic in the
    parameters (49 million write queries for a 1 000-layer MLP step). After
    the pass each scalar tensor has one use.

    Generics without loops (the scalar updates of the loss scale) keep their
    operands; the CUDA lowering does not run the pass (a kernel cannot read
    a scalar the host extracted from device memory).

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-capture-scalar-inputs))'
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def UpdateStateInPlacePass
    : Pass<"amp-update-state-in-place", "::mlir::func::FuncOp"> {
  let summary = "Write a step's new state into the buffers of the state it replaces";
  let description = [{
    Runs on tensors, right before bufferization, on functions carrying the
    role record `amp.result_arguments` (one entry per result: the argument
    that result is the next value of, or -1; amp's drivers write it on the
    step from its `train.*` argument roles, `amp::train::getStepResultArguments`).
    Each such argument is marked `bufferization.writable`. Where a linalg op
    computes the result into a `tensor.empty` init its body never reads
    (seen through `tensor.expand_shape` / `collapse_shape`: an identical
    reshape of the argument the op already reads is reused), the init
    becomes the argument, so the update is computed in place: the
    parameters, masters, moments and loss-scale state of a step. Any other
    result is copied into its argument (`linalg.copy`) where it is made,
    or after the argument's last read if that comes later. Bufferization's analysis then decides: where nothing reads the
    old value after the new one is written, the write goes into the
    argument's buffer; otherwise into a buffer of its own, and that result
    stays a result (`amp-drop-in-place-results`). Nothing is forced, so
    nothing fails to bufferize.

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-update-state-in-place),amp-one-shot-bufferize,func.func(amp-drop-in-place-results))'
    ```
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def DropInPlaceResultsPass
    : Pass<"amp-drop-in-place-results", "::mlir::func::FuncOp"> {
  let summary = "Drop the results bufferization wrote into their arguments";
  let description = [{
    Runs right after bufferization (before `buffer-results-to-out-params`)
    on functions with the role record `amp.result_arguments`. A result
    recorded as the next value of argument `a` whose returned buffer is
    argument `a` itself (seen through `memref.cast` and reshapes, in the
    argument's own type) is dropped from the
    function: the caller finds it in the argument's buffer. Any other
    recorded result stays, and its entry becomes -1, so the record then
    says exactly which results of the original signature are written in
    place: the contract the runtimes (JIT, artifacts, CPU and CUDA
    sessions) follow.
  }];
}

def RecomputePass : Pass<"amp-recompute", "::mlir::func::FuncOp"> {
  let summary = "Recompute forward values in backward instead of keeping "
                "them (recomputation under a memory budget)";
  let description = [{
    Runs on linalg on tensors, after fusion and before bufferization. A
    value used both early (the forward) and late (the backward) is kept
    alive across the gap between its uses. The pass computes it again just
    before its first late use and gives the late uses the copy, so its own
    buffer is freed after its early uses. The copy is the value's op and,
    recursively, the ops that made its operands, back to tensors alive at
    that use anyway (arguments, constants, values used there or later: a
    norm's input kept for its gradient) or to a copy made there before (at
    most 16 ops). Each must be a pure linalg op on tensors that is no
    contraction or convolution (element-wise work, a norm's reductions,
    fills, transposes), a view (reshape, slice), or with `recompute-gemms`
    a GEMM of the runtime (`train.runtime_call @amp_cpu_gemm*`); inits an
    op does not read get a fresh `tensor.empty`. The copies compute the
    same bits (the same ops on the same inputs).

    `budget` is the peak to reach, as a fraction of the function's peak
    without recomputation: the pass's own estimate of live tensor bytes
    (each value live from its definition to its last use; arguments,
    constants, empty tensors and returned values excluded) plus the
    largest `amp.workspace_bytes` of its runtime calls (the arena's
    workspace, which recomputation does not shrink). The best value
    alive across the estimated peak (read before and after it; one that
    needs no GEMM first, then the largest; among GEMM ones, the most bytes
    per multiply-add) is recomputed for its reads after the peak, kept only
    if the peak went down, and again, until the estimate is at most the
    budget or none is left. 1 (the default) recomputes nothing. Each op
    computed again is marked `amp.recomputed` (the views cloned with it and
    fresh empty tensors are not), and the function records `amp.recompute`: the
    values recomputed, their bytes, the GEMMs run again, and the estimated
    peaks before and after.

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-recompute{budget=0.5}))'
    ```
  }];
  let options = [
    Option<"budget", "budget", "double", /*default=*/"1.0",
           "The estimated peak of live tensors to reach, as a fraction of "
           "the peak without recomputation (0 < budget <= 1; 1: none)">,
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"65536",
           "The smallest value worth recomputing, in bytes">,
    Option<"recomputeGemms", "recompute-gemms", "bool", /*default=*/"false",
           "Also recompute GEMMs of the runtime where a value needs them "
           "(after every value that needs none)">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def PlanMemoryPass : Pass<"amp-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Place a step's temporaries in one arena, by liveness";
  let description = [{
    Runs after the deallocation passes (`amp-free-after-last-use`,
    `convert-bufferization-to-memref`) on functions of one block ending in a
    return (amp's steps). Each `memref.alloc` of that block with a static
    shape, the identity layout and one `memref.dealloc` in the block lives
    over an interval of the block's op order, from its allocation to its
    free. The pass places these buffers in one arena: largest first, each at
    the lowest offset (a multiple of `alignment`) where no already placed
    buffer whose interval overlaps its own lies (greedy interval colouring).
    Each allocation becomes a `memref.view` of the arena at its offset
    (marked `amp.planned_view`: a buffer of its own, which
    `amp-outline-parallel-loops` may pass as noalias), its dealloc goes, and
    the arena is allocated once where the function starts and freed before
    it returns: one allocation per call instead of one per buffer.

    With `workspace-function`, each call of a function declaration whose
    name starts with `runtime-prefix` (a runtime call: GEMM, attention...)
    also gets a workspace,
    planned as a buffer live at the call alone: the bytes its lowering
    recorded (`amp.workspace_bytes`: a convolution's im2col chunks or
    oneDNN's blocked copies, a native bf16 GEMM's scratchpad), else an f32
    copy's
    room for each 16-bit float operand (the runtime widens such operands),
    plus the free range that follows it at that point, lent to the runtime
    for the call (`workspace-function(base, bytes)` before it, `(0, 0)`
    after it). The runtime's scratch then comes from the arena where it
    fits, and the plan's peak includes it. A call whose lowering marked its
    scratch as not bounded in advance (`amp.workspace_bytes = -1`) leaves
    its function to the heap.

    The function records the plan in `amp.memory_plan`: `arena_bytes` (the
    planned peak, known before the step runs), `live_peak_bytes` (the most
    bytes live at one point: no plan's arena is smaller), `buffers`,
    `unplanned_buffers` and `unplanned_bytes` (allocations left to the heap:
    nested in loops, dynamic, freed elsewhere), `workspaces` and `at_peak` (the bytes
    live at that point by the kind of op that first writes them: a runtime
    call's family such as `gemm` or `attention`, `loops` for amp's
    generated code, `copy`).

    ```
    amp-opt step.buffers.mlir --pass-pipeline='builtin.module(amp-plan-memory)'
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of each buffer's offset and of the arena, in bytes (a "
           "power of two)">,
    Option<"workspaceFunction", "workspace-function", "std::string",
           /*default=*/"\"\"",
           "The runtime function that lends a call its workspace (base "
           "address as index, bytes as i64; the address 0 ends the loan); "
           "empty: runtime calls get none">,
    Option<"runtimePrefix", "runtime-prefix", "std::string",
           /*default=*/"\"amp_cpu_\"",
           "The runtime calls that get a workspace: calls of declarations "
           "whose names start with this">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def UnshareInitsPass : Pass<"amp-unshare-inits", "::mlir::func::FuncOp"> {
  let summary = "Give each destination-style op its own tensor.empty / fill init";
  let description = [{
    Runs right before `one-shot-bufferize`. CSE merges identical
    `tensor.empty` and `linalg.fill` ops, so hundreds of linalg ops of a step
    end up writing into one shared init value: bufferization can write in
    place into it for one of them only, copies the filled buffer for every
    other (a `memref.copy` where a fill would do), and its conflict analysis
    examines all of them as one alias set (the cubic part of compile time on
    deep models). This pass re-creates such an init (an empty tensor, or a
    fill of an empty tensor) right before each destination-style op that
    uses it as an init, when the value has other uses or is built away
    from its one use (the originals left unused are erased): each buffer is
    then allocated where it is first written, not held from an earlier
    point of the step.

    An init seen through `tensor.collapse_shape`, `tensor.expand_shape` or
    `tensor.cast` (the CPU lowering collapses elementwise ops to one
    dimension) is shared when its empty tensor or fill, or any reshape on
    the way, has other uses: the reshapes are re-created with it. Without
    that, one empty tensor reshaped for every layer of a network was one
    buffer and one alias set for all of them, and the in-place analysis of
    a 300-layer MLP's step took 71 s instead of 1.5 s.

    A value a function returns more than once is copied (`linalg.copy` into a
    new `tensor.empty`) for each repeat, so every result gets its own buffer:
    `buffer-results-to-out-params` crashes on one buffer returned twice in
    MLIR 22 (llvm-project #219492).

    ```
    amp-opt step.linalg.mlir --pass-pipeline='builtin.module(func.func(amp-unshare-inits))'
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect",
  ];
}

def ConvertScfToCfPass : Pass<"amp-convert-scf-to-cf"> {
  let summary = "convert-scf-to-cf, last loop first (linear in the loops)";
  let description = [{
    Upstream's `populateSCFToControlFlowConversionPatterns` applied to the
    outermost SCF ops of each block in reverse order, without pattern
    rollback. Lowering an `scf.for` splits its block and moves every op after
    the loop into the new block; upstream's convert-scf-to-cf lowers a
    block's loops first to last, so each split moves all later loops again:
    quadratic in the loops of a function (a 300-layer MLP step has about
    20 000). Last loop first, a split moves only the ops up to the next,
    already lowered, loop. The result is the same CFG.

    ```
    amp-opt step.loops.mlir --amp-convert-scf-to-cf
    ```
  }];
  let dependentDialects = ["::mlir::cf::ControlFlowDialect"];
}

def ConvertToLLVMPass : Pass<"amp-convert-to-llvm", "::mlir::ModuleOp"> {
  let summary = "convert-to-llvm for the CPU step's last dialects, with one symbol table";
  let description = [{
    The func, cf, arith, index, ub and math dialects to the LLVM dialect in
    one conversion without pattern rollback: what `convert-to-llvm{allow-
    pattern-rollback=false}` does for them, with the func patterns given a
    `SymbolTableCollection`. Upstream's convert-to-llvm gives them none, so
    each `func.call` finds its callee by a linear scan of the module: a
    1 000-layer MLP step has 29 000 calls into 9 000 functions, and the scans
    took 70 % of the conversion. Indices are as wide as the module's data
    layout says (64 bits by default).

    ```
    amp-opt step.cf.mlir --amp-convert-to-llvm --reconcile-unrealized-casts
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def SplitEntryBlockPass : Pass<"amp-split-entry-block", "::mlir::func::FuncOp"> {
  let summary = "moves the body of a function with many arguments out of its entry block";
  let description = [{
    Splits the entry block of a function with at least `min-arguments`
    arguments before its first op: the entry block keeps only a `cf.br` to
    a new block holding the whole body. Converting a function's signature to
    the LLVM dialect inserts one cast per argument at the start of the entry
    block and checks the order of each cast against the argument's users;
    every insertion invalidates the block's op order, so with the body in the
    entry block each check renumbers the whole body: quadratic in the
    function's size (a 1 000-layer MLP step: 12 000 arguments, 390 000 ops).
    In their own block the casts are ordered against a branch instead.
    LLVM merges the two blocks again.

    ```
    amp-opt step.cf.mlir --pass-pipeline='builtin.module(func.func(amp-split-entry-block{min-arguments=64}))'
    ```
  }];
  let options = [
    Option<"minArguments", "min-arguments", "unsigned", /*default=*/"64",
           "Split only functions with at least this many arguments">,
  ];
  let dependentDialects = ["::mlir::cf::ControlFlowDialect"];
}

def OneShotBufferizePass : Pass<"amp-one-shot-bufferize", "::mlir::ModuleOp"> {
  let summary = "one-shot-bufferize at function boundaries, without the analysis for huge functions";
  let description = [{
    Upstream's One-Shot Module Bufferization as amp's pipelines use it
    (`bufferize-function-boundaries`, identity layout maps at function
    boundaries). Its analysis decides which writes can happen in place; the
    conflict checks of one write cover every read and write of the values
    sharing its buffer, so one buffer shared down a whole network makes
    them cubic in the network's depth: `amp-unshare-inits`, which runs
    before it, gives each op its own init, and the analysis then grows
    about linearly (a 300-layer MLP step of 69 000 ops: 1.5 s, against
    71 s before). Every function is analysed by default; `analysis-limit`
    bufferizes functions of more ops without it (upstream's
    `noAnalysisFuncFilter`: a copy before each in-place write, linear
    time) and `copy-before-write` skips it everywhere.

    ```
    amp-opt step.linalg.mlir --amp-one-shot-bufferize
    amp-opt step.linalg.mlir --amp-one-shot-bufferize=analysis-limit=5000
    ```
  }];
  let options = [
    Option<"copyBeforeWrite", "copy-before-write", "bool", /*default=*/"false",
           "No analysis in any function (a copy before each in-place write)">,
    Option<"analysisLimit", "analysis-limit", "int64_t", /*default=*/"0",
           "Ops of a function above which it is bufferized without analysis "
           "(0: no limit)">
  ];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect",
  ];
}

#endif // AMP_CONVERSION_PASSES_TD
