// RUN: amp-opt %s --amp-loss-scaling -split-input-file -verify-diagnostics

// An optimizer update without a backward seed: nothing to scale.
// expected-error @+1 {{amp-loss-scaling: @no_seed has no backward seed (train.loss_seed); run amp-autodiff and amp-optimizer first}}
func.func @no_seed(%lr: tensor<f32>, %p: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{amp-loss-scaling: @two_seeds has 2 backward seeds (train.loss_seed); expected one}}
func.func @two_seeds(%lr: tensor<f32>, %p: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %a = train.constant {train.loss_seed} dense<1.0> : tensor<f32>
  %b = train.constant {train.loss_seed} dense<1.0> : tensor<f32>
  %0 = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{amp-loss-scaling: @two_updates has 2 optimizer updates; expected one (made by amp-optimizer)}}
func.func @two_updates(%lr: tensor<f32>, %p: tensor<4xf32>, %g: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  %1 = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Functions without an optimizer update are left alone.
func.func @forward_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = train.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
