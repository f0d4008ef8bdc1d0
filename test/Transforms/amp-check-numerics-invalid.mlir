// RUN: amp-opt %s -split-input-file -verify-diagnostics --amp-check-numerics
// RUN: amp-opt %s -split-input-file -verify-diagnostics --amp-pipeline="optimizer=none check-numerics=true"

// Without a training step there is nothing to check: a forward function
// alone (amp-optimizer not run, or amp-pipeline's optimizer=none).
// expected-error @+1 {{amp-check-numerics: no training step (a function with an optimizer update) to check; run amp-optimizer first}}
module {
  func.func @forward(%x: tensor<4xf32>, %labels: tensor<4xi32>) -> tensor<f32> {
    %l = train.reduce_mean %x axes [0] : tensor<4xf32> -> tensor<f32>
    return %l : tensor<f32>
  }
}
