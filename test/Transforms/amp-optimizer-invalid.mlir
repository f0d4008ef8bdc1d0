// RUN: amp-opt %s -split-input-file -verify-diagnostics --amp-autodiff --amp-optimizer

// Modules amp-optimizer finds nothing to train in: the error names the
// function that should have been the forward, and why.

// expected-error @+1 {{amp-optimizer: @forward has no train.param arguments: nothing to train}}
func.func @forward(%x: tensor<4x10xf32>, %l: tensor<4xi32>) -> tensor<f32> {
  %0 = train.cross_entropy %x, %l : tensor<4x10xf32>, tensor<4xi32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// expected-error @+1 {{amp-optimizer: @forward is only declared; a forward function needs a body}}
func.func private @forward(%x: tensor<4x10xf32>, %w: tensor<10x10xf32> {train.param}) -> tensor<f32>

// -----

// expected-error @+1 {{amp-optimizer: no gradient function (@<name>_grad); run amp-autodiff first (on a module with a forward function)}}
module {
}

// -----

// A gradient function is paired with its forward by `train.gradient_of`
// (amp-autodiff sets it), not by its name.
// expected-error @+1 {{amp-optimizer: @g is the gradient of @missing, which the module does not define}}
func.func @g(%x: tensor<4x10xf32>, %w: tensor<10x10xf32>) -> (tensor<f32>, tensor<10x10xf32>) attributes {train.gradient_of = @missing} {
  %0 = train.reduce_sum %x axes [0, 1] : tensor<4x10xf32> -> tensor<f32>
  return %0, %w : tensor<f32>, tensor<10x10xf32>
}
