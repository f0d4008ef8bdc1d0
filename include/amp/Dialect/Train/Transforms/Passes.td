//===- Passes.td - Transformations of the train dialect ----*- tablegen -*-===//
//
// Part of the amp project: a mixed-precision training compiler on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
#define AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutocastPass : Pass<"amp-autocast", "::mlir::ModuleOp"> {
  let summary = "Assign each op a precision and insert the fewest casts";
  let description = [{
    Decides, per train op, the precision it computes in and inserts
    `train.cast` only where a value's type differs from what its user needs.

    - Categories (PrecisionPolicyOpInterface): `lower` ops (matmul,
      batch_matmul, conv2d) take the low type and accumulate in f32; `fp32`
      ops (softmax, log_softmax, layer_norm, exp, log, reductions, losses)
      take f32; `promote` ops (add, sub, mul, div, concat) take the widest type
      among their non-scalar float operands (a rank-0 operand follows, as a
      Python scalar does in PyTorch); `follow` ops take what arrives.
      batch_norm follows with its activation only: its parameters and
      running statistics stay f32.
    - One cast per (value, type) per function, placed right after the
      value's definition (at the top of the block for arguments): a weight
      used by N ops is cast once per step.
    - Non-train users (func.return, scf.yield, calls) see the original types:
      a value whose type changed is cast back at that boundary.
    - `opt-level`: O0 changes nothing; O1 applies the categories; O2 runs every
      op in the low type except batch norm (fp32, with fp32 parameters) and
      stores the other parameters in the low type; O3 runs everything,
      parameters and state (running statistics) included, in the low type.
    - Overrides, strongest first: `train.precision = "lower" | "fp32" |
      "promote" | "follow"` on an op, then a `calibration` (below), then the
      `policy` JSON file (`{"fp32": ["train.matmul"]}`), then the opt
      level's defaults.
    - `calibration`: a JSON file of measured magnitudes per op instance
      (amp.calibrate writes it; docs/Numerics.md), keyed by the op's module
      path (its location's name), its name and its index among the ops of
      that name in that module. An op whose measured output or inputs (a
      `lower` op would take them in the low type) times
      `calibration-margin` do not fit the low type's largest finite value
      runs in fp32, decided `fp32/calibrated`, with the magnitude in
      `train.calibrated_magnitude`. An entry with no op in the module (a
      calibration of another model) is an error naming it.

    ```
    amp-opt model.mlir --amp-autocast="dtype=bf16 opt-level=O1 policy=my.json"
    amp-opt model.mlir --amp-autocast="calibration=model.calibration.json"
    ```
  }];
  let options = [
    Option<"dtype", "dtype", "::amp::train::LowType",
           /*default=*/"::amp::train::LowType::f16",
           "Low-precision type: f16 or bf16", "AMP_LOW_TYPE_VALUES">,
    Option<"optLevel", "opt-level", "::amp::train::OptLevel",
           /*default=*/"::amp::train::OptLevel::O1",
           "Apex optimization level: O0, O1, O2 or O3",
           "AMP_OPT_LEVEL_VALUES">,
    Option<"policyFile", "policy", "std::string", /*default=*/"\"\"",
           "JSON file moving op names between autocast categories">,
    Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
           "JSON file of measured magnitudes per op instance (amp.calibrate); "
           "ops that do not fit the low type run in fp32">,
    Option<"calibrationMargin", "calibration-margin", "double",
           /*default=*/"2.0",
           "An op runs in fp32 when its measured magnitude times this "
           "exceeds the low type's largest value (>= 1)">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def AutodiffPass : Pass<"amp-autodiff", "::mlir::ModuleOp"> {
  let summary = "Derive the backward graph: loss and one gradient per parameter";
  let description = [{
    For each function with `train.param` arguments, adds `@<name>_grad`: the
    same computation followed by reverse-mode differentiation through each
    op's DifferentiableOpInterface, returning the original results (the loss
    first) and then one gradient per parameter, in argument order.

    - Only values that depend on a parameter and reach the loss get
      gradients; a parameter that does not reach the loss gets zeros.
    - A value used several times gets the sum of its gradients.
    - Gradients have the type of their value, so after `amp-autocast` each
      backward op runs in its forward op's precision and the gradient of a
      cast casts back: f32 parameters get f32 gradients.
    - An op without a gradient rule, or control flow, is an error naming
      the op and its location; no gradient is ever silently wrong.
    - The model's outputs (results marked `train.output`) are dropped from
      the gradient function first, with what only they read; a bias-free
      head whose logits only the loss then reads becomes one
      `train.linear_cross_entropy` with it (amp-fuse-lm-head's rewrite), so
      the step never holds the `[rows, vocabulary]` logits whole.

    ```
    amp-opt model.mlir --amp-autocast --amp-autodiff
    ```
  }];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def OptimizerPass : Pass<"amp-optimizer", "::mlir::ModuleOp"> {
  let summary = "Build the training step: gradients into one fused update";
  let description = [{
    For each `@<name>_grad` made by amp-autodiff, builds `@train_step`
    (`@<name>_step` when there are several): the gradient computation
    followed by one fused `train.sgd_update` or `train.adam_update` over all
    parameters. The step's signature (docs/Autodiff.md):

    - arguments: the forward function's, then one f32 master copy per
      low-precision parameter (`train.master`), then the optimizer state
      (`train.opt_state`: momentum buffers; or Adam's first moments, second
      moments and step count), then the learning rate (`train.lr`, rank-0
      f32: a schedule changes it without recompiling);
    - results: the loss, the new state (batch-norm statistics), the new
      parameters, the new masters, the new optimizer state, in those orders.

    `accumulate=N` adds gradient accumulators and a micro-batch count to the
    optimizer state (before the optimizer's own): every call adds its
    gradients, and every N-th call updates with their mean (the other calls
    leave parameters and optimizer state unchanged). `clip-norm=C` scales the
    gradients so their global L2 norm (f32) is at most C, before the update.

    Optimizer state is f32. A parameter stored in f16/bf16 (O2) is updated
    through its f32 master: the gradient is widened, the master updated in
    f32, and the new low-precision parameter is the rounded master.

    ```
    amp-opt model.mlir --amp-autocast --amp-autodiff --amp-optimizer="optimizer=adamw weight-decay=0.01"
    ```
  }];
  let options = [
    Option<"optimizer", "optimizer", "::amp::train::OptimizerKind",
           /*default=*/"::amp::train::OptimizerKind::adam",
           "sgd, momentum, adam or adamw",
           "::llvm::cl::values(AMP_OPTIMIZER_VALUES)">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Momentum of the momentum optimizer">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "Nesterov momentum">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's beta2">,
    Option<"epsilon", "eps", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.0",
           "L2 weight decay (decoupled for adamw)">,
    Option<"accumulate", "accumulate", "int64_t", /*default=*/"1",
           "Micro-batches whose gradients are averaged into one update">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Clip the gradients' global L2 norm to this (0: no clipping)">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def LossScalingPass : Pass<"amp-loss-scaling"> {
  let summary = "Compile PyTorch GradScaler's loss scaling into the step";
  let description = [{
    Rewrites each training step made by amp-optimizer (a function with an
    optimizer update). Works per function (FunctionOpInterface): on a module
    it visits its functions in turn; nested under `func.func` (as
    amp-pipeline runs it) the pass manager runs the functions in parallel.

    - the backward seed (`train.loss_seed`) becomes the scale, so every
      gradient is computed scaled;
    - one `train.unscale_grads` multiplies all gradients by 1/scale and
      detects inf/NaN, before clipping (clip unscaled gradients) and after
      accumulation (keep micro-batch gradients scaled, unscale once);
    - the update is skipped when found_inf (or while micro-batches are
      pending): parameters, masters and optimizer state stay bit-identical;
    - `mode=dynamic` adds the scale (f32, `train.init = constant(init-scale)`)
      and growth tracker (i32, zeros) as `train.scaler_state` arguments and
      updates them with `train.update_scale` inside the step (no host sync);
      results gain the new scale, the new tracker, found_inf and the
      loss-scale-collapse flag (scale would fall below min-scale).
      `mode=static` multiplies by the constant init-scale and still skips
      non-finite steps; results gain found_inf. `mode=none` changes nothing.

    ```
    amp-opt model.mlir --amp-autocast --amp-autodiff --amp-optimizer --amp-loss-scaling="init-scale=1024"
    ```
  }];
  let options = [
    Option<"mode", "mode", "::amp::train::LossScaleMode",
           /*default=*/"::amp::train::LossScaleMode::dynamic",
           "dynamic, static or none",
           "::llvm::cl::values(AMP_LOSS_SCALE_VALUES)">,
    Option<"initScale", "init-scale", "double", /*default=*/"65536.0",
           "Initial (or static) scale">,
    Option<"growthFactor", "growth-factor", "double", /*default=*/"2.0",
           "Scale growth after growth-interval clean steps (> 1)">,
    Option<"backoffFactor", "backoff-factor", "double", /*default=*/"0.5",
           "Scale backoff on inf/NaN (in (0, 1))">,
    Option<"growthInterval", "growth-interval", "int64_t", /*default=*/"2000",
           "Clean steps before growth (>= 1)">,
    Option<"minScale", "min-scale", "double", /*default=*/"0.0",
           "Floor of the scale; reaching it reports loss-scale collapse">,
    Option<"maxScale", "max-scale", "double", /*default=*/"16777216.0",
           "Cap of the scale (Apex: 2^24)">,
    Option<"hysteresis", "hysteresis", "int64_t", /*default=*/"1",
           "Consecutive overflowing steps before the scale backs off">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def DataParallelPass : Pass<"amp-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Sum gradients across data-parallel ranks inside the step";
  let description = [{
    Makes each training step (a function with an optimizer update) the step
    of one of `ranks` processes that train one model on their own batches,
    as PyTorch's DistributedDataParallel with GradScaler does:

    - The gradients are all-reduced (`train.all_reduce`) where they leave
      backward and gradient accumulation: after `train.accumulate_grads`
      (skipped, with no communication, while micro-batches are pending: one
      all-reduce per update), before unscaling, clipping and the update.
    - Buckets: the gradients are grouped in the order backward produces
      them into buckets of at most `bucket-mb` MiB on the wire (a larger
      gradient is a bucket of its own), and each bucket's all-reduce is
      placed right after its last gradient, so that it can run while
      backward computes the earlier layers.
    - The mean: with loss scaling and an f32 wire the buckets are summed and
      the 1/ranks is folded into `train.unscale_grads`' divisor (one f64
      factor, as GradScaler computes inv_scale); otherwise each rank
      multiplies by 1/ranks before sending (`mean`), so that a 16-bit wire
      overflows only where the mean would.
    - found_inf is all-reduced with `max` (every rank already sees the same
      summed gradients; this is cheap insurance), so every rank skips the
      same steps and updates its scale identically: the replicas stay
      bit-identical.

    Batch norm keeps local statistics per rank (DDP's default). With
    `sync-batchnorm` every `train.batch_norm` and `train.batch_norm_grad` of
    the step gets `ranks`: its statistics are the global batch's
    (SyncBatchNorm; the per-channel sums are all-reduced in forward and
    backward, on every micro-batch). Run it after amp-optimizer and
    amp-loss-scaling; `ranks=1` changes nothing.

    ```
    amp-opt step.mlir --amp-data-parallel="ranks=4 wire-type=f16 bucket-mb=25"
    amp-opt step.mlir --amp-data-parallel="ranks=2 sync-batchnorm=true"
    ```
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "Number of processes (required)">,
    Option<"wireType", "wire-type", "::amp::train::WireType",
           /*default=*/"::amp::train::WireType::f32",
           "Element type of the gradients between ranks: f32, f16 or bf16",
           "AMP_WIRE_TYPE_VALUES">,
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Largest bucket of gradients one all-reduce sends, in MiB">,
    Option<"syncBatchnorm", "sync-batchnorm", "bool", /*default=*/"false",
           "Batch norm over the global batch (SyncBatchNorm)">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def RaiseAttentionPass : Pass<"amp-raise-attention", "::mlir::ModuleOp"> {
  let summary = "Raise hand-written attention to train.attention";
  let description = [{
    Finds attention written out in a model,

    ```mlir
    %s = train.batch_matmul %q, %k transpose_rhs : ...      // q k^T
    %t = train.mul %s, %c : ..., tensor<f32> -> ...          // optional: a constant scale
    %u = train.add %t, %mask : ...                           // optional: an additive mask
    //   (or train.select %keep, %t, %neg_inf: a boolean one)
    %p = train.softmax %u axis <last> [causal] : ...
    %o = train.batch_matmul %p, %v : ...
    ```

    (the scale may also be a `train.div` by a constant, on either side of
    the product's operands for `mul`), and replaces it by one
    `train.attention` when every intermediate has that one use and query,
    key and value share their leading dimensions. The decomposed form keeps
    the scores and probabilities of every layer for the backward pass; the
    fused op keeps a log-sum-exp per query (docs/Passes.md). amp-pipeline
    runs it first, on the f32 graph, so autocast and autodiff see the fused
    op; `amp-lower-cpu{fused-attention=false}` decomposes it again.

    ```
    amp-opt examples/transformer_block.mlir --amp-raise-attention
    ```
  }];
}

def FuseLmHeadPass : Pass<"amp-fuse-lm-head", "::mlir::ModuleOp"> {
  let summary = "A bias-free head and its cross-entropy as train.linear_cross_entropy";
  let description = [{
    Finds a language model's head and loss,

    ```mlir
    %l = train.matmul %x, %w transpose_rhs accumulate f32 : ...   // or batch_matmul with a [1, K, V] weight
    %r = train.reshape %l : ...                                   // optional, the classes kept last
    %f = train.cast %r : ... to tensor<...xf32>                   // the one widening cast of a 16-bit product
    %loss = train.cross_entropy %f, %labels : ...
    ```

    and replaces it by one `train.linear_cross_entropy` when every value
    between the product and the loss has that one use (logits that are also
    a result stay), the loss is in f32, the products are summed in f32 and
    the weight has no bias. The weight is traced back through unit-dimension
    reshapes, a transpose and its cast, so a tied embedding table is read as
    it is stored (`transpose_weight`). amp-autodiff applies the same rewrite
    to each gradient function it builds, once the model's outputs are
    dropped: the step never holds the [N, V] logits whole, while the
    forward function (evaluation) keeps its head as written.

    ```
    amp-opt model.mlir --amp-autocast --amp-fuse-lm-head
    ```
  }];
}

def CheckNumericsPass : Pass<"amp-check-numerics", "::mlir::ModuleOp"> {
  let summary = "Make the training step report where an inf or NaN was born";
  let description = [{
    Adds one `train.check_numerics` to each training step (a function with
    an optimizer update), over the float arguments the forward reads
    (data, parameters, state) and the float results of every op that can
    make an inf or NaN from finite inputs, forward and backward (ops that
    move, select, widen or take maxima of values are looked through). Its
    vector (each entry's largest magnitude: inf and NaN kept) becomes the
    step's last result, and the step records what each entry is in
    `train.numerics`: the op, forward or backward (amp-autodiff marks
    backward ops' locations), the module path and source line of the
    location the importer recorded, and which entries its inputs are.
    The host names the first op, in program order, whose output is not
    finite while its inputs are (docs/Numerics.md). Runs after
    amp-loss-scaling, so the backward is checked as it runs: scaled.
    The update and loss-scaling machinery is not checked.

    `smallest-magnitudes`: the vector also holds each entry's smallest
    nonzero finite magnitude (N more entries), for amp.calibrate's
    underflow headroom.

    ```
    amp-opt model.mlir --amp-pipeline="check-numerics=true"
    ```
  }];
  let options = [
    Option<"smallestMagnitudes", "smallest-magnitudes", "bool",
           /*default=*/"false",
           "Also measure each value's smallest nonzero finite magnitude "
           "(amp.calibrate's underflow headroom; amp-pipeline: with "
           "check-numerics)">,
  ];
  let dependentDialects = ["::amp::train::TrainDialect"];
}

def CastCleanupPass : Pass<"amp-cast-cleanup"> {
  let summary = "Fold, merge and hoist casts with exact rewrites only";
  let description = [{
    Minimizes the casts of a graph without changing any value:

    - an exactly invertible round trip folds (`f16 -> f32 -> f16`,
      `bf16 -> f32 -> bf16`); a rounding one (`f32 -> f16 -> f32`) is kept;
    - a widening cast followed by another cast becomes one cast
      (`f16 -> f32 -> bf16` rounds once either way);
    - a cast of a constant becomes a constant of the target type (rounded to
      nearest even, as the cast would);
    - casts of one value to one type merge into a single cast placed right
      after the value's definition; unused casts are erased.

    ```
    amp-opt model.mlir --amp-autocast --amp-cast-cleanup
    ```
  }];
}

def PrecisionReportPass : Pass<"amp-precision-report", "::mlir::ModuleOp"> {
  let summary = "Explain every op's precision, the casts, and the bytes saved";
  let description = [{
    Reports, per function, each train op's precision (the type it computes
    in), its category and why (the default list, the opt level, the policy
    file, an attribute, promotion or following its input), every cast, the
    number of ops per precision, and the bytes of all float tensors compared
    with the same graph in f32 (activation memory saved). Run it after
    `amp-autocast` with the same `opt-level` and `policy`; it does not change
    the IR.

    `format=text` (default) is for people, `format=json` for tools,
    `format=dot` is a Graphviz graph with ops coloured by precision (f16
    green, bf16 blue, f32 orange, casts grey). `output` names the file
    (written atomically); without it the report goes to standard error, so
    that the IR amp-opt prints on standard output stays parseable; `-` is
    standard output.

    ```
    amp-opt model.mlir --amp-pipeline --amp-precision-report="format=json output=report.json" -o step.mlir
    amp-opt model.mlir --amp-pipeline --amp-precision-report="format=dot output=graph.dot" -o /dev/null
    ```
  }];
  let options = [
    Option<"format", "format", "::amp::train::ReportFormat",
           /*default=*/"::amp::train::ReportFormat::text",
           "Report format: text, json or dot",
           [{::llvm::cl::values(
               clEnumValN(::amp::train::ReportFormat::text, "text", "for people"),
               clEnumValN(::amp::train::ReportFormat::json, "json", "for tools"),
               clEnumValN(::amp::train::ReportFormat::dot, "dot", "Graphviz"))}]>,
    Option<"output", "output", "std::string", /*default=*/"\"\"",
           "File to write the report to (default: standard error, so the "
           "IR on standard output stays parseable; '-': standard output)">,
  ];
}

//===----------------------------------------------------------------------===//
// amp-pipeline's options
//===----------------------------------------------------------------------===//

/// The passes whose options amp-pipeline takes. Every option of each pass
/// listed becomes an option of AmpPipelineOptions under the pass's own name
/// and field, with its description and default, and is forwarded to the
/// pass by generated code (cmake/gen_pipeline_options.py writes
/// amp/Pipelines/AmpPipelineOptions.inc from this file): adding a pass
/// option here is the whole change. Names in `declared` are declared by
/// hand in AmpPipelineOptions (another default or more values) and still
/// forwarded by the generated code; names in `resolved` are declared by
/// hand and computed by buildAmpPipeline before they reach the pass.
class PipelineOptions<list<string> passesArg, list<string> declaredArg,
                      list<string> resolvedArg> {
  list<string> passes = passesArg;
  list<string> declared = declaredArg;
  list<string> resolved = resolvedArg;
}

def AmpPipeline : PipelineOptions<
    ["AutocastPass", "OptimizerPass", "LossScalingPass", "CheckNumericsPass",
     "DataParallelPass"],
    // optimizer: with `none` (autocast only); ranks: 1 (one process), where
    // the pass itself requires a value.
    ["OptimizerPass.optimizer", "DataParallelPass.ranks"],
    // mode: `loss-scale`, with `auto`; init-scale: 0 picks the mode's.
    ["LossScalingPass.mode", "LossScalingPass.init-scale"]>;

#endif // AMP_DIALECT_TRAIN_TRANSFORMS_PASSES_TD
