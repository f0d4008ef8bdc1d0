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
  %a = train.loss_seed : tensor<f32>
  %b = train.loss_seed : tensor<f32>
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

// -----

// A loss computed in f16 (an override, or O3) cannot carry a scale above
// 65504: every gradient would be inf. Dynamic scaling can reach max-scale.
func.func @f16_loss_dynamic(%lr: tensor<f32>, %p: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{amp-loss-scaling: the loss is computed in 'f16', whose largest value is 65504, but the loss scale can reach 16777216 (max-scale); compute the loss in f32 (its default category at O1 and O2) or use a static scale of at most 65504}}
  %s = train.loss_seed : tensor<f16>
  %0 = train.sgd_update %lr params(%p) grads(%g) : tensor<f32>, (tensor<4xf32>), (tensor<4xf32>)
  return %0 : tensor<4xf32>
}
