// RUN: amp-opt %s -split-input-file --amp-loss-scaling | FileCheck %s
// RUN: not amp-opt %S/Inputs/unscale-conflict.mlir --amp-loss-scaling 2>&1 | FileCheck %s --check-prefix=CONFLICT

// amp-loss-scaling finds where to unscale by walking the gradient transforms
// back from the optimizer update (GradientTransformOpInterface), not by op
// names: a transform it has never heard of (amp_test.identity_grads, a stand
// in for an all-reduce) between accumulation and clipping leaves unscaling
// where it belongs, after accumulation (which keeps micro-batch gradients
// scaled) and before clipping (which needs true values).

// CHECK-LABEL: func.func @train_step
// CHECK: %[[ACC:.*]]:6 = train.accumulate_grads
// CHECK: %[[ID:.*]]:2 = amp_test.identity_grads(%[[ACC]]#4, %[[ACC]]#5)
// CHECK: %[[U:.*]]:3 = train.unscale_grads %{{.*}} grads(%[[ID]]#0, %[[ID]]#1)
// CHECK: %[[CLIP:.*]]:3 = train.clip_grad_norm(%[[U]]#0, %[[U]]#1)
// CHECK: train.sgd_update {{.*}} grads(%[[CLIP]]#0, %[[CLIP]]#1) skip(%{{.*}})
func.func @train_step(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32> {train.param}, %arg2: tensor<2xf32> {train.param}, %arg3: tensor<3x2xf32> {train.init = #train.init<zeros>, train.opt_state}, %arg4: tensor<2xf32> {train.init = #train.init<zeros>, train.opt_state}, %arg5: tensor<i32> {train.init = #train.init<zeros>, train.opt_state}, %arg6: tensor<f32> {train.lr}) -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<i32>) {
  %0 = train.matmul %arg0, %arg1, %arg2 : tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %1 = train.reduce_mean %0 axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %2 = train.loss_seed : tensor<f32>
  %3 = train.reshape %2 : tensor<f32> -> tensor<1x1xf32>
  %4 = train.broadcast %3 : tensor<1x1xf32> -> tensor<4x2xf32>
  %5 = train.constant dense<1.250000e-01> : tensor<f32>
  %6 = train.mul %4, %5 : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
  %7 = train.matmul %arg0, %6 transpose_lhs : tensor<4x3xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %8 = train.reduce_sum %6 axes [0] : tensor<4x2xf32> -> tensor<2xf32>
  %9:6 = train.accumulate_grads %arg5 accumulators(%arg3, %arg4) grads(%7, %8) steps 2 : tensor<i32>, (tensor<3x2xf32>, tensor<2xf32>), (tensor<3x2xf32>, tensor<2xf32>)
  %g:2 = amp_test.identity_grads(%9#4, %9#5) : tensor<3x2xf32>, tensor<2xf32>
  %10:3 = train.clip_grad_norm(%g#0, %g#1) max_norm 1.000000e+00 : (tensor<3x2xf32>, tensor<2xf32>)
  %11:2 = train.sgd_update %arg6 params(%arg1, %arg2) grads(%10#0, %10#1) skip(%9#3) : tensor<f32>, (tensor<3x2xf32>, tensor<2xf32>), (tensor<3x2xf32>, tensor<2xf32>)
  return %1, %11#0, %11#1, %9#0, %9#1, %9#2 : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<i32>
}

// Clipping before accumulation leaves no place to unscale: an error at the
// clip, not a silently wrong norm.
// CONFLICT: unscale-conflict.mlir:10:{{[0-9]+}}: error: amp-loss-scaling: 'train.clip_grad_norm' needs unscaled gradients but comes before 'train.accumulate_grads', which needs them scaled; no place to unscale
