// RUN: amp-opt %s -split-input-file --amp-fuse-lm-head | FileCheck %s --enable-var-scope

// An f32 head without bias and its loss: one op, the attributes kept.
// CHECK-LABEL: func.func @f32_head(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x16xf32>, %[[L:[a-z0-9]+]]: tensor<8xi32>, %[[W:[a-z0-9]+]]: tensor<16x50xf32>
// CHECK-NOT: train.matmul
// CHECK: %[[LOSS:.*]] = train.linear_cross_entropy %[[X]], %[[W]], %[[L]] ignore_index -100 label_smoothing 1.000000e-01 : tensor<8x16xf32>, tensor<16x50xf32>, tensor<8xi32> -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]]
func.func @f32_head(%x: tensor<8x16xf32>, %l: tensor<8xi32>, %w: tensor<16x50xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x50xf32> -> tensor<8x50xf32>
  %loss = train.cross_entropy %y, %l ignore_index -100 label_smoothing 0.1 : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// After autocast (nn.Linear's [V, K] weight, HuggingFace's [B, S, V]
// logits widened and flattened for the loss): the bf16 operands are the
// fused op's, the weight read as stored (transpose_weight).
// CHECK-LABEL: func.func @bf16_linear(
// CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<2x4x16xf32>, %[[L:[a-z0-9]+]]: tensor<8xi32>, %[[W:[a-z0-9]+]]: tensor<50x16xf32>
// CHECK: %[[H16:.*]] = train.cast %[[H]] : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
// CHECK: %[[X:.*]] = train.reshape %[[H16]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK: %[[W16:.*]] = train.cast %[[W]] : tensor<50x16xf32> to tensor<50x16xbf16>
// CHECK-NOT: train.matmul
// CHECK: %[[LOSS:.*]] = train.linear_cross_entropy %[[X]], %[[W16]], %[[L]] transpose_weight : tensor<8x16xbf16>, tensor<50x16xbf16>, tensor<8xi32> -> tensor<f32>
// CHECK-NEXT: return %[[LOSS]]
func.func @bf16_linear(%h: tensor<2x4x16xf32>, %l: tensor<8xi32>, %w: tensor<50x16xf32> {train.param}) -> tensor<f32> {
  %h16 = train.cast %h : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
  %x = train.reshape %h16 : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
  %w16 = train.cast %w : tensor<50x16xf32> to tensor<50x16xbf16>
  %y = train.matmul %x, %w16 transpose_rhs accumulate f32 : tensor<8x16xbf16>, tensor<50x16xbf16> -> tensor<8x50xbf16>
  %y3 = train.reshape %y : tensor<8x50xbf16> -> tensor<2x4x50xbf16>
  %f = train.cast %y3 : tensor<2x4x50xbf16> to tensor<2x4x50xf32>
  %flat = train.reshape %f : tensor<2x4x50xf32> -> tensor<8x50xf32>
  %loss = train.cross_entropy %flat, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A tied embedding table through x @ wte.t() (amp.to_mlir's batch_matmul
// with a [1, K, V] weight): the table is read as stored, [V, K], and the
// views of it are gone.
// CHECK-LABEL: func.func @tied(
// CHECK-SAME: %[[H:[a-z0-9]+]]: tensor<2x4x16xbf16>, %[[L:[a-z0-9]+]]: tensor<8xi32>, %[[E:[a-z0-9]+]]: tensor<50x16xf32>
// CHECK-DAG: %[[X:.*]] = train.reshape %[[H]] : tensor<2x4x16xbf16> -> tensor<8x16xbf16>
// CHECK-DAG: %[[E16:.*]] = train.cast %[[E]] : tensor<50x16xf32> to tensor<50x16xbf16>
// CHECK-NOT: train.transpose
// CHECK-NOT: train.batch_matmul
// CHECK: train.linear_cross_entropy %[[X]], %[[E16]], %[[L]] transpose_weight : tensor<8x16xbf16>, tensor<50x16xbf16>, tensor<8xi32> -> tensor<f32>
func.func @tied(%h: tensor<2x4x16xbf16>, %l: tensor<8xi32>, %e: tensor<50x16xf32> {train.param}) -> tensor<f32> {
  %t = train.transpose %e permutation [1, 0] : tensor<50x16xf32> -> tensor<16x50xf32>
  %r = train.reshape %t : tensor<16x50xf32> -> tensor<1x16x50xf32>
  %w = train.cast %r : tensor<1x16x50xf32> to tensor<1x16x50xbf16>
  %y = train.batch_matmul %h, %w accumulate f32 : tensor<2x4x16xbf16>, tensor<1x16x50xbf16> -> tensor<2x4x50xbf16>
  %flat = train.reshape %y : tensor<2x4x50xbf16> -> tensor<8x50xbf16>
  %f = train.cast %flat : tensor<8x50xbf16> to tensor<8x50xf32>
  %loss = train.cross_entropy %f, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Left alone: logits that are also a result (the model's output in the
// forward function), a head with a bias, a 16-bit loss, 16-bit sums, a
// weight per batch index, and a product that is not the logits.
// CHECK-LABEL: func.func @returned(
// CHECK: train.matmul
// CHECK: train.cross_entropy
// CHECK-LABEL: func.func @bias(
// CHECK: train.matmul
// CHECK: train.cross_entropy
// CHECK-LABEL: func.func @bf16_loss(
// CHECK: train.matmul
// CHECK: train.cross_entropy
// CHECK-LABEL: func.func @f16_sums(
// CHECK: train.matmul
// CHECK: train.cross_entropy
// CHECK-LABEL: func.func @per_batch_weight(
// CHECK: train.batch_matmul
// CHECK: train.cross_entropy
// CHECK-LABEL: func.func @not_the_logits(
// CHECK: train.matmul
// CHECK: train.tanh
// CHECK: train.cross_entropy
// CHECK-NOT: train.linear_cross_entropy
func.func @returned(%x: tensor<8x16xf32>, %l: tensor<8xi32>, %w: tensor<16x50xf32>) -> (tensor<f32>, tensor<8x50xf32>) {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x50xf32> -> tensor<8x50xf32>
  %loss = train.cross_entropy %y, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss, %y : tensor<f32>, tensor<8x50xf32>
}
func.func @bias(%x: tensor<8x16xf32>, %l: tensor<8xi32>, %w: tensor<16x50xf32>, %b: tensor<50xf32>) -> tensor<f32> {
  %y = train.matmul %x, %w, %b : tensor<8x16xf32>, tensor<16x50xf32>, tensor<50xf32> -> tensor<8x50xf32>
  %loss = train.cross_entropy %y, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
func.func @bf16_loss(%x: tensor<8x16xbf16>, %l: tensor<8xi32>, %w: tensor<16x50xbf16>) -> tensor<bf16> {
  %y = train.matmul %x, %w accumulate f32 : tensor<8x16xbf16>, tensor<16x50xbf16> -> tensor<8x50xbf16>
  %loss = train.cross_entropy %y, %l : tensor<8x50xbf16>, tensor<8xi32> -> tensor<bf16>
  return %loss : tensor<bf16>
}
func.func @f16_sums(%x: tensor<8x16xf16>, %l: tensor<8xi32>, %w: tensor<16x50xf16>) -> tensor<f32> {
  %y = train.matmul %x, %w accumulate f16 : tensor<8x16xf16>, tensor<16x50xf16> -> tensor<8x50xf16>
  %f = train.cast %y : tensor<8x50xf16> to tensor<8x50xf32>
  %loss = train.cross_entropy %f, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
func.func @per_batch_weight(%x: tensor<2x4x16xf32>, %l: tensor<8xi32>, %w: tensor<2x16x50xf32>) -> tensor<f32> {
  %y = train.batch_matmul %x, %w : tensor<2x4x16xf32>, tensor<2x16x50xf32> -> tensor<2x4x50xf32>
  %flat = train.reshape %y : tensor<2x4x50xf32> -> tensor<8x50xf32>
  %loss = train.cross_entropy %flat, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
func.func @not_the_logits(%x: tensor<8x16xf32>, %l: tensor<8xi32>, %w: tensor<16x50xf32>) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x50xf32> -> tensor<8x50xf32>
  %t = train.tanh %y : tensor<8x50xf32>
  %loss = train.cross_entropy %t, %l : tensor<8x50xf32>, tensor<8xi32> -> tensor<f32>
  return %loss : tensor<f32>
}
