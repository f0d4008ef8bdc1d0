// RUN: amp-opt %s -split-input-file --amp-decompose-lm-head | FileCheck %s --enable-var-scope

// The fused head at O1 (bf16 operands, a tied [V, K] table): the logits as
// autocast makes them (bf16 product, f32 sums), widened for the loss; the
// gradient computes them again and rounds the logits' gradient to bf16 for
// its two products.
// CHECK-LABEL: func.func @tied_bf16(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<f32>, %[[H:[a-z0-9]+]]: tensor<6x4xbf16>, %[[W:[a-z0-9]+]]: tensor<11x4xbf16>, %[[L:[a-z0-9]+]]: tensor<6xi32>
// CHECK: %[[Y:.*]] = train.matmul %[[H]], %[[W]] transpose_rhs accumulate f32 : tensor<6x4xbf16>, tensor<11x4xbf16> -> tensor<6x11xbf16>
// CHECK: %[[F:.*]] = train.cast %[[Y]] : tensor<6x11xbf16> to tensor<6x11xf32>
// CHECK: %[[LOSS:.*]] = train.cross_entropy %[[F]], %[[L]] ignore_index -100 label_smoothing 1.000000e-01
// CHECK: %[[Y2:.*]] = train.matmul %[[H]], %[[W]] transpose_rhs accumulate f32
// CHECK: %[[F2:.*]] = train.cast %[[Y2]]
// CHECK: %[[DL:.*]] = train.cross_entropy_grad %[[S]], %[[F2]], %[[L]] ignore_index -100 label_smoothing 1.000000e-01
// CHECK: %[[DL16:.*]] = train.cast %[[DL]] : tensor<6x11xf32> to tensor<6x11xbf16>
// CHECK: %[[DH:.*]] = train.matmul %[[DL16]], %[[W]] accumulate f32 : tensor<6x11xbf16>, tensor<11x4xbf16> -> tensor<6x4xbf16>
// CHECK: %[[DW:.*]] = train.matmul %[[DL16]], %[[H]] transpose_lhs accumulate f32 : tensor<6x11xbf16>, tensor<6x4xbf16> -> tensor<11x4xbf16>
// CHECK: return %[[LOSS]], %[[DH]], %[[DW]]
func.func @tied_bf16(%seed: tensor<f32>, %h: tensor<6x4xbf16>, %w: tensor<11x4xbf16>, %l: tensor<6xi32>)
    -> (tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>) {
  %loss = train.linear_cross_entropy %h, %w, %l transpose_weight ignore_index -100 label_smoothing 0.1
      : tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32> -> tensor<f32>
  %dh, %dw = train.linear_cross_entropy_grad %seed, %h, %w, %l transpose_weight ignore_index -100 label_smoothing 0.1
      : tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>, tensor<6xi32>
  return %loss, %dh, %dw : tensor<f32>, tensor<6x4xbf16>, tensor<11x4xbf16>
}

// -----

// f32 with a [K, V] weight: no casts, dx = dl w^T, dw = x^T dl.
// CHECK-LABEL: func.func @f32(
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<f32>, %[[X:[a-z0-9]+]]: tensor<6x4xf32>, %[[W:[a-z0-9]+]]: tensor<4x11xf32>, %[[L:[a-z0-9]+]]: tensor<6xi32>
// CHECK-NOT: train.cast
// CHECK: %[[Y:.*]] = train.matmul %[[X]], %[[W]] : tensor<6x4xf32>, tensor<4x11xf32> -> tensor<6x11xf32>
// CHECK: %[[DL:.*]] = train.cross_entropy_grad %[[S]], %[[Y]], %[[L]] :
// CHECK: %[[DX:.*]] = train.matmul %[[DL]], %[[W]] transpose_rhs : tensor<6x11xf32>, tensor<4x11xf32> -> tensor<6x4xf32>
// CHECK: %[[DW:.*]] = train.matmul %[[X]], %[[DL]] transpose_lhs : tensor<6x4xf32>, tensor<6x11xf32> -> tensor<4x11xf32>
// CHECK: return %[[DX]], %[[DW]]
func.func @f32(%seed: tensor<f32>, %x: tensor<6x4xf32>, %w: tensor<4x11xf32>, %l: tensor<6xi32>)
    -> (tensor<6x4xf32>, tensor<4x11xf32>) {
  %dx, %dw = train.linear_cross_entropy_grad %seed, %x, %w, %l
      : tensor<f32>, tensor<6x4xf32>, tensor<4x11xf32>, tensor<6xi32>
  return %dx, %dw : tensor<6x4xf32>, tensor<4x11xf32>
}
