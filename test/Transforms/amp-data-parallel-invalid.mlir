// RUN: amp-opt %s -split-input-file --amp-data-parallel=ranks=2 -verify-diagnostics
// RUN: not amp-opt %s --amp-data-parallel 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not amp-opt %s --amp-data-parallel="ranks=2 bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=BUCKET

// RANKS: error: amp-data-parallel: ranks must be set to the number of processes (at least 1), got 0
// BUCKET: error: amp-data-parallel: bucket-mb must be positive and finite

// Run twice, the gradients would be summed twice.
// expected-error @+1 {{amp-data-parallel: @twice is already data-parallel}}
func.func @twice(%g: tensor<2xf32>, %p: tensor<2xf32> {train.param}, %lr: tensor<f32> {train.lr}) -> tensor<2xf32> {
  %r = train.all_reduce mean(%g) ranks 2 : (tensor<2xf32>)
  %u = train.sgd_update %lr params(%p) grads(%r) : tensor<f32>, (tensor<2xf32>), (tensor<2xf32>)
  return %u : tensor<2xf32>
}

// -----

// An unscaling that already divides: the mean would be taken twice.
func.func @divided(%g: tensor<2xf32>, %p: tensor<2xf32> {train.param}, %lr: tensor<f32> {train.lr}, %s: tensor<f32>) -> tensor<2xf32> {
  // expected-error @+1 {{amp-data-parallel: unscaling already divides by 3}}
  %u:2 = train.unscale_grads %s grads(%g) divisor 3 : tensor<f32>, (tensor<2xf32>)
  %n = train.sgd_update %lr params(%p) grads(%u#0) skip(%u#1) : tensor<f32>, (tensor<2xf32>), (tensor<2xf32>)
  return %n : tensor<2xf32>
}

// -----

// expected-error @+1 {{amp-data-parallel: @two_updates has 2 optimizer updates; expected one (made by amp-optimizer)}}
func.func @two_updates(%g: tensor<2xf32>, %p: tensor<2xf32> {train.param}, %lr: tensor<f32> {train.lr}) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<2xf32>), (tensor<2xf32>)
  %b = train.sgd_update %lr params(%a) grads(%g) : tensor<f32>, (tensor<2xf32>), (tensor<2xf32>)
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
