// RUN: amp-opt %s -split-input-file --amp-loss-scaling --amp-data-parallel=ranks=2 | FileCheck %s
// RUN: amp-opt %s -split-input-file --amp-loss-scaling --amp-data-parallel="ranks=4 wire-type=f16" | FileCheck %s --check-prefix=WIRE
// RUN: amp-opt %s -split-input-file --amp-data-parallel="ranks=2 bucket-mb=0.000015" | FileCheck %s --check-prefix=BUCKETS
// RUN: amp-opt %s -split-input-file --amp-loss-scaling --amp-data-parallel=ranks=1 | FileCheck %s --check-prefix=ONE

// A step with accumulation, loss scaling and clipping. The gradients are
// summed across ranks where they leave accumulation (not on every
// micro-batch: skip(pending)), before unscaling, which divides by the ranks
// too; clipping's norm is taken after, on the global gradients; found_inf
// is agreed (max) and the agreed flag is what skips the update, moves the
// scale and is returned. What a skip reports reads the summed gradients.

// CHECK-LABEL: func.func @train_step
// CHECK: %[[ACC:.*]]:6 = train.accumulate_grads
// CHECK-NEXT: %[[AR:.*]]:2 = train.all_reduce sum(%[[ACC]]#4, %[[ACC]]#5) skip(%[[ACC]]#3) ranks 2 : (tensor<3x2xf32>, tensor<2xf32>)
// CHECK-NEXT: %[[SRC:.*]] = train.first_nonfinite %{{.*}}, %[[AR]]#0, %[[AR]]#1 order [0, 2, 1] :
// CHECK-NEXT: %[[U:.*]]:3 = train.unscale_grads %{{.*}} grads(%[[AR]]#0, %[[AR]]#1) divisor 2 :
// CHECK-NEXT: %[[FOUND:.*]] = train.all_reduce max(%[[U]]#2) skip(%[[ACC]]#3) ranks 2 : (tensor<i1>)
// CHECK-NEXT: %[[CLIP:.*]]:3 = train.clip_grad_norm(%[[U]]#0, %[[U]]#1)
// CHECK-NEXT: %[[SKIP:.*]] = train.any %[[FOUND]], %[[ACC]]#3
// CHECK-NEXT: train.sgd_update {{.*}} grads(%[[CLIP]]#0, %[[CLIP]]#1) skip(%[[SKIP]])
// CHECK-NEXT: train.update_scale %{{.*}}, %{{.*}}, %[[FOUND]] skip(%[[ACC]]#3)
// CHECK-NOT: train.all_reduce
// CHECK: return {{.*}}, %[[FOUND]], %{{.*}}, %[[SRC]] :

// A 16-bit wire: each rank sends its share of the mean, so unscaling does
// not divide again.
// WIRE-LABEL: func.func @train_step
// WIRE: %[[AR:.*]]:2 = train.all_reduce mean({{.*}}) skip({{.*}}) ranks 4 wire f16 : (tensor<3x2xf32>, tensor<2xf32>)
// WIRE-NEXT: train.first_nonfinite %{{.*}}, %[[AR]]#0, %[[AR]]#1 order
// WIRE-NEXT: train.unscale_grads %{{.*}} grads(%[[AR]]#0, %[[AR]]#1) :
// WIRE-NEXT: train.all_reduce max({{.*}}) skip({{.*}}) ranks 4 : (tensor<i1>)

// One rank: nothing changes.
// ONE-LABEL: func.func @train_step
// ONE-NOT: train.all_reduce
// ONE-NOT: divisor
// ONE: return
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
  %10:3 = train.clip_grad_norm(%9#4, %9#5) max_norm 1.000000e+00 : (tensor<3x2xf32>, tensor<2xf32>)
  %11:2 = train.sgd_update %arg6 params(%arg1, %arg2) grads(%10#0, %10#1) skip(%9#3) : tensor<f32>, (tensor<3x2xf32>, tensor<2xf32>), (tensor<3x2xf32>, tensor<2xf32>)
  return %1, %11#0, %11#1, %9#0, %9#1, %9#2 : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<i32>
}

// -----

// No accumulation, no loss scaling (BUCKETS runs without amp-loss-scaling):
// each rank sends its share of the mean. Buckets of at most 16 bytes (the
// 3x2 gradient, 24 bytes, is a bucket of its own) follow the order backward
// makes the gradients, each all-reduce right after its last gradient: the
// bias gradient's goes out before the weight gradient is computed.

// BUCKETS-LABEL: func.func @plain_step
// BUCKETS: %[[DB:.*]] = train.reduce_sum
// BUCKETS-NEXT: %[[ARB:.*]] = train.all_reduce mean(%[[DB]]) ranks 2 : (tensor<2xf32>)
// BUCKETS-NEXT: %[[DW:.*]] = train.matmul
// BUCKETS-NEXT: %[[ARW:.*]] = train.all_reduce mean(%[[DW]]) ranks 2 : (tensor<3x2xf32>)
// BUCKETS-NEXT: train.sgd_update {{.*}} grads(%[[ARW]], %[[ARB]])
// BUCKETS-NOT: train.all_reduce

// Loss scaling without accumulation: one bucket, after the last gradient,
// its gradients in production order.
// CHECK-LABEL: func.func @plain_step
// CHECK: %[[DB:.*]] = train.reduce_sum
// CHECK-NEXT: %[[DW:.*]] = train.matmul
// CHECK-NEXT: %[[AR:.*]]:2 = train.all_reduce sum(%[[DB]], %[[DW]]) ranks 2 :
// CHECK-NEXT: train.first_nonfinite %{{.*}}, %[[AR]]#1, %[[AR]]#0 order [0, 2, 1] :
// CHECK-NEXT: train.unscale_grads %{{.*}} grads(%[[AR]]#1, %[[AR]]#0) divisor 2
func.func @plain_step(%arg0: tensor<4x3xf32>, %arg1: tensor<3x2xf32> {train.param}, %arg2: tensor<2xf32> {train.param}, %arg6: tensor<f32> {train.lr}) -> (tensor<f32>, tensor<3x2xf32>, tensor<2xf32>) {
  %0 = train.matmul %arg0, %arg1, %arg2 : tensor<4x3xf32>, tensor<3x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  %1 = train.reduce_mean %0 axes [0, 1] : tensor<4x2xf32> -> tensor<f32>
  %2 = train.loss_seed : tensor<f32>
  %3 = train.reshape %2 : tensor<f32> -> tensor<1x1xf32>
  %4 = train.broadcast %3 : tensor<1x1xf32> -> tensor<4x2xf32>
  %5 = train.constant dense<1.250000e-01> : tensor<f32>
  %6 = train.mul %4, %5 : tensor<4x2xf32>, tensor<f32> -> tensor<4x2xf32>
  %8 = train.reduce_sum %6 axes [0] : tensor<4x2xf32> -> tensor<2xf32>
  %7 = train.matmul %arg0, %6 transpose_lhs : tensor<4x3xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
  %11:2 = train.sgd_update %arg6 params(%arg1, %arg2) grads(%7, %8) : tensor<f32>, (tensor<3x2xf32>, tensor<2xf32>), (tensor<3x2xf32>, tensor<2xf32>)
  return %1, %11#0, %11#1 : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}
