// Every op the train dialect registers, through both backend lowerings: the
// next op added without a lowering pattern (or with one that is never
// registered, as train.any's once was: "failed to legalize operation
// 'train.any'") fails here. test/Unit/AllOpsCoverageTest.cpp fails when a
// registered train op is missing from this file. Every result is returned,
// so no op is dead before the lowerings reach it.
//
// RUN: amp-opt %s --amp-lower-cpu | FileCheck %s --check-prefix=CPU --implicit-check-not=train.
// RUN: amp-opt %s --amp-lower-cpu="fused-attention=false fused-lm-head=false" | FileCheck %s --check-prefix=DECOMPOSED --implicit-check-not=train.
// RUN: %if cuda %{ amp-opt %s --amp-lower-cuda | FileCheck %s --check-prefix=CUDA --implicit-check-not=train. %}
//
// Nothing of the train dialect survives (--implicit-check-not), and every
// function below comes out as an LLVM function.
// CPU-NOT: train.
// CPU: llvm.func @elementwise(
// CPU: llvm.func @contractions(
// CPU: llvm.func @conv_and_pool(
// CPU: llvm.func @normalization(
// CPU: llvm.func @reductions(
// CPU: llvm.func @embedding_dropout(
// CPU: llvm.func @shape_ops(
// CPU: llvm.func @losses(
// CPU: llvm.func @backward(
// CPU: llvm.func @optimizer_and_loss_scaling(
// CPU: llvm.func @runtime_call(
// CPU: llvm.call @amp_test_gemm(
// CPU: llvm.func @grouped_conv(
// CPU: llvm.func @collectives(
// CPU-COUNT-4: llvm.call @amp_cpu_all_reduce(
// CPU: llvm.func @logic(
// CPU: llvm.func @marked_outputs(
// CPU: llvm.func @attention(
// CPU: llvm.call @amp_cpu_attention_mask(
// CPU: llvm.call @amp_cpu_attention_grad_mask(
// CPU: llvm.call @amp_cpu_attention_mask(
// CPU: llvm.call @amp_cpu_attention_grad_mask(
// CPU: llvm.call @amp_cpu_attention(
// CPU: llvm.call @amp_cpu_attention_grad(
// CPU: llvm.func @lm_head(
// CPU: llvm.call @amp_cpu_linear_cross_entropy(
// CPU: llvm.call @amp_cpu_linear_cross_entropy_grad(
// CPU: llvm.call @amp_cpu_linear_cross_entropy(
// CPU: llvm.call @amp_cpu_linear_cross_entropy_grad(
//
// amp-decompose-attention's form for amp-lower-cpu (GEMMs, no attention
// kernel).
// DECOMPOSED: llvm.func @attention(
// DECOMPOSED-NOT: @amp_cpu_attention
// DECOMPOSED: llvm.call @amp_cpu_gemm(
// DECOMPOSED: llvm.func @lm_head(
// DECOMPOSED-NOT: @amp_cpu_linear_cross_entropy
// DECOMPOSED: llvm.call @amp_cpu_gemm
// CUDA-NOT: train.
// CUDA: llvm.func @elementwise(
// CUDA: gpu.binary @elementwise_kernel
// CUDA: llvm.func @contractions(
// CUDA: llvm.func @conv_and_pool(
// CUDA: llvm.func @normalization(
// CUDA: llvm.func @reductions(
// CUDA: llvm.func @embedding_dropout(
// CUDA: llvm.func @shape_ops(
// CUDA: llvm.func @losses(
// CUDA: llvm.func @backward(
// CUDA: llvm.func @optimizer_and_loss_scaling(
// CUDA: llvm.func @runtime_call(
// CUDA: llvm.call @amp_test_gemm(
// CUDA: llvm.func @grouped_conv(
// CUDA: llvm.func @collectives(
// CUDA-COUNT-4: llvm.call @amp_cuda_all_reduce(
// CUDA: llvm.func @logic(
// CUDA: llvm.func @marked_outputs(
// CUDA: llvm.func @attention(
// CUDA: llvm.func @lm_head(

// train.relu train.tanh train.sigmoid train.exp train.log train.sqrt
// train.gelu train.add train.sub train.mul train.div train.cast
// train.stop_gradient
func.func @elementwise(%x: tensor<4x8xf32>, %a: tensor<2x1x5xf16>, %b: tensor<4x1xf16>, %c: tensor<5xf16>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<2x4x5xf16>, tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = train.relu %x : tensor<4x8xf32>
  %1 = train.tanh %x : tensor<4x8xf32>
  %2 = train.sigmoid %x : tensor<4x8xf32>
  %3 = train.exp %x : tensor<4x8xf32>
  %4 = train.log %x : tensor<4x8xf32>
  %5 = train.gelu %x : tensor<4x8xf32>
  %6 = train.gelu %x approximate tanh : tensor<4x8xf32>
  %7 = train.add %a, %b : tensor<2x1x5xf16>, tensor<4x1xf16> -> tensor<2x4x5xf16>
  %8 = train.sub %7, %c : tensor<2x4x5xf16>, tensor<5xf16> -> tensor<2x4x5xf16>
  %9 = train.mul %c, %8 : tensor<5xf16>, tensor<2x4x5xf16> -> tensor<2x4x5xf16>
  %10 = train.div %9, %7 : tensor<2x4x5xf16>, tensor<2x4x5xf16> -> tensor<2x4x5xf16>
  %11 = train.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %12 = train.cast %x : tensor<4x8xf32> to tensor<4x8xf16>
  %13 = train.sqrt %x : tensor<4x8xf32>
  %14 = train.stop_gradient %13 : tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %10, %11, %12, %13, %14
      : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>,
        tensor<2x4x5xf16>, tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<4x8xf32>
}

// train.matmul train.batch_matmul, in f32 and f16 (the CPU and CUDA runtime
// calls take different paths for each).
func.func @contractions(%x: tensor<4x8xf16>, %w: tensor<8x6xf16>, %wt: tensor<6x8xf16>, %bias: tensor<6xf16>, %w2: tensor<8x6xf16>,
                        %xf: tensor<4x8xf32>, %wf: tensor<8x6xf32>,
                        %q: tensor<2x4x3xf32>, %k: tensor<2x4x3xf32>,
                        %q4: tensor<2x3x4x5xf16>, %k4: tensor<2x1x6x5xf16>)
    -> (tensor<4x6xf16>, tensor<4x6xf16>, tensor<4x6xf16>, tensor<4x6xf16>, tensor<4x6xf32>,
        tensor<2x4x4xf32>, tensor<2x3x3xf32>, tensor<2x3x4x6xf16>) {
  %0 = train.matmul %x, %w : tensor<4x8xf16>, tensor<8x6xf16> -> tensor<4x6xf16>
  %1 = train.matmul %x, %wt transpose_rhs : tensor<4x8xf16>, tensor<6x8xf16> -> tensor<4x6xf16>
  %2 = train.matmul %x, %wt, %bias transpose_rhs : tensor<4x8xf16>, tensor<6x8xf16>, tensor<6xf16> -> tensor<4x6xf16>
  // (%w2, not %w: this matmul is %0 once the f32 accumulator, f16's default,
  // is explicit, and a function returning one value twice crashes upstream's
  // buffer-results-to-out-params with hoist-static-allocs, which both
  // lowerings run.)
  %3 = train.matmul %x, %w2 accumulate f32 : tensor<4x8xf16>, tensor<8x6xf16> -> tensor<4x6xf16>
  %4 = train.matmul %xf, %wf : tensor<4x8xf32>, tensor<8x6xf32> -> tensor<4x6xf32>
  %5 = train.batch_matmul %q, %k transpose_rhs : tensor<2x4x3xf32>, tensor<2x4x3xf32> -> tensor<2x4x4xf32>
  %6 = train.batch_matmul %q, %k transpose_lhs : tensor<2x4x3xf32>, tensor<2x4x3xf32> -> tensor<2x3x3xf32>
  // Rank 4, the key broadcast over the heads (the rank-3 form when lowered).
  %7 = train.batch_matmul %q4, %k4 transpose_rhs : tensor<2x3x4x5xf16>, tensor<2x1x6x5xf16> -> tensor<2x3x4x6xf16>
  return %0, %1, %2, %3, %4, %5, %6, %7
      : tensor<4x6xf16>, tensor<4x6xf16>, tensor<4x6xf16>, tensor<4x6xf16>, tensor<4x6xf32>,
        tensor<2x4x4xf32>, tensor<2x3x3xf32>, tensor<2x3x4x6xf16>
}

// train.conv2d train.max_pool2d train.avg_pool2d
func.func @conv_and_pool(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %xh: tensor<2x3x8x8xf16>, %wh: tensor<4x3x3x3xf16>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x3x3xf32>, tensor<2x4x8x8xf32>, tensor<2x4x6x6xf16>,
        tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x5x5xf32>) {
  %0 = train.conv2d %x, %w padding [1, 1] : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %1 = train.conv2d %x, %w strides [2, 2] : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x3x3xf32>
  %2 = train.conv2d %x, %w padding [2, 2] dilation [2, 2] : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  %3 = train.conv2d %xh, %wh : tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16> -> tensor<2x4x6x6xf16>
  %4 = train.max_pool2d %0 kernel [2, 2] strides [2, 2] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  %5 = train.avg_pool2d %0 kernel [3, 3] strides [2, 2] padding [1, 1] : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xf32>
  %6 = train.avg_pool2d %2 kernel [2, 2] strides [2, 2] padding [1, 1] : tensor<2x4x8x8xf32> -> tensor<2x4x5x5xf32>
  return %0, %1, %2, %3, %4, %5, %6
      : tensor<2x4x8x8xf32>, tensor<2x4x3x3xf32>, tensor<2x4x8x8xf32>, tensor<2x4x6x6xf16>,
        tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>, tensor<2x4x5x5xf32>
}

// train.softmax train.log_softmax train.layer_norm train.batch_norm
func.func @normalization(%x: tensor<4x10xf32>, %sq: tensor<2x5x5xf32>, %y: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                         %img: tensor<2x4x3x3xf16>, %s: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<4x10xf32>, tensor<2x5x5xf32>, tensor<4x10xf32>, tensor<2x3x8xf32>,
        tensor<2x4x3x3xf16>, tensor<4xf32>, tensor<4xf32>) {
  %0 = train.softmax %x axis 1 : tensor<4x10xf32>
  %1 = train.softmax %sq axis 2 causal : tensor<2x5x5xf32>
  %2 = train.log_softmax %x axis 0 : tensor<4x10xf32>
  %3 = train.layer_norm %y, %g, %b epsilon 1.0e-6 : tensor<2x3x8xf32>, tensor<8xf32>
  %4:3 = train.batch_norm %img, %s, %s, %m, %v momentum 0.01 : tensor<2x4x3x3xf16>, tensor<4xf32>
  return %0, %1, %2, %3, %4#0, %4#1, %4#2
      : tensor<4x10xf32>, tensor<2x5x5xf32>, tensor<4x10xf32>, tensor<2x3x8xf32>,
        tensor<2x4x3x3xf16>, tensor<4xf32>, tensor<4xf32>
}

// train.reduce_sum train.reduce_mean
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<3xf32>, tensor<2x1x4xf32>, tensor<f32>) {
  %0 = train.reduce_sum %x axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  %1 = train.reduce_mean %x axes [1] keep_dims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %2 = train.reduce_sum %x axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<3xf32>, tensor<2x1x4xf32>, tensor<f32>
}

// (grouped train.conv2d and its gradients: @grouped_conv)
// train.embedding train.dropout (with and without a step) train.increment
// train.clamp train.pow
func.func @embedding_dropout(%table: tensor<10x4xf32>, %ids: tensor<2x3xi32>, %count: tensor<i32>)
    -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<i32>) {
  %0 = train.embedding %table, %ids padding_idx 0 : tensor<10x4xf32>, tensor<2x3xi32> -> tensor<2x3x4xf32>
  %1 = train.dropout %0 rate 0.1 seed 42 : tensor<2x3x4xf32>
  %2 = train.dropout %0 rate 0.1 seed 43 step %count : tensor<2x3x4xf32>
  %c = train.clamp %2 min 0.0 max 6.0 : tensor<2x3x4xf32>
  %p = train.pow %c exponent 1.5 : tensor<2x3x4xf32>
  %3 = train.increment %count : tensor<i32>
  return %0, %1, %p, %3 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<i32>
}

// train.reshape train.transpose train.broadcast train.constant train.concat
// train.slice train.loss_seed
func.func @shape_ops(%x: tensor<2x4x6xf32>, %b: tensor<6xf32>, %ids: tensor<4xi32>, %y: tensor<4x10xf32>)
    -> (tensor<2x3x4x2xf32>, tensor<3x6xf32>, tensor<2x6xf32>, tensor<2x2xi32>, tensor<2x3xf32>,
        tensor<f32>, tensor<f16>) {
  %0 = train.reshape %x : tensor<2x4x6xf32> -> tensor<2x4x3x2xf32>
  %1 = train.transpose %0 permutation [0, 2, 1, 3] : tensor<2x4x3x2xf32> -> tensor<2x3x4x2xf32>
  %2 = train.broadcast %b : tensor<6xf32> -> tensor<3x6xf32>
  %c = train.constant dense<0.25> : tensor<2x2xf32>
  %d = train.slice %y offsets [0, 0] : tensor<4x10xf32> -> tensor<2x4xf32>
  %3 = train.concat %c, %d axis 1 : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x6xf32>
  %4 = train.reshape %ids : tensor<4xi32> -> tensor<2x2xi32>
  %5 = train.slice %y offsets [1, 2] : tensor<4x10xf32> -> tensor<2x3xf32>
  %6 = train.loss_seed : tensor<f32>
  %7 = train.loss_seed : tensor<f16>
  return %1, %2, %3, %4, %5, %6, %7
      : tensor<2x3x4x2xf32>, tensor<3x6xf32>, tensor<2x6xf32>, tensor<2x2xi32>, tensor<2x3xf32>,
        tensor<f32>, tensor<f16>
}

// train.cross_entropy train.mse_loss train.l1_loss train.smooth_l1_loss
// train.bce_with_logits_loss train.maximum train.minimum
func.func @losses(%logits: tensor<4x10xf32>, %labels: tensor<4xi32>, %p: tensor<6x1xbf16>, %t: tensor<6x1xbf16>)
    -> (tensor<f32>, tensor<bf16>, tensor<f32>, tensor<bf16>, tensor<f32>, tensor<4x10xf32>) {
  %ce = train.cross_entropy %logits, %labels : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %ignoring = train.cross_entropy %logits, %labels ignore_index -100 label_smoothing 0.1 : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  %0 = train.add %ce, %ignoring : tensor<f32>, tensor<f32> -> tensor<f32>
  %1 = train.mse_loss %p, %t : tensor<6x1xbf16> -> tensor<bf16>
  %2 = train.l1_loss %logits, %logits : tensor<4x10xf32> -> tensor<f32>
  %3 = train.smooth_l1_loss %p, %t beta 5.000000e-01 : tensor<6x1xbf16> -> tensor<bf16>
  %hi = train.maximum %logits, %logits : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  %lo = train.minimum %hi, %logits : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  %4 = train.bce_with_logits_loss %lo, %hi : tensor<4x10xf32> -> tensor<f32>
  return %0, %1, %2, %3, %4, %lo : tensor<f32>, tensor<bf16>, tensor<f32>, tensor<bf16>, tensor<f32>, tensor<4x10xf32>
}

// train.relu_grad train.gelu_grad train.softmax_grad train.log_softmax_grad
// train.cross_entropy_grad train.conv2d_grad_input train.conv2d_grad_filter
// train.pool2d_grad train.layer_norm_grad train.batch_norm_grad
// train.embedding_grad
func.func @backward(%dy: tensor<2x4x6x6xf16>, %x: tensor<2x3x8x8xf16>, %w: tensor<4x3x3x3xf16>,
                    %dyf: tensor<2x4x6x6xf32>, %xf: tensor<2x3x8x8xf32>, %wf: tensor<4x3x3x3xf32>,
                    %g: tensor<4x10xf32>, %y: tensor<4x10xf32>, %l: tensor<4xi32>, %s: tensor<f32>,
                    %p: tensor<2x3x4x4xf32>, %px: tensor<2x3x8x8xf32>, %bn: tensor<3xf32>,
                    %e: tensor<2x5x8xf32>, %ids: tensor<2x5xi32>, %l10: tensor<10xf32>)
    -> (tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>,
        tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>,
        tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>,
        tensor<4x10xf32>, tensor<10xf32>, tensor<10xf32>,
        tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>,
        tensor<100x8xf32>) {
  %0 = train.relu_grad %g, %y : tensor<4x10xf32>
  %1 = train.gelu_grad %g, %y : tensor<4x10xf32>
  %2 = train.gelu_grad %g, %y approximate tanh : tensor<4x10xf32>
  %3 = train.softmax_grad %g, %y axis 1 : tensor<4x10xf32>
  %4 = train.log_softmax_grad %g, %y axis 0 : tensor<4x10xf32>
  %ce = train.cross_entropy_grad %s, %y, %l : tensor<f32>, tensor<4x10xf32>, tensor<4xi32>
  %ignoring = train.cross_entropy_grad %s, %y, %l ignore_index -100 label_smoothing 0.1 : tensor<f32>, tensor<4x10xf32>, tensor<4xi32>
  %5 = train.add %ce, %ignoring : tensor<4x10xf32>, tensor<4x10xf32> -> tensor<4x10xf32>
  %6 = train.conv2d_grad_input %dy, %w accumulate f32 : tensor<2x4x6x6xf16>, tensor<4x3x3x3xf16> -> tensor<2x3x8x8xf16>
  %7 = train.conv2d_grad_filter %dy, %x : tensor<2x4x6x6xf16>, tensor<2x3x8x8xf16> -> tensor<4x3x3x3xf16>
  %8 = train.conv2d_grad_input %dyf, %wf : tensor<2x4x6x6xf32>, tensor<4x3x3x3xf32> -> tensor<2x3x8x8xf32>
  %9 = train.conv2d_grad_filter %dyf, %xf : tensor<2x4x6x6xf32>, tensor<2x3x8x8xf32> -> tensor<4x3x3x3xf32>
  %10 = train.pool2d_grad %p, %px max kernel [2, 2] strides [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  %11 = train.pool2d_grad %p, %px kernel [2, 2] strides [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  %12:3 = train.layer_norm_grad %g, %y, %l10 : tensor<4x10xf32>, tensor<10xf32>
  %13:3 = train.batch_norm_grad %px, %px, %bn : tensor<2x3x8x8xf32>, tensor<3xf32>
  %14 = train.embedding_grad %e, %ids : tensor<2x5x8xf32>, tensor<2x5xi32> -> tensor<100x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12#0, %12#1, %12#2, %13#0, %13#1, %13#2, %14
      : tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>, tensor<4x10xf32>,
        tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>, tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>,
        tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>,
        tensor<4x10xf32>, tensor<10xf32>, tensor<10xf32>,
        tensor<2x3x8x8xf32>, tensor<3xf32>, tensor<3xf32>,
        tensor<100x8xf32>
}

// train.sgd_update train.adam_update train.clip_grad_norm
// train.accumulate_grads train.unscale_grads train.update_scale train.any
// train.first_nonfinite train.check_numerics
func.func @optimizer_and_loss_scaling(%lr: tensor<f32>, %step: tensor<i32>, %p: tensor<4xf32>, %q: tensor<2x3xf32>,
                                      %h: tensor<3xf16>, %flag: tensor<i1>)
    -> (tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>,
        tensor<4xf32>, tensor<2x3xf32>, tensor<f32>,
        tensor<4xf32>, tensor<i32>, tensor<i1>, tensor<4xf32>,
        tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>,
        tensor<4xf32>, tensor<3xf16>, tensor<i1>,
        tensor<i1>,
        tensor<f32>, tensor<i32>, tensor<i1>,
        tensor<f32>, tensor<i32>, tensor<i1>, tensor<i32>, tensor<i32>, tensor<3xf32>, tensor<4xf32>) {
  %0:4 = train.sgd_update %lr params(%p, %q) grads(%p, %q) momentum_buffers(%p, %q) momentum 0.9 nesterov : tensor<f32>, (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xf32>, tensor<2x3xf32>)
  %1:4 = train.adam_update %lr, %step params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) decoupled weight_decay 0.01 : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  %2:3 = train.clip_grad_norm(%p, %q) max_norm 1.0 : (tensor<4xf32>, tensor<2x3xf32>)
  %3:4 = train.accumulate_grads %step accumulators(%p) grads(%p) steps 4 : tensor<i32>, (tensor<4xf32>), (tensor<4xf32>)
  %4 = train.sgd_update %lr params(%p) grads(%p) skip(%3#2) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  %5:4 = train.adam_update %lr, %step params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) skip(%flag) : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  %6:3 = train.unscale_grads %lr grads(%p, %h) : tensor<f32>, (tensor<4xf32>, tensor<3xf16>)
  %7 = train.any %6#2, %flag : tensor<i1>
  %8:3 = train.update_scale %lr, %step, %6#2 backoff_factor 0.25 growth_interval 2 max_scale 16777216.0 : tensor<f32>, tensor<i32>
  %9:3 = train.update_scale %lr, %step, %6#2 skip(%7) hysteresis 2 : tensor<f32>, tensor<i32>
  %10 = train.first_nonfinite %lr, %p, %h : tensor<f32>, tensor<4xf32>, tensor<3xf16>
  %11 = train.first_nonfinite %p, %h order [1, 0] : tensor<4xf32>, tensor<3xf16>
  %12 = train.check_numerics %lr, %q, %h : tensor<f32>, tensor<2x3xf32>, tensor<3xf16>
  %13 = train.check_numerics %q, %h smallest : tensor<2x3xf32>, tensor<3xf16>
  return %0#0, %0#1, %0#2, %0#3, %1#0, %1#1, %1#2, %1#3, %2#0, %2#1, %2#2, %3#0, %3#1, %3#2, %3#3, %4,
         %5#0, %5#1, %5#2, %5#3, %6#0, %6#1, %6#2, %7, %8#0, %8#1, %8#2, %9#0, %9#1, %9#2, %10, %11, %12, %13
      : tensor<4xf32>, tensor<2x3xf32>, tensor<4xf32>, tensor<2x3xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>,
        tensor<4xf32>, tensor<2x3xf32>, tensor<f32>,
        tensor<4xf32>, tensor<i32>, tensor<i1>, tensor<4xf32>,
        tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>,
        tensor<4xf32>, tensor<3xf16>, tensor<i1>,
        tensor<i1>,
        tensor<f32>, tensor<i32>, tensor<i1>,
        tensor<f32>, tensor<i32>, tensor<i1>, tensor<i32>, tensor<i32>, tensor<3xf32>, tensor<4xf32>
}

// train.runtime_call: what the runtime conversions produce, given to the
// lowerings directly (bufferization turns it into a call of the declared
// function).
func.func private @amp_test_gemm(index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)

func.func @runtime_call(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>) -> tensor<4x3xf32> {
  %0 = train.runtime_call @amp_test_gemm(%a, %b) [1, 1, 1, 4, 3, 8, 0, 0] : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

func.func @grouped_conv(%x: tensor<2x4x8x8xf32>, %w: tensor<4x1x3x3xf32>, %b: tensor<4xf32>, %dy: tensor<2x4x8x8xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) {
  %0 = train.conv2d %x, %w, %b padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>, tensor<4xf32> -> tensor<2x4x8x8xf32>
  %1 = train.conv2d_grad_input %dy, %w padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x8x8xf32>
  %2 = train.conv2d_grad_filter %dy, %x padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<4x1x3x3xf32>
  return %0, %1, %2 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>
}

// train.all_reduce, and a batch norm over ranks (SyncBatchNorm): calls of
// the backend's collective runtime (amp_cpu_all_reduce, amp_cuda_all_reduce).
func.func @collectives(%g: tensor<2x3xf32>, %f: tensor<i1>, %x: tensor<4x8x2x2xf32>, %s: tensor<8xf32>)
    -> (tensor<2x3xf32>, tensor<i1>, tensor<4x8x2x2xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = train.all_reduce mean(%g) ranks 2 wire bf16 : (tensor<2x3xf32>)
  %1 = train.all_reduce max(%f) ranks 2 : (tensor<i1>)
  %2:3 = train.batch_norm %x, %s, %s, %s, %s ranks 2 : tensor<4x8x2x2xf32>, tensor<8xf32>
  return %0, %1, %2#0, %2#1, %2#2 : tensor<2x3xf32>, tensor<i1>, tensor<4x8x2x2xf32>, tensor<8xf32>, tensor<8xf32>
}

// train.compare train.select train.convert (and i1 through shape ops)
func.func @logic(%ids: tensor<4x8xi32>, %pad: tensor<i32>, %x: tensor<4x8xf16>, %y: tensor<8xf32>)
    -> (tensor<4x8xf16>, tensor<4x8xi32>, tensor<4x8xbf16>, tensor<8x4xi1>, tensor<8xi1>) {
  %keep = train.compare %ids, %pad ne : tensor<4x8xi32>, tensor<i32> -> tensor<4x8xi1>
  %low = train.constant dense<-6.0e4> : tensor<f16>
  %0 = train.select %keep, %x, %low : tensor<4x8xi1>, tensor<4x8xf16>, tensor<f16> -> tensor<4x8xf16>
  %1 = train.convert %keep : tensor<4x8xi1> to tensor<4x8xi32>
  %2 = train.convert %ids : tensor<4x8xi32> to tensor<4x8xbf16>
  %3 = train.transpose %keep permutation [1, 0] : tensor<4x8xi1> -> tensor<8x4xi1>
  %z = train.constant dense<0.0> : tensor<f32>
  %4 = train.compare %y, %z gt : tensor<8xf32>, tensor<f32> -> tensor<8xi1>
  return %0, %1, %2, %3, %4 : tensor<4x8xf16>, tensor<4x8xi32>, tensor<4x8xbf16>, tensor<8x4xi1>, tensor<8xi1>
}

// A forward function with the model's outputs marked (the importer's):
// lowered like any other function.
func.func @marked_outputs(%x: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32> {train.output}) {
  %l = train.reduce_sum %x axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  %r = train.relu %x : tensor<4x8xf32>
  return %l, %r : tensor<f32>, tensor<4x8xf32>
}

// train.attention train.attention_grad: a boolean keep-mask broadcast over
// the heads (bf16), an additive f32 mask with a causal cut on non-square
// scores, and a plain causal one; every lse reaches its gradient only (the
// decomposed form has none).
func.func @attention(%q: tensor<2x3x5x4xbf16>, %k: tensor<2x3x7x4xbf16>, %v: tensor<2x3x7x6xbf16>,
                     %keep: tensor<2x1x1x7xi1>, %do: tensor<2x3x5x6xbf16>,
                     %qf: tensor<4x9x8xf32>, %kf: tensor<4x6x8xf32>, %bias: tensor<9x6xf32>,
                     %dof: tensor<4x9x8xf32>)
    -> (tensor<2x3x5x6xbf16>, tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x6xbf16>,
        tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>,
        tensor<4x9x8xf32>, tensor<4x9x8xf32>) {
  %o, %lse = train.attention %q, %k, %v mask %keep scale 5.000000e-01 accumulate f32
      : tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x6xbf16>, tensor<2x1x1x7xi1>
  %dq, %dk, %dv = train.attention_grad %do, %q, %k, %v, %o, %lse mask %keep scale 5.000000e-01
      : tensor<2x3x5x6xbf16>, tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x6xbf16>, tensor<2x3x5xf32>, tensor<2x1x1x7xi1>
  %o2, %lse2 = train.attention %qf, %kf, %kf mask %bias causal scale 0.35
      : tensor<4x9x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<9x6xf32>
  %dq2, %dk2, %dv2 = train.attention_grad %dof, %qf, %kf, %kf, %o2, %lse2 mask %bias causal scale 0.35
      : tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>, tensor<4x9xf32>, tensor<9x6xf32>
  %o3, %lse3 = train.attention %qf, %qf, %qf causal scale 0.35
      : tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x9x8xf32>
  %dq3, %dk3, %dv3 = train.attention_grad %dof, %qf, %qf, %qf, %o3, %lse3 causal scale 0.35
      : tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x9xf32>
  %sum = train.add %dq3, %dk3 : tensor<4x9x8xf32>, tensor<4x9x8xf32> -> tensor<4x9x8xf32>
  return %o, %dq, %dk, %dv, %o2, %dq2, %dk2, %dv2, %sum, %dv3
      : tensor<2x3x5x6xbf16>, tensor<2x3x5x4xbf16>, tensor<2x3x7x4xbf16>, tensor<2x3x7x6xbf16>,
        tensor<4x9x8xf32>, tensor<4x9x8xf32>, tensor<4x6x8xf32>, tensor<4x6x8xf32>,
        tensor<4x9x8xf32>, tensor<4x9x8xf32>
}

// train.linear_cross_entropy train.linear_cross_entropy_grad: the runtime's
// blocked kernels on the CPU; the matmul / cast / cross_entropy they stand
// for with fused-lm-head=false and on CUDA.
func.func @lm_head(%h: tensor<6x4xbf16>, %wte: tensor<11x4xbf16>, %labels: tensor<6xi32>,
                   %hf: tensor<6x4xf32>, %w: tensor<4x11xf32>, %seed: tensor<f32>)
    -> (tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<f32>, tensor<6x4xf32>, tensor<4x11xf32>) {
  %l = train.linear_cross_entropy %h, %wte, %labels transpose_weight ignore_index -100
      : tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32> -> tensor<f32>
  %dh, %dw = train.linear_cross_entropy_grad %seed, %h, %wte, %labels transpose_weight ignore_index -100
      : tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32>
  %l2 = train.linear_cross_entropy %hf, %w, %labels label_smoothing 0.1
      : tensor<6x4xf32>, tensor<4x11xf32>, tensor<6xi32> -> tensor<f32>
  %dh2, %dw2 = train.linear_cross_entropy_grad %seed, %hf, %w, %labels label_smoothing 0.1
      : tensor<f32>, tensor<6x4xf32>, tensor<4x11xf32>, tensor<6xi32>
  return %l, %dh, %dw, %l2, %dh2, %dw2
      : tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<f32>, tensor<6x4xf32>, tensor<4x11xf32>
}
