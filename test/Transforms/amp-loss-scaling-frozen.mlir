// RUN: amp-opt %s --amp-autodiff --amp-optimizer="optimizer=sgd" --amp-loss-scaling | FileCheck %s

// A train.state the step returns unchanged (a frozen buffer, as the Python
// importer passes a frozen parameter) is neither looked at nor selected
// every step: its slot among what a skip reports holds the loss (looked at
// first, so it never names the slot; one check, CSE'd), and its result
// stays the argument.

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[FZ:[a-z0-9]+]]: tensor<2xf32> {train.state}, %[[M:[a-z0-9]+]]: tensor<2xf32> {train.state}, %[[V:[a-z0-9]+]]: tensor<2xf32> {train.state},
// CHECK: %{{.*}}, %[[NM:.*]], %[[NV:.*]] = train.batch_norm
// CHECK: %[[L:.*]] = train.reduce_mean
// CHECK: %[[FWD:.*]] = train.first_nonfinite %[[L]], %[[NM]], %[[NV]] : tensor<f32>, tensor<2xf32>, tensor<2xf32>
// CHECK-NEXT: train.first_nonfinite %[[L]], %[[L]], %[[NM]], %[[NV]], {{.*}} order [0, 1, 2, 3, 6, 5, 4] : tensor<f32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>,
// CHECK-NOT: train.select %{{.*}}, %[[FZ]]
// CHECK: train.select %{{.*}}, %[[M]], %[[NM]]
// CHECK-NEXT: train.select %{{.*}}, %[[V]], %[[NV]]
// CHECK: return %[[L]], %[[FZ]], %{{.*}}, %{{.*}},

func.func @f(%x: tensor<4x2xf32>, %w: tensor<2x2xf32> {train.param},
             %fz: tensor<2xf32> {train.state}, %m: tensor<2xf32> {train.state}, %v: tensor<2xf32> {train.state},
             %g: tensor<2xf32> {train.param}, %b: tensor<2xf32> {train.param})
    -> (tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %h = train.matmul %x, %w, %fz : tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %y, %m2, %v2 = train.batch_norm %h, %g, %b, %m, %v : tensor<4x2xf32>, tensor<2xf32>
  %l = train.reduce_mean %y axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l, %fz, %m2, %v2 : tensor<f32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
