// RUN: amp-opt %s -split-input-file --amp-data-parallel="ranks=2 sync-batchnorm=true" -verify-diagnostics | FileCheck %s
// RUN: amp-opt %s -split-input-file --amp-data-parallel=ranks=2 | FileCheck %s --check-prefix=LOCAL

// sync-batchnorm: the step's batch norm, forward and backward, spans the
// ranks (SyncBatchNorm); a function without an optimizer update (here the
// evaluation's forward) keeps its own statistics. Without the option every
// batch norm stays local (DDP's default).

// CHECK-LABEL: func.func @eval
// CHECK: train.batch_norm {{.*}} : tensor<4x2x3x3xf32>, tensor<2xf32>
// LOCAL-LABEL: func.func @eval
// LOCAL-NOT: ranks
func.func @eval(%x: tensor<4x2x3x3xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<4x2x3x3xf32> {
  %y, %rm, %rv = train.batch_norm %x, %g, %b, %m, %v : tensor<4x2x3x3xf32>, tensor<2xf32>
  return %y : tensor<4x2x3x3xf32>
}

// CHECK-LABEL: func.func @train_step
// CHECK: train.batch_norm {{.*}} ranks 2 : tensor<4x2x3x3xf32>, tensor<2xf32>
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = train.batch_norm_grad {{.*}} ranks 2 :
// CHECK: train.all_reduce mean(%[[DG]], %[[DB]]) ranks 2
// LOCAL-LABEL: func.func @train_step
// LOCAL-NOT: ranks 2 :
// LOCAL: train.all_reduce
func.func @train_step(%x: tensor<4x2x3x3xf32>, %dy: tensor<4x2x3x3xf32>, %g: tensor<2xf32> {train.param}, %b: tensor<2xf32> {train.param}, %m: tensor<2xf32> {train.state}, %v: tensor<2xf32> {train.state}, %lr: tensor<f32> {train.lr}) -> (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>) {
  %y, %rm, %rv = train.batch_norm %x, %g, %b, %m, %v : tensor<4x2x3x3xf32>, tensor<2xf32>
  %dx, %dg, %db = train.batch_norm_grad %dy, %x, %g : tensor<4x2x3x3xf32>, tensor<2xf32>
  %u:2 = train.sgd_update %lr params(%g, %b) grads(%dg, %db) : tensor<f32>, (tensor<2xf32>, tensor<2xf32>), (tensor<2xf32>, tensor<2xf32>)
  return %y, %u#0, %u#1 : tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// A batch norm compiled for another number of ranks.
func.func @other_ranks(%x: tensor<4x2x3x3xf32>, %g: tensor<2xf32> {train.param}, %m: tensor<2xf32>, %lr: tensor<f32> {train.lr}) -> tensor<2xf32> {
  // expected-error @+1 {{'train.batch_norm' op amp-data-parallel: already spans 4 ranks, not 2}}
  %y, %rm, %rv = train.batch_norm %x, %g, %g, %m, %m ranks 4 : tensor<4x2x3x3xf32>, tensor<2xf32>
  %u = train.sgd_update %lr params(%g) grads(%rm) : tensor<f32>, (tensor<2xf32>), (tensor<2xf32>)
  return %u : tensor<2xf32>
}
