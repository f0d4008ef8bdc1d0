// RUN: amp-opt %s -split-input-file --amp-autodiff --verify-diagnostics | FileCheck %s
// RUN: amp-opt %s -split-input-file --amp-autocast --amp-autodiff --amp-cast-cleanup --verify-diagnostics | FileCheck %s --check-prefix=O1

// A linear layer with bias and a loss: the gradient function returns the loss
// and one gradient per parameter in argument order; the input x (not a
// parameter) gets no gradient work, labels never do.
// CHECK-LABEL: func.func @linear(
// CHECK-LABEL: func.func @linear_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x16xf32>, %[[L:[a-z0-9]+]]: tensor<8xi32>, %[[W:[a-z0-9]+]]: tensor<16x4xf32> {train.param}, %[[B:[a-z0-9]+]]: tensor<4xf32> {train.param})
// CHECK-SAME: -> (tensor<f32>, tensor<16x4xf32>, tensor<4xf32>)
// CHECK: %[[Y:.*]] = train.matmul %[[X]], %[[W]], %[[B]]
// CHECK: %[[LOSS:.*]] = train.cross_entropy %[[Y]], %[[L]]
// CHECK: %[[SEED:.*]] = train.loss_seed {{.*}}: tensor<f32>
// CHECK: %[[DY:.*]] = train.cross_entropy_grad %[[SEED]], %[[Y]], %[[L]]
// CHECK-NOT: transpose_rhs
// CHECK: %[[DW:.*]] = train.matmul %[[X]], %[[DY]] transpose_lhs {{.*}}: tensor<8x16xf32>, tensor<8x4xf32> -> tensor<16x4xf32>
// CHECK: %[[DB:.*]] = train.reduce_sum %[[DY]] axes [0] {{.*}}: tensor<8x4xf32> -> tensor<4xf32>
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]] : tensor<f32>, tensor<16x4xf32>, tensor<4xf32>
// O1-LABEL: func.func @linear_grad(
// O1: %[[Y16:.*]] = train.matmul {{.*}} accumulate f32 {{.*}}: tensor<8x16xf16>, tensor<16x4xf16>, tensor<4xf16> -> tensor<8x4xf16>
// O1: %[[DY:.*]] = train.cross_entropy_grad {{.*}} : tensor<f32>, tensor<8x4xf32>, tensor<8xi32>
// O1: %[[DY16:.*]] = train.cast %[[DY]] : tensor<8x4xf32> to tensor<8x4xf16>
// O1: %[[DW16:.*]] = train.matmul %{{.*}}, %[[DY16]] transpose_lhs accumulate f32 {{.*}}: tensor<8x16xf16>, tensor<8x4xf16> -> tensor<16x4xf16>
// O1: %[[DW:.*]] = train.cast %[[DW16]] : tensor<16x4xf16> to tensor<16x4xf32>
// O1: return %{{.*}}, %[[DW]], %{{.*}} : tensor<f32>, tensor<16x4xf32>, tensor<4xf32>
func.func @linear(%x: tensor<8x16xf32>, %labels: tensor<8xi32>, %w: tensor<16x4xf32> {train.param}, %b: tensor<4xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  %l = train.cross_entropy %y, %labels : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A value used twice gets the sum of its gradients; a parameter that does
// not reach the loss gets zeros.
// CHECK-LABEL: func.func @reuse_grad(
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<4xf32> {train.param}, %{{[a-z0-9]+}}: tensor<4xf32> {train.param})
// CHECK: %[[SQ:.*]] = train.mul %[[W]], %[[W]]
// CHECK: %[[G1:.*]] = train.mul %{{.*}}, %[[W]]
// CHECK: %[[G2:.*]] = train.mul %{{.*}}, %[[W]]
// CHECK: %[[SUM:.*]] = train.add %[[G1]], %[[G2]] {{.*}}: tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: %[[ZERO:.*]] = train.constant dense<0.000000e+00> {{.*}}: tensor<4xf32>
// CHECK: return %{{.*}}, %[[SUM]], %[[ZERO]]
func.func @reuse(%w: tensor<4xf32> {train.param}, %unused: tensor<4xf32> {train.param}) -> tensor<f32> {
  %sq = train.mul %w, %w : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %l = train.reduce_sum %sq axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Broadcast operands get their gradients summed back to their own shape.
// CHECK-LABEL: func.func @broadcast_grad(
// CHECK: train.reduce_sum %{{.*}} axes [0] {{.*}}: tensor<3x4xf32> -> tensor<4xf32>
// CHECK: train.reduce_sum %{{.*}} axes [1] {{.*}}: tensor<3x4xf32> -> tensor<3xf32>
// CHECK: train.reshape %{{.*}} : tensor<3xf32> -> tensor<3x1xf32>
func.func @broadcast(%a: tensor<4xf32> {train.param}, %b: tensor<3x1xf32> {train.param}) -> tensor<f32> {
  %s = train.add %a, %b : tensor<4xf32>, tensor<3x1xf32> -> tensor<3x4xf32>
  %l = train.reduce_mean %s axes [0, 1] : tensor<3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Functions without parameters are left alone.
// CHECK-LABEL: func.func @no_params
// CHECK-NOT: @no_params_grad
func.func @no_params(%x: tensor<4xf32>) -> tensor<f32> {
  %l = train.reduce_sum %x axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func private @opaque(tensor<4xf32>) -> tensor<4xf32>

func.func @opaque_call(%w: tensor<4xf32> {train.param}) -> tensor<f32> {
  // expected-error @+1 {{amp-autodiff: no gradient rule for 'func.call' (it lies between a parameter and the loss)}}
  %y = func.call @opaque(%w) : (tensor<4xf32>) -> tensor<4xf32>
  %l = train.reduce_sum %y axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{amp-autodiff: @no_loss must return the loss (a rank-0 float tensor) first}}
func.func @no_loss(%w: tensor<4xf32> {train.param}) -> tensor<4xf32> {
  %y = train.relu %w : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @loop(%w: tensor<4xf32> {train.param}) -> tensor<f32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{amp-autodiff: control flow ('scf.for') is not differentiable yet}}
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %w) -> (tensor<4xf32>) {
    %t = train.tanh %a : tensor<4xf32>
    scf.yield %t : tensor<4xf32>
  }
  %l = train.reduce_sum %r axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{amp-autodiff: @twice_grad already exists; was the pass run twice?}}
func.func @twice(%w: tensor<4xf32> {train.param}) -> tensor<f32> {
  %l = train.reduce_sum %w axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
func.func @twice_grad(%w: tensor<4xf32>) -> tensor<f32> {
  %l = train.reduce_sum %w axes [0] : tensor<4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Dropout keyed by a step counter: the backward regenerates the forward's
// mask (same rate, seed and step); the counter, an integer, gets no gradient
// work, and its increment is state the step returns.
// CHECK-LABEL: func.func @dropout_step_grad(
// CHECK-SAME: %[[C:[a-z0-9]+]]: tensor<i32> {train.state})
// CHECK: train.dropout %{{.*}} rate 5.000000e-01 seed 1 step %[[C]] : tensor<8x4xf32>
// CHECK: %[[N:.*]] = train.increment %[[C]] : tensor<i32>
// CHECK: %[[DX:.*]] = train.dropout %{{.*}} rate 5.000000e-01 seed 1 step %[[C]] : tensor<8x4xf32>
// CHECK: train.matmul %{{.*}}, %[[DX]] transpose_lhs
// CHECK: return %{{.*}}, %[[N]], %{{.*}} : tensor<f32>, tensor<i32>, tensor<16x4xf32>
// O1-LABEL: func.func @dropout_step_grad(
// O1: train.dropout %{{.*}} rate 5.000000e-01 seed 1 step %{{.*}} : tensor<8x4xf16>
func.func @dropout_step(%x: tensor<8x16xf32>, %labels: tensor<8xi32>, %w: tensor<16x4xf32> {train.param}, %count: tensor<i32> {train.state}) -> (tensor<f32>, tensor<i32>) {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %d = train.dropout %y rate 0.5 seed 1 step %count : tensor<8x4xf32>
  %l = train.cross_entropy %d, %labels : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  %n = train.increment %count : tensor<i32>
  return %l, %n : tensor<f32>, tensor<i32>
}

// -----

// A convolution's bias gets dy summed over batch and positions.
// CHECK-LABEL: func.func @conv_bias_grad(
// CHECK: train.conv2d %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: train.cross_entropy_grad
// CHECK: %[[DY:.*]] = train.reshape
// CHECK-DAG: train.conv2d_grad_filter %[[DY]], %{{.*}} : tensor<2x4x3x3xf32>, tensor<2x3x5x5xf32> -> tensor<4x3x3x3xf32>
// CHECK-DAG: %[[DB:.*]] = train.reduce_sum %[[DY]] axes [0, 2, 3] {{.*}}: tensor<2x4x3x3xf32> -> tensor<4xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[DB]] : tensor<f32>, tensor<4x3x3x3xf32>, tensor<4xf32>
// O1-LABEL: func.func @conv_bias_grad(
// O1: train.conv2d %{{.*}}, %{{.*}}, %{{.*}} accumulate f32 {{.*}}: tensor<2x3x5x5xf16>, tensor<4x3x3x3xf16>, tensor<4xf16> -> tensor<2x4x3x3xf16>
func.func @conv_bias(%x: tensor<2x3x5x5xf32>, %labels: tensor<2xi32>, %w: tensor<4x3x3x3xf32> {train.param}, %b: tensor<4xf32> {train.param}) -> tensor<f32> {
  %y = train.conv2d %x, %w, %b : tensor<2x3x5x5xf32>, tensor<4x3x3x3xf32>, tensor<4xf32> -> tensor<2x4x3x3xf32>
  %f = train.reshape %y : tensor<2x4x3x3xf32> -> tensor<2x36xf32>
  %l = train.cross_entropy %f, %labels : tensor<2x36xf32>, tensor<2xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// nn.Embedding(padding_idx=1): the table's gradient has row 1 zeroed by a
// constant row mask; cross-entropy's ignore_index reaches its gradient.
// CHECK-LABEL: func.func @padded_embedding_grad(
// CHECK: train.cross_entropy %{{.*}}, %{{.*}} ignore_index -100
// CHECK: train.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} ignore_index -100
// CHECK: %[[DT:.*]] = train.embedding_grad %{{.*}}, %{{.*}} : tensor<6x4xf32>, tensor<6xi32> -> tensor<4x4xf32>
// CHECK: %[[MASK:.*]] = train.constant dense<[
// CHECK-SAME: [1.000000e+00], [0.000000e+00], [1.000000e+00], [1.000000e+00]]> : tensor<4x1xf32>
// CHECK: %[[D:.*]] = train.mul %[[DT]], %[[MASK]] {{.*}}: tensor<4x4xf32>, tensor<4x1xf32> -> tensor<4x4xf32>
// CHECK: return %{{.*}}, %[[D]]
func.func @padded_embedding(%ids: tensor<6xi32>, %labels: tensor<6xi32>, %t: tensor<4x4xf32> {train.param}) -> tensor<f32> {
  %e = train.embedding %t, %ids padding_idx 1 : tensor<4x4xf32>, tensor<6xi32> -> tensor<6x4xf32>
  %l = train.cross_entropy %e, %labels ignore_index -100 : tensor<6x4xf32>, tensor<6xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// pow: dy * (c * x ** (c - 1)), itself a pow; at O1 pow is fp32 (PyTorch's
// CUDA autocast list), so an f16 matmul's output is widened for it.
// CHECK-LABEL: func.func @pow_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x8xf32>
// CHECK: %[[Y:.*]] = train.matmul %[[X]]
// CHECK: train.pow %[[Y]] exponent 1.500000e+00
// CHECK: %[[P:.*]] = train.pow %[[Y]] exponent 5.000000e-01
// CHECK: %[[C:.*]] = train.constant dense<1.500000e+00> : tensor<f32>
// CHECK: %[[D:.*]] = train.mul %[[P]], %[[C]]
// CHECK: train.mul %{{.*}}, %[[D]]
// O1-LABEL: func.func @pow_grad(
// O1: %[[Y16:.*]] = train.matmul {{.*}} -> tensor<4x4xf16>
// O1: %[[Y:.*]] = train.cast %[[Y16]] : tensor<4x4xf16> to tensor<4x4xf32>
// O1: train.pow %[[Y]] exponent 1.500000e+00 {{.*}}: tensor<4x4xf32>
func.func @pow(%x: tensor<4x8xf32>, %labels: tensor<4xi32>, %w: tensor<8x4xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %p = train.pow %y exponent 1.5 : tensor<4x4xf32>
  %l = train.cross_entropy %p, %labels : tensor<4x4xf32>, tensor<4xi32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// select's gradient goes to the chosen operand (select(cond, dy, 0) for the
// matmul's result), reduced to its shape; comparisons and conversions pass
// none (the mask built from the activations is a constant of the backward).
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[KEEP:.*]] = train.compare %{{.*}}, %{{.*}} ne
// CHECK: %[[MASK:.*]] = train.convert %{{.*}} : tensor<4x8xi1> to tensor<4x8xf32>
// CHECK: train.loss_seed
// CHECK: %[[DS:.*]] = train.mul %{{.*}}, %[[MASK]]
// CHECK: %[[ZERO:.*]] = train.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[DH:.*]] = train.select %[[KEEP]], %[[DS]], %[[ZERO]] : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
// CHECK: train.matmul %{{.*}}, %[[DH]] transpose_lhs
// CHECK-NOT: train.convert
// CHECK: return
func.func @forward(%x: tensor<4x8xf32>, %ids: tensor<4x8xi32>, %w: tensor<8x8xf32> {train.param}) -> tensor<f32> {
  %pad = train.constant dense<0> : tensor<i32>
  %keep = train.compare %ids, %pad ne : tensor<4x8xi32>, tensor<i32> -> tensor<4x8xi1>
  %h = train.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %big = train.constant dense<-1.0e9> : tensor<f32>
  %s = train.select %keep, %h, %big : tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %pos = train.compare %h, %big gt : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xi1>
  %m = train.convert %pos : tensor<4x8xi1> to tensor<4x8xf32>
  %p = train.mul %s, %m : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = train.reduce_sum %p axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The model's outputs (results marked train.output, two heads here) stay
// the forward's: the gradient function returns the loss and the gradients
// only. Dropped first, they leave the head the loss reads to its loss
// alone, so the two become one linear_cross_entropy (no [8, 4] logits);
// the head the loss does not read is not computed at all.
// CHECK-LABEL: func.func @outputs(
// CHECK-SAME: -> (tensor<f32>, tensor<8x4xf32> {train.output}, tensor<8x4xf32> {train.output})
// CHECK: train.matmul
// CHECK: train.matmul
// CHECK: train.cross_entropy
// CHECK-LABEL: func.func @outputs_grad(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<8x16xf32>, %[[L:[a-z0-9]+]]: tensor<8xi32>, %[[W:[a-z0-9]+]]: tensor<16x4xf32>
// CHECK-SAME: -> (tensor<f32>, tensor<16x4xf32>, tensor<16x4xf32>) attributes
// CHECK-NOT: train.matmul
// CHECK: %[[LOSS:.*]] = train.linear_cross_entropy %[[X]], %[[W]], %[[L]] : tensor<8x16xf32>, tensor<16x4xf32>, tensor<8xi32> -> tensor<f32>
// CHECK: %[[DX:.*]], %[[DW:.*]] = train.linear_cross_entropy_grad %{{.*}}, %[[X]], %[[W]], %[[L]] :
// CHECK-NOT: train.matmul
// CHECK: %[[ZERO:.*]] = train.constant
// CHECK: return %[[LOSS]], %[[DW]], %[[ZERO]] : tensor<f32>, tensor<16x4xf32>, tensor<16x4xf32>
// O1-LABEL: func.func @outputs_grad(
// O1-SAME: -> (tensor<f32>, tensor<16x4xf32>, tensor<16x4xf32>) attributes
func.func @outputs(%x: tensor<8x16xf32>, %l: tensor<8xi32>,
                   %w: tensor<16x4xf32> {train.param},
                   %v: tensor<16x4xf32> {train.param})
    -> (tensor<f32>, tensor<8x4xf32> {train.output}, tensor<8x4xf32> {train.output}) {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %z = train.matmul %x, %v : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %loss = train.cross_entropy %y, %l : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  return %loss, %y, %z : tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// stop_gradient (torch's detach): the MSE term regresses y on a detached
// copy of itself, so y's gradient is the cross entropy's alone plus the
// MSE's through its first operand only; nothing flows back through %d.
// CHECK-LABEL: func.func @stop_gradient_grad(
// CHECK: %[[Y:.*]] = train.matmul
// CHECK: %[[D:.*]] = train.stop_gradient %[[Y]]
// CHECK: train.mse_loss %[[Y]], %[[D]]
// CHECK: %[[SEED:.*]] = train.loss_seed
// CHECK: %[[DIFF:.*]] = train.sub %[[Y]], %[[D]]
// CHECK: %[[DCE:.*]] = train.cross_entropy_grad %[[SEED]], %[[Y]]
// CHECK: %[[DY:.*]] = train.add {{.*}}, %[[DCE]]
// CHECK-NOT: train.stop_gradient
// CHECK: %[[DW:.*]] = train.matmul {{.*}}, %[[DY]] transpose_lhs
// CHECK: return {{.*}}, %[[DW]]
func.func @stop_gradient(%x: tensor<8x16xf32>, %l: tensor<8xi32>,
                         %w: tensor<16x4xf32> {train.param}) -> tensor<f32> {
  %y = train.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %d = train.stop_gradient %y : tensor<8x4xf32>
  %ce = train.cross_entropy %y, %l : tensor<8x4xf32>, tensor<8xi32> -> tensor<f32>
  %m = train.mse_loss %y, %d : tensor<8x4xf32> -> tensor<f32>
  %loss = train.add %ce, %m : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention: one train.attention_grad from the forward op's operands, its
// output and its log-sum-exp; the boolean mask gets no gradient. At O1 the
// op runs in f16 with an f32 accumulator and an f32 log-sum-exp, and its
// gradient in f16.
// CHECK-LABEL: func.func @attention_grad(
// CHECK: %[[O:.*]], %[[LSE:.*]] = train.attention %[[Q:[^,]+]], %[[K:[^,]+]], %[[V:[^ ]+]] mask %[[M:[^ ]+]] causal scale 2.500000e-01
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = train.attention_grad %{{[^,]+}}, %[[Q]], %[[K]], %[[V]], %[[O]], %[[LSE]] mask %[[M]] causal scale 2.500000e-01
// O1-LABEL: func.func @attention_grad(
// O1: train.attention %{{.*}} accumulate f32 {{.*}}: tensor<2x8x4xf16>, tensor<2x8x4xf16>, tensor<2x8x4xf16>, tensor<2x1x8xi1>
// O1: train.attention_grad {{.*}} : tensor<2x8x4xf16>, tensor<2x8x4xf16>, tensor<2x8x4xf16>, tensor<2x8x4xf16>, tensor<2x8xf32>, tensor<2x1x8xi1>
func.func @attention(%x: tensor<2x8x4xf32>, %m: tensor<2x1x8xi1>, %w: tensor<2x8x4xf32> {train.param}) -> tensor<f32> {
  %q = train.mul %x, %w : tensor<2x8x4xf32>, tensor<2x8x4xf32> -> tensor<2x8x4xf32>
  %o, %lse = train.attention %q, %q, %w mask %m causal scale 0.25 : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x1x8xi1>
  %l = train.reduce_sum %o axes [0, 1, 2] : tensor<2x8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @attention_lse_loss(%w: tensor<2x8x4xf32> {train.param}) -> tensor<f32> {
  // expected-error @+1 {{'train.attention' op amp-autodiff: the loss depends on the attention's log-sum-exp, which only its gradient may read}}
  %o, %lse = train.attention %w, %w, %w scale 0.5 : tensor<2x8x4xf32>, tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %l = train.reduce_sum %lse axes [0, 1] : tensor<2x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
