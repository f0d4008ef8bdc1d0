// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling | FileCheck %s
// RUN: amp-opt %s --amp-autocast="opt-level=O2" --amp-autodiff --amp-optimizer="optimizer=sgd accumulate=2" --amp-loss-scaling="mode=static" | FileCheck %s --check-prefix=ACC
// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling="mode=none" | FileCheck %s --check-prefix=NONE

// A non-finite forward never reaches the state (docs/LossScaling.md): the
// new running statistics (float train.state results) are kept at their old
// values when the loss or one of them holds an inf or NaN; the i32 counter
// moves as on any step. The step's last result says what first held an inf
// or NaN: the loss, the running statistics, then the gradients in
// backward's order (the reverse of the forward's first uses of the
// parameters: w2's, batch norm's bias and scale, w1's), looked at before
// unscaling.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<4x3xf32>,
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<2xf32> {train.state}, %[[V:[a-z0-9]+]]: tensor<2xf32> {train.state}, %[[N:[a-z0-9]+]]: tensor<i32> {train.state},
// CHECK-SAME: -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<i32>, tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>, tensor<f32>, tensor<i32>, tensor<i1>, tensor<i1>, tensor<i32>)
// CHECK: %{{.*}}, %[[NM:.*]], %[[NV:.*]] = train.batch_norm
// CHECK: %[[L:.*]] = train.reduce_mean
// CHECK: %[[N2:.*]] = train.increment %[[N]]
// CHECK: %[[DW2:.*]] = train.matmul %{{.*}}, %{{.*}} transpose_lhs : tensor<4x2xf32>, tensor<4x2xf32> -> tensor<2x2xf32>
// CHECK: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = train.batch_norm_grad
// CHECK: %[[DW1:.*]] = train.matmul %[[X]], %{{.*}} transpose_lhs
// CHECK: %[[FWD:.*]] = train.first_nonfinite %[[L]], %[[NM]], %[[NV]] : tensor<f32>, tensor<2xf32>, tensor<2xf32>
// CHECK-NEXT: %[[SRC:.*]] = train.first_nonfinite %[[L]], %[[NM]], %[[NV]], %[[DW1]], %[[DG]], %[[DB]], %[[DW2]] order [0, 1, 2, 6, 5, 4, 3]
// CHECK-NEXT: %[[U:.*]]:5 = train.unscale_grads %{{.*}} grads(%[[DW1]], %[[DG]], %[[DB]], %[[DW2]])
// CHECK: %[[MINUS1:.*]] = train.constant dense<-1> : tensor<i32>
// CHECK-NEXT: %[[BAD:.*]] = train.compare %[[FWD]], %[[MINUS1]] ne : tensor<i32>, tensor<i32> -> tensor<i1>
// CHECK-NEXT: %[[KM:.*]] = train.select %[[BAD]], %[[M]], %[[NM]]
// CHECK-NEXT: %[[KV:.*]] = train.select %[[BAD]], %[[V]], %[[NV]]
// CHECK: return %[[L]], %[[KM]], %[[KV]], %[[N2]], {{.*}}, %[[U]]#4, %{{.*}}, %[[SRC]] :

// With accumulation (and autocast's casts of the parameters at the top,
// O2) the order is the same.
// ACC-LABEL: func.func @train_step(
// ACC: train.first_nonfinite %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} order [0, 1, 2, 6, 5, 4, 3]
// ACC: train.select
// ACC: train.select

// Without loss scaling nothing is skipped and nothing is guarded (PyTorch).
// NONE-LABEL: func.func @train_step(
// NONE-NOT: train.first_nonfinite
// NONE-NOT: train.select

func.func @f(%x: tensor<4x3xf32>, %w1: tensor<3x2xf32> {train.param}, %g: tensor<2xf32> {train.param}, %b: tensor<2xf32> {train.param},
             %m: tensor<2xf32> {train.state}, %v: tensor<2xf32> {train.state}, %n: tensor<i32> {train.state},
             %w2: tensor<2x2xf32> {train.param}) -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<i32>) {
  %h = train.matmul %x, %w1 : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %y, %m2, %v2 = train.batch_norm %h, %g, %b, %m, %v : tensor<4x2xf32>, tensor<2xf32>
  %z = train.matmul %y, %w2 : tensor<4x2xf32>, tensor<2x2xf32> -> tensor<4x2xf32>
  %l = train.reduce_mean %z axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %n2 = train.increment %n : tensor<i32>
  return %l, %m2, %v2, %n2 : tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<i32>
}
