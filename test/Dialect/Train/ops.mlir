// RUN: amp-opt %s | amp-opt | FileCheck %s
// RUN: amp-opt %s --mlir-print-op-generic | amp-opt | FileCheck %s
// RUN: amp-opt %s --emit-bytecode | amp-opt | FileCheck %s

// Round trip of every train op: custom form, generic form and bytecode all
// parse back to the same custom form.

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @unary(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[R:.*]] = train.relu %[[X]] : tensor<4x8xf32>
  %0 = train.relu %x : tensor<4x8xf32>
  // CHECK: %[[T:.*]] = train.tanh %[[R]] : tensor<4x8xf32>
  %1 = train.tanh %0 : tensor<4x8xf32>
  // CHECK: %[[S:.*]] = train.sigmoid %[[T]] : tensor<4x8xf32>
  %2 = train.sigmoid %1 : tensor<4x8xf32>
  // CHECK: %[[E:.*]] = train.exp %[[S]] : tensor<4x8xf32>
  %3 = train.exp %2 : tensor<4x8xf32>
  // CHECK: %[[L:.*]] = train.log %[[E]] : tensor<4x8xf32>
  %4 = train.log %3 : tensor<4x8xf32>
  // CHECK: %[[G:.*]] = train.gelu %[[L]] : tensor<4x8xf32>
  %5 = train.gelu %4 : tensor<4x8xf32>
  // CHECK: %[[GT:.*]] = train.gelu %[[G]] approximate tanh : tensor<4x8xf32>
  %6 = train.gelu %5 approximate tanh : tensor<4x8xf32>
  // CHECK: %[[Q:.*]] = train.sqrt %[[GT]] : tensor<4x8xf32>
  %7 = train.sqrt %6 : tensor<4x8xf32>
  // CHECK: %[[D:.*]] = train.stop_gradient %[[Q]] : tensor<4x8xf32>
  %8 = train.stop_gradient %7 : tensor<4x8xf32>
  // CHECK: return %[[D]]
  return %8 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @batch_matmul_rank4
func.func @batch_matmul_rank4(%q: tensor<2x8x16x64xf16>, %k: tensor<2x1x16x64xf16>) -> tensor<2x8x16x16xf16> {
  // CHECK: train.batch_matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<2x8x16x64xf16>, tensor<2x1x16x64xf16> -> tensor<2x8x16x16xf16>
  %0 = train.batch_matmul %q, %k transpose_rhs : tensor<2x8x16x64xf16>, tensor<2x1x16x64xf16> -> tensor<2x8x16x16xf16>
  return %0 : tensor<2x8x16x16xf16>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x8x16xbf16>, %keep: tensor<2x1x1x8xi1>, %bias: tensor<8x8xbf16>, %do: tensor<2x4x8x16xbf16>)
    -> (tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>) {
  // CHECK: %[[O:.*]], %[[L:.*]] = train.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} causal scale 2.500000e-01 accumulate f32 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x1x1x8xi1>
  %o, %l = train.attention %q, %q, %q mask %keep causal scale 0.25 accumulate f32 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x1x1x8xi1>
  // CHECK: train.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} scale 1.000000e+00 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<8x8xbf16>
  %o2, %l2 = train.attention %q, %q, %q mask %bias scale 1.0 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<8x8xbf16>
  // CHECK: train.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[O]], %[[L]] mask %{{.*}} causal scale 2.500000e-01 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x1x1x8xi1>
  %dq, %dk, %dv = train.attention_grad %do, %q, %q, %q, %o, %l mask %keep causal scale 0.25 : tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x1x1x8xi1>
  return %o2, %l, %dq, %dk : tensor<2x4x8x16xbf16>, tensor<2x4x8xf32>, tensor<2x4x8x16xbf16>, tensor<2x4x8x16xbf16>
}

// CHECK-LABEL: func.func @binary_broadcast
func.func @binary_broadcast(%a: tensor<8x1x5xf16>, %b: tensor<4x1xf16>, %c: tensor<5xf16>) -> tensor<8x4x5xf16> {
  // CHECK: train.add %{{.*}}, %{{.*}} : tensor<8x1x5xf16>, tensor<4x1xf16> -> tensor<8x4x5xf16>
  %0 = train.add %a, %b : tensor<8x1x5xf16>, tensor<4x1xf16> -> tensor<8x4x5xf16>
  // CHECK: train.sub %{{.*}}, %{{.*}} : tensor<8x4x5xf16>, tensor<5xf16> -> tensor<8x4x5xf16>
  %1 = train.sub %0, %c : tensor<8x4x5xf16>, tensor<5xf16> -> tensor<8x4x5xf16>
  // CHECK: train.mul %{{.*}}, %{{.*}} : tensor<5xf16>, tensor<8x4x5xf16> -> tensor<8x4x5xf16>
  %2 = train.mul %c, %1 : tensor<5xf16>, tensor<8x4x5xf16> -> tensor<8x4x5xf16>
  // CHECK: train.div %{{.*}}, %{{.*}} : tensor<8x4x5xf16>, tensor<8x4x5xf16> -> tensor<8x4x5xf16>
  %3 = train.div %2, %2 : tensor<8x4x5xf16>, tensor<8x4x5xf16> -> tensor<8x4x5xf16>
  return %3 : tensor<8x4x5xf16>
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%x: tensor<128x784xbf16>, %w: tensor<784x256xbf16>, %wt: tensor<256x784xbf16>, %bias: tensor<256xbf16>,
                        %q: tensor<32x128x64xf32>, %k: tensor<32x128x64xf32>) -> (tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<32x128x128xf32>, tensor<32x64x64xf32>) {
  // CHECK: train.matmul %{{.*}}, %{{.*}} : tensor<128x784xbf16>, tensor<784x256xbf16> -> tensor<128x256xbf16>
  %0 = train.matmul %x, %w : tensor<128x784xbf16>, tensor<784x256xbf16> -> tensor<128x256xbf16>
  // CHECK: train.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<128x784xbf16>, tensor<256x784xbf16> -> tensor<128x256xbf16>
  %1 = train.matmul %x, %wt transpose_rhs : tensor<128x784xbf16>, tensor<256x784xbf16> -> tensor<128x256xbf16>
  // CHECK: train.matmul %{{.*}}, %{{.*}}, %{{.*}} transpose_rhs : tensor<128x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16> -> tensor<128x256xbf16>
  %b1 = train.matmul %x, %wt, %bias transpose_rhs : tensor<128x784xbf16>, tensor<256x784xbf16>, tensor<256xbf16> -> tensor<128x256xbf16>
  // CHECK: train.matmul %{{.*}}, %{{.*}} accumulate f32 : tensor<128x784xbf16>, tensor<784x256xbf16> -> tensor<128x256xbf16>
  %acc = train.matmul %x, %w accumulate f32 : tensor<128x784xbf16>, tensor<784x256xbf16> -> tensor<128x256xbf16>
  // CHECK: train.batch_matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<32x128x64xf32>, tensor<32x128x64xf32> -> tensor<32x128x128xf32>
  %2 = train.batch_matmul %q, %k transpose_rhs : tensor<32x128x64xf32>, tensor<32x128x64xf32> -> tensor<32x128x128xf32>
  // CHECK: train.batch_matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<32x128x64xf32>, tensor<32x128x64xf32> -> tensor<32x64x64xf32>
  %3 = train.batch_matmul %q, %k transpose_lhs : tensor<32x128x64xf32>, tensor<32x128x64xf32> -> tensor<32x64x64xf32>
  return %0, %1, %2, %3 : tensor<128x256xbf16>, tensor<128x256xbf16>, tensor<32x128x128xf32>, tensor<32x64x64xf32>
}

// CHECK-LABEL: func.func @conv_and_pool
func.func @conv_and_pool(%x: tensor<2x3x32x32xf32>, %w: tensor<16x3x3x3xf32>) -> (tensor<2x16x32x32xf32>, tensor<2x16x15x15xf32>, tensor<2x16x16x16xf32>, tensor<2x16x17x17xf32>) {
  // CHECK: train.conv2d %{{.*}}, %{{.*}} padding [1, 1] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x32x32xf32>
  %0 = train.conv2d %x, %w padding [1, 1] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x32x32xf32>
  // Default-valued attributes are elided when printed.
  // CHECK: train.conv2d %{{.*}}, %{{.*}} strides [2, 2] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x15x15xf32>
  %1 = train.conv2d %x, %w strides [2, 2] padding [0, 0] dilation [1, 1] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x15x15xf32>
  // CHECK: train.max_pool2d %{{.*}} kernel [2, 2] strides [2, 2] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
  %2 = train.max_pool2d %0 kernel [2, 2] strides [2, 2] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
  // CHECK: train.avg_pool2d %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
  %3 = train.avg_pool2d %0 kernel [3, 3] strides [2, 2] padding [1, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
  // CHECK: train.conv2d %{{.*}}, %{{.*}} padding [2, 2] dilation [2, 2] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x32x32xf32>
  %4 = train.conv2d %x, %w padding [2, 2] dilation [2, 2] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32> -> tensor<2x16x32x32xf32>
  // CHECK: train.conv2d %{{.*}}, %{{.*}}, %{{.*}} padding [1, 1] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<2x16x32x32xf32>
  %b = train.constant dense<0.5> : tensor<16xf32>
  %cb = train.conv2d %x, %w, %b padding [1, 1] : tensor<2x3x32x32xf32>, tensor<16x3x3x3xf32>, tensor<16xf32> -> tensor<2x16x32x32xf32>
  %5 = train.avg_pool2d %4 kernel [2, 2] strides [2, 2] padding [1, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x17x17xf32>
  // A dilated window (MaxPool2d's dilation): 3 taps 2 apart span 5 rows.
  // CHECK: train.max_pool2d %{{.*}} kernel [3, 3] strides [2, 2] padding [1, 1] dilation [2, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x15x16xf32>
  %6 = train.max_pool2d %0 kernel [3, 3] strides [2, 2] padding [1, 1] dilation [2, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x15x16xf32>
  // CHECK: train.max_pool2d %{{.*}} kernel [2, 2] strides [2, 2] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
  %7 = train.max_pool2d %0 kernel [2, 2] strides [2, 2] dilation [1, 1] : tensor<2x16x32x32xf32> -> tensor<2x16x16x16xf32>
  return %0, %1, %2, %5 : tensor<2x16x32x32xf32>, tensor<2x16x15x15xf32>, tensor<2x16x16x16xf32>, tensor<2x16x17x17xf32>
}

// CHECK-LABEL: func.func @normalization
func.func @normalization(%x: tensor<4x10xf32>, %sq: tensor<4x10x10xf32>, %y: tensor<8x16x256xf32>, %g: tensor<256xf32>, %b: tensor<256xf32>,
                         %img: tensor<8x32x4x4xf16>, %s: tensor<32xf32>, %m: tensor<32xf32>, %v: tensor<32xf32>)
    -> (tensor<4x10xf32>, tensor<4x10xf32>, tensor<8x16x256xf32>, tensor<8x32x4x4xf16>, tensor<32xf32>, tensor<32xf32>) {
  // CHECK: train.softmax %{{.*}} axis 1 : tensor<4x10xf32>
  %0 = train.softmax %x axis 1 : tensor<4x10xf32>
  // CHECK: train.softmax %{{.*}} axis 2 causal : tensor<4x10x10xf32>
  %c = train.softmax %sq axis 2 causal : tensor<4x10x10xf32>
  // CHECK: train.log_softmax %{{.*}} axis 0 : tensor<4x10xf32>
  %1 = train.log_softmax %x axis 0 : tensor<4x10xf32>
  // CHECK: train.layer_norm %{{.*}}, %{{.*}}, %{{.*}} epsilon 9.9999999999999995E-7 : tensor<8x16x256xf32>, tensor<256xf32>
  %2 = train.layer_norm %y, %g, %b epsilon 1.0e-6 : tensor<8x16x256xf32>, tensor<256xf32>
  // Mixed precision batch norm: f16 activations, f32 parameters and statistics.
  // CHECK: train.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} momentum 1.000000e-02 : tensor<8x32x4x4xf16>, tensor<32xf32>
  %3:3 = train.batch_norm %img, %s, %s, %m, %v momentum 0.01 : tensor<8x32x4x4xf16>, tensor<32xf32>
  // CHECK: train.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} track_running_stats false : tensor<8x32x4x4xf16>, tensor<32xf32>
  %u:3 = train.batch_norm %img, %s, %s, %m, %v track_running_stats false : tensor<8x32x4x4xf16>, tensor<32xf32>
  // CHECK: train.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x32x4x4xf16>, tensor<32xf32>
  %t:3 = train.batch_norm %img, %s, %s, %m, %v track_running_stats true : tensor<8x32x4x4xf16>, tensor<32xf32>
  // CHECK: train.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} ranks 4 : tensor<8x32x4x4xf16>, tensor<32xf32>
  %sync:3 = train.batch_norm %img, %s, %s, %m, %v ranks 4 : tensor<8x32x4x4xf16>, tensor<32xf32>
  return %0, %1, %2, %3#0, %3#1, %3#2 : tensor<4x10xf32>, tensor<4x10xf32>, tensor<8x16x256xf32>, tensor<8x32x4x4xf16>, tensor<32xf32>, tensor<32xf32>
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4xf32>) -> (tensor<3xf32>, tensor<2x1x4xf32>, tensor<f32>) {
  // CHECK: train.reduce_sum %{{.*}} axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  %0 = train.reduce_sum %x axes [0, 2] : tensor<2x3x4xf32> -> tensor<3xf32>
  // CHECK: train.reduce_mean %{{.*}} axes [1] keep_dims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  %1 = train.reduce_mean %x axes [1] keep_dims : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
  // CHECK: train.reduce_sum %{{.*}} axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  %2 = train.reduce_sum %x axes [0, 1, 2] : tensor<2x3x4xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<3xf32>, tensor<2x1x4xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @embedding_dropout
func.func @embedding_dropout(%table: tensor<1000x64xf32>, %ids: tensor<8x16xi32>) -> tensor<8x16x64xf32> {
  // CHECK: train.embedding %{{.*}}, %{{.*}} : tensor<1000x64xf32>, tensor<8x16xi32> -> tensor<8x16x64xf32>
  %0 = train.embedding %table, %ids : tensor<1000x64xf32>, tensor<8x16xi32> -> tensor<8x16x64xf32>
  // CHECK: train.dropout %{{.*}} rate 1.000000e-01 seed 42 : tensor<8x16x64xf32>
  %1 = train.dropout %0 rate 0.1 seed 42 : tensor<8x16x64xf32>
  return %1 : tensor<8x16x64xf32>
}

// CHECK-LABEL: func.func @pow
func.func @pow(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // CHECK: train.pow %{{.*}} exponent 1.500000e+00 : tensor<2x4xf32>
  %0 = train.pow %x exponent 1.5 : tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// CHECK-LABEL: func.func @clamp_and_groups
func.func @clamp_and_groups(%x: tensor<2x4x8x8xf32>, %w: tensor<4x1x3x3xf32>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>) {
  // CHECK: train.clamp %{{.*}} min 0.000000e+00 max 6.000000e+00 : tensor<2x4x8x8xf32>
  %0 = train.clamp %x min 0.0 max 6.0 : tensor<2x4x8x8xf32>
  // CHECK: train.conv2d %{{.*}}, %{{.*}} padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x8x8xf32>
  %1 = train.conv2d %0, %w padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x8x8xf32>
  // CHECK: train.conv2d_grad_input %{{.*}}, %{{.*}} padding [1, 1] groups 4 :
  %2 = train.conv2d_grad_input %dy, %w padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32> -> tensor<2x4x8x8xf32>
  // CHECK: train.conv2d_grad_filter %{{.*}}, %{{.*}} padding [1, 1] groups 4 :
  %3 = train.conv2d_grad_filter %dy, %x padding [1, 1] groups 4 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<4x1x3x3xf32>
  return %1, %2, %3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x1x3x3xf32>
}

// CHECK-LABEL: func.func @dropout_step
func.func @dropout_step(%x: tensor<8x64xf32>, %count: tensor<i32>) -> (tensor<8x64xf32>, tensor<i32>) {
  // CHECK: train.dropout %{{.*}} rate 1.000000e-01 seed 3 step %{{.*}} : tensor<8x64xf32>
  %0 = train.dropout %x rate 0.1 seed 3 step %count : tensor<8x64xf32>
  // CHECK: train.increment %{{.*}} : tensor<i32>
  %1 = train.increment %count : tensor<i32>
  return %0, %1 : tensor<8x64xf32>, tensor<i32>
}

// CHECK-LABEL: func.func @shape_ops
func.func @shape_ops(%x: tensor<8x128x256xf32>, %b: tensor<256xf32>, %ids: tensor<4xi32>) -> (tensor<8x4x128x64xf32>, tensor<1024x256xf32>, tensor<8x48xf32>, tensor<2x2xi32>) {
  // CHECK: train.reshape %{{.*}} : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  %0 = train.reshape %x : tensor<8x128x256xf32> -> tensor<8x128x4x64xf32>
  // CHECK: train.transpose %{{.*}} permutation [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
  %1 = train.transpose %0 permutation [0, 2, 1, 3] : tensor<8x128x4x64xf32> -> tensor<8x4x128x64xf32>
  // CHECK: train.broadcast %{{.*}} : tensor<256xf32> -> tensor<1024x256xf32>
  %2 = train.broadcast %b : tensor<256xf32> -> tensor<1024x256xf32>
  // CHECK: %[[C:.*]] = train.constant dense<2.500000e-01> : tensor<8x16xf32>
  %c = train.constant dense<0.25> : tensor<8x16xf32>
  %d = train.constant dense<1.0> : tensor<8x32xf32>
  // CHECK: train.concat %[[C]], %{{.*}} axis 1 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<8x48xf32>
  %3 = train.concat %c, %d axis 1 : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<8x48xf32>
  // Integer tensors reshape too (token ids).
  // CHECK: train.reshape %{{.*}} : tensor<4xi32> -> tensor<2x2xi32>
  %4 = train.reshape %ids : tensor<4xi32> -> tensor<2x2xi32>
  return %1, %2, %3, %4 : tensor<8x4x128x64xf32>, tensor<1024x256xf32>, tensor<8x48xf32>, tensor<2x2xi32>
}

// The backward seed, in each float type a loss may have.
// CHECK-LABEL: func.func @loss_seed
func.func @loss_seed() -> (tensor<f32>, tensor<f16>) {
  // CHECK: train.loss_seed : tensor<f32>
  %0 = train.loss_seed : tensor<f32>
  // CHECK: train.loss_seed : tensor<f16>
  %1 = train.loss_seed : tensor<f16>
  return %0, %1 : tensor<f32>, tensor<f16>
}

// CHECK-LABEL: func.func @losses
func.func @losses(%logits: tensor<128x10xf32>, %labels: tensor<128xi32>, %p: tensor<64x1xbf16>, %t: tensor<64x1xbf16>) -> (tensor<f32>, tensor<bf16>) {
  // CHECK: train.cross_entropy %{{.*}}, %{{.*}} : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
  %0 = train.cross_entropy %logits, %labels : tensor<128x10xf32>, tensor<128xi32> -> tensor<f32>
  // CHECK: train.mse_loss %{{.*}}, %{{.*}} : tensor<64x1xbf16> -> tensor<bf16>
  %1 = train.mse_loss %p, %t : tensor<64x1xbf16> -> tensor<bf16>
  return %0, %1 : tensor<f32>, tensor<bf16>
}

// beta = 1 (the default) is not printed.
// CHECK-LABEL: func.func @pointwise_losses
func.func @pointwise_losses(%p: tensor<64x4xf32>, %t: tensor<64x4xf32>) -> (tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<64x4xf32>) {
  // CHECK: train.cross_entropy %{{.*}}, %{{.*}} ignore_index -100 : tensor<64x4xf32>, tensor<64xi32> -> tensor<f32>
  %labels = train.constant dense<1> : tensor<64xi32>
  %ce = train.cross_entropy %p, %labels ignore_index -100 : tensor<64x4xf32>, tensor<64xi32> -> tensor<f32>
  // CHECK: train.cross_entropy %{{.*}}, %{{.*}} ignore_index -100 label_smoothing 1.000000e-01 : tensor<64x4xf32>, tensor<64xi32> -> tensor<f32>
  %smooth = train.cross_entropy %p, %labels ignore_index -100 label_smoothing 0.1 : tensor<64x4xf32>, tensor<64xi32> -> tensor<f32>
  // CHECK: train.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} label_smoothing 1.000000e-01 : tensor<f32>, tensor<64x4xf32>, tensor<64xi32>
  %dsmooth = train.cross_entropy_grad %smooth, %p, %labels label_smoothing 0.1 : tensor<f32>, tensor<64x4xf32>, tensor<64xi32>
  // CHECK: train.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index -100 : tensor<f32>, tensor<64x4xf32>, tensor<64xi32>
  %dl = train.cross_entropy_grad %ce, %p, %labels ignore_index -100 : tensor<f32>, tensor<64x4xf32>, tensor<64xi32>
  // CHECK: train.l1_loss %{{.*}}, %{{.*}} : tensor<64x4xf32> -> tensor<f32>
  %0 = train.l1_loss %p, %t : tensor<64x4xf32> -> tensor<f32>
  // CHECK: train.smooth_l1_loss %{{.*}}, %{{.*}} : tensor<64x4xf32> -> tensor<f32>
  %1 = train.smooth_l1_loss %p, %t beta 1.0 : tensor<64x4xf32> -> tensor<f32>
  // CHECK: train.smooth_l1_loss %{{.*}}, %{{.*}} beta 2.500000e-01 : tensor<64x4xf32> -> tensor<f32>
  %2 = train.smooth_l1_loss %p, %t beta 0.25 : tensor<64x4xf32> -> tensor<f32>
  // CHECK: train.bce_with_logits_loss %{{.*}}, %{{.*}} : tensor<64x4xf32> -> tensor<f32>
  %3 = train.bce_with_logits_loss %p, %t : tensor<64x4xf32> -> tensor<f32>
  // CHECK: train.maximum %{{.*}}, %{{.*}} : tensor<64x4xf32>, tensor<4xf32> -> tensor<64x4xf32>
  // CHECK: train.minimum
  %c = train.constant dense<0.0> : tensor<4xf32>
  %4 = train.maximum %p, %c : tensor<64x4xf32>, tensor<4xf32> -> tensor<64x4xf32>
  %5 = train.minimum %4, %t : tensor<64x4xf32>, tensor<64x4xf32> -> tensor<64x4xf32>
  return %0, %1, %2, %3, %5 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<64x4xf32>
}

// CHECK-LABEL: func.func @precision_overrides
// CHECK: train.matmul %{{.*}}, %{{.*}} {train.precision = "f32"}
// CHECK: train.softmax %{{.*}} axis 1 {train.precision = "lower"}
func.func @precision_overrides(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = train.matmul %x, %x {train.precision = "f32"} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %1 = train.softmax %0 axis 1 {train.precision = "lower"} : tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @casts
func.func @casts(%w: tensor<784x256xf32>) -> (tensor<784x256xf16>, tensor<784x256xbf16>) {
  // CHECK: train.cast %{{.*}} : tensor<784x256xf32> to tensor<784x256xf16>
  %0 = train.cast %w : tensor<784x256xf32> to tensor<784x256xf16>
  // CHECK: train.cast %{{.*}} : tensor<784x256xf32> to tensor<784x256xbf16>
  %1 = train.cast %w : tensor<784x256xf32> to tensor<784x256xbf16>
  return %0, %1 : tensor<784x256xf16>, tensor<784x256xbf16>
}

// CHECK-LABEL: func.func @params
// CHECK-SAME: {train.init = #train.init<kaiming_uniform>, train.param}
// CHECK-SAME: {train.init = #train.init<kaiming_uniform(fan_in = 784)>, train.param}
// CHECK-SAME: {train.init = #train.init<normal(2.000000e-02)>, train.param}
// CHECK-SAME: {train.init = #train.init<xavier_uniform(fan_in = 4, fan_out = 8)>, train.param}
// CHECK-SAME: {train.param}
// CHECK-SAME: {train.init = #train.init<ones>, train.state}
// CHECK-SAME: {train.init = #train.init<fan_in_uniform>, train.param}
// CHECK-SAME: {train.init = #train.init<seed>, train.state}
func.func @params(%w: tensor<784x256xf32> {train.param, train.init = #train.init<kaiming_uniform>},
                  %b: tensor<256xf32> {train.param, train.init = #train.init<kaiming_uniform(fan_in = 784)>},
                  %e: tensor<100x16xf32> {train.param, train.init = #train.init<normal(0.02)>},
                  %v: tensor<3xf32> {train.param, train.init = #train.init<xavier_uniform(fan_in = 4, fan_out = 8)>},
                  %u: tensor<3xf16> {train.param},
                  %rv: tensor<3xf32> {train.state, train.init = #train.init<ones>},
                  %lw: tensor<4x2xf32> {train.param, train.init = #train.init<fan_in_uniform>},
                  %count: tensor<i32> {train.state, train.init = #train.init<seed>}) {
  return
}

// CHECK-LABEL: func.func @backward_helpers
func.func @backward_helpers(%dy: tensor<2x4x6x6xf16>, %x: tensor<2x3x8x8xf16>, %w: tensor<4x3x3x3xf16>,
                            %g: tensor<4x10xf32>, %y: tensor<4x10xf32>, %l: tensor<4xi32>, %s: tensor<f32>,
                            %p: tensor<2x3x4x4xf32>, %px: tensor<2x3x8x8xf32>, %bn: tensor<3xf32>,
                            %e: tensor<2x5x8xf32>, %ids: tensor<2x5xi32>, %l10: tensor<10xf32>) {
  // CHECK: train.relu_grad %{{.*}}, %{{.*}} : tensor<4x10xf32>
  %0 = train.relu_grad %g, %y : tensor<4x10xf32>
  // CHECK: train.gelu_grad %{{.*}}, %{{.*}} approximate tanh : tensor<4x10xf32>
  %1 = train.gelu_grad %g, %y approximate tanh : tensor<4x10xf32>
  // CHECK: train.softmax_grad %{{.*}}, %{{.*}} axis 1 : tensor<4x10xf32>
  %2 = train.softmax_grad %g, %y axis 1 : tensor<4x10xf32>
  // CHECK: train.log_softmax_grad %{{.*}}, %{{.*}} axis 0 : tensor<4x10xf32>
  %3 = train.log_softmax_grad %g, %y axis 0 : tensor<4x10xf32>
  // CHECK: train.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x10xf32>, tensor<4xi32>
  %4 = train.cross_entropy_grad %s, %y, %l : tensor<f32>, tensor<4x10xf32>, tensor<4xi32>
  // CHECK: train.conv2d_grad_input %{{.*}}, %{{.*}} accumulate f32 : tensor<2x4x6x6xf16>, tensor<4x3x3x3xf16> -> tensor<2x3x8x8xf16>
  %5 = train.conv2d_grad_input %dy, %w accumulate f32 : tensor<2x4x6x6xf16>, tensor<4x3x3x3xf16> -> tensor<2x3x8x8xf16>
  // CHECK: train.conv2d_grad_filter %{{.*}}, %{{.*}} : tensor<2x4x6x6xf16>, tensor<2x3x8x8xf16> -> tensor<4x3x3x3xf16>
  %6 = train.conv2d_grad_filter %dy, %x : tensor<2x4x6x6xf16>, tensor<2x3x8x8xf16> -> tensor<4x3x3x3xf16>
  // CHECK: train.pool2d_grad %{{.*}}, %{{.*}} max kernel [2, 2] strides [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  %7 = train.pool2d_grad %p, %px max kernel [2, 2] strides [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  // CHECK: train.pool2d_grad %{{.*}}, %{{.*}} max kernel [2, 2] strides [2, 2] padding [1, 1] dilation [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  %dilated = train.pool2d_grad %p, %px max kernel [2, 2] strides [2, 2] padding [1, 1] dilation [2, 2] : tensor<2x3x4x4xf32>, tensor<2x3x8x8xf32>
  // CHECK: train.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x10xf32>, tensor<10xf32>
  %8:3 = train.layer_norm_grad %g, %y, %l10 : tensor<4x10xf32>, tensor<10xf32>
  // CHECK: train.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3x8x8xf32>, tensor<3xf32>
  %9:3 = train.batch_norm_grad %px, %px, %bn : tensor<2x3x8x8xf32>, tensor<3xf32>
  // CHECK: train.batch_norm_grad %{{.*}}, %{{.*}}, %{{.*}} ranks 2 : tensor<2x3x8x8xf32>, tensor<3xf32>
  %sg:3 = train.batch_norm_grad %px, %px, %bn ranks 2 : tensor<2x3x8x8xf32>, tensor<3xf32>
  // CHECK: train.embedding_grad %{{.*}}, %{{.*}} : tensor<2x5x8xf32>, tensor<2x5xi32> -> tensor<100x8xf32>
  %10 = train.embedding_grad %e, %ids : tensor<2x5x8xf32>, tensor<2x5xi32> -> tensor<100x8xf32>
  // CHECK: train.slice %{{.*}} offsets [1, 2] : tensor<4x10xf32> -> tensor<2x3xf32>
  %11 = train.slice %y offsets [1, 2] : tensor<4x10xf32> -> tensor<2x3xf32>
  return
}

// CHECK-LABEL: func.func @optimizer_updates
func.func @optimizer_updates(%lr: tensor<f32>, %s: tensor<i32>, %p: tensor<4xf32>, %q: tensor<2x3xf32>) {
  // CHECK: train.sgd_update %{{.*}} params(%{{.*}}, %{{.*}}) grads(%{{.*}}, %{{.*}}) momentum_buffers(%{{.*}}, %{{.*}}) momentum 9.000000e-01 nesterov : tensor<f32>, (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xf32>, tensor<2x3xf32>)
  %0:4 = train.sgd_update %lr params(%p, %q) grads(%p, %q) momentum_buffers(%p, %q) momentum 0.9 nesterov : tensor<f32>, (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xf32>, tensor<2x3xf32>)
  // CHECK: train.adam_update %{{.*}}, %{{.*}} params(%{{.*}}) grads(%{{.*}}) exp_avgs(%{{.*}}) exp_avg_sqs(%{{.*}}) decoupled weight_decay 1.000000e-02 : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  %1:4 = train.adam_update %lr, %s params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) decoupled weight_decay 0.01 : tensor<f32>, tensor<i32>, (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>), (tensor<4xf32>)
  // CHECK: train.clip_grad_norm(%{{.*}}, %{{.*}}) max_norm 1.000000e+00 : (tensor<4xf32>, tensor<2x3xf32>)
  %2:3 = train.clip_grad_norm(%p, %q) max_norm 1.0 : (tensor<4xf32>, tensor<2x3xf32>)
  // CHECK: %[[A:.*]]:4 = train.accumulate_grads %{{.*}} accumulators(%{{.*}}) grads(%{{.*}}) steps 4 : tensor<i32>, (tensor<4xf32>), (tensor<4xf32>)
  %3:4 = train.accumulate_grads %s accumulators(%p) grads(%p) steps 4 : tensor<i32>, (tensor<4xf32>), (tensor<4xf32>)
  // CHECK: train.sgd_update %{{.*}} params(%{{.*}}) grads(%{{.*}}) skip(%[[A]]#2) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  %4 = train.sgd_update %lr params(%p) grads(%p) skip(%3#2) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return
}

// CHECK-LABEL: func.func @loss_scaling
func.func @loss_scaling(%scale: tensor<f32>, %tracker: tensor<i32>, %g: tensor<4xf32>, %h: tensor<2xf16>) -> (tensor<f32>, tensor<i32>, tensor<i1>) {
  // CHECK: %[[U:.*]]:3 = train.unscale_grads %{{.*}} grads(%{{.*}}, %{{.*}}) : tensor<f32>, (tensor<4xf32>, tensor<2xf16>)
  %u:3 = train.unscale_grads %scale grads(%g, %h) : tensor<f32>, (tensor<4xf32>, tensor<2xf16>)
  // CHECK: train.update_scale %{{.*}}, %{{.*}}, %[[U]]#2 backoff_factor 2.500000e-01 growth_interval 2 max_scale 0x4170000000000000 : tensor<f32>, tensor<i32>
  %s:3 = train.update_scale %scale, %tracker, %u#2 backoff_factor 0.25 growth_interval 2 max_scale 16777216.0 : tensor<f32>, tensor<i32>
  return %s#0, %s#1, %s#2 : tensor<f32>, tensor<i32>, tensor<i1>
}

// CHECK-LABEL: func.func @first_nonfinite
func.func @first_nonfinite(%l: tensor<f32>, %g: tensor<4xf32>, %h: tensor<2xf16>) -> (tensor<i32>, tensor<i32>) {
  // CHECK: train.first_nonfinite %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<4xf32>, tensor<2xf16>
  %0 = train.first_nonfinite %l, %g, %h : tensor<f32>, tensor<4xf32>, tensor<2xf16>
  // CHECK: train.first_nonfinite %{{.*}}, %{{.*}} order [1, 0] : tensor<4xf32>, tensor<2xf16>
  %1 = train.first_nonfinite %g, %h order [1, 0] : tensor<4xf32>, tensor<2xf16>
  return %0, %1 : tensor<i32>, tensor<i32>
}

// CHECK-LABEL: func.func @check_numerics
func.func @check_numerics(%l: tensor<f32>, %g: tensor<4x2xf32>, %h: tensor<2xf16>) -> (tensor<3xf32>, tensor<1xf32>, tensor<4xf32>) {
  // CHECK: train.check_numerics %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x2xf32>, tensor<2xf16>
  %0 = train.check_numerics %l, %g, %h : tensor<f32>, tensor<4x2xf32>, tensor<2xf16>
  // CHECK: train.check_numerics %{{.*}} : tensor<2xf16>
  %1 = train.check_numerics %h : tensor<2xf16>
  // CHECK: train.check_numerics %{{.*}}, %{{.*}} smallest : tensor<f32>, tensor<2xf16>
  %2 = train.check_numerics %l, %h smallest : tensor<f32>, tensor<2xf16>
  return %0, %1, %2 : tensor<3xf32>, tensor<1xf32>, tensor<4xf32>
}

// CHECK: func.func private @amp_cpu_gemm(index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
func.func private @amp_cpu_gemm(index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)

// CHECK-LABEL: func.func @runtime_call
func.func @runtime_call(%a: tensor<4x8xf16>, %b: tensor<8x3xf16>) -> tensor<4x3xf32> {
  // CHECK: train.runtime_call @amp_cpu_gemm(%{{.*}}, %{{.*}}) [1, 1, 1, 4, 3, 8, 0, 0] : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
  %0 = train.runtime_call @amp_cpu_gemm(%a, %b) [1, 1, 1, 4, 3, 8, 0, 0] : (tensor<4x8xf16>, tensor<8x3xf16>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// A ReLU bit mask is an i8 tensor a call fills and another reads.
func.func private @amp_cuda_gemm_relu_aux(index, index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)
func.func private @amp_cuda_gemm_drelu(index, index, index, index, i64, i64, i64, i64, i64, i64, i64, i64)

// CHECK-LABEL: func.func @runtime_call_mask
func.func @runtime_call_mask(%x: tensor<8x16xf16>, %w: tensor<16x128xf16>, %b: tensor<128xf16>, %dz: tensor<8x16xf16>) -> tensor<8x128xf16> {
  // CHECK: %[[Y:.*]]:2 = train.runtime_call @amp_cuda_gemm_relu_aux(%{{.*}}, %{{.*}}, %{{.*}}) [1, 1, 1, 8, 128, 16, 0, 0] : (tensor<8x16xf16>, tensor<16x128xf16>, tensor<128xf16>) -> (tensor<8x128xf16>, tensor<8x16xi8>)
  %y:2 = train.runtime_call @amp_cuda_gemm_relu_aux(%x, %w, %b) [1, 1, 1, 8, 128, 16, 0, 0] : (tensor<8x16xf16>, tensor<16x128xf16>, tensor<128xf16>) -> (tensor<8x128xf16>, tensor<8x16xi8>)
  // CHECK: train.runtime_call @amp_cuda_gemm_drelu(%{{.*}}, %{{.*}}, %[[Y]]#1) [1, 1, 1, 8, 128, 16, 0, 1] : (tensor<8x16xf16>, tensor<128x16xf16>, tensor<8x16xi8>) -> tensor<8x128xf16>
  %wt = train.transpose %w permutation [1, 0] : tensor<16x128xf16> -> tensor<128x16xf16>
  %d = train.runtime_call @amp_cuda_gemm_drelu(%dz, %wt, %y#1) [1, 1, 1, 8, 128, 16, 0, 1] : (tensor<8x16xf16>, tensor<128x16xf16>, tensor<8x16xi8>) -> tensor<8x128xf16>
  return %d : tensor<8x128xf16>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%g: tensor<4xf32>, %h: tensor<2xf16>, %f: tensor<i1>, %pending: tensor<i1>, %scale: tensor<f32>) -> (tensor<4xf32>, tensor<2xf16>, tensor<4xf32>, tensor<i1>, tensor<4xf32>) {
  // CHECK: %[[S:.*]]:2 = train.all_reduce sum(%{{.*}}, %{{.*}}) ranks 2 : (tensor<4xf32>, tensor<2xf16>)
  %s:2 = train.all_reduce sum(%g, %h) ranks 2 : (tensor<4xf32>, tensor<2xf16>)
  // CHECK: train.all_reduce mean(%{{.*}}) skip(%{{.*}}) ranks 8 wire bf16 : (tensor<4xf32>)
  %m = train.all_reduce mean(%g) skip(%pending) ranks 8 wire bf16 : (tensor<4xf32>)
  // CHECK: train.all_reduce max(%{{.*}}) ranks 2 : (tensor<i1>)
  %x = train.all_reduce max(%f) ranks 2 : (tensor<i1>)
  // CHECK: train.unscale_grads %{{.*}} grads(%[[S]]#0) divisor 2 : tensor<f32>, (tensor<4xf32>)
  %u:2 = train.unscale_grads %scale grads(%s#0) divisor 2 : tensor<f32>, (tensor<4xf32>)
  return %s#0, %s#1, %m, %x, %u#0 : tensor<4xf32>, tensor<2xf16>, tensor<4xf32>, tensor<i1>, tensor<4xf32>
}

// CHECK-LABEL: func.func @logic
func.func @logic(%ids: tensor<4x8xi32>, %pad: tensor<i32>, %x: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: train.compare %{{.*}}, %{{.*}} ne : tensor<4x8xi32>, tensor<i32> -> tensor<4x8xi1>
  %k = train.compare %ids, %pad ne : tensor<4x8xi32>, tensor<i32> -> tensor<4x8xi1>
  // CHECK: train.compare %{{.*}}, %{{.*}} le : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %l = train.compare %x, %x le : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xi1>
  %c = train.constant dense<[[true], [false], [true], [true]]> : tensor<4x1xi1>
  // CHECK: train.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x1xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %z = train.constant dense<0.0> : tensor<f32>
  %s = train.select %c, %x, %z : tensor<4x1xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  // CHECK: train.convert %{{.*}} : tensor<4x8xi1> to tensor<4x8xf32>
  %f = train.convert %l : tensor<4x8xi1> to tensor<4x8xf32>
  return %s, %f : tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @user_cast
func.func @user_cast(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: train.cast %{{.*}} user : tensor<4xf32> to tensor<4xf32>
  %0 = train.cast %x user : tensor<4xf32> to tensor<4xf32>
  return %0 : tensor<4xf32>
}
